"""Spec rules that a mutation of the code once survived: each test here fails on that mutant.

- A threshold compaction stops under compact.target_ratio (60%) of the threshold, as configured
  (a mutant that hard-coded 0.9 passed the suite).
- Evidence must lie within the claimed page: one character past its end is refused (a mutant
  that allowed `end <= page_end + 1` passed).
- The worker polls every worker.poll_s seconds, 2 by default (a mutant with 60 passed).
"""

from __future__ import annotations

import threading
from pathlib import Path

from helpers import count
from memvault import ManualClock, Memory
from memvault.base.config import load_config
from memvault.base.spaces import EVERY_SPACE
from memvault.jobs.modes.compact import CompactMode
from memvault.jobs.records import create_job
from memvault.store.connection import write
from memvault.timeline.hot import timeline_totals
from modes_support import add_archived, commit_organize, errors_seen, make_worker, obj, open_memory

THRESHOLD = 1_000


def fill_timeline(mem: Memory, tokens: int) -> int:
    """Append CJK events (one estimated token a char) until the hot timeline holds `tokens`."""
    chunk = "记" * 50
    while timeline_totals(mem.conn, EVERY_SPACE)["est_tokens"] + 50 <= tokens:
        mem.append_event(chunk, source="user")
    return timeline_totals(mem.conn, EVERY_SPACE)["est_tokens"]


def threshold_claim(mem: Memory) -> dict | None:
    with write(mem.conn):
        job = create_job(mem.conn, "compact", "threshold", mem.clock.now(),
                         params={"max_seq": 10**9})
    claim = CompactMode().next_claim(mem.conn, job, mem.config, mem.clock.now())
    return claim.fields if claim is not None else None


def test_a_threshold_job_goes_on_until_under_the_configured_share(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, f"[compact]\nthreshold_tokens = {THRESHOLD}\n")
    tokens = fill_timeline(mem, 750)  # between 60% and 90% of the threshold
    assert 0.6 * THRESHOLD <= tokens < 0.9 * THRESHOLD
    assert mem.config["compact.target_ratio"] == 0.6
    assert threshold_claim(mem) is not None  # still above 60%: keep compacting
    mem.close()


def test_a_threshold_job_stops_under_a_higher_configured_share(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock,
                      f"[compact]\nthreshold_tokens = {THRESHOLD}\ntarget_ratio = 0.8\n")
    fill_timeline(mem, 750)
    assert threshold_claim(mem) is None  # 75% is under the configured 80%: done
    mem.close()


def test_evidence_one_char_past_the_page_is_refused(mem: Memory) -> None:
    text = ("Ursula keeps the release calendar and signs off every launch. " * 170)[:10_000]
    (event_id,) = add_archived(mem, text)
    mem.organize()
    page_end = mem.config["organize.page_chars"]
    write_ = [obj("person:ursula", "Ursula")]

    def cite(start: int, end: int):
        return commit_organize(event_id, "continue", progress="p1", objects=write_, evidence=[
            {"object_id": "person:ursula", "event_id": event_id, "start": start, "end": end}])

    worker, provider = make_worker(mem, [cite(page_end - 5, page_end + 1),
                                         cite(page_end - 5, page_end)])
    assert worker.tick().action == "committed"
    errors = errors_seen(provider)
    assert [e["field"] for e in errors] == ["evidence.0"]
    assert "outside the claimed range" in errors[0]["error"]
    assert count(mem.conn, "evidence") == 1


class RecordingStop(threading.Event):
    """A stop event that records each wait and stops the loop after the first one."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0))
        self.set()
        return True


def test_the_worker_polls_every_two_seconds_by_default(home: Path) -> None:
    assert load_config(home, create=True)["worker.poll_s"] == 2.0  # the spec's poll interval


def test_an_idle_worker_waits_poll_s_between_polls(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, "[worker]\npoll_s = 0.5\n")
    worker, _ = make_worker(mem)
    stop = RecordingStop()
    worker.run(stop=stop)
    assert stop.waits == [0.5]
    mem.close()
