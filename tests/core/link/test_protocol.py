"""The sans-I/O codec: request encoding, frame decoding, and capabilities from gateway.ready."""

from __future__ import annotations

import json
import math
import sys
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desktop.common import codec
from desktop.common.codec import dumps, loads
from desktop.core.errors import ProtocolError
from desktop.core.link import protocol
from desktop.core.link.dialect import Dialect
from desktop.core.link.protocol import (
    ErrorObject,
    Event,
    Invalid,
    Reply,
    ServerRequest,
    decode_frame,
    encode_event,
    encode_reply,
    encode_request,
)

FRAMES = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"])},
    optional={
        "id": st.one_of(st.integers(), st.text(max_size=4), st.none(), st.booleans()),
        "method": st.sampled_from(["event", "event", "x"]),
        "params": st.one_of(
            st.dictionaries(
                st.sampled_from(["type", "session_id", "payload", "seq", "extra"]),
                st.one_of(
                    st.integers(),
                    st.booleans(),
                    st.text(max_size=4),
                    st.none(),
                    st.just({}),
                    st.just({"text": "hi"}),
                    st.just([1]),
                ),
            ),
            st.just([]),
            st.none(),
        ),
        "result": st.integers(),
    },
)


def test_request_is_one_compact_jsonrpc_object() -> None:
    text = encode_request(7, "prompt.submit", {"session_id": "r1", "text": "héllo"})
    assert "\n" not in text
    assert json.loads(text) == {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "prompt.submit",
        "params": {"session_id": "r1", "text": "héllo"},
    }
    assert "params" not in json.loads(encode_request(1, "session.list"))


def test_result_and_error_replies_decode_with_trailing_newline() -> None:
    assert decode_frame('{"jsonrpc":"2.0","id":3,"result":{"ok":true}}\n') == Reply(
        3, result={"ok": True}
    )
    err = decode_frame(
        '{"jsonrpc":"2.0","id":4,"error":{"code":4009,"message":"busy","data":{"x":1}}}'
    )
    assert err == Reply(4, error=ErrorObject(4009, "busy", {"x": 1}))


def test_event_decodes_type_session_payload_and_seq() -> None:
    text = encode_event("message.delta", {"text": "hi"}, session_id="r1", seq=12)
    ev = decode_frame(text + "\n")
    assert isinstance(ev, Event)
    assert (ev.type, ev.session_id, ev.payload, ev.seq) == (
        "message.delta",
        "r1",
        {"text": "hi"},
        12,
    )
    assert ev.raw["params"]["seq"] == 12
    bare = decode_frame('{"jsonrpc":"2.0","method":"event","params":{"type":"notice"}}')
    assert bare == Event("notice", None, {}, None, bare.raw)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1,2]",
        '{"id":1,"result":{}}',  # no jsonrpc member
        '{"jsonrpc":"2.0","id":1}',  # neither result nor error
        '{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}',
        '{"jsonrpc":"2.0","id":1,"error":{"message":"no code"}}',
        '{"jsonrpc":"2.0","id":true,"result":1}',
        '{"jsonrpc":"2.0","method":"event","params":{"payload":{}}}',  # no type
        '{"jsonrpc":"2.0","method":"event","params":{"type":"x","seq":"7"}}',
        '{"jsonrpc":"2.0","method":"event","params":{"type":"x","payload":[1]}}',
        # A notification other than `event`, and server requests we cannot answer.
        '{"jsonrpc":"2.0","method":"approval","params":{}}',
        '{"jsonrpc":"2.0","id":true,"method":"approval","params":{}}',
        '{"jsonrpc":"2.0","id":"srq-1","method":"approval","params":[1]}',
        '{"jsonrpc":"2.0","id":"srq-1","method":7}',
    ],
)
def test_invalid_frames_are_values_not_exceptions(text: str) -> None:
    assert isinstance(decode_frame(text), Invalid)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
            max_leaves=20,
        ).map(json.dumps),
        st.fixed_dictionaries(
            {"jsonrpc": st.just("2.0")},
            optional={
                "id": st.one_of(st.integers(), st.text(max_size=4), st.none(), st.booleans()),
                "method": st.sampled_from(["event", "x"]),
                "params": st.dictionaries(
                    st.sampled_from(["type", "session_id", "payload", "seq"]),
                    st.one_of(st.integers(), st.text(max_size=4), st.none(), st.just({})),
                ),
                "result": st.integers(),
                "error": st.dictionaries(
                    st.sampled_from(["code", "message", "data"]), st.integers() | st.text()
                ),
            },
        ).map(json.dumps),
    )
)
def test_decode_never_raises_on_arbitrary_input(text: str) -> None:
    frame = decode_frame(text)
    assert isinstance(frame, Reply | Event | ServerRequest | Invalid)
    if isinstance(frame, ServerRequest):
        assert isinstance(frame.method, str) and isinstance(frame.params, dict)
    if isinstance(frame, Reply):
        assert (frame.error is None) or isinstance(frame.error.code, int)
    if isinstance(frame, Event):
        assert isinstance(frame.type, str) and frame.type
        assert isinstance(frame.payload, dict)


def test_a_server_request_decodes_and_routes_as_a_session_event() -> None:
    # Hermes 0.22's approval request, as captured on the wire (abridged).
    text = (
        '{"jsonrpc":"2.0","id":"srq-1d39a961bfc6","method":"approval","params":'
        '{"session_id":"d87c333f","command":"rm -rf /x","request_id":"09d4",'
        '"choices":["once","session","always","deny"]}}'
    )
    frame = decode_frame(text)
    assert isinstance(frame, ServerRequest)
    assert (frame.id, frame.method, frame.session_id) == (
        "srq-1d39a961bfc6",
        "approval",
        "d87c333f",
    )
    event = frame.as_event()
    assert (event.type, event.session_id, event.seq) == ("server.request", "d87c333f", None)
    assert event.payload == {"id": frame.id, "method": "approval", "params": frame.params}
    # The answer is a plain JSON-RPC result reply to the srq id.
    assert json.loads(encode_reply(frame.id, {"choice": "once"})) == {
        "jsonrpc": "2.0",
        "id": "srq-1d39a961bfc6",
        "result": {"choice": "once"},
    }


def test_current_ready_capabilities_are_read_field_by_field() -> None:
    caps = Dialect.from_ready(
        {
            "heartbeat": True,
            "protocol": {"version": 1},
            "capabilities": {"event_replay": True, "client_turn_id": True, "submission_ref": True},
            "replay_epoch": "e-42",
        }
    )
    assert caps.heartbeat and caps.event_replay and caps.client_turn_id and caps.submission_ref
    assert caps.protocol_version == 1
    assert caps.replay_epoch == "e-42"
    assert not caps.stream_ownership


def test_legacy_ready_has_no_heartbeat_and_no_extensions() -> None:
    caps = Dialect.from_ready({"skin": {}, "version": "0.19.0"})
    assert caps == Dialect(raw={"skin": {}, "version": "0.19.0"})
    assert caps.heartbeat is False and caps.protocol_version is None


def test_embedded_top_level_extensions_and_truthy_strings_are_not_true() -> None:
    caps = Dialect.from_ready(
        {"heartbeat": "yes", "submission_ref": True, "stream_ownership": True}
    )
    assert caps.heartbeat is False
    assert caps.submission_ref and caps.stream_ownership


@pytest.mark.parametrize("version", [2, 0, "1"])
def test_unknown_protocol_version_is_refused(version: object) -> None:
    with pytest.raises(ProtocolError) as info:
        Dialect.from_ready({"heartbeat": True, "protocol": {"version": version}})
    assert not info.value.is_retryable()


@settings(max_examples=400, deadline=None)
@given(FRAMES)
def test_event_fast_path_agrees_with_the_full_validation(msg: dict[str, object]) -> None:
    # The per-frame shortcut may only ever return what the field-by-field check returns.
    text = json.dumps(msg)
    assert decode_frame(text) == protocol.decode_checked(loads(text))


@pytest.mark.parametrize("fast", [True, False], ids=["orjson", "stdlib"])
def test_codec_round_trips_the_same_with_and_without_orjson(
    fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not fast:
        monkeypatch.setattr(codec, "orjson", None)
    elif codec.orjson is None:
        pytest.skip("orjson is not installed")
    text = encode_event("message.delta", {"text": "héllo 🌍"}, session_id="r1", seq=3)
    assert "héllo 🌍" in text  # not \u-escaped: smaller frames, same meaning
    assert decode_frame(text) == Event(
        "message.delta", "r1", {"text": "héllo 🌍"}, 3, json.loads(text)
    )
    assert json.loads(encode_reply(5, {"ok": True})) == {
        "jsonrpc": "2.0",
        "id": 5,
        "result": {"ok": True},
    }
    assert json.loads(encode_request(6, "m", {"a": [1, 2.5, None]}))["params"] == {
        "a": [1, 2.5, None]
    }
    # What only the standard library reads or writes still works: NaN, lone surrogates,
    # integers beyond 64 bits on the way out, non-string keys.
    assert math.isnan(loads('{"n": 1, "f": NaN}')["f"])
    assert loads('"\\ud800"') == "\ud800"
    assert loads("18446744073709551615") == 2**64 - 1
    assert dumps({1: 2**70}) == '{"1":1180591620717411303424}'
    assert loads(' {"a": [1]}\r\n') == {"a": [1]}
    assert loads(b"[1]") == [1]
    for bad in ("{not json", '{"a": 1} x', "", " "):
        with pytest.raises(ValueError):
            loads(bad)
    assert isinstance(
        decode_frame(b'{"jsonrpc":"2.0","method":"event","params":{"type":"x"}}'), Event
    )


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=40),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
            max_leaves=10,
        ).map(json.dumps),
    ),
    st.sampled_from(["", " ", "\n", " x", "]", "\t\r\n"]),
)
def test_stdlib_reader_accepts_and_refuses_exactly_what_json_loads_does(
    text: str, tail: str
) -> None:
    text += tail
    try:
        expected: object = json.loads(text)
    except ValueError:
        expected = ValueError
    with mock.patch.object(codec, "orjson", None):
        try:
            got: object = loads(text)
        except ValueError:
            got = ValueError
    assert repr(got) == repr(expected)  # repr: NaN never equals itself


def test_a_lone_surrogate_from_a_gateway_becomes_a_replacement_character() -> None:
    """Hermes writes ASCII JSON, so a lone surrogate arrives escaped; the client could neither
    store it (SQLite refuses it) nor send it on: it is replaced once, at decode."""
    raw = (
        '{"jsonrpc":"2.0","method":"event","params":{"type":"session.info","session_id":"r1",'
        '"payload":{"title":"x\\ud800","tags":["\\uDC00"],"emoji":"\\ud83d\\ude00",'
        '"hangul":"\\ud55c"},"seq":3}}'
    )
    for text in (raw, raw.encode()):
        event = decode_frame(text)
        assert isinstance(event, Event)
        assert event.payload == {
            "title": "x\ufffd",
            "tags": ["\ufffd"],
            "emoji": "\U0001f600",  # a valid pair stays one character
            "hangul": "\ud55c",
        }
        dumps(event.payload).encode("utf-8")  # storable and sendable
    reply = decode_frame('{"jsonrpc":"2.0","id":1,"result":{"\\udfff":"v"}}')
    assert isinstance(reply, Reply) and reply.result == {"\ufffd": "v"}


def test_a_deeply_nested_frame_with_an_escaped_surrogate_is_refused_not_raised() -> None:
    """Hermes writes ASCII JSON, so an emoji arrives as "\\ud83d\\ude00"; 600 levels deep that
    used to raise RecursionError out of decode_frame (which promises never to raise)."""
    deep = '{"a":' * 600 + '"\\ud83d\\ude00"' + "}" * 600
    frame = '{"jsonrpc":"2.0","method":"event","params":{"type":"x","payload":' + deep + "}}"
    assert decode_frame(frame) == Invalid("frame nested too deeply")


def test_the_nesting_verdict_does_not_depend_on_pythons_recursion_limit() -> None:
    """A module that raises the recursion limit (build tools do) once let the 600-deep frame
    through as a valid event of type "x" (row 15 counted 6 of 7 invalid frames in CI)."""
    deep = '{"a":' * 600 + '"\\ud83d\\ude00"' + "}" * 600
    frame = '{"jsonrpc":"2.0","method":"event","params":{"type":"x","payload":' + deep + "}}"
    shallow = '{"a":' * 20 + '"\\ud83d\\ude00"' + "}" * 20
    ok = '{"jsonrpc":"2.0","method":"event","params":{"type":"x","payload":' + shallow + "}}"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        assert decode_frame(frame) == Invalid("frame nested too deeply")
        assert isinstance(decode_frame(ok), Event)
    finally:
        sys.setrecursionlimit(limit)
