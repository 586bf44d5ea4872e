"""What `memvault status` and `memory_status` report: counts per state, the oldest unfinished
records, the batches in flight or failing (with the cause), the timeline's size and the
database's health. Reads only."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..jobs.progress import batch_report
from ..store.connection import graph_revision
from ..store.disk import disk_usage
from ..store.ledger import usage_summary
from ..store.migrations import CORE_FILES, EVENT_STATES
from ..store.vault_tables import vault_status
from ..timeline.hot import timeline_totals

UNFINISHED = ("pending", "continue", "blocked")


def event_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Events in all, still hot, and per archive-queue state."""
    total_events = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    states = dict.fromkeys(EVENT_STATES, 0)
    for state, count in conn.execute("SELECT state, COUNT(*) FROM archive_queue GROUP BY state"):
        states[state] = count
    return {"total": total_events, "hot": total_events - sum(states.values()), **states}


def object_counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """Objects per type and status (a merged object counts as 'merged')."""
    objects: dict[str, dict[str, int]] = {}
    for type_, status, count in conn.execute(
        "SELECT type, CASE WHEN redirect_to IS NULL THEN status ELSE 'merged' END, COUNT(*)"
        " FROM objects GROUP BY 1, 2"
    ):
        objects.setdefault(type_, {})[status] = count
    return objects


def memory_status(conn: sqlite3.Connection, oldest: int = 20) -> dict[str, Any]:
    """A snapshot of the whole memory, cheap enough to call every turn."""
    events = event_counts(conn)
    objects = object_counts(conn)
    jobs = dict(conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
    unfinished = [
        dict(r)
        for r in conn.execute(
            "SELECT q.event_id, q.state, q.enqueued_at, q.page_cursor, e.chars, e.occurred_at,"
            " substr(e.text, 1, 60) AS preview FROM archive_queue q JOIN events e"
            f" ON e.id = q.event_id WHERE q.state IN {UNFINISHED!r}"
            " ORDER BY q.enqueued_at, q.event_id LIMIT ?",
            (oldest,),
        )
    ]
    core = {
        name: (row[0] if (row := conn.execute(
            "SELECT length(content) FROM core_files WHERE name = ? ORDER BY version DESC LIMIT 1",
            (name,),
        ).fetchone()) else None)
        for name in CORE_FILES
    }
    return {
        "events": events,
        "objects": objects,
        "relations": conn.execute("SELECT COUNT(*) FROM relations").fetchone()[0],
        "evidence": conn.execute("SELECT COUNT(*) FROM evidence").fetchone()[0],
        "timeline": timeline_totals(conn),
        "jobs": jobs,
        "batches": batch_report(conn),  # in flight, retrying with the cause, terminal
        "oldest_unfinished": unfinished,
        "core_files_chars": core,
        "graph_revision": graph_revision(conn),
        "vault": vault_status(conn),
        "disk": disk_usage(conn),
        "usage": usage_summary(conn, days=7),
        "quick_check": conn.execute("PRAGMA quick_check").fetchone()[0],
    }
