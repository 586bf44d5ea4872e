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
from ..timeline.events import event_slices, event_texts, said_order


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
    """(object, event, start, end) of the objects' evidence, in the order of its unique index
    (object, event, start, end): nothing is sorted."""
    marks = ", ".join("?" * len(object_ids))
    cur = conn.cursor()
    cur.row_factory = None
    return cur.execute(
        "SELECT object_id, event_id, start_char, end_char FROM evidence"
        f" WHERE object_id IN ({marks}) ORDER BY object_id, event_id, start_char, end_char",
        tuple(object_ids)).fetchall()


def _in_event_order(conn: sqlite3.Connection, places: list[tuple[str, int, int, int]],
                    spaces: Spaces) -> dict[str, list[CitedSlice]]:
    """The places whose event `spaces` sees, per object, oldest event first. The places come
    per object and event in slice order, so the timeline's order of their positions (time,
    event, position) is the order of each object's slices."""
    slices: dict[str, list[CitedSlice]] = {}
    for at, occurred_at in said_order(conn, [place[1] for place in places], spaces):
        owner, event_id, start, end = places[at]
        slices.setdefault(owner, []).append(
            CitedSlice(owner, event_id, start, end, occurred_at))
    return slices


def cited_slices_of(conn: sqlite3.Connection, object_ids: Sequence[str],
                    spaces: Spaces) -> dict[str, list[CitedSlice]]:
    """Each object's evidence, oldest event first, in events `spaces` sees."""
    return _in_event_order(conn, _evidence_places(conn, object_ids), spaces)


def cited_sources(conn: sqlite3.Connection, object_ids: Sequence[str], spaces: Spaces
                  ) -> tuple[dict[str, list[CitedSlice]], dict[int, str]]:
    """Each object's evidence (as `cited_slices_of`) and the raw text of every event it
    cites, for pages that quote them: the evidence read once."""
    places = _evidence_places(conn, object_ids)
    return (_in_event_order(conn, places, spaces),
            event_texts(conn, {place[1] for place in places}, spaces))


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
    links += [{"kind": "evidence", "event_id": event_id, "start_char": start, "end_char": end,
               "occurred_at": at}
              for _, event_id, start, end, at in cited_slices(conn, object_id, spaces=spaces)]
    return links
