"""The forget audit: one row per `memvault forget`, kept by the `forget_audit` table's one
writer. It records who forgot, when, and how many copies each place held, never the text nor a
hash of it (a short hash of a password is a way to check guesses)."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from ..base.clock import iso


def record_forget(
    conn: sqlite3.Connection, who: str, now: datetime, places: dict[str, int], files: int = 0,
) -> int:
    """Write one forget's audit row inside the caller's write transaction; return its id."""
    cur = conn.execute(
        "INSERT INTO forget_audit (forgotten_at, who, occurrences, places, files)"
        " VALUES (?, ?, ?, ?, ?)",
        (iso(now), who, sum(places.values()), json.dumps(places, sort_keys=True), files),
    )
    return int(cur.lastrowid or 0)


def set_forget_files(conn: sqlite3.Connection, audit_id: int, files: int) -> None:
    """Record how many files under the home a forget rewrote (they are scrubbed after the
    database commit)."""
    conn.execute("UPDATE forget_audit SET files = ? WHERE id = ?", (files, audit_id))


def forget_history(conn: sqlite3.Connection, limit: int = 20) -> list[dict[str, Any]]:
    """The latest forgets, newest first."""
    return [
        {**dict(r), "places": json.loads(r["places"])} for r in conn.execute(
            "SELECT id, forgotten_at, who, occurrences, places, files FROM forget_audit"
            " ORDER BY id DESC LIMIT ?", (limit,))
    ]
