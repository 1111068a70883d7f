"""Against the real embedded gateway child: launch, chat, crash the child, reconnect, resume."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from desktop.core.models import ConnectionState, Role
from tests.support.embedded_stack import embedded_launcher, online_embedded
from tests.support.waiting import wait_notified

pytestmark = pytest.mark.slow


async def test_embedded_gateway_crash_is_survived_by_launcher_and_router(tmp_path: Path) -> None:
    launcher = embedded_launcher(tmp_path)
    # The 1 s floor of the backoff: the restart happens on the first retry.
    async with online_embedded(tmp_path, launcher, random=lambda: 0.0) as (sup, router):
        caps = sup.dialect
        assert caps is not None and caps.event_replay and caps.heartbeat
        stored = await router.create(title="crash test")
        conv = router.conversation(stored)
        assert conv is not None
        await sup.call("prompt.submit", {"session_id": router.runtime_id(stored), "text": "hello"})
        await wait_notified(
            lambda: any(
                m.role is Role.ASSISTANT and not m.streaming and m.text for m in conv.messages
            ),
            [conv.add_listener],
            "first reply",
        )
        reply = [m.text for m in conv.messages if m.role is Role.ASSISTANT]
        assert len(reply) == 1 and "hello" in reply[0]

        first_pid, first_epoch = launcher.pid, sup.epoch
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)  # the gateway child crashes
        await wait_notified(
            lambda: (
                sup.epoch > first_epoch
                and sup.status.state is ConnectionState.ONLINE
                and router.synced_epoch == sup.epoch
            ),
            [sup.add_status_listener, router.on_synced],
            "back online on a restarted child",
        )
        assert launcher.starts == 2 and launcher.pid != first_pid
        session = router.session(stored)
        assert session is not None
        if not session.gone:
            # The restarted gateway resumed the stored session with its history intact.
            assert [m.text for m in conv.messages if m.role is Role.ASSISTANT] == reply
    assert not launcher.running
