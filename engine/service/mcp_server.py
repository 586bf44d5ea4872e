"""The agent's API as an MCP server (official `mcp` SDK 2.x, `MCPServer`) over a `Memory`.

Nine tools, each a thin call of one public `Memory` method, with pydantic-validated inputs:

    memory_append  memory_context  memory_find  memory_read  memory_evidence
    memory_organize  memory_status  memory_project_approve  memory_busy

Every tool answers synchronously from SQLite: recall never waits on the worker (WAL lets readers
run beside a batch's commit). A sqlite3 connection is never used by two threads at once: each
call borrows its own `Memory` from a `MemoryPool` (one connection each, opened lazily, so
`initialize` is answered before the database is even opened). Calls that write (append,
organize, approve, busy) run on a worker thread, as they may wait for SQLite's write lock.
find, read and evidence never wait on a lock under WAL and stay short, so they run on the
event loop with an idle Memory when one is free (the thread hop costs about as much as a small
find), and on a worker thread otherwise. status (PRAGMA quick_check) and context (the
timeline view) grow with the memory, so they run on a worker thread like the writes.

No secret-looking value leaves: every read of `Memory` masks unless asked to reveal, and no
tool asks (none takes a reveal argument). A refusal is not a read: its message may quote what
the caller asked for (a key, a query), so it is masked on its way out (`_refusals`).

One vocabulary: a tool that names a record takes `id` (a unique name or alias too, as the CLI
takes it); approve's old `project_id` is still accepted, deprecated and logged. Errors the
model can act on come back as a tool result with `isError` and one clear line: an argument the
tool does not take is named (never silently dropped: `ocurred_at` once stored an event "now"),
arguments that fail the schema name each bad field and what is allowed (never echoing the
value); an engine refusal (`MemvaultError`: too long, unknown id, ...) keeps its own message.
`memory_busy(true)` is held by the session that set it and ends with it
(memvault.service.sessions).

Transports: `run_stdio(server)` for agent hosts that start `memvault mcp` (every frame is
checked before the SDK sees it: the SDK drops a frame it cannot parse without a word, so a bad
one is answered with a JSON-RPC error naming the problem: memvault.service.stdio_frames);
`http_app(...)` for streamable HTTP at /mcp on 127.0.0.1 or a Unix socket (memvault.service.host
serves it; `GET /` says where MCP lives and which auth it needs), with an optional static bearer
token checked by the SDK's own bearer middleware (401 without it; memvault.service.auth).
`open_client` (memvault.service.client) connects an `mcp.Client` to a running service.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from importlib.metadata import version
from typing import Annotated, Any, Literal, NotRequired, TypedDict, TypeVar

import anyio
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AnyHttpUrl, Field, ValidationError
from starlette.responses import JSONResponse

from ..base.errors import MemvaultError
from ..home.memory import Memory
from ..secrets.detector import mask_secrets
from ..timeline.events import NewEvent
from .auth import StaticTokenVerifier
from .client import ToolCallFailed as ToolCallFailed  # re-exported: callers import them here
from .client import open_client as open_client
from .client import tool_payload as tool_payload
from .pool import DEFAULT_POOL_SIZE as DEFAULT_POOL_SIZE
from .pool import MemoryPool as MemoryPool
from .pool import SpacePools
from .sessions import BusySessions
from .stdio_frames import serve_stdio

log = logging.getLogger("memvault.mcp")

TOOL_NAMES = (
    "memory_append", "memory_context", "memory_find", "memory_read", "memory_evidence",
    "memory_organize", "memory_status", "memory_project_approve", "memory_busy",
)
INSTRUCTIONS = (
    "memvault is your long-term memory. Append every turn worth keeping with memory_append "
    "(raw text, never rewritten). memory_context is what you always carry: the core files "
    "AGENTS.md, SOUL.md, USER.md, a bounded object directory and the hot timeline (its `notice` "
    "says what the view cut). Recall is lexical and synchronous: memory_find (names, aliases, "
    "cues; Chinese or English), then memory_read (a profile) and memory_evidence (raw text). "
    "A schedule's or todo's `state` says whether it is still ahead: cancelled, done, dropped "
    "or past ones are not upcoming plans. "
    "memory_organize only queues work and returns a receipt; memory_status shows progress. "
    "Say memory_busy(true) while you are working so background batches wait, and false after. "
    "A new project stays a candidate until you ask your user and call memory_project_approve."
)
ObjectType = Literal["person", "task", "todo", "schedule", "knowledge", "project", "credential"]
HitType = Literal["person", "task", "todo", "schedule", "knowledge", "project", "credential",
                  "event"]
T = TypeVar("T")
MCP_PATH = "/mcp"  # where streamable HTTP is served; GET / points here


# -- the server ---------------------------------------------------------------------------------
class MemvaultMCP(MCPServer[Any]):
    """`MCPServer` over a `MemoryPool`, whose argument-validation errors name the fields and
    limits, never the values."""

    def __init__(self, pool: MemoryPool, name: str = "memvault", **options: Any) -> None:
        with _quiet_sdk_logging():
            super().__init__(name, instructions=INSTRUCTIONS, version=_version(),
                             log_level="WARNING", **options)
        self.pool = pool
        # each call borrows from its request's pool: a token bound to a space gets its own
        self.pools = SpacePools(pool)
        self.busy_sessions = BusySessions(lambda: _clear_busy(pool))
        _register_tools(self, self.pools.current, self.busy_sessions)
        for tool in self._tool_manager.list_tools():
            # hosts that check arguments against the schema refuse unknown ones before sending
            tool.parameters["additionalProperties"] = False

    async def run_stdio_async(self) -> None:
        """Serve over stdin/stdout, answering frames the SDK cannot read (see `run_stdio`)."""
        await run_stdio(self)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        """Call a tool; unknown arguments and argument-validation failures come back as one
        clear line (an unknown argument is never silently dropped: `ocurred_at` would have
        stored the event "now")."""
        unknown = self._unknown_arguments(name, arguments)
        if unknown:
            unknown = mask_secrets(unknown)  # an argument's name is the caller's own text
            log.info("tool_rejected", extra={"fields": {"tool": name, "error": unknown}})
            raise ToolError(unknown)
        if name == "memory_project_approve":
            arguments = _approve_arguments(arguments)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                message = explain_validation(name, cause)
                log.info("tool_rejected", extra={"fields": {"tool": name, "error": message}})
                raise ToolError(message) from cause
            raise

    def _unknown_arguments(self, name: str, arguments: dict[str, Any]) -> str | None:
        """The refusal of arguments `name` does not take, naming each (None when all known)."""
        tool = self._tool_manager.get_tool(name)
        if tool is None or not arguments:
            return None
        allowed = sorted(tool.parameters.get("properties", {}))
        unknown = [key for key in arguments if key not in allowed]
        if not unknown:
            return None
        said = []
        for key in unknown[:8]:
            close = difflib.get_close_matches(key, allowed, n=1)
            shown = key if len(key) <= 64 else key[:64] + "…"
            said.append(f"{shown} (did you mean {close[0]}?)" if close else shown)
        if len(unknown) > 8:
            said.append(f"and {len(unknown) - 8} more")
        takes = ", ".join(allowed) or "no arguments"
        noun = "argument" if len(unknown) == 1 else "arguments"
        return (f"invalid arguments for {name}: unknown {noun} {', '.join(said)}; "
                f"it takes {takes}")


def explain_validation(tool: str, error: ValidationError) -> str:
    """One clause per bad field: where, and what is allowed (the rejected value is not repeated).
    A field that takes either of two types lists both requirements, joined by "or"."""
    problems: dict[str, list[str]] = {}
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for i, p in enumerate(item["loc"])
                         if i == 0 or not _is_type_tag(p)) or "arguments"
        messages = problems.setdefault(where, [])
        if item["msg"] not in messages:
            messages.append(item["msg"])
    return f"invalid arguments for {tool}: " + "; ".join(
        f"{where}: {' or '.join(messages)}" for where, messages in problems.items())


_TYPE_TAGS = {"str", "int", "float", "bool", "dict", "list", "none", "literal"}


def _is_type_tag(part: object) -> bool:
    """pydantic names union members in an error's location ('constrained-str', 'int')."""
    return isinstance(part, str) and (part in _TYPE_TAGS or not part.isidentifier())


def build_server(source: Memory | MemoryPool, *, bearer_token: str | None = None,
                 space_tokens: Mapping[str, str] | None = None,
                 name: str = "memvault") -> MemvaultMCP:
    """The MCP server with the nine memory tools over `source` (a Memory or a MemoryPool).

    With `bearer_token`, the HTTP app it makes answers 401 to any request without
    `Authorization: Bearer <token>` (stdio is unaffected: whoever starts it owns it).
    `space_tokens` (token -> space) are more tokens, each binding its requests to its space:
    their calls borrow Memories bound to it (`source` must be a pool `MemoryPool.for_home`
    made).
    """
    pool = source if isinstance(source, MemoryPool) else MemoryPool.wrap(source)
    auth: dict[str, Any] = {}
    if bearer_token or space_tokens:
        # Resource-server-only auth: no OAuth routes, no metadata; issuer_url is required by
        # the settings model but unused without an authorization-server provider.
        auth = {"token_verifier": StaticTokenVerifier(bearer_token, space_tokens),
                "auth": AuthSettings(issuer_url=AnyHttpUrl("http://127.0.0.1"),
                                     resource_server_url=None, required_scopes=[])}
    server = MemvaultMCP(pool, name, **auth)
    server.custom_route("/", methods=["GET"])(_index(bearer=bool(bearer_token or space_tokens)))
    return server


def _index(bearer: bool) -> Callable[[Any], Any]:
    """GET /: where MCP lives and what auth it needs (no secret, so no auth: a person or a host
    that tries the bare URL learns what to do instead of reading a bare 404)."""
    if bearer:
        how = ("send Authorization: Bearer <token>; `memvault serve --print-config` prints a "
               "host config carrying it")
    else:
        how = "none: started with --no-auth, or on a Unix socket (file permissions guard it)"
    body = {"service": "memvault", "version": _version(), "mcp": MCP_PATH,
            "transport": "streamable-http (POST JSON-RPC to the mcp path)",
            "auth": "bearer" if bearer else "none", "how": how}

    async def index(request: Any) -> Any:
        return JSONResponse(body)

    return index


class AppendAnswer(TypedDict):
    """memory_append's answer."""

    event_id: int
    skipped: NotRequired[bool]  # only when true: the key was stored already with this text


class BusyAnswer(TypedDict):
    """memory_busy's answer."""

    busy: bool
    other_sessions_busy: NotRequired[int]  # sessions still busy after this one said false


def _result(data: Mapping[str, Any] | list[Any]) -> CallToolResult:
    """A tool answer: the data as structured content, and as compact JSON text for hosts that
    read only text (no indentation: every byte of it is the model's context).

    The answers arrive masked: every read of `Memory` masks secret-looking values unless
    asked to reveal, and nothing here asks (no tool takes a reveal argument)."""
    text = json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=data if isinstance(data, dict) else {"result": data})


def _call(pool: MemoryPool, tool: str, fn: Callable[[Memory], T]) -> T:
    """Run `fn` on a borrowed Memory; an engine refusal becomes the tool's error message.

    A number too large for SQLite (an id like "99999999999999999999999" that passed the
    schema as a string) is a refusal too, not an unexpected failure."""
    with _refusals(tool):
        with pool.borrow() as mem:
            return fn(mem)


async def _read(pool: MemoryPool, tool: str, fn: Callable[[Memory], T]) -> T:
    """Run a read-only `fn` on the event loop with an idle Memory (no thread hop), or on a
    worker thread when every Memory is lent (never block the loop waiting for one)."""
    with _refusals(tool):
        with pool.borrow_idle() as mem:
            if mem is not None:
                return fn(mem)
    return await anyio.to_thread.run_sync(_call, pool, tool, fn)


@contextmanager
def _refusals(tool: str) -> Iterator[None]:
    """Turn an engine refusal (or an out-of-range number) into the tool's one-line error."""
    try:
        yield
    except MemvaultError as exc:
        # masked: a refusal may quote what was asked for (a key, a query), stored text or not
        message = mask_secrets(str(exc))
        log.info("tool_refused", extra={"fields": {"tool": tool, "error": message}})
        raise ToolError(message) from exc
    except OverflowError as exc:
        message = f"a number is out of range: {exc}"
        log.info("tool_refused", extra={"fields": {"tool": tool, "error": message}})
        raise ToolError(message) from exc


READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
APPEND = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                         open_world_hint=False)
SETTING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                          open_world_hint=False)

SQLITE_MAX_INT = 2**63 - 1
RecordId = Annotated[
    Annotated[str, Field(min_length=1, max_length=200)]
    | Annotated[int, Field(ge=1, le=SQLITE_MAX_INT, strict=True)],  # strict: true is not 1
    Field(description="an object id, type:slug (e.g. person:zhang-wei), a unique name or "
                      "alias, or an event id (42 or event:42)"),
]
Offset = Annotated[int, Field(ge=0, le=10_000_000, description="from an earlier answer's "
                                                               "next_offset; 0 = start")]


def _register_tools(server: MCPServer[Any], pick: Callable[[], MemoryPool],
                    sessions: BusySessions) -> None:
    """Define the nine tools (names exactly as the spec gives them), each calling on the pool
    `pick` gives for the request being served (its token's space)."""

    @server.tool(annotations=APPEND)
    def memory_append(
        text: Annotated[str, Field(min_length=1, max_length=32_000,
                                   description="the raw event text (at most 32,000 chars)")],
        occurred_at: Annotated[str | None, Field(
            max_length=64, description="ISO 8601 time it happened, with offset "
                                       "(e.g. 2026-10-13T12:30:00+08:00); default now")] = None,
        source: Annotated[str, Field(min_length=1, max_length=64,
                                     description="who said it: user, assistant, tool, ...")
                          ] = "user",
        kind: Annotated[str, Field(min_length=1, max_length=64,
                                   description="message, tool_result, note, ...")] = "message",
        meta: Annotated[dict[str, Any] | None, Field(
            description="optional JSON object kept verbatim with the event")] = None,
        key: Annotated[str | None, Field(
            min_length=1, max_length=200,
            description="your message id (at most 200 chars): a key already stored with the "
                        "same text returns that event (skipped: true) and stores nothing; "
                        "with other text it is refused")] = None,
    ) -> CallToolResult:
        """Append one event to memory (immutable raw text; it enters the hot timeline)."""
        event = NewEvent(text, occurred_at, source, kind, meta, key)
        done = _call(pick(), "memory_append", lambda m: m.append([event]))
        # `skipped` only when true: every byte of the answer is the model's context
        answer = AppendAnswer(event_id=done.ids[0])
        if done.skipped:
            answer["skipped"] = True
        return _result(answer)

    @server.tool(annotations=READ_ONLY)
    def memory_context() -> CallToolResult:
        """The resident context: core files, a bounded object directory and the hot timeline
        view (its `notice`/cut fields say explicitly what did not fit)."""
        # on a thread: the timeline view grows with an uncompacted timeline (seconds at 200k)
        return _result(_call(pick(), "memory_context", lambda m: m.resident_context()))

    @server.tool(annotations=READ_ONLY)
    async def memory_find(
        query: Annotated[str, Field(min_length=1, max_length=1_000,
                                    description="names, aliases, terms or cues; Chinese or "
                                                "English (a 2-character name is a query)")],
        types: Annotated[list[HitType] | None, Field(
            max_length=8, description="only these object types, and/or 'event' for raw "
                                      "events")] = None,
        project: Annotated[str | None, Field(
            max_length=140, description="only this project, its direct members and the events "
                                        "they cite")] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="most hits returned")] = 20,
    ) -> CallToolResult:
        """Lexical recall: ranked hits over objects and raw events."""
        return _result(await _read(pick(), "memory_find",
                                   lambda m: m.find(query, types=types, project=project,
                                                    limit=limit)))

    @server.tool(annotations=READ_ONLY)
    async def memory_read(id: RecordId, offset: Offset = 0) -> CallToolResult:
        """An object's profile, relations and evidence list, or an event's text (paged by
        offset: pass the answer's next_offset)."""
        return _result(await _read(pick(), "memory_read", lambda m: m.read(str(id), offset)))

    @server.tool(annotations=READ_ONLY)
    async def memory_evidence(id: RecordId, offset: Offset = 0) -> CallToolResult:
        """The raw text behind an object's evidence, or one event's text and the objects
        citing it (paged by offset)."""
        return _result(await _read(pick(), "memory_evidence",
                                   lambda m: m.evidence(str(id), offset)))

    @server.tool(annotations=APPEND)
    def memory_organize(
        mode: Annotated[Literal["organize", "deep"], Field(
            description="organize: compact the raw turns now on the hot timeline (they "
                        "become summary heads), then file them and every queued event into "
                        "objects; deep: review all objects")] = "organize",
        scope: Annotated[str | None, Field(
            max_length=2_000, description="a goal and retrieval hint for the model, not a "
                                          "filter")] = None,
        retry_blocked: Annotated[bool, Field(
            description="unblock blocked events once (after their cause is fixed)")] = False,
    ) -> CallToolResult:
        """Queue an organize or deep job; returns the enqueue receipt only (work happens in
        the background; watch memory_status)."""
        return _result(_call(pick(), "memory_organize",
                             lambda m: m.organize(mode, scope, retry_blocked)))

    @server.tool(annotations=READ_ONLY)
    def memory_status() -> CallToolResult:
        """Counts per state, the oldest unfinished records, jobs and the timeline's size.
        Bound to a space, every count is of the spaces you see (`bound` says which), and
        jobs, batches, model usage, the vault, the graph revision and the database file's
        sizes are left out: they are the whole home's."""
        # on a thread: status runs PRAGMA quick_check, which grows with the database
        return _result(_call(pick(), "memory_status", lambda m: m.status()))

    @server.tool(annotations=SETTING)
    def memory_project_approve(
        id: Annotated[str | None, Field(
            min_length=1, max_length=200,
            description="the candidate project: project:slug, or its unique name or alias"
        )] = None,
        project_id: Annotated[str | None, Field(
            min_length=1, max_length=200,
            description="deprecated: the old name of `id`, still accepted")] = None,
    ) -> CallToolResult:
        """Activate a candidate project, after asking your user (nothing else activates one).
        Takes `id` like the other tools (`project_id` is deprecated)."""
        ref = str(id or project_id)  # exactly one of them: MemvaultMCP.call_tool checked
        return _result(_call(pick(), "memory_project_approve", lambda m: m.approve_project(ref)))

    @server.tool(annotations=SETTING)
    async def memory_busy(
        busy: Annotated[bool, Field(description="true while you work on a turn, false after")],
        ctx: Context,
    ) -> CallToolResult:
        """Say whether you are busy: while busy, the worker claims no new batch. The flag ends
        with your session (and lapses by itself after 10 minutes)."""
        session = sessions.session_of(ctx)
        if busy:
            sessions.hold(session)
            still = 0
        else:
            still = sessions.release(session)
        if busy or not still:  # false from one session leaves another session's busy on
            await anyio.to_thread.run_sync(
                _call, pick(), "memory_busy", lambda m: m.set_busy(busy))
        answer = BusyAnswer(busy=busy)
        if still:
            answer["other_sessions_busy"] = still
        return _result(answer)


def _approve_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """memory_project_approve's arguments with the deprecated `project_id` renamed `id` (and
    logged); exactly one of the two must be given."""
    if "project_id" not in arguments:
        if "id" not in arguments:
            raise ToolError("invalid arguments for memory_project_approve: id: Field required")
        return arguments
    if "id" in arguments:
        raise ToolError("invalid arguments for memory_project_approve: give id only "
                        "(project_id is its deprecated name)")
    log.info("deprecated_argument", extra={"fields": {
        "tool": "memory_project_approve", "argument": "project_id", "use": "id"}})
    renamed = dict(arguments)
    renamed["id"] = renamed.pop("project_id")
    return renamed


async def _clear_busy(pool: MemoryPool) -> None:
    """Clear the busy flag, as memory_busy(false) does (on a thread: it writes)."""
    await anyio.to_thread.run_sync(_call, pool, "memory_busy", lambda m: m.set_busy(False))


# -- transports ---------------------------------------------------------------------------------
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def local_security() -> TransportSecuritySettings:
    """DNS-rebinding protection that accepts loopback Host headers, with or without a port
    (a Unix-socket client sends a bare `Host: localhost`)."""
    hosts = [h for name in LOCAL_HOSTS for h in (name, f"{name}:*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts,
        allowed_origins=[o for name in LOCAL_HOSTS for o in (f"http://{name}",
                                                             f"http://{name}:*")],
    )


def remote_security() -> TransportSecuritySettings:
    """Off loopback (`serve --host` with TLS): the Host header is whatever name other devices
    reach this machine by, so it is not checked; every call there carries a bearer token
    (serve refuses --no-auth off loopback), which a rebinding web page cannot send."""
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def http_app(server: MCPServer[Any], path: str = MCP_PATH, remote: bool = False) -> Any:
    """The streamable-HTTP Starlette app (JSON responses, sessions) for `server`; `remote`:
    served off loopback (remote_security)."""
    return server.streamable_http_app(
        streamable_http_path=path, json_response=True,
        transport_security=remote_security() if remote else local_security())


async def run_stdio(server: MCPServer[Any]) -> None:
    """Serve over this process's stdin/stdout until the host closes stdin; a frame the SDK
    cannot read gets a JSON-RPC error reply (memvault.service.stdio_frames). A busy flag set
    over it ends when the host closes stdin."""
    if isinstance(server, MemvaultMCP):
        async with server.busy_sessions.serving_stdio():
            await serve_stdio(server)
    else:
        await serve_stdio(server)


# -- helpers ------------------------------------------------------------------------------------
@contextmanager
def _quiet_sdk_logging() -> Iterator[None]:
    """MCPServer() calls logging.basicConfig(RichHandler) when the root logger has no handler;
    keep a library import from taking over the host's logging."""
    root = logging.getLogger()
    guard = None
    if not root.handlers:
        guard = logging.NullHandler()
        root.addHandler(guard)
    try:
        yield
    finally:
        if guard is not None:
            root.removeHandler(guard)


def _version() -> str:
    try:
        return version("memvault")
    except Exception:  # pragma: no cover - not installed (a source checkout)
        return "0"

