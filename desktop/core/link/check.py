"""A one-off connection test for the settings dialog: connect, wait for gateway.ready, close."""

from __future__ import annotations

import ssl as ssl_lib

from desktop.core.errors import AuthError, ConnectError, GatewayError, InsecureTransportError
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.launcher import HermesServeLauncher, LauncherStartError
from desktop.core.link.profiles import ProfileError, validate_url

TIMEOUT = 15.0


class GatewayCheckError(Exception):
    """The test connection failed; the message names the cause for the user."""


async def check_gateway(
    url: str,
    token: str | None,
    *,
    allow_insecure: bool = False,
    ssl: ssl_lib.SSLContext | None = None,
    launcher: HermesServeLauncher | None = None,
) -> str:
    """Connect once as the app would and return what the user is told on success.

    With a `launcher` (local Hermes) its child is started for the test and stopped after it.
    """
    try:
        if launcher is not None:
            endpoint = await launcher.endpoint()
            url, token = endpoint.url, endpoint.token
        else:
            validate_url(url, allow_insecure=allow_insecure)
        client = JsonRpcGatewayClient(
            url,
            token=token or None,
            allow_insecure=allow_insecure,
            ssl=ssl if url.startswith("wss://") else None,
            connect_timeout=TIMEOUT,
        )
        try:
            caps = await client.connect()
        finally:
            await client.close()
    except (ProfileError, InsecureTransportError) as exc:
        raise GatewayCheckError(str(exc)) from exc
    except AuthError as exc:
        hint = "enter the right token" if token else "this gateway needs a token"
        raise GatewayCheckError(f"the gateway refused the token: {hint} ({exc.reason})") from exc
    except LauncherStartError as exc:
        raise GatewayCheckError(exc.reason) from exc
    except ConnectError as exc:
        raise GatewayCheckError(f"cannot connect: {exc.reason}") from exc
    except GatewayError as exc:
        raise GatewayCheckError(f"cannot connect: {exc}") from exc
    finally:
        if launcher is not None:
            await launcher.close()
    version = f", protocol {caps.protocol_version}" if caps.protocol_version else ""
    return f"Connected: the gateway is ready{version}"
