"""One-off checks of a provider for the settings dialog: its model list and a tiny real request.

Every failure becomes a ProbeError whose message names the cause in the user's terms (cannot
reach the host, key refused, no such model, not an OpenAI-compatible API), never a bare type.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

TIMEOUT = 15.0
TEST_PROMPT = "Reply with the single word: ok"


class ProbeError(Exception):
    """A provider check failed; the message is meant for the user as it is."""


@dataclass(frozen=True, slots=True)
class ProbeReply:
    text: str
    model: str
    seconds: float


def check_base_url(base_url: str) -> str:
    """The base URL without a trailing slash, or ProbeError saying what is wrong with it."""
    parts = urlsplit(base_url.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ProbeError(
            "the base URL must start with http:// or https:// and name a host, "
            "e.g. https://api.openai.com/v1"
        )
    return base_url.strip().rstrip("/")


async def list_models(
    base_url: str, api_key: str, *, transport: httpx.AsyncBaseTransport | None = None
) -> list[str]:
    """The model ids `GET {base_url}/models` lists, sorted."""
    url = check_base_url(base_url)
    data = await _request("GET", url + "/models", api_key, transport=transport)
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ProbeError(f"{url}/models did not return a model list: is the base URL right?")
    ids = {str(e["id"]) for e in entries if isinstance(e, dict) and e.get("id")}
    if not ids:
        raise ProbeError("the provider lists no models")
    return sorted(ids, key=str.lower)


async def try_chat(
    base_url: str,
    api_key: str,
    model: str,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
) -> ProbeReply:
    """Ask `model` for one word (a real, tiny request) and return what it said."""
    url = check_base_url(base_url)
    if not model.strip():
        raise ProbeError("choose a model first")
    body = {
        "model": model.strip(),
        "messages": [{"role": "user", "content": TEST_PROMPT}],
        "max_tokens": 16,
        "stream": False,
    }
    started = time.monotonic()
    data = await _request(
        "POST", url + "/chat/completions", api_key, body=body, model=model, transport=transport
    )
    try:
        message = data["choices"][0]["message"]
        text = str(message.get("content") or message.get("reasoning_content") or "")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ProbeError("the provider answered, but not with a chat completion") from None
    return ProbeReply(
        " ".join(text.split()), str(data.get("model") or model), time.monotonic() - started
    )


async def _request(
    method: str,
    url: str,
    api_key: str,
    *,
    body: dict[str, Any] | None = None,
    model: str = "",
    transport: httpx.AsyncBaseTransport | None,
) -> Any:
    host = urlsplit(url).netloc
    path = "/" + url.rsplit("/", 1)[1]
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx.AsyncClient(
            timeout=TIMEOUT, transport=transport, follow_redirects=True
        ) as client:
            response = await client.request(method, url, json=body, headers=headers)
    except httpx.ConnectError as exc:
        raise ProbeError(f"cannot reach {host}: {_reason(exc)}") from exc
    except httpx.TimeoutException as exc:
        raise ProbeError(f"{host} did not answer within {TIMEOUT:g} s") from exc
    except httpx.HTTPError as exc:
        raise ProbeError(f"talking to {host} failed: {_reason(exc)}") from exc
    if response.status_code >= 400:
        raise ProbeError(_status_message(response, path, api_key, model))
    try:
        return response.json()
    except ValueError:
        raise ProbeError(
            f"{url} did not answer with JSON: is this an OpenAI-compatible API?"
        ) from None


def _reason(exc: BaseException) -> str:
    """The deepest OS-level cause ("connection refused", "name or service not known")."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and (cause.errno or cause.strerror):
            return (os.strerror(cause.errno) if cause.errno else str(cause.strerror)).lower()
        cause = cause.__cause__ or cause.__context__
    text = str(exc) or type(exc).__name__
    return text.split("] ", 1)[-1].lower()


def _status_message(response: httpx.Response, path: str, api_key: str, model: str) -> str:
    status = response.status_code
    detail = _error_detail(response)
    suffix = f" (HTTP {status}{': ' + detail if detail else ''})"
    if status in (401, 403):
        if not api_key:
            return "the provider needs an API key" + suffix
        return "the provider refused the API key" + suffix
    if status == 404 and path == "/models":
        return "no model list at this base URL: it usually ends in /v1" + suffix
    if status == 404 and model:
        return f"the provider does not know the model {model!r}" + suffix
    if status == 429:
        return "the provider is rate-limiting this key; try again later" + suffix
    if status >= 500:
        return "the provider has a problem right now" + suffix
    return "the provider refused the request" + suffix


def _error_detail(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return ""
    message = error.get("message") if isinstance(error, dict) else error
    return str(message)[:200] if message else ""
