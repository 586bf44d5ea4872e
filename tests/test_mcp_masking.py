"""No MCP tool returns a secret: every registered tool is called against a home full of them.

Secrets sit in every place a tool can show: event text (a GitHub token, an OpenSSH key, a
service account's JSON key, HTTP Basic credentials, a password), a key cut by a hot fragment's
end, an event's meta, key, source and kind, a core file, an object's fields, a job's scope and
the previews of unfinished events. Each tool must mask all of them: memory_context once
returned them whole while `memvault timeline` masked the same nodes. A tool registered later
without a call here fails the walk.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
from mcp.client import Client
from mcp_types import CallToolResult
from memvault import Memory, NewEvent
from memvault.objects.corefiles import write_core_file
from memvault.service.mcp_server import TOOL_NAMES, build_server, http_app
from memvault.store.connection import write
from modes_support import add_archived, put_object
from test_secret_cases import KEY_BODY, SERVICE_ACCOUNT, pem

# Fake secrets, built by concatenation so no scanner mistakes this file for a leak.
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
BASIC = base64.b64encode(b"alice:" + b"Tr0ub4dor-and-3").decode()
PASSWORD = "password: Tr0ub4dor-and-3"
OPENSSH = pem("OPENSSH PRIVATE KEY", 70)
# What must never come back: each secret's value, in pieces a mask would have hidden.
PIECES = [GITHUB[4:], GITHUB[8:20], BASIC.rstrip("="), "Tr0ub4dor"] + [
    KEY_BODY[i:i + 10] for i in range(0, len(KEY_BODY) - 10, 10)]


def leaked(answers: list[str]) -> list[str]:
    return sorted({piece for piece in PIECES for text in answers if piece in text})


def seed(mem: Memory) -> dict[str, Any]:
    """A home holding a secret in every place a tool can show."""
    long_text = "x" * 1_989 + "/" + GITHUB + " and more words after it" * 20  # no cut before
    ids = mem.append_events([
        NewEvent(f"my token is {GITHUB}, keep it"),
        NewEvent(f"the deploy key:\n{OPENSSH}"),
        NewEvent(f"here is the service account:\n{SERVICE_ACCOUNT}"),
        NewEvent(f"curl -H 'Authorization: Basic {BASIC}' https://example.com"),
        NewEvent(f"the router {PASSWORD} (do not share)"),
        NewEvent(long_text),  # the token straddles the end of its first hot fragment
        NewEvent("tea with Alice", source=GITHUB, kind=GITHUB, key=f"msg-{GITHUB}",
                 meta={"auth": f"Basic {BASIC}", "note": PASSWORD}),
    ])
    queued = add_archived(mem, f"unfinished: {GITHUB} and {PASSWORD}")
    with write(mem.conn):
        write_core_file(mem.conn, "USER.md", f"# User\nmy token {GITHUB}\n", "person",
                        mem.clock.now())
    put_object(mem, "person:alice", "Alice", body=f"Alice keeps the router {PASSWORD}",
               summary=f"token {GITHUB}", cues=[GITHUB])
    put_object(mem, "project:vault-ops", "Vault ops", status="candidate",
               body=f"deploy with Authorization: Basic {BASIC}", summary=PASSWORD)
    mem.organize(scope=f"look for {GITHUB}")
    return {"events": [*ids, *queued], "objects": ["person:alice", "project:vault-ops"]}


def call_plan(seeded: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The calls made of each tool: every id, every page, queries naming each secret."""
    ids = [*seeded["events"], *seeded["objects"]]
    return {
        "memory_append": [{"text": f"again {GITHUB}", "key": f"k-{GITHUB}"},
                          {"text": "other text", "key": f"k-{GITHUB}"}],  # a key conflict
        "memory_context": [{}],
        "memory_find": [{"query": q} for q in (
            GITHUB, GITHUB[4:], "token", "password", "Tr0ub4dor", "router", "service account",
            "private_key", "Authorization Basic", BASIC, "deploy key", "tea with Alice",
            "Alice", "Vault ops", "unfinished", "words after it")] + [
            {"query": "token", "types": ["event"]}, {"query": "Alice", "types": ["person"]}],
        "memory_read": [{"id": i} for i in ids] + [{"id": seeded["events"][5], "offset": 1_995}],
        "memory_evidence": [{"id": i} for i in ids],
        "memory_organize": [{"scope": f"find {GITHUB}"}, {"mode": "deep"}],
        "memory_status": [{}],
        "memory_project_approve": [{"id": "project:vault-ops"}],
        "memory_busy": [{"busy": True}, {"busy": False}],
    }


def texts_of(result: CallToolResult) -> list[str]:
    return [json.dumps(result.structured_content, ensure_ascii=False),
            *(getattr(c, "text", "") for c in result.content)]


def test_every_mcp_tool_masks_every_secret_it_could_return(mem: Memory) -> None:
    seeded = seed(mem)
    server = build_server(mem)
    registered = {tool.name for tool in server._tool_manager.list_tools()}
    plan = call_plan(seeded)
    assert registered == set(TOOL_NAMES) == set(plan), (
        "every registered MCP tool needs its calls in call_plan")

    async def walk() -> dict[str, list[CallToolResult]]:
        async with Client(server) as client:
            return {name: [await client.call_tool(name, args) for args in calls]
                    for name, calls in plan.items()}

    results = anyio.run(walk)
    answers = {name: [t for r in rs for t in texts_of(r)] for name, rs in results.items()}
    leaks = {name: leaked(texts) for name, texts in answers.items() if leaked(texts)}
    assert leaks == {}
    # the walk saw the secrets' places, masked (not merely an empty or failed answer)
    context = results["memory_context"][0].structured_content
    assert context is not None and "[secret: " in json.dumps(context["timeline"])
    assert "[secret: " in json.dumps(context["core_files"])
    assert not any(r.is_error for r in results["memory_read"])
    assert results["memory_append"][1].is_error  # the key conflict, its key masked
    assert "[secret: " in " ".join(texts_of(results["memory_append"][1]))


def test_memory_context_over_http_masks_what_the_timeline_command_masks(mem: Memory) -> None:
    from starlette.testclient import TestClient

    seed(mem)
    headers = {"Accept": "application/json, text/event-stream"}
    with TestClient(http_app(build_server(mem)), base_url="http://127.0.0.1:8765") as client:
        started = client.post("/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}})
        headers["mcp-session-id"] = started.headers["mcp-session-id"]
        client.post("/mcp", headers=headers,
                    json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        answer = client.post("/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "memory_context", "arguments": {}}})
    assert answer.status_code == 200
    body = answer.text
    assert "[secret: a GitHub token]" in body and "[secret: a private key]" in body
    assert leaked([body]) == []


def test_an_unknown_argument_named_like_a_secret_is_not_echoed(mem: Memory) -> None:
    from test_mcp_server import call, error_text

    message = error_text(call(build_server(mem), "memory_status", **{GITHUB: 1}))
    assert "unknown argument" in message and leaked([message]) == []
