"""Busy flags tied to the MCP session that set them.

`memory_busy(true)` pauses the worker (no new batch is claimed) until `memory_busy(false)` or
the flag's 10-minute lapse. An agent that exits mid-turn never says false, so a busy flag used
to outlive its client by up to ten minutes. Here each flag is also held by the MCP connection
that set it, and released when that connection ends: an HTTP session deleted or expired, a
handshake client leaving (the SDK unwinds the connection's `exit_stack` however it ended), or
the host closing stdio (`serving_stdio`: over stdio the process serves one client, whichever
protocol era it speaks). The store's flag is cleared once no session of this server holds it,
so busy from two sessions ends when both have ended (or both said false).

The lapse stays as the backstop: a process killed outright runs no teardown, an HTTP request of
the 2026 protocol era has no session to end, and a flag set by another process is that
process's to clear.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

log = logging.getLogger("memvault.mcp")

CLEAR_TIMEOUT_S = 4.0  # under the SDK's 5 s bound on a connection's teardown
_STDIO = "stdio"  # the holder for a stdio stream: one client per process


class BusySessions:
    """Which lasting MCP connections of one server hold the busy flag now.

    `clear()` clears the store's flag (on a thread: it writes); it runs when the last holder
    lets go by ending its session.
    """

    def __init__(self, clear: Callable[[], Awaitable[None]]) -> None:
        self._clear = clear
        self._holders: set[Any] = set()
        self._watched: set[int] = set()
        self._stdio: object | None = None

    @property
    def holders(self) -> int:
        """How many sessions hold the flag now."""
        return len(self._holders)

    def session_of(self, context: Any) -> Any:
        """What holds a busy flag set by this tool call: its lasting connection, else the stdio
        stream this server serves (one client a process), else None (the flag only lapses)."""
        connection = lasting_connection(context)
        return connection if connection is not None else self._stdio

    def hold(self, session: Any) -> None:
        """`session` says busy; when it ends, it lets go (watched once, never twice)."""
        if session is None:
            return
        self._holders.add(session)
        if session is not self._stdio and id(session) not in self._watched:
            self._watched.add(id(session))
            session.exit_stack.push_async_callback(self.ended, session)

    def release(self, session: Any) -> int:
        """`session` says it is no longer busy; return how many sessions still hold it."""
        self._holders.discard(session)
        return len(self._holders)

    @asynccontextmanager
    async def serving_stdio(self) -> AsyncIterator[None]:
        """While stdio is served, a busy flag set over it is held by the stdio stream; when the
        host closes it, the flag is let go (shielded: it runs while the server is cancelled)."""
        self._stdio = _STDIO
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self.ended(_STDIO)
            self._stdio = None

    async def ended(self, session: Any) -> None:
        """`session` has ended: let go of its flag, and clear the store's once none holds it."""
        self._watched.discard(id(session))
        if session not in self._holders:
            return
        self._holders.discard(session)
        if self._holders:
            log.info("busy_session_ended", extra={"fields": {"still_busy": len(self._holders)}})
            return
        with anyio.move_on_after(CLEAR_TIMEOUT_S) as scope:
            await self._clear()
        if scope.cancelled_caught:
            log.warning("busy_left_to_lapse", extra={"fields": {
                "note": "the session ended but clearing the busy flag took too long; it "
                        "lapses by itself"}})
        else:
            log.info("busy_cleared", extra={"fields": {"reason": "session ended"}})


def lasting_connection(context: Any) -> Any:
    """The MCP connection a tool call came on, when it outlives the call: one opened by the
    initialize handshake (stdio, an HTTP session, an in-process client). None without a
    context, and for the 2026 era, whose connections are built per request.

    MCPServer's `Context` does not expose the connection; its request's `ServerSession` holds
    it as `_connection` (mcp 2.x). Should a later SDK drop that, this returns None and busy
    falls back to its lapse; tests/test_mcp_sessions.py fails first."""
    try:
        session = context.request_context.session
    except (AttributeError, ValueError):
        return None
    connection = getattr(session, "_connection", None)
    if getattr(connection, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS:
        return None
    return connection if hasattr(connection, "exit_stack") else None
