"""Rollback: a session's checkpoints, or in words why there are none; a restore's outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.core.errors import RpcError
from desktop.core.models import ChatMessage, Checkpoint, Role, RollbackState
from desktop.core.profile.agent.rollback import (
    BUSY,
    CHECKPOINTS_OFF,
    NO_CHECKPOINTS,
    checkpoint_for,
    is_last_turn,
)
from tests.core.controller_rig import settle
from tests.core.profile.agent.test_agent_commands import hermes

LISTED = {
    "enabled": True,
    "checkpoints": [
        {"hash": "b" * 40, "timestamp": "2026-12-02T04:13:31+00:00", "message": ""},
        {"hash": "a" * 40, "timestamp": "2026-12-02T04:13:30+00:00", "message": ""},
    ],
}


def _states(r: Any) -> list[RollbackState]:
    return [state for _key, state in r.seen.of("on_rollback")]


async def test_checkpoints_are_listed_and_a_gateway_without_them_says_why(
    tmp_path: Path,
) -> None:
    answers: list[Any] = [LISTED, {"enabled": False, "checkpoints": []}]

    def answer(method: str, params: dict[str, Any]) -> Any:
        if method != "rollback.list":
            return None
        if not answers:
            raise RpcError(-32601, "unknown method: rollback.list")
        return answers.pop(0)

    async with hermes(tmp_path, answer) as r:
        r.ctl.load_rollback("s1")
        await settle(lambda: len(_states(r)) == 1, "listed")
        state = r.ctl.rollback_state("s1")
        assert state.available and state.loaded
        assert [c.hash[0] for c in state.checkpoints] == ["b", "a"]
        assert r.gw.calls("rollback.list") == [{"session_id": "r1"}]

        r.ctl.load_rollback("s1")  # checkpoints off in that gateway process
        await settle(lambda: len(_states(r)) == 2, "off")
        assert not r.ctl.rollback_state("s1").available
        assert r.ctl.rollback_state("s1").reason == CHECKPOINTS_OFF

        r.ctl.load_rollback("s1")  # no rollback.* at all (the embedded gateway)
        await settle(lambda: len(_states(r)) == 3, "missing")
        assert r.ctl.rollback_state("s1").reason == NO_CHECKPOINTS


async def test_a_full_restore_while_a_turn_runs_is_told_as_such_and_a_file_restore_goes_out(
    tmp_path: Path,
) -> None:
    def answer(method: str, params: dict[str, Any]) -> Any:
        if method == "rollback.list":
            return LISTED
        if method == "rollback.restore" and "file_path" not in params:
            raise RpcError(4009, "session busy — /interrupt the current turn before full rollback")
        if method == "rollback.restore":
            return {"success": True, "restored_to": "aaaaaaaa", "file": params["file_path"]}
        return None

    async with hermes(tmp_path, answer) as r:
        r.emit("message.start", "r1")
        await settle(lambda: r.ctl.session_info("s1").running, "a turn runs")
        r.ctl.restore_checkpoint("s1", "a" * 40)
        await settle(lambda: bool(r.seen.of("on_notice")), "refused")
        assert r.seen.of("on_notice")[-1] == ("s1", BUSY)
        assert len(r.gw.calls("rollback.restore")) == 1, "refused at once: a turn runs"

        r.ctl.restore_checkpoint("s1", "a" * 40, "notes.txt")
        await settle(lambda: len(r.seen.of("on_notice")) == 2, "restored")
        assert r.seen.of("on_notice")[-1] == ("s1", "Restored notes.txt to checkpoint aaaaaaaa")
        assert r.gw.calls("rollback.restore")[-1] == {
            "session_id": "r1",
            "hash": "a" * 40,
            "file_path": "notes.txt",
        }


def _turns(*times: float) -> list[ChatMessage]:
    out = []
    for n, at in enumerate(times):
        out += [
            ChatMessage(id=f"u{n}", role=Role.USER, created_at=at),
            ChatMessage(id=f"a{n}", role=Role.ASSISTANT, created_at=at + 1),
        ]
    return out


def test_each_turn_gets_the_checkpoint_taken_in_it_not_a_later_snapshot() -> None:
    # Newest first, as rollback.list gives them: a pre-restore snapshot within the same
    # second as turn 2's checkpoint, turn 2's checkpoint, turn 1's.
    state = RollbackState(
        True,
        "",
        (Checkpoint("snap", 200.0), Checkpoint("two", 200.0), Checkpoint("one", 100.0)),
        loaded=True,
    )
    messages = _turns(99.0, 199.0)
    assert checkpoint_for(state, messages, "a0") == Checkpoint("one", 100.0)
    assert checkpoint_for(state, messages, "a1") == Checkpoint("two", 200.0)
    # A prompt rebuilt from a history row without a time: the reply's start bounds it.
    messages[2].created_at = 0.0
    assert checkpoint_for(state, messages, "a1") == Checkpoint("two", 200.0)
    assert checkpoint_for(RollbackState(), messages, "a1") is None
    assert is_last_turn(messages, "a1") and not is_last_turn(messages, "a0")


async def test_a_restore_clicked_as_the_reply_lands_waits_for_the_gateway_to_let_go(
    tmp_path: Path,
) -> None:
    """Hermes sends a turn's end before it frees the session: a restore asked in that moment
    is refused busy although no reply runs on screen. It is asked again, and goes through."""
    busy = [RpcError(4009, "session busy — /interrupt the current turn before full rollback")] * 2

    def answer(method: str, params: dict[str, Any]) -> Any:
        if method == "rollback.restore" and busy:
            raise busy.pop()
        if method == "rollback.restore":
            return {"success": True, "restored_to": "aaaaaaaa"}
        return None

    async with hermes(tmp_path, answer) as r:
        r.ctl.restore_checkpoint("s1", "a" * 40)
        for _ in busy[:]:
            await settle(lambda: r.clock.waits(0.25), "refused busy: asked again soon")
            r.clock.advance(0.25)
        await settle(lambda: bool(r.seen.of("on_notice")), "the outcome")
        assert r.seen.of("on_notice") == [("s1", "Restored the files to checkpoint aaaaaaaa")]
        assert len(r.gw.calls("rollback.restore")) == 3
