"""Every control a user can reach has an accessible name; tab order walks the main controls."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from desktop.core.models import SessionSummary
from desktop.ui.settings.dialog import SettingsDialog
from desktop.ui.settings.values import AppSettings, ProfileSettings, ProviderSettings
from tests.ui.fakes import FakeBackend, approval, make_attachment

INTERACTIVE = (QAbstractButton, QAbstractItemView, QComboBox, QLineEdit, QPlainTextEdit)


def _inside_combo_popup(w: QWidget) -> bool:
    p = w.parentWidget()
    while p is not None:
        if isinstance(p, QComboBox):
            return True
        p = p.parentWidget()
    return False


def _unnamed(root: QWidget) -> list[str]:
    missing = []
    for w in root.findChildren(QWidget):
        if not isinstance(w, INTERACTIVE) or not w.isVisibleTo(root):
            continue
        if w.focusPolicy() == Qt.FocusPolicy.NoFocus and not isinstance(w, QAbstractButton):
            continue
        if type(w).__name__ == "QLineEditIconButton":  # Qt's own clear button
            continue
        if not w.accessibleName():
            missing.append(f"{type(w).__name__}:{w.objectName() or w.parent().objectName()}")
    return missing


def test_main_window_controls_are_named(make_window: Any) -> None:
    b = FakeBackend(pid="p1")
    b.summaries = [SessionSummary("s1", "Chat")]
    win = make_window(b)
    win.open_session("s1")
    win.composer.add_attachment(make_attachment("a.txt", b"a"))
    b.emit("on_approval_request", "s1", approval())
    b.emit("on_approval_request", "s1", approval("q", kind="clarify"))
    assert _unnamed(win) == []
    assert win.composer.edit.accessibleDescription()


def test_settings_dialog_controls_are_named(qtbot: Any) -> None:
    values = AppSettings(
        profiles=[ProfileSettings("e", "Embedded")], providers=[ProviderSettings("a", "u", "m")]
    )
    d = SettingsDialog(values, lambda v: None)
    qtbot.addWidget(d)
    missing = []
    for w in d.findChildren(QWidget):
        if isinstance(w, INTERACTIVE) and w.focusPolicy() != Qt.FocusPolicy.NoFocus:
            if type(w).__name__ in ("QLineEditIconButton", "QTabBar") or w.parent() is None:
                continue
            if _inside_combo_popup(w):
                continue
            if not w.accessibleName():
                missing.append(type(w).__name__ + ":" + (w.text() if hasattr(w, "text") else ""))
    assert missing == []


def test_tab_order_reaches_composer_from_search(make_window: Any) -> None:
    win = make_window(FakeBackend(pid="p1"))
    chain = []
    w = win.search_box
    for _ in range(6):
        chain.append(w)
        w = w.nextInFocusChain()
        while w.focusPolicy() == Qt.FocusPolicy.NoFocus or not w.isVisibleTo(win):
            w = w.nextInFocusChain()
    assert win.session_list in chain and win.chat_view in chain
    assert win.composer.edit in chain
