"""Network changes reconnect remote links only: an app with loopback gateways does not follow them.

Following them loads Qt's network-information backend (~4 MB resident, bench/memory.py), which
a loopback socket has no use for: it has no route to lose.
"""

from __future__ import annotations

from desktop.app.main import follows_network
from desktop.core.link.profiles import Profile, ProfileKind

EMBEDDED = Profile(id="e", name="Embedded", kind=ProfileKind.EMBEDDED)
LOCAL = Profile(id="l", name="Local Hermes", kind=ProfileKind.LOCAL_HERMES)
REMOTE = Profile(id="r", name="Server", kind=ProfileKind.REMOTE, url="wss://example.org/ws")


def test_only_a_remote_profile_makes_the_app_follow_network_changes() -> None:
    assert not follows_network([EMBEDDED, LOCAL])
    assert follows_network([EMBEDDED, REMOTE])
