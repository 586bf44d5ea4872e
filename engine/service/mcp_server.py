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
find, issue 17), and on a worker thread otherwise. status (PRAGMA quick_check) and context (the
timeline view) grow with the memory, so they run on a worker thread like the writes.

Errors the model can act on come back as a tool result with `isError` and one clear line:
arguments that fail the schema name each bad field and what is allowed (never echoing the
value); an engine refusal (`MemvaultError`: too long, unknown id, ...) keeps its own message.

Transports: `run_stdio(server)` for agent hosts that start `memvault mcp` (every frame is
checked before the SDK sees it: the SDK drops a frame it cannot parse without a word, so a bad
one is answered with a JSON-RPC error naming the problem: memvault.service.stdio_frames);
`http_app(...)` for streamable HTTP on 127.0.0.1 or a Unix socket (memvault.service.host serves
it), with an optional static bearer token checked by the SDK's own bearer middleware (401
without it). `open_client` connects an `mcp.Client` to a running service, Unix socket included.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from ..base.errors import MemvaultError
from ..home.memory import Memory
from ..timeline.events import NewEvent
from .pool import DEFAULT_POOL_SIZE as DEFAULT_POOL_SIZE  # re-exported: callers import it here
from .pool import MemoryPool as MemoryPool
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
    "memory_organize only queues work and returns a receipt; memory_status shows progress. "
    "Say memory_busy(true) while you are working so background batches wait, and false after. "
    "A new project stays a candidate until you ask your user and call memory_project_approve."
)
ObjectType = Literal["person", "task", "todo", "schedule", "knowledge", "project", "credential"]
HitType = Literal["person", "task", "todo", "schedule", "knowledge", "project", "credential",
                  "event"]
T = TypeVar("T")


# -- the server ---------------------------------------------------------------------------------
class MemvaultMCP(MCPServer[Any]):
    """`MCPServer` over a `MemoryPool`, whose argument-validation errors name the fields and
    limits, never the values."""

    def __init__(self, pool: MemoryPool, name: str = "memvault", **options: Any) -> None:
        with _quiet_sdk_logging():
            super().__init__(name, instructions=INSTRUCTIONS, version=_version(),
                             log_level="WARNING", **options)
        self.pool = pool
        _register_tools(self, pool)

    async def run_stdio_async(self) -> None:
        """Serve over stdin/stdout, answering frames the SDK cannot read (see `run_stdio`)."""
        await run_stdio(self)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        """Call a tool; an argument-validation failure comes back as one clear line."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                message = explain_validation(name, cause)
                log.info("tool_rejected", extra={"fields": {"tool": name, "error": message}})
                raise ToolError(message) from cause
            raise


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


class StaticTokenVerifier:
    """The SDK's `TokenVerifier` for one shared secret (compared in constant time)."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("an empty bearer token protects nothing")
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token for the right secret, None (-> 401) for anything else."""
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token="static", client_id="memvault-agent", scopes=[])
        return None


def build_server(source: Memory | MemoryPool, *, bearer_token: str | None = None,
                 name: str = "memvault") -> MemvaultMCP:
    """The MCP server with the nine memory tools over `source` (a Memory or a MemoryPool).

    With `bearer_token`, the HTTP app it makes answers 401 to any request without
    `Authorization: Bearer <token>` (stdio is unaffected: whoever starts it owns it).
    """
    pool = source if isinstance(source, MemoryPool) else MemoryPool.wrap(source)
    auth: dict[str, Any] = {}
    if bearer_token:
        # Resource-server-only auth: no OAuth routes, no metadata; issuer_url is required by
        # the settings model but unused without an authorization-server provider.
        auth = {"token_verifier": StaticTokenVerifier(bearer_token),
                "auth": AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=None,
                                     required_scopes=[])}
    return MemvaultMCP(pool, name, **auth)


def _result(data: Any) -> CallToolResult:
    """A tool answer: the data as structured content, and as compact JSON text for hosts that
    read only text (no indentation: every byte of it is the model's context)."""
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
        log.info("tool_refused", extra={"fields": {"tool": tool, "error": str(exc)}})
        raise ToolError(str(exc)) from exc
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
    Annotated[str, Field(min_length=1, max_length=140)]
    | Annotated[int, Field(ge=1, le=SQLITE_MAX_INT, strict=True)],  # strict: true is not 1
    Field(description="an object id, type:slug (e.g. person:zhang-wei), or an event id "
                      "(42 or event:42)"),
]
Offset = Annotated[int, Field(ge=0, le=10_000_000, description="from an earlier answer's "
                                                               "next_offset; 0 = start")]


def _register_tools(server: MCPServer[Any], pool: MemoryPool) -> None:
    """Define the nine tools as closures over `pool` (names exactly as the spec gives them)."""

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
        done = _call(pool, "memory_append", lambda m: m.store_events([event]))
        # `skipped` only when true: every byte of the answer is the model's context
        return _result({"event_id": done.ids[0], **({"skipped": True} if done.skipped else {})})

    @server.tool(annotations=READ_ONLY)
    def memory_context() -> CallToolResult:
        """The resident context: core files, a bounded object directory and the hot timeline
        view (its `notice`/cut fields say explicitly what did not fit)."""
        # on a thread: the timeline view grows with an uncompacted timeline (seconds at 200k)
        return _result(_call(pool, "memory_context", lambda m: m.resident_context()))

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
        return _result(await _read(pool, "memory_find",
                                   lambda m: m.find(query, types=types, project=project,
                                                    limit=limit)))

    @server.tool(annotations=READ_ONLY)
    async def memory_read(id: RecordId, offset: Offset = 0) -> CallToolResult:
        """An object's profile, relations and evidence list, or an event's text (paged by
        offset: pass the answer's next_offset)."""
        return _result(await _read(pool, "memory_read", lambda m: m.read(str(id), offset)))

    @server.tool(annotations=READ_ONLY)
    async def memory_evidence(id: RecordId, offset: Offset = 0) -> CallToolResult:
        """The raw text behind an object's evidence, or one event's text and the objects
        citing it (paged by offset)."""
        return _result(await _read(pool, "memory_evidence",
                                   lambda m: m.evidence(str(id), offset)))

    @server.tool(annotations=APPEND)
    def memory_organize(
        mode: Annotated[Literal["organize", "deep"], Field(
            description="organize: file compacted events into objects; deep: review all "
                        "objects")] = "organize",
        scope: Annotated[str | None, Field(
            max_length=2_000, description="a goal and retrieval hint for the model, not a "
                                          "filter")] = None,
        retry_blocked: Annotated[bool, Field(
            description="unblock blocked events once (after their cause is fixed)")] = False,
    ) -> CallToolResult:
        """Queue an organize or deep job; returns the enqueue receipt only (work happens in
        the background; watch memory_status)."""
        return _result(_call(pool, "memory_organize",
                             lambda m: m.organize(mode, scope, retry_blocked)))

    @server.tool(annotations=READ_ONLY)
    def memory_status() -> CallToolResult:
        """Counts per state, the oldest unfinished records, jobs and the timeline's size."""
        # on a thread: status runs PRAGMA quick_check, which grows with the database
        return _result(_call(pool, "memory_status", lambda m: m.status()))

    @server.tool(annotations=SETTING)
    def memory_project_approve(
        project_id: Annotated[str, Field(min_length=9, max_length=140, pattern=r"^project:\S",
                                         description="a candidate project id, project:slug")],
    ) -> CallToolResult:
        """Activate a candidate project, after asking your user (nothing else activates one)."""
        return _result(_call(pool, "memory_project_approve",
                             lambda m: m.approve_project(project_id)))

    @server.tool(annotations=SETTING)
    def memory_busy(
        busy: Annotated[bool, Field(description="true while you work on a turn, false after")],
    ) -> CallToolResult:
        """Say whether you are busy: while busy, the worker claims no new batch (a crashed
        agent's busy flag lapses by itself)."""
        _call(pool, "memory_busy", lambda m: m.set_busy(busy))
        return _result({"busy": busy})


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


def http_app(server: MCPServer[Any], path: str = "/mcp") -> Any:
    """The streamable-HTTP Starlette app (JSON responses, sessions) for `server`."""
    return server.streamable_http_app(streamable_http_path=path, json_response=True,
                                      transport_security=local_security())


async def run_stdio(server: MCPServer[Any]) -> None:
    """Serve over this process's stdin/stdout until the host closes stdin; a frame the SDK
    cannot read gets a JSON-RPC error reply (memvault.service.stdio_frames)."""
    await serve_stdio(server)


def open_client(socket_path: str | Path | None = None, url: str | None = None,
                token: str | None = None, timeout_s: float = 30.0) -> Any:
    """An `mcp.Client` for a running `memvault serve`: on its Unix socket, or at `url`
    (e.g. http://127.0.0.1:8765/mcp). Use as `async with open_client(...) as client:`."""
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    if (socket_path is None) == (url is None):
        raise ValueError("give exactly one of socket_path or url")
    headers = {"Authorization": f"Bearer {token}"} if token else None
    transport = httpx2.AsyncHTTPTransport(uds=str(socket_path)) if socket_path else None
    http = httpx2.AsyncClient(
        headers=headers, transport=transport,
        timeout=httpx2.Timeout(timeout_s, read=max(timeout_s, 300.0)),
    )
    return Client(_OwnedTransport(streamable_http_client(url or "http://localhost/mcp",
                                                         http_client=http), http),
                  read_timeout_seconds=timeout_s)


class _OwnedTransport:
    """A client transport that also closes the HTTP client it was given."""

    def __init__(self, inner: Any, http: Any) -> None:
        self._inner = inner
        self._http = http

    async def __aenter__(self) -> Any:
        await self._http.__aenter__()
        return await self._inner.__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._inner.__aexit__(*exc)
        finally:
            await self._http.__aexit__(None, None, None)


def tool_payload(result: CallToolResult) -> CallToolResult:
    """A tool result as a dict; raises ToolCallFailed with the server's message on isError."""
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise ToolCallFailed(text)
    if isinstance(result.structured_content, dict):
        return result.structured_content
    return json.loads(" ".join(getattr(c, "text", "") for c in result.content) or "{}")


class ToolCallFailed(Exception):
    """A tool answered with isError; the message is the server's one-line explanation."""


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
        from importlib.metadata import version

        return version("memvault")
    except Exception:  # pragma: no cover - not installed (a source checkout)
        return "0"

