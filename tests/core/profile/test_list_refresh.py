"""The session list fetch gives a big list's heap back to the system once it is merged."""

from __future__ import annotations

import asyncio
from typing import Any

from desktop.common.memory import BIG_LIST, release_freed_memory
from desktop.core.profile.list_refresh import ListRefresh


class Link:
    epoch = 1

    def __init__(self, chats: int) -> None:
        self.chats = chats

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        limit = (params or {})["limit"]
        return {"sessions": [{"id": f"s{i}"} for i in range(min(limit, self.chats))]}


class Listing:
    def __init__(self) -> None:
        self.merged = 0

    def merge_listed(self, rows: list[Any], *, emit: bool = True) -> int:
        self.merged += len(rows)
        return len(rows)

    def emit(self) -> None:
        return None


def refresh(chats: int) -> tuple[int, int]:
    """(rows merged from the last page, times the freed heap was given back)."""
    released: list[int] = []
    listing = Listing()
    lists = ListRefresh(
        link=Link(chats),
        listing=listing,
        timers=None,  # type: ignore[arg-type]  # no sessions.changed here
        spawn=lambda c: None,
        release=lambda: released.append(1),
    )
    asyncio.run(lists.refresh(1))
    return listing.merged, len(released)


def test_a_list_of_thousands_of_chats_gives_its_heap_back_once_merged() -> None:
    merged, released = refresh(BIG_LIST + 500)
    assert merged >= BIG_LIST + 500  # every chat merged (the pages grow up to all of them)
    assert released == 1


def test_a_short_list_costs_no_trim() -> None:
    assert refresh(30)[1] == 0


def test_the_system_call_exists_on_this_linux() -> None:
    assert release_freed_memory() is True
