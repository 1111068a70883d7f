"""Whether a host name or address is this machine's loopback (client URLs, gateway binds)."""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str | None) -> bool:
    """True for localhost names and loopback addresses (IPv6 with or without brackets)."""
    if not host:
        return False
    if host.lower() in {"localhost", "localhost.localdomain"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
