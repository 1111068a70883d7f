"""One profile on screen: its bridge's signals wired to the window's widgets while it is shown."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

from PySide6.QtCore import QObject, QSettings, SignalInstance

from desktop.core.chats.turns import finished_reply
from desktop.core.models import ChatMessage, ConnectionStatus, Role, SessionSummary
from desktop.ui.backend import ChatBackend, Draft
from desktop.ui.chat.view import ChatView
from desktop.ui.compose.composer import Composer
from desktop.ui.platform.announce import ANNOUNCE_CHARS, announce
from desktop.ui.platform.tray import Tray
from desktop.ui.render.markdown import plain_text
from desktop.ui.window.bridge import ProfileBridge, ProfileEntry
from desktop.ui.window.pane.status_bar import ConnectionWidget

# Markdown characters read for a finished reply's announcement: its marks and a table's pipes
# take room, so past what is said (a 7 KB reply's plain text took ~3 ms, 900 characters ~1).
SPOKEN_SOURCE = 3 * ANNOUNCE_CHARS


def _newest_reply(messages: Sequence[ChatMessage]) -> str:
    """The id of the newest reply shown (as `finished_reply` picks its text), or ""."""
    return next((m.id for m in reversed(messages) if m.role is Role.ASSISTANT), "")


def spoken_source(text: str) -> str:
    """The start of a reply's markdown that its announcement is made from: up to the first
    paragraph break past what is said (ANNOUNCE_CHARS), at most SPOKEN_SOURCE characters. A
    table or code block after the reply's first words is not parsed at the turn's end (a
    24-row table took ~3 ms, in the frame showing the reply's last words)."""
    cut = text.find("\n\n", ANNOUNCE_CHARS, SPOKEN_SOURCE)
    return text[: cut if cut >= 0 else SPOKEN_SOURCE]


class Screen(Protocol):
    """What a profile view shows its profile on (the main window)."""

    chat_view: ChatView
    composer: Composer
    connection: ConnectionWidget

    def isActiveWindow(self) -> bool: ...
    def show_sessions(self, sessions: list[SessionSummary]) -> None: ...
    def update_unread(self) -> None: ...
    def show_history(self, messages: list[ChatMessage]) -> None: ...
    def show_older(self, messages: list[ChatMessage]) -> None: ...
    def show_draft_restored(self, draft: Draft) -> None: ...
    def show_notice(self, text: str) -> None: ...
    def show_info(self) -> None: ...
    def show_approvals(self) -> None: ...
    def follow_session_key(self, key: str) -> None: ...
    def show_queue(self, *_changed: object) -> None: ...
    def queue_message_changed(self, message: ChatMessage) -> None: ...


class ProfileView(QObject):
    """Connects one profile's bridge to the screen: its viewed session's events only while shown.

    Always connected: the unread count and the finished-reply notification (any profile's news),
    and the last open session kept per profile. Connected by `show`, cut by `hide`: everything
    the widgets display, so another profile's events never reach them.
    """

    def __init__(
        self, entry: ProfileEntry, screen: Screen, settings: QSettings, tray: Tray
    ) -> None:
        super().__init__()
        self.name = entry.name
        self.bridge: ProfileBridge = entry.bridge
        self._screen = screen
        self._settings = settings
        self._tray = tray
        self._shown = False
        b = self.bridge
        b.sessions_changed.connect(self._on_bridge_sessions_changed)
        b.session_key_changed.connect(self._on_bridge_session_key_changed)
        b.running_changed.connect(self._on_bridge_running_changed)
        self._while_shown = screen_wiring(b, screen)

    @property
    def profile_id(self) -> str:
        return self.bridge.profile_id

    @property
    def backend(self) -> ChatBackend:
        return self.bridge.backend

    @property
    def session_key(self) -> str | None:
        """The session open in this profile (one owner: the bridge routes its events)."""
        return self.bridge.viewed_key

    @property
    def last_session(self) -> str:
        """The session open when this profile was last shown (kept across runs)."""
        return str(self._settings.value(self._last_setting, "") or "")

    @property
    def _last_setting(self) -> str:
        return f"ui/last_session/{self.profile_id}"

    def open(self, key: str | None) -> None:
        """Make `key` the viewed session (remembered for the next run when it is a session)."""
        self.bridge.view(key)
        if key is not None:
            self._settings.setValue(self._last_setting, key)

    def show(self) -> None:
        """This profile takes the widgets: its events reach them from now on."""
        if not self._shown:
            self._shown = True
            for signal, slot in self._while_shown:
                signal.connect(slot)

    def hide(self) -> None:
        """Another profile takes the widgets (or this one goes): none of its events reach them."""
        if self._shown:
            self._shown = False
            for signal, slot in self._while_shown:
                signal.disconnect(slot)
            self.bridge.view(None)

    def _on_bridge_sessions_changed(self, _sessions: Sequence[SessionSummary]) -> None:
        self._screen.update_unread()

    def _on_bridge_session_key_changed(self, old_key: str, new_key: str) -> None:
        if self.last_session == old_key:
            self._settings.setValue(self._last_setting, new_key)

    def _on_bridge_running_changed(self, key: str, running: bool) -> None:
        if running:
            return
        view = self._screen.chat_view
        viewed = self._shown and key == self.session_key
        title, text = finished_reply(self.backend.summary(key), view.messages() if viewed else None)
        self._tray.reply_finished(
            title, text, self.profile_id, key, seen=self._screen.isActiveWindow()
        )
        if viewed:
            # Said is the reply's start (`announce` keeps ANNOUNCE_CHARS): its markdown is read
            # that far and some way past, not all of a long reply (tens of ms parsing at the
            # turn's end, when the next reply may already stream).
            spoken = view.shown_text(_newest_reply(view.messages()), ANNOUNCE_CHARS)
            if spoken is None:
                spoken = plain_text(spoken_source(text))
            announce(view, f"Reply: {spoken}" if text else "Reply finished")
        elif self._shown:
            announce(view, f"New reply in {title}")


def show_status(screen: Screen, status: ConnectionStatus) -> None:
    """The link's status on every part of `screen` that shows it: the header's connection
    widget and the waiting line of a reply still streaming. A screen's first status (a
    profile shown, a chat's own window opened) and every later one (`screen_wiring`) alike."""
    screen.connection.set_status(status)
    screen.chat_view.set_link_status(status)


def screen_wiring(
    b: ProfileBridge, screen: Screen
) -> list[tuple[SignalInstance, Callable[..., None]]]:
    """What of `b` reaches which part of `screen` (the main window, or a chat's own window)."""
    view, composer = screen.chat_view, screen.composer
    return [
        (b.status_changed, partial(show_status, screen)),
        (b.sessions_changed, screen.show_sessions),
        (b.viewed_key_changed, screen.follow_session_key),
        (b.commands_loaded, composer.set_commands),
        (b.notice, screen.show_notice),
        (b.messages_reset, screen.show_history),
        (b.messages_prepended, screen.show_older),
        (b.messages_appended, view.append_messages),
        (b.messages_dropped, view.drop_messages),
        (b.newer_waiting, view.newer_waiting),
        (b.live_end_joined, view.live_end_joined),
        (b.message_changed, view.update_message),
        (b.message_removed, view.remove_message),
        (b.viewed_running, composer.set_running),
        (b.draft_restored, screen.show_draft_restored),
        (b.prompt_restored, composer.restore_prompt),
        (b.draft_save_state, composer.set_save_state),
        (b.approvals_changed, screen.show_approvals),
        (b.info_changed, screen.show_info),
        # The queued rows follow the chat's local prompts and whether it runs.
        (b.messages_reset, screen.show_queue),
        (b.message_changed, screen.queue_message_changed),
        (b.message_removed, screen.show_queue),
        (b.viewed_running, screen.show_queue),
        (b.status_changed, screen.show_queue),
    ]
