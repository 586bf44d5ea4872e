"""What an object's pages show besides its profile: its relations and sources, as the templates
take them, read for one object or for a batch of objects at once.

Invariants:
- the batched read returns the rows and the order of `objects.records.object_links`: outgoing
  relations by (label, other), then incoming ones likewise, then evidence by event time.
- a source shows its cited span, read from the event in the same batch (one query for the
  texts of every event the batch cites, each scanned for secrets once: `quotes.EventQuotes`).
- a batch is a bounded chunk of ids (the projector's CHUNK), so every `IN (...)` list stays far
  below SQLite's limit on bound parameters.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any, NamedTuple

from ..objects.records import object_rows
from .paths import object_link
from .quotes import EventQuotes


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) collapsed to single spaces."""
    return " ".join(text.split())


# Relations and sources are tuples: the templates unpack them in the `for` (`{% for direction,
# label, link, note in relations %}`), a plain Python unpacking, not four jinja2 getattr calls.
class Relation(NamedTuple):
    direction: str
    label: str
    link: str
    note: str


class Source(NamedTuple):
    occurred_at: str
    event_id: int
    start: int
    end: int
    quote: str  # the cited span, as `quotes.quote_span` shows it


@functools.lru_cache(maxsize=256)  # relation labels are a handful, each shown many times
def _label(label: str) -> str:
    return one_line(label)


_NOTES = {(False, False): "", (True, False): " (legacy)", (False, True): " (archived)",
          (True, True): " (legacy, archived)"}


def shown_relation(direction: str, label: str, other: str, name: str | None, legacy: int,
                   archived: int) -> Relation:
    """A relation as the templates show it."""
    return Relation(direction, _label(label), object_link(other, name),
                    _NOTES[bool(legacy), bool(archived)])


def shown_link(link: dict[str, Any], quotes: EventQuotes) -> Relation | Source:
    """One link of `objects.records.object_links` as the templates show it; `quotes` holds
    the texts of the events the object cites (`read_cited_events`)."""
    if link["kind"] == "relation":
        return shown_relation(link["direction"], link["label"], link["other"], link["name"],
                              link["legacy"], link["archived"])
    event_id, start, end = link["event_id"], link["start_char"], link["end_char"]
    return Source(occurred_at=link["occurred_at"], event_id=event_id, start=start, end=end,
                  quote=quotes.quote(event_id, start, end))


def read_cited_events(conn: sqlite3.Connection, object_ids: list[str]) -> EventQuotes:
    """The texts of every event the objects `object_ids` cite, in one query (a bounded chunk
    of ids: the IN list holds the object ids, never the events, however many are cited)."""
    marks = ", ".join("?" * len(object_ids))
    cur = conn.cursor()
    cur.row_factory = None
    return EventQuotes(dict(cur.execute(
        "SELECT id, text FROM events WHERE id IN"
        f" (SELECT event_id FROM evidence WHERE object_id IN ({marks}))", object_ids,
    ).fetchall()))


# The same rows and order as `objects.records.object_links`, for many objects at once:
# outgoing relations by (label, other), then incoming ones likewise, then evidence. Two
# relation queries rather than one UNION: each reads its index in order, no shared sort.
_OUT_SQL = (
    "SELECT r.src_id, r.label, r.dst_id, o.name, r.legacy, r.archived FROM relations r"
    " LEFT JOIN objects o ON o.id = r.dst_id WHERE r.src_id IN ({marks})"
    " ORDER BY r.src_id, r.label, r.dst_id"
)
_IN_SQL = (
    "SELECT r.dst_id, r.label, r.src_id, o.name, r.legacy, r.archived FROM relations r"
    " LEFT JOIN objects o ON o.id = r.src_id WHERE r.dst_id IN ({marks})"
    " ORDER BY r.dst_id, r.label, r.src_id"
)
_EVIDENCE_SQL = (
    "SELECT v.object_id, v.event_id, v.start_char, v.end_char, e.occurred_at FROM evidence v"
    " JOIN events e ON e.id = v.event_id WHERE v.object_id IN ({marks})"
    " ORDER BY v.object_id, e.occurred_us, v.event_id, v.start_char"
)


def read_objects(
    conn: sqlite3.Connection, ids: list[str],
) -> tuple[dict[str, sqlite3.Row], dict[str, list[Relation | Source]]]:
    """The rows of the objects `ids` and their links (those of `object_links`, in its order,
    as the templates show them), in five queries whatever the number of ids (callers pass a
    chunk: a bounded IN list)."""
    marks = ", ".join("?" * len(ids))
    rows = object_rows(conn, ids)
    links: dict[str, list[Relation | Source]] = {}
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples: the dicts are built here
    for direction, sql in (("out", _OUT_SQL), ("in", _IN_SQL)):
        for owner, label, other, name, legacy, archived in cur.execute(
            sql.format(marks=marks), ids,
        ).fetchall():
            links.setdefault(owner, []).append(
                shown_relation(direction, label, other, name, legacy, archived))
    quotes = read_cited_events(conn, ids)
    for owner, event_id, start_char, end_char, occurred_at in cur.execute(
        _EVIDENCE_SQL.format(marks=marks), ids,
    ).fetchall():
        links.setdefault(owner, []).append(Source(
            occurred_at=occurred_at, event_id=event_id, start=start_char, end=end_char,
            quote=quotes.quote(event_id, start_char, end_char)))
    return rows, links
