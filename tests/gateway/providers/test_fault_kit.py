"""The shared fault kit: the fake OpenAI server and the TCP fault proxy do what they promise."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from tests.support.fake_openai import FakeOpenAIServer
from tests.support.fault_proxy import FaultProxy


def test_fake_answers_json_models_and_stalls_without_closing() -> None:
    with FakeOpenAIServer(reply="Hi there") as fake, httpx.Client(base_url=fake.base_url) as c:
        body = c.post("/chat/completions", json={"model": "m", "messages": [], "tools": []})
        assert body.json()["choices"][0]["message"]["content"] == "Hi there"
        assert c.get("/models").json()["data"][0]["id"] == "fake-model"
        fake.stall_after_chunks = 1
        got: list[bytes] = []
        body = {"stream": True}
        with (
            pytest.raises(httpx.ReadTimeout),  # silent, not closed
            c.stream("POST", "/chat/completions", json=body, timeout=0.3) as r,
        ):
            for part in r.iter_bytes():
                got.append(part)
        assert b'"role": "assistant"' in b"".join(got)  # the first event came, then silence
    assert fake.hits[-1] == "POST /v1/chat/completions"


def test_proxy_latency_reset_byte_limit_and_slow_close() -> None:
    with FakeOpenAIServer() as fake, FaultProxy(fake.port) as proxy:
        url = f"http://127.0.0.1:{proxy.port}/v1"
        with httpx.Client(base_url=url, timeout=5) as c:
            proxy.set_mode("latency", ms=200, direction="down")
            start = time.monotonic()
            assert c.get("/models").status_code == 200
            assert time.monotonic() - start >= 0.2
            assert proxy.connections == 1
            proxy.set_mode("reset")
            assert proxy.wait_until(lambda p: p.connections == 0)
            with pytest.raises(httpx.TransportError):
                c.get("/models")
            proxy.set_mode("byte_limit", limit=20, direction="down")
            with pytest.raises(httpx.RemoteProtocolError):
                c.get("/models")
            proxy.set_mode("pass")
            assert c.get("/models").status_code == 200
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.settimeout(5)
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            reply = b""
            while not reply.endswith(b"]}"):
                reply += s.recv(4096)
            proxy.set_mode("slow_close", ms=300, direction="down")
            assert fake.close_idle_keepalive() == 1  # server FIN, held back by the proxy
            start = time.monotonic()
            assert s.recv(1) == b""
            assert time.monotonic() - start >= 0.25


def test_proxy_blackhole_holds_bytes_until_pass() -> None:
    with (
        FakeOpenAIServer() as fake,
        FaultProxy(fake.port) as proxy,
        socket.create_connection(("127.0.0.1", proxy.port)) as s,
    ):
        proxy.set_mode("blackhole", direction="down")
        s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(0.3)
        with pytest.raises(TimeoutError):
            s.recv(4096)  # the answer is held: no bytes, no FIN, no RST
        assert fake.hits == ["GET /v1/models"] and proxy.connections == 1
        proxy.set_mode("pass")
        s.settimeout(5)
        assert s.recv(4096).startswith(b"HTTP/1.1 200 OK")
