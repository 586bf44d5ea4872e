"""Scheduler rules that once had no direct test: each fails on the mutation named below.

What breaks this test (each mutation made in engine/jobs/scheduler.py, the test run and seen to
fail, the code restored):
- threshold fires strictly above: `est_tokens > threshold` changed to `>=`
  -> test_the_threshold_fires_only_strictly_above_it;
- the hourly scan includes `continue` events: `state IN ('pending', 'continue')` changed to
  `state IN ('pending')` -> test_the_hourly_check_organizes_an_event_left_at_continue;
- the cool-down stops hourly job creation: `if paused or open_jobs(...)` changed to
  `if open_jobs(...)` -> test_the_cool_down_also_stops_the_hourly_job;
- the cool-down lasts until its end: `now < until` changed to `now <= until` -> the same test;
- (engine/jobs/modes/compact.py) a threshold job stops only once the timeline is UNDER 60% of the
  threshold: `est_tokens < target` changed to `<=` ->
  test_a_threshold_job_goes_on_at_exactly_sixty_percent[600].

Issue 35's audit (surviving mutants of engine/jobs/chain.py and engine/jobs/modes/compact.py):
- a chained organize waits while its compaction is `running`: `state IN ('queued', 'running')`
  changed to `state IN ('queued')` -> test_a_chained_organize_waits_while_its_compaction_runs;
- a requested or quiet-time compaction folds raw turns only: the `raw_only` test dropped from
  the claim's eligibility -> test_a_requested_compaction_folds_raw_turns_and_never_a_head;
- the compact.max_age_hours cutoff is strict: `< cutoff` changed to `<=` ->
  test_the_quiet_time_cutoff_takes_only_turns_older_than_max_age_hours[0];
- a threshold compaction with a single node left does nothing: `len(run) < 2` dropped ->
  test_a_threshold_compaction_with_a_single_node_does_nothing.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from memvault import ManualClock, Memory
from memvault.base.clock import parse_time
from memvault.base.spaces import EVERY_SPACE
from memvault.jobs.chain import waits_for
from memvault.jobs.modes.compact import CompactMode
from memvault.jobs.records import create_job, get_job
from memvault.jobs.scheduler import HOURLY_KEY, Scheduler, pause_automatic
from memvault.store.connection import get_state, write
from memvault.timeline.hot import timeline_totals
from modes_support import (
    add_archived,
    archive_only_step,
    cite_page,
    compact_step,
    make_worker,
    open_memory,
    queue_row,
    run_until_idle,
)

THRESHOLD = 1_000
CHUNK = "记" * 50  # CJK: one estimated token a char, so the totals are exact


def jobs_of(sch: Scheduler, mem: Memory, mode: str) -> list:
    """The jobs of `mode` one scheduler check creates now (other modes ignored)."""
    return [j for j in sch.check(mem.clock.now()) if j.mode == mode]


def test_the_threshold_fires_only_strictly_above_it(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, f"[compact]\nthreshold_tokens = {THRESHOLD}\n")
    sch = Scheduler(mem.conn, mem.config, mem.tz)
    for _ in range(THRESHOLD // len(CHUNK)):
        mem.append_event(CHUNK, source="user")
    assert timeline_totals(mem.conn, EVERY_SPACE)["est_tokens"] == THRESHOLD
    assert jobs_of(sch, mem, "compact") == []  # exactly at the threshold: not over it
    mem.append_event("记", source="user")
    assert timeline_totals(mem.conn, EVERY_SPACE)["est_tokens"] == THRESHOLD + 1
    (job,) = jobs_of(sch, mem, "compact")
    assert job.origin == "threshold"
    mem.close()


@pytest.mark.parametrize(("tokens", "claims"), [(600, True), (599, False)])
def test_a_threshold_job_goes_on_at_exactly_sixty_percent(
    home: Path, clock: ManualClock, tokens: int, claims: bool,
) -> None:
    mem = open_memory(home, clock, f"[compact]\nthreshold_tokens = {THRESHOLD}\n")
    assert mem.config["compact.target_ratio"] == 0.6
    for _ in range(tokens // len(CHUNK)):
        mem.append_event(CHUNK, source="user")
    if tokens % len(CHUNK):
        mem.append_event("记" * (tokens % len(CHUNK)), source="user")
    assert timeline_totals(mem.conn, EVERY_SPACE)["est_tokens"] == tokens
    with write(mem.conn):
        job = create_job(mem.conn, "compact", "threshold", clock.now(),
                         params={"max_seq": 10**9})
    claim = CompactMode().next_claim(mem.conn, job, mem.config, clock.now())
    assert (claim is not None) == claims  # 60% is not under 60%: one more batch
    mem.close()


def test_the_hourly_check_organizes_an_event_left_at_continue(
    mem: Memory, clock: ManualClock,
) -> None:
    # A long event whose first page an explicit job read, ending at `continue`.
    (event_id,) = add_archived(mem, ("Wanda signs off every invoice change. " * 300)[:10_000])
    mem.organize()
    worker, _ = make_worker(mem, [cite_page()])
    assert worker.tick().action == "committed"
    assert queue_row(mem.conn, event_id)["state"] == "continue"
    # Nothing is pending: only an event at `continue` is waiting (an explicit job being open
    # does not stop the hourly one, which looks for hourly jobs in flight).
    assert mem.conn.execute(
        "SELECT COUNT(*) FROM archive_queue WHERE state = 'pending'").fetchone()[0] == 0
    clock.advance(hours=1)
    (job,) = jobs_of(Scheduler(mem.conn, mem.config, mem.tz), mem, "organize")
    assert job.origin == "hourly"


def test_the_cool_down_also_stops_the_hourly_job(mem: Memory, clock: ManualClock) -> None:
    add_archived(mem, "Paul's phone number changed.")
    with write(mem.conn):  # as an automatic job's failure leaves it
        pause_automatic(mem.conn, clock.now(), mem.config["worker.cooldown_s"])
    sch = Scheduler(mem.conn, mem.config, mem.tz)
    checked = clock.now()
    assert jobs_of(sch, mem, "organize") == []  # hourly due, an event pending, but cooling down
    assert parse_time(get_state(mem.conn, HOURLY_KEY)) == checked  # the check itself still ran
    clock.advance(seconds=mem.config["worker.cooldown_s"])  # the pause has lapsed
    (job,) = jobs_of(sch, mem, "organize")
    assert job.origin == "hourly"


def jobs_by_mode(mem: Memory) -> dict[str, int]:
    return dict(mem.conn.execute("SELECT mode, id FROM jobs ORDER BY id"))


def test_a_chained_organize_waits_while_its_compaction_runs(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, "[compact]\nnodes_per_batch = 2\n")
    for i in range(4):  # two compaction batches of two turns each
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.organize()  # an explicit request: a compaction, then the organize job after it
    jobs = jobs_by_mode(mem)
    worker, _ = make_worker(mem, [compact_step("met")] * 2 + [archive_only_step()] * 4)
    first = worker.tick()
    assert first.action == "committed"
    compaction, organize = get_job(mem.conn, jobs["compact"]), get_job(mem.conn, jobs["organize"])
    assert compaction.state == "running"  # one batch committed, one to go
    assert waits_for(mem.conn, organize) == compaction.id
    second = worker.tick()
    assert second.action == "committed"
    assert mem.conn.execute("SELECT job_id FROM batches WHERE id = ?",
                            (second.batch_id,)).fetchone()[0] == compaction.id
    run_until_idle(worker)
    # The organize job's first claim came after the compaction's last batch.
    first_organize = mem.conn.execute("SELECT MIN(id) FROM batches WHERE job_id = ?",
                                      (organize.id,)).fetchone()[0]
    assert first_organize > second.batch_id
    mem.close()


def test_a_requested_compaction_folds_raw_turns_and_never_a_head(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock)
    for i in range(2):
        mem.append_event(f"earlier {i}: the team met and agreed on the launch date")
    mem.compact()
    worker, _ = make_worker(mem, [compact_step("met, agreed")] + [compact_step("later")]
                            + [archive_only_step()] * 8)
    assert worker.tick().action == "committed"
    (head,) = [r[0] for r in mem.conn.execute(
        "SELECT id FROM hot_nodes WHERE kind = 'head' AND active = 1")]
    for i in range(2):
        mem.append_event(f"later {i}: the launch moved to Friday, everyone agreed on it")
    mem.organize()  # compacts the raw turns hot now: the two later ones, not the head
    run_until_idle(worker)
    active = mem.conn.execute(
        "SELECT id, kind FROM hot_nodes WHERE active = 1 ORDER BY seq").fetchall()
    assert [tuple(r) for r in active][0] == (head, "head")  # still hot, never re-folded
    (claim,) = [r[0] for r in mem.conn.execute(
        "SELECT claim FROM batches b JOIN jobs j ON j.id = b.job_id"
        " WHERE j.mode = 'compact' AND j.origin = 'explicit' AND b.id > 1")]
    assert head not in json.loads(claim)["node_ids"]
    mem.close()


@pytest.mark.parametrize(("before_s", "compacted"), [(0, False), (1, True)])
def test_the_quiet_time_cutoff_takes_only_turns_older_than_max_age_hours(
    home: Path, before_s: int, compacted: bool,
) -> None:
    cst = timezone(timedelta(hours=8))
    nightly = datetime(2026, 10, 14, 2, 50, tzinfo=cst)  # deep.nightly_at, Shanghai time
    clock = ManualClock(nightly - timedelta(hours=6, seconds=before_s))
    mem = open_memory(home, clock, '[time]\ntimezone = "Asia/Shanghai"\n'
                                   "[compact]\nmax_age_hours = 6\n")
    mem.append_event("TODO: call the bank about the mortgage")
    clock.set(nightly)
    modes = [j.mode for j in Scheduler(mem.conn, mem.config, mem.tz).check(clock.now())]
    assert "deep" in modes
    assert ("compact" in modes) == compacted  # exactly 6 h old is not older than 6 h
    mem.close()


def test_a_threshold_compaction_with_a_single_node_does_nothing(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, f"[compact]\nthreshold_tokens = {THRESHOLD}\n")
    mem.append_event("记" * 1_500, source="user")  # one fragment, over the threshold alone
    assert mem.conn.execute("SELECT COUNT(*) FROM hot_nodes WHERE active = 1").fetchone()[0] == 1
    assert timeline_totals(mem.conn, EVERY_SPACE)["est_tokens"] > THRESHOLD
    with write(mem.conn):
        job = create_job(mem.conn, "compact", "threshold", clock.now(),
                         params={"max_seq": 10**9})
    assert CompactMode().next_claim(mem.conn, job, mem.config, clock.now()) is None
    mem.close()
