"""`hermes-qt --self-test`: one real chat round trip through the window and the embedded gateway."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

from desktop.core.models import ConnectionState, Role

PROMPT = "self-test: please answer"
TIMEOUT = 60.0


async def run_self_test(window: Any, backend: Any, finish: Callable[[int], None]) -> None:
    """Wait until online, send a prompt from the composer, wait for the full reply."""
    started = time.monotonic()
    try:
        await asyncio.wait_for(_round_trip(window, backend), TIMEOUT)
    except Exception as exc:
        print(f"self-test FAILED: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        finish(1)
        return
    print(f"self-test OK in {time.monotonic() - started:.2f} s", flush=True)
    finish(0)


async def _round_trip(window: Any, backend: Any) -> None:
    while backend.status().state is not ConnectionState.ONLINE:
        await asyncio.sleep(0.05)
    window.new_chat()
    await asyncio.sleep(0)
    window.composer.edit.setPlainText(PROMPT)
    window.composer.send_button.click()
    while True:
        messages = window.chat_view.messages()
        replies = [m for m in messages if m.role is Role.ASSISTANT and not m.streaming and m.text]
        if replies:
            if replies[-1].status != "complete":
                raise RuntimeError(f"reply ended with status {replies[-1].status}")
            return
        await asyncio.sleep(0.05)
