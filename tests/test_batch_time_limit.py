"""A batch has 300 s (batch.timeout_s): a model round that ends at 299 s is followed by another,
one that ends at exactly 300 s fails the batch with a timeout (counted as a failed claim, its
event still pending). tests/test_batchloop.py covers 301 s; the boundary had no test.

What breaks this test (the mutation made in engine/jobs/batch_loop.py, the test run and seen to
fail, the code restored):
- `(clock.now() - started).total_seconds() >= limits.timeout_s` changed to `>` ->
  test_a_batch_gets_300_seconds_and_not_one_more[300].
"""

from __future__ import annotations

import pytest
from memvault import ManualClock, Memory
from memvault.models.base import Message, ModelReply, ToolSpec
from modes_support import add_archived, archive_only_step, make_worker, queue_row
from scripted_provider import call


@pytest.mark.parametrize(("elapsed", "action"), [(299, "committed"), (300, "failed")])
def test_a_batch_gets_300_seconds_and_not_one_more(
    mem: Memory, clock: ManualClock, elapsed: int, action: str,
) -> None:
    assert mem.config["batch.timeout_s"] == 300
    (event_id,) = add_archived(mem, "Yuri reads a lot.")
    mem.organize()

    def slow_browse(messages: list[Message], tools: list[ToolSpec], max_out: int) -> ModelReply:
        clock.advance(seconds=elapsed)  # the model thinks, then browses
        return call("list_directory", {})

    worker, provider = make_worker(mem, [slow_browse, archive_only_step()])
    result = worker.tick()
    assert result.action == action, result.error
    if action == "failed":
        assert result.error.startswith("timeout")
        assert len(provider.history) == 1  # no round started at 300 s
        assert queue_row(mem.conn, event_id)["state"] == "pending"
    else:
        assert queue_row(mem.conn, event_id)["state"] == "archive_only"
