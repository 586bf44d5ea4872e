"""The batch loop's limits: 16 tool rounds, 3 corrections, output growth on truncation
within the model's and the context's limits, the 300 s timeout, and clean failures (counted
toward the batch's retries, nothing lost) for provider errors and malformed tool calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import count
from memvault import ManualClock, Memory
from memvault.jobs.worker import Worker
from memvault.models.base import ModelReply, Usage
from modes_support import (
    add_archived,
    archive_only_step,
    batch_row,
    commit_organize,
    compact_step,
    counts,
    errors_seen,
    make_worker,
    open_memory,
    put_object,
    queue_row,
    tool_results,
)
from scripted_provider import ScriptedProvider, call

TRUNCATED = ModelReply(finish_reason="length")


def organize_one(mem: Memory, text: str = "Wendy plays the cello.") -> int:
    (event_id,) = add_archived(mem, text)
    mem.organize()
    return event_id


def compact_one(mem: Memory) -> None:
    for i in range(2):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.compact()


# -- rounds and corrections ---------------------------------------------------------------------


def test_round_seventeen_is_refused(mem: Memory) -> None:
    event_id = organize_one(mem)
    before = counts(mem.conn)
    worker, provider = make_worker(mem, [call("list_directory", {})] * 17)
    result = worker.tick()
    assert result.action == "failed"
    assert "16 tool rounds" in result.error
    assert len(provider.history) == 16  # the provider is not asked a 17th time
    assert len(provider.steps) == 1
    assert counts(mem.conn) == before
    assert queue_row(mem.conn, event_id)["state"] == "pending"


def test_sixteen_rounds_with_the_commit_last_is_fine(mem: Memory) -> None:
    event_id = organize_one(mem)
    worker, provider = make_worker(mem, [call("list_directory", {})] * 15 + [
        commit_organize(event_id, "archive_only", reason="nothing durable")])
    assert worker.tick().action == "committed"
    assert len(provider.history) == 16


def test_three_corrections_are_allowed_the_fourth_fails_the_batch(mem: Memory) -> None:
    event_id = organize_one(mem)
    bad = commit_organize(event_id, "archive_only")  # no reason
    worker, provider = make_worker(mem, [bad, bad, bad, commit_organize(
        event_id, "archive_only", reason="chit-chat")])
    assert worker.tick().action == "committed"
    assert [e["field"] for e in errors_seen(provider)] == ["events.0.reason"] * 3

    other = organize_one(mem, "Xena waved.")
    bad = commit_organize(other, "archive_only")
    worker.provider.enqueue(bad, bad, bad, bad, archive_only_step())
    result = worker.tick()
    assert result.action == "failed"
    assert "4 invalid proposals" in result.error and "events.0.reason" in result.error
    assert len(worker.provider.steps) == 1
    assert batch_row(mem.conn, result.batch_id)["failures"] == 1


def test_a_text_reply_without_a_tool_call_is_nudged_and_counts_a_round(mem: Memory) -> None:
    event_id = organize_one(mem)
    worker, provider = make_worker(mem, [
        ModelReply(text="Let me think.", usage=Usage(10, 5)),
        commit_organize(event_id, "archive_only", reason="nothing durable"),
    ])
    assert worker.tick().action == "committed"
    nudge = provider.history[1]["messages"][-1]
    assert nudge["role"] == "user" and "commit_organize" in nudge["content"]


# -- output growth on truncation ----------------------------------------------------------------


def test_truncation_retries_grow_32k_64k_128k_then_fail(mem: Memory) -> None:
    compact_one(mem)
    worker, provider = make_worker(mem, [TRUNCATED] * 4)
    result = worker.tick()
    assert result.action == "failed"
    assert "truncated at 131072" in result.error
    assert [h["max_output_tokens"] for h in provider.history] == [32_768, 65_536, 131_072]


def test_a_truncated_answer_is_retried_with_more_room_and_commits(mem: Memory) -> None:
    compact_one(mem)
    worker, provider = make_worker(mem, [TRUNCATED, TRUNCATED, compact_step("met twice")])
    assert worker.tick().action == "committed"
    assert [h["max_output_tokens"] for h in provider.history] == [32_768, 65_536, 131_072]


def test_truncation_growth_never_passes_the_models_output_limit(mem: Memory) -> None:
    compact_one(mem)
    provider = ScriptedProvider([TRUNCATED] * 3, max_output_tokens=50_000)
    worker = Worker(mem, provider, holder="w", scheduler=False)
    result = worker.tick()
    assert result.action == "failed" and "truncated at 50000" in result.error
    assert [h["max_output_tokens"] for h in provider.history] == [32_768, 50_000]


def test_truncation_growth_never_passes_the_remaining_context(mem: Memory) -> None:
    compact_one(mem)
    provider = ScriptedProvider([TRUNCATED] * 3, context_tokens=40_000)
    worker = Worker(mem, provider, holder="w", scheduler=False)
    result = worker.tick()
    assert result.action == "failed"
    asked = [h["max_output_tokens"] for h in provider.history]
    assert asked[0] == 32_768 and len(asked) == 2
    assert 32_768 < asked[1] < 40_000  # the context minus the prompt


def test_the_first_request_respects_a_smaller_configured_start(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, "[model]\nmax_output_tokens = 1000\n"
                                   "max_output_tokens_cap = 3000\n")
    compact_one(mem)
    worker, provider = make_worker(mem, [TRUNCATED] * 4)
    assert worker.tick().action == "failed"
    assert [h["max_output_tokens"] for h in provider.history] == [1_000, 2_000, 3_000]
    mem.close()


# -- timeout ------------------------------------------------------------------------------------


def test_a_batch_past_300_seconds_fails_with_a_timeout(mem: Memory, clock: ManualClock) -> None:
    event_id = organize_one(mem)

    def slow(messages, tools, max_out):
        clock.advance(seconds=301)
        return call("list_directory", {})

    worker, provider = make_worker(mem, [slow, archive_only_step()])
    result = worker.tick()
    assert result.action == "failed"
    assert "timeout" in result.error
    assert len(provider.history) == 1
    assert queue_row(mem.conn, event_id)["state"] == "pending"
    row = batch_row(mem.conn, result.batch_id)
    assert (row["state"], row["failures"]) == ("claimed", 1)
    clock.advance(seconds=11)
    assert worker.tick().action == "committed"  # the retry goes through


# -- clean failures -----------------------------------------------------------------------------


@pytest.mark.parametrize(("step", "message"), [
    (RuntimeError("connection refused"), "provider scripted failed: connection refused"),
    (call("no_such_tool", {}), "no tool named 'no_such_tool'"),
    (call("commit_organize", '{"events": [{"event_id": 1,'), "arguments are not JSON"),
    (call("commit_organize", "[1, 2]"), "arguments must be a JSON object"),
])
def test_provider_errors_and_malformed_calls_fail_the_batch_cleanly(
    mem: Memory, clock: ManualClock, step: object, message: str,
) -> None:
    event_id = organize_one(mem)
    before = counts(mem.conn)
    worker, provider = make_worker(mem, [step, archive_only_step()])
    result = worker.tick()
    assert result.action == "failed"
    assert message in result.error
    assert len(provider.history) == 1
    row = batch_row(mem.conn, result.batch_id)
    assert (row["state"], row["failures"]) == ("claimed", 1)
    assert row["next_attempt_at"] is not None and message in row["error"]
    assert counts(mem.conn) == before  # nothing written, nothing lost
    queue = queue_row(mem.conn, event_id)
    assert (queue["state"], queue["page_cursor"]) == ("pending", 0)
    assert count(mem.conn, "model_calls") == 1
    clock.advance(seconds=11)
    assert worker.tick().action == "committed"
    assert queue_row(mem.conn, event_id)["state"] == "archive_only"


def test_a_browse_error_comes_back_as_a_correction(mem: Memory) -> None:
    event_id = organize_one(mem)
    worker, provider = make_worker(mem, [
        call("read_object", {"id": "person:nobody"}),
        commit_organize(event_id, "archive_only", reason="nothing durable"),
    ])
    assert worker.tick().action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "id" and "person:nobody" in error["error"]


def test_the_transfer_budget_stops_sending_more(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, "[organize]\nclaim_budget_bytes = 24000\n")
    for name in ("a", "b", "c"):
        put_object(mem, f"knowledge:{name}", name, body=name * 10_000)
    event_id = organize_one(mem, "Yuri reads a lot.")
    worker, provider = make_worker(mem, [
        call("read_object", {"id": "knowledge:a"}),
        call("read_object", {"id": "knowledge:b"}),
        call("read_object", {"id": "knowledge:c"}),
        commit_organize(event_id, "archive_only", reason="nothing durable"),
    ])
    assert worker.tick().action == "committed"
    results = tool_results(provider.history[-1]["messages"])
    assert results[0]["object"]["id"] == "knowledge:a"
    assert "transfer budget" in results[-1]["error"]
    mem.close()


def test_each_message_is_json_encoded_once_per_batch(
    mem: Memory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop measures what it sends (transfer budget, context room) from one
    encoding of each message, not by re-encoding the whole conversation every round."""
    import json
    import types

    from memvault.jobs import batch_loop

    compact_one(mem)
    encoded: list[object] = []

    def dumps(obj, *args, **kwargs):
        encoded.append(obj)
        return json.dumps(obj, *args, **kwargs)

    monkeypatch.setattr(batch_loop, "json", types.SimpleNamespace(
        dumps=dumps, loads=json.loads, JSONDecodeError=json.JSONDecodeError))
    worker, provider = make_worker(mem, [ModelReply(text="thinking", usage=Usage(1, 1)),
                                         compact_step("met")])
    assert worker.tick().action == "committed"
    system = provider.history[0]["messages"][0]
    holding = [o for o in encoded if o == system or (isinstance(o, list) and system in o)]
    assert len(holding) == 1
