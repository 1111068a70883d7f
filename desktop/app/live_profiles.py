"""Profiles edited in Settings applied while the app runs: renamed, reconnected, added."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING

from desktop.core.profile.changes import profile_changes

if TYPE_CHECKING:
    from desktop.app.assembly import Core
    from desktop.core.link.profiles import Profile
    from desktop.ui.window.bridge import ProfileEntry
    from desktop.ui.window.main_window import MainWindow


class LiveProfiles:
    """Applies profiles edited in Settings at once: changed ones reconnect, others stay up.

    A changed profile's old connection is closed before its new one opens, so a profile never
    has two live sockets, not even for a moment.
    """

    def __init__(
        self,
        core: Core,
        window: MainWindow,
        on_added: Callable[[ProfileEntry], None],
        on_closed: Callable[[str], None] = lambda profile_id: None,
    ) -> None:
        self._core = core
        self._window = window
        self._on_added = on_added
        self._on_closed = on_closed
        self._tasks: set[asyncio.Task[None]] = set()

    def apply_soon(self, before: Mapping[str, Profile], typed_tokens: Collection[str]) -> None:
        task = asyncio.get_running_loop().create_task(self.apply(before, typed_tokens))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def apply(self, before: Mapping[str, Profile], typed_tokens: Collection[str]) -> None:
        """`before`: profiles by id as they were; `typed_tokens`: ids given a new token."""
        from desktop.ui.window.bridge import ProfileBridge, ProfileEntry

        core, window = self._core, self._window
        after = {p.id: p for p in core.preferences.profiles()}
        changes = profile_changes(before, after, typed_tokens)
        for pid, name in changes.renamed.items():
            window.rename_profile(pid, name)
        for pid in changes.closed:
            window.remove_profile(pid)
            await core.drop(pid)
            self._on_closed(pid)
        for pid, profile in after.items():
            if pid in core.controllers:
                continue
            controller = core.controller_for(profile)
            entry = ProfileEntry(profile.name, ProfileBridge(controller))
            window.add_profile(entry)
            self._on_added(entry)
            controller.start()

    async def aclose(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)
