"""The chat header: the open chat's title, its context use, its model, and the connection."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QMenu, QToolButton, QWidget

from desktop.core.models import ModelChoice, SessionInfo
from desktop.ui.render.usage import context_text
from desktop.ui.render.wrap import ElidingLabel, ElidingToolButton
from desktop.ui.window.pane.status_bar import ConnectionWidget

# From how full a context the header offers Compress.
COMPRESS_FROM_PERCENT = 50


class ChatHeader(QWidget):
    """The strip above the chat; shows what it is given, asks nothing of a backend.

    Signals:
        model_chosen(object): the user picked a ModelChoice from the model menu.
        auto_approve_toggled(bool): the user turned auto-approve in this chat on or off.
        compress_requested(): the user asked the gateway to compress this chat's context.
    """

    model_chosen = Signal(object)
    auto_approve_toggled = Signal(bool)
    compress_requested = Signal()

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("statusArea")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)  # the theme paints it
        self.title_label = ElidingLabel("", self)
        self.title_label.setObjectName("chatTitle")
        self.title_label.setAccessibleName("Chat title")
        font = self.title_label.font()
        font.setPointSizeF(font.pointSizeF() + 1.5)
        font.setWeight(font.Weight.DemiBold)
        self.title_label.setFont(font)
        self.connection = ConnectionWidget(self, monotonic=monotonic, wall=wall)
        # Shows or hides the chat list (Ctrl+B).
        self.sidebar_button = QToolButton(self)
        self.sidebar_button.setObjectName("sidebarButton")
        self.sidebar_button.setCheckable(True)
        self.sidebar_button.setText("☰")
        self.sidebar_button.setAccessibleName("Chat list")
        self.set_sidebar_shown(True)
        # The session's model; a menu switches it where the gateway offers models. A long name
        # gives way ("…", the whole in its tooltip) rather than widening the window.
        self.model_label = ElidingToolButton(self)
        self.model_label.setObjectName("modelLabel")
        self.model_label.setAccessibleName("Model")
        self.model_label.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.model_label.hide()
        self.model_menu = QMenu(self.model_label)
        self.model_menu.setAccessibleName("Switch model")
        # How full the model's context is (Hermes 0.22 session.usage), beside the model.
        self.context_label = ElidingLabel("", self)
        self.context_label.setObjectName("contextLabel")
        self.context_label.setAccessibleName("Context used")
        self.context_label.hide()
        # Hermes' per-chat approval bypass, as the gateway reports it; hidden where it says
        # nothing of it. The button shows the gateway's state, a click asks to change it.
        # Where the gateway reports the context (Hermes) and it is half full or more, it can
        # summarise it on request.
        self.compress = QToolButton(self)
        self.compress.setObjectName("compressButton")
        self.compress.setText("Compress")
        self.compress.setAccessibleName("Compress the conversation")
        self.compress.setToolTip(
            "Ask the agent to summarise earlier messages and free the model's context "
            "(not while a reply runs)"
        )
        self.compress.clicked.connect(self.compress_requested)
        self.compress.hide()
        self.auto_approve = QToolButton(self)
        self.auto_approve.setObjectName("autoApprove")
        self.auto_approve.setAccessibleName("Auto-approve in this chat")
        self.auto_approve.setCheckable(True)
        self.auto_approve.clicked.connect(self._on_auto_approve_clicked)
        self.auto_approve.hide()
        st = QHBoxLayout(self)
        st.setContentsMargins(8, 8, 12, 8)
        st.addWidget(self.sidebar_button)
        # No stretch on the title itself: Qt squeezes a stretched item to its minimum before
        # it shortens any other ("Kitchen …" beside a whole "fake-model · Custom endpoint").
        # Without, a short header takes from the title and the model name alike.
        st.addWidget(self.title_label)
        st.addStretch(1)
        st.addWidget(self.context_label)
        st.addWidget(self.compress)
        st.addWidget(self.auto_approve)
        st.addWidget(self.model_label)
        st.addWidget(self.connection)

    def set_sidebar_shown(self, shown: bool) -> None:
        self.sidebar_button.setChecked(shown)
        what = "Hide" if shown else "Show"
        self.sidebar_button.setToolTip(f"{what} the chat list (Ctrl+B)")
        self.sidebar_button.setAccessibleDescription(f"{what} the chat list (Ctrl+B)")

    def set_title(self, title: str) -> None:
        self.title_label.setText(title)

    def title(self) -> str:
        return self.title_label.text()

    def show_info(self, info: SessionInfo, models: list[ModelChoice]) -> None:
        """The session's model and provider (a menu when there are models to switch to) and
        how much of its context is used."""
        # The provider by the name its menu gives it: session.info names it by its slug
        # (Hermes: "custom" after each turn, "Custom endpoint" in model.options).
        names = {choice.provider: choice.provider_name for choice in models}
        provider = names.get(info.provider, info.provider)
        model = " · ".join(p for p in (info.model, provider) if p)
        self.model_label.setText(model)
        self.model_label.setToolTip(
            f"Model {info.model or 'unknown'}, provider {provider or 'unknown'}"
            + (f", approvals: {info.approval_mode}" if info.approval_mode else "")
        )
        self.model_label.setVisible(bool(model))
        self.model_menu.clear()
        for choice in models:
            action = self.model_menu.addAction(f"{choice.model}  ({choice.provider_name})")
            action.setCheckable(True)
            action.setChecked(choice.model == info.model and choice.current)
            action.triggered.connect(lambda _=False, c=choice: self.model_chosen.emit(c))
        # No models offered (e.g. the embedded gateway): the name only, no menu.
        # setMenu(None) takes the menu away; PySide6's stubs do not allow None.
        self.model_label.setMenu(self.model_menu if len(models) > 1 else None)  # type: ignore[arg-type]
        # Room for the menu's arrow only where there is a menu (16 px of nothing otherwise).
        if self.model_label.property("menu") != (len(models) > 1):
            self.model_label.setProperty("menu", len(models) > 1)
            self.model_label.style().unpolish(self.model_label)
            self.model_label.style().polish(self.model_label)
        context, context_tip = context_text(info)
        self.context_label.setText(context)
        # The figure is short and is the point: the title gives way first, never "context 6…".
        self.context_label.setMinimumWidth(
            self.context_label.fontMetrics().horizontalAdvance(context)
        )
        self.context_label.set_tip(context_tip)
        self.context_label.setVisible(bool(context))
        # Offered once it matters (the header is narrow); Hermes' /compress works any time.
        percent = info.context_percent
        self.compress.setVisible(percent is not None and percent >= COMPRESS_FROM_PERCENT)
        self._show_auto_approve(info.auto_approve)

    def _show_auto_approve(self, on: bool | None) -> None:
        self.auto_approve.setVisible(on is not None)
        self.auto_approve.setChecked(bool(on))
        self.auto_approve.setText("Auto-approve on" if on else "Auto-approve")
        self.auto_approve.setToolTip(
            "Tool calls in this chat run without asking; click to ask again"
            if on
            else "Let tool calls in this chat run without asking (this chat only)"
        )

    def _on_auto_approve_clicked(self, checked: bool) -> None:
        # Shown as the gateway says until its answer comes: a refused change never looks done.
        self.auto_approve.setChecked(not checked)
        self.auto_approve_toggled.emit(checked)
