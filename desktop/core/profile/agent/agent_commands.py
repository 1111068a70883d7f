"""What users reach in the Hermes TUI: its slash commands and the session's model switch.

Each is asked of the gateway only when used (`commands.catalog`, `slash.exec`, `model.options`,
`config.set` with key "model", as Hermes 0.19 and 0.20.1 name them). A gateway without one
(the embedded gateway) answers -32601: the listener then gets an empty list and the UI hides
the feature rather than failing.

A chat's models are asked once per connection, when it is first opened with the gateway
attached to it (or as soon as it is attached, when it was opened before), not at every open:
going through tabs opens each chat again, and Hermes 0.20.1 spends ~0.1 s of CPU on each
`model.options`, queued ahead of whatever is asked next (a reconnect's reactivations). They
are asked again on a new connection, after a model switch or a slash command, and when the
providers changed. The catalog is asked once per profile, one call at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from desktop.common.codes import METHOD_NOT_FOUND, SESSION_BUSY
from desktop.common.methods import (
    COMMANDS_CATALOG,
    CONFIG_SET,
    MODEL_OPTIONS,
    SESSION_COMPRESS,
    SLASH_EXEC,
)
from desktop.core.chats.conversation import Conversation
from desktop.core.chats.router import SessionRouter
from desktop.core.errors import GatewayError, RpcError
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.listeners import Notify, notice
from desktop.core.models import ChatMessage, ModelChoice, Role
from desktop.core.profile.agent.wind_down import call_past_turn_end

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, Any]], None]


class AgentCommands:
    """Slash commands and model switching for one profile; outcomes reach listeners.

    Listener calls: `on_commands(key, [(name, description)])`, `on_models(key, [ModelChoice])`
    (empty: not offered by this gateway), `on_notice(key, text)` for failures and warnings.
    A command's output is added to the chat as a system bubble.
    """

    def __init__(
        self,
        supervisor: ConnectionSupervisor,
        router: SessionRouter,
        conversation: Callable[[str], Conversation | None],
        notify: Notify,
        *,
        spawn: Spawn,
        now: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._sup = supervisor
        self._router = router
        self._conversation = conversation  # a session's conversation, temporary ones too
        self._notify = notify
        self._spawn = spawn
        self._now = now
        self._sleep = sleep
        self._outputs = 0
        self._commands: list[tuple[str, str]] = []  # the gateway's catalog, once it gave one
        self._models: dict[str, list[ModelChoice]] = {}  # session key -> last offered
        # Session key -> the connection (epoch) it was last attached on, and on which its
        # models were asked; keys whose models were asked before it was attached.
        self._attached: dict[str, int] = {}
        self._models_asked: dict[str, int] = {}
        self._models_wanted: set[str] = set()
        self._catalog_asking = False
        self._catalog_wanted = False

    def commands(self) -> list[tuple[str, str]]:
        """The gateway's slash commands (name, description); empty until it listed some."""
        return list(self._commands)

    def models(self, key: str) -> list[ModelChoice]:
        """The models last offered to session `key` (empty: none, or not asked yet)."""
        return list(self._models.get(key, ()))

    def load_commands(self, key: str) -> None:
        """Ask for the catalog, once per profile and one call at a time: a gateway that listed
        commands is not asked again (one that has none is, as it may have been offline). Asked
        of chat `key` once the gateway attached it."""
        if self._commands or self._catalog_asking:
            return
        if not self._is_attached(key):
            self._catalog_wanted = True
            return
        self._catalog_asking = True
        self._spawn(self._load_commands(key))

    def on_snapshot(self, key: str, snapshot: dict[str, Any]) -> None:
        """Chat `key` is attached on this connection (opened, resumed, reactivated): what was
        asked of it before it was is asked now."""
        self._attached[key] = self._sup.epoch
        if self._catalog_wanted:
            self._catalog_wanted = False
            self.load_commands(key)
        if key in self._models_wanted:
            self.load_models(key)

    def _is_attached(self, key: str) -> bool:
        return bool(self._router.runtime_id(key)) and self._attached.get(key) == self._sup.epoch

    def run(self, key: str, command: str) -> None:
        self._spawn(self._run(key, command.strip()))

    def load_models(self, key: str, *, again: bool = False) -> None:
        """Ask for the models chat `key` is offered, unless they were asked on this connection
        (`again`: even so); once the gateway attached it, if it has not yet."""
        epoch = self._sup.epoch
        if not again and self._models_asked.get(key) == epoch:
            return
        if not self._is_attached(key):
            self._models_wanted.add(key)
            return
        self._models_wanted.discard(key)
        self._models_asked[key] = epoch
        self._spawn(self._load_models(key))

    def reload_models(self) -> None:
        """Ask again for every session asked before: the providers changed (Settings)."""
        for key in list(self._models):
            self.load_models(key, again=True)

    def set_model(self, key: str, choice: ModelChoice) -> None:
        self._spawn(self._set_model(key, choice))

    def set_auto_approve(self, key: str, on: bool) -> None:
        """Turn Hermes' approval bypass on or off for this session only (`yolo`, session
        scope); the gateway's answer, then its session.info, say what it is now."""
        self._spawn(self._set_auto_approve(key, on))

    # -- calls ---------------------------------------------------------------------------------

    async def _load_commands(self, key: str) -> None:
        try:
            result = await self._ask(key, COMMANDS_CATALOG, {})
        finally:
            self._catalog_asking = False
        pairs = result.get("pairs") if isinstance(result, dict) else None
        commands = [
            (str(p[0]), str(p[1]) if len(p) > 1 else "")
            for p in (pairs if isinstance(pairs, list) else [])
            if isinstance(p, list | tuple) and p and str(p[0]).startswith("/")
        ]
        self._commands = commands
        self._notify(lambda listener: listener.on_commands(key, commands))

    async def _run(self, key: str, command: str) -> None:
        if not command.startswith("/"):
            return
        result = await self._ask(key, SLASH_EXEC, {"command": command}, quiet=False)
        self._models_asked.pop(key, None)  # `/model` may have switched: asked at the next open
        if not isinstance(result, dict):
            return
        output = str(result.get("output") or "").strip() or "(no output)"
        conv = self._conversation(key)
        if conv is None:
            return
        self._outputs += 1
        conv.append_local(
            ChatMessage(
                id=f"{key}:command:{self._outputs}",
                role=Role.SYSTEM,
                text=f"{command}\n\n```\n{output}\n```",
                created_at=self._now(),
            )
        )

    async def _load_models(self, key: str) -> None:
        result = await self._ask(key, MODEL_OPTIONS, {})
        if result is None:
            self._models_asked.pop(key, None)  # not answered: asked again at the next open
        choices: list[ModelChoice] = []
        if isinstance(result, dict):
            current = (str(result.get("provider") or ""), str(result.get("model") or ""))
            for provider in result.get("providers") or []:
                if not isinstance(provider, dict) or provider.get("authenticated") is False:
                    continue
                slug = str(provider.get("slug") or "")
                name = str(provider.get("name") or slug)
                for model in provider.get("models") or []:
                    choices.append(
                        ModelChoice(slug, name, str(model), (slug, str(model)) == current)
                    )
            conv = self._conversation(key)
            if conv is not None and current[1]:
                # The model the next reply will use, as of now (a provider may have been added
                # or changed since the session's info came). The provider by its slug, as
                # session.info names it: the header shows the name the menu gives it.
                conv.apply_info({"model": current[1], "provider": current[0]})
        self._models[key] = choices
        self._notify(lambda listener: listener.on_models(key, choices))

    async def _set_model(self, key: str, choice: ModelChoice) -> None:
        value = f"{choice.model} --provider {choice.provider}" if choice.provider else choice.model
        result = await self._ask(key, CONFIG_SET, {"key": "model", "value": value}, quiet=False)
        if not isinstance(result, dict):
            return
        self._models_asked.pop(key, None)  # the list's current model: asked at the next open
        warning = str(result.get("warning") or "")
        if warning:
            notice(self._notify, key, warning)
        conv = self._conversation(key)
        if conv is not None:
            # The next session.info confirms it; the header changes at once.
            model = str(result.get("value") or choice.model)
            conv.apply_info({"model": model, "provider": choice.provider})

    def compress(self, key: str, focus: str = "") -> None:
        """Ask the gateway to summarise the session's history (`session.compress`); the chat
        shows its compacting state meanwhile and the context meter the figure after."""
        self._spawn(self._compress(key, " ".join(focus.split())))

    async def _compress(self, key: str, focus: str) -> None:
        runtime = self._router.runtime_id(key)
        conv = self._conversation(key)
        if not runtime or conv is None:
            return
        params: dict[str, Any] = {"session_id": runtime}
        if focus:
            params["focus_topic"] = focus
        conv.set_compacting(True)
        try:
            result = await call_past_turn_end(
                self._sup, self._sleep, SESSION_COMPRESS, params, running=lambda: conv.running
            )
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                text = "This gateway cannot compress a conversation"
            elif exc.code == SESSION_BUSY:
                text = "Not compressed: a reply is running. Wait for it or stop it first"
            else:
                text = f"Not compressed: {exc.message}"
            notice(self._notify, key, text)
            return
        except GatewayError as exc:
            notice(self._notify, key, f"Not compressed: {exc}")
            return
        finally:
            conv.set_compacting(False)
        if not isinstance(result, dict):
            return
        info = result.get("info")
        learned: dict[str, Any] = dict(info) if isinstance(info, dict) else {}
        if isinstance(result.get("usage"), dict):
            learned["usage"] = result["usage"]  # the context meter's figure after compressing
        conv.apply_info(learned)
        before, after = result.get("before_messages"), result.get("after_messages")
        if result.get("status") == "aborted":
            notice(self._notify, key, "Compression did not shorten the conversation")
        elif isinstance(before, int) and isinstance(after, int):
            notice(
                self._notify, key, f"Compressed the agent's context: {before} → {after} messages"
            )

    async def _set_auto_approve(self, key: str, on: bool) -> None:
        params = {"key": "yolo", "value": "on" if on else "off", "scope": "session"}
        result = await self._ask(key, CONFIG_SET, params, quiet=False)
        conv = self._conversation(key)
        if isinstance(result, dict) and conv is not None and result.get("value") in ("0", "1"):
            conv.apply_info({"yolo": result["value"] == "1"})

    async def _ask(
        self, key: str, method: str, params: dict[str, Any], *, quiet: bool = True
    ) -> Any:
        runtime = self._router.runtime_id(key)
        if not runtime:
            return None
        try:
            return await self._sup.call(method, {"session_id": runtime, **params})
        except RpcError as exc:
            if exc.code != METHOD_NOT_FOUND and not quiet:
                notice(self._notify, key, f"{method}: {exc.message}")
            return None
        except GatewayError as exc:
            log.info("%s failed: %s", method, exc)
            if not quiet:
                notice(self._notify, key, f"{method} failed: {exc}")
            return None
