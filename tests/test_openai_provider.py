"""The openai provider against a real HTTP server on 127.0.0.1 speaking chat completions."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import meetings_memory
from memvault import Memory
from memvault.models.openai_compat import OpenAICompatProvider, tool_choice_schema

from tests.fake_openai import FakeOpenAI, completion, tool_call

SECRET_KEY = "sk-test-" + "k" * 40


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    memory = meetings_memory(tmp_path / "home")
    yield memory
    memory.close()


def provider(server: FakeOpenAI, mode: str = "native", **kwargs) -> OpenAICompatProvider:
    return OpenAICompatProvider(model="fake-model", base_url=server.base_url,
                                api_key_env="MEMVAULT_TEST_KEY", tool_mode=mode, **kwargs)


def commit_all(body: dict) -> dict:
    """A responder that compacts whatever nodes the request carries."""
    payload = json.loads(body["messages"][1]["content"])
    ids = [n["id"] for n in payload["nodes"]]
    return completion(tool_calls=[tool_call("commit_compaction",
                                            {"node_ids": ids, "summary": "Aurora beta Friday"})],
                      finish_reason="tool_calls",
                      usage={"prompt_tokens": 321, "completion_tokens": 12})


def run_compaction(mem: Memory, prov: OpenAICompatProvider):
    mem.compact()
    return mem.worker(prov, scheduler=False).tick()


def test_native_tool_call_commits_and_records_usage(server, mem, monkeypatch):
    monkeypatch.setenv("MEMVAULT_TEST_KEY", SECRET_KEY)
    server.queue(commit_all)
    result = run_compaction(mem, provider(server))
    assert result.action == "committed"
    request = server.requests[0]
    assert [t["function"]["name"] for t in request["tools"]] == ["commit_compaction"]
    assert request["max_tokens"] == 32_768
    assert server.headers[0]["authorization"] == f"Bearer {SECRET_KEY}"
    usage = mem.usage()["total"]
    assert usage == {"calls": 1, "input_tokens": 321, "output_tokens": 12, "estimated_calls": 0,
                     "bad_calls": 0}
    assert mem.status()["events"]["pending"] == 3


def test_key_is_never_stored(server, mem, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMVAULT_TEST_KEY", SECRET_KEY)
    server.queue(500)
    run_compaction(mem, provider(server))
    mem.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for path in (tmp_path / "home").rglob("*"):
        if path.is_file():
            assert SECRET_KEY.encode() not in path.read_bytes(), path


def test_json_schema_mode_asks_for_schema_and_parses_answer(server, mem):
    def answer(body: dict) -> dict:
        schema = body["response_format"]["json_schema"]["schema"]
        assert "tools" not in body
        assert schema["anyOf"][0]["properties"]["tool"] == {"const": "commit_compaction"}
        ids = json.loads(body["messages"][1]["content"])["nodes"]
        content = json.dumps({"tool": "commit_compaction",
                              "arguments": {"node_ids": [n["id"] for n in ids],
                                            "summary": "Aurora beta"}})
        return completion(content=content)  # no usage reported: estimated

    server.queue(answer)
    result = run_compaction(mem, provider(server, "json_schema"))
    assert result.action == "committed"
    assert mem.usage()["total"]["estimated_calls"] == 1


def test_json_schema_bounds_every_array():
    from memvault.models.base import ToolSpec
    from memvault.objects.proposals import OrganizeProposal

    schema = tool_choice_schema([ToolSpec("commit_organize", "", OrganizeProposal
                                          .model_json_schema())])

    def arrays(node):
        if isinstance(node, dict):
            if node.get("type") == "array":
                yield node
            for value in node.values():
                yield from arrays(value)
        elif isinstance(node, list):
            for value in node:
                yield from arrays(value)

    found = list(arrays(schema))
    assert found and all("maxItems" in a for a in found)


def test_truncation_retries_with_more_room(server, mem):
    server.queue(completion(content="", finish_reason="length"),
                 completion(content="", finish_reason="length"), commit_all)
    result = run_compaction(mem, provider(server))
    assert result.action == "committed"
    assert [r["max_tokens"] for r in server.requests] == [32_768, 65_536, 131_072]


def test_truncation_growth_stops_at_the_models_limit(server, mem):
    server.queue(*[completion(content="", finish_reason="length")] * 3)
    result = run_compaction(mem, provider(server, max_output_tokens=40_000))
    assert result.action == "failed" and "truncated" in result.error
    assert [r["max_tokens"] for r in server.requests] == [32_768, 40_000]


@pytest.mark.parametrize("responder, expected", [
    (500, "InternalServerError"),
    (completion(tool_calls=[tool_call("commit_compaction", "{not json")],
                finish_reason="tool_calls"), "not JSON"),
    (completion(tool_calls=[tool_call("drop_tables", {})], finish_reason="tool_calls"),
     "no tool named"),
    ("this is not json at all", "provider openai failed"),
])
def test_bad_answers_fail_the_batch_cleanly(server, mem, responder, expected):
    server.queue(responder)
    result = run_compaction(mem, provider(server))
    assert result.action == "failed" and expected in result.error
    status = mem.status()
    assert status["events"]["total"] == 3 and status["timeline"]["nodes"] == 3
    failures = mem.conn.execute("SELECT failures FROM batches").fetchone()[0]
    assert failures == 1


def test_non_json_answer_in_json_schema_mode_fails(server, mem):
    server.queue(completion(content="Sure! Here is the summary."))
    result = run_compaction(mem, provider(server, "json_schema"))
    assert result.action == "failed" and "not JSON" in result.error


def test_refused_connection_fails_the_batch(mem):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    prov = OpenAICompatProvider(model="m", base_url=f"http://127.0.0.1:{port}/v1")
    result = run_compaction(mem, prov)
    assert result.action == "failed" and "APIConnectionError" in result.error
    assert mem.status()["timeline"]["nodes"] == 3
    assert mem.usage()["per_day"][0]["failed"] == 1


def test_json_object_schema_format_for_llama_cpp_python(server, mem):
    def answer(body: dict) -> dict:
        assert body["response_format"]["type"] == "json_object"
        assert "anyOf" in body["response_format"]["schema"]
        ids = json.loads(body["messages"][1]["content"])["nodes"]
        return completion(content=json.dumps({"tool": "commit_compaction", "arguments": {
            "node_ids": [n["id"] for n in ids], "summary": "Aurora beta"}}))

    server.queue(answer)
    result = run_compaction(mem, provider(server, "json_schema", schema_format="json_object"))
    assert result.action == "committed"


def test_json_schema_drops_long_string_limits_that_grammars_unroll():
    from memvault.jobs.modes.compact import CompactionProposal
    from memvault.models.base import ToolSpec

    schema = tool_choice_schema([ToolSpec("commit_compaction", "",
                                          CompactionProposal.model_json_schema())])
    summary = schema["anyOf"][0]["properties"]["arguments"]["properties"]["summary"]
    assert "maxLength" not in summary and summary["type"] == "string"
