"""JSON-RPC method names of the gateway protocol: one spelling for the client and the gateway."""

from __future__ import annotations

# The event every socket gets first.
READY_EVENT = "gateway.ready"

GATEWAY_PING = "gateway.ping"
SESSION_CREATE = "session.create"
SESSION_ACTIVATE = "session.activate"
SESSION_RESUME = "session.resume"
SESSION_HISTORY = "session.history"
SESSION_EVENTS_SINCE = "session.events.since"
SESSION_LIST = "session.list"
SESSION_TITLE = "session.title"
SESSION_DELETE = "session.delete"
SESSION_CLOSE = "session.close"
SESSION_INTERRUPT = "session.interrupt"
# Hermes 0.19-0.22: a new session holding a copy of this one's history, `{session_id, count?,
# name?}`. 0.20.1, 0.21.5 and 0.22.2 copy the first `count` visible rows (user and assistant
# rows with text) and answer `{session_id, stored_session_id, title, parent, message_count,
# messages, info}`; 0.19 ignores `count` (the whole history) and answers `{session_id, title,
# parent}` without a stored id. The embedded gateway has none (-32601).
SESSION_BRANCH = "session.branch"
# Hermes 0.19, 0.20.1, 0.22: put `{text}` into the running turn (the next tool result the model
# reads), `{status: "queued" | "rejected"}`; 0.22 rejects it while no turn runs. The embedded
# gateway has no tool loop and does not serve it (-32601).
SESSION_STEER = "session.steer"
# Hermes 0.19-0.22: summarise the session's history to free context, `{focus_topic?}` ->
# `{status, before_messages, after_messages, before_tokens, after_tokens, usage, info, ...}`;
# 4009 while a turn runs. The embedded gateway has none (-32601).
SESSION_COMPRESS = "session.compress"
# Hermes 0.19/0.20.1 and the embedded gateway: drop the last exchange (the last user row and the
# reply rows after it) from the history, `{removed: N}`; 4009 while a turn runs.
SESSION_UNDO = "session.undo"
# Hermes 0.19-0.22: file checkpoints of the session's directory (taken before the agent's first
# file change in a turn, only with HERMES_TUI_CHECKPOINTS=1 in the gateway's environment):
# list -> {enabled, checkpoints: [{hash, timestamp, message}]}, diff {hash} -> {stat, diff},
# restore {hash, file_path?} -> {success, error?, history_removed?} (4009 for a full restore
# while a turn runs). The embedded gateway has none (-32601).
ROLLBACK_LIST = "rollback.list"
ROLLBACK_DIFF = "rollback.diff"
ROLLBACK_RESTORE = "rollback.restore"
PROMPT_SUBMIT = "prompt.submit"
ATTACHMENTS_CLEAR = "attachments.clear"
IMAGE_ATTACH_BYTES = "image.attach_bytes"
FILE_ATTACH_BYTES = "file.attach_bytes"
# Hermes 0.22: ask to be sent the agent's questions as server->client requests (per socket).
CLIENT_CAPABILITIES = "client.capabilities"
# Hermes 0.22: an approval card is on screen (the gateway's approval timeout runs from here).
APPROVAL_RECEIVED = "approval.received"
# A server->client request, handed to session listeners as an event of this type (never on
# the wire: the payload is `{id, method, params}`, like a snapshot's `open_requests` items).
SERVER_REQUEST_EVENT = "server.request"
# Hermes 0.22: a server->client request withdrawn (`{id, method, reason}`).
REQUEST_CANCEL_EVENT = "request.cancel"
# Hermes 0.22 broadcasts (session_id ""): the stored session list changed (refetch it), and
# an idle session was unloaded (`{session_id, stored_session_id, reason}`: its runtime id is dead).
SESSIONS_CHANGED_EVENT = "sessions.changed"
SESSION_RECLAIMED_EVENT = "session.reclaimed"
# Hermes' own (the embedded gateway does not serve them).
COMMANDS_CATALOG = "commands.catalog"
SLASH_EXEC = "slash.exec"
MODEL_OPTIONS = "model.options"
CONFIG_SET = "config.set"
# Hermes' `{key}` -> `{value}`; `busy` is what Enter does while a reply runs (queue | steer |
# interrupt), kept in the gateway's config (display.busy_input_mode).
CONFIG_GET = "config.get"
# Hermes 0.19-0.22: the session's token usage (`context_used`, `context_max`, `context_percent`
# once a turn ran on this runtime); asked after a resume or reconnect for the context meter.
SESSION_USAGE = "session.usage"
# Hermes' subagents: stop one `{subagent_id, session_id}` -> `{found}` (0.19-0.22); the live
# roster is `delegation.status` -> `{active: [...]}` on 0.19/0.20.1 and `subagent.list
# {session_id}` -> `{subagents: [...]}` on 0.22 (both served by 0.22).
SUBAGENT_INTERRUPT = "subagent.interrupt"
SUBAGENT_LIST = "subagent.list"
DELEGATION_STATUS = "delegation.status"
# Hermes' background processes of a session: `process.list {session_id}` -> `{processes}`,
# `process.kill {session_id, process_id}` (this session's only; `process.stop` kills every
# session's processes on the gateway, so the app does not offer it).
PROCESS_LIST = "process.list"
PROCESS_KILL = "process.kill"
# The embedded gateway's, only when started with --debug.
DEBUG_STATS = "debug.stats"
# The server->client requests (Hermes 0.22) this app shows and answers; any other kind (tour,
# preview.act, theme.pick, vault.*, ...) is refused at once, so the agent is not left waiting
# for a timeout.
SERVER_REQUEST_KINDS = frozenset({"approval", "clarify", "sudo", "secret"})
# The answer to each kind of request the agent asks the user.
RESPOND: dict[str, str] = {
    "approval": "approval.respond",
    "clarify": "clarify.respond",
    "sudo": "sudo.respond",
    "secret": "secret.respond",
}
