"""Changed files and checkpoints against real Hermes 0.19.0, 0.20.1.2, 0.22.2 and 0.21.5.

One gateway per line, started as the app starts a Local Hermes (HermesServeLauncher, so with
HERMES_TUI_CHECKPOINTS=1), its session directory a temp folder holding notes.txt. A scripted
turn reads the file and writes it over: the reply carries the file and its diff (from
`tool.complete.inline_diff`), the session lists a checkpoint of that turn, its diff names the
file, and Restore this file puts the old text back on disk. After a TCP reset and a reconnect
the reply still carries the changed file and the checkpoint is listed again; a full restore
then puts every file back, the chat says the agent forgot that exchange, and the model's next
call no longer carries it. After an app restart
(same store) the reply still shows the file and its diff. A full restore asked while a reply
runs is refused (4009 on every line) and told as such; the turn goes on. A gateway started
without the variable (as a remote one may be) lists `enabled: false`: the state says checkpoints
are off there and why.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from desktop.core.chats.file_changes import changes_of, git_sections
from desktop.core.models import ConnectionState
from desktop.core.profile.agent.rollback import BUSY, CHECKPOINTS_OFF, checkpoint_for
from tests.core.test_hermes_chats import NO_AUTO_TITLE, App, app
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import proxy_to
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_0215,
    HERMES_022,
    HermesDist,
    hermes_gateway,
    line_params,
    require_hermes,
)

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]


def _text(path: Path) -> str:
    """The file's text; "" while git replaces it (a restore unlinks, then writes it)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _checkpoint(a: App, key: str) -> str:
    conv = a.router.conversation(key)
    assert conv is not None
    found = checkpoint_for(a.ctl.rollback_state(key), conv.messages, conv.messages[-1].id)
    return found.hash if found is not None else ""


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022, HERMES_0215))
async def test_a_turn_that_wrote_a_file_shows_it_and_restore_brings_it_back(
    tmp_path: Path, dist: HermesDist
) -> None:
    require_hermes(dist)
    work = tmp_path / "work"
    work.mkdir()
    notes = work / "notes.txt"
    notes.write_text("old line\n", encoding="utf-8")
    config = NO_AUTO_TITLE + f"terminal:\n  cwd: {work}\n"
    with FakeOpenAIServer(reply="ok") as fake:
        fake.script = [
            # 0.21.5/0.22 refuse to write over a file the agent has not read.
            {"tool_calls": [("read_file", {"path": str(notes)})]},
            {"tool_calls": [("write_file", {"path": str(notes), "content": "new line\n"})]},
            {"content": "Wrote it."},
        ]
        async with hermes_gateway(
            tmp_path / "home", fake.base_url, dist, config_extra=config, checkpoints=True
        ) as gw:
            with proxy_to(gw.url) as (proxy, url):
                async with app(url, gw.token, tmp_path) as a:
                    key = await a.chat("change the notes")
                    conv = a.router.conversation(key)
                    assert conv is not None
                    assert notes.read_text(encoding="utf-8") == "new line\n"
                    reply = conv.messages[-1]
                    assert reply.text == "Wrote it."
                    [change] = changes_of(reply)
                    assert change.path.endswith("notes.txt")
                    assert "-old line" in change.diff and "+new line" in change.diff

                    # The checkpoint of that turn, and its diff against the files now.
                    a.ctl.load_rollback(key)
                    await a.until(lambda: bool(_checkpoint(a, key)), "the turn's checkpoint")
                    state = a.ctl.rollback_state(key)
                    assert state.available, state.reason
                    hash_ = _checkpoint(a, key)
                    a.ctl.rollback_diff(key, hash_)
                    await a.until(lambda: hash_ in a.ctl.rollback_state(key).diffs, "its diff")
                    sections = git_sections(a.ctl.rollback_state(key).diffs[hash_])
                    assert "+new line" in sections["notes.txt"]

                    # Restore this file: on disk as before the turn; the chat keeps the turn.
                    a.ctl.restore_checkpoint(key, hash_, "notes.txt")
                    await a.until(lambda: _text(notes) == "old line\n", "restored")
                    await a.until(lambda: any("Restored" in n for n in a.seen.notices), "told")
                    assert conv.messages[-1].text == "Wrote it."

                    # A reconnect: the reply still shows the file, the checkpoint comes back.
                    epoch = a.sup.epoch
                    proxy.reset_all()
                    await a.until(lambda: a.sup.status.state is not ConnectionState.ONLINE, "cut")
                    a.sup.reconnect_now()
                    await a.until(
                        lambda: a.sup.epoch > epoch and a.router.synced_epoch == a.sup.epoch,
                        "reconnected",
                    )
                    conv = a.router.conversation(key)
                    assert conv is not None
                    assert [c.path for c in changes_of(conv.messages[-1])] == [change.path]
                    a.ctl.load_rollback(key)
                    await a.until(
                        lambda: _checkpoint(a, key) == hash_, "the checkpoint after reconnect"
                    )

                # The app again on the same store: the card's file and diff are still there.
                async with app(url, gw.token, tmp_path) as b:
                    b.ctl.open_session(key)
                    await b.until(
                        lambda: (
                            (c := b.router.conversation(key)) is not None
                            and any(changes_of(m) for m in c.messages)
                        ),
                        "the reply after a restart",
                    )
                    conv = b.router.conversation(key)
                    assert conv is not None
                    reply = next(m for m in conv.messages if changes_of(m))
                    assert "+new line" in changes_of(reply)[0].diff

                    # Restore to here (every file, and the exchange leaves the history).
                    notes.write_text("edited by hand\n", encoding="utf-8")
                    b.ctl.load_rollback(key)
                    await b.until(lambda: bool(_checkpoint(b, key)), "checkpoints listed")
                    b.ctl.restore_checkpoint(key, _checkpoint(b, key))
                    await b.until(lambda: _text(notes) == "old line\n", "all restored")
                    await b.until(
                        lambda: any("no longer remembers" in m.text for m in conv.messages),
                        "the chat says the agent forgot the exchange",
                    )
                    # The agent's next call no longer carries the restored turn.
                    fake.script = [{"content": "Fresh start."}]
                    asked = len(fake.requests)
                    b.ctl.send(key, "what now", ())
                    await b.until(
                        lambda: conv.messages[-1].text == "Fresh start." and not conv.running,
                        "the next reply",
                        120,
                    )
                    sent = " ".join(json.dumps(r.get("messages")) for r in fake.requests[asked:])
                    assert "what now" in sent
                    assert "change the notes" not in sent


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022, HERMES_0215))
async def test_a_full_restore_while_a_reply_runs_is_refused_and_told(
    tmp_path: Path, dist: HermesDist
) -> None:
    require_hermes(dist)
    gate = threading.Event()
    with FakeOpenAIServer(reply="ok") as fake:
        fake.script = [{"content": "first"}, {"content": "slow answer", "gate": gate}]
        async with (
            hermes_gateway(
                tmp_path / "home", fake.base_url, dist, config_extra=NO_AUTO_TITLE, checkpoints=True
            ) as gw,
            app(gw.url, gw.token, tmp_path) as a,
        ):
            key = await a.chat("hello")
            conv = a.router.conversation(key)
            assert conv is not None
            a.ctl.send(key, "take your time", ())
            await a.until(lambda: conv.running, "the second turn runs")
            try:
                a.ctl.restore_checkpoint(key, "1")  # Hermes' own "/rollback 1" form
                await a.until(lambda: BUSY in a.seen.notices, "refused: a reply runs", 60)
            finally:
                gate.set()
            await a.until(lambda: not conv.running, "the turn ends")
            assert conv.messages[-1].text == "slow answer"


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_022))
async def test_a_gateway_started_without_checkpoints_is_said_to_have_them_off(
    tmp_path: Path, dist: HermesDist
) -> None:
    require_hermes(dist)
    with FakeOpenAIServer(reply="ok") as fake:
        async with (
            # As a remote gateway someone started without HERMES_TUI_CHECKPOINTS=1.
            hermes_gateway(
                tmp_path / "home", fake.base_url, dist, config_extra=NO_AUTO_TITLE
            ) as gw,
            app(gw.url, gw.token, tmp_path) as a,
        ):
            key = await a.chat("hello")
            a.ctl.load_rollback(key)
            await a.until(lambda: a.ctl.rollback_state(key).loaded, "asked")
            state = a.ctl.rollback_state(key)
            assert not state.available and state.reason == CHECKPOINTS_OFF
