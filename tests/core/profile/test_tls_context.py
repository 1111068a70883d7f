"""A profile's TLS context is made for `wss://` links only: loopback `ws://` ones never load the
system CA store (~2 MB resident, bench/memory.py); a remote profile's bad CA file still fails at
once, before any connection."""

from __future__ import annotations

import ssl
from typing import Any

import pytest

from desktop.core.link.profiles import Profile, ProfileKind, TlsOptions
from desktop.core.link.supervisor import Endpoint
from desktop.core.profile import assembly


def counting_contexts(monkeypatch: Any) -> list[object]:
    made: list[object] = []
    real = ssl.create_default_context

    def create(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        context = real(*args, **kwargs)
        made.append(context)
        return context

    monkeypatch.setattr(assembly.ssl_lib, "create_default_context", create)
    return made


def test_a_loopback_link_loads_no_ca_store(monkeypatch: Any) -> None:
    made = counting_contexts(monkeypatch)
    clients = assembly.gateway_clients(Profile(id="e", name="E", kind=ProfileKind.EMBEDDED))
    clients(Endpoint("ws://127.0.0.1:9/ws", token="t"))
    assert made == []


def test_a_remote_link_checks_its_gateway_with_one_context(monkeypatch: Any) -> None:
    made = counting_contexts(monkeypatch)
    remote = Profile(id="r", name="R", kind=ProfileKind.REMOTE, url="wss://example.org/ws")
    clients = assembly.gateway_clients(remote)
    first = clients(Endpoint("wss://example.org/ws", token="t"))
    second = clients(Endpoint("wss://example.org/ws", token="t"))
    assert len(made) == 1
    assert first._ssl is made[0] and second._ssl is made[0]


def test_a_remote_profile_with_a_missing_ca_file_fails_before_connecting(tmp_path: Any) -> None:
    remote = Profile(
        id="r",
        name="R",
        kind=ProfileKind.REMOTE,
        url="wss://example.org/ws",
        tls=TlsOptions(ca_file=str(tmp_path / "missing.pem")),
    )
    with pytest.raises(OSError):
        assembly.gateway_clients(remote)
