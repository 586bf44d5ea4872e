"""What an object's pages show besides its profile: its relations and sources, as the templates
take them, read for one object or for a batch of objects at once.

Invariants:
- the batched read returns the rows and the order of `objects.links.object_links`: outgoing
  relations by (label, other), then incoming ones likewise, then evidence by event time.
- a source shows its cited span, read from the event in the same batch (one query for the
  texts of every event the batch cites, each scanned for secrets once: `quotes.EventQuotes`).
- a batch is a bounded chunk of ids (the projector's CHUNK), so every `IN (...)` list stays far
  below SQLite's limit on bound parameters.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import NamedTuple

from ..base.spaces import EVERY_SPACE
from ..objects.links import cited_sources, relation_links
from ..objects.records import ObjectRecord, object_records
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


def read_objects(
    conn: sqlite3.Connection, ids: list[str],
) -> tuple[dict[str, ObjectRecord], dict[str, list[Relation | Source]]]:
    """The rows of the objects `ids` and their links (`read_links`), in a few queries whatever
    the number of ids (callers pass a chunk: a bounded IN list)."""
    return object_records(conn, ids), read_links(conn, ids)


def read_links(conn: sqlite3.Connection, ids: list[str]) -> dict[str, list[Relation | Source]]:
    """The links of the objects `ids` (those of `objects.links.object_links`, in its order, as
    the templates show them): relations, then sources with their quotes. The vault shows every
    space."""
    links: dict[str, list[Relation | Source]] = {}
    for owner, relations in relation_links(conn, ids, EVERY_SPACE).items():
        links[owner] = [shown_relation(r.direction, r.label, r.other, r.name, r.legacy,
                                       r.archived) for r in relations]
    cited, texts = cited_sources(conn, ids, EVERY_SPACE)
    quotes = EventQuotes(texts)
    for owner, slices in cited.items():
        links.setdefault(owner, []).extend(
            Source(occurred_at=s.occurred_at, event_id=s.event_id, start=s.start_char,
                   end=s.end_char, quote=quotes.quote(s.event_id, s.start_char, s.end_char))
            for s in slices)
    return links
