"""The agent's MCP API in-process: each tool, input validation errors, auth, the memory pool.

Recall (recall/query.py) is replaced by a stub where a test is about the MCP layer's wiring, so
these tests hold whatever recall returns; one test runs the real recall when it exists.
"""

from __future__ import annotations

import sys
import threading
import time
import types
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp_types import CallToolResult
from memvault import Memory, NotFound
from memvault.service.mcp_server import (
    TOOL_NAMES,
    MemoryPool,
    build_server,
    explain_validation,
    http_app,
)

READ_ONLY_TOOLS = {"memory_context", "memory_find", "memory_read", "memory_evidence",
                   "memory_status"}


def run_calls(server: Any, *calls: tuple[str, dict[str, Any]]) -> list[CallToolResult]:
    """Call tools in order through one in-process MCP client session."""

    async def go() -> list[CallToolResult]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def call(server: Any, name: str, **args: Any) -> CallToolResult:
    return run_calls(server, (name, args))[0]


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def server(mem: Memory) -> Any:
    return build_server(mem)


@pytest.fixture
def recall(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """A stand-in memvault.recall.query that records its calls (the MCP layer is under test)."""
    calls: list[tuple[Any, ...]] = []

    # Over MCP secrets are never revealed: every call must leave `reveal` false.
    def memory_find(conn: Any, query: str, types: Any = None, project: Any = None,
                    limit: int = 20, reveal: bool = False, today: Any = None,
                    spaces: Any = None) -> dict[str, Any]:
        assert not reveal
        calls.append(("find", query, types, project, limit))
        return {"query": query, "hits": [{"id": "person:qhy", "name": "浩宇"}]}

    def memory_read(conn: Any, object_id: str, offset: int = 0,
                    reveal: bool = False, spaces: Any = None,
                    today: Any = None) -> dict[str, Any]:
        assert not reveal
        if object_id == "person:nobody":
            raise NotFound("no object person:nobody")
        calls.append(("read", object_id, offset))
        return {"id": object_id, "offset": offset, "next_offset": None}

    def memory_evidence(conn: Any, id_or_event: str, offset: int = 0,
                        reveal: bool = False, spaces: Any = None) -> dict[str, Any]:
        assert not reveal
        calls.append(("evidence", id_or_event, offset))
        return {"target": id_or_event, "offset": offset, "items": []}

    stub = types.ModuleType("memvault.recall.query")
    stub.memory_find = memory_find  # type: ignore[attr-defined]
    stub.memory_read = memory_read  # type: ignore[attr-defined]
    stub.memory_evidence = memory_evidence  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "memvault.recall.query", stub)
    return calls


# -- the tool list --------------------------------------------------------------------------------
def test_offers_exactly_the_nine_tools_with_schemas(server: Any) -> None:
    async def go() -> Any:
        async with Client(server) as client:
            return await client.list_tools()

    tools = {t.name: t for t in anyio.run(go).tools}
    assert set(tools) == set(TOOL_NAMES)
    for name, tool in tools.items():
        assert tool.input_schema["type"] == "object"
        assert tool.description
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name in READ_ONLY_TOOLS)
    assert tools["memory_append"].input_schema["required"] == ["text"]
    assert tools["memory_organize"].input_schema["properties"]["mode"]["enum"] == [
        "organize", "deep"]


def test_initialize_and_list_need_no_database() -> None:
    """An MCP host gets its answer at once: connections open on the first tool call only."""
    opened = []

    def opener() -> Memory:
        opened.append(1)
        raise AssertionError("must not open the database to answer initialize")

    server = build_server(MemoryPool(opener, 2))

    async def go() -> int:
        async with Client(server) as client:
            return len((await client.list_tools()).tools)

    assert anyio.run(go) == 9
    assert opened == []


# -- append and context ---------------------------------------------------------------------------
def test_append_then_context_shows_it_on_the_hot_timeline(server: Any, mem: Memory) -> None:
    first, second, context = run_calls(
        server,
        ("memory_append", {"text": "记住：浩宇对花生过敏", "source": "user",
                           "occurred_at": "2026-10-13T12:30:00+08:00",
                           "meta": {"turn": 7}}),
        ("memory_append", {"text": "好的，我记下了。", "source": "assistant"}),
        ("memory_context", {}),
    )
    assert ok(first)["event_id"] == 1
    assert ok(second)["event_id"] == 2
    data = ok(context)
    assert set(data["core_files"]) == {"AGENTS.md", "SOUL.md", "USER.md"}
    assert data["directory"]["omitted"] == 0  # bounded, and says what it left out
    view = data["timeline"]
    assert [n["text"] for n in view["nodes"]] == ["记住：浩宇对花生过敏", "好的，我记下了。"]
    assert view["cut"] is None and view["cut_nodes"] == 0  # the cut is always explicit
    event = mem.read_event(1)
    assert event["meta"] == {"turn": 7}
    assert first.content[0].text == '{"event_id":1}'  # compact JSON text for text-only hosts


def test_context_reports_its_cut(server: Any, mem: Memory, home: Any) -> None:
    mem.config.values["timeline.view_max_bytes"] = 1_000
    for i in range(5):
        mem.append_event(f"event {i} " + "x" * 400)
    view = ok(call(server, "memory_context"))["timeline"]
    assert view["cut_nodes"] > 0
    assert view["cut"]["count"] == view["cut_nodes"]
    assert "did not fit" in view["notice"]


@pytest.mark.parametrize(("args", "expected"), [
    ({}, "text: Field required"),
    ({"text": ""}, "text: String should have at least 1 character"),
    ({"text": "x" * 32_001}, "text: String should have at most 32000 characters"),
    ({"text": "hi", "meta": ["not", "an", "object"]}, "meta: Input should be a valid dictionary"),
    ({"text": "hi", "source": ""}, "source: String should have at least 1 character"),
    ({"text": "hi", "ocurred_at": "2026-10-13T12:30:00+08:00"},
     "unknown argument ocurred_at (did you mean occurred_at?)"),  # never dropped silently
])
def test_append_input_validation(server: Any, mem: Memory, args: dict[str, Any],
                                 expected: str | None) -> None:
    result = call(server, "memory_append", **args)
    if expected is None:
        assert ok(result)["event_id"] == 1
        return
    text = error_text(result)
    assert text.startswith("invalid arguments for memory_append: ")
    assert expected in text
    assert "xxxxxxxxxx" not in text  # the rejected value is never echoed back
    assert mem.status()["events"]["total"] == 0  # nothing stored


@pytest.mark.parametrize(("args", "expected"), [
    ({"text": "hi", "occurred_at": "yesterday-ish"}, "occurred_at: not an ISO 8601 time"),
    ({"text": "   "}, "text is empty"),
    ({"text": "a\x00b"}, "NUL character"),
])
def test_append_engine_refusals_keep_their_message(server: Any, mem: Memory,
                                                   args: dict[str, Any], expected: str) -> None:
    text = error_text(call(server, "memory_append", **args))
    assert "memory_append" in text and expected in text
    assert mem.status()["events"]["total"] == 0


# -- recall ---------------------------------------------------------------------------------------
def test_find_read_evidence_pass_their_arguments(server: Any, recall: list[Any]) -> None:
    found, read, evidence, default = run_calls(
        server,
        ("memory_find", {"query": "浩宇", "types": ["person"], "project": "project:daily",
                         "limit": 5}),
        ("memory_read", {"id": "person:qhy", "offset": 50}),
        ("memory_evidence", {"id": "person:qhy", "offset": 2}),
        ("memory_find", {"query": "qhy"}),
    )
    assert ok(found)["hits"][0]["name"] == "浩宇"
    assert ok(read) == {"id": "person:qhy", "offset": 50, "next_offset": None}
    assert ok(evidence)["target"] == "person:qhy"
    ok(default)
    assert recall == [("find", "浩宇", ["person"], "project:daily", 5),
                      ("read", "person:qhy", 50), ("evidence", "person:qhy", 2),
                      ("find", "qhy", None, None, 20)]


def test_recall_refusal_is_a_clear_tool_error(server: Any, recall: list[Any]) -> None:
    assert "no object person:nobody" in error_text(
        call(server, "memory_read", id="person:nobody"))


@pytest.mark.parametrize(("tool", "args", "expected"), [
    ("memory_find", {}, "query: Field required"),
    ("memory_find", {"query": ""}, "query: String should have at least 1 character"),
    ("memory_find", {"query": "x", "limit": 0}, "limit: Input should be greater than or equal"),
    ("memory_find", {"query": "x", "limit": 101}, "limit: Input should be less than or equal"),
    ("memory_find", {"query": "x", "types": ["animal"]}, "types.0: Input should be 'person'"),
    ("memory_read", {"id": ""}, "id: String should have at least 1 character or Input should "
                                "be a valid integer"),
    ("memory_read", {"id": "person:qhy", "offset": -1}, "offset: Input should be greater than "
                                                        "or equal to 0"),
    ("memory_evidence", {}, "id: Field required"),
    ("memory_evidence", {"id": 0}, "id: Input should be a valid string or Input should be "
                                   "greater than or equal to 1"),
    ("memory_organize", {"mode": "tidy"}, "mode: Input should be 'organize' or 'deep'"),
    ("memory_organize", {"scope": "s" * 2_001}, "scope: String should have at most 2000"),
    ("memory_organize", {"retry_blocked": "perhaps"}, "retry_blocked: Input should be a valid "
                                                      "boolean"),
    ("memory_project_approve", {}, "id: Field required"),
    ("memory_project_approve", {"project_id": ""}, "id: String should have at least 1"),
    ("memory_project_approve", {"id": "project:a", "project_id": "project:a"},
     "give id only (project_id is its deprecated name)"),
    ("memory_busy", {}, "busy: Field required"),
    ("memory_busy", {"busy": "sometimes"}, "busy: Input should be a valid boolean"),
])
def test_input_validation_names_the_field(server: Any, recall: list[Any], tool: str,
                                          args: dict[str, Any], expected: str) -> None:
    text = error_text(call(server, tool, **args))
    assert text.startswith(f"invalid arguments for {tool}: ")
    assert expected in text
    assert recall == []  # nothing reached the engine


def test_the_recall_tools_answer_from_the_real_engine(server: Any, mem: Memory) -> None:
    mem.append_event("记住：浩宇对花生过敏")
    assert isinstance(ok(call(server, "memory_find", query="浩宇")), dict)
    assert "memory_read" in error_text(call(server, "memory_read", id="person:nobody"))
    assert ok(call(server, "memory_evidence", id=1))["text"] == "记住：浩宇对花生过敏"
    assert ok(call(server, "memory_read", id="event:1"))["text"] == "记住：浩宇对花生过敏"


# -- jobs, status, projects, busy -----------------------------------------------------------------
def test_organize_returns_the_enqueue_receipt_only(server: Any, mem: Memory) -> None:
    organize, deep, status = run_calls(
        server,
        ("memory_organize", {}),
        ("memory_organize", {"mode": "deep", "scope": "浩宇的饮食", "retry_blocked": True}),
        ("memory_status", {}),
    )
    receipt = ok(organize)
    assert receipt["mode"] == "organize" and receipt["state"] == "queued"
    assert receipt["replayed"] is False and receipt["unblocked"] == 0
    second = ok(deep)
    assert second["mode"] == "deep" and second["scope"] == "浩宇的饮食"
    assert second["job_id"] == receipt["job_id"] + 1
    assert ok(status)["jobs"] == {"queued": 2}  # queued, nothing ran


def test_status_reports_counts(server: Any, mem: Memory) -> None:
    mem.append_event("hello")
    data = ok(call(server, "memory_status"))
    assert data["events"]["total"] == 1 and data["events"]["hot"] == 1
    assert data["quick_check"] == "ok"
    assert data["home"] == str(mem.config.home)


def test_project_approve(server: Any, mem: Memory, clock: Any) -> None:
    from memvault.objects.records import ObjectRecord, save_object
    from memvault.store.connection import write

    with write(mem.conn):
        save_object(mem.conn, ObjectRecord("project:garden", "project", "Garden",
                                           status="candidate"), clock.now())
    first, again, missing = run_calls(
        server,
        ("memory_project_approve", {"project_id": "project:garden"}),
        ("memory_project_approve", {"project_id": "project:garden"}),
        ("memory_project_approve", {"project_id": "project:nothing"}),
    )
    assert ok(first)["changed"] is True and ok(first)["status"] == "active"
    assert ok(again)["changed"] is False
    assert "project:nothing" in error_text(missing)


def test_busy_sets_and_clears_the_flag(server: Any, mem: Memory, clock: Any) -> None:
    from memvault.jobs.worker import agent_busy

    assert ok(call(server, "memory_busy", busy=True)) == {"busy": True}
    assert agent_busy(mem, clock.now())
    assert ok(call(server, "memory_busy", busy=False)) == {"busy": False}
    assert not agent_busy(mem, clock.now())


def test_an_unexpected_failure_does_not_leak_its_text(
        server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Memory) -> dict[str, Any]:
        raise RuntimeError("/secret/path/memory.db is on fire")

    monkeypatch.setattr(Memory, "status", boom)
    text = error_text(call(server, "memory_status"))
    assert "memory_status" in text and "secret" not in text


def test_explain_validation_is_one_line_per_field() -> None:
    from pydantic import BaseModel, Field, ValidationError

    class Args(BaseModel):
        a: int = Field(ge=0)
        b: str

    with pytest.raises(ValidationError) as info:
        Args.model_validate({"a": -5})
    message = explain_validation("tool_x", info.value)
    assert message == ("invalid arguments for tool_x: a: Input should be greater than or equal "
                       "to 0; b: Field required")


# -- connections ----------------------------------------------------------------------------------
def test_pool_lends_each_memory_to_one_thread_at_a_time(home: Any) -> None:
    pool = MemoryPool.for_home(home, size=2)
    in_use: set[int] = set()
    peak = 0
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        nonlocal peak
        try:
            for _ in range(5):
                with pool.borrow() as mem:
                    with lock:
                        assert id(mem) not in in_use
                        in_use.add(id(mem))
                        peak = max(peak, len(in_use))
                    mem.append_event("from a thread")
                    time.sleep(0.002)
                    with lock:
                        in_use.discard(id(mem))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert peak <= 2
    with pool.borrow() as mem:
        assert mem.status()["events"]["total"] == 30
    pool.close()


def test_wrapped_pool_leaves_the_memory_open(mem: Memory) -> None:
    pool = MemoryPool.wrap(mem)
    pool.close()
    assert mem.status()["events"]["total"] == 0


# -- HTTP: bearer token -----------------------------------------------------------------------
@pytest.fixture
def http_client(mem: Memory) -> Iterator[Any]:
    from starlette.testclient import TestClient

    app = http_app(build_server(mem, bearer_token="s3cret"))
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        yield client


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", "Basic czNjcmV0", "s3cret"])
def test_http_without_the_token_is_401(http_client: Any, authorization: str | None) -> None:
    headers = dict(ACCEPT)
    if authorization:
        headers["Authorization"] = authorization
    response = http_client.post("/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_http_with_the_token_is_served(http_client: Any) -> None:
    response = http_client.post("/mcp", json=INITIALIZE,
                                headers={**ACCEPT, "Authorization": "Bearer s3cret"})
    assert response.status_code == 200
    assert response.json()["result"]["serverInfo"]["name"] == "memvault"


def test_http_refuses_a_foreign_host_header(mem: Memory) -> None:
    from starlette.testclient import TestClient

    with TestClient(http_app(build_server(mem)), base_url="http://evil.example") as client:
        response = client.post("/mcp", json=INITIALIZE, headers=ACCEPT)
    assert response.status_code == 421  # DNS-rebinding protection stays on


# -- where calls run (the thread hop costs about as much as a small find) ----------------------
def test_read_only_tools_run_on_the_event_loop_with_an_idle_memory(mem: Memory) -> None:
    """With a Memory idle, a read-only tool runs on the loop's own thread (no hop); a write
    still goes to a worker thread, as it may wait for SQLite's write lock."""
    where: dict[str, threading.Thread] = {}
    real_find, real_append = mem.find, mem.append

    def find(*args: Any, **kwargs: Any) -> Any:
        where["find"] = threading.current_thread()
        return real_find(*args, **kwargs)

    def store_events(*args: Any, **kwargs: Any) -> Any:
        where["append"] = threading.current_thread()
        return real_append(*args, **kwargs)

    mem.find, mem.append = find, store_events  # type: ignore[method-assign]
    server = build_server(mem)
    appended, found = run_calls(server, ("memory_append", {"text": "Alice likes tea"}),
                                ("memory_find", {"query": "Alice"}))
    assert ok(appended)["event_id"] and ok(found)["hits"]
    assert where["find"] is threading.current_thread()  # anyio.run runs the loop right here
    assert where["append"] is not threading.current_thread()


def test_a_read_goes_to_a_thread_when_no_memory_is_idle(home: Any) -> None:
    """Every open Memory lent (here: held by the test): the read never blocks the loop waiting
    for one; it runs on a worker thread, which opens the pool's next connection."""
    threads: list[threading.Thread] = []

    def opener() -> Memory:
        opened = Memory.open(home)
        real_find = opened.find

        def find(*args: Any, **kwargs: Any) -> Any:
            threads.append(threading.current_thread())
            return real_find(*args, **kwargs)

        opened.find = find  # type: ignore[method-assign]
        return opened

    pool = MemoryPool(opener, size=2)
    try:
        with pool.borrow():  # the only open Memory, lent; one slot left unopened
            result = call(build_server(pool), "memory_find", query="tea")
        assert "hits" in ok(result)
        assert len(threads) == 1 and threads[0] is not threading.current_thread()
    finally:
        pool.close()


def test_a_slow_status_does_not_stall_a_concurrent_append(home: Any) -> None:
    """memory_status (PRAGMA quick_check) and memory_context (the timeline view) grow with the
    memory: they run on a thread, so the loop still dispatches other calls meanwhile."""
    appended = threading.Event()
    saw: list[bool] = []

    def opener() -> Memory:
        opened = Memory.open(home)
        real_status, real_append = opened.status, opened.append

        def status() -> Any:  # a long quick_check: ends once the concurrent append ran
            saw.append(appended.wait(timeout=10))
            return real_status()

        def store_events(*args: Any, **kwargs: Any) -> Any:
            out = real_append(*args, **kwargs)
            appended.set()
            return out

        opened.status, opened.append = status, store_events  # type: ignore[method-assign]
        return opened

    pool = MemoryPool(opener, size=2)
    with pool.borrow(), pool.borrow():
        pass  # both connections open and idle

    async def both() -> None:
        async with Client(build_server(pool)) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "memory_status", {})
                await anyio.sleep(0)
                tg.start_soon(client.call_tool, "memory_append", {"text": "hello"})

    try:
        anyio.run(both)
    finally:
        pool.close()
    assert saw == [True]  # the append ran while status was still running
