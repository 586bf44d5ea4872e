"""The worker lease of a dead process on this host is free at once (issue "Trust", item 6).

A SIGKILLed worker's lease used to block all background work for its full 360 s. Now a holder
that was a process on this host which no longer exists (its pid unused, a zombie, or reused by a
process with another start time) is taken over at once; a live holder, another host's holder or
an unparseable one still waits for its expiry. `--wait` says what it waits for, once per change.

Dead processes are real: a child that ran and was reaped, or one killed and not yet reaped.
Nothing sleeps; the manual clock stands in for waiting.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import T0
from memvault import ManualClock, Memory
from memvault.base.clock import iso, to_micros
from memvault.cli.work import ProgressBars, make_worker
from memvault.home.runs import run_to_end
from memvault.jobs.leases import (
    acquire_lease,
    holder_gone,
    lease_info,
    parse_holder,
    process_holder,
    process_start,
)
from memvault.jobs.worker import Worker, set_busy
from memvault.store.connection import write

HAS_PROC = Path("/proc/self/stat").exists()
LEASE_S = 360.0


def hold(mem: Memory, holder: str, seconds: float = LEASE_S) -> None:
    """Write `holder`'s lease as a worker would, valid for `seconds` from the clock's now."""
    now = mem.clock.now()
    with write(mem.conn):
        mem.conn.execute(
            "INSERT INTO leases (name, holder, batch_id, acquired_at, expires_us)"
            " VALUES ('worker', ?, NULL, ?, ?)",
            (holder, iso(now), to_micros(now + timedelta(seconds=seconds))))


def _reaped() -> int:
    """The pid of a child that has ended and been reaped (so no process has it now)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def live_child() -> Iterator[subprocess.Popen[bytes]]:
    """A child process that lives until the test ends (it waits on its stdin)."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def take(mem: Memory) -> bool:
    return acquire_lease(mem.conn, "me", mem.clock.now(), LEASE_S)


# -- the rule -----------------------------------------------------------------------------------


def test_a_lease_held_by_a_dead_process_on_this_host_is_taken_at_once(mem: Memory) -> None:
    hold(mem, process_holder("w1", pid=_reaped()))
    assert take(mem)
    assert lease_info(mem.conn)["holder"] == "me"


def test_a_lease_held_by_a_live_process_is_not_taken(
    mem: Memory, live_child: subprocess.Popen[bytes],
) -> None:
    holder = process_holder("w1", pid=live_child.pid)
    hold(mem, holder)
    assert not holder_gone(holder)
    assert not take(mem)
    assert lease_info(mem.conn)["holder"] == holder


def test_a_lease_held_by_this_process_is_not_taken(mem: Memory) -> None:
    hold(mem, process_holder("another-worker-here"))
    assert not take(mem)


def test_a_lease_from_another_host_or_of_another_shape_waits_for_its_expiry(
    mem: Memory, clock: ManualClock,
) -> None:
    pid = _reaped()
    for holder in (f"not-{socket.gethostname()}:{pid}:-:w1", "resume", f"{pid}",
                   f"{socket.gethostname()}:{pid}:w1",  # the old host:pid:tag shape
                   f"{socket.gethostname()}:x{pid}:-:w1", f"{socket.gethostname()}:0:-:w1"):
        with write(mem.conn):
            mem.conn.execute("DELETE FROM leases")
        hold(mem, holder)
        assert not holder_gone(holder), holder
        assert not take(mem), holder
    clock.advance(seconds=LEASE_S + 1)
    assert take(mem)  # expiry still frees it


@pytest.mark.skipif(not HAS_PROC, reason="start times come from /proc")
def test_a_reused_pid_with_another_start_time_counts_as_dead(
    mem: Memory, live_child: subprocess.Popen[bytes],
) -> None:
    start = process_start(live_child.pid)
    assert start is not None and start.isdigit()
    # The lease was taken by an earlier process that had this pid (it started at another time).
    holder = f"{socket.gethostname()}:{live_child.pid}:{int(start) + 1}:w1"
    hold(mem, holder)
    assert holder_gone(holder)
    assert take(mem)


@pytest.mark.skipif(not HAS_PROC, reason="process states come from /proc")
def test_a_killed_but_unreaped_holder_counts_as_dead(mem: Memory) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    try:
        holder = process_holder("w1", pid=proc.pid)
        proc.kill()
        # Block until it has ended, but leave it unreaped: a zombie still answers kill(pid, 0).
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        hold(mem, holder)
        assert take(mem)
    finally:
        proc.wait()


def test_the_worker_holder_names_this_host_process_and_start(mem: Memory) -> None:
    worker = make_worker(mem, None, scheduler=False)
    parsed = parse_holder(worker.holder)
    assert parsed is not None
    assert (parsed.host, parsed.pid) == (socket.gethostname(), os.getpid())
    assert parsed.start == (process_start(os.getpid()) or "-")
    assert not holder_gone(worker.holder)
    assert parse_holder(Worker(mem, worker.provider).holder) != parsed  # each worker its own


# -- --wait -------------------------------------------------------------------------------------


def compact_job(mem: Memory) -> int:
    for i in range(3):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    return mem.compact()["job_id"]


def test_wait_takes_a_dead_workers_lease_at_once(
    mem: Memory, clock: ManualClock, capsys: pytest.CaptureFixture[str],
) -> None:
    job_id = compact_job(mem)
    hold(mem, process_holder("killed", pid=_reaped()))
    state = run_to_end(mem, make_worker(mem, None, scheduler=False), job_id, 1, "compact",
                       ProgressBars())
    assert state == "done"
    assert clock.now() == T0  # never waited a poll
    assert "waiting" not in capsys.readouterr().err


def test_wait_says_whose_lease_it_waits_for_once(
    mem: Memory, clock: ManualClock, capsys: pytest.CaptureFixture[str],
) -> None:
    job_id = compact_job(mem)
    poll = mem.config["worker.poll_s"]
    hold(mem, "elsewhere.example:4242:-:w9", seconds=10 * poll)  # another host: expires normally
    state = run_to_end(mem, make_worker(mem, None, scheduler=False), job_id, 1, "compact",
                       ProgressBars())
    assert state == "done"
    until = (T0 + timedelta(seconds=10 * poll)).astimezone(mem.tz).strftime("%H:%M:%S")
    lines = [line for line in capsys.readouterr().err.splitlines() if "waiting" in line]
    assert lines == [f"waiting for the lease held by worker elsewhere.example:4242 until {until}"]


def test_wait_says_when_the_agent_is_busy_once(
    mem: Memory, clock: ManualClock, capsys: pytest.CaptureFixture[str],
) -> None:
    job_id = compact_job(mem)
    set_busy(mem, True, minutes=0.5)  # lapses by itself: the manual clock gets there
    state = run_to_end(mem, make_worker(mem, None, scheduler=False), job_id, 1, "compact",
                       ProgressBars())
    assert state == "done"
    until = (T0 + timedelta(minutes=0.5)).astimezone(mem.tz).strftime("%H:%M:%S")
    lines = [line for line in capsys.readouterr().err.splitlines() if "waiting" in line]
    assert lines == [f"waiting: the agent said it is busy until {until}"]
