"""A model call never outlives the worker's lease: each call gets a deadline of the time left
on the lease less the commit's margin (the provider keeps its own timeout when that is sooner),
and a batch with too little lease left ends as a retryable failure without calling the model,
so no work is done only for its commit to be refused."""

from __future__ import annotations

import pytest
from memvault import ManualClock, Memory
from memvault.jobs.batch_loop import LEASE_MARGIN_S, MIN_CALL_S
from memvault.jobs.leases import lease_info
from memvault.models.base import ModelReply, ToolSpec, Usage
from modes_support import batch_row, compact_step, make_worker


def compact_job(mem: Memory) -> None:
    for i in range(2):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.compact()


def lease_s(mem: Memory) -> float:
    return mem.config["batch.timeout_s"] + mem.config["worker.lease_extra_s"]


def test_each_model_call_gets_the_time_left_on_the_lease_less_the_margin(
    mem: Memory, clock: ManualClock,
) -> None:
    compact_job(mem)

    def think(messages: list, tools: list[ToolSpec], max_out: int) -> ModelReply:
        clock.advance(seconds=100)  # a slow answer without a tool call
        return ModelReply(text="thinking", usage=Usage(1, 1))

    worker, provider = make_worker(mem, [think, compact_step("met, agreed on the date")])
    assert worker.tick().action == "committed"
    assert [h["deadline_s"] for h in provider.history] == [
        lease_s(mem) - LEASE_MARGIN_S, lease_s(mem) - LEASE_MARGIN_S - 100]


def test_a_batch_with_too_little_lease_left_fails_before_calling_the_model(
    mem: Memory, clock: ManualClock,
) -> None:
    compact_job(mem)
    left = LEASE_MARGIN_S + MIN_CALL_S - 1  # one second short of a call and its commit

    def late_start(job: object, batch: object) -> None:  # e.g. a slow prompt: time passes
        clock.advance(seconds=lease_s(mem) - left)

    worker, provider = make_worker(mem, [compact_step("met, agreed on the date")],
                                   on_claim=late_start)
    result = worker.tick()
    assert result.action == "failed"
    assert f"the lease has {left:.0f} s left" in (result.error or "")
    assert provider.history == []  # the model was never called
    row = batch_row(mem.conn, result.batch_id)
    assert row["state"] == "claimed" and row["failures"] == 1  # retryable, with backoff
    assert row["next_attempt_at"] is not None
    assert lease_info(mem.conn) is None  # given back with the failure
    assert mem.status()["timeline"]["nodes"] == 2  # nothing compacted

    clock.advance(seconds=mem.config["worker.backoff_s"] + 1)
    worker.on_claim = None
    assert worker.tick().action == "committed"  # the retry, with a whole lease
    assert provider.history[0]["deadline_s"] == lease_s(mem) - LEASE_MARGIN_S


@pytest.mark.parametrize("left", [0.0, 3.0, LEASE_MARGIN_S])
def test_a_batch_with_five_seconds_or_less_on_its_lease_fails_retryably_without_a_call(
    mem: Memory, clock: ManualClock, left: float,
) -> None:
    # Issue 35's audit: a batch with 0-5 s left (inside the commit's margin, so the time a
    # call may take is zero or negative) must fail like one with 5-10 s left.
    compact_job(mem)

    def late_start(job: object, batch: object) -> None:
        clock.advance(seconds=lease_s(mem) - left)

    worker, provider = make_worker(mem, [compact_step("met, agreed on the date")],
                                   on_claim=late_start)
    result = worker.tick()
    assert result.action == "failed" and provider.history == []
    assert f"the lease has {left:.0f} s left" in (result.error or "")
    row = batch_row(mem.conn, result.batch_id)
    assert row["state"] == "claimed" and row["failures"] == 1  # retryable


def test_a_batch_with_exactly_a_call_and_its_commit_left_calls_the_model(
    mem: Memory, clock: ManualClock,
) -> None:
    compact_job(mem)

    def late_start(job: object, batch: object) -> None:
        clock.advance(seconds=lease_s(mem) - LEASE_MARGIN_S - MIN_CALL_S)

    worker, provider = make_worker(mem, [compact_step("met, agreed on the date")],
                                   on_claim=late_start)
    assert worker.tick().action == "committed"
    assert provider.history[0]["deadline_s"] == MIN_CALL_S
