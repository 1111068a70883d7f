"""Pieces the settings pages share: accessible names, invalid-field marks, and check runners."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QAbstractButton,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QListWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.ui.settings.values import CheckError

log = logging.getLogger(__name__)

_W = TypeVar("_W", bound=QWidget)

INVALID_STYLE = "border: 2px solid #d32f2f; border-radius: 3px;"


def named(widget: _W, name: str, description: str = "") -> _W:
    widget.setAccessibleName(name)
    if description:
        widget.setAccessibleDescription(description)
    return widget


def hint_label(text: str, parent: QWidget) -> QLabel:
    """Small wrapped help text under a field (styled by the theme's `settingsHint`)."""
    label = QLabel(text, parent)
    label.setObjectName("settingsHint")
    label.setWordWrap(True)
    return label


def result_label(name: str, parent: QWidget) -> QLabel:
    """Where a check's outcome is shown (see `show_result`); hidden until there is one."""
    label = named(QLabel(parent), name)
    label.setWordWrap(True)
    label.setVisible(False)
    return label


def row_of(*widgets: QWidget, grow_first: bool = False, space_after: bool = False) -> QHBoxLayout:
    """Widgets side by side in one form row; the first takes the width, or free space ends it."""
    row = QHBoxLayout()
    for i, widget in enumerate(widgets):
        row.addWidget(widget, 1 if grow_first and i == 0 else 0)
    if space_after:
        row.addStretch(1)
    return row


FormRow = tuple[str, QWidget | QLayout] | QWidget


def form_of(*rows: FormRow) -> QFormLayout:
    """A form of labelled fields; a bare widget spans the whole row (a result, a hint)."""
    form = QFormLayout()
    for row in rows:
        if isinstance(row, tuple):
            label, field = row
            if isinstance(field, QWidget):
                form.addRow(label, field)
            else:
                form.addRow(label, field)
        else:
            form.addRow(row)
    return form


def list_beside_form(
    page: QWidget,
    items: QListWidget,
    buttons: Iterable[QWidget],
    form: QFormLayout,
    note: QWidget | None = None,
) -> None:
    """A settings page: the list with its buttons (and a note) under it on the left, the chosen
    item's form on the right at twice the width."""
    left = QVBoxLayout()
    left.addWidget(items)
    left.addLayout(row_of(*buttons))
    if note is not None:
        left.addWidget(note)
    lay = QHBoxLayout(page)
    lay.addLayout(left, 1)
    lay.addLayout(form, 2)


def fill_list(items: QListWidget, names: Iterable[str]) -> None:
    """Show `names` in the list and select the first, if any (its form follows the selection)."""
    items.clear()
    for name in names:
        items.addItem(name)
    if items.count():
        items.setCurrentRow(0)


def mark_invalid(widget: QWidget, message: str) -> None:
    """Outline a field in red and say why (also to screen readers); focus it."""
    widget.setProperty("invalid", True)
    widget.setStyleSheet(INVALID_STYLE)
    widget.setToolTip(message)
    widget.setFocus()


def clear_invalid(widget: QWidget) -> None:
    if widget.property("invalid"):
        widget.setProperty("invalid", False)
        widget.setStyleSheet("")
        widget.setToolTip("")


def show_result(label: QLabel, ok: bool | None, text: str) -> None:
    """A check's outcome under its button: ✓ text, ✗ text, or a neutral progress line."""
    label.setProperty("ok", ok)
    mark = "" if ok is None else ("✓ " if ok else "✗ ")
    label.setText(mark + text)
    label.setAccessibleDescription(text)
    color = {True: "#2e7d32", False: "#c62828", None: ""}[ok]
    label.setStyleSheet(f"color: {color};" if color else "")
    label.setVisible(bool(text))


class CheckRunner(QObject):
    """Runs one check at a time for a button; its result lands on `label`, never stale.

    Signals:
        finished(bool, str): the check ended, ok or not, with the text shown.
    """

    finished = Signal(bool, str)

    def __init__(self, button: QAbstractButton, label: QLabel, parent: QObject) -> None:
        super().__init__(parent)
        self._button = button
        self._label = label
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def run(
        self,
        check: Callable[[], Awaitable[Any]],
        busy: str,
        done: Callable[[Any], str],
    ) -> None:
        """Start `check()`; `done(result)` turns its result into the text shown on success."""
        self.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            show_result(self._label, False, "checks need the app's event loop")
            return
        self._button.setEnabled(False)
        show_result(self._label, None, busy)
        self._task = loop.create_task(self._run(check, done))

    async def _run(self, check: Callable[[], Awaitable[Any]], done: Callable[[Any], str]) -> None:
        try:
            result = await check()
            ok, text = True, done(result)
        except asyncio.CancelledError:
            raise
        except CheckError as exc:
            ok, text = False, str(exc)
        except Exception as exc:  # a bug still gets a named cause, never "Unexpected error"
            log.exception("settings check failed")
            ok, text = False, f"{type(exc).__name__}: {exc}"
        self._button.setEnabled(True)
        show_result(self._label, ok, text)
        self.finished.emit(ok, text)

    def cancel(self) -> None:
        """Forget a running check (another row was selected, the dialog closed)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
        self._button.setEnabled(True)
        show_result(self._label, None, "")
