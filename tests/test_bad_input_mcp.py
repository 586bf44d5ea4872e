"""Bad input on the MCP tools, against the real engine: each refusal is a tool result with
isError and one line naming the field (or the engine's own reason), and nothing is stored.

Schema refusals of memory_append, memory_find, memory_read, memory_evidence, memory_organize,
memory_project_approve and memory_busy are in test_mcp_server.py; these are the rest.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp_types import CallToolResult
from memvault import Memory
from memvault.service.mcp_server import build_server


def call(mem: Memory, name: str, **args: Any) -> CallToolResult:
    """Call one tool through an in-process MCP client session."""

    async def go() -> CallToolResult:
        async with Client(build_server(mem)) as client:
            return await client.call_tool(name, args)

    return anyio.run(go)


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)


def snapshot(mem: Memory) -> tuple[int, dict[str, int], list[tuple]]:
    """What a refused call must leave as it was: events, jobs, object statuses."""
    status = mem.status()
    objects = mem.conn.execute("SELECT id, status, version FROM objects ORDER BY id").fetchall()
    return status["events"]["total"], status["jobs"], [tuple(r) for r in objects]


@pytest.fixture
def seeded(mem: Memory) -> Memory:
    mem.append_event("记住：浩宇对花生过敏")
    return mem


@pytest.mark.parametrize(("tool", "args", "expected"), [
    ("memory_append", {"text": 42}, "text: Input should be a valid string"),
    ("memory_append", {"text": "\ud800 lone"}, "text: Input should be a valid string"),
    ("memory_append", {"text": "hi", "occurred_at": 1_700_000_000},
     "occurred_at: Input should be a valid string"),
    ("memory_append", {"text": "hi", "occurred_at": "t" * 65},
     "occurred_at: String should have at most 64 characters"),
    ("memory_append", {"text": "hi", "kind": "k" * 65}, "kind: String should have at most 64"),
    ("memory_find", {"query": 42}, "query: Input should be a valid string"),
    ("memory_find", {"query": "x" * 1_001}, "query: String should have at most 1000 characters"),
    ("memory_find", {"query": "浩宇", "types": "person"}, "types: Input should be a valid list"),
    ("memory_find", {"query": "浩宇", "limit": "many"}, "limit: Input should be a valid integer"),
    ("memory_find", {"query": "浩宇", "project": "p" * 141},
     "project: String should have at most 140"),
    ("memory_read", {"id": True}, "id: Input should be a valid string or Input should be a "
                                  "valid integer"),
    ("memory_read", {"id": 1.5}, "id: Input should be a valid string or Input should be a "
                                 "valid integer"),
    ("memory_read", {"id": "x" * 201}, "id: String should have at most 200 characters"),
    ("memory_read", {"id": 99_999_999_999_999_999_999},
     "id: Input should be a valid string or Input should be less than or equal to "
     "9223372036854775807"),
    ("memory_read", {"id": 1, "offset": "abc"}, "offset: Input should be a valid integer"),
    ("memory_evidence", {"id": 1, "offset": 10_000_001},
     "offset: Input should be less than or equal to 10000000"),
    ("memory_organize", {"scope": 5}, "scope: Input should be a valid string"),
    ("memory_organize", {"retry_blocked": 2}, "retry_blocked: Input should be a valid boolean"),
    ("memory_project_approve", {}, "id: Field required"),
    ("memory_project_approve", {"id": 7}, "id: Input should be a valid string"),
    ("memory_project_approve", {"project_id": 7}, "id: Input should be a valid string"),
])
def test_a_wrong_type_or_size_names_the_field_and_stores_nothing(
    seeded: Memory, tool: str, args: dict[str, Any], expected: str
) -> None:
    before = snapshot(seeded)
    text = error_text(call(seeded, tool, **args))
    assert text.startswith(f"invalid arguments for {tool}: "), text
    assert expected in text
    assert "xxxxxxxxxx" not in text and "tttttttttt" not in text  # values are not echoed
    assert snapshot(seeded) == before


@pytest.mark.parametrize(("tool", "args", "expected"), [
    ("memory_read", {"id": "person:../../etc"}, "the slug may not hold spaces, path separators"),
    ("memory_evidence", {"id": "../../etc/passwd"}, "not an object id: '../../etc/passwd'"),
    ("memory_read", {"id": "event:abc"}, "not an event id: 'event:abc'"),
    ("memory_read", {"id": "99999999999999999999999"},
     "no event 99999999999999999999999: an event id is at most 9223372036854775807"),
    ("memory_read", {"id": "event:" + "9" * 40}, "no event 9999999999"),
    ("memory_evidence", {"id": "event:99999999999999999999999"},
     "no event 99999999999999999999999: an event id is at most"),
    ("memory_read", {"id": 1, "offset": 5_000}, "offset 5000 is outside event 1"),
    ("memory_read", {"id": 2}, "no event 2"),
    ("memory_read", {"id": "person:nobody"}, "no object person:nobody"),
    ("memory_find", {"query": "   "}, "query is empty"),
    ("memory_find", {"query": "浩宇", "project": "person:qhy"},
     "project must be a project id like project:daily"),
    ("memory_find", {"query": "浩宇", "project": "project:../x"}, "the slug may not hold"),
    ("memory_project_approve", {"id": "project:../x"}, "the slug may not hold"),
    ("memory_project_approve", {"id": "project:nothing"}, "project:nothing"),
    ("memory_append", {"text": "hi", "meta": {"k": "\ud800"}}, "meta holds a lone surrogate"),
    ("memory_append", {"text": "hi", "occurred_at": "2026-02-30T10:00:00+08:00"},
     "occurred_at"),
])
def test_an_engine_refusal_keeps_its_message_and_stores_nothing(
    seeded: Memory, tool: str, args: dict[str, Any], expected: str
) -> None:
    before = snapshot(seeded)
    text = error_text(call(seeded, tool, **args))
    assert expected in text
    assert "Traceback" not in text
    assert snapshot(seeded) == before


def test_an_unknown_tool_is_named(seeded: Memory) -> None:
    assert "Unknown tool: memory_forget" in error_text(call(seeded, "memory_forget"))


@pytest.mark.parametrize(("tool", "args", "named"), [
    ("memory_append", {"text": "hi", "ocurred_at": "2026-10-13T12:30:00+08:00"},
     "unknown argument ocurred_at (did you mean occurred_at?)"),
    ("memory_append", {"text": "hi", "speaker": "qhy", "tags": []},
     "unknown arguments speaker, tags"),
    ("memory_context", {"verbose": True}, "unknown argument verbose; it takes no arguments"),
    ("memory_find", {"query": "x", "limt": 3}, "unknown argument limt (did you mean limit?)"),
    ("memory_read", {"object_id": "person:qhy"}, "unknown argument object_id"),
    ("memory_evidence", {"id": 1, "page": 2}, "unknown argument page"),
    ("memory_organize", {"mode": "deep", "force": True}, "unknown argument force"),
    ("memory_status", {"full": True}, "unknown argument full"),
    ("memory_project_approve", {"id": "project:a", "slug": "a"}, "unknown argument slug"),
    ("memory_busy", {"busy": True, "minutes": 5}, "unknown argument minutes"),
])
def test_unknown_arguments_are_refused_naming_them(seeded: Memory, tool: str,
                                                   args: dict[str, Any], named: str) -> None:
    """An unknown argument is never dropped silently (`ocurred_at` stored the event "now")."""
    before = snapshot(seeded)
    text = error_text(call(seeded, tool, **args))
    assert text.startswith(f"invalid arguments for {tool}: {named}"), text
    assert "\n" not in text
    assert snapshot(seeded) == before
