"""The OpenAI-compatible provider against a fake provider on loopback, behind a fault proxy."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from desktop.gateway.providers.base import ChatMessage, ChunkKind, ProviderError
from desktop.gateway.providers.openai import OpenAICompatibleProvider
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import FaultProxy, tcp_states

HELLO = [ChatMessage("user", "hello")]
SECRET = "sk-test-secret-123"


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(reply="The quick brown fox jumps over the lazy dog.") as server:
        yield server


def provider(url: str, **kwargs: float) -> OpenAICompatibleProvider:
    kwargs.setdefault("idle_timeout", 0.5)
    kwargs.setdefault("connect_timeout", 2.0)
    return OpenAICompatibleProvider("acme", url, SECRET, "fake-model", **kwargs)


async def collect(p: OpenAICompatibleProvider) -> tuple[str, str]:
    text, thinking = [], []
    async for chunk in p.stream(HELLO):
        (text if chunk.kind is ChunkKind.TEXT else thinking).append(chunk.text)
    return "".join(text), "".join(thinking)


async def test_streams_text_thinking_and_usage(fake: FakeOpenAIServer) -> None:
    fake.reasoning = "Let me think."
    p = provider(fake.base_url)
    try:
        assert await collect(p) == (fake.reply, "Let me think.")
    finally:
        await p.aclose()
    body = fake.requests[-1]
    assert body["stream"] is True and body["model"] == "fake-model"
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert p.last_usage is not None and p.last_usage.completion_tokens > 0


async def test_keepalive_socket_options_are_set_on_provider_sockets(fake: FakeOpenAIServer) -> None:
    p = provider(fake.base_url)
    try:
        await collect(p)
        assert p._pool is not None
        conns = p._pool.client._transport._pool.connections  # type: ignore[attr-defined]
        stream = conns[0]._connection._network_stream
        sock = stream.get_extra_info("socket")
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 10
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 3
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 30000
    finally:
        await p.aclose()


async def test_p1_idle_keepalive_closed_by_provider_next_request_succeeds(
    fake: FakeOpenAIServer,
) -> None:
    p = provider(fake.base_url)
    try:
        await collect(p)
        assert await asyncio.to_thread(fake.close_idle_keepalive) == 1
        assert "CLOSE_WAIT" in tcp_states(fake.port)  # the pooled socket is now half-closed
        assert (await collect(p))[0] == fake.reply
        assert len(fake.requests) == 2
        assert "CLOSE_WAIT" not in tcp_states(fake.port)
    finally:
        await p.aclose()


async def test_p2_blackhole_mid_stream_detected_by_idle_timeout(fake: FakeOpenAIServer) -> None:
    fake.set_reply("word " * 200, chunk_delay=0.01)
    with FaultProxy(fake.port) as proxy:
        p = provider(f"http://127.0.0.1:{proxy.port}/v1", idle_timeout=0.5)
        got: list[str] = []
        try:
            with pytest.raises(ProviderError) as info:
                async for chunk in p.stream(HELLO):
                    got.append(chunk.text)
                    if len(got) == 3:
                        proxy.set_mode("blackhole", direction="down")
            assert info.value.transport and "sent nothing for 0.5 s" in str(info.value)
            assert 3 <= len(got) < 100  # the answer stopped part-way
            assert p.rebuilds == 1
            proxy.set_mode("pass")
            assert (await collect(p))[0] == fake.reply  # a fresh pool, a fresh socket
        finally:
            await p.aclose()


async def test_p3_reset_mid_stream_is_a_transport_error(fake: FakeOpenAIServer) -> None:
    fake.reset_after_chunks = 2
    p = provider(fake.base_url)
    try:
        with pytest.raises(ProviderError) as info:
            await collect(p)
        assert info.value.transport
        # In words, not the exception's class name (RemoteProtocolError, ReadError).
        assert str(info.value) == "acme closed the stream before the answer was complete"
        fake.clear_faults()
        assert (await collect(p))[0] == fake.reply
    finally:
        await p.aclose()


async def test_p3_refused_is_a_transport_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = provider(f"http://127.0.0.1:{port}/v1")
    try:
        with pytest.raises(ProviderError) as info:
            await collect(p)
        assert info.value.transport
        assert str(info.value) == f"cannot reach 127.0.0.1:{port}: connection refused"
    finally:
        await p.aclose()


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_p3_server_errors_and_rate_limits_are_transport_errors(
    fake: FakeOpenAIServer, status: int
) -> None:
    fake.status = status
    p = provider(fake.base_url)
    try:
        with pytest.raises(ProviderError) as info:
            await collect(p)
        assert info.value.transport and info.value.status == status
    finally:
        await p.aclose()


@pytest.mark.parametrize(
    ("status", "message"),
    [(401, "acme refused the API key"), (404, "unknown model 'fake-model'"), (400, "HTTP 400")],
)
async def test_request_errors_end_the_turn_with_a_clear_message(
    fake: FakeOpenAIServer, status: int, message: str
) -> None:
    fake.status = status
    p = provider(fake.base_url)
    try:
        with pytest.raises(ProviderError) as info:
            await collect(p)
        assert not info.value.transport and message in str(info.value)
        assert SECRET not in str(info.value)
        assert len(fake.requests) == 1  # sent once, never retried
        assert p.rebuilds == 0
    finally:
        await p.aclose()


async def test_key_sent_as_bearer_and_never_in_repr(fake: FakeOpenAIServer) -> None:
    p = provider(fake.base_url)
    try:
        assert SECRET not in repr(p)
        await p.probe()
        assert fake.hits == ["GET /v1/models"]
    finally:
        await p.aclose()


async def test_probe_fails_on_5xx_and_succeeds_on_404(fake: FakeOpenAIServer) -> None:
    p = provider(fake.base_url)
    try:
        fake.status = 503
        with pytest.raises(ProviderError):
            await p.probe()
        fake.status = 404  # a server without /models is still reachable
        await p.probe()
    finally:
        await p.aclose()


async def test_abandoned_stream_is_closed_cleanly_and_provider_stays_usable(
    fake: FakeOpenAIServer,
) -> None:
    fake.set_reply("word " * 100, chunk_delay=0.001)
    p = provider(fake.base_url)
    try:
        gen = p.stream(HELLO)
        assert (await anext(gen)).text == "word wor"  # type: ignore[call-overload]
        await gen.aclose()  # type: ignore[attr-defined]
        assert (await collect(p))[0] == fake.reply
    finally:
        await p.aclose()
