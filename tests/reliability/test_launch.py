"""Row A6: a local Hermes that cannot start (not installed, dies at once) fails once, explained."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.core.link.epochs import MemoryEpochStore
from desktop.core.link.launcher import HermesServeLauncher
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import ConnectionSupervisor
from desktop.core.models import ConnectionState
from tests.core.supervisor_fakes import FakeNet
from tests.reliability.clocks import ScaledClock
from tests.reliability.conftest import RecordFigure
from tests.support.waiting import wait_notified


async def _fail(tmp_path: Path, hermes: str, clock: ScaledClock) -> tuple[str, int, int]:
    """(reason shown, starts, timers left) once the profile settles."""
    launcher = HermesServeLauncher(tmp_path / "home", hermes=hermes, log_path=tmp_path / "log")
    sup = ConnectionSupervisor(
        Profile(id="mine", name="My Hermes", kind=ProfileKind.LOCAL_HERMES),
        client_factory=FakeNet().factory,
        epoch_store=MemoryEpochStore(),
        clock=clock,
        launcher=launcher,
    )
    sup.start()
    failed = lambda: sup.status.state is ConnectionState.FAILED  # noqa: E731
    try:
        await wait_notified(failed, [sup.add_status_listener], "failed", timeout=20)
        return sup.status.reason, launcher.starts, clock.pending
    finally:
        await sup.close()


async def test_a6_hermes_missing_or_broken_fails_once_with_the_reason(
    tmp_path: Path, record_figure: RecordFigure, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ScaledClock(100.0)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    missing, starts_missing, timers_missing = await _fail(tmp_path, "", clock)
    monkeypatch.undo()
    broken = tmp_path / "bin" / "hermes"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: hermes_cli' >&2\nexit 1\n")
    broken.chmod(0o755)
    died, starts_died, timers_died = await _fail(tmp_path, str(broken), clock)
    ok = (
        missing.startswith("hermes not found: install hermes-agent")
        and starts_missing == 0
        and "ModuleNotFoundError: hermes_cli" in died
        and starts_died == 1
        and timers_missing == timers_died == 0
    )
    record_figure(
        "A6",
        "hermes missing or dying at start: FAILED with the reason, 0 retries",
        f"missing: {missing!r}, {starts_missing} starts; dies at once: {starts_died} start, "
        f"reason names its error; {timers_missing + timers_died} retry timers",
        ok,
    )
