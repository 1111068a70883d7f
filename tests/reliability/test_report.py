"""The fault-matrix report and the skips around it cannot hide a missing or failing row."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.reliability import report
from tests.reliability.rig import TOKEN
from tests.support import hermes_env, netns

HERE = Path(__file__).parent


def _figure(scenario: str, passed: bool = True) -> dict[str, object]:
    return {"scenario": scenario, "expected": "e", "measured": "m", "passed": passed}


def _row(text: str, scenario: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {scenario} |"))


def test_a_scenario_without_a_figure_is_a_missing_row_counted_as_a_failure() -> None:
    skipped = report.NODE_PREFIX + report.EXPECTED["1-netns"]
    errored = report.NODE_PREFIX + report.EXPECTED["2"]
    figures = [_figure(s) for s in report.EXPECTED if s not in {"1-netns", "2", "3"}]
    outcomes = {
        skipped: {"outcome": "skipped", "when": "setup", "detail": "netns needs Linux and root"},
        errored: {"outcome": "failed", "when": "call", "detail": "AssertionError: timed out"},
    }
    text = report.render(figures, outcomes, 0, "abc1234")

    assert "- Code: commit abc1234" in text
    total = len(report.EXPECTED)
    assert f"{total - 3}/{total} figures within target; 3 MISSING, 0 failed" in text
    assert _row(text, "1-netns").endswith("| MISSING |")
    assert "skipped: netns needs Linux and root" in _row(text, "1-netns")
    assert "errored before recording (call): AssertionError: timed out" in _row(text, "2")
    assert "not run" in _row(text, "3")


def test_a_failed_or_unlisted_figure_is_not_counted_as_within_target() -> None:
    figures = [_figure(s, passed=s != "5") for s in report.EXPECTED] + [_figure("99")]
    text = report.render(figures, {}, 1, "abc1234")
    total = len(report.EXPECTED) + 1
    assert f"{total - 2}/{total} figures within target; 0 MISSING, 2 failed" in text
    assert _row(text, "5").endswith("| FAIL |")
    assert "not in the report's expected list" in _row(text, "99")


def _recorded_scenarios() -> dict[str, str]:
    """Scenario ids passed as literals to record_figure, per test, across the matrix."""
    found: dict[str, str] = {}
    for path in sorted(HERE.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef):
                continue
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and getattr(call.func, "id", "") == "record_figure"
                    and isinstance(call.args[0], ast.Constant)
                ):
                    found[str(call.args[0].value)] = f"{path.name}::{node.name}"
    return found


def test_every_recorded_scenario_is_in_the_expected_list() -> None:
    recorded = _recorded_scenarios()
    assert len(recorded) > 30
    unlisted = {s: t for s, t in recorded.items() if s not in report.EXPECTED}
    assert not unlisted, f"add these to report.EXPECTED: {unlisted}"
    wrong = {
        s: (t, report.EXPECTED[s])
        for s, t in recorded.items()
        if not report.EXPECTED[s].startswith(t)
    }
    assert not wrong, f"report.EXPECTED names another test: {wrong}"


def test_hermes_unavailable_fails_in_ci_instead_of_skipping(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("HERMES_QT_HERMES_BIN", raising=False)
    monkeypatch.setenv("HERMES_QT_TEST_CACHE", str(tmp_path))
    dist = hermes_env.HERMES_019
    monkeypatch.setitem(hermes_env._failures, dist, "cannot build a venv: no network (simulated)")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and cannot build"):
        hermes_env.require_hermes(dist)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="cannot build"):
        hermes_env.require_hermes(dist)


def test_a_gateway_failing_in_the_netns_fails_with_its_stderr(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Skips (inside GatewayNetns) only where namespaces are unavailable.
    broken = "import sys; print('cannot bind the forwarder', file=sys.stderr); sys.exit(3)"
    monkeypatch.setattr(netns, "CHILD", broken)
    with (
        pytest.raises(pytest.fail.Exception, match="cannot bind the forwarder"),
        netns.GatewayNetns(tmp_path, TOKEN),
    ):
        pass
