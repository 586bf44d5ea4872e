"""The worker lease: one valid lease at a time across every process on a home.

A lease lasts batch.timeout_s + worker.lease_extra_s (360 s by default). A lease whose expiry
passed is free for anyone; its batch is then re-claimed. All checks run inside BEGIN IMMEDIATE,
so two processes cannot both see the lease free.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

from ..base.clock import iso, to_micros
from .connection import write

LEASE = "worker"


def acquire_lease(
    conn: sqlite3.Connection, holder: str, now: datetime, seconds: float,
    batch_id: int | None = None,
) -> bool:
    """Take (or renew) the lease for `holder`; False while another holder's lease is valid."""
    with write(conn):
        row = conn.execute("SELECT holder, expires_us FROM leases WHERE name = ?",
                           (LEASE,)).fetchone()
        if row and row["holder"] != holder and row["expires_us"] > to_micros(now):
            return False
        conn.execute(
            "INSERT INTO leases (name, holder, batch_id, acquired_at, expires_us)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
            " batch_id = excluded.batch_id, acquired_at = excluded.acquired_at,"
            " expires_us = excluded.expires_us",
            (LEASE, holder, batch_id, iso(now), to_micros(now + timedelta(seconds=seconds))),
        )
        return True


def lease_valid(conn: sqlite3.Connection, holder: str, now: datetime) -> bool:
    """True when `holder` holds an unexpired lease (call inside the commit transaction)."""
    row = conn.execute("SELECT holder, expires_us FROM leases WHERE name = ?", (LEASE,)).fetchone()
    return bool(row and row["holder"] == holder and row["expires_us"] > to_micros(now))


def release_lease(conn: sqlite3.Connection, holder: str) -> None:
    """Give the lease up (only if `holder` still has it)."""
    with write(conn):
        conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (LEASE, holder))


def lease_info(conn: sqlite3.Connection) -> dict | None:
    row = conn.execute("SELECT * FROM leases WHERE name = ?", (LEASE,)).fetchone()
    return dict(row) if row else None
