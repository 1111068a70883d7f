"""AgentCommands: the Hermes TUI's slash commands and model switch, asked for when used."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from desktop.core.errors import RpcError
from desktop.core.models import ModelChoice, Role
from tests.core.controller_rig import Rig, one_chat, rig, settle

# The gateway's answer to a method, or None for the scripted gateway's own.
Answer = Callable[[str, dict[str, Any]], Any]


@asynccontextmanager
async def hermes(
    tmp_path: Path, answer: Callable[[str, dict[str, Any]], Any]
) -> AsyncIterator[Rig]:
    """Online with chat s1 open on a gateway that answers the TUI's methods with `answer`."""

    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"

        def handler(method: str, params: dict[str, Any]) -> Any:
            result = answer(method, params)
            return r.gw.handle(method, params) if result is None else result

        r.net.handler = handler
        r.ctl.open_session("s1")
        await r.online()
        yield r


async def test_only_slash_commands_are_offered_with_their_descriptions(tmp_path: Path) -> None:
    catalog = {"pairs": [["/help", "List commands"], ["/reset"], ["not-a-command", "x"], "bad"]}

    async with hermes(tmp_path, lambda m, p: catalog if m == "commands.catalog" else None) as r:
        r.ctl.load_commands("s1")
        await settle(lambda: bool(r.seen.of("on_commands")), "commands listed")

        assert r.seen.of("on_commands") == [("s1", [("/help", "List commands"), ("/reset", "")])]
        assert r.gw.calls("commands.catalog") == [{"session_id": "r1"}]
        # Kept for the profile: the next chat opened offers them without asking again.
        r.ctl.load_commands("s1")
        r.ctl.load_models("s1")  # asked after: answered once a catalog call would have been
        await settle(lambda: bool(r.seen.of("on_models")), "models answered")
        assert r.ctl.commands() == [("/help", "List commands"), ("/reset", "")]
        assert len(r.gw.calls("commands.catalog")) == 1


async def test_a_commands_output_lands_in_the_chat_and_its_failure_is_told(
    tmp_path: Path,
) -> None:
    def answer(method: str, params: dict[str, Any]) -> Any:
        if method == "slash.exec" and params["command"] == "/usage":
            return {"output": "12,000 tokens today"}
        if method == "slash.exec":
            return RpcError(4002, "unknown command", method=method)
        return None

    async with hermes(tmp_path, answer) as r:
        r.ctl.run_command("s1", "  /usage ")
        r.ctl.run_command("s1", "/nope")
        r.ctl.run_command("s1", "plain text is not a command")
        await settle(lambda: bool(r.seen.of("on_notice")), "the failure told")
        await settle(lambda: len(r.gw.calls("slash.exec")) == 2, "both commands asked")

        [bubble] = [m for m in r.ctl.open_session("s1") if m.role is Role.SYSTEM]
        assert bubble.text == "/usage\n\n```\n12,000 tokens today\n```"
        assert r.seen.of("on_notice") == [("s1", "slash.exec: unknown command")]
        assert [c["command"] for c in r.gw.calls("slash.exec")] == ["/usage", "/nope"]


async def test_models_of_signed_in_providers_are_offered_and_a_switch_shows_at_once(
    tmp_path: Path,
) -> None:
    options = {
        "provider": "openrouter",
        "model": "m-large",
        "providers": [
            {"slug": "openrouter", "name": "OpenRouter", "models": ["m-small", "m-large"]},
            {"slug": "anthropic", "name": "Anthropic", "models": ["c-1"], "authenticated": False},
            {"slug": "groq", "name": "Groq", "models": ["g-1"]},
        ],
    }

    def answer(method: str, params: dict[str, Any]) -> Any:
        if method == "model.options":
            return options
        if method == "config.set":
            return {"value": "m-small", "warning": "m-small has a short context"}
        return None

    async with hermes(tmp_path, answer) as r:
        r.ctl.load_models("s1")
        await settle(lambda: bool(r.seen.of("on_models")), "models listed")
        [(_, choices)] = r.seen.of("on_models")
        assert choices == [
            ModelChoice("openrouter", "OpenRouter", "m-small", False),
            ModelChoice("openrouter", "OpenRouter", "m-large", True),
            ModelChoice("groq", "Groq", "g-1", False),
        ]
        assert r.ctl.models("s1") == choices  # what the header's menu shows
        # The provider by its slug, as session.info gives it (the header names it).
        info = r.seen.of("on_session_info")[-1][1]
        assert (info.model, info.provider) == ("m-large", "openrouter")

        r.ctl.set_model("s1", choices[0])
        await settle(lambda: bool(r.seen.of("on_notice")), "the warning told")
        assert r.gw.calls("config.set") == [
            {"session_id": "r1", "key": "model", "value": "m-small --provider openrouter"}
        ]
        assert r.seen.of("on_notice") == [("s1", "m-small has a short context")]
        assert r.seen.of("on_session_info")[-1][1].model == "m-small"

        # Another provider's model: the header names it at once, not the provider before.
        r.ctl.set_model("s1", choices[2])
        await settle(lambda: len(r.gw.calls("config.set")) == 2, "switched")
        await settle(lambda: r.seen.of("on_session_info")[-1][1].provider == "groq", "shown")


async def test_a_gateway_without_commands_or_models_hides_them_quietly(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        await r.online()
        temp = r.ctl.create_session()
        await settle(lambda: r.ctl.sessions()[0].key == "s1", "created")
        r.ctl.load_commands(temp)
        r.ctl.load_models("s1")
        await settle(lambda: bool(r.seen.of("on_commands")) and bool(r.seen.of("on_models")), "x")
        assert r.seen.of("on_commands") == [("s1", [])]  # -32601: the UI offers none
        assert r.seen.of("on_models") == [("s1", [])]
        assert r.seen.of("on_notice") == []
        assert (r.ctl.commands(), r.ctl.models(temp)) == ([], [])


async def test_menus_the_gateway_cannot_fill_now_are_left_empty_without_a_word(
    tmp_path: Path,
) -> None:
    def busy(method: str, params: dict[str, Any]) -> Any:
        if method in ("commands.catalog", "model.options"):
            return RpcError(5000, "agent is starting", method=method)
        return None

    async with hermes(tmp_path, busy) as r:
        r.ctl.load_commands("s1")
        r.ctl.load_models("s1")
        await settle(lambda: bool(r.seen.of("on_commands")) and bool(r.seen.of("on_models")), "x")
        # Opening a menu is not an action of the user's that failed: nothing to tell.
        assert (r.seen.of("on_commands"), r.seen.of("on_models")) == ([("s1", [])], [("s1", [])])
        assert r.seen.of("on_notice") == []


async def test_compress_clicked_as_the_reply_lands_goes_through_once_the_gateway_lets_go(
    tmp_path: Path,
) -> None:
    """Hermes 0.19 clears its running flag only after message.complete: a Compress asked in
    that moment is refused busy although no reply runs on screen. It is asked again; one
    asked while a turn does run is refused at once and said so."""
    busy = [RpcError(4009, "session busy — /interrupt the current turn before /compress")]
    compressed = {"status": "compressed", "before_messages": 6, "after_messages": 2}

    def answer(method: str, params: dict[str, Any]) -> Any:
        if method == "session.compress" and busy:
            raise busy.pop()
        return compressed if method == "session.compress" else None

    async with hermes(tmp_path, answer) as r:
        r.ctl.compress("s1")
        await settle(lambda: r.clock.waits(0.25), "refused busy: asked again soon")
        r.clock.advance(0.25)
        await settle(lambda: bool(r.seen.of("on_notice")), "the outcome")
        assert r.seen.of("on_notice") == [("s1", "Compressed the agent's context: 6 → 2 messages")]
        assert len(r.gw.calls("session.compress")) == 2

        r.emit("message.start", "r1")
        await settle(lambda: r.ctl.session_info("s1").running, "a turn runs")
        busy.append(RpcError(4009, "session busy — /interrupt the current turn before /compress"))
        r.ctl.compress("s1")
        await settle(lambda: len(r.seen.of("on_notice")) == 2, "refused")
        assert r.seen.of("on_notice")[-1] == (
            "s1",
            "Not compressed: a reply is running. Wait for it or stop it first",
        )
        assert len(r.gw.calls("session.compress")) == 3, "not asked again while a turn runs"


OPTIONS = {
    "provider": "openrouter",
    "model": "m-large",
    "providers": [{"slug": "openrouter", "name": "OpenRouter", "models": ["m-small", "m-large"]}],
}
CATALOG = {"pairs": [["/help", "List commands"]]}


def menus(method: str, params: dict[str, Any]) -> Any:
    """A gateway offering models and commands (and taking a model switch)."""
    if method == "model.options":
        return OPTIONS
    if method == "commands.catalog":
        return CATALOG
    return {"value": "m-small"} if method == "config.set" else None


async def test_going_through_tabs_asks_each_chat_for_its_models_once_per_connection(
    tmp_path: Path,
) -> None:
    """Choosing a tab opens its chat again: its models are asked once per connection, not at
    every choice (Hermes 0.20.1 spends ~0.1 s of CPU on each model.options; 50 tabs gone
    through queued 5 s of them ahead of a reconnect's reactivation); asked again after a
    reconnect and after a model switch."""
    async with hermes(tmp_path, menus) as r:
        for _ in range(3):
            r.ctl.open_session("s1")
            r.ctl.load_commands("s1")
            r.ctl.load_models("s1")  # as the window does at each open
        await settle(lambda: r.ctl.models("s1") != [] and r.ctl.commands() != [], "listed")
        for _ in range(50):
            await asyncio.sleep(0)  # anything else asked would be answered by now
        assert (len(r.gw.calls("model.options")), len(r.gw.calls("commands.catalog"))) == (1, 1)
        assert r.ctl.models("s1")[1].current

        epoch = r.ctl.status().epoch
        r.net.clients[-1].drop()
        r.ctl.reconnect_now()
        await settle(lambda: r.ctl.status().epoch > epoch and r.port.is_online(), "reconnected")
        r.ctl.load_models("s1")
        await settle(lambda: len(r.gw.calls("model.options")) == 2, "asked on the new connection")

        r.ctl.set_model("s1", r.ctl.models("s1")[0])
        await settle(lambda: r.ctl.session_info("s1").model == "m-small", "switched")
        r.ctl.load_models("s1")
        await settle(lambda: len(r.gw.calls("model.options")) == 3, "asked after the switch")


async def test_a_chat_opened_before_the_gateway_attached_it_gets_its_models_once_attached(
    tmp_path: Path,
) -> None:
    """Opened from the list before the gateway resumed it (or while offline), a chat's models
    and the commands are asked once it is attached, not left empty until it is opened again."""
    async with rig(tmp_path, seed=one_chat) as r:
        r.gw.runtime_of["s1"] = "r1"
        r.net.handler = lambda m, p: menus(m, p) or r.gw.handle(m, p)
        r.ctl.open_session("s1")
        r.ctl.load_commands("s1")
        r.ctl.load_models("s1")  # as the window does at the open, before any connection
        await r.online()
        await settle(lambda: r.ctl.models("s1") != [] and r.ctl.commands() != [], "asked")
        assert (len(r.gw.calls("model.options")), len(r.gw.calls("commands.catalog"))) == (1, 1)
        assert r.gw.calls("model.options") == [{"session_id": "r1"}]
