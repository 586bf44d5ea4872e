"""What the graph holds, counted for status: objects per type and status, live objects per
space, relations and evidence links. Reads only; each of the spaces the caller sees."""

from __future__ import annotations

import sqlite3

from ..base.spaces import Spaces


def object_counts(conn: sqlite3.Connection, spaces: Spaces) -> dict[str, dict[str, int]]:
    """Objects (of the spaces `spaces` sees) per type and status (a merged object counts as
    'merged')."""
    objects: dict[str, dict[str, int]] = {}
    seen, args = spaces.sql("space")
    for type_, status, count in conn.execute(
        "SELECT type, CASE WHEN redirect_to IS NULL THEN status ELSE 'merged' END, COUNT(*)"
        f" FROM objects WHERE {seen} GROUP BY 1, 2", args,
    ):
        objects.setdefault(type_, {})[status] = count
    return objects


def live_objects_per_space(conn: sqlite3.Connection, spaces: Spaces) -> dict[str, int]:
    """Live (not merged) objects per space `spaces` sees."""
    seen, args = spaces.sql("space")
    return {space: count for space, count in conn.execute(
        f"SELECT space, COUNT(*) FROM objects WHERE redirect_to IS NULL AND {seen}"
        " GROUP BY space", args)}


def relation_count(conn: sqlite3.Connection, spaces: Spaces) -> int:
    """Relations (archived ones too) whose two ends `spaces` both sees."""
    if spaces.bound is None:
        return int(conn.execute("SELECT COUNT(*) FROM relations").fetchone()[0])
    src, args = spaces.sql("s.space")
    dst, _ = spaces.sql("d.space")
    return int(conn.execute(
        "SELECT COUNT(*) FROM relations r JOIN objects s ON s.id = r.src_id"
        f" JOIN objects d ON d.id = r.dst_id WHERE {src} AND {dst}", (*args, *args),
    ).fetchone()[0])


def evidence_count(conn: sqlite3.Connection, spaces: Spaces) -> int:
    """Evidence links whose object and cited event `spaces` both sees (an event moved into
    another space takes its links out of the count, as out of memory_evidence)."""
    if spaces.bound is None:
        return int(conn.execute("SELECT COUNT(*) FROM evidence").fetchone()[0])
    of_object, args = spaces.sql("o.space")
    of_event, _ = spaces.sql("e.space")
    return int(conn.execute(
        "SELECT COUNT(*) FROM evidence v JOIN objects o ON o.id = v.object_id"
        f" JOIN events e ON e.id = v.event_id WHERE {of_object} AND {of_event}",
        (*args, *args),
    ).fetchone()[0])
