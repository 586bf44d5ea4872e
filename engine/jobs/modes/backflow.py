"""organize's side of source anti-backflow (engine/objects/provenance.py has the rules).

At claim, an event that is wholly the memory's own output ends archive_only with a reason the
engine writes (no model call); otherwise the claim payload lists the page's memory-output spans
and the commit refuses evidence citing them, naming `evidence.N`.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from ...base.spaces import EVERY_SPACE
from ...models.payloads import MemorySpan
from ...objects.names import named_objects
from ...objects.provenance import (
    Span,
    is_memory_event,
    is_wholly_memory,
    memory_spans,
    stored_quotes,
    wholly_reason,
)
from ...objects.records import event_citers
from ...timeline.events import StoredEvent, get_event
from ...timeline.queue import settle_archive_only

PROVENANCE = "marked as memvault's own output (its source or kind)"


def event_spans(conn: sqlite3.Connection, event_id: int, *, row: StoredEvent | None = None,
                citing: set[str] | None = None,
                named: list[str] | None = None) -> tuple[list[Span], bool]:
    """The event's memory-output spans, and whether its provenance alone makes it memory
    output. Profiles built from this event (those citing it) are not quotes of it. When the
    caller has read them in the same transaction: `row`, the event's row (text, source, kind,
    chars; events never change), `citing`, the objects citing it, and `named`, the objects its
    text names (names.named_objects)."""
    if row is None:
        row = get_event(conn, event_id, EVERY_SPACE)
    if is_memory_event(row.source, row.kind):
        return [Span(0, row.chars, PROVENANCE)], True
    if citing is None:
        citing = set(event_citers(conn, event_id))
    if named is None:
        named = named_objects(conn, row.text)
    named = [i for i in named if i not in citing]
    return memory_spans(row.text, stored_quotes(conn, named, event_id)), False


def page_spans(spans: list[Span], start: int, end: int) -> list[MemorySpan]:
    """The spans that meet the page [start, end), clipped to it, as the payload shows them."""
    return [MemorySpan(start=max(s.start, start), end=min(s.end, end), what=s.what)
            for s in spans if s.start < end and start < s.end]


def settle_memory_output(conn: sqlite3.Connection, event_id: int, targets: tuple[int, int],
                         now: datetime, row: StoredEvent,
                         named: list[str] | None) -> tuple[bool, list[Span] | None]:
    """End an event that is wholly memory output as archive_only (inside the caller's
    transaction). Returns whether it did, and the event's memory-output spans when they were
    computed (None when the event has targets), so the claim's prompt can reuse them. Nothing is
    deleted: the text stays findable by time. `targets` are the event's durable targets
    (organize.event_targets); `row` the event's row, and `named` the objects its text names
    when the caller has looked them up (None: looked up here if needed), both read in the same
    transaction."""
    if targets != (0, 0):
        return False, None  # something durable was written for it already: the model decides
    text = row.text
    # No targets means no evidence cites the event: nothing to read to know who cites it.
    spans, provenance = event_spans(conn, event_id, row=row, citing=set(), named=named)
    if not provenance and not is_wholly_memory(text, spans):
        return False, spans
    settle_archive_only(conn, event_id, len(text), wholly_reason(spans, provenance)[:1_000],
                        now)
    return True, spans
