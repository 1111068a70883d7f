"""OS notices reach the supervisor: a wake from sleep or a network change reconnects at once."""

from __future__ import annotations

from typing import Any

from desktop.ui.platform.system_events import SystemEvents


def test_waking_from_sleep_is_forwarded_but_going_to_sleep_is_not(qtbot: Any) -> None:
    events = SystemEvents()
    with qtbot.assert_not_emitted(events.woke_up):
        events.on_prepare_for_sleep(True)
    with qtbot.wait_signal(events.woke_up, timeout=1000):
        events.on_prepare_for_sleep(False)


def test_a_reachability_change_is_forwarded_once(qtbot: Any) -> None:
    events = SystemEvents()
    events.on_network_reachability_changed("online")
    with qtbot.wait_signal(events.network_changed, timeout=1000):
        events.on_network_reachability_changed("disconnected")
    with qtbot.assert_not_emitted(events.network_changed):
        events.on_network_reachability_changed("disconnected")


def test_sleep_notices_are_followed_from_when_asked_and_once(qtbot: Any, monkeypatch: Any) -> None:
    """The app asks once its window is painted: the system bus is not connected before."""
    import sys

    monkeypatch.setattr(sys, "platform", "linux")
    calls: list[str] = []
    monkeypatch.setattr(SystemEvents, "_watch_logind", lambda self: calls.append("logind"))
    events = SystemEvents(watch_network=False, watch_sleep=False)
    assert calls == []
    events.watch_sleep()
    events.watch_sleep()
    assert calls == ["logind"]
    SystemEvents(watch_network=False)
    assert calls == ["logind", "logind"], "by default at once, as before"
