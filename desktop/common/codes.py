"""JSON-RPC error codes of the gateway protocol: one home for the client and the gateway."""

from __future__ import annotations

# JSON-RPC 2.0's own.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# The gateway's: a runtime id it does not know (the client's cue to resume by stored id) ...
SESSION_NOT_FOUND = 4001
# ... a stored session it does not know either (deleted: nothing to resume) ...
RESUME_TARGET_NOT_FOUND = 4007
# ... a turn already running in that session (try again shortly) ...
SESSION_BUSY = 4009
# ... another client owns the session's stream ...
STREAM_OWNED = 4091
# ... and a result too large for one frame (the client would have to close its socket on it).
FRAME_TOO_LARGE = 4130
# Hermes 0.22: a param the method's contract does not know ("Extra inputs are not permitted").
# Nothing ran: the request was refused before its handler.
BAD_PARAMS = 4000
# Hermes 0.19-0.22: `process.kill` of a process this session does not own (or that is gone).
NO_SUCH_PROCESS = 4044
# Hermes 0.20+/0.22: `session.delete` of a session still loaded in the gateway (close it first).
SESSION_LIVE = 4023
# Hermes (every line) and the embedded gateway: `prompt.submit{truncate_before_*}` names a user
# turn the history no longer holds (nothing was cut, nothing ran).
TRUNCATE_TARGET_GONE = 4018
