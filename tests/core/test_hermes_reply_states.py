"""Real Hermes lines: a failed reply is one bubble with its cause in words, and Retry sends
the prompt again as the same turn (one user message in the chat, the store and the gateway)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from desktop.common.methods import SESSION_HISTORY
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.reply_state import state_text
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.models import ConnectionState, Role
from tests.core.test_hermes_chats import NO_AUTO_TITLE, App, app
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import FaultProxy, port_of, proxy_to
from tests.support.hermes_env import (
    HERMES_019,
    HERMES_0201,
    HERMES_022,
    HermesDist,
    hermes_gateway,
    line_params,
    require_hermes,
)

pytestmark = [pytest.mark.hermes, pytest.mark.slow, pytest.mark.timeout(300)]

CLASS_NAME = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)*(?:Error|Exception)\b")


async def _history_users(url: str, token: str, runtime: str) -> list[str]:
    probe = JsonRpcGatewayClient(url, token=token)
    await probe.connect()
    try:
        res = await probe.call(SESSION_HISTORY, {"session_id": runtime})
    finally:
        await probe.close()
    rows = res.get("messages") or []
    return [str(r.get("content") or r.get("text") or "") for r in rows if r.get("role") == "user"]


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022))
async def test_a_failed_reply_is_one_bubble_and_retry_is_the_same_turn(
    tmp_path: Path, dist: HermesDist
) -> None:
    require_hermes(dist)
    with FakeOpenAIServer(reply="Now it works.") as fake:
        async with (
            hermes_gateway(
                tmp_path / "home", fake.base_url, dist, config_extra=NO_AUTO_TITLE
            ) as gw,
            app(gw.url, gw.token, tmp_path) as a,
        ):
            key = await a.chat("warm up")
            conv = a.router.conversation(key)
            assert conv is not None
            fake.status = 401
            a.ctl.send(key, "hello?", ())
            await a.until(
                lambda: not conv.running and conv.messages[-1].status == "error", "failed", 120
            )
            turn = conv.messages[2:]
            assert [m.role for m in turn] == [Role.USER, Role.ASSISTANT], turn
            line = state_text(turn[1])
            assert line.startswith("Failed: ") and not CLASS_NAME.search(line), line
            fake.clear_faults()
            assert a.ctl.retry_reply(key, turn[1].id)
            await a.until(
                lambda: (
                    not conv.running
                    and conv.messages[-1].status == "complete"
                    and conv.messages[-1].text == "Now it works."
                ),
                "the retried reply",
                120,
            )
            users = [m.text for m in conv.messages if m.role is Role.USER]
            assert users == ["warm up", "hello?"], "one prompt in the chat"
            runtime = a.router.runtime_id(key)
            assert runtime
            assert await _history_users(gw.url, gw.token, runtime) == ["warm up", "hello?"]
            # What the agent sent the model: the prompt once (0.19 and 0.20.1 keep a failed
            # prompt in the agent's memory though not in session.history: undo drops it).
            sent = [_content(m) for m in fake.requests[-1]["messages"] if m["role"] == "user"]
            assert sent[-1] == "hello?" and sent.count("hello?") == 1, sent


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


@dataclass
class Essay:
    """A chat on a real line, through a fault proxy, its second reply (a 400-word essay at
    about 30 words a second) streaming."""

    a: App
    conv: Conversation
    key: str
    proxy: FaultProxy
    fake: FakeOpenAIServer
    url: str  # the gateway itself, not through the proxy
    token: str


@contextlib.asynccontextmanager
async def streaming_essay(tmp_path: Path, dist: HermesDist) -> AsyncIterator[Essay]:
    require_hermes(dist)
    long = " ".join(f"word{i}" for i in range(400))
    with FakeOpenAIServer(reply="ok", chunk_size=6, chunk_delay=0.03) as fake:
        fake.script = [{"content": "ready"}, {"content": long}]
        async with hermes_gateway(
            tmp_path / "home", fake.base_url, dist, config_extra=NO_AUTO_TITLE
        ) as gw:
            with proxy_to(gw.url) as (proxy, url):
                async with app(url, gw.token, tmp_path) as a:
                    key = await a.chat("warm up")
                    conv = a.router.conversation(key)
                    assert conv is not None
                    a.ctl.send(key, "Write a long essay", ())
                    await a.until(lambda: "word20" in conv.messages[-1].text, "streaming", 120)
                    yield Essay(a, conv, key, proxy, fake, gw.url, gw.token)


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022))
async def test_stop_reads_stopped_by_you_with_the_words_shown(
    tmp_path: Path, dist: HermesDist
) -> None:
    async with streaming_essay(tmp_path, dist) as e:
        e.a.ctl.interrupt(e.key)
        await e.a.until(lambda: not e.conv.running, "the turn ended", 120)
        reply = e.conv.messages[-1]
        assert (reply.role, reply.status) == (Role.ASSISTANT, "stopped"), reply
        assert state_text(reply) == "Stopped by you"
        assert "word20" in reply.text and "word399" not in reply.text


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022))
async def test_stop_pressed_while_the_link_is_down_stops_the_reply_once_it_is_back(
    tmp_path: Path, dist: HermesDist
) -> None:
    """Stop pressed while the link was down said "session.interrupt failed: Hermes: not
    connected" and stopped nothing: the reply ran on to its end (seen on 0.19 under Xvfb)."""
    from desktop.core.profile.stopping import NOT_CONNECTED

    async with streaming_essay(tmp_path, dist) as e:
        a, conv = e.a, e.conv
        epoch = a.sup.epoch
        e.proxy.set_mode("reset")  # the link goes and stays down
        await a.until(lambda: a.sup.status.state is not ConnectionState.ONLINE, "link down")
        a.ctl.interrupt(e.key)
        assert a.seen.notices[-1:] == [NOT_CONNECTED]
        e.proxy.set_mode("pass")
        a.sup.reconnect_now()
        await a.until(lambda: a.sup.epoch > epoch, "back")
        await a.until(lambda: not conv.running, "the turn ended", 120)
        reply = conv.messages[-1]
        assert (reply.role, reply.status) == (Role.ASSISTANT, "stopped"), reply
        assert state_text(reply) == "Stopped by you"
        assert "word399" not in reply.text, "stopped before its end"
        assert a.seen.notices[-1] == "", "the notice goes once it is stopped"
        assert not any("session." in n for n in a.seen.notices), a.seen.notices


def _turns(conv: Any) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """The chat as the user sees it: each message's role and text, and a reply's versions
    (the prompt each answered, and its text)."""
    return [
        (m.role.value, m.text, [(v.prompt, v.text) for v in m.versions])
        for m in conv.messages
        if m.role in (Role.USER, Role.ASSISTANT)
    ]


async def _history(url: str, token: str, runtime: str) -> list[tuple[str, str]]:
    probe = JsonRpcGatewayClient(url, token=token)
    await probe.connect()
    try:
        res = await probe.call(SESSION_HISTORY, {"session_id": runtime})
    finally:
        await probe.close()
    rows = res.get("messages") or []
    return [
        (str(r.get("role")), str(r.get("content") or r.get("text") or "").strip())
        for r in rows
        if r.get("role") in ("user", "assistant") and not r.get("display_kind")
    ]


# Regenerate and edit-and-resend replace the turn in place on every line: prompt.submit cuts
# the gateway's history before the turn (truncate_before_row_id on 0.20.1 and 0.22.2, whose
# rows carry it; truncate_before_user_ordinal on 0.19), so its stored rows, what a reconnect
# and a restart show, hold each prompt once. 0.19 and 0.20.1's session.undo alone reaches
# only the agent's memory (the earlier reply came back after a reconnect).
@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022))
async def test_regenerate_and_edit_replace_the_turn_in_place_across_reconnect_and_restart(
    tmp_path: Path, dist: HermesDist
) -> None:
    require_hermes(dist)
    with FakeOpenAIServer(reply="First answer.") as fake:
        async with hermes_gateway(
            tmp_path / "home", fake.base_url, dist, config_extra=NO_AUTO_TITLE
        ) as gw:
            with proxy_to(gw.url) as (proxy, url):
                async with app(url, gw.token, tmp_path) as a:
                    key = await a.chat("Tell me a fact")
                    conv = a.router.conversation(key)
                    assert conv is not None

                    async def answered(text: str) -> None:
                        await a.until(
                            lambda: (
                                not conv.running
                                and bool(conv.messages)
                                and conv.messages[-1].status == "complete"
                                and conv.messages[-1].text == text
                            ),
                            f"the reply {text!r}",
                            120,
                        )

                    # Regenerate the first turn twice (the cut leaves nothing before it).
                    for text in ("Second answer.", "Third answer."):
                        fake.set_reply(text)
                        assert a.ctl.regenerate(key, conv.messages[-1].id)
                        await answered(text)
                    fake.set_reply("Fourth answer.")
                    a.ctl.send(key, "And another?", ())
                    await answered("Fourth answer.")
                    # Edit the second prompt and send it again in its place.
                    fake.set_reply("Fifth answer.")
                    prompt = conv.messages[-2]
                    assert prompt.text == "And another?"
                    assert a.ctl.resend_edited(key, prompt.id, "And one more?", ())
                    await answered("Fifth answer.")

                    want = [
                        ("user", "Tell me a fact", []),
                        (
                            "assistant",
                            "Third answer.",
                            [
                                ("Tell me a fact", "First answer."),
                                ("Tell me a fact", "Second answer."),
                            ],
                        ),
                        ("user", "And one more?", []),
                        ("assistant", "Fifth answer.", [("And another?", "Fourth answer.")]),
                    ]
                    assert _turns(conv) == want
                    runtime = a.router.runtime_id(key)
                    assert runtime
                    said = [
                        ("user", "Tell me a fact"),
                        ("assistant", "Third answer."),
                        ("user", "And one more?"),
                        ("assistant", "Fifth answer."),
                    ]
                    # The gateway's stored rows: each prompt once, the newest replies.
                    assert await _history(gw.url, gw.token, runtime) == said
                    # What the model got for the last turn: the edited prompt, not the first.
                    sent = [
                        _content(m) for m in fake.requests[-1]["messages"] if m["role"] == "user"
                    ]
                    assert len(sent) == 2 and sent[-1] == "And one more?", sent
                    assert not any("And another?" in t for t in sent), sent

                    epoch = a.sup.epoch
                    proxy.reset_all()
                    await a.until(lambda: a.sup.status.state is not ConnectionState.ONLINE, "cut")
                    a.sup.reconnect_now()
                    await a.until(
                        lambda: a.sup.epoch > epoch and a.router.synced_epoch == a.sup.epoch,
                        "reconnected",
                    )
                    await a.until(lambda: _turns(conv) == want, "the chat after the reconnect", 30)

                # The app again on the same store: the chat reads the same.
                async with app(url, gw.token, tmp_path) as b:
                    b.ctl.open_session(key)
                    await b.until(
                        lambda: (c := b.router.conversation(key)) is not None and _turns(c) == want,
                        "the chat after the restart",
                        60,
                    )


def _seen(conv: Any) -> list[tuple[str, str, str, int]]:
    """Each message's role, state, state line and how many versions it has."""
    return [
        (m.role.value, m.status, state_text(m) if m.role is Role.ASSISTANT else "", len(m.versions))
        for m in conv.messages
        if m.role in (Role.USER, Role.ASSISTANT)
    ]


# Issue #24's "Done when" on each real line, through the app's controller: regenerate twice, a
# prompt sent while the provider refuses the key, a reply cut by kill -9 of the Hermes process
# (restarted on the same home; Hermes keeps no partial answer), then a restart of the app. The
# attachment part is the embedded test's (tests/ui/test_e2e_done_when.py) and 0.20.1's
# (tests/ui/test_e2e_hermes_attachments.py): 0.19 and 0.22.2 take no file on the wire.
@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022))
async def test_done_when_regenerated_failed_and_cut_turns_read_right_after_a_restart(
    tmp_path: Path, dist: HermesDist
) -> None:
    require_hermes(dist)
    long = " ".join(f"word{i}" for i in range(400))
    with FakeOpenAIServer(reply="First answer.", chunk_size=6) as fake:
        async with hermes_gateway(
            tmp_path / "home", fake.base_url, dist, config_extra=NO_AUTO_TITLE
        ) as gw:
            with proxy_to(gw.url) as (proxy, url):
                async with app(url, gw.token, tmp_path) as a:
                    key = await a.chat("Tell me a fact")
                    conv = a.router.conversation(key)
                    assert conv is not None
                    for text in ("Second answer.", "Third answer."):
                        fake.set_reply(text)
                        assert a.ctl.regenerate(key, conv.messages[-1].id)
                        await a.until(
                            lambda t=text: not conv.running and conv.messages[-1].text == t,
                            f"the reply {text!r}",
                            120,
                        )
                    fake.status = 401
                    a.ctl.send(key, "Are you there?", ())
                    await a.until(
                        lambda: not conv.running and conv.messages[-1].status == "error",
                        "failed",
                        120,
                    )
                    fake.clear_faults()
                    fake.set_reply(long, chunk_delay=0.03)
                    a.ctl.send(key, "Write a long essay", ())
                    await a.until(lambda: "word20" in conv.messages[-1].text, "streaming", 120)
                    pid = gw.pid
                    assert pid is not None
                    os.kill(pid, signal.SIGKILL)
                    shown = conv.messages[-1].text
                    await a.until(lambda: a.sup.status.state is not ConnectionState.ONLINE, "cut")
                    # The gateway again, on the same home and token, where the proxy points.
                    await gw.launcher.wait_exit()
                    restarted = await gw.launcher.endpoint()
                    proxy.target_port = port_of(restarted.url)
                    epoch = a.sup.epoch
                    a.sup.reconnect_now()
                    await a.until(
                        lambda: a.sup.epoch > epoch and a.router.synced_epoch == a.sup.epoch,
                        "reconnected",
                        120,
                    )
                    await a.until(lambda: not conv.running, "the cut turn over", 60)

                    def right(c: Any) -> bool:
                        seen = _seen(c)
                        if len(seen) != 6:
                            return False
                        users = [m.text for m in c.messages if m.role is Role.USER]
                        cut = c.messages[-1]
                        return (
                            users == ["Tell me a fact", "Are you there?", "Write a long essay"]
                            and seen[1][:2] == ("assistant", "complete")
                            and seen[1][3] == 2  # three versions: two earlier, one shown
                            and seen[3][1] == "error"
                            and seen[3][2].startswith("Failed: ")
                            and not CLASS_NAME.search(seen[3][2])
                            and seen[5][1] == "interrupted"
                            and seen[5][2].startswith("Interrupted: the gateway went away")
                            and cut.text.startswith(shown)
                        )

                    await a.until(lambda: right(conv), "the chat after the gateway's restart", 30)

                async with app(url, gw.token, tmp_path) as b:
                    b.ctl.open_session(key)
                    await b.until(
                        lambda: (c := b.router.conversation(key)) is not None and right(c),
                        "the chat after the app's restart",
                        60,
                    )
                    # The model the next reply uses (the header's) and the one that wrote
                    # the regenerated reply (its footer's).
                    await b.until(
                        lambda: b.ctl.session_info(key).model == "fake-model", "the model", 60
                    )
                    c = b.router.conversation(key)
                    assert c is not None
                    assert c.messages[1].usage.get("model") == "fake-model", c.messages[1].usage


@pytest.mark.parametrize("dist", line_params(HERMES_019, HERMES_0201, HERMES_022))
async def test_retry_of_a_stopped_reply_is_one_turn_after_a_reconnect(
    tmp_path: Path, dist: HermesDist
) -> None:
    """A stopped reply's exchange is in the stored rows (unlike a failed one's on 0.19 and
    0.20.1): its Retry must replace it there too, or a reconnect shows the prompt twice."""
    async with streaming_essay(tmp_path, dist) as e:
        a, conv, key = e.a, e.conv, e.key
        a.ctl.interrupt(key)
        await a.until(lambda: not conv.running, "stopped", 120)
        e.fake.set_reply("A short essay.", chunk_delay=0.0)
        assert a.ctl.retry_reply(key, conv.messages[-1].id)
        await a.until(
            lambda: not conv.running and conv.messages[-1].text == "A short essay.",
            "the retried reply",
            120,
        )
        want = [("user", "warm up"), ("user", "Write a long essay")]
        epoch = a.sup.epoch
        e.proxy.reset_all()
        await a.until(lambda: a.sup.status.state is not ConnectionState.ONLINE, "cut")
        a.sup.reconnect_now()
        await a.until(
            lambda: a.sup.epoch > epoch and a.router.synced_epoch == a.sup.epoch,
            "reconnected",
            120,
        )
        runtime = a.router.runtime_id(key)
        assert runtime
        users = await _history_users(e.url, e.token, runtime)
        assert users == [t for _, t in want], users
        await a.until(
            lambda: [(m.role.value, m.text) for m in conv.messages if m.role is Role.USER] == want,
            "the chat after the reconnect",
            30,
        )
        assert conv.messages[-1].text == "A short essay."
