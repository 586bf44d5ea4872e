"""The claim's lease, taken by one statement that writes the row in place: a free, expired or
own row is taken without reading it first; a row another holder still holds by time is read,
and taken only when its process on this host is gone."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta

import pytest
from memvault import ManualClock, Memory
from memvault.base.clock import to_micros
from memvault.jobs.leases import claim_lease, lease_info, process_holder
from memvault.store.connection import write

LEASE_S = 360.0


def claim(mem: Memory, holder: str) -> tuple[bool, list[str]]:
    """claim_lease in its own transaction: whether it was taken, and the statements it ran."""
    seen: list[str] = []
    with write(mem.conn):
        mem.conn.set_trace_callback(seen.append)
        try:
            taken = claim_lease(mem.conn, holder, mem.clock.now(), LEASE_S)
        finally:
            mem.conn.set_trace_callback(None)
    return taken, seen


def expiry(mem: Memory) -> int:
    return to_micros(mem.clock.now() + timedelta(seconds=LEASE_S))


@pytest.fixture
def reaped_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def live_pid() -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_free_an_own_and_an_expired_lease_are_taken_in_one_statement(
    mem: Memory, clock: ManualClock,
) -> None:
    taken, seen = claim(mem, "a")  # no row
    assert taken and len(seen) == 1 and seen[0].startswith("INSERT INTO leases")
    clock.advance(seconds=10)
    taken, seen = claim(mem, "a")  # its own row: renewed in place
    assert taken and len(seen) == 1
    assert (lease_info(mem.conn)["holder"], lease_info(mem.conn)["expires_us"]) == (
        "a", expiry(mem))
    clock.advance(seconds=LEASE_S)  # a's lease has expired
    taken, seen = claim(mem, "b")
    assert taken and len(seen) == 1
    assert (lease_info(mem.conn)["holder"], lease_info(mem.conn)["expires_us"]) == (
        "b", expiry(mem))


def test_a_live_holders_lease_is_not_taken_and_not_changed(
    mem: Memory, clock: ManualClock, live_pid: int,
) -> None:
    holder = process_holder("w1", pid=live_pid)
    assert claim(mem, holder)[0]
    before = lease_info(mem.conn)
    clock.advance(seconds=LEASE_S - 1)
    taken, seen = claim(mem, "me")
    assert not taken
    assert len(seen) == 2  # the upsert that did nothing, then the read of the live row
    assert lease_info(mem.conn) == before


def test_a_dead_holders_lease_on_this_host_is_taken_at_once(
    mem: Memory, reaped_pid: int,
) -> None:
    assert claim(mem, process_holder("killed", pid=reaped_pid))[0]
    taken, _ = claim(mem, "me")
    assert taken
    assert (lease_info(mem.conn)["holder"], lease_info(mem.conn)["expires_us"]) == (
        "me", expiry(mem))
