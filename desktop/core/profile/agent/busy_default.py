"""The user's default for a message sent while a reply runs (queue, steer or interrupt), read
from and written to the gateway where it keeps one (Hermes' `config.get/set {key: "busy"}`).
Where it keeps none (the embedded gateway: -32601, or a refused key) the UI keeps it locally."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from desktop.common.methods import CONFIG_GET, CONFIG_SET
from desktop.core.errors import GatewayError

log = logging.getLogger(__name__)

BUSY_MODES = ("queue", "steer", "interrupt")


class BusyDefault:
    """One profile's busy default as its gateway keeps it (None: it keeps none, or not known)."""

    def __init__(self, call: Callable[[str, dict[str, Any]], Coroutine[Any, Any, Any]]) -> None:
        self._call = call
        self.value: str | None = None

    async def refresh(self) -> str | None:
        """Ask the gateway (after each connect: another client may have changed it)."""
        try:
            res = await self._call(CONFIG_GET, {"key": "busy"})
        except GatewayError as exc:
            log.info("busy default not read: %s", type(exc).__name__)
            self.value = None
            return None
        self.value = _mode(res)
        return self.value

    async def set(self, mode: str) -> bool:
        """Keep `mode` on the gateway; False when it keeps none (the caller keeps it locally)."""
        if mode not in BUSY_MODES:
            raise ValueError(f"unknown busy mode: {mode}")
        try:
            res = await self._call(CONFIG_SET, {"key": "busy", "value": mode})
        except GatewayError as exc:
            log.info("busy default not kept: %s", type(exc).__name__)
            return False
        self.value = _mode(res)
        return self.value == mode


def _mode(res: Any) -> str | None:
    value = res.get("value") if isinstance(res, dict) else None
    return value if isinstance(value, str) and value in BUSY_MODES else None
