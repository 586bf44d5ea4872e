"""What the timeline holds, counted for status: events per archive-queue state, and events and
active hot nodes per space. Reads only; each of the spaces the caller sees."""

from __future__ import annotations

import sqlite3

from ..base.spaces import Spaces
from .queue import EVENT_STATES


def event_counts(conn: sqlite3.Connection, spaces: Spaces) -> dict[str, int]:
    """Events (of the spaces `spaces` sees) in all, still hot, and per archive-queue state."""
    seen, args = spaces.sql("space")
    total_events = conn.execute(f"SELECT COUNT(*) FROM events WHERE {seen}", args).fetchone()[0]
    states = dict.fromkeys(EVENT_STATES, 0)
    queued = ("SELECT state, COUNT(*) FROM archive_queue GROUP BY state" if spaces.bound is None
              else "SELECT q.state, COUNT(*) FROM archive_queue q JOIN events e"
                   f" ON e.id = q.event_id WHERE {spaces.sql('e.space')[0]} GROUP BY q.state")
    for state, count in conn.execute(queued, args):
        states[state] = count
    return {"total": total_events, "hot": total_events - sum(states.values()), **states}


def timeline_per_space(conn: sqlite3.Connection, spaces: Spaces) -> dict[str, dict[str, int]]:
    """Per space `spaces` sees: {"events": n, "hot_nodes": active nodes}, for the spaces that
    hold either."""
    seen, args = spaces.sql("space")
    counts: dict[str, dict[str, int]] = {}
    for what, sql in (
        ("events", f"SELECT space, COUNT(*) FROM events WHERE {seen} GROUP BY space"),
        ("hot_nodes", f"SELECT space, COUNT(*) FROM hot_nodes WHERE active = 1 AND {seen}"
                      " GROUP BY space"),
    ):
        for space, count in conn.execute(sql, args):
            counts.setdefault(space, {"events": 0, "hot_nodes": 0})[what] = count
    return counts
