"""The agent-host path: one argument vocabulary, busy tied to the session that set it, and a
service that says where MCP lives.

Sessions are real MCP sessions: in-process clients in the handshake era (each its own
connection), an HTTP session opened and deleted over the streamable-HTTP app, and `memvault mcp`
as a subprocess whose stdin the test closes (every wait bounded).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from memvault import Memory
from memvault.jobs.worker import agent_busy, set_busy
from memvault.objects.records import ObjectRecord, save_object
from memvault.service.mcp_server import build_server, http_app
from memvault.store.connection import write
from test_mcp_stdio_errors import StdioServer

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def busy_call(call_id: int, busy: bool) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
            "params": {"name": "memory_busy", "arguments": {"busy": busy}}}


def is_busy(mem: Memory) -> bool:
    return agent_busy(mem, mem.clock.now())


# -- one vocabulary ---------------------------------------------------------------------------
def test_project_approve_takes_id_a_name_or_the_deprecated_project_id(mem: Memory,
                                                                       clock: Any) -> None:
    with write(mem.conn):
        for slug, name in (("garden", "Garden"), ("kiln", "Pottery kiln"), ("loft", "Loft")):
            save_object(mem.conn, ObjectRecord(f"project:{slug}", "project", name,
                                               status="candidate"), clock.now())

    async def go() -> list[Any]:
        async with Client(build_server(mem)) as client:
            return [await client.call_tool("memory_project_approve", args) for args in (
                {"id": "project:garden"}, {"id": "Pottery kiln"}, {"project_id": "project:loft"})]

    answers = anyio.run(go)
    assert [a.structured_content["id"] for a in answers] == [
        "project:garden", "project:kiln", "project:loft"]
    assert all(a.structured_content["status"] == "active" for a in answers)


def test_read_and_evidence_take_a_name_or_alias_as_id(mem: Memory, clock: Any) -> None:
    with write(mem.conn):
        save_object(mem.conn, ObjectRecord("person:zhang-wei", "person", "张伟",
                                           aliases=["Wei"]), clock.now())

    async def go() -> list[Any]:
        async with Client(build_server(mem)) as client:
            return [await client.call_tool(tool, {"id": ref}) for tool, ref in (
                ("memory_read", "张伟"), ("memory_read", "Wei"), ("memory_evidence", "Wei"))]

    first, second, evidence = anyio.run(go)
    assert first.structured_content["object"]["id"] == "person:zhang-wei"
    assert second.structured_content["object"]["id"] == "person:zhang-wei"
    assert evidence.structured_content["id"] == "person:zhang-wei"


def test_the_approve_schema_says_project_id_is_deprecated(mem: Memory) -> None:
    async def go() -> Any:
        async with Client(build_server(mem)) as client:
            return await client.list_tools()

    tools = {t.name: t for t in anyio.run(go).tools}
    props = tools["memory_project_approve"].input_schema["properties"]
    assert set(props) == {"id", "project_id"}
    assert "deprecated" in props["project_id"]["description"]
    assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())


# -- busy ends with its session ---------------------------------------------------------------
def test_busy_ends_when_the_session_that_set_it_ends(mem: Memory) -> None:
    server = build_server(mem)

    async def go() -> bool:
        async with Client(server, mode="legacy") as client:
            await client.call_tool("memory_busy", {"busy": True})
            during = is_busy(mem)
        return during

    assert anyio.run(go) is True
    assert not is_busy(mem)


def test_busy_from_two_sessions_ends_when_both_end(mem: Memory) -> None:
    server = build_server(mem)
    seen: dict[str, Any] = {}

    async def go() -> None:
        async with Client(server, mode="legacy") as first:
            async with Client(server, mode="legacy") as second:
                await first.call_tool("memory_busy", {"busy": True})
                await second.call_tool("memory_busy", {"busy": True})
                answer = await second.call_tool("memory_busy", {"busy": False})
                seen["false_answer"] = answer.structured_content
                seen["after_false"] = is_busy(mem)
            seen["after_second_ended"] = is_busy(mem)
        seen["after_both_ended"] = is_busy(mem)

    anyio.run(go)
    assert seen["false_answer"] == {"busy": False, "other_sessions_busy": 1}
    assert seen["after_false"] and seen["after_second_ended"]
    assert not seen["after_both_ended"]


def test_a_session_that_never_said_busy_leaves_the_flag_alone(mem: Memory) -> None:
    set_busy(mem, True)  # e.g. set by another process

    async def go() -> None:
        async with Client(build_server(mem), mode="legacy") as client:
            await client.call_tool("memory_status", {})

    anyio.run(go)
    assert is_busy(mem)


def test_busy_ends_when_the_http_session_is_deleted(mem: Memory) -> None:
    from starlette.testclient import TestClient

    with TestClient(http_app(build_server(mem)), base_url="http://127.0.0.1:8765") as http:
        opened = http.post("/mcp", json=INITIALIZE, headers=ACCEPT)
        session = {"mcp-session-id": opened.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-06-18", **ACCEPT}
        http.post("/mcp", json=INITIALIZED, headers=session)
        answer = http.post("/mcp", json=busy_call(2, True), headers=session)
        assert answer.json()["result"]["structuredContent"] == {"busy": True}
        assert is_busy(mem)
        assert http.delete("/mcp", headers=session).status_code == 200
    assert not is_busy(mem)


def test_busy_ends_when_the_host_closes_stdio(home: Path, tmp_path: Path) -> None:
    Memory.open(home).close()
    server = StdioServer(home, tmp_path / "mcp.log")
    try:
        server.send(json.dumps(INITIALIZE))
        assert server.reply()["id"] == 1
        server.send(json.dumps(INITIALIZED))
        server.send(json.dumps(busy_call(2, True)))
        assert server.reply()["result"]["structuredContent"] == {"busy": True}
        with Memory.open(home) as mem:
            assert is_busy(mem)
    finally:
        server.stop()  # closes stdin, waits (bounded) for the exit
    assert server.proc.returncode == 0
    with Memory.open(home) as mem:
        assert not is_busy(mem)


# -- where MCP lives ----------------------------------------------------------------------------
def test_get_root_says_where_mcp_lives_and_which_auth_it_needs(mem: Memory) -> None:
    from starlette.testclient import TestClient

    for token, auth in (("s3cret", "bearer"), (None, "none")):
        app = http_app(build_server(mem, bearer_token=token))
        with TestClient(app, base_url="http://127.0.0.1:8765") as http:
            answer = http.get("/")
        assert answer.status_code == 200
        body = answer.json()
        assert body["mcp"] == "/mcp" and body["auth"] == auth
        assert "s3cret" not in answer.text
