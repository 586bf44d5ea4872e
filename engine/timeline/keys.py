"""Client message keys: the same message, handed in twice, is stored once.

An event may carry `key`, the client's own id for the message (a string of 1–200 chars). The
events table holds it in a nullable column under a UNIQUE index on (space, key) (partial: WHERE
key IS NOT NULL; migrations m007_event_keys, m022_event_keys_per_space), so no two events of one
space ever share a key, whatever the code path. Keys are compared within the appending space
only: another space's events are neither returned nor named.

What a repeated key means is decided here, inside the append's own write transaction:
- the same key with the same text is the same message: its stored id is returned, nothing is
  stored, and it counts as skipped. Only the text is compared: `occurred_at`, `source`, `kind`
  and `meta` of the repeat are ignored, the stored event keeps its own (events are immutable);
- the same key with different text is a conflict, refused naming the key; nothing is replaced.
A key repeated inside one batch follows the same rules against its first occurrence.
Events without a key are never compared: two identical keyless texts are two events.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..base.errors import InputError
from ..base.spaces import SHARED, Spaces
from .events import insert_events
from .fragments import find_lone_surrogate

KEY_MAX_CHARS = 200


class KeyConflict(InputError):
    """A key already names an event with different text; nothing was stored or replaced."""

    def __init__(self, key: str, event_id: int | None) -> None:
        if event_id is None:
            said = f"key {key!r} comes twice in one batch with different text"
        else:
            said = f"key {key!r} is already stored as event {event_id} with different text"
        super().__init__(f"{said}; nothing was replaced. Nothing was stored.")
        self.key = key
        self.event_id = event_id


@dataclass
class Appended:
    """What one append did: `ids` has one id per event handed in, in order; `new` are the ids
    it stored, `skipped` the ids of events whose key was already stored with the same text."""

    ids: list[int] = field(default_factory=list)
    new: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)


def check_key(key: Any) -> str | None:
    """The key as stored, or None for no key; refuses anything but a string of 1–200 chars."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise InputError(f"key must be a string (the client's message id), "
                         f"got {type(key).__name__}")
    if not key.strip():
        raise InputError("key is empty")
    if len(key) > KEY_MAX_CHARS:
        raise InputError(f"key is {len(key):,} chars; a key holds at most {KEY_MAX_CHARS}")
    if "\x00" in key or find_lone_surrogate(key) is not None:
        raise InputError("key is not valid Unicode text")
    return key


def append_rows(conn: sqlite3.Connection, rows: list[tuple], keys: Sequence[str | None],
                now: datetime, hot: bool = True, space: str = SHARED) -> Appended:
    """Insert the rows whose key is new (or absent); the caller holds the write transaction.

    `rows` are validated event rows (events.validate_event), `keys` one checked key per row.
    Raises KeyConflict for a key stored (or repeated in `rows`) with different text; the
    caller's transaction then rolls back whole. `hot=False`: no hot nodes (events.insert_events).
    New events are stamped with `space`.
    """
    if not any(k is not None for k in keys):
        # the common case: no lookup at all
        ids = insert_events(conn, rows, now, hot=hot, space=space)
        return Appended(ids, ids, [])
    stored = stored_keys(conn, [k for k in keys if k is not None], space)
    seen: dict[str, tuple[int, str]] = {}  # key -> (position among the new rows, text)
    fresh_rows: list[tuple] = []
    fresh_keys: list[str | None] = []
    plan: list[tuple[str, int]] = []  # per row: ("old", event id) or ("new", fresh position)
    for row, key in zip(rows, keys, strict=True):
        text = row[-1]
        if key is not None and key in stored:
            event_id, stored_text = stored[key]
            if stored_text != text:
                raise KeyConflict(key, event_id)
            plan.append(("old", event_id))
            continue
        if key is not None and key in seen:
            position, first_text = seen[key]
            if first_text != text:
                raise KeyConflict(key, None)
            plan.append(("dup", position))
            continue
        if key is not None:
            seen[key] = (len(fresh_rows), text)
        plan.append(("new", len(fresh_rows)))
        fresh_rows.append(row)
        fresh_keys.append(key)
    new_ids = insert_events(conn, fresh_rows, now, fresh_keys, hot, space) if fresh_rows else []
    result = Appended(new=new_ids)
    for what, value in plan:
        event_id = value if what == "old" else new_ids[value]
        result.ids.append(event_id)
        if what != "new":
            result.skipped.append(event_id)
    return result


def stored_keys(conn: sqlite3.Connection, keys: list[str],
                space: str) -> dict[str, tuple[int, str]]:
    """key -> (event id, text) of the stored events of `space` among `keys` (one indexed
    query)."""
    rows = conn.execute(
        "SELECT key, id, text FROM events WHERE space = ?"
        " AND key IN (SELECT value FROM json_each(?))",
        (space, json.dumps(keys, ensure_ascii=False)),
    )
    return {key: (event_id, text) for key, event_id, text in rows}


def keys_stored(conn: sqlite3.Connection, keys: list[str], spaces: Spaces) -> set[str]:
    """Which of `keys` an event `spaces` sees holds (one indexed query)."""
    if not keys:
        return set()
    seen, args = spaces.sql("space")
    # json_each, not one placeholder per key: a conversation may hold more messages than
    # SQLite allows variables.
    return {key for (key,) in conn.execute(
        f"SELECT key FROM events WHERE key IN (SELECT value FROM json_each(?)) AND {seen}",
        (json.dumps(keys, ensure_ascii=False), *args))}
