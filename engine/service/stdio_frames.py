"""MCP over stdio with every frame checked before the SDK sees it.

The SDK's stdio reader turns a line it cannot parse into an exception its session only logs at
debug level: a request with a lone surrogate in a string, nesting deeper than its JSON parser
allows (~200), an integer of more than 4,300 digits, or broken JSON was never answered and the
agent host waited until its own timeout. Here each line is parsed first, exactly as the SDK will
(`jsonrpc_message_adapter.validate_json`); a line that fails is answered with a JSON-RPC error
naming the problem and where it is (never echoing the value), and not passed on:

    -32700 Parse error       not JSON; the id when a shallow scan finds it, else null
    -32602 Invalid params    a bad value under "params" (lone surrogate, too deep, too long)
    -32600 Invalid Request   anything else (not an object, a bad value outside params, an id
                             that is no string or integer, ...)

A notification (a method and no id) is only logged: JSON-RPC forbids answering it.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from io import TextIOWrapper
from typing import Any, BinaryIO

import anyio
import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError
from pydantic import ValidationError

log = logging.getLogger("memvault.mcp")


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve `server` over this process's stdin/stdout until the host closes stdin.

    As `MCPServer.run_stdio_async`, but stdin goes through `checked_frames` first: the SDK's
    stdio reader turns a frame it cannot parse into an exception its session only logs, so the
    host would wait for an answer forever. Replies to bad frames join the server's own output
    stream, so they never tear a frame the server is writing."""
    lowlevel = server._lowlevel_server  # what run_stdio_async runs; no public handle exists
    replies_in, replies_out = anyio.create_memory_object_stream[SessionMessage](16)
    with _private_stdin() as wire:
        # surrogateescape, not the SDK's "replace": bytes that are not UTF-8 become lone
        # surrogates, which checked_frames refuses, instead of text silently altered.
        lines = anyio.wrap_file(TextIOWrapper(wire, encoding="utf-8", errors="surrogateescape"))
        frames = checked_frames(lines, replies_in)
        # stdio_server reads stdin only by `async for`, but is typed for an anyio file.
        async with stdio_server(stdin=frames) as (read_stream, write_stream):  # type: ignore[arg-type]
            async with anyio.create_task_group() as tg:
                tg.start_soon(_forward_replies, replies_out, write_stream.clone())
                await lowlevel.run(read_stream, write_stream,
                                   lowlevel.create_initialization_options())


async def checked_frames(lines: AsyncIterable[str], replies: Any) -> AsyncIterator[str]:
    """Pass on each line the SDK can read; answer (or, for a notification, log) the others."""
    async with replies:
        async for line in lines:
            if not line.strip():
                continue  # a blank line is no frame
            problem = frame_problem(line.rstrip("\r\n"))
            if problem is None:
                yield line
                continue
            log.info("frame_rejected", extra={"fields": {
                "code": problem.code, "error": problem.message, "id": problem.request_id}})
            if problem.reply:
                await replies.send(SessionMessage(JSONRPCError(
                    jsonrpc="2.0", id=problem.request_id,
                    error=ErrorData(code=problem.code, message=problem.message))))


async def _forward_replies(replies: Any, write_stream: Any) -> None:
    async with write_stream:
        async for message in replies:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await write_stream.send(message)


@contextmanager
def _private_stdin() -> Iterator[BinaryIO]:
    """The wire, read from a private copy of fd 0 while fd 0 points at /dev/null (as the SDK's
    own transport does: a handler or child reading stdin sees EOF instead of eating frames)."""
    stdin = sys.stdin
    try:
        if stdin is None or stdin.buffer.fileno() != 0:
            raise OSError("stdin is not fd 0")
        private = _dup_above_std(0)
    except (AttributeError, OSError, ValueError):
        # not the process's fd 0 (an embedding host): read it in place; no stdin at all: EOF
        yield stdin.buffer if stdin is not None else io.BytesIO()
        return
    diverted = False
    with suppress(OSError):
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
            diverted = True
        finally:
            os.close(null)
    try:
        # closefd=False: a reader thread can still block on it after we are done; it is never
        # closed, so the number is never recycled under that thread.
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        if diverted:
            with suppress(OSError):
                os.dup2(private, 0)


def _dup_above_std(fd: int) -> int:
    """A duplicate of `fd` numbered 3 or above (never one of the standard descriptors)."""
    if sys.platform == "win32":  # pragma: no cover
        return os.dup(fd)
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


# -- bad frames ---------------------------------------------------------------------------------
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
MAX_DEPTH = 200  # the SDK's JSON parser (jiter) refuses a frame nested a little deeper
MAX_DIGITS = 4300  # ... and an integer longer than this (Python's int() limit too)
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+|"')
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_UNICODE = ("a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape) or bytes that are "
                "not UTF-8; text must be valid Unicode")


@dataclass(frozen=True)
class FrameProblem:
    """Why a frame cannot be served, and the JSON-RPC error that says so."""

    code: int
    message: str
    request_id: int | str | None  # None: the id could not be read (replied to as null)
    reply: bool  # False for a notification (a method, no id): JSON-RPC forbids an answer


class _LongInt(str):
    """An integer literal too long to read, kept as text to say where it was."""


def frame_problem(line: str) -> FrameProblem | None:
    """None when the SDK can read `line`; else what is wrong with it and how to answer.

    Parse errors (-32700) keep the id when a shallow scan finds one at the top level, else
    reply with id null; a readable frame with a bad value answers -32602 (inside params) or
    -32600 (elsewhere) with its id. The rejected value is never echoed."""
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # a pydantic ValidationError; anything else is refused alike
        sdk_reason = _sdk_reason(exc)
    else:
        return _unusable_id(line) if isinstance(message, mcp_types.JSONRPCNotification) else None
    scan = _scan(line)
    if scan.too_deep_in is not None:
        code = INVALID_PARAMS if scan.too_deep_in == "params" else INVALID_REQUEST
        return _problem(code, f"{scan.too_deep_in}: JSON nested more than {MAX_DEPTH} levels "
                              "deep", scan.request_id, not scan.notification)
    try:
        frame = json.loads(line, parse_int=_read_int)
    except (ValueError, RecursionError) as exc:
        return FrameProblem(PARSE_ERROR, f"Parse error: {exc}", scan.request_id, True)
    if not isinstance(frame, dict):
        return FrameProblem(INVALID_REQUEST, "Invalid Request: a JSON-RPC message must be a "
                                             "JSON object", None, True)
    request_id = frame.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str) \
            or isinstance(request_id, _LongInt) or _SURROGATE.search(str(request_id)):
        request_id = None
    reply = "id" in frame or "method" not in frame
    found = _bad_value(frame)
    if found is None:
        return _problem(INVALID_REQUEST, sdk_reason, request_id, reply)
    path, reason = found
    code = INVALID_PARAMS if path and path[0] == "params" else INVALID_REQUEST
    return _problem(code, f"{_dotted(path)}: {reason}", request_id, reply)


def _unusable_id(line: str) -> FrameProblem | None:
    """The SDK reads a frame whose `id` is no string or integer (an object, a list, null, a
    float, a bool) as a notification and never answers it, so the client waits for ever: that
    frame is an Invalid Request, answered with id null (its id cannot be echoed)."""
    if '"id"' not in line:  # most notifications: no second parse
        return None
    frame = json.loads(line, parse_int=_read_int)
    if not isinstance(frame, dict) or "id" not in frame:
        return None
    return _problem(INVALID_REQUEST, "id: a request id must be a string or an integer",
                    None, True)


def _problem(code: int, detail: str, request_id: int | str | None,
             reply: bool) -> FrameProblem:
    label = {INVALID_PARAMS: "Invalid params", INVALID_REQUEST: "Invalid Request"}[code]
    return FrameProblem(code, f"{label}: {detail}", request_id, reply)


def _read_int(text: str) -> int | _LongInt:
    return _LongInt(text) if len(text.lstrip("-")) > MAX_DIGITS else int(text)


def _sdk_reason(exc: Exception) -> str:
    """The SDK parser's first complaint, without the input it quotes."""
    if isinstance(exc, ValidationError):
        for item in exc.errors(include_url=False, include_input=False):
            where = ".".join(str(p) for p in item["loc"][1:])  # [0] names the union member
            return f"{where}: {item['msg']}" if where else item["msg"]
    return f"unreadable frame ({type(exc).__name__})"


@dataclass
class _Scan:
    request_id: int | str | None = None
    has_id: bool = False
    has_method: bool = False
    too_deep_in: str | None = None  # the top-level key under which nesting went too deep

    @property
    def notification(self) -> bool:
        return self.has_method and not self.has_id


def _scan(line: str) -> _Scan:
    """A shallow, non-recursive look at a frame that may not even be JSON: the top-level
    "id" (when it is a plain number or string) and whether it nests deeper than MAX_DEPTH."""
    scan = _Scan()
    depth, key, before = 0, "", ["", ""]  # `before`: the two previous tokens
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token == '"':
            break  # an unterminated string: the rest of the line is its content
        if depth == 1 and before == ['"id"', ":"] and not scan.has_id:
            scan.has_id = True
            scan.request_id = _plain_id(token)
        if depth == 1 and token == ":" and before[1].startswith('"'):
            key = _plain_key(before[1])
            scan.has_method = scan.has_method or key == "method"
        if token in ("{", "["):
            depth += 1
            if depth > MAX_DEPTH and scan.too_deep_in is None:
                scan.too_deep_in = key or "message"
        elif token in ("}", "]"):
            depth -= 1
            if depth <= 0:
                break
        before = [before[1], token]
    return scan


def _plain_id(token: str) -> int | str | None:
    try:
        value = json.loads(token)
    except ValueError:  # not JSON, or an integer longer than Python reads
        return None
    if isinstance(value, bool) or not isinstance(value, int | str) or \
            (isinstance(value, str) and _SURROGATE.search(value)):
        return None
    return value


def _plain_key(token: str) -> str:
    try:
        key = json.loads(token)
    except ValueError:
        return "message"
    return key if isinstance(key, str) and not _SURROGATE.search(key) else "message"


def _bad_value(frame: Any) -> tuple[list[str | int], str] | None:
    """The first lone surrogate or over-long integer in the parsed frame, with its path
    (iterative: the frame is at most MAX_DEPTH deep here, but no recursion is needed)."""
    stack: list[tuple[list[str | int], Any]] = [([], frame)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _LongInt):
            return path, f"an integer with more than {MAX_DIGITS:,} digits"
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return path, f"a string holds {_NOT_UNICODE}"
        elif isinstance(value, dict):
            for name in value:
                if _SURROGATE.search(name):
                    return path, f"a key holds {_NOT_UNICODE}"
            stack.extend((path + [name], item) for name, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((path + [i], item) for i, item in reversed(list(enumerate(value))))
    return None


def _dotted(path: list[str | int]) -> str:
    """A path like params.arguments.meta.k, each part clipped (keys are client text)."""
    parts = [str(p) if len(str(p)) <= 40 else str(p)[:40] + "..." for p in path]
    return ".".join(parts) or "message"
