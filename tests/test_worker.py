"""The worker: one valid lease at a time, receipts replayed by token, stale revisions
and expired leases refused, nothing claimed while the agent is busy, rotation, recovery with
backoff and terminal blocking, retry_blocked once, the automatic cool-down, the usage ledger.

Real SQLite in tmp_path, a ManualClock, the scripted provider; nothing sleeps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import T0, count
from memvault import ManualClock, Memory, NewEvent
from memvault.cli import main
from memvault.jobs import records as jobs
from memvault.jobs import worker as worker_module
from memvault.jobs.leases import acquire_lease, lease_info
from memvault.jobs.mode import BatchContext, CommitRefused, commit_proposal
from memvault.jobs.modes.compact import CompactionProposal, CompactMode
from memvault.jobs.records import create_job, get_job, mark_claimed, new_batch
from memvault.jobs.scheduler import PAUSE_KEY, pause_key
from memvault.models.base import ModelReply
from memvault.store.connection import get_state, graph_revision, write
from modes_support import (
    add_archived,
    archive_only_step,
    batch_row,
    cite_page,
    commit_organize,
    compact_step,
    counts,
    job_state,
    make_worker,
    obj,
    open_memory,
    organize_step,
    payload,
    put_object,
    queue_row,
    review_step,
)
from scripted_provider import call

LONG = "The quarterly plan was agreed with the team. " * 60  # ~2,700 chars, 2 fragments


# -- leases -------------------------------------------------------------------------------------


def test_second_worker_waits_while_the_lease_is_valid_then_takes_over_after_expiry(
    mem: Memory, home: Path, clock: ManualClock,
) -> None:
    (event_id,) = add_archived(mem, "Alice leads the billing project.")
    mem.organize()
    other = Memory.open(home, clock=clock)  # a second connection, as a second process has
    seen: dict[str, object] = {}

    def b_step(messages, tools, max_out):
        # B runs the batch A abandoned: it was re-claimed and counted as a failed claim.
        row = other.conn.execute("SELECT failures, error FROM batches").fetchone()
        seen["failures_during_b"] = row["failures"]
        seen["error_during_b"] = row["error"]
        return commit_organize(event_id, "linked",
                               objects=[obj("person:alice", "Alice", body="leads billing")],
                               evidence=[{"object_id": "person:alice", "event_id": event_id,
                                          "start": 0, "end": 5}])

    worker_b, provider_b = make_worker(other, [b_step], holder="worker-b")

    def a_step(messages, tools, max_out):
        seen["while_valid"] = worker_b.tick().action
        clock.advance(seconds=361)  # A's lease (300 + 60 s) has now expired
        seen["after_expiry"] = worker_b.tick()
        # A's late proposal (a different object) comes in after B committed the batch.
        return commit_organize(event_id, "linked",
                               objects=[obj("person:bob", "Bob", body="late")],
                               evidence=[{"object_id": "person:bob", "event_id": event_id,
                                          "start": 0, "end": 5}])

    worker_a, provider_a = make_worker(mem, [a_step], holder="worker-a")
    result_a = worker_a.tick()

    assert seen["while_valid"] == "waiting"
    assert provider_b.history and len(provider_b.history) == 1
    result_b = seen["after_expiry"]
    assert result_b.action == "committed"
    assert result_b.batch_id == result_a.batch_id  # the same batch, re-claimed
    assert seen["failures_during_b"] == 1
    assert "never finished" in seen["error_during_b"]
    # A's commit carries the same token: it gets B's receipt back and changes nothing.
    assert result_a.action == "committed"
    assert result_a.receipt["replayed"] is True
    assert result_a.receipt["token"] == result_b.receipt["token"]
    assert count(mem.conn, "receipts") == 1
    assert count(mem.conn, "objects", "id = 'person:bob'") == 0
    assert mem.read_object("person:alice")["object"]["body"] == "leads billing"
    assert queue_row(mem.conn, event_id)["state"] == "linked"
    other.close()


def test_lease_refuses_another_holder_until_it_expires(mem: Memory, clock: ManualClock) -> None:
    assert acquire_lease(mem.conn, "a", clock.now(), 360)
    assert not acquire_lease(mem.conn, "b", clock.now(), 360)
    assert acquire_lease(mem.conn, "a", clock.now(), 360)  # renewing is fine
    assert not acquire_lease(mem.conn, "b", clock.advance(seconds=359), 360)
    assert acquire_lease(mem.conn, "b", clock.advance(seconds=2), 360)
    assert lease_info(mem.conn)["holder"] == "b"


def test_worker_lease_is_timeout_plus_extra(mem: Memory) -> None:
    worker, _ = make_worker(mem)
    assert worker.lease_s == 360


def test_expired_lease_is_refused_at_commit(mem: Memory, clock: ManualClock) -> None:
    (event_id,) = add_archived(mem, "Carol moved to Berlin.")
    job = mem.organize()["job_id"]
    before = counts(mem.conn)

    def slow(messages, tools, max_out):
        clock.advance(seconds=361)  # beyond the 360 s lease, while the model "thinks"
        return commit_organize(event_id, "linked",
                               objects=[obj("person:carol", "Carol", body="lives in Berlin")],
                               evidence=[{"object_id": "person:carol", "event_id": event_id,
                                          "start": 0, "end": 5}])

    worker, _ = make_worker(mem, [slow])
    result = worker.tick()
    assert result.action == "failed"
    assert "lease expired" in result.error
    assert counts(mem.conn) == before
    row = batch_row(mem.conn, result.batch_id)
    assert (row["state"], row["failures"]) == ("claimed", 1)
    assert job_state(mem.conn, job) == "running"


def test_commit_with_an_expired_lease_is_refused_directly(mem: Memory, clock: ManualClock) -> None:
    mem.append_event("a message long enough to be worth a summary of its own, really long")
    job_id = mem.compact()["job_id"]
    conn, mode = mem.conn, CompactMode()
    with write(conn):
        job = get_job(conn, job_id)
        batch = new_batch(conn, job.id,
                          mode.next_claim(conn, job, mem.config, clock.now()).fields,
                          clock.now())
    acquire_lease(conn, "me", clock.now(), 360)
    ctx = BatchContext(conn, mem.config, batch, job, "me", clock.now())
    clock.advance(seconds=400)
    with pytest.raises(CommitRefused, match="lease expired"):
        commit_proposal(ctx, mode, CompactionProposal(node_ids=list(batch.claim.node_ids),
                                                      summary="short"), now=clock.now())
    assert count(conn, "receipts") == 0


# -- receipts and revisions ----------------------------------------------------------------------


def test_same_commit_token_returns_the_original_receipt_and_changes_nothing(
    mem: Memory, clock: ManualClock,
) -> None:
    ids = [mem.append_event(f"message number {i} with enough words to summarise it") for i in
           range(3)]
    job_id = mem.compact()["job_id"]
    conn, mode = mem.conn, CompactMode()
    with write(conn):
        job = get_job(conn, job_id)
        batch = new_batch(conn, job.id,
                          mode.next_claim(conn, job, mem.config, clock.now()).fields,
                          clock.now())
    acquire_lease(conn, "me", clock.now(), 360)
    ctx = BatchContext(conn, mem.config, batch, job, "me", clock.now())
    proposal = CompactionProposal(node_ids=list(batch.claim.node_ids), summary="three messages")
    first = commit_proposal(ctx, mode, proposal)
    snapshot = (counts(conn), graph_revision(conn), count(conn, "hot_nodes"))
    assert first.get("replayed") in (None, False)
    assert first["enqueued"] == ids

    again = commit_proposal(ctx, mode, proposal)
    assert again["replayed"] is True
    assert {k: v for k, v in again.items() if k != "replayed"} == first
    # Even a different proposal under the same token only gets the original receipt back.
    other = commit_proposal(ctx, mode, CompactionProposal(node_ids=list(batch.claim.node_ids),
                                                          summary="other"))
    assert other["head_id"] == first["head_id"] and other["replayed"] is True
    assert (counts(conn), graph_revision(conn), count(conn, "hot_nodes")) == snapshot
    assert count(conn, "receipts") == 1
    assert batch_row(conn, batch.id)["state"] == "committed"


def test_stale_graph_revision_is_refused_then_the_retry_commits(
    mem: Memory, clock: ManualClock,
) -> None:
    put_object(mem, "project:atlas", "Atlas", status="candidate")
    (event_id,) = add_archived(mem, "Dana joined the Atlas effort.")
    mem.organize()

    def approve_meanwhile(messages, tools, max_out):
        mem.approve_project("project:atlas")  # another writer bumps the graph revision
        before.update(counts(mem.conn))
        return commit_organize(event_id, "linked",
                               objects=[obj("person:dana", "Dana")],
                               evidence=[{"object_id": "person:dana", "event_id": event_id,
                                          "start": 0, "end": 4}])

    worker, _ = make_worker(mem, [approve_meanwhile, cite_page("person:dana", "Dana")])
    before: dict = {}
    first = worker.tick()
    assert first.action == "failed"
    assert "stale graph revision" in first.error
    assert counts(mem.conn) == before
    assert worker.tick().action == "idle"  # backing off
    clock.advance(seconds=11)
    second = worker.tick()
    assert second.action == "committed" and second.batch_id == first.batch_id
    assert batch_row(mem.conn, first.batch_id)["failures"] == 0  # a success resets the count
    assert queue_row(mem.conn, event_id)["state"] == "linked"


# -- busy ---------------------------------------------------------------------------------------


def test_worker_claims_nothing_while_the_agent_is_busy(mem: Memory, clock: ManualClock) -> None:
    add_archived(mem, "Eve prefers tea.")
    mem.organize()
    worker, provider = make_worker(mem, [archive_only_step()])
    mem.set_busy(True)
    assert worker.tick().action == "busy"
    assert worker.run(burst=True) == 0
    assert provider.history == [] and count(mem.conn, "batches") == 0
    mem.set_busy(False)
    assert worker.tick().action == "committed"


def test_a_forgotten_busy_flag_expires(mem: Memory, clock: ManualClock) -> None:
    add_archived(mem, "Eve prefers tea.")
    mem.organize()
    worker, _ = make_worker(mem, [archive_only_step()])
    mem.set_busy(True)
    clock.advance(minutes=9)
    assert worker.tick().action == "busy"
    clock.advance(minutes=2)
    assert worker.tick().action == "committed"


# -- rotation -----------------------------------------------------------------------------------


def test_rotation_never_claimed_explicit_first_then_least_recent_claim(
    mem: Memory, clock: ManualClock,
) -> None:
    conn, now = mem.conn, clock.now()
    with write(conn):
        hourly = create_job(conn, "organize", "hourly", now)
        threshold = create_job(conn, "compact", "threshold", now, params={"max_seq": 0})
        explicit = create_job(conn, "organize", "explicit", now)
        nightly = create_job(conn, "deep", "nightly", now)
    assert [j.id for j in jobs.rotation(conn, now)] == [explicit.id, hourly.id, threshold.id,
                                                  nightly.id]
    with write(conn):
        mark_claimed(conn, hourly.id, clock.advance(seconds=1))
        mark_claimed(conn, explicit.id, clock.advance(seconds=1))
        mark_claimed(conn, threshold.id, clock.advance(seconds=1))
    # never-claimed first, then by least recent claim
    assert [j.id for j in jobs.rotation(conn, clock.now())] == [nightly.id, hourly.id, explicit.id,
                                                          threshold.id]


def test_compaction_cannot_starve_a_nightly_job(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, "[compact]\nnodes_per_batch = 2\n")
    for i in range(12):
        mem.append_event(f"line {i} " + "x" * 400)
    put_object(mem, "knowledge:a", "a")
    compact_job = mem.compact()["job_id"]
    worker, _ = make_worker(mem, [
        *[lambda m, t, o: call("commit_compaction", {
            "node_ids": [n["id"] for n in payload(m)["nodes"]], "summary": "s"})] * 20,
    ])
    order = []
    for _ in range(2):
        order.append(worker.tick().job_id)
        clock.advance(seconds=1)
    assert order == [compact_job, compact_job]
    with write(mem.conn):
        deep_job = create_job(mem.conn, "deep", "nightly", clock.now()).id
    worker.provider.steps.insert(0, review_step())
    nxt = worker.tick()
    assert nxt.job_id == deep_job and nxt.action == "committed"
    assert job_state(mem.conn, compact_job) == "running"
    results = []
    for _ in range(3):
        clock.advance(seconds=1)
        results.append(worker.tick())
    # compaction resumes; the deep job finishes at its next turn in the rotation
    assert results[0].job_id == compact_job
    assert job_state(mem.conn, deep_job) == "done"
    mem.close()


# -- recovery -----------------------------------------------------------------------------------


def two_page_event_and_a_small_one(mem: Memory) -> tuple[int, int]:
    big = "Frank runs the Lisbon office and hires engineers. " * 200  # 10,000 chars
    return tuple(add_archived(mem, big[:10_000], "Gina likes hiking."))  # type: ignore


def test_five_failed_claims_with_backoff_then_terminal_blocks_only_that_event(
    mem: Memory, clock: ManualClock,
) -> None:
    big, small = two_page_event_and_a_small_one(mem)
    job_id = mem.organize()["job_id"]
    boom = RuntimeError("model exploded")
    worker, provider = make_worker(mem, [cite_page("person:frank", "Frank"), *[boom] * 5,
                                         archive_only_step()])
    assert worker.tick().action == "committed"  # page 1: continue with progress
    saved = queue_row(mem.conn, big)
    assert (saved["state"], saved["page_cursor"]) == ("continue", 8_000)
    assert saved["progress"] == "read up to char 8000"

    delays = []
    result = worker.tick()
    for attempt in range(1, 5):
        assert result.action == "failed"
        row = batch_row(mem.conn, result.batch_id)
        assert row["failures"] == attempt
        assert worker.tick().action == "idle"  # backing off: no claim before next_attempt_at
        delay = 10 * 2 ** (attempt - 1)
        delays.append(delay)
        clock.advance(seconds=delay - 1)
        assert worker.tick().action == "idle"
        clock.advance(seconds=2)
        result = worker.tick()
    assert result.action == "terminal"
    assert delays == [10, 20, 40, 80]
    row = batch_row(mem.conn, result.batch_id)
    assert (row["state"], row["failures"]) == ("terminal", 5)
    assert "model exploded" in row["error"]

    blocked = queue_row(mem.conn, big)
    assert blocked["state"] == "blocked" and blocked["blocked_batch"] == result.batch_id
    assert (blocked["page_cursor"], blocked["progress"]) == (8_000, "read up to char 8000")
    assert len(mem.read_event(big)["text"]) > 0
    assert mem.read_object("person:frank")["object"]["name"] == "Frank"  # earlier batch kept
    # The other event goes on in the same job.
    assert queue_row(mem.conn, small)["state"] == "pending"
    assert worker.tick().action == "committed"
    assert queue_row(mem.conn, small)["state"] == "archive_only"
    assert worker.tick().action == "idle"
    assert job_state(mem.conn, job_id) == "partial"
    status = mem.status()
    assert status["events"]["blocked"] == 1
    assert any(r["event_id"] == big and r["state"] == "blocked"
               for r in status["oldest_unfinished"])
    assert len(provider.history) == 7


def block_one_event(mem: Memory, clock: ManualClock) -> tuple[int, int]:
    """An event whose organize batch went terminal; returns (event_id, terminal batch id)."""
    (event_id,) = add_archived(mem, "Hank's notes on the migration plan.")
    mem.organize()
    worker, _ = make_worker(mem, [RuntimeError("down")] * 5)
    result = worker.tick()
    while result.action != "terminal":
        clock.advance(seconds=200)
        result = worker.tick()
    worker.tick()  # the job ends partial
    assert queue_row(mem.conn, event_id)["state"] == "blocked"
    return event_id, result.batch_id


def test_retry_blocked_unblocks_once_and_the_same_request_does_not_again(
    mem: Memory, clock: ManualClock,
) -> None:
    event_id, terminal = block_one_event(mem, clock)
    plain = mem.organize()  # without retry_blocked nothing is unblocked
    assert plain["unblocked"] == 0
    assert queue_row(mem.conn, event_id)["state"] == "blocked"

    first = mem.organize(retry_blocked=True)
    assert (first["unblocked"], first["replayed"]) == (1, False)
    row = queue_row(mem.conn, event_id)
    assert row["state"] == "pending" and row["unblocked_by"] == first["request_token"]

    # The event fails again and is blocked by the same batch: the same request derives the
    # same token and unblocks nothing.
    with write(mem.conn):
        mem.conn.execute("UPDATE archive_queue SET state = 'blocked' WHERE event_id = ?",
                         (event_id,))
    again = mem.organize(retry_blocked=True)
    assert again["request_token"] == first["request_token"]
    assert (again["replayed"], again["unblocked"], again["job_id"]) == (True, 0, first["job_id"])
    assert queue_row(mem.conn, event_id)["state"] == "blocked"


def test_retry_blocked_with_an_explicit_token_is_replayed_not_re_applied(
    mem: Memory, clock: ManualClock,
) -> None:
    event_id, _ = block_one_event(mem, clock)
    first = mem.organize(retry_blocked=True, request_token="req-1")
    assert first["unblocked"] == 1
    worker, _ = make_worker(mem, [RuntimeError("still down")] * 5)
    result = worker.tick()
    while result.action != "terminal":
        clock.advance(seconds=200)
        result = worker.tick()
    assert queue_row(mem.conn, event_id)["state"] == "blocked"
    again = mem.organize(retry_blocked=True, request_token="req-1")
    assert (again["replayed"], again["unblocked"]) == (True, 0)
    assert queue_row(mem.conn, event_id)["state"] == "blocked"
    fresh = mem.organize(retry_blocked=True, request_token="req-2")
    assert fresh["unblocked"] == 1


def test_unblocked_event_resumes_from_its_checkpoint(mem: Memory, clock: ManualClock) -> None:
    big, small = two_page_event_and_a_small_one(mem)
    mem.organize()
    worker, _ = make_worker(mem, [cite_page("person:frank", "Frank"),
                                  *[RuntimeError("x")] * 5, archive_only_step()])
    while True:
        result = worker.tick()
        if result.action == "idle" and not mem.conn.execute(
            "SELECT 1 FROM jobs WHERE state IN ('queued', 'running')").fetchone():
            break
        clock.advance(seconds=200)
    assert queue_row(mem.conn, big)["state"] == "blocked"
    receipt = mem.organize(retry_blocked=True)
    assert receipt["unblocked"] == 1
    assert queue_row(mem.conn, big)["state"] == "continue"
    seen: list[dict] = []
    worker.provider.enqueue(organize_step(lambda d: {
        "outcome": "linked",
        "evidence": [{"object_id": "person:frank", "event_id": d["event"]["id"],
                      "start": d["page"]["start"], "end": d["page"]["start"] + 5}]}, seen))
    assert worker.tick().action == "committed"
    assert seen[0]["page"]["start"] == 8_000
    assert seen[0]["progress"] == "read up to char 8000"
    assert queue_row(mem.conn, big)["state"] == "linked"


def compaction_step() -> Any:
    return lambda m, t, o: call("commit_compaction", {
        "node_ids": [n["id"] for n in payload(m)["nodes"]], "summary": "s"})


def test_an_hourly_failure_pauses_only_hourly_jobs_threshold_compaction_goes_on(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, "[compact]\nthreshold_tokens = 1000\n"
                                   "[time]\ntimezone = \"Asia/Shanghai\"\n")
    first, second = add_archived(mem, "Ivy's birthday is in May.", "Jack owns a red bike.")
    worker, provider = make_worker(mem, [RuntimeError("provider down")], scheduler=True)
    result = worker.tick()  # the hourly check creates an organize job; its batch fails
    assert result.action == "failed"
    hourly_job = result.job_id
    assert mem.conn.execute("SELECT origin FROM jobs WHERE id = ?",
                            (hourly_job,)).fetchone()[0] == "hourly"
    assert get_state(mem.conn, pause_key("hourly")) is not None
    assert get_state(mem.conn, PAUSE_KEY) is None  # not every kind

    # The timeline passes the threshold: compaction is not held up by the organize failure.
    for i in range(6):
        mem.append_event(f"chatter {i} " + "y" * 1_000)
    clock.advance(seconds=5)
    worker.provider.enqueue(compaction_step())
    assert worker.tick().action == "committed"
    assert count(mem.conn, "jobs", "mode = 'compact' AND origin = 'threshold'") == 1

    # An explicit request ignores the cool-down (organized as queued).
    receipt = mem.organize(compact_first=False)
    worker.provider.enqueue(archive_only_step())
    done = worker.tick()
    assert done.job_id == receipt["job_id"] and done.action == "committed"
    assert queue_row(mem.conn, second)["state"] == "archive_only"
    assert queue_row(mem.conn, first)["state"] == "pending"  # the failed batch holds it

    clock.advance(minutes=59)
    assert worker.scheduler is not None
    worker.scheduler.check(clock.now())
    assert count(mem.conn, "jobs", "origin = 'hourly'") == 1  # no new hourly job while paused
    mem.close()


def test_a_threshold_failure_pauses_every_automatic_job_for_the_cooldown(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, "[compact]\nthreshold_tokens = 1000\n"
                                   "[worker]\nhourly_s = 60\n")
    for i in range(6):
        mem.append_event(f"chatter {i} " + "y" * 1_000)
    worker, _ = make_worker(mem, [RuntimeError("provider down")], scheduler=True)
    failed = worker.tick()
    assert failed.action == "failed"
    assert mem.conn.execute("SELECT origin FROM jobs WHERE id = ?",
                            (failed.job_id,)).fetchone()[0] == "threshold"
    assert get_state(mem.conn, PAUSE_KEY) is not None
    add_archived(mem, "Lee plays chess.")  # an hourly job would be due in a minute
    assert worker.scheduler is not None
    clock.advance(minutes=30)
    worker.scheduler.check(clock.now())
    assert count(mem.conn, "jobs", "origin = 'hourly'") == 0
    clock.advance(minutes=31)
    worker.scheduler.check(clock.now())
    assert count(mem.conn, "jobs", "origin = 'hourly'") == 1
    mem.close()


def test_explicit_failure_does_not_pause_automatic_jobs(mem: Memory, clock: ManualClock) -> None:
    add_archived(mem, "Kim drives to work.")
    mem.organize()
    worker, _ = make_worker(mem, [RuntimeError("nope")])
    assert worker.tick().action == "failed"
    assert get_state(mem.conn, PAUSE_KEY) is None


# -- the usage ledger ---------------------------------------------------------------------------


def test_usage_ledger_records_every_call(mem: Memory, clock: ManualClock) -> None:
    (event_id,) = add_archived(mem, "Leo is allergic to cats.")
    mem.organize()
    worker, _ = make_worker(mem, [
        call("list_directory", {}),
        ModelReply(finish_reason="length"),
        commit_organize(event_id, "archive_only", reason="nothing durable"),
    ])
    assert worker.tick().action == "committed"
    (other,) = add_archived(mem, "Mia moved.")
    mem.organize()
    worker.provider.enqueue(RuntimeError("down"))
    assert worker.tick().action == "failed"

    usage = mem.usage()
    assert usage["total"]["calls"] == 4
    assert usage["total"]["input_tokens"] == 200  # two scripted tool calls of 100 each
    assert usage["total"]["output_tokens"] == 40
    assert usage["total"]["estimated_calls"] == 2  # the truncated reply and the error
    (row,) = usage["per_day"]
    assert (row["day"], row["mode"], row["calls"], row["failed"]) == ("2026-10-13", "organize",
                                                                    4, 2)
    outcomes = [r[0] for r in mem.conn.execute("SELECT outcome FROM model_calls ORDER BY id")]
    assert outcomes == ["ok", "truncated", "ok", "error"]
    rows = mem.conn.execute("SELECT provider, model, batch_id FROM model_calls").fetchall()
    assert {(r[0], r[1]) for r in rows} == {("scripted", "scripted-1")}
    assert all(r[2] is not None for r in rows)


# -- CLI smoke ----------------------------------------------------------------------------------


def test_cli_organize_without_wait_prints_an_enqueue_receipt(home: Path,
                                                            runner: CliRunner) -> None:
    Memory.open(home).close()  # a missing home is refused: this one exists
    result = runner.invoke(main, ["organize", "--no-wait", "--json"])
    assert result.exit_code == 0, result.output
    receipt = json.loads(result.stdout)
    assert receipt["mode"] == "organize" and receipt["state"] == "queued"
    assert isinstance(receipt["job_id"], int)
    result = runner.invoke(main, ["organize", "--mode", "deep", "--scope", "travel",
                                  "--no-wait", "--json"])
    assert json.loads(result.stdout)["scope"] == "travel"
    with Memory.open(home) as mem:
        assert count(mem.conn, "jobs", "state = 'queued'") == 2
        assert count(mem.conn, "model_calls") == 0


def test_cli_project_approve(home: Path, runner: CliRunner) -> None:
    with Memory.open(home) as mem:
        put_object(mem, "project:atlas", "Atlas", status="candidate")
    result = runner.invoke(main, ["project", "approve", "project:atlas", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["changed"] is True
    result = runner.invoke(main, ["project", "approve", "project:atlas"])
    assert result.exit_code == 0 and "already" in result.output
    with Memory.open(home) as mem:
        assert mem.read_object("project:atlas")["object"]["status"] == "active"
        put_object(mem, "person:zoe", "Zoe")
    result = runner.invoke(main, ["project", "approve", "person:zoe"])
    assert result.exit_code == 1 and "not a project" in result.output


def test_cli_usage(home: Path, runner: CliRunner) -> None:
    with Memory.open(home, clock=ManualClock(T0)) as mem:
        (event_id,) = add_archived(mem, "Nora likes jazz.")
        mem.organize()
        worker, _ = make_worker(mem, [commit_organize(event_id, "archive_only", reason="r")])
        worker.tick()
    result = runner.invoke(main, ["usage", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["total"]["calls"] == 1
    result = runner.invoke(main, ["usage"])
    assert result.exit_code == 0 and "1 calls" in result.output


def test_cli_worker_burst_with_the_default_provider(home: Path, runner: CliRunner) -> None:
    with Memory.open(home) as mem:
        mem.append_event("Olga said hello.")
    result = runner.invoke(main, ["worker", "--burst"])
    assert result.exit_code == 0, result.output
    assert "ran" in result.output


def test_a_provider_error_with_a_lone_surrogate_is_stored_escaped(
    mem: Memory, clock: ManualClock,
) -> None:
    from memvault.models.base import ProviderError

    mem.append_event("message 1: the team agreed on the launch date")
    mem.append_event("message 2: Haoyu books the room for Friday")
    mem.compact()
    worker, _ = make_worker(mem, [ProviderError("bad byte \udc80 from the server")])
    result = worker.tick()
    assert result.action == "failed"
    error = mem.conn.execute("SELECT error FROM batches").fetchone()[0]
    assert "bad byte \\udc80 from the server" in error


# -- per-tick overhead ------------------------------------------------------------------------


def write_transactions(mem: Memory) -> list[str]:
    """Start recording the statements run on `mem`'s connection; the list fills as they run."""
    seen: list[str] = []
    mem.conn.set_trace_callback(seen.append)
    return seen


def test_a_committed_tick_takes_two_write_transactions_claim_and_commit(mem: Memory) -> None:
    """With the recall index caught up, lease and claim share one transaction; the commit carries
    the ledger row of the call that proposed it and gives the lease back."""
    for i in range(6):
        mem.append_event(f"turn {i}: we planned the Aurora launch and its budget in detail.")
    mem.sync_recall_index()
    mem.compact()
    worker, _ = make_worker(mem, [compact_step("s")])
    statements = write_transactions(mem)
    result = worker.tick()
    mem.conn.set_trace_callback(None)
    assert result.action == "committed"
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"] * 2
    # the claim is built from what it wrote, not read back
    assert not [s for s in statements if s.startswith("SELECT * FROM batches WHERE id =")]
    assert lease_info(mem.conn) is None  # released at tick end, as before
    (row,) = mem.conn.execute("SELECT batch_id, outcome FROM model_calls").fetchall()
    assert tuple(row) == (result.batch_id, "ok")


def test_an_idle_tick_with_nothing_to_index_takes_one_write_transaction(mem: Memory) -> None:
    mem.append_event("one small event")
    worker, _ = make_worker(mem, [])
    assert worker.tick().action == "idle"  # indexes the new event
    statements = write_transactions(mem)
    assert worker.tick().action == "idle"
    mem.conn.set_trace_callback(None)
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"]
    assert lease_info(mem.conn) is None


def test_the_tick_syncs_the_recall_index_only_when_something_is_behind(
    mem: Memory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = count_index_syncs(mem, monkeypatch)
    worker, _ = make_worker(mem, [])
    worker.tick()  # the built-in project:daily was new: indexed
    assert len(calls) == 1
    mem.append_event("Ada joined the team.")  # the append indexed it itself
    worker.tick()
    assert len(calls) == 1  # nothing behind: no write transaction for the index
    mem.append_events([NewEvent("Grace joined too.")], index=False)  # a bulk load
    worker.tick()
    assert len(calls) == 2  # an event behind: indexed
    put_object(mem, "person:ada", "Ada")  # a changed object is something to index too
    worker.tick()
    assert len(calls) == 3
    assert count(mem.conn, "recall_dirty") == 0


def count_index_syncs(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The max_events of each Memory.sync_recall_index call from now on."""
    calls: list[int | None] = []
    real = mem.sync_recall_index

    def counting(max_events: int | None = 5_000) -> dict[str, int]:
        calls.append(max_events)
        return real(max_events)

    monkeypatch.setattr(mem, "sync_recall_index", counting)
    return calls


def test_the_lease_is_held_while_the_model_works_and_given_back_by_the_commit(
    mem: Memory,
) -> None:
    mem.append_event("We agreed the Aurora launch date and who writes the release notes.")
    mem.compact()
    held: list[object] = []

    def step(messages, tools, max_out):
        held.append(lease_info(mem.conn)["holder"])
        return compact_step("s")(messages, tools, max_out)

    worker, _ = make_worker(mem, [step], holder="worker-x")
    assert worker.tick().action == "committed"
    assert held == ["worker-x"]
    assert lease_info(mem.conn) is None


def test_a_refused_commit_records_its_call_before_the_next_model_call(mem: Memory) -> None:
    """The commit's call is written with the commit; when the commit is refused (a
    correction), its row is written on its own at once, never held through the next call."""
    mem.append_event("We agreed the Aurora launch date and who writes the release notes.")
    mem.compact()
    rows_seen: list[int] = []

    def bad(messages, tools, max_out):
        return call("commit_compaction", {"node_ids": [999], "summary": "s"})

    def good(messages, tools, max_out):
        rows_seen.append(count(mem.conn, "model_calls"))
        return compact_step("s")(messages, tools, max_out)

    worker, _ = make_worker(mem, [bad, good])
    result = worker.tick()
    assert result.action == "committed" and result.corrections == 1
    assert rows_seen == [1]
    assert count(mem.conn, "model_calls") == 2


def test_a_failed_batch_records_its_calls_and_gives_the_lease_back(mem: Memory) -> None:
    mem.append_event("We agreed the Aurora launch date and who writes the release notes.")
    mem.compact()

    def bad(messages, tools, max_out):
        return call("commit_compaction", {"node_ids": [999], "summary": "s"})

    worker, _ = make_worker(mem, [bad] * 4)
    result = worker.tick()
    assert result.action == "failed"
    assert count(mem.conn, "model_calls") == 4
    assert lease_info(mem.conn) is None


def test_objects_a_run_of_batches_changes_are_indexed_together_yet_always_found(
    mem: Memory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Changed objects wait for the next quiet poll (or DIRTY_BATCH of them) instead of a
    write transaction per batch; recall finds them meanwhile from the objects table."""
    first, second, third = add_archived(mem, "Ada Lovelace joined.", "Grace Hopper joined.",
                                        "Alan Turing joined.")
    mem.organize()
    syncs = count_index_syncs(mem, monkeypatch)
    monkeypatch.setattr(worker_module, "DIRTY_BATCH", 4)
    worker, _ = make_worker(mem, [
        cite_page("person:ada", "Ada Lovelace", body="joined"),
        cite_page("person:grace", "Grace Hopper", body="joined"),
        cite_page("person:alan", "Alan Turing", body="joined"),
    ])
    assert worker.tick().action == "committed"  # after a quiet start: events indexed first
    assert len(syncs) == 1
    assert worker.tick().action == "committed"
    assert len(syncs) == 1  # 2 changed objects wait while batches follow each other
    assert count(mem.conn, "recall_dirty") == 2
    assert mem.find("Grace Hopper")["hits"][0]["id"] == "person:grace"
    assert worker.tick().action == "committed"
    assert len(syncs) == 1
    assert worker.tick().action == "idle"  # 3 < 4 waiting, yet the last tick ran a batch...
    assert len(syncs) == 1
    assert worker.tick().action == "idle"  # ...and this poll is quiet: all indexed together
    assert len(syncs) == 2
    assert count(mem.conn, "recall_dirty") == 0
    assert [queue_row(mem.conn, e)["state"] for e in (first, second, third)] == ["linked"] * 3


def test_a_run_of_batches_indexes_once_dirty_batch_objects_wait(
    mem: Memory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    add_archived(mem, "Ada Lovelace joined.", "Grace Hopper joined.")
    mem.organize()
    monkeypatch.setattr(worker_module, "DIRTY_BATCH", 1)
    worker, _ = make_worker(mem, [cite_page("person:ada", "Ada Lovelace", body="joined"),
                                  cite_page("person:grace", "Grace Hopper", body="joined")])
    assert worker.tick().action == "committed"
    assert count(mem.conn, "recall_dirty") == 1
    assert worker.tick().action == "committed"  # starts by indexing the one waiting
    assert mem.conn.execute("SELECT object_id FROM recall_dirty").fetchall()[0][0] == \
        "person:grace"
