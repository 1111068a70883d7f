"""The JSON-RPC method table of the embedded dialect: parameter checks and result shapes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from desktop import __version__
from desktop.common.codes import METHOD_NOT_FOUND
from desktop.common.methods import (
    ATTACHMENTS_CLEAR,
    CONFIG_SET,
    DEBUG_STATS,
    FILE_ATTACH_BYTES,
    GATEWAY_PING,
    IMAGE_ATTACH_BYTES,
    MODEL_OPTIONS,
    PROMPT_SUBMIT,
    RESPOND,
    SESSION_ACTIVATE,
    SESSION_CLOSE,
    SESSION_CREATE,
    SESSION_DELETE,
    SESSION_EVENTS_SINCE,
    SESSION_HISTORY,
    SESSION_INTERRUPT,
    SESSION_LIST,
    SESSION_RESUME,
    SESSION_TITLE,
    SESSION_UNDO,
)
from desktop.gateway.sessions.attachments import decode_attachment
from desktop.gateway.sessions.hub import SessionHub
from desktop.gateway.sessions.state import Peer
from desktop.gateway.wire.faults import RpcFault, invalid_params
from desktop.gateway.wire.frames import ENVELOPE, page, prompt_cap, tail_start, utf8_size

Handler = Callable[[Peer, dict[str, Any]], dict[str, Any]]
MAX_PROMPT_CHARS = prompt_cap()
SERVER_NAME = "hermes-qt-gateway"

# Most sessions one session.list returns: clients page by asking for a larger limit, so a
# long-lived history (thousands of chats) must fit in one answer.
LIST_LIMIT = 100_000


def ready_payload(epoch: str, methods: Iterable[str] = ()) -> dict[str, Any]:
    """The `gateway.ready` payload every socket gets first; `methods` are those it serves, so
    a client hides what is not there (Branch, Steer) before ever asking."""
    return {
        "heartbeat": True,
        "protocol": {"version": 1},
        "capabilities": {
            "event_replay": True,
            "client_turn_id": False,
            "submission_ref": True,
            "stream_ownership": True,
            "file_attachments": True,
            "history_window": True,
            "methods": sorted(methods),
        },
        "replay_epoch": epoch,
        "server": {"name": SERVER_NAME, "version": __version__},
    }


def _str(params: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = params.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise invalid_params(f"{name} must be a non-empty string")
    return value


def _index(params: dict[str, Any], name: str, *, minimum: int) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise invalid_params(f"{name} must be an integer >= {minimum}")
    return value


def _ref(params: dict[str, Any]) -> str | None:
    ref = params.get("submission_ref")
    if ref is None:
        return None
    if (
        not isinstance(ref, str)
        or not 1 <= len(ref) <= 64
        or not all(33 <= ord(c) < 127 for c in ref)
    ):
        raise invalid_params("submission_ref must be 1-64 printable ASCII characters")
    return ref


class Methods:
    """Maps method names to handlers; every handler is synchronous and quick."""

    def __init__(self, hub: SessionHub, *, debug: bool = False) -> None:
        self._hub = hub
        self._budget = hub.max_frame - ENVELOPE
        self.max_prompt_chars = prompt_cap(hub.max_frame)
        self._table: dict[str, Handler] = {
            GATEWAY_PING: lambda _peer, _params: {"ok": True},
            SESSION_CREATE: self._create,
            SESSION_LIST: self._list,
            SESSION_ACTIVATE: self._activate,
            SESSION_RESUME: self._resume,
            SESSION_HISTORY: self._history,
            SESSION_INTERRUPT: self._interrupt,
            SESSION_UNDO: lambda _peer, params: self._hub.undo(
                self._hub.get(params.get("session_id"))
            ),
            SESSION_CLOSE: self._close,
            SESSION_TITLE: self._title,
            SESSION_DELETE: self._delete,
            SESSION_EVENTS_SINCE: self._events_since,
            PROMPT_SUBMIT: self._submit,
            IMAGE_ATTACH_BYTES: self._attach_image,
            FILE_ATTACH_BYTES: self._attach_file,
            ATTACHMENTS_CLEAR: self._clear_attachments,
            RESPOND["approval"]: self._respond,
            RESPOND["clarify"]: self._respond,
        }
        if hub.models is not None:
            # Hermes' names and shapes, so one client path switches models everywhere.
            self._table[MODEL_OPTIONS] = self._model_options
            self._table[CONFIG_SET] = self._config_set
        if debug:
            self._table[DEBUG_STATS] = lambda _peer, _params: hub.stats()

    def names(self) -> list[str]:
        """Every method this gateway serves."""
        return list(self._table)

    def call(self, peer: Peer, method: str, params: dict[str, Any]) -> dict[str, Any]:
        handler = self._table.get(method)
        if handler is None:
            raise RpcFault(METHOD_NOT_FOUND, f"method not found: {method}")
        return handler(peer, params)

    def _create(self, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        title = params.get("title") or ""
        source = params.get("source") or "desktop"
        if not isinstance(title, str) or not isinstance(source, str):
            raise invalid_params("title and source must be strings")
        session = self._hub.create(
            peer,
            title=title[:200],
            source=source[:64],
            close_on_disconnect=bool(params.get("close_on_disconnect", False)),
        )
        return {
            "session_id": session.runtime_id,
            "stored_session_id": session.stored_id,
            "message_count": 0,
            "messages": [],
            "info": self._hub.info(session),
        }

    def _list(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        limit = params.get("limit", 50)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise invalid_params("limit must be a positive integer")
        rows = self._hub.store.list_sessions(min(limit, LIST_LIMIT))
        return {
            "sessions": [
                {
                    "id": r.id,
                    "title": r.title,
                    "preview": r.preview,
                    "started_at": r.started_at,
                    "updated_at": r.updated_at,
                    "message_count": r.message_count,
                }
                for r in rows
            ]
        }

    def _activate(self, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        session = self._hub.get(params.get("session_id"))
        self._hub.claim(session, peer)
        return self._hub.snapshot(session, omit_messages=bool(params.get("omit_messages")))

    def _resume(self, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        session = self._hub.resume(peer, params.get("session_id"))
        return self._hub.snapshot(session, omit_messages=bool(params.get("omit_messages")))

    def _history(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        """One page of the history, never larger than a frame.

        `offset`/`limit` page forward; without them the newest rows that fit are sent (the
        tail proves whether a prompt ran). `count` is the whole history's length and
        `offset` the index of the first row sent, so a client can page the rest.
        """
        session = self._hub.lookup_any(params.get("session_id"))
        offset = _index(params, "offset", minimum=0)
        limit = _index(params, "limit", minimum=1)
        if offset is None and limit is None:
            rows = [r.to_wire() for r in self._hub.store.messages(session.stored_id)]
            start = tail_start(rows, self._budget)
            return {
                "count": len(rows),
                "offset": start,
                "messages": page(rows, start, len(rows), self._budget),
            }
        # Only the asked rows are read: a page of a 100,000-message session costs what a
        # page of a short one does.
        sliced, total = self._hub.store.message_slice(session.stored_id, offset or 0, limit)
        start = min(offset or 0, total)
        wire = [r.to_wire() for r in sliced]
        return {"count": total, "offset": start, "messages": page(wire, 0, len(wire), self._budget)}

    def _interrupt(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        session = self._hub.get(params.get("session_id"))
        stopped = self._hub.interrupt(session)
        return {"status": "interrupted" if stopped else "not_interrupted"}

    def _close(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        self._hub.close(self._hub.get(params.get("session_id")))
        return {"closed": True}

    def _title(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        session = self._hub.get(params.get("session_id"))
        title = _str(params, "title", required=False)
        if title is not None:
            self._hub.set_title(session, title.strip()[:200])
        return {"title": session.title}

    def _delete(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        session = self._hub.lookup_any(params.get("session_id"))
        self._hub.delete(session)
        return {"deleted": True}

    def _events_since(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        session = self._hub.get(params.get("session_id"))
        last_seen = params.get("last_seen", 0)
        if not isinstance(last_seen, int) or isinstance(last_seen, bool) or last_seen < 0:
            raise invalid_params("last_seen must be a non-negative integer")
        self._hub.turns.flush(session)
        events, complete = session.log.since(last_seen)
        used = 0
        for index, event in enumerate(events):
            used += utf8_size(getattr(event, "frame", ""))
            if used > self._budget:
                # The rest does not fit one frame: the client rebuilds from the snapshot.
                events, complete = events[:index], False
                break
        return {
            "events": events,
            "replay_epoch": self._hub.epoch,
            "complete": complete,
            "last_seq": session.log.last_seq,
        }

    def _submit(self, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        session = self._hub.get(params.get("session_id"))
        text = params.get("text")
        if not isinstance(text, str) or not text.strip():
            raise invalid_params("text must be a non-empty string")
        if len(text) > self.max_prompt_chars:
            raise invalid_params(f"text longer than {self.max_prompt_chars} characters")
        cut = params.get("truncate_before_user_ordinal")
        if cut is not None and (not isinstance(cut, int) or isinstance(cut, bool) or cut < 0):
            raise invalid_params("truncate_before_user_ordinal must be a non-negative integer")
        return self._hub.submit(peer, session, text, _ref(params), truncate_before_user=cut)

    def _attach(self, params: dict[str, Any], *, image: bool) -> dict[str, Any]:
        session = self._hub.get(params.get("session_id"))
        staged = decode_attachment(
            params.get("content_base64"), params.get("filename"), image=image
        )
        count = self._hub.stage(session, staged)
        return {"attached": True, "count": count, **staged.meta.describe()}

    def _attach_image(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        return self._attach(params, image=True)

    def _attach_file(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        return self._attach(params, image=False)

    def _clear_attachments(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        session = self._hub.get(params.get("session_id"))
        return {"cleared": self._hub.clear_staged(session), "count": 0}

    def _model_options(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        return self._hub.model_options(self._hub.get(params.get("session_id")))

    def _config_set(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        session = self._hub.get(params.get("session_id"))
        key = _str(params, "key")
        if key != "model":
            raise invalid_params(f"config key {key!r} is not supported here")
        return self._hub.set_model(session, _str(params, "value") or "")

    def _respond(self, _peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        # The built-in agent runs no tools, so nothing ever waits for an answer.
        return {"ok": True, "resolved": False}
