"""The embedded gateway's model switch: Hermes' `model.options` and `config.set model`, per
session, over the providers the app configured (a real HTTP provider on loopback)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from desktop.gateway.providers.config import KeyStore, ProviderSettings
from desktop.gateway.providers.registry import ConfigWatchingProvider, save_providers
from desktop.gateway.rpc.server import GatewayServer
from tests.gateway.wsclient import RpcFailure, client, gateway
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(reply="Hi there.") as server:
        yield server


def _configure(config: Path, base_url: str) -> list[ProviderSettings]:
    return save_providers(
        config,
        [
            ProviderSettings("Work", base_url, "small", models=("small", "large")),
            ProviderSettings("Spare", base_url, "other"),
        ],
        keys=KeyStore(config, backend=None),
    )


@contextlib.asynccontextmanager
async def _gateway(data_dir: Path, config: Path) -> AsyncIterator[GatewayServer]:
    """The embedded gateway over the app's provider settings, as `hermes-qt-gateway` runs it."""
    provider = ConfigWatchingProvider(config, keys=KeyStore(config, backend=None))
    try:
        async with gateway(data_dir, provider) as gw:
            yield gw
    finally:
        await provider.aclose()


async def test_a_session_switches_model_and_its_next_reply_uses_it(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    config = tmp_path / "config"
    work, spare = _configure(config, fake.base_url)
    async with _gateway(tmp_path / "gw", config) as gw, client(gw.url) as c:
        created = await c.call("session.create")
        sid = created["session_id"]
        assert created["info"]["model"] == "small" and created["info"]["provider"] == "Work"
        options = await c.call("model.options", session_id=sid)
        assert options["model"] == "small" and options["provider"] == work.id
        assert [(p["name"], p["models"]) for p in options["providers"]] == [
            ("Work", ["small", "large"]),
            ("Spare", ["other"]),
        ]
        result = await c.call(
            "config.set", session_id=sid, key="model", value=f"large --provider {work.id}"
        )
        assert result == {"value": "large", "warning": "", "scope": "session"}
        info = [e for e in c.of(sid) if e["type"] == "session.info"][-1]["payload"]
        assert info["model"] == "large"  # the header changes before the next turn
        await c.call("prompt.submit", session_id=sid, text="hello")
        done = await c.wait_event("message.complete", sid)
        assert fake.requests[-1]["model"] == "large"
        assert done["payload"]["usage"]["model"] == "large"  # the footer names it
        # Another session keeps the default.
        other = (await c.call("session.create"))["session_id"]
        await c.call("prompt.submit", session_id=other, text="hi")
        await c.wait_event("message.complete", other)
        assert fake.requests[-1]["model"] == "small"
        stored = created["stored_session_id"]
    # The choice is the session's for good: a restarted gateway resumes it with it.
    async with _gateway(tmp_path / "gw", config) as gw, client(gw.url) as c:
        resumed = await c.call("session.resume", session_id=stored)
        assert resumed["info"]["model"] == "large"
        await c.call("prompt.submit", session_id=resumed["session_id"], text="again")
        await c.wait_event("message.complete", resumed["session_id"])
        assert fake.requests[-1]["model"] == "large"
        assert spare.id  # (the second provider's id is stable)


async def test_a_model_is_named_in_words_when_it_cannot_be_switched(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    config = tmp_path / "config"
    _configure(config, fake.base_url)
    async with _gateway(tmp_path / "gw", config) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        with pytest.raises(RpcFailure) as unknown:
            await c.call("config.set", session_id=sid, key="model", value="x --provider nope")
        assert "no provider 'nope' is set up" in unknown.value.message
        fake.chunk_delay = 0.2
        await c.call("prompt.submit", session_id=sid, text="slow")
        await c.wait_event("message.start", sid)
        with pytest.raises(RpcFailure) as busy:
            await c.call("config.set", session_id=sid, key="model", value="large")
        assert busy.value.code == 4009 and "while a reply is running" in busy.value.message


async def test_without_a_provider_the_header_says_so_and_nothing_is_offered(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config"
    async with _gateway(tmp_path / "gw", config) as gw, client(gw.url) as c:
        created = await c.call("session.create")
        assert (created["info"]["model"], created["info"]["provider"]) == (
            "built-in model",
            "no provider set",
        )
        options = await c.call("model.options", session_id=created["session_id"])
        assert options["providers"] == []


async def test_adding_a_provider_shows_its_model_without_a_restart(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    config = tmp_path / "config"
    async with _gateway(tmp_path / "gw", config) as gw, client(gw.url) as c:
        sid = (await c.call("session.create"))["session_id"]
        _configure(config, fake.base_url)  # the settings dialog saved a provider
        options = await c.call("model.options", session_id=sid)
        assert options["model"] == "small"
