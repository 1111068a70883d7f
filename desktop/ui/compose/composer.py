"""The message composer: multi-line input, attachments as chips, send/stop, draft notices."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QSize, Qt, Signal
from PySide6.QtGui import QFont, QImage, QImageReader, QInputMethodEvent, QKeyEvent, QPixmap
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.common.limits import MAX_ATTACHMENTS, prompt_too_large
from desktop.core.disk.attachments import AttachmentError, is_image
from desktop.core.models import Attachment
from desktop.ui.backend import Draft
from desktop.ui.compose.slash_completer import SlashCompleter
from desktop.ui.platform.folders import Folders
from desktop.ui.platform.resources import icon
from desktop.ui.render.delivery import failure_label
from desktop.ui.render.quoting import preview, with_quote
from desktop.ui.render.wrap import ElidingLabel, WrappingLabel

SEND_ENTER = "enter"  # Enter sends, Shift+Enter adds a line
SEND_CTRL_ENTER = "ctrl_enter"  # Ctrl+Enter sends, Enter adds a line

AttachFile = Callable[[str], Attachment]
AttachBytes = Callable[[bytes, str], Attachment]


def store_files(
    paths: Sequence[str], attach_file: AttachFile
) -> tuple[list[Attachment], list[str]]:
    """Attach each file through `attach_file`: the attachments, and why the others were not."""
    attached: list[Attachment] = []
    refused: list[str] = []
    for path in paths:
        try:
            attached.append(attach_file(path))
        except AttachmentError as exc:
            refused.append(str(exc))
        except OSError as exc:
            refused.append(f"{path}: {exc.strerror or exc}")
    return attached, refused


def store_image(
    data: bytes, filename: str, attach_bytes: AttachBytes
) -> tuple[list[Attachment], list[str]]:
    """Attach PNG bytes through `attach_bytes`: the attachment, or why it was not."""
    try:
        return [attach_bytes(data, filename)], []
    except (AttachmentError, OSError) as exc:
        return [], [str(exc)]


# The message box grows with its text from one line up to this height, then scrolls.
# Over the message box while a sent prompt is edited there.
EDITING = (
    "Editing your message: sending replaces it and its reply; the earlier pair stays as a "
    "version under the reply. Esc cancels"
)
MIN_EDIT_HEIGHT = 44
MAX_EDIT_HEIGHT = 240
THUMB = 28


def mime_image_png(source: QMimeData) -> bytes | None:
    """A clipboard or dropped image as PNG bytes, or None."""
    if not source.hasImage():
        return None
    image = QImage(source.imageData())
    if image.isNull():
        return None
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buf, "PNG")  # type: ignore[call-overload]  # stubs say bytes; runtime wants str
    buf.close()
    return bytes(data.data())


def mime_files(source: QMimeData) -> list[str]:
    """Local file paths in a clipboard or drop payload."""
    if not source.hasUrls():
        return []
    return [u.toLocalFile() for u in source.urls() if u.isLocalFile()]


def thumbnail(attachment: Attachment, side: int = THUMB) -> QPixmap | None:
    """A small preview of an image attachment (decoded at thumbnail size), or None."""
    if not is_image(attachment):
        return None
    reader = QImageReader(attachment.path)
    size = reader.size()
    if size.isValid() and not size.isEmpty():
        reader.setScaledSize(size.scaled(side, side, Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    return QPixmap.fromImage(image) if not image.isNull() else None


_POPUP_KEYS = (
    Qt.Key.Key_Return,
    Qt.Key.Key_Enter,
    Qt.Key.Key_Tab,
    Qt.Key.Key_Backtab,
    Qt.Key.Key_Escape,
)


class ComposerEdit(QPlainTextEdit):
    """The text box; turns the send key, Esc, pasted images and dropped files into signals.

    Signals:
        submit(): the send key was pressed.
        escape(): Esc was pressed.
        files_dropped(list): local file paths pasted or dropped.
        image_pasted(bytes): a clipboard image, encoded as PNG.
    """

    submit = Signal()
    escape = Signal()
    files_dropped = Signal(list)
    image_pasted = Signal(bytes)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.send_key = SEND_ENTER
        self.setTabChangesFocus(True)
        self.slash = SlashCompleter(self)
        self._composing = False  # an input method (CJK) shows uncommitted preedit text

    def inputMethodEvent(self, e: QInputMethodEvent) -> None:
        self._composing = bool(e.preeditString())
        super().inputMethodEvent(e)

    def composing(self) -> bool:
        """Whether an input method is composing text not yet committed."""
        return self._composing

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if self._composing and e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            return  # the input method's to confirm its reading: never a send or a new line
        if self.slash.popup_visible() and e.key() in _POPUP_KEYS:
            e.ignore()  # the completion popup takes it (Enter/Tab choose, Esc closes)
            return
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            mods = e.modifiers()
            shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
            ctrl = bool(mods & Qt.KeyboardModifier.ControlModifier)
            sends = (not shift and not ctrl) if self.send_key == SEND_ENTER else ctrl
            if sends:
                self.submit.emit()
                return
            self.insertPlainText("\n")
            return
        if e.key() == Qt.Key.Key_Escape:
            self.escape.emit()
            return
        super().keyPressEvent(e)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return source.hasImage() or source.hasUrls() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        files = mime_files(source)
        if files:
            self.files_dropped.emit(files)
            return
        png = mime_image_png(source)
        if png is not None:
            self.image_pasted.emit(png)
            return
        super().insertFromMimeData(source)


class AttachmentChip(QFrame):
    """A removable chip naming one attachment.

    Signals:
        remove_requested(str): the chip's attachment sha256.
    """

    remove_requested = Signal(str)

    def __init__(self, attachment: Attachment, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chip")
        self.attachment = attachment
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 3, 4, 3)
        lay.setSpacing(4)
        self.thumb = QLabel(self)
        preview = thumbnail(attachment)
        if preview is not None:
            self.thumb.setPixmap(preview)
            self.thumb.setAccessibleName(f"Preview of {attachment.filename}")
            lay.addWidget(self.thumb)
        else:
            self.thumb.hide()
        self.label = ElidingLabel(attachment.filename, self)
        self.label.setAccessibleName(f"Attachment {attachment.filename}")
        self.remove_button = QToolButton(self)
        self.remove_button.setIcon(icon("close"))
        self.remove_button.setAccessibleName(f"Remove attachment {attachment.filename}")
        self.remove_button.setToolTip("Remove")
        self.remove_button.clicked.connect(self._on_remove_button_clicked)
        lay.addWidget(self.label)
        lay.addWidget(self.remove_button)

    def _on_remove_button_clicked(self) -> None:
        self.remove_requested.emit(self.attachment.sha256)


class Composer(QWidget):
    """Writes prompts. Never loses text: the draft goes out on every change for autosave.

    Signals:
        send_requested(str, tuple): text and attachments to send (the composer then clears).
        stop_requested(): the user wants the running turn stopped (Stop button or Esc).
        draft_changed(object): the Draft now in the composer, for autosave.
        files_to_attach(list): local file paths the user picked, dropped or pasted; whoever
            stores them answers with `show_attached`.
        image_to_attach(bytes, str): a pasted or dropped image as PNG, and its file name.
        busy_send_requested(str, str, tuple): while a reply runs, "steer" (into the running
            reply) or "interrupt" (stop it, then send), with the text and attachments.
        resend_requested(str, str, tuple): a sent prompt (its message id), edited here, is
            to replace that prompt and its reply: the text and attachments (`edit_sent`).
    """

    send_requested = Signal(str, tuple)
    resend_requested = Signal(str, str, tuple)
    busy_send_requested = Signal(str, str, tuple)
    stop_requested = Signal()
    draft_changed = Signal(object)
    files_to_attach = Signal(list)
    image_to_attach = Signal(bytes, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.folders = Folders()  # where the attach dialog opens (the window's, once set)
        self.setObjectName("composer")
        self._attachments: list[Attachment] = []
        self._running = False
        self._loading = False
        self._undo_draft: Draft | None = None
        self._paste_count = 0
        # A sent prompt being edited (`edit_sent`): its id, and the draft it pushed aside.
        self._editing: tuple[str, Draft] | None = None

        self.notice_bar = QFrame(self)
        self.notice_bar.setObjectName("noticeBar")
        self.notice_label = QLabel("Draft restored", self.notice_bar)
        self.undo_button = QPushButton("Undo", self.notice_bar)
        self.undo_button.setAccessibleName("Undo draft restore")
        self.undo_button.clicked.connect(self._on_undo_button_clicked)
        self._bar(self.notice_bar, self.notice_label, self.undo_button)

        self.edit_bar = QFrame(self)
        self.edit_bar.setObjectName("noticeBar")
        self.edit_label = WrappingLabel(EDITING, self.edit_bar)
        self.cancel_edit_button = QPushButton("Cancel", self.edit_bar)
        self.cancel_edit_button.setAccessibleName("Cancel editing the sent message")
        self.cancel_edit_button.clicked.connect(self.cancel_edit)
        self._bar(self.edit_bar, self.edit_label, self.cancel_edit_button)

        # Replying to a quote: one line of it and a button to drop it; the quote itself goes
        # out above the typed text, as a markdown blockquote (`with_quote`).
        self._quote = ""
        self._quote_from = ""
        self.quote_bar = QFrame(self)
        self.quote_bar.setObjectName("noticeBar")
        self.quote_label = QLabel("", self.quote_bar)
        self.quote_label.setObjectName("quoteLabel")
        self.quote_label.setTextFormat(Qt.TextFormat.PlainText)
        self.remove_quote_button = QPushButton("Remove", self.quote_bar)
        self.remove_quote_button.setAccessibleName("Remove the quote")
        self.remove_quote_button.clicked.connect(self.remove_quote)
        self._bar(self.quote_bar, self.quote_label, self.remove_quote_button)
        self.quote_bar.hide()

        self.banner = QFrame(self)
        self.banner.setObjectName("bannerBar")
        self.banner_label = WrappingLabel("", self.banner)
        self.retry_button = QPushButton("Retry", self.banner)
        self.retry_button.setAccessibleName("Retry sending the restored message")
        self.retry_button.clicked.connect(self._on_retry_button_clicked)
        self._bar(self.banner, self.banner_label, self.retry_button)

        self.save_warning = WrappingLabel("", self)
        self.save_warning.setObjectName("saveWarning")
        self.save_warning.setAccessibleName("Draft save warning")
        self.save_warning.setStyleSheet("color: #e5484d;")
        self.save_warning.hide()

        self.attach_warning = WrappingLabel("", self)
        self.attach_warning.setObjectName("attachWarning")
        self.attach_warning.setAccessibleName("Attachment warning")
        self.attach_warning.setWordWrap(True)
        self.attach_warning.setStyleSheet("color: #e5484d;")
        self.attach_warning.hide()

        self.chips = QWidget(self)
        self.chips_layout = QHBoxLayout(self.chips)
        self.chips_layout.setContentsMargins(0, 0, 0, 0)
        self.chips_layout.setSpacing(6)
        self.chips_layout.addStretch(1)
        self.chips.hide()

        self.attach_button = self._tool("attach", "Attach files", "Attach files to the message")
        self.attach_button.clicked.connect(self._on_attach_button_clicked)
        self.edit = ComposerEdit(self)
        self.edit.setObjectName("composerEdit")
        self.edit.setPlaceholderText("Write a message…")
        self.edit.setAccessibleName("Message")
        self.edit.setAccessibleDescription("Type a message; Enter sends, Shift+Enter adds a line")
        self.edit.setFixedHeight(MIN_EDIT_HEIGHT)
        self.edit.document().documentLayout().documentSizeChanged.connect(
            self._on_edit_size_changed
        )
        self.edit.submit.connect(self._on_edit_submit)
        self.edit.escape.connect(self._on_edit_escape)
        self.edit.files_dropped.connect(self._on_edit_files_dropped)
        self.edit.image_pasted.connect(self._on_edit_image_pasted)
        self.edit.textChanged.connect(self._on_edit_text_changed)
        self.send_button = self._tool("send", "Send", "Send the message")
        self.send_button.clicked.connect(self._on_edit_submit)
        self.stop_button = self._tool("stop", "Stop", "Stop the reply being generated (Esc)")
        self.stop_button.clicked.connect(self._on_stop_button_clicked)
        self.stop_button.hide()
        # While a reply runs, Enter queues the message (or does the busy default); these two
        # do the others.
        self.busy_mode = "queue"
        self.steer_button = self._text_tool(
            "Steer now", "Put the message into the running reply now"
        )
        self.steer_button.clicked.connect(lambda: self._busy_send("steer"))
        self.stop_send_button = self._text_tool(
            "Stop and send", "Stop the running reply, then send the message"
        )
        self.stop_send_button.clicked.connect(lambda: self._busy_send("interrupt"))
        self._steer = (True, "")

        row = QHBoxLayout()
        row.setSpacing(6)
        row.addWidget(self.attach_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.edit, 1)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        self._send_row = row
        row.addWidget(self.steer_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.stop_send_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.stop_button, 0, Qt.AlignmentFlag.AlignBottom)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(12, 8, 12, 10)
        outer.setSpacing(6)
        bars = (self.notice_bar, self.edit_bar, self.quote_bar, self.banner, self.save_warning)
        for w in (*bars, self.attach_warning, self.chips):
            outer.addWidget(w)
        outer.addLayout(row)
        self.notice_bar.hide()
        self.edit_bar.hide()
        self.banner.hide()
        self._update_buttons()

    def add_send_option(self, widget: QWidget) -> None:
        """A control of how messages are sent, right of the Send button."""
        self._send_row.insertWidget(
            self._send_row.indexOf(self.send_button) + 1, widget, 0, Qt.AlignmentFlag.AlignBottom
        )

    def _bar(self, frame: QFrame, label: QLabel, button: QPushButton) -> None:
        lay = QHBoxLayout(frame)
        lay.setContentsMargins(10, 4, 6, 4)
        lay.addWidget(label, 1)
        lay.addWidget(button)
        frame.setAccessibleName(label.text() or "Notice")

    def _tool(self, name: str, text: str, description: str) -> QToolButton:
        b = QToolButton(self)
        b.setIcon(icon(name))
        b.setIconSize(QSize(22, 22))
        b.setToolTip(text)
        b.setAccessibleName(text)
        b.setAccessibleDescription(description)
        b.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        return b

    def _text_tool(self, text: str, description: str) -> QToolButton:
        b = QToolButton(self)
        b.setObjectName("busyButton")
        b.setText(text)
        b.setToolTip(description)
        b.setAccessibleName(text)
        b.setAccessibleDescription(description)
        b.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        b.hide()
        return b

    # -- state ------------------------------------------------------------------------------

    @property
    def attachments(self) -> tuple[Attachment, ...]:
        """Attachments currently shown as chips."""
        return tuple(self._attachments)

    def draft(self) -> Draft:
        """What the composer holds now."""
        return Draft(
            self.edit.toPlainText(),
            self.edit.textCursor().position(),
            self.attachments,
            self._quote,
            self._quote_from,
        )

    def set_commands(self, commands: list[tuple[str, str]]) -> None:
        """The gateway's slash commands, offered as the user types "/"."""
        self.edit.slash.set_commands(commands)

    def is_command(self, text: str) -> bool:
        """Whether `text` is one of the gateway's slash commands rather than a prompt."""
        return self.edit.slash.is_command(text)

    def focus_edit(self, reason: Qt.FocusReason = Qt.FocusReason.OtherFocusReason) -> None:
        """Put the keyboard in the message field."""
        self.edit.setFocus(reason)

    def focus_chain(self) -> tuple[QWidget, ...]:
        """Its focusable widgets in Tab order, for the window's own order."""
        return (
            self.attach_button,
            self.edit,
            self.send_button,
            self.steer_button,
            self.stop_send_button,
            self.stop_button,
        )

    def set_send_key(self, send_key: str) -> None:
        """SEND_ENTER or SEND_CTRL_ENTER."""
        self.edit.send_key = send_key
        hint = "Enter sends, Shift+Enter" if send_key == SEND_ENTER else "Ctrl+Enter sends, Enter"
        self.edit.setAccessibleDescription(f"Type a message; {hint} adds a line")

    @property
    def running(self) -> bool:
        """A turn is running: Stop is shown and Esc stops it."""
        return self._running

    def set_running(self, running: bool) -> None:
        """A turn is running: show Stop (Esc works too) instead of Send."""
        self._running = running
        self.stop_button.setVisible(running)
        self.send_button.setVisible(not running)
        self._update_buttons()

    def set_steer(self, available: bool, reason: str) -> None:
        """Offer Steer now while a reply runs, or say in its tooltip why it is not offered."""
        self._steer = (available, reason)
        self._update_buttons()

    def load_draft(self, draft: Draft | None) -> None:
        """Show a session's saved draft without echoing it back as a change."""
        self._loading = True
        try:
            self._set_content(draft or Draft())
        finally:
            self._loading = False
        self.notice_bar.hide()
        self.banner.hide()
        self.save_warning.hide()
        self.attach_warning.hide()
        self._end_edit()  # another chat: the edit of this one's prompt is over

    @property
    def editing(self) -> str | None:
        """The id of the sent prompt being edited (`edit_sent`), None when none is."""
        return self._editing[0] if self._editing is not None else None

    def edit_sent(self, message_id: str, draft: Draft) -> None:
        """Edit the sent prompt `message_id` here: Send then asks for it to replace that
        prompt and its reply (`resend_requested`); Cancel or Esc puts back what was here."""
        before = self._editing[1] if self._editing is not None else self.draft()
        self._editing = (message_id, before)
        self._set_content(draft)
        self.edit_bar.show()
        self.edit.setFocus()

    def cancel_edit(self) -> None:
        """Stop editing the sent prompt: the message box holds what it held before."""
        if self._editing is not None:
            before = self._editing[1]
            self._end_edit()
            self._set_content(before)

    def _end_edit(self) -> None:
        self._editing = None
        self.edit_bar.hide()

    def show_draft_restored(self, draft: Draft) -> None:
        """Put a recovered draft back, with a notice and an Undo."""
        self._undo_draft = self.draft()
        self._set_content(draft)
        self.notice_label.setText("Draft restored")
        self.notice_bar.show()

    def restore_prompt(self, draft: Draft, error: str) -> None:
        """A prompt came back (not delivered): put it back with a Retry banner naming why."""
        self._set_content(draft)
        self.banner_label.setText(f"{failure_label(error)}. Your message is back here.")
        self.banner.show()

    def set_save_state(self, saved: bool, error: str) -> None:
        """Show or clear the "Draft not saved" warning."""
        self.save_warning.setText(f"Draft not saved: {error}" if error else "Draft not saved")
        self.save_warning.setVisible(not saved)

    def add_attachment(self, attachment: Attachment) -> None:
        """Add a chip (duplicates by content are ignored)."""
        if any(a.sha256 == attachment.sha256 for a in self._attachments):
            return
        self._attachments.append(attachment)
        chip = AttachmentChip(attachment, self.chips)
        chip.remove_requested.connect(self._on_chip_remove_requested)
        self.chips_layout.insertWidget(self.chips_layout.count() - 1, chip)
        self.chips.show()
        self._changed()

    def set_draft(self, draft: Draft) -> None:
        """Replace the content (e.g. an unsent prompt taken back for editing); autosaved."""
        self._set_content(draft)
        self.edit.setFocus()

    def quote(self, markdown: str, who: str = "") -> None:
        """Reply to `markdown` (a message or a selection of it, as written): a compact
        reply-to line above the box, the quote sent above what is typed."""
        self._show_quote(markdown, who)
        self._changed()  # kept with the draft: a restart brings the quote back with the text
        self.edit.setFocus()

    def _show_quote(self, markdown: str, who: str) -> None:
        self._quote, self._quote_from = markdown, who
        if not markdown:
            self.quote_bar.hide()
            return
        line = preview(markdown)
        self.quote_label.setText(f"Replying to {who}: {line}" if who else f"Replying to: {line}")
        self.quote_label.setToolTip(markdown)
        self.quote_bar.setAccessibleName(self.quote_label.text())
        self.quote_bar.show()

    @property
    def quoted(self) -> str:
        """The markdown being replied to ("" for none)."""
        return self._quote

    def remove_quote(self) -> None:
        """Send the reply without its quote."""
        self._show_quote("", "")
        self._changed()
        self.edit.setFocus()

    def _outgoing(self) -> str:
        """What Send sends: the quote (if any) above the typed text."""
        return with_quote(self._quote, self.edit.toPlainText())

    def clear(self) -> None:
        """Empty text and attachments (after a send)."""
        self._set_content(Draft())

    def _set_content(self, draft: Draft) -> None:
        self._show_quote(draft.quote, draft.quote_from)
        for chip in self.chips.findChildren(AttachmentChip):
            chip.deleteLater()
            chip.setParent(None)
        self._attachments = []
        for att in draft.attachments:
            self._attachments.append(att)
            chip = AttachmentChip(att, self.chips)
            chip.remove_requested.connect(self._on_chip_remove_requested)
            self.chips_layout.insertWidget(self.chips_layout.count() - 1, chip)
        self.chips.setVisible(bool(self._attachments))
        self.edit.setPlainText(draft.text)
        cursor = self.edit.textCursor()
        cursor.setPosition(min(draft.cursor or len(draft.text), len(draft.text)))
        self.edit.setTextCursor(cursor)
        self._changed()

    def _changed(self) -> None:
        self._update_buttons()
        if not self._loading:
            self.draft_changed.emit(self.draft())

    def _update_buttons(self) -> None:
        has_content = bool(self.edit.toPlainText().strip() or self._attachments)
        self.send_button.setEnabled(has_content)
        busy = self._running and has_content
        can_steer, reason = self._steer
        # Hidden, not disabled, where the gateway cannot steer: the Stop's tooltip says why.
        self.steer_button.setVisible(busy and can_steer and not self._attachments)
        self.stop_send_button.setVisible(busy)
        self.stop_button.setToolTip(
            "Stop" if can_steer else f"Stop (Steer is unavailable: {reason})"
        )

    # -- dialogs (patchable in tests) -------------------------------------------------------

    @classmethod
    def pick_files(cls, parent: QWidget, start: str = "") -> list[str]:
        """Ask the user for files to attach, starting in folder `start`."""
        files, _ = QFileDialog.getOpenFileNames(parent, "Attach files", start)
        return list(files)

    # -- slots ------------------------------------------------------------------------------

    def _on_edit_submit(self) -> None:
        text = self._outgoing()
        if not (text.strip() or self._attachments):
            return
        too_large = prompt_too_large(text)
        if too_large:
            # Refused here, with its size, and kept: never persisted, never sent.
            self.attach_warning.setText(f"Not sent: {too_large}.")
            self.attach_warning.show()
            return
        # The user's busy default: steer where it can, else (and by default) queue.
        steers = self.busy_mode == "steer" and self._steer[0] and not self._attachments
        if self._running and (steers or self.busy_mode == "interrupt"):
            self._busy_send(self.busy_mode)
            return
        attachments = self.attachments
        self.banner.hide()
        self.attach_warning.hide()
        self.notice_bar.hide()
        editing = self.editing
        self._end_edit()
        self.clear()
        if editing is not None:
            self.resend_requested.emit(editing, text, attachments)
        else:
            self.send_requested.emit(text, attachments)

    def _busy_send(self, mode: str) -> None:
        text, attachments = self._outgoing(), self.attachments
        if not (text.strip() or attachments) or prompt_too_large(text):
            return
        self._end_edit()  # a running reply is not the turn edited: this goes out as new
        self.clear()
        self.busy_send_requested.emit(mode, text, attachments)

    def _on_edit_escape(self) -> None:
        if self._running:
            self.stop_requested.emit()
        elif self._editing is not None:
            self.cancel_edit()

    def _on_stop_button_clicked(self) -> None:
        self.stop_requested.emit()

    def _on_edit_text_changed(self) -> None:
        self._changed()

    def _on_attach_button_clicked(self) -> None:
        files = self.pick_files(self, self.folders.start("attach"))
        if files:
            self.folders.remember("attach", files[0])
        self.attach_files(files)

    def attach_files(self, paths: list[str]) -> None:
        """Ask for files to be attached (dropped anywhere on the window, pasted or picked);
        the answer comes back through `show_attached`."""
        if paths:
            self.files_to_attach.emit(list(paths))

    def attach_image(self, data: bytes) -> None:
        """Ask for a pasted or dropped image (PNG bytes) to be attached, under a name of its
        own; the answer comes back through `show_attached`."""
        self._paste_count += 1
        self.image_to_attach.emit(data, f"pasted-{self._paste_count}.png")

    def show_attached(self, attachments: Sequence[Attachment], refused: Sequence[str]) -> None:
        """Chips for what was attached; what was refused is shown with the reasons. More
        than the gateway takes in one message (MAX_ATTACHMENTS) are refused here, by name."""
        reasons = list(refused)
        for attachment in attachments:
            known = any(a.sha256 == attachment.sha256 for a in self._attachments)
            if not known and len(self._attachments) >= MAX_ATTACHMENTS:
                reasons.append(
                    f"{attachment.filename}: a message can carry at most "
                    f"{MAX_ATTACHMENTS} attachments"
                )
                continue
            self.add_attachment(attachment)
        self._show_refused(reasons)

    def _show_refused(self, reasons: Sequence[str]) -> None:
        self.attach_warning.setText("Not attached: " + "; ".join(reasons) if reasons else "")
        self.attach_warning.setVisible(bool(reasons))

    def _on_edit_files_dropped(self, paths: list[str]) -> None:
        self.attach_files(paths)

    def _on_edit_image_pasted(self, data: bytes) -> None:
        self.attach_image(data)

    def _on_edit_size_changed(self) -> None:
        self._fit_height()

    def set_text_size(self, points: float) -> None:
        """Type at this text size (zoom); the box's height follows."""
        font = QFont(self.edit.font())
        font.setPointSizeF(points)
        self.edit.setFont(font)
        self._fit_height()

    def _fit_height(self) -> None:
        """Grow the box with its text (visual lines, wraps included) up to MAX_EDIT_HEIGHT."""
        edit = self.edit
        doc = edit.document()
        lines = max(1.0, doc.documentLayout().documentSize().height())
        margins = edit.contentsMargins()
        # QPlainTextEdit scrolls when less than a whole line's leading is left: keep 4 px spare.
        chrome = 2 * doc.documentMargin() + margins.top() + margins.bottom() + 4
        wanted = round(lines * edit.fontMetrics().lineSpacing() + chrome)
        height = max(MIN_EDIT_HEIGHT, min(MAX_EDIT_HEIGHT, wanted))
        if height != edit.height():
            edit.setFixedHeight(height)

    def _on_chip_remove_requested(self, sha256: str) -> None:
        self._attachments = [a for a in self._attachments if a.sha256 != sha256]
        for chip in self.chips.findChildren(AttachmentChip):
            if chip.attachment.sha256 == sha256:
                chip.setParent(None)
                chip.deleteLater()
        self.chips.setVisible(bool(self._attachments))
        self._changed()

    def _on_undo_button_clicked(self) -> None:
        self._set_content(self._undo_draft or Draft())
        self._undo_draft = None
        self.notice_bar.hide()

    def _on_retry_button_clicked(self) -> None:
        self._on_edit_submit()
