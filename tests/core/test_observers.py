"""The one observer of core: unsubscribe, re-entrant emission, failing listeners, typed calls."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from mypy import api as mypy_api

from desktop.core.observers import Observers

ROOT = Path(__file__).resolve().parents[2]


def test_a_failing_listener_is_logged_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []
    obs: Observers[Callable[[str], None]] = Observers("status")

    def broken(_text: str) -> None:
        raise RuntimeError("listener bug")

    obs.subscribe(seen.append)
    obs.subscribe(broken)
    obs.subscribe(lambda text: seen.append(text.upper()))
    assert obs.emit(lambda listener: listener("online")) == 1
    assert seen == ["online", "ONLINE"]
    assert "status listener failed" in caplog.text


def test_an_unsubscribed_listener_is_not_called_again_even_mid_emission() -> None:
    seen: list[str] = []
    obs: Observers[Callable[[str], None]] = Observers("event")

    def first(text: str) -> None:
        seen.append(f"first {text}")
        unsubscribe_second()  # the second has not been called for this event yet

    obs.subscribe(first)
    unsubscribe_second = obs.subscribe(lambda text: seen.append(f"second {text}"))
    obs.emit(lambda listener: listener("a"))
    obs.emit(lambda listener: listener("b"))
    assert seen == ["first a", "first b"]


def test_a_listener_subscribed_mid_emission_hears_from_the_next_one_on() -> None:
    seen: list[str] = []
    obs: Observers[Callable[[str], None]] = Observers("event")
    unsubscribe_self: Callable[[], None]

    def subscribe_late(_text: str) -> None:
        obs.subscribe(lambda text: seen.append(f"late {text}"))
        unsubscribe_self()

    unsubscribe_self = obs.subscribe(subscribe_late)
    obs.emit(lambda listener: listener("a"))
    obs.emit(lambda listener: listener("b"))
    assert seen == ["late b"]


def test_each_subscription_is_its_own_and_unsubscribing_twice_removes_nothing_more() -> None:
    seen: list[str] = []
    obs: Observers[Callable[[str], None]] = Observers("event")
    obs.subscribe(seen.append)
    unsubscribe = obs.subscribe(seen.append)
    obs.emit(lambda listener: listener("a"))
    unsubscribe()
    unsubscribe()
    obs.emit(lambda listener: listener("b"))
    assert seen == ["a", "a", "b"]
    assert len(obs) == 1


def test_stop_ends_an_emission_after_the_listener_that_made_it_true() -> None:
    seen: list[str] = []
    dead = False
    obs: Observers[Callable[[str], None]] = Observers("event")

    def kill(_text: str) -> None:
        nonlocal dead
        dead = True

    obs.subscribe(seen.append)
    obs.subscribe(kill)
    obs.subscribe(lambda text: seen.append(f"after {text}"))
    obs.emit(lambda listener: listener("a"), stop=lambda: dead)
    assert seen == ["a"]


def test_mypy_checks_each_listener_call_against_the_backend_listener(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A misspelt callback or a wrong argument type is a type error, not a silent no-op.
    module = tmp_path / "emit_typo.py"
    module.write_text(
        textwrap.dedent(
            """
            from desktop.core.listeners import BackendListener
            from desktop.core.observers import Observers

            obs: Observers[BackendListener] = Observers("backend")
            obs.emit(lambda listener: listener.on_runing("key", True))
            obs.emit(lambda listener: listener.on_notice("key", 3))
            obs.emit(lambda listener: listener.on_running("key", True))
            """
        )
    )
    monkeypatch.chdir(ROOT)  # where mypy finds the `desktop` package
    out, _err, status = mypy_api.run(
        [
            "--strict",
            "--no-incremental",
            "--follow-imports=silent",
            "--config-file=",
            str(module),
        ]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1, out
    assert len(errors) == 2, out
    assert '"BackendListener" has no attribute "on_runing"' in errors[0]
    assert 'Argument 2 to "on_notice" of "BackendListener"' in errors[1]
