"""What an object links to: its relations and the event slices it cites, as typed rows, for one
object or a chunk of objects at once.

Invariants:
- one order everywhere (memory_read, the deep review, the vault's pages): outgoing relations by
  (label, other), then incoming ones likewise, then evidence oldest event first (by the event's
  time, then its id, then the slice).
- every read names the spaces it sees: a relation shows when its other object is seen (or does
  not exist: shown as before), a cited slice when its event is seen.
- the events behind the evidence are read through their owner (timeline.events): the times to
  order by, the texts or slices to quote, by id in one statement per call.
- callers pass a bounded chunk of object ids (the vault's CHUNK), so every IN list stays far
  below SQLite's limit on bound parameters.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..base.spaces import Spaces
from ..timeline.events import EventTime, event_slices, event_texts, event_times


class RelationLink(NamedTuple):
    """A relation of the object `owner`, seen from it."""

    owner: str
    direction: str  # "out": owner -> other; "in": other -> owner
    label: str
    other: str
    name: str | None  # the other object's name; None when it does not exist
    legacy: int
    archived: int


class CitedSlice(NamedTuple):
    """A slice of an event that the object `owner` cites as its evidence."""

    owner: str
    event_id: int
    start_char: int
    end_char: int
    occurred_at: str  # when the event was said


# Two relation queries rather than one UNION: each reads its index in order, no shared sort.
_OUT_SQL = (
    "SELECT r.src_id, 'out', r.label, r.dst_id, o.name, r.legacy, r.archived FROM relations r"
    " LEFT JOIN objects o ON o.id = r.dst_id WHERE r.src_id IN ({marks}) AND {seen}"
    " ORDER BY r.src_id, r.label, r.dst_id"
)
_IN_SQL = (
    "SELECT r.dst_id, 'in', r.label, r.src_id, o.name, r.legacy, r.archived FROM relations r"
    " LEFT JOIN objects o ON o.id = r.src_id WHERE r.dst_id IN ({marks}) AND {seen}"
    " ORDER BY r.dst_id, r.label, r.src_id"
)


def relation_links(conn: sqlite3.Connection, object_ids: Sequence[str],
                   spaces: Spaces) -> dict[str, list[RelationLink]]:
    """Each object's relations, outgoing then incoming, each by (label, other); only those
    whose other object `spaces` sees or that point at no object."""
    marks = ", ".join("?" * len(object_ids))
    seen, args = spaces.sql("o.space")
    seen = f"(o.space IS NULL OR {seen})"
    links: dict[str, list[RelationLink]] = {}
    cur = conn.cursor()
    cur.row_factory = None
    for sql in (_OUT_SQL, _IN_SQL):
        for row in cur.execute(sql.format(marks=marks, seen=seen), (*object_ids, *args)):
            links.setdefault(row[0], []).append(RelationLink(*row))
    return links


def _evidence_places(conn: sqlite3.Connection,
                     object_ids: Sequence[str]) -> list[tuple[str, int, int, int]]:
    marks = ", ".join("?" * len(object_ids))
    cur = conn.cursor()
    cur.row_factory = None
    return cur.execute(
        "SELECT object_id, event_id, start_char, end_char FROM evidence"
        f" WHERE object_id IN ({marks})", tuple(object_ids)).fetchall()


def _in_event_order(places: list[tuple[str, int, int, int]],
                    times: dict[int, EventTime]) -> dict[str, list[CitedSlice]]:
    """The places whose event is in `times`, per object, oldest event first."""
    seen = sorted((p for p in places if p[1] in times),
                  key=lambda p: (p[0], times[p[1]].occurred_us, p[1], p[2], p[3]))
    slices: dict[str, list[CitedSlice]] = {}
    for owner, event_id, start, end in seen:
        slices.setdefault(owner, []).append(
            CitedSlice(owner, event_id, start, end, times[event_id].occurred_at))
    return slices


def cited_slices_of(conn: sqlite3.Connection, object_ids: Sequence[str],
                    spaces: Spaces) -> dict[str, list[CitedSlice]]:
    """Each object's evidence, oldest event first, in events `spaces` sees."""
    places = _evidence_places(conn, object_ids)
    return _in_event_order(places, event_times(conn, {p[1] for p in places}, spaces))


def cited_sources(conn: sqlite3.Connection, object_ids: Sequence[str], spaces: Spaces
                  ) -> tuple[dict[str, list[CitedSlice]], dict[int, str]]:
    """Each object's evidence (as `cited_slices_of`) and the raw text of every event it
    cites, for pages that quote them: the evidence read once."""
    places = _evidence_places(conn, object_ids)
    cited = {p[1] for p in places}
    return (_in_event_order(places, event_times(conn, cited, spaces)),
            event_texts(conn, cited, spaces))


def cited_slices(conn: sqlite3.Connection, object_id: str, limit: int = -1, offset: int = 0,
                 *, spaces: Spaces) -> list[CitedSlice]:
    """The object's evidence, oldest event first, in events `spaces` sees; `limit` rows from
    `offset` (-1: all)."""
    rows = cited_slices_of(conn, [object_id], spaces).get(object_id, [])
    return rows[offset:] if limit < 0 else rows[offset:offset + limit]


def slice_texts(conn: sqlite3.Connection, slices: Sequence[CitedSlice],
                spaces: Spaces) -> list[str | None]:
    """The cited text of each slice, in their order (None: its event is not seen)."""
    return event_slices(conn, [(s.event_id, s.start_char, s.end_char) for s in slices], spaces)


def object_links(conn: sqlite3.Connection, object_id: str,
                 spaces: Spaces) -> list[dict[str, Any]]:
    """Relations (outgoing, then incoming), then evidence, as memory_read and the deep review
    show them (JSON objects with a `kind`); only what `spaces` sees."""
    links: list[dict[str, Any]] = [
        {"kind": "relation", "label": r.label, "other": r.other, "name": r.name,
         "legacy": r.legacy, "archived": r.archived, "direction": r.direction}
        for r in relation_links(conn, [object_id], spaces).get(object_id, [])]
    links += [{"kind": "evidence", "event_id": s.event_id, "start_char": s.start_char,
               "end_char": s.end_char, "occurred_at": s.occurred_at}
              for s in cited_slices(conn, object_id, spaces=spaces)]
    return links
