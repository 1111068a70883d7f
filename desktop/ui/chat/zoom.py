"""Text size of the conversation and the message box (Ctrl+= / Ctrl+- / Ctrl+0), remembered."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, QSettings, Signal

# The sizes Ctrl+= and Ctrl+- step through, as factors of the app's own text size.
STEPS = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0)
KEY = "ui/zoom"


class Sized(Protocol):
    def set_text_size(self, points: float) -> None: ...


class Zoom(QObject):
    """One text size for every widget it is applied to, kept in the window's settings.

    Signals:
        changed(float): the new factor (1.0: the app's own size).
    """

    changed = Signal(float)

    def __init__(self, settings: QSettings, base_points: float, parent: QObject | None = None):
        super().__init__(parent)
        self._settings = settings
        self._base = base_points if base_points > 0 else 10.0
        self._targets: list[Sized] = []
        try:
            saved = float(str(settings.value(KEY, 1.0)))
        except ValueError:
            saved = 1.0
        self._step = min(range(len(STEPS)), key=lambda i: abs(STEPS[i] - saved))

    @property
    def factor(self) -> float:
        return STEPS[self._step]

    @property
    def points(self) -> float:
        """The text size now, in points."""
        return round(self._base * self.factor, 2)

    def apply_to(self, *targets: Sized) -> None:
        """Size these widgets' text now and whenever the zoom changes."""
        for target in targets:
            self._targets.append(target)
            target.set_text_size(self.points)

    def zoom_in(self) -> None:
        self._set(self._step + 1)

    def zoom_out(self) -> None:
        self._set(self._step - 1)

    def reset(self) -> None:
        self._set(STEPS.index(1.0))

    def _set(self, step: int) -> None:
        step = max(0, min(len(STEPS) - 1, step))
        if step == self._step:
            return
        self._step = step
        self._settings.setValue(KEY, self.factor)
        for target in self._targets:
            target.set_text_size(self.points)
        self.changed.emit(self.factor)
