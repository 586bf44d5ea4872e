"""The worker lease: one valid lease at a time across every process on a home.

A lease lasts batch.timeout_s + worker.lease_extra_s (360 s by default). A lease whose expiry
passed is free for anyone; its batch is then re-claimed. All checks run inside BEGIN IMMEDIATE,
so two processes cannot both see the lease free.

A lease whose holder is a process on this host that no longer exists is free at once too (a
SIGKILLed worker must not block background work for 360 s; the receipts keep a late commit by a
wrongly presumed dead holder safe). Holders built by `process_holder` read
"host:pid:start:tag"; the start time (from /proc, where there is one) tells a reused pid from
the holder. Holders from other hosts, or in any other shape, expire normally.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from ..base.clock import iso, to_micros
from ..store.connection import write

LEASE = "worker"


def acquire_lease(
    conn: sqlite3.Connection, holder: str, now: datetime, seconds: float,
    batch_id: int | None = None,
) -> bool:
    """Take (or renew) the lease for `holder`; False while another holder's lease is valid."""
    with write(conn):
        if lease_taken(conn, holder, now):
            return False
        take_lease(conn, holder, now, seconds, batch_id)
        return True


def lease_taken(conn: sqlite3.Connection, holder: str, now: datetime) -> bool:
    """True while another holder's lease is live (call inside a write transaction, so the
    answer still holds when `take_lease` follows in it)."""
    row = conn.execute("SELECT holder, expires_us FROM leases WHERE name = ?",
                       (LEASE,)).fetchone()
    return bool(row and row["holder"] != holder and lease_is_live(row, now))


def take_lease(
    conn: sqlite3.Connection, holder: str, now: datetime, seconds: float,
    batch_id: int | None = None,
) -> None:
    """Write `holder`'s lease inside the caller's write transaction, after `lease_taken` said
    False in that same transaction (the worker folds this into its claim)."""
    conn.execute(
        "INSERT INTO leases (name, holder, batch_id, acquired_at, expires_us)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
        " batch_id = excluded.batch_id, acquired_at = excluded.acquired_at,"
        " expires_us = excluded.expires_us",
        (LEASE, holder, batch_id, iso(now), to_micros(now + timedelta(seconds=seconds))),
    )


def claim_lease(conn: sqlite3.Connection, holder: str, now: datetime, seconds: float) -> bool:
    """Take the lease for `holder` inside the caller's write transaction unless another
    holder's is live (False). One statement when the row is free, expired or `holder`'s own:
    the row is written in place (an upsert that returns the row it wrote); only a row another
    holder still holds by time is read, to see whether its process is gone."""
    taken = conn.execute(
        "INSERT INTO leases (name, holder, batch_id, acquired_at, expires_us)"
        " VALUES (?, ?, NULL, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
        " batch_id = excluded.batch_id, acquired_at = excluded.acquired_at,"
        " expires_us = excluded.expires_us"
        " WHERE leases.holder = excluded.holder OR leases.expires_us <= ? RETURNING 1",
        (LEASE, holder, iso(now), to_micros(now + timedelta(seconds=seconds)),
         to_micros(now)),
    ).fetchone()
    if taken is not None:
        return True
    if lease_taken(conn, holder, now):
        return False
    take_lease(conn, holder, now, seconds)  # its holder's process is gone
    return True


# The test of a valid lease (the holder's, unexpired) as an SQL expression, parameters (LEASE,
# holder, now in micros): the commit reads it together with its other checks
# (jobs/records.py commit_state), inside its write transaction.
LEASE_VALID_SQL = "EXISTS (SELECT 1 FROM leases WHERE name = ? AND holder = ? AND expires_us > ?)"


def release_lease(conn: sqlite3.Connection, holder: str) -> None:
    """Give the lease up (only if `holder` still has it)."""
    with write(conn):
        drop_lease(conn, holder)


def drop_lease(conn: sqlite3.Connection, holder: str) -> None:
    """`release_lease` inside the caller's write transaction (the worker's commit or failure
    record gives the lease back with its own writes)."""
    conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (LEASE, holder))


def lease_info(conn: sqlite3.Connection) -> dict | None:
    """The lease row (holder, batch_id, acquired_at, expires_us), or None when nobody holds it."""
    row = conn.execute("SELECT * FROM leases WHERE name = ?", (LEASE,)).fetchone()
    return dict(row) if row else None


def lease_is_live(lease: sqlite3.Row | dict, now: datetime) -> bool:
    """A lease row (holder, expires_us) that still holds: unexpired, and its holder not a gone
    process on this host (whose lease the next worker takes at once)."""
    return lease["expires_us"] > to_micros(now) and not holder_gone(lease["holder"])


def live_lease(conn: sqlite3.Connection, now: datetime) -> dict | None:
    """The lease row when it is live now (`lease_is_live`), else None."""
    lease = lease_info(conn)
    return lease if lease is not None and lease_is_live(lease, now) else None


# -- holders ------------------------------------------------------------------------------------
UNKNOWN_START = "-"  # no /proc: the pid alone decides


@dataclass(frozen=True)
class Holder:
    """A parsed process holder: which host and process took the lease."""

    host: str
    pid: int
    start: str  # the process's start time in clock ticks since boot, or UNKNOWN_START
    tag: str

    def describe(self) -> str:
        return f"{self.host}:{self.pid}"


def process_holder(tag: str, pid: int | None = None) -> str:
    """The holder string for process `pid` (default: this one) on this host: host:pid:start:tag.
    `tag` tells apart several workers in one process."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{process_start(pid) or UNKNOWN_START}:{tag}"


def parse_holder(holder: str) -> Holder | None:
    """The parts of a `process_holder` string; None for any other holder (e.g. "resume")."""
    parts = holder.rsplit(":", 3)  # from the right: only the host could hold a colon
    if len(parts) != 4:
        return None
    host, pid, start, tag = parts
    if not host or not pid.isascii() or not pid.isdigit() or len(pid) > 10:
        return None
    if start != UNKNOWN_START and not (start.isascii() and start.isdigit()):
        return None
    return Holder(host, int(pid), start, tag)


def holder_gone(holder: str) -> bool:
    """True only when `holder` was a process on this host that no longer exists: its pid is
    unused, a zombie, or now another process (another start time). Anything uncertain (another
    host, an unparseable holder, a pid we may not signal) counts as alive."""
    parsed = parse_holder(holder)
    if parsed is None or parsed.host != socket.gethostname() or parsed.pid <= 0:
        return False
    try:
        os.kill(parsed.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # exists, owned by another user: look at its start time below
    except (OSError, OverflowError):
        return False
    stat = _proc_stat(parsed.pid)
    if stat is None:
        return False
    state, start = stat
    if state in ("Z", "X"):  # killed, not yet reaped by its parent: it holds nothing
        return True
    return parsed.start != UNKNOWN_START and start != parsed.start


def process_start(pid: int) -> str | None:
    """The start time of process `pid` (clock ticks since boot), or None without /proc."""
    stat = _proc_stat(pid)
    return stat[1] if stat else None


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, starttime) from /proc/<pid>/stat (fields 3 and 22), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or ")": split after it.
    fields = text.rpartition(")")[2].split()
    if len(fields) < 20:
        return None
    return fields[0], fields[19]
