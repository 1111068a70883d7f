"""Long sessions against the real embedded gateway child: a window of history, older pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.core.chats.router import HISTORY_WINDOW
from desktop.gateway.sessions.store import Store as GatewayStore
from tests.support.embedded_stack import online_embedded

pytestmark = pytest.mark.slow

N = 1000


async def test_a_long_session_opens_with_its_end_and_pages_back_to_its_start(
    tmp_path: Path,
) -> None:
    data = tmp_path / "gw"
    seeded = GatewayStore(data / "gateway.sqlite3")
    seeded.create_session("long", "Long", "desktop", 1.0)
    seeded.import_messages(
        "long", [("user" if i % 2 == 0 else "assistant", f"m{i}", 2.0 + i) for i in range(N)]
    )
    seeded.close()
    async with online_embedded(tmp_path) as (_sup, router):
        conv = await router.open("long")
        # Only the end comes with the snapshot: what the first screen needs, not 1,000 rows.
        assert [m.text for m in conv.messages] == [f"m{i}" for i in range(N - HISTORY_WINDOW, N)]
        assert conv.history_start == N - HISTORY_WINDOW
        pages = []
        while (added := await router.load_older("long")) > 0:
            pages.append(added)
        assert sum(pages) == N - HISTORY_WINDOW and conv.history_start == 0
        assert [m.text for m in conv.messages] == [f"m{i}" for i in range(N)]
        assert len({m.id for m in conv.messages}) == N  # every bubble keeps its own id
        assert await router.load_older("long") == 0  # nothing older: no call, nothing added


# One turn of a tool-using session: a prompt, then a reply of 6 rows (assistant and tool rows).
TURN = ("user", "assistant", "tool", "assistant", "tool", "tool", "assistant")
TURNS = 400  # 2,800 rows: pages of 200 rows start mid-reply (200 is not a multiple of 7)
HELD, TAIL = 300, 60  # the bounded window's sizes, small so a few pages cross them


async def test_paging_far_up_and_down_again_shows_every_reply_once_and_whole(
    tmp_path: Path,
) -> None:
    data = tmp_path / "gw"
    seeded = GatewayStore(data / "gateway.sqlite3")
    seeded.create_session("tools", "Tools", "desktop", 1.0)
    rows = [
        (role, f"{role[0]}{t}.{i}", 2.0 + t * len(TURN) + i)
        for t in range(TURNS)
        for i, role in enumerate(TURN)
    ]
    seeded.import_messages("tools", rows)
    seeded.close()
    # Each turn is two bubbles: the prompt, and one reply (its last text, its 2 tool calls).
    whole = [b for t in range(TURNS) for b in ((f"u{t}.0", 0), (f"a{t}.6", 3))]
    async with online_embedded(tmp_path) as (_sup, router):
        conv = await router.open("tools")
        # What a view shows, kept as the conversation feed tells it (prepended, appended and
        # let-go rows), while the user scrolls to the very top and back down to the live end.
        view = list(conv.messages)
        while (added := await router.load_older("tools")) > 0:
            view[0:0] = conv.messages[:added]
            if dropped := conv.drop_newest(HELD, TAIL):
                del view[-dropped:]
        assert conv.history_start == 0 and conv.detached
        assert [(m.text, len(m.tools)) for m in view] == whole[: len(view)]
        while conv.detached:
            added = await router.load_newer("tools")
            assert added > 0
            view += conv.shown[-added:]
            if dropped := conv.drop_oldest(HELD):
                del view[:dropped]
        assert len({m.id for m in view}) == len(view)  # every bubble keeps its own id
        # Every message once, in order, up to the live end; no reply split at a page edge.
        assert [(m.text, len(m.tools)) for m in view] == whole[-len(view) :]
        assert [(m.text, len(m.tools)) for m in conv.messages] == whole[-len(view) :]
        assert len(view) >= HELD
