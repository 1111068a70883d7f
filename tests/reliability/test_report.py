"""The fault-matrix report and the skips around it cannot hide a missing or failing row."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.reliability import report
from tests.reliability.rig import TOKEN
from tests.support import hermes_env, netns

HERE = Path(__file__).parent


def _figure(scenario: str, passed: bool = True) -> dict[str, object]:
    return {"scenario": scenario, "expected": "e", "measured": "m", "passed": passed}


def _row(text: str, row: str) -> str:
    start = f"| {report.scenario_of(row)} | {report.gateway_of(row)} |"
    return next(line for line in text.splitlines() if line.startswith(start))


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


def _row_id(arg: ast.expr) -> str | None:
    """A literal row id, or an f-string one with each `{...}` kept as "{}" (a per-line row)."""
    if isinstance(arg, ast.Constant):
        return str(arg.value)
    if isinstance(arg, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in arg.values)
    return None


def _recorded_scenarios() -> dict[str, str]:
    """Row ids passed to record_figure, per test, across the matrix (f-strings as patterns)."""
    found: dict[str, str] = {}
    for path in sorted(HERE.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef):
                continue
            calls = [
                call
                for call in ast.walk(node)
                if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "record_figure"
            ]
            for call in calls:
                if (row := _row_id(call.args[0])) is not None:
                    found[row] = f"{path.name}::{node.name}"
            if calls:
                # Ids built first and recorded in a loop: any f"S@{line}" in the test.
                for text in ast.walk(node):
                    row = _row_id(text) if isinstance(text, ast.JoinedStr) else None
                    if row and re.fullmatch(r"[\w+.-]+@\{\}", row):
                        found[row] = f"{path.name}::{node.name}"
    return found


def _expected_rows(recorded: str) -> list[str]:
    """The EXPECTED rows a recorded id (or f-string pattern) stands for."""
    if "{}" not in recorded:
        return [recorded] if recorded in report.EXPECTED else []
    pattern = re.escape(recorded).replace(re.escape("{}"), "[^@]+")
    return [row for row in report.EXPECTED if re.fullmatch(pattern, row)]


def test_every_recorded_scenario_is_in_the_expected_list() -> None:
    recorded = _recorded_scenarios()
    assert len(recorded) > 30
    unlisted = {s: t for s, t in recorded.items() if not _expected_rows(s)}
    assert not unlisted, f"add these to report.EXPECTED: {unlisted}"
    wrong = {
        row: (t, report.EXPECTED[row])
        for s, t in recorded.items()
        for row in _expected_rows(s)
        if not report.EXPECTED[row].startswith(t)
    }
    assert not wrong, f"report.EXPECTED names another test: {wrong}"


def test_every_row_names_its_gateway_and_each_hermes_line_is_a_known_one() -> None:
    lines = {dist.line for dist in hermes_env.DISTS}
    assert set(report.LINES) == lines
    for row, node in report.EXPECTED.items():
        gateway = report.gateway_of(row)
        assert gateway == report.EMBEDDED or gateway in lines, row
        # A row of a test run per line is that line's parametrization.
        if node.endswith("]") and gateway != report.EMBEDDED and "[" in node:
            param = node.rsplit("[", 1)[1].rstrip("]")
            if param in lines:
                assert param == gateway, (row, node)


def test_a_line_missing_from_a_run_is_a_missing_row_of_that_gateway(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = report.per_line("X1", "test_x.py::test_x1")
    assert rows == {
        "X1@0.19.0": "test_x.py::test_x1[0.19.0]",
        "X1@0.20.1": "test_x.py::test_x1[0.20.1]",
        "X1@0.22.2": "test_x.py::test_x1[0.22.2]",
    }
    monkeypatch.setattr(report, "EXPECTED", {"X0": "test_x.py::test_x0", **rows})
    # 0.22.2 was skipped (its venv missing): the run recorded the other two.
    node = report.NODE_PREFIX + "test_x.py::test_x1[0.22.2]"
    outcomes = {node: {"outcome": "skipped", "when": "setup", "detail": "no 0.22 venv"}}
    figures = [_figure("X0"), _figure("X1@0.19.0"), _figure("X1@0.20.1", passed=False)]
    text = report.render(figures, outcomes, 0, "abc1234")

    assert "2/4 figures within target; 1 MISSING, 1 failed" in text
    assert (
        "- Per gateway: embedded 1/1, 0.19.0 1/1, 0.20.1 0/1 (1 failed), 0.22.2 0/1 (1 MISSING)"
        in text
    )
    assert _row(text, "X1@0.22.2").endswith("| MISSING |")
    assert "skipped: no 0.22 venv" in _row(text, "X1@0.22.2")
    assert _row(text, "X1@0.20.1").endswith("| FAIL |")
    order = [line.split(" | ")[1] for line in text.splitlines() if line.startswith("| X1 |")]
    assert order == ["0.19.0", "0.20.1", "0.22.2"]


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
