"""Chat tabs over the chat pane: each tab one chat of any profile, the pane showing the current.

A background tab's chat keeps going in its profile's core (its conversation streams, its
questions and unread count are kept there); the tab shows a dot while a reply runs or a question
waits, and the unread count. Choosing a tab opens its chat in the pane, as the chat list does.
Each tab keeps where its chat was being read (the message at the top and how far into it, or
the bottom, following new messages) and shows it there again when chosen. A tab whose profile
was chosen with no chat to show says so ("New chat"). Tabs are remembered in the settings and
come back at the next start (a chat that is gone is left out); where they were read is written
a moment after the reading stops as well as at close, so a crash or a kill keeps it. Ctrl+T,
Ctrl+W, Ctrl+Tab, Ctrl+Shift+Tab and Ctrl+1..9 drive them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from PySide6.QtCore import QObject, QSettings, QSize, Qt, QTimer
from PySide6.QtGui import QIcon, QMouseEvent
from PySide6.QtWidgets import QTabBar, QToolButton, QVBoxLayout, QWidget

from desktop.core.keys import is_temp_key
from desktop.ui.chat.view import ChatView, ReadingPlace
from desktop.ui.platform.resources import icon
from desktop.ui.window.bridge import ProfileBridge
from desktop.ui.window.running import (
    NO_ICON,
    ChatState,
    RunningStrip,
    busy_chats,
    chat_state,
    state_icon,
)

TITLE_MAX = 30  # characters of a title on a tab; the whole title is in its tooltip
_TABS = "ui/tabs"
_CURRENT = "ui/tab_current"
_PLACES = "ui/tab_places"  # where each tab's chat was being read, for the next start
PLACE_SAVE_MS = 1500  # the reading places are written this long after the last scroll


@dataclass(frozen=True, slots=True)
class ChatRef:
    """A chat of some profile."""

    profile_id: str
    key: str


@dataclass(frozen=True, slots=True)
class NoChat:
    """A tab showing no chat of `profile_id`: its profile was chosen and has none."""

    profile_id: str


class Desk(Protocol):
    """The main window, as far as the tabs go."""

    @property
    def profile_id(self) -> str: ...
    @property
    def session_key(self) -> str | None: ...
    @property
    def chat_view(self) -> ChatView: ...
    def open_chat(self, profile_id: str, key: str) -> None: ...
    def new_chat(self) -> None: ...
    def show_no_chat(self) -> None: ...
    def switch_profile(self, profile_id: str, *, open_last: bool = True) -> None: ...


class TabBar(QTabBar):
    """Closable, movable tabs; a middle click closes one."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatTabs")
        self.setAccessibleName("Open chats")
        self.setDocumentMode(True)
        self.setDrawBase(False)
        self.setTabsClosable(False)  # each tab gets its own close button (themed icon)
        self.setMovable(True)
        self.setExpanding(False)
        self.setUsesScrollButtons(True)
        self.setElideMode(Qt.TextElideMode.ElideRight)
        self.setSelectionBehaviorOnRemove(QTabBar.SelectionBehavior.SelectRightTab)
        # Reached with Ctrl+Tab and Ctrl+1..9; out of the Tab chain between list and chat.
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)

    def mouseReleaseEvent(self, e: QMouseEvent) -> None:
        if e.button() == Qt.MouseButton.MiddleButton:
            index = self.tabAt(e.position().toPoint())
            if index >= 0:
                self.tabCloseRequested.emit(index)
                return
        super().mouseReleaseEvent(e)


def chat_column(parent: QWidget, tabs: ChatTabs, pane: QWidget) -> QWidget:
    """The running strip, the tab bar and the chat pane, top to bottom."""
    column = QWidget(parent)
    column.setObjectName("chatColumn")
    lay = QVBoxLayout(column)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(0)
    for widget in (tabs.strip, tabs.bar):
        widget.setParent(column)
        lay.addWidget(widget)
    lay.addWidget(pane, 1)
    return column


class ChatTabs(QObject):
    """Keeps the tab bar and the running strip in step with the chats and the open one."""

    def __init__(self, desk: Desk, settings: QSettings, parent: QWidget) -> None:
        super().__init__(parent)
        self._desk = desk
        self._settings = settings
        self._profiles: dict[str, tuple[str, ProfileBridge]] = {}
        self._quiet = False  # the current tab moves because a chat opened: open nothing
        self._restoring = False
        # The last time a tab's chat was replaced: (the chat now in it, the one it replaced).
        self._replaced: tuple[ChatRef, ChatRef] | None = None
        # Where each tab's chat was being read; `_viewing` the chat the view shows for the tabs.
        self._places: dict[ChatRef, ReadingPlace] = {}
        self._viewing: ChatRef | None = None
        # The place the chat just shown is read from again when its history arrives (shown
        # first from the cache, then replaced by the gateway's: the view goes to its bottom).
        self._awaited: tuple[ChatRef, ReadingPlace] | None = None
        desk.chat_view.verticalScrollBar().valueChanged.connect(self._note_place)
        # Restarted by every new reading place: one write per pause in the reading, not one
        # per scroll step, and none while a chat at its bottom follows a streaming reply.
        self.place_timer = QTimer(self)
        self.place_timer.setSingleShot(True)
        self.place_timer.setInterval(PLACE_SAVE_MS)
        self.place_timer.timeout.connect(self.save_places)
        # The chats' news (a turn starting or ending, a question, the list) refreshes the tabs
        # once the frames read together are handled: 20 chats streaming start and end a turn
        # every few milliseconds, each news a refresh of every tab and the strip.
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(0)
        self._refresh_timer.timeout.connect(self.refresh)
        self._colors = ("#3b82f6", "#d97706")
        self._tint = ""
        # Brings a chat's own window forward (the strip's click); False: it has none.
        self.raise_window: Callable[[str, str], bool] = lambda _pid, _key: False
        self.bar = TabBar(parent)
        self.bar.hide()
        self.strip = RunningStrip(parent)
        self.strip.chosen.connect(self.open_in_tab)
        self.bar.currentChanged.connect(self._on_bar_current_changed)
        self.bar.tabCloseRequested.connect(self.close_tab)
        self.bar.tabMoved.connect(lambda *_: self._save())

    # -- profiles -----------------------------------------------------------------------------

    def add_profile(self, name: str, bridge: ProfileBridge) -> None:
        pid = bridge.profile_id
        self._profiles[pid] = (name, bridge)
        bridge.sessions_changed.connect(lambda _s: self._on_sessions_changed(pid))
        bridge.running_changed.connect(lambda *_: self._refresh_soon())
        bridge.requests_changed.connect(lambda _k: self._refresh_soon())
        bridge.session_key_changed.connect(lambda old, new: self._rekey(pid, old, new))
        self.refresh()

    def rename_profile(self, profile_id: str, name: str) -> None:
        if profile_id in self._profiles:
            self._profiles[profile_id] = (name, self._profiles[profile_id][1])
            self.refresh()

    def remove_profile(self, profile_id: str) -> None:
        """Its tabs close (the window shows another profile itself)."""
        self._profiles.pop(profile_id, None)
        with self._quietly():
            for i in reversed(range(self.bar.count())):
                ref = self.chat(i)
                if ref is not None and ref.profile_id == profile_id:
                    self.bar.removeTab(i)
        self.refresh()
        self._save()

    # -- what the tabs hold -------------------------------------------------------------------

    def chat(self, index: int) -> ChatRef | None:
        data = self.bar.tabData(index)
        return data if isinstance(data, ChatRef) else None

    def chats(self) -> list[ChatRef]:
        """The tabs' chats, left to right."""
        return [ref for i in range(self.bar.count()) if (ref := self.chat(i)) is not None]

    def first_of(self, profile_id: str) -> str | None:
        """The chat of the leftmost tab of `profile_id`, if it has one."""
        return next((ref.key for ref in self.chats() if ref.profile_id == profile_id), None)

    def index_of(self, ref: ChatRef) -> int | None:
        return next((i for i in range(self.bar.count()) if self.chat(i) == ref), None)

    def state(self, ref: ChatRef) -> ChatState | None:
        entry = self._profiles.get(ref.profile_id)
        return chat_state(entry[1].backend, entry[0], ref.key) if entry else None

    # -- the window opened a chat, or shows none ----------------------------------------------

    def show_chat(self, profile_id: str, key: str) -> None:
        """Chat `key` of `profile_id` is open in the pane: its tab becomes current, or the
        current tab now holds it (a first tab when there is none)."""
        ref = ChatRef(profile_id, key)
        with self._quietly():
            current = self.bar.currentIndex()
            found = self.index_of(ref)
            if found is not None:
                if current >= 0 and self.chat(current) is None and current != found:
                    self.bar.removeTab(current)  # Ctrl+T's new tab: the chat has a tab already
                    found = self.index_of(ref)
                self.bar.setCurrentIndex(found if found is not None else 0)
            elif current < 0:
                self.bar.setCurrentIndex(self._add(ref))
            else:
                old = self.chat(current)
                self.bar.setTabData(current, ref)
                self._replaced = (ref, old) if old is not None else None
        self._show_place(ref)
        self.refresh()
        self._save()

    def show_nothing(self, profile_id: str) -> None:
        """Profile `profile_id` was chosen and has no chat to show: a tab saying so ("New
        chat") becomes current, its own or a new one; no tab's chat is replaced (the current
        tab's name would tell a chat the pane no longer shows)."""
        if self.bar.currentIndex() < 0:
            return
        found = next(
            (i for i in range(self.bar.count()) if self.bar.tabData(i) == NoChat(profile_id)),
            None,
        )
        with self._quietly():
            if found is None:
                found = self._add(None)
                self.bar.setTabData(found, NoChat(profile_id))
            self.bar.setCurrentIndex(found)
        self._replaced = None
        self._viewing = None
        self.refresh()
        self._save()

    def chat_closed(self) -> None:
        """The open chat is gone (deleted): its tab closes and the next tab's chat opens."""
        current = self.bar.currentIndex()
        if current >= 0:
            self.close_tab(current)

    # -- the user's intents -------------------------------------------------------------------

    def new_tab(self) -> None:
        """Ctrl+T: a new chat in a new tab (the empty one there is, if any, is reused)."""
        if not self._profiles:
            return
        before = self.bar.currentIndex()
        with self._quietly():
            placeholder = self._add(None, "New chat")
            self.bar.setCurrentIndex(placeholder)
        self._desk.new_chat()
        with self._quietly():
            for i in range(self.bar.count()):
                if self.bar.tabData(i) is None:  # no chat came to it (the open one was already new)
                    self.bar.removeTab(i)
                    self.bar.setCurrentIndex(before)
                    break
        self._show_bar()
        self.refresh()
        self._save()

    def close_tab(self, index: int) -> None:
        """Ctrl+W, the tab's x or a middle click: the tab goes (its chat goes on in the
        background); when it was the current one, the next tab's chat opens."""
        if not 0 <= index < self.bar.count():
            return
        was_current = index == self.bar.currentIndex()
        ref = self.chat(index)
        if ref is not None:
            self._places.pop(ref, None)
        with self._quietly():
            self.bar.removeTab(index)
        if was_current:
            ref = self.chat(self.bar.currentIndex())
            if ref is None:
                self._show_empty(self.bar.currentIndex())
            else:
                self._desk.open_chat(ref.profile_id, ref.key)
        self.refresh()
        self._save()

    def close_current(self) -> None:
        self.close_tab(self.bar.currentIndex())

    def handlers(self) -> dict[str, Callable[[], None]]:
        """The tab shortcuts' handlers, by action name (see desktop.ui.shortcuts)."""
        return {
            "new_tab": self.new_tab,
            "close_tab": self.close_current,
            "next_tab": lambda: self.step(1),
            "previous_tab": lambda: self.step(-1),
        }

    def go_to(self, place: int) -> None:
        """Ctrl+1..8 (place 0..7: that tab, if there is one), Ctrl+9 (the last): its chat
        opens."""
        count = self.bar.count()
        if place >= 8 and count:
            self.bar.setCurrentIndex(count - 1)
        elif place < count:
            self.bar.setCurrentIndex(place)

    def step(self, by: int) -> None:
        """Ctrl+Tab (1) and Ctrl+Shift+Tab (-1), round the ends."""
        if self.bar.count() > 1:
            self.bar.setCurrentIndex((self.bar.currentIndex() + by) % self.bar.count())

    def open_in_tab(self, profile_id: str, key: str) -> None:
        """The running strip's click: the chat's own window, its tab, or a new tab for it."""
        if self.raise_window(profile_id, key):
            return
        ref = ChatRef(profile_id, key)
        found = self.index_of(ref)
        if found is not None:
            self.bar.setCurrentIndex(found)
            if (self._desk.profile_id, self._desk.session_key) != (profile_id, key):
                self._desk.open_chat(profile_id, key)  # it was current already: show it
            return
        with self._quietly():
            self.bar.setCurrentIndex(self._add(ref))
        self._desk.open_chat(profile_id, key)
        self.refresh()
        self._save()

    def open_listed_in_new_tab(self, profile_id: str, key: str | None) -> None:
        """Open in new tab, on the chat list: a right click already opened the chat in the
        current tab, which gets its previous chat back; the chat moves to a tab of its own."""
        if not key:
            return
        ref = ChatRef(profile_id, key)
        current = self.bar.currentIndex()
        replaced = self._replaced
        if replaced is not None and replaced[0] == ref and self.chat(current) == ref:
            with self._quietly():
                self.bar.setTabData(current, replaced[1])
                self.bar.setCurrentIndex(self._add(ref))
            self._replaced = None
            self.refresh()
            self._save()
            return
        self.open_in_tab(profile_id, key)

    def hand_over(self, profile_id: str, key: str) -> None:
        """The chat moves to a window of its own: the tab showing it gets back the chat it
        showed before a right click opened this one, or closes."""
        ref = ChatRef(profile_id, key)
        current = self.bar.currentIndex()
        replaced = self._replaced
        if (
            self.chat(current) == ref
            and replaced is not None
            and replaced[0] == ref
            and self._exists(replaced[1])
        ):
            self._replaced = None
            with self._quietly():
                self.bar.setTabData(current, replaced[1])
            self._desk.open_chat(replaced[1].profile_id, replaced[1].key)
            self.refresh()
            self._save()
            return
        found = self.index_of(ref)
        if found is not None:
            self.close_tab(found)

    # -- marks --------------------------------------------------------------------------------

    def set_colors(self, accent: str, warning: str, tint: str = "") -> None:
        self._colors = (accent, warning)
        self._tint = tint
        self.strip.set_colors(accent, warning)
        for i in range(self.bar.count()):
            button = self.bar.tabButton(i, QTabBar.ButtonPosition.RightSide)
            if isinstance(button, QToolButton):
                button.setIcon(icon("close", tint))
        self.refresh()

    def refresh(self) -> None:
        """Every tab's title and marks, and the strip, as the chats are now."""
        self._refresh_timer.stop()
        several = len({ref.profile_id for ref in self.chats()}) > 1
        for i in range(self.bar.count()):
            ref = self.chat(i)
            state = self.state(ref) if ref is not None else None
            if state is None:
                self._label_empty(i, several)
                continue
            title = state.title if len(state.title) <= TITLE_MAX else state.title[:29] + "…"
            text = f"{title} ({state.unread})" if state.unread else title
            where = f"{state.title} ({state.profile})" if several else state.title
            what = state.what()
            self._label(
                i,
                text.replace("&", "&&"),
                state_icon(state, *self._colors),
                f"{where}: {what}" if what else where,
                f"{where}, {what}" if what else where,
            )
        self._show_bar()
        busy: list[ChatState] = []
        for name, bridge in self._profiles.values():
            busy.extend(busy_chats(bridge.backend, name))
        self.strip.show_chats(busy)

    def _label_empty(self, index: int, several: bool) -> None:
        data = self.bar.tabData(index)
        if not isinstance(data, NoChat):
            return
        name = self._profiles.get(data.profile_id, (data.profile_id,))[0]
        several = several or any(ref.profile_id != data.profile_id for ref in self.chats())
        where = f"New chat ({name}): no chat yet" if several else "New chat: no chat yet"
        self._label(index, f"New chat ({name})" if several else "New chat", NO_ICON, where, where)

    def _refresh_soon(self) -> None:
        """`refresh()` once the frames read with this one are handled (started once: a timer
        started again at every frame would wait for a pause that may never come)."""
        if not self._refresh_timer.isActive():
            self._refresh_timer.start()

    def _label(self, index: int, text: str, mark: QIcon, tip: str, name: str) -> None:
        """Tab `index`'s text, dot, tooltip and screen-reader name, each set only when it
        changed: a tab bar lays itself out again at every setTabText (about 1 ms with 20 tabs),
        and tabs are refreshed at every turn's start and end in any chat (20 chats streaming
        spent 3.3 s of 10 there, the window frozen for 1.5 s at a time)."""
        bar = self.bar
        if bar.tabText(index) != text:
            bar.setTabText(index, text)
        if bar.tabIcon(index).cacheKey() != mark.cacheKey():
            bar.setTabIcon(index, mark)
        if bar.tabToolTip(index) != tip:
            bar.setTabToolTip(index, tip)
        if bar.accessibleTabName(index) != name:
            bar.setAccessibleTabName(index, name)

    # -- where each tab's chat was being read --------------------------------------------------

    def _note_place(self) -> None:
        """The view scrolled: where the chat it shows is being read, kept for its tab (only
        while the view shows that chat: not while another one is being put in)."""
        ref = self._viewing
        if ref is None or (self._desk.profile_id, self._desk.session_key) != (
            ref.profile_id,
            ref.key,
        ):
            return
        place = self._desk.chat_view.reading_place()
        if place is not None and self._places.get(ref) != place:
            self._places[ref] = place
            self.place_timer.start()

    def _show_place(self, ref: ChatRef) -> None:
        """Chat `ref` was just put in the view (at its bottom): where it was being read."""
        if ref == self._viewing:
            return  # shown again in place (a history replaced): the view handles that
        self._viewing = ref
        tabbed = set(self.chats())
        self._places = {r: p for r, p in self._places.items() if r in tabbed}
        place = self._places.get(ref)
        self._awaited = (ref, place) if place is not None and not place.at_bottom else None
        if place is not None and not self._desk.chat_view.go_to_place(place):
            self._places.pop(ref, None)  # its message is not loaded now: from the bottom

    def history_shown(self, profile_id: str, key: str) -> None:
        """The chat on screen got its history anew (the gateway's replacing the cached one, at
        the view's bottom): read from where it was again, once, if that message is in it."""
        awaited, self._awaited = self._awaited, None
        if awaited is not None and awaited[0] == ChatRef(profile_id, key) == self._viewing:
            self._desk.chat_view.go_to_place(awaited[1])

    def save_places(self) -> None:
        """Where each tab's chat is being read, kept for the next start: written to disk now
        (the reading paused, or the window closes), so a crash after it loses none of it."""
        self.place_timer.stop()
        tabbed = set(self.chats())
        saved = [
            [ref.profile_id, ref.key, place.message_id, place.offset, place.at_bottom]
            for ref, place in self._places.items()
            if ref in tabbed
        ]
        self._settings.setValue(_PLACES, json.dumps(saved))
        self._settings.sync()

    def _restore_places(self) -> None:
        try:
            saved = json.loads(str(self._settings.value(_PLACES, "") or "[]"))
        except ValueError:
            return
        for item in saved if isinstance(saved, list) else []:
            if isinstance(item, list) and len(item) == 5 and isinstance(item[3], int):
                ref = ChatRef(str(item[0]), str(item[1]))
                self._places[ref] = ReadingPlace(str(item[2]), item[3], bool(item[4]))

    def _show_bar(self) -> None:
        self.bar.setVisible(self.bar.count() > 1)

    # -- remembered across runs ---------------------------------------------------------------

    def restore(self) -> bool:
        """The tabs of the last run, less chats that are gone; the current one opens. Whether
        there were any."""
        try:
            saved = json.loads(str(self._settings.value(_TABS, "") or "[]"))
            current = int(str(self._settings.value(_CURRENT, 0) or 0))
        except (TypeError, ValueError):
            return False
        refs = [
            ChatRef(str(item[0]), str(item[1]))
            for item in (saved if isinstance(saved, list) else [])
            if isinstance(item, list) and len(item) == 2
        ]
        kept = [ref for ref in dict.fromkeys(refs) if self._exists(ref)]
        if not kept:
            return False
        with self._quietly():
            for ref in kept:
                self._add(ref)
        self._restore_places()
        chosen = refs[current] if 0 <= current < len(refs) else kept[0]
        target = chosen if chosen in kept else kept[0]
        with self._quietly():
            self.bar.setCurrentIndex(kept.index(target))
        self._restoring = True
        try:
            self._desk.open_chat(target.profile_id, target.key)
        finally:
            self._restoring = False
        self.refresh()
        self._save()
        return True

    def _exists(self, ref: ChatRef) -> bool:
        entry = self._profiles.get(ref.profile_id)
        return entry is not None and entry[1].backend.summary(ref.key) is not None

    def _save(self) -> None:
        if self._restoring:
            return
        chats = self.chats()
        refs = [[ref.profile_id, ref.key] for ref in chats]
        self._settings.setValue(_TABS, json.dumps(refs))
        # The current tab's place among the saved ones (a tab with no chat is not saved).
        current = self.chat(self.bar.currentIndex())
        self._settings.setValue(_CURRENT, chats.index(current) if current in chats else 0)

    # -- slots --------------------------------------------------------------------------------

    def _add(self, ref: ChatRef | None, text: str = "") -> int:
        index = self.bar.addTab(text)
        self.bar.setTabData(index, ref)
        close = QToolButton(self.bar)
        close.setObjectName("closeTab")
        close.setAutoRaise(True)
        close.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        close.setIcon(icon("close", self._tint))
        close.setIconSize(QSize(12, 12))
        close.setToolTip("Close the tab (Ctrl+W); its chat goes on")
        close.setAccessibleName("Close tab")
        close.clicked.connect(lambda: self._close_button_clicked(close))
        self.bar.setTabButton(index, QTabBar.ButtonPosition.RightSide, close)
        return index

    def _close_button_clicked(self, button: QToolButton) -> None:
        for i in range(self.bar.count()):
            if self.bar.tabButton(i, QTabBar.ButtonPosition.RightSide) is button:
                self.close_tab(i)
                return

    @contextmanager
    def _quietly(self) -> Iterator[None]:
        was, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = was

    def _on_bar_current_changed(self, index: int) -> None:
        if self._quiet or index < 0:
            return
        ref = self.chat(index)
        if ref is None:
            self._show_empty(index)
        elif (self._desk.profile_id, self._desk.session_key) != (ref.profile_id, ref.key):
            self._desk.open_chat(ref.profile_id, ref.key)
        self._save()

    def _show_empty(self, index: int) -> None:
        """A tab with no chat became current: its profile, no chat."""
        data = self.bar.tabData(index)
        if isinstance(data, NoChat):
            self._desk.switch_profile(data.profile_id, open_last=False)
        self._desk.show_no_chat()
        self._viewing = None

    def _rekey(self, profile_id: str, old: str, new: str) -> None:
        """A new chat got its durable key: its tab follows."""
        before, after = ChatRef(profile_id, old), ChatRef(profile_id, new)
        if self._viewing == before:
            self._viewing = after
        if before in self._places:
            self._places[after] = self._places.pop(before)
        index = self.index_of(before)
        if index is not None:
            self.bar.setTabData(index, ChatRef(profile_id, new))
            self._save()
        self.refresh()

    def _on_sessions_changed(self, profile_id: str) -> None:
        """A chat deleted (not only hidden) loses its tab."""
        entry = self._profiles.get(profile_id)
        if entry is None:
            return
        backend = entry[1].backend
        current = self.bar.currentIndex()
        closed = False
        for i in reversed(range(self.bar.count())):
            ref = self.chat(i)
            if (
                ref is not None
                and ref.profile_id == profile_id
                and i != current  # the open chat's deletion closes it (chat_closed)
                and not is_temp_key(ref.key)
                and backend.summary(ref.key) is None
            ):
                with self._quietly():
                    self.bar.removeTab(i)
                closed = True
        if closed:
            self.refresh()
            self._save()
        else:  # a title, a mark or a turn's news: no tab closed, nothing to save
            self._refresh_soon()
