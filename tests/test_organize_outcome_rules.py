"""organize's rules for an event's place in the archive queue, across failures and commits.

Rules (docs/spec.md 2.2 "Outcome rules" and 4.4; /work/shared/SPEC.md 2 and 5):
- A batch that fails leaves its event waiting as `continue` at its page cursor, with its
  progress; the retried batch reads on from that cursor. A terminal failure blocks the event
  with cursor and progress kept, and `retry_blocked=True` puts an event with pages read back
  as `continue` (an unread one as `pending`), the next batch reading on from the cursor.
- `linked` and `archive_only` are accepted only once the event's last char has been read: a
  page ending one char short of the event is not the last, and ending there is a correction.
- A commit is refused, writing nothing, when its event is no longer waiting (`pending` or
  `continue`) at commit time: blocked, finished or settled elsewhere since the claim.

What breaks this test (each mutation made in the engine, the test run and seen to fail, the
code restored):
- engine/timeline/queue.py `unblock_all`: `CASE WHEN page_cursor > 0 THEN 'continue' ELSE
  'pending' END` changed to `'pending'`, separately to `'continue'`, and separately
  `page_cursor = 0` added to the SET (each survived the test modules that import
  timeline.queue; test_worker.py's retry tests catch them too) ->
  test_an_unblocked_event_waits_as_continue_at_its_cursor_an_unread_one_as_pending;
- engine/timeline/queue.py `block_event`: `page_cursor = 0` added to the SET -> the same test;
- engine/jobs/modes/organize.py `apply`: `last = claim.page_end >= row["chars"]` changed to
  `>= row["chars"] - 1` (the whole suite passed) ->
  test_ending_an_event_one_char_before_its_end_is_refused[linked] and [archive_only];
- engine/jobs/modes/organize.py `apply`: the refusal `row is None or row["state"] not in
  (PENDING, CONTINUE)` cut to `row is None` (the whole suite passed) ->
  test_a_commit_for_an_event_no_longer_waiting_is_refused_and_writes_nothing[*].
"""

from __future__ import annotations

from typing import Any

import pytest
from memvault import ManualClock, Memory
from memvault.jobs.worker import TickResult, Worker
from memvault.models.base import Message, ModelReply, ToolSpec
from memvault.store.connection import graph_revision, write
from memvault.timeline.queue import block_event, record_outcome, settle_archive_only
from modes_support import (
    add_archived,
    commit_organize,
    counts,
    errors_seen,
    make_worker,
    obj,
    one_batch,
    organize_step,
    queue_row,
)

PAGE = 8_000  # organize.page_chars
TEN_K = ("Ursula keeps the release calendar and signs off every launch. " * 170)[:10_000]


def cite(event_id: int, start: int, end: int) -> dict[str, Any]:
    return {"object_id": "person:ursula", "event_id": event_id, "start": start, "end": end}


def read_on(seen: list[dict[str, Any]]) -> Any:
    """A model step: continue with progress on a page that is not the last, cite and link on
    the last; keeps each payload it was sent."""

    def build(data: dict[str, Any]) -> dict[str, Any]:
        page = data["page"]
        if not page["last"]:
            return {"outcome": "continue", "progress": f"read to {page['end']}"}
        return {"outcome": "linked", "objects": [obj("person:ursula", "Ursula")],
                "evidence": [cite(data["event"]["id"], page["start"], page["start"] + 6)]}

    return organize_step(build, seen)


def waiting(mem: Memory, event_id: int) -> tuple[str, int, str | None]:
    row = queue_row(mem.conn, event_id)
    return row["state"], row["page_cursor"], row["progress"]


def until_terminal(worker: Worker, clock: ManualClock) -> TickResult:
    """Tick (moving the clock past each backoff) until a batch goes terminal."""
    result = worker.tick()
    while result.action != "terminal":
        assert result.action in ("failed", "idle"), result
        clock.advance(seconds=200)
        result = worker.tick()
    return result


# -- a failed batch, a terminal one and retry_blocked ------------------------------------------


def test_a_failed_batch_leaves_its_event_continue_and_the_retry_reads_on_from_the_cursor(
    mem: Memory, clock: ManualClock,
) -> None:
    (event_id,) = add_archived(mem, TEN_K)
    mem.organize()
    seen: list[dict[str, Any]] = []
    worker, _ = make_worker(mem, [read_on(seen), RuntimeError("model down"), read_on(seen),
                                  read_on(seen)])
    assert worker.tick().action == "committed"  # page 1: continue
    assert worker.tick().action == "failed"  # page 2's batch fails
    assert waiting(mem, event_id) == ("continue", PAGE, f"read to {PAGE}")
    clock.advance(seconds=10)  # the first backoff
    assert worker.tick().action == "committed"  # the retry, its page halved from the cursor
    assert worker.tick().action == "committed"
    assert [(d["page"]["start"], d["progress"]) for d in seen] == [
        (0, None), (PAGE, f"read to {PAGE}"), (9_000, "read to 9000")]
    assert waiting(mem, event_id)[:2] == ("linked", 10_000)


def test_an_unblocked_event_waits_as_continue_at_its_cursor_an_unread_one_as_pending(
    mem: Memory, clock: ManualClock,
) -> None:
    read, unread = add_archived(mem, TEN_K, "Gina likes hiking in the Alps.")
    mem.organize()
    seen: list[dict[str, Any]] = []
    worker, provider = make_worker(mem, [read_on(seen), *[RuntimeError("model down")] * 10])
    assert worker.tick().action == "committed"  # page 1 of `read`: continue
    until_terminal(worker, clock)  # page 2 of `read`
    until_terminal(worker, clock)  # the only page of `unread`
    assert waiting(mem, read) == ("blocked", PAGE, f"read to {PAGE}")
    assert waiting(mem, unread) == ("blocked", 0, None)

    assert mem.organize(retry_blocked=True)["unblocked"] == 2
    assert waiting(mem, read) == ("continue", PAGE, f"read to {PAGE}")
    assert waiting(mem, unread) == ("pending", 0, None)
    events = mem.status()["events"]
    assert (events["continue"], events["pending"], events["blocked"]) == (1, 1, 0)

    provider.enqueue(read_on(seen), read_on(seen))
    assert worker.tick().action == "committed"
    assert (seen[-1]["event"]["id"], seen[-1]["page"]["start"], seen[-1]["progress"]) == (
        read, PAGE, f"read to {PAGE}")
    assert waiting(mem, read)[:2] == ("linked", 10_000)


# -- the last char -----------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["linked", "archive_only"])
def test_ending_an_event_one_char_before_its_end_is_refused(mem: Memory, outcome: str) -> None:
    (event_id,) = add_archived(mem, TEN_K[:PAGE + 1])  # one char more than a page
    mem.organize()

    def end_it(start: int, end: int) -> ModelReply:
        if outcome == "archive_only":
            return commit_organize(event_id, outcome, reason="a calendar note, nothing durable")
        return commit_organize(event_id, outcome, objects=[obj("person:ursula", "Ursula")],
                               evidence=[cite(event_id, start, end)])

    result, provider = one_batch(mem, end_it(0, 6),
                                 commit_organize(event_id, "continue", progress="page 1 read"))
    assert result.action == "committed" and result.receipt["page"] == [0, PAGE]
    (error,) = errors_seen(provider)
    assert error["field"] == "events.0.outcome"
    assert f"unread text after char {PAGE}" in error["error"]
    assert waiting(mem, event_id) == ("continue", PAGE, "page 1 read")
    assert counts(mem.conn)["evidence"] == 0

    result, provider = one_batch(mem, end_it(PAGE, PAGE + 1))  # the last char's page
    assert result.action == "committed" and result.receipt["page"] == [PAGE, PAGE + 1]
    assert errors_seen(provider) == []
    assert waiting(mem, event_id)[:2] == (outcome, PAGE + 1)


# -- an event that stopped waiting between claim and commit ------------------------------------


def stop_waiting(mem: Memory, event_id: int, how: str) -> None:
    """What another batch or worker may do to the event while this batch's model is thinking,
    through the queue's own writers; none of them moves the graph revision."""
    now = mem.clock.now()
    with write(mem.conn):
        if how == "blocked":  # a terminal failure recorded for its batch
            (batch,) = mem.conn.execute("SELECT id FROM batches WHERE state = 'claimed'")
            block_event(mem.conn, event_id, batch[0], now)
        elif how == "archive_only":  # settled by the engine as memory output
            settle_archive_only(mem.conn, event_id, 44, "wholly memory output", now)
        else:  # finished by another batch
            record_outcome(mem.conn, event_id, how, 44, None, None, now)


@pytest.mark.parametrize("how", ["blocked", "archive_only", "linked"])
def test_a_commit_for_an_event_no_longer_waiting_is_refused_and_writes_nothing(
    mem: Memory, how: str,
) -> None:
    (event_id,) = add_archived(mem, "Victor is the new on-call lead for payments.")
    mem.organize()
    before: dict[str, Any] = {}

    def think_then_commit(messages: list[Message], tools: list[ToolSpec],
                          max_out: int) -> ModelReply:
        stop_waiting(mem, event_id, how)
        before.update(counts(mem.conn), queue=queue_row(mem.conn, event_id),
                      revision=graph_revision(mem.conn))
        return commit_organize(event_id, "linked", objects=[obj("person:victor", "Victor")],
                               evidence=[{"object_id": "person:victor", "event_id": event_id,
                                          "start": 0, "end": 6}])

    result, _ = one_batch(mem, think_then_commit)
    assert result.action == "failed"
    assert f"event {event_id} is no longer waiting to be organized" in (result.error or "")
    after = {**counts(mem.conn), "queue": queue_row(mem.conn, event_id),
             "revision": graph_revision(mem.conn)}
    assert after == before  # no object, version, evidence or receipt; the queue row as it was
    assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE id = 'person:victor'"
                            ).fetchone()[0] == 0
