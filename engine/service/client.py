"""Clients of a running `memvault serve`: an `mcp.Client` on its Unix socket or URL, and the
unwrapping of a tool's answer (tests, bench/service.py and Python agents use these)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult


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


def tool_payload(result: CallToolResult) -> dict[str, Any]:
    """A tool result as a dict; raises ToolCallFailed with the server's message on isError."""
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise ToolCallFailed(text)
    if isinstance(result.structured_content, dict):
        return result.structured_content
    return json.loads(" ".join(getattr(c, "text", "") for c in result.content) or "{}")


class ToolCallFailed(Exception):
    """A tool answered with isError; the message is the server's one-line explanation."""
