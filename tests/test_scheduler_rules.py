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
"""

from __future__ import annotations

from pathlib import Path

import pytest
from memvault import ManualClock, Memory
from memvault.base.clock import parse_time
from memvault.jobs.modes.compact import CompactMode
from memvault.jobs.records import create_job
from memvault.jobs.scheduler import HOURLY_KEY, Scheduler, pause_automatic
from memvault.store.connection import get_state, write
from memvault.timeline.hot import timeline_totals
from modes_support import add_archived, cite_page, make_worker, open_memory, queue_row

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
    assert timeline_totals(mem.conn)["est_tokens"] == THRESHOLD
    assert jobs_of(sch, mem, "compact") == []  # exactly at the threshold: not over it
    mem.append_event("记", source="user")
    assert timeline_totals(mem.conn)["est_tokens"] == THRESHOLD + 1
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
    assert timeline_totals(mem.conn)["est_tokens"] == tokens
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
