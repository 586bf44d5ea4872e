"""The scheduler: threshold compaction, the hourly organize check and the nightly deep
review, all on a ManualClock; nothing sleeps and an empty queue never calls the model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from helpers import count
from memvault import ManualClock, Memory
from memvault.base.clock import parse_time
from memvault.base.spaces import EVERY_SPACE
from memvault.jobs.scheduler import HOURLY_KEY, NIGHTLY_KEY, Scheduler
from memvault.store.connection import get_state
from memvault.timeline.hot import timeline_totals
from modes_support import (
    add_archived,
    archive_only_step,
    compact_step,
    job_state,
    make_worker,
    open_memory,
    put_object,
    review_step,
)

SHANGHAI = '[time]\ntimezone = "Asia/Shanghai"\n'
CST = timezone(timedelta(hours=8))


def at(day: int, hh: int, mm: int, ss: int = 0) -> datetime:
    return datetime(2026, 10, day, hh, mm, ss, tzinfo=CST)


def scheduler(mem: Memory) -> Scheduler:
    return Scheduler(mem.conn, mem.config, mem.tz)


def organize_jobs(sch: Scheduler, now: datetime) -> list:
    """The organize jobs a check creates (the nightly review may appear too; ignored here)."""
    return [j for j in sch.check(now) if j.mode == "organize"]


# -- hourly -------------------------------------------------------------------------------------


def test_empty_queue_never_calls_the_model(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, SHANGHAI)
    # The nightly review, made up at noon, legitimately reviews the built-in project:daily:
    # that is the one model call. Six hourly checks over an empty queue add none.
    seen: list[dict] = []
    worker, provider = make_worker(mem, [review_step(seen=seen)], scheduler=True)
    actions = []
    for _ in range(6):
        actions.append(worker.tick().action)
        clock.advance(hours=1)
    assert actions.count("committed") == 1 and set(actions) == {"committed", "idle"}
    assert [o["id"] for d in seen for o in d["review"]] == ["project:daily"]
    assert len(provider.history) == 1 and provider.history[0]["tools"][-1] == "commit_review"
    assert count(mem.conn, "jobs", "mode = 'organize'") == 0
    assert count(mem.conn, "batches", "job_id NOT IN (SELECT id FROM jobs WHERE mode = 'deep')"
                 ) == 0
    assert count(mem.conn, "model_calls", "mode IS NOT 'deep'") == 0
    assert count(mem.conn, "model_calls") == 1
    mem.close()


def test_hourly_check_time_is_persisted(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, SHANGHAI)
    first = clock.now()
    scheduler(mem).check(first)
    assert parse_time(get_state(mem.conn, HOURLY_KEY)) == first
    mem.close()
    # A restarted worker (a new process) does not check again before the hour is up.
    again = Memory.open(home, clock=clock)
    add_archived(again, "Paul's phone number changed.")
    assert scheduler(again).check(first + timedelta(minutes=59)) == []
    assert parse_time(get_state(again.conn, HOURLY_KEY)) == first
    (job,) = scheduler(again).check(first + timedelta(minutes=60))
    assert (job.mode, job.origin) == ("organize", "hourly")
    assert parse_time(get_state(again.conn, HOURLY_KEY)) == first + timedelta(minutes=60)
    again.close()


def test_hourly_creates_a_job_only_when_events_pend_and_none_is_in_flight(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, SHANGHAI)
    sch = scheduler(mem)
    assert organize_jobs(sch, clock.now()) == []  # nothing pending
    add_archived(mem, "Quinn bought a house.")
    assert organize_jobs(sch, clock.advance(minutes=30)) == []  # not due yet
    (job,) = organize_jobs(sch, clock.advance(minutes=31))
    assert job.origin == "hourly"
    add_archived(mem, "Rita started a course.")
    assert organize_jobs(sch, clock.advance(hours=1)) == []  # one hourly job still in flight
    assert parse_time(get_state(mem.conn, HOURLY_KEY)) == clock.now()

    # The first check also made up the nightly review, which reviews the built-in
    # project:daily (one model call) before the hourly job runs.
    worker, _ = make_worker(mem, [review_step(), archive_only_step(), archive_only_step()])
    while worker.tick().action != "idle":
        pass
    assert job_state(mem.conn, job.id) == "done"
    assert count(mem.conn, "jobs", "mode = 'deep' AND state = 'done'") == 1
    assert organize_jobs(sch, clock.advance(hours=1)) == []  # done, but nothing pending any more
    add_archived(mem, "Sam got a dog.")
    assert organize_jobs(sch, clock.advance(minutes=10)) == []
    (again,) = organize_jobs(sch, clock.advance(hours=1))
    assert again.origin == "hourly" and again.id != job.id
    mem.close()


def test_hourly_job_runs_through_the_worker(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, SHANGHAI)
    ids = add_archived(mem, "Tom likes chess.", "Uma likes tennis.")
    worker, provider = make_worker(mem, [archive_only_step()] * 2, scheduler=True)
    results = [worker.tick() for _ in range(3)]
    assert [r.action for r in results] == ["committed", "committed", "idle"]
    assert len(provider.history) == 2
    states = {r[0] for r in mem.conn.execute(
        "SELECT state FROM archive_queue WHERE event_id IN (?, ?)", ids)}
    assert states == {"archive_only"}
    assert count(mem.conn, "jobs", "origin = 'hourly' AND state = 'done'") == 1
    mem.close()


# -- threshold compaction -----------------------------------------------------------------------

THRESHOLD = SHANGHAI + "[compact]\nthreshold_tokens = 1000\nnodes_per_batch = 2\n"


def test_threshold_compaction_stops_under_sixty_percent(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, THRESHOLD)
    worker, provider = make_worker(mem, [compact_step("s")] * 4, scheduler=True)
    mem.append_event("a" * 1_999)
    assert worker.tick().action == "idle"  # 500 tokens: under the threshold
    mem.append_event("b" * 1_999)
    for i in range(4):
        mem.append_event(f"{i}" * 399)  # 100 tokens each: 1,400 in all
    assert timeline_totals(mem.conn, EVERY_SPACE)["est_tokens"] == 1_400
    first = worker.tick()
    assert first.action == "committed"
    job = mem.conn.execute("SELECT * FROM jobs WHERE id = ?", (first.job_id,)).fetchone()
    assert (job["mode"], job["origin"]) == ("compact", "threshold")
    assert timeline_totals(mem.conn, EVERY_SPACE)["est_tokens"] < 600
    assert worker.tick().action == "idle"  # under 60 %: the job ends, though nodes remain
    assert job_state(mem.conn, first.job_id) == "done"
    assert len(provider.history) == 1
    assert count(mem.conn, "hot_nodes", "active = 1 AND kind = 'raw'") == 4
    mem.close()


def test_threshold_job_leaves_late_nodes_alone_and_ends_with_its_range(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, THRESHOLD)
    for ch in "abcd":
        mem.append_event(ch * 1_999)  # 2,000 tokens, four nodes
    late: list[int] = []

    def first_step(messages, tools, max_out):
        late.extend(mem.append_event(ch * 1_999) for ch in "ef")  # arrive during the job
        return compact_step("s")(messages, tools, max_out)

    worker, provider = make_worker(mem, [first_step, *[compact_step("s")] * 5], scheduler=True)
    first = worker.tick()
    job_id = first.job_id
    results = [first]
    while job_state(mem.conn, job_id) not in ("done", "partial"):
        results.append(worker.tick())
    assert [r.action for r in results] == ["committed"] * 3 + ["idle"]
    # The range (nodes 1-4) is done: the job ended although the timeline is still over 60 %.
    assert timeline_totals(mem.conn, EVERY_SPACE)["est_tokens"] > 600
    late_nodes = mem.conn.execute(
        "SELECT active, kind, parent_id FROM hot_nodes WHERE event_id IN (?, ?)", late
    ).fetchall()
    assert [tuple(r) for r in late_nodes] == [(1, "raw", None), (1, "raw", None)]
    assert count(mem.conn, "jobs", "mode = 'compact'") == 1
    mem.close()


# -- nightly deep -------------------------------------------------------------------------------


def test_nightly_deep_at_0250_local_after_five_quiet_minutes_once_per_date(
    home: Path,
) -> None:
    clock = ManualClock(at(14, 2, 40))
    mem = open_memory(home, clock, SHANGHAI)
    sch = scheduler(mem)
    mem.append_event("late night chat")  # activity at 02:40
    clock.set(at(14, 2, 47))
    mem.append_event("still chatting")  # activity at 02:47
    assert sch.check(at(14, 2, 49)) == []  # before 02:50
    assert sch.check(at(14, 2, 50)) == []  # postponed: only 3 quiet minutes
    assert sch.check(at(14, 2, 51, 59)) == []
    (job,) = sch.check(at(14, 2, 52))  # five quiet minutes
    assert (job.mode, job.origin) == ("deep", "nightly")
    assert get_state(mem.conn, NIGHTLY_KEY) == "2026-10-14"
    local_date = mem.conn.execute("SELECT local_date FROM jobs WHERE id = ?",
                                  (job.id,)).fetchone()[0]
    assert local_date == "2026-10-14"
    assert sch.check(at(14, 3, 30)) == []  # once per local date
    assert sch.check(at(14, 23, 59)) == []
    assert sch.check(at(15, 2, 49)) == []
    # The chats of 02:40 and 02:47 are a day old now: compacted and organized first.
    *quiet, tomorrow = sch.check(at(15, 2, 50))
    assert [(j.mode, j.origin) for j in quiet] == [("compact", "nightly"), ("organize", "nightly")]
    assert (tomorrow.mode, tomorrow.origin) == ("deep", "nightly")
    assert tomorrow.id != job.id
    assert get_state(mem.conn, NIGHTLY_KEY) == "2026-10-15"
    mem.close()


def test_nightly_uses_the_configured_zone_not_utc(home: Path) -> None:
    # 18:49 UTC is 02:49 in Shanghai: too early; 18:50 UTC is 02:50 on the next local date.
    clock = ManualClock(datetime(2026, 10, 13, 18, 0, tzinfo=UTC))
    mem = open_memory(home, clock, SHANGHAI)
    sch = scheduler(mem)
    assert sch.check(datetime(2026, 10, 13, 18, 49, tzinfo=UTC)) == []
    (job,) = sch.check(datetime(2026, 10, 13, 18, 50, tzinfo=UTC))
    assert get_state(mem.conn, NIGHTLY_KEY) == "2026-10-14"
    mem.close()


def test_nightly_is_made_up_once_when_started_after_0250(home: Path) -> None:
    clock = ManualClock(at(14, 10, 0))
    mem = open_memory(home, clock, SHANGHAI)
    sch = scheduler(mem)
    (job,) = sch.check(clock.now())
    assert job.mode == "deep"
    assert sch.check(at(14, 11, 0)) == []
    assert sch.check(at(14, 23, 0)) == []
    mem.close()


def test_nightly_postponed_while_the_conversation_goes_on(home: Path) -> None:
    clock = ManualClock(at(14, 2, 50))
    mem = open_memory(home, clock, SHANGHAI)
    sch = scheduler(mem)
    for minute in range(50, 60):
        clock.set(at(14, 2, minute))
        mem.append_event(f"message at 02:{minute}")
        assert sch.check(clock.now()) == []
    assert sch.check(at(14, 3, 3, 59)) == []
    (job,) = sch.check(at(14, 3, 4))  # five minutes after the last message at 02:59
    assert job.origin == "nightly"
    mem.close()


def test_nightly_job_reviews_objects_through_the_worker(home: Path) -> None:
    clock = ManualClock(at(14, 2, 30))
    mem = open_memory(home, clock, SHANGHAI)
    put_object(mem, "person:vera", "Vera")
    seen: list[dict] = []
    worker, provider = make_worker(mem, [review_step(seen=seen)], scheduler=True)
    assert worker.tick().action == "idle"
    clock.set(at(14, 2, 50))
    result = worker.tick()
    assert result.action == "committed"
    assert [o["id"] for o in seen[0]["review"]] == ["person:vera", "project:daily"]
    assert worker.tick().action == "idle"
    assert job_state(mem.conn, result.job_id) == "done"
    mem.close()


# -- cost of a poll ---------------------------------------------------------------------------


def test_a_check_with_nothing_due_takes_no_write_transaction(
    home: Path, clock: ManualClock,
) -> None:
    """Reads decide that nothing can be due; when something may be, the check decides again
    under the write lock, as before."""
    mem = open_memory(home, clock, SHANGHAI)
    sch = scheduler(mem)
    sch.check(at(1, 1, 0))  # the first hourly check: stores its time
    statements: list[str] = []
    mem.conn.set_trace_callback(statements.append)
    assert sch.check(at(1, 1, 30)) == []  # 30 min later, before 02:50: nothing is due
    assert not [s for s in statements if s.startswith("BEGIN")]
    assert [j.mode for j in sch.check(at(1, 2, 50))] == ["deep"]  # the nightly window opens
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"]
    assert sch.check(at(1, 2, 55)) == []  # deep made today, hourly just checked: reads only
    assert len([s for s in statements if s.startswith("BEGIN")]) == 1
    mem.conn.set_trace_callback(None)
    assert parse_time(get_state(mem.conn, HOURLY_KEY)) == at(1, 2, 50)  # hourly was due too
