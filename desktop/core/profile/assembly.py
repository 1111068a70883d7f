"""One profile put together, the one way the app and every test rig do it.

`SharedParts` is what all profiles of a running app share: the store, outbox, drafts,
attachments, clock and connection epochs, and the ports the outbox reaches each profile by.
`assemble_profile` wires one profile from them: gateway clients -> `ConnectionSupervisor` ->
`SessionRouter` (runtime ids recorded in the store) -> `SupervisorPort` -> `ProfileController`.
`link_profile` is the part below the controller, for rigs that drive the outbox themselves.
"""

from __future__ import annotations

import ssl as ssl_lib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop.common.clock import Clock
from desktop.core.chats.router import GoneSink, SessionRouter
from desktop.core.delivery.outbox import Outbox
from desktop.core.delivery.port import SupervisorPort
from desktop.core.disk.attachments import AttachmentStore
from desktop.core.disk.drafts import DraftKeeper
from desktop.core.disk.store import Store
from desktop.core.keys import is_temp_key
from desktop.core.link.channel import TransportFactory
from desktop.core.link.client import JsonRpcGatewayClient
from desktop.core.link.epochs import EpochStore
from desktop.core.link.profiles import Profile, ProfileKind
from desktop.core.link.supervisor import (
    ClientFactory,
    ConnectionSupervisor,
    Endpoint,
    LauncherPort,
)
from desktop.core.profile.controller import ProfileController


@dataclass(frozen=True, slots=True)
class SharedParts:
    """What every profile of one running app shares; closed once, after the profiles."""

    store: Store
    clock: Clock
    epochs: EpochStore
    drafts: DraftKeeper
    attachments: AttachmentStore
    outbox: Outbox
    ports: dict[str, SupervisorPort]  # profile id -> the port the outbox reaches it by

    @classmethod
    def over(cls, store: Store, data: Path, *, clock: Clock, epochs: EpochStore) -> SharedParts:
        """The shared parts over an open `store`, with attachments kept under `data`."""
        ports: dict[str, SupervisorPort] = {}
        return cls(
            store=store,
            clock=clock,
            epochs=epochs,
            drafts=DraftKeeper(store, clock),
            attachments=AttachmentStore(data, store=store),
            outbox=Outbox(store, ports.get, clock, holds=is_temp_key),
            ports=ports,
        )

    def forget(self, profile_id: str) -> None:
        """The profile is gone: the outbox no longer reaches it."""
        self.ports.pop(profile_id, None)

    async def aclose(self) -> None:
        await self.outbox.aclose()
        self.drafts.close()
        self.store.close()


@dataclass(frozen=True, slots=True)
class ProfileLink:
    """A profile's connection: its supervisor, its session router and the port over both."""

    supervisor: ConnectionSupervisor
    router: SessionRouter
    port: SupervisorPort


@dataclass(frozen=True, slots=True)
class AssembledProfile(ProfileLink):
    """A profile's connection and the controller the window talks to."""

    controller: ProfileController


def gateway_clients(
    profile: Profile,
    clock: Clock | None = None,
    *,
    transport_factory: TransportFactory | None = None,
    **options: Any,
) -> ClientFactory:
    """The real JSON-RPC client for each endpoint: the profile's TLS settings for `wss://`,
    `transport_factory` to open every socket (default: the real WebSocket); `options` go to
    `JsonRpcGatewayClient` (timeouts, heartbeat, frame limit)."""
    # A remote profile's context is made now (a bad CA file fails here, as it always did);
    # a local one's only at a `wss://` endpoint, which its loopback `ws://` links never are:
    # loading the CA store costs ~2 MB.
    contexts = [tls_context(profile)] if profile.kind is ProfileKind.REMOTE else []

    def context() -> ssl_lib.SSLContext:
        if not contexts:
            contexts.append(tls_context(profile))
        return contexts[0]

    def clients(endpoint: Endpoint) -> JsonRpcGatewayClient:
        return JsonRpcGatewayClient(
            endpoint.url,
            token=endpoint.token,
            clock=clock,
            allow_insecure=endpoint.allow_insecure,
            ssl=context() if endpoint.url.startswith("wss://") else None,
            transport_factory=transport_factory,
            **options,
        )

    return clients


def tls_context(profile: Profile) -> ssl_lib.SSLContext:
    """How a `wss://` link of `profile` checks the gateway: its CA file, or not at all."""
    tls = profile.tls
    context = ssl_lib.create_default_context(cafile=tls.ca_file or None)
    if not tls.verify:
        context.check_hostname = False
        context.verify_mode = ssl_lib.CERT_NONE
    return context


def link_profile(
    profile: Profile,
    *,
    clients: ClientFactory,
    store: Store,
    epochs: EpochStore,
    clock: Clock,
    launcher: LauncherPort | None = None,
    token: str | None = None,
    random: Callable[[], float] | None = None,
    on_gone: GoneSink | None = None,
) -> ProfileLink:
    """The supervisor (epochs in `epochs`), the router (each runtime id it adopts recorded in
    `store`, where the outbox reads it) and the port over both; nothing started."""
    seams: dict[str, Any] = {} if random is None else {"random": random}
    supervisor = ConnectionSupervisor(
        profile,
        client_factory=clients,
        epoch_store=epochs,
        clock=clock,
        launcher=launcher,
        token=token,
        **seams,
    )

    def record_runtime_id(key: str, runtime: str) -> None:
        store.upsert_session(profile.id, key, runtime_id=runtime)

    router = SessionRouter(supervisor, on_ids=record_runtime_id, on_gone=on_gone, now=clock.wall)
    return ProfileLink(supervisor, router, SupervisorPort(supervisor, router))


def assemble_profile(
    profile: Profile,
    shared: SharedParts,
    *,
    clients: ClientFactory,
    launcher: LauncherPort | None = None,
    token: str | None = None,
    random: Callable[[], float] | None = None,
) -> AssembledProfile:
    """Wire `profile` over `shared`: its link, its port registered with the outbox, and its
    controller (nothing started: `controller.start()` connects)."""
    link = link_profile(
        profile,
        clients=clients,
        store=shared.store,
        epochs=shared.epochs,
        clock=shared.clock,
        launcher=launcher,
        token=token,
        random=random,
    )
    shared.ports[profile.id] = link.port
    controller = ProfileController(
        profile_id=profile.id,
        supervisor=link.supervisor,
        router=link.router,
        port=link.port,
        store=shared.store,
        outbox=shared.outbox,
        drafts=shared.drafts,
        attachments=shared.attachments,
        clock=shared.clock,
    )
    return AssembledProfile(link.supervisor, link.router, link.port, controller)
