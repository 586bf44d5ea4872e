"""Events: immutable raw text, appended with their hot-timeline fragments in one transaction.

Invariants: an event row is never updated or deleted (the schema's triggers refuse it); its text
is stored once and fragments are slices of it; an event over 32,000 chars is refused whole.
The one exception is `forget_in_events`, which the owner asked for (`memvault forget`): it
replaces a text by a marker of the same length, so fragments and evidence spans stay valid.

An event's `meta` is a JSON object of at most META_MAX_BYTES (16 KiB) serialised and
META_MAX_DEPTH (32) levels of nesting, the object itself being level 1: fixed limits, not
settings, checked here so every surface (CLI ingest, MCP memory_append, Memory.append_event)
refuses the same meta. A larger one would be carried into every batch that reads the event.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any, NamedTuple, TypedDict

import orjson

from ..base.clock import iso, parse_time, to_micros
from ..base.errors import InputError, NotFound
from ..base.forgetting import Forgetting
from ..base.spaces import SHARED, Spaces
from ..base.tokens import estimate_tokens
from ..store.forget_rows import forget_in_rows
from .fragments import EVENT_MAX_CHARS, FRAGMENT_CHARS, find_lone_surrogate, split_fragments
from .hot import insert_raw_nodes, move_event_nodes, next_node_id

PAGE_CHARS = 8_000  # what one `event ID OFFSET` answer returns
META_MAX_BYTES = 16 * 1024  # an event's meta, as UTF-8 JSON text
META_MAX_DEPTH = 32  # nesting levels of meta (the object itself is level 1)

# json.dumps(..., ensure_ascii=False) builds a new encoder on every call; ingest calls it per event.
_META_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
# Hand datetimes, dataclasses and str/int subclasses back (to the json module, which refuses or
# flattens them as before) instead of letting orjson convert them its own way.
_ORJSON_STRICT = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
                  | orjson.OPT_PASSTHROUGH_SUBCLASS)


@dataclass
class NewEvent:
    """An event as a caller hands it in, before validation."""

    text: Any
    occurred_at: str | datetime | None = None
    source: str = "user"
    kind: str = "message"
    meta: dict[str, Any] | None = None
    key: Any = None  # the client's message id (memvault.timeline.keys): stored once per key


@dataclass
class StoredEvent:
    """An event row as the engine returns it."""

    id: int
    occurred_at: str
    source: str
    kind: str
    meta: dict[str, Any] | None
    chars: int
    est_tokens: int
    ingested_at: str
    text: str = field(repr=False, default="")
    key: str | None = None
    space: str = SHARED

    @classmethod
    def from_row(cls, row: sqlite3.Row, with_text: bool = True) -> StoredEvent:
        return cls(
            id=row["id"], occurred_at=row["occurred_at"], source=row["source"],
            kind=row["kind"], meta=json.loads(row["meta"]) if row["meta"] else None,
            chars=row["chars"], est_tokens=row["est_tokens"], ingested_at=row["ingested_at"],
            text=row["text"] if with_text else "",
            key=row["key"] if "key" in row.keys() else None,
            space=row["space"] if "space" in row.keys() else SHARED,
        )


def validate_event(
    event: NewEvent, now: datetime, tz: tzinfo | None, check_encoding: bool = True,
) -> tuple:
    """Check one event; return the row values to insert. Raises InputError naming the field.

    `check_encoding=False` skips the scan for lone surrogates in the text: a caller that binds
    the row to SQLite straight away gets UnicodeEncodeError there instead, and validates again
    with the scan to name the event (see Memory.append_events).
    """
    text = event.text
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    if not text or text.isspace():  # same as `not text.strip()`, without a copy
        raise InputError("text is empty")
    if len(text) > EVENT_MAX_CHARS:
        raise InputError(
            f"text is {len(text):,} chars; an event holds at most {EVENT_MAX_CHARS:,} "
            "(split it into several events). Nothing was stored."
        )
    if check_encoding:
        bad = find_lone_surrogate(text)
        if bad is not None:
            raise InputError(f"text has a lone surrogate at char {bad}: not valid Unicode text")
    if "\x00" in text:
        # SQLite's length() and substr() stop at a NUL, so such text could not be sliced back.
        raise InputError(f"text has a NUL character at char {text.index(chr(0))}")
    source, kind = event.source, event.kind
    if type(source) is not str or source not in _LABELS_SEEN:  # a str subclass takes the slow path
        _check_label("source", source)
    if type(kind) is not str or kind not in _LABELS_SEEN:
        _check_label("kind", kind)
    meta = encode_meta(event.meta) if event.meta is not None else None
    occurred_at, micros = _occurred(event.occurred_at, now, tz)
    return (occurred_at, micros, _iso_cached(now), source, kind, meta, text)


def encode_meta(meta: Any) -> str:
    """The caller's meta object as JSON text, exactly as it will be returned."""
    if not isinstance(meta, dict):
        raise InputError(f"meta must be a JSON object, got {type(meta).__name__}")
    try:
        # orjson: ~8x faster than json on the ingest path; it refuses what it cannot carry
        # exactly (keys that are not strings, ints over 64 bits, lone surrogates, nesting
        # deeper than 254).
        encoded = orjson.dumps(meta, option=_ORJSON_STRICT)
    except (orjson.JSONEncodeError, TypeError):
        return _encode_meta_slowly(meta)
    if len(encoded) > META_MAX_BYTES:
        _check_meta_size(len(encoded))
    # Every level opens a bracket: text with fewer cannot be too deep (bytes.count is cheap).
    if encoded.count(b"{") + encoded.count(b"[") > META_MAX_DEPTH:
        _check_meta_depth(meta)
    text = encoded.decode()
    if "null" in text and _has_non_finite(meta):  # orjson writes NaN and Infinity as null
        raise InputError("meta is not JSON-serialisable: NaN and Infinity are not JSON")
    return text


def _encode_meta_slowly(meta: dict[str, Any]) -> str:
    """The json module's encoding, for what orjson refused: int keys, huge ints, bad text."""
    _check_meta_depth(meta)  # first: the json module recurses per level
    try:
        text = _META_JSON.encode(meta)
    except (TypeError, ValueError) as exc:
        raise InputError(f"meta is not JSON-serialisable: {exc}") from None
    if find_lone_surrogate(text) is not None:
        raise InputError("meta holds a lone surrogate: not valid Unicode text")
    _check_meta_size(len(text.encode("utf-8")))
    return text


def _check_meta_size(size: int) -> None:
    if size > META_MAX_BYTES:
        raise InputError(
            f"meta is {size:,} bytes of JSON; an event's meta holds at most {META_MAX_BYTES:,} "
            "bytes (16 KiB): keep large data in the text or elsewhere"
        )


def _check_meta_depth(meta: dict[str, Any]) -> None:
    """Refuse meta nested deeper than META_MAX_DEPTH; walks with a stack, never recursion."""
    stack: list[tuple[Any, int]] = [(meta, 1)]
    seen: set[int] = set()  # a container that holds itself: the encoder names that error
    while stack:
        value, depth = stack.pop()
        if depth > META_MAX_DEPTH:
            raise InputError(
                f"meta is nested more than {META_MAX_DEPTH} levels deep; "
                f"an event's meta holds at most {META_MAX_DEPTH}"
            )
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        stack.extend((child, depth + 1) for child in children)


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_non_finite(v) for v in value)
    return False


def _occurred(when: Any, now: datetime, tz: tzinfo | None) -> tuple[str, int]:
    """(ISO text with offset, UTC microseconds) of an event's time; `now` when none is given."""
    given = when if isinstance(when, str) else None
    if when is None:
        when = now
    elif given is not None:
        try:
            when = datetime.fromisoformat(given)  # the common case, without parse_time's checks
        except ValueError:
            try:
                when = parse_time(given, tz)
            except ValueError as exc:
                raise InputError(f"occurred_at: {exc}") from None
    elif not isinstance(when, datetime):
        raise InputError("occurred_at must be an ISO 8601 string")
    try:
        if when.tzinfo is None:
            when = when.replace(tzinfo=tz) if tz else when.astimezone()
        micros = to_micros(when)
    except (OverflowError, OSError, ValueError):
        raise InputError(f"occurred_at {when.isoformat()} is out of range") from None
    if given is not None and when.tzinfo is not None and is_canonical_time(given):
        return given, micros  # already exactly what iso() would render
    return iso(when), micros


def is_canonical_time(text: str) -> bool:
    """True for text fromisoformat accepted that iso() renders back unchanged.

    That is YYYY-MM-DDTHH:MM:SS+HH:MM, the form nearly every caller sends: the separators fix
    every field's width and fromisoformat has already checked the digits; '-00:00' is the one
    spelling it reads as UTC but renders as '+00:00'.
    """
    return (len(text) == 25 and text[10] == "T" and text[4] == text[7] == "-"
            and text[13] == text[16] == text[22] == ":" and text[19] in "+-"
            and text[19:] != "-00:00")


_LABELS_SEEN: set[str] = set()  # source/kind values already checked: a handful, seen often


def _check_label(name: str, value: Any) -> None:
    """Refuse a source or kind that is not a short, valid, non-empty string."""
    if not isinstance(value, str) or not value.strip() or len(value) > 64:
        raise InputError(f"{name} must be a non-empty string of at most 64 chars")
    if find_lone_surrogate(value) is not None or "\x00" in value:
        raise InputError(f"{name} is not valid Unicode text")
    if len(_LABELS_SEEN) < 1_000:
        _LABELS_SEEN.add(value)


_last_now: tuple[datetime | None, str] = (None, "")


def _iso_cached(now: datetime) -> str:
    """iso(now), remembered for the same object: a batch validates every event against one `now`.

    Keyed on identity, not equality: equal instants in different zones render differently.
    """
    global _last_now
    cached = _last_now
    if cached[0] is now:
        return cached[1]
    text = iso(now)
    _last_now = (now, text)
    return text


def insert_events(
    conn: sqlite3.Connection, rows: Iterable[tuple], now: datetime,
    keys: Sequence[str | None] | None = None, hot: bool = True, space: str = SHARED,
) -> list[int]:
    """Insert validated rows and their raw hot nodes; the caller holds the transaction.

    `hot=False` stores the events without hot nodes: old history (`memvault import`) that
    never enters the agent's timeline; the caller queues it for organize in the same
    transaction (a queued event with no active fragment is what `memvault check` expects).

    Ids are assigned here as MAX(id) + 1, ..., exactly what SQLite would choose, so both tables
    go in with one executemany each; the caller's write transaction keeps them unique. `keys`
    (one per row, checked and known to be new: memvault.timeline.keys) fill the key column.
    Every event and fragment is stamped with `space` (memvault.base.spaces), the writer's.
    """
    created = iso(now)
    first_event = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM events").fetchone()[0]
    next_node = next_node_id(conn)
    event_id = first_event
    event_rows: list[tuple] = []
    nodes: list[tuple] = []
    for occurred_at, occurred_us, ingested_at, source, kind, meta, text in rows:
        chars = len(text)
        tokens = estimate_tokens(text)
        event_rows.append((event_id, occurred_at, occurred_us, ingested_at, source, kind, meta,
                           text, chars, tokens, space))
        if chars <= FRAGMENT_CHARS:  # most events: one fragment, the whole text
            nodes.append((next_node, event_id, 0, 1, 0, chars, tokens, occurred_at, created))
            next_node += 1
        else:
            slices = split_fragments(text)
            for index, (start, end) in enumerate(slices):
                nodes.append((next_node, event_id, index, len(slices), start, end,
                              estimate_tokens(text[start:end]), occurred_at, created))
                next_node += 1
        event_id += 1
    if not hot:
        nodes = []
    if keys is None:
        conn.executemany(
            "INSERT INTO events (id, occurred_at, occurred_us, ingested_at, source, kind, meta,"
            " text, chars, est_tokens, space) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            event_rows,
        )
    else:
        conn.executemany(
            "INSERT INTO events (id, occurred_at, occurred_us, ingested_at, source, kind, meta,"
            " text, chars, est_tokens, space, key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*row, key) for row, key in zip(event_rows, keys, strict=True)],
        )
    insert_raw_nodes(conn, nodes, space)
    return list(range(first_event, event_id))


def get_event(conn: sqlite3.Connection, event_id: int,
              spaces: Spaces) -> StoredEvent:
    """The event, NotFound when there is none or `spaces` does not see it (alike, so a bound
    client learns nothing of another space's events)."""
    seen, args = spaces.sql("space")
    row = conn.execute(f"SELECT * FROM events WHERE id = ? AND {seen}",
                       (event_id, *args)).fetchone()
    if row is None:
        raise NotFound(f"no event {event_id}")
    return StoredEvent.from_row(row)


def newest_texts(conn: sqlite3.Connection, limit: int,
                 spaces: Spaces) -> Iterator[tuple[int, str]]:
    """(id, text) of the `limit` newest events `spaces` sees, newest first, read lazily."""
    seen, args = spaces.sql("space")
    yield from conn.execute(f"SELECT id, text FROM events WHERE {seen} ORDER BY id DESC LIMIT ?",
                            (*args, limit))


def raw_text_size(conn: sqlite3.Connection, spaces: Spaces) -> tuple[int, int, int]:
    """(events, chars, UTF-8 bytes) of the raw text `spaces` sees."""
    seen, args = spaces.sql("space")
    events, chars, size = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(chars), 0), COALESCE(SUM(length(CAST(text AS BLOB))), 0)"
        f" FROM events WHERE {seen}", args).fetchone()
    return int(events), int(chars), int(size)


def raw_growth(conn: sqlite3.Connection, now: datetime, days: int,
               spaces: Spaces) -> tuple[int, int]:
    """(events, UTF-8 bytes) of raw text `spaces` sees ingested in the `days` before `now`."""
    seen, args = spaces.sql("space")
    count, size = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(length(CAST(text AS BLOB))), 0) FROM events"
        " WHERE julianday(ingested_at) > julianday(?) - ? AND julianday(ingested_at)"
        f" <= julianday(?) AND {seen}", (now.isoformat(), days, now.isoformat(), *args)
    ).fetchone()
    return int(count), int(size)


def event_space(conn: sqlite3.Connection, event_id: int, spaces: Spaces) -> str | None:
    """The space of an event `spaces` sees; None when there is none or it is not seen."""
    seen, args = spaces.sql("space")
    row = conn.execute(f"SELECT space FROM events WHERE id = ? AND {seen}",
                       (event_id, *args)).fetchone()
    return None if row is None else str(row[0])


def event_chars(conn: sqlite3.Connection, event_id: int, spaces: Spaces) -> int | None:
    """The length in chars of an event `spaces` sees; None when there is none or it is not
    seen."""
    seen, args = spaces.sql("space")
    row = conn.execute(f"SELECT chars FROM events WHERE id = ? AND {seen}",
                       (event_id, *args)).fetchone()
    return None if row is None else int(row[0])


class EventTime(NamedTuple):
    """When an event was said: its time in microseconds since the epoch (the order) and as
    stored (what a page shows)."""

    occurred_us: int
    occurred_at: str


def _ids_json(event_ids: Iterable[int]) -> str:
    return orjson.dumps(sorted(set(event_ids))).decode()


def event_times(conn: sqlite3.Connection, event_ids: Iterable[int],
                spaces: Spaces) -> dict[int, EventTime]:
    """When each event of `event_ids` that `spaces` sees was said (an unseen or unknown id is
    left out), in one statement however many ids."""
    ids = _ids_json(event_ids)
    if ids == "[]":
        return {}
    seen, args = spaces.sql("+e.space")  # joined by id, never by a scan of a space
    cur = conn.cursor()
    cur.row_factory = None
    return {event_id: EventTime(micros, at) for event_id, micros, at in cur.execute(
        "SELECT e.id, e.occurred_us, e.occurred_at FROM json_each(?) j"
        f" JOIN events e ON e.id = j.value WHERE {seen}", (ids, *args))}


def said_order(conn: sqlite3.Connection, event_ids: Sequence[int],
               spaces: Spaces) -> list[tuple[int, str]]:
    """(position, occurred_at) of each entry of `event_ids` (repeats allowed: one per slice of
    an event) whose event `spaces` sees, in the order the events were said (time, then id,
    then position): SQLite sorts, so a list of 20,000 slices costs no Python sort."""
    if not event_ids:
        return []
    seen, args = spaces.sql("+e.space")
    cur = conn.cursor()
    cur.row_factory = None
    return cur.execute(
        "SELECT j.key, e.occurred_at FROM json_each(?) j JOIN events e ON e.id = j.value"
        f" WHERE {seen} ORDER BY e.occurred_us, e.id, j.key",
        (orjson.dumps(list(event_ids)).decode(), *args)).fetchall()


def event_texts(conn: sqlite3.Connection, event_ids: Iterable[int],
                spaces: Spaces) -> dict[int, str]:
    """The raw text of each event of `event_ids` that `spaces` sees (an unseen or unknown id
    is left out), in one statement however many ids."""
    ids = _ids_json(event_ids)
    if ids == "[]":
        return {}
    seen, args = spaces.sql("+e.space")
    cur = conn.cursor()
    cur.row_factory = None
    return dict(cur.execute(
        f"SELECT e.id, e.text FROM json_each(?) j JOIN events e ON e.id = j.value WHERE {seen}",
        (ids, *args)).fetchall())


def event_slices(conn: sqlite3.Connection, slices: Sequence[tuple[int, int, int]],
                 spaces: Spaces) -> list[str | None]:
    """The text of each (event id, start char, end char) slice, in their order; None for a
    slice of an event `spaces` does not see. One statement, and only the slices leave SQLite,
    never a whole event."""
    if not slices:
        return []
    seen, args = spaces.sql("+e.space")
    cur = conn.cursor()
    cur.row_factory = None
    found = dict(cur.execute(
        "SELECT j.key, substr(e.text, json_extract(j.value, '$[1]') + 1,"
        " json_extract(j.value, '$[2]') - json_extract(j.value, '$[1]'))"
        f" FROM json_each(?) j JOIN events e ON e.id = json_extract(j.value, '$[0]')"
        f" WHERE {seen}",
        (orjson.dumps([list(s) for s in slices]).decode(), *args)).fetchall())
    return [found.get(at) for at in range(len(slices))]


# The largest id SQLite can store: a larger number names no event (and SQLite could not even
# be asked about it: "Python int too large to convert to SQLite INTEGER").
MAX_EVENT_ID = 2**63 - 1


def parse_event_id(value: str | int) -> int:
    """Accept 42, '42' or 'event:42'; refuse anything else with a clear message."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        text = str(value).strip()
        if text.startswith("event:"):
            text = text[len("event:"):]
        if not text.isdigit() or not text.isascii():
            raise InputError(f"not an event id: {value!r} (expected e.g. 42 or event:42)")
        number = int(text)
    if number > MAX_EVENT_ID:
        raise InputError(f"no event {number}: an event id is at most {MAX_EVENT_ID}")
    return number


class EventPage(TypedDict):
    """One page of an event's raw text (`Memory.read_event`, `memvault event`)."""

    id: int
    occurred_at: str
    source: str
    kind: str
    meta: dict[str, Any] | None
    chars: int
    est_tokens: int
    ingested_at: str
    key: str | None
    state: str  # hot, or the event's archive-queue state
    offset: int
    text: str
    next_offset: int | None  # None at the end of the text


def read_event_page(
    conn: sqlite3.Connection, event_id: int, offset: int = 0, page_chars: int = PAGE_CHARS,
    *, spaces: Spaces,
) -> EventPage:
    """One page of an event's text from `offset`, with `next_offset` (None at the end); an
    event `spaces` does not see is NotFound."""
    event = get_event(conn, event_id, spaces)
    if offset < 0 or offset > event.chars:
        raise InputError(f"offset {offset} is outside event {event_id} (0–{event.chars})")
    end = min(event.chars, offset + page_chars)
    return {
        "id": event.id, "occurred_at": event.occurred_at, "source": event.source,
        "kind": event.kind, "meta": event.meta, "chars": event.chars,
        "est_tokens": event.est_tokens, "ingested_at": event.ingested_at, "key": event.key,
        "state": event_state(conn, event_id), "offset": offset,
        "text": event.text[offset:end], "next_offset": end if end < event.chars else None,
    }


def event_state(conn: sqlite3.Connection, event_id: int) -> str:
    """'hot' while a fragment is still on the timeline, else its archive-queue state."""
    row = conn.execute("SELECT state FROM archive_queue WHERE event_id = ?", (event_id,)).fetchone()
    return row[0] if row else "hot"


class EventListing(TypedDict):
    """A page of events in a time range (`Memory.list_events`)."""

    events: list[dict[str, Any]]  # id, occurred_at, source, kind, meta, chars, preview
    cursor: str | None  # continues the listing; None at the end


def list_events(
    conn: sqlite3.Connection, start: datetime, end: datetime, cursor: str | None,
    limit: int, spaces: Spaces,
) -> EventListing:
    """Events with start <= occurred_at < end that `spaces` sees, oldest first; `cursor`
    continues a listing."""
    if limit < 1:
        raise InputError(f"limit must be at least 1, got {limit}")
    lo_us, lo_id = to_micros(start), 0
    if cursor:
        try:
            us, _, ident = cursor.partition(":")
            cursor_us, cursor_id = int(us), int(ident) + 1
            if max(abs(cursor_us), cursor_id) > MAX_EVENT_ID:  # SQLite could not compare it
                raise ValueError(cursor)
        except ValueError:
            raise InputError(f"not a cursor from a previous listing: {cursor!r}") from None
        if cursor_us >= lo_us:  # a cursor never reaches back before FROM
            lo_us, lo_id = cursor_us, cursor_id
    seen, args = spaces.sql("+space")  # the time index answers, not the space one
    rows = conn.execute(
        "SELECT id, occurred_at, occurred_us, source, kind, meta, chars, est_tokens, ingested_at,"
        " substr(text, 1, 120) AS text FROM events"
        " WHERE (occurred_us > ? OR (occurred_us = ? AND id >= ?)) AND occurred_us < ?"
        f" AND {seen} ORDER BY occurred_us, id LIMIT ?",
        (lo_us, lo_us, lo_id, to_micros(end), *args, limit + 1),
    ).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    items = [
        {
            "id": r["id"], "occurred_at": r["occurred_at"], "source": r["source"],
            "kind": r["kind"], "meta": json.loads(r["meta"]) if r["meta"] else None,
            "chars": r["chars"], "preview": r["text"],
        }
        for r in rows
    ]
    next_cursor = f"{rows[-1]['occurred_us']}:{rows[-1]['id']}" if more and rows else None
    return EventListing(events=items, cursor=next_cursor)


def move_event(conn: sqlite3.Connection, event_id: int, space: str, now: datetime) -> str:
    """Re-place an event (and its hot fragments) into `space` by hand, inside the caller's
    transaction, the move recorded in `event_moves` (origin person); return the space it was
    in. Its text stays as it is (the immutability trigger leaves only `space` writable)."""
    row = conn.execute("SELECT space FROM events WHERE id = ?", (event_id,)).fetchone()
    if row is None:
        raise NotFound(f"no event {event_id}")
    if row[0] == space:
        return space
    twin = conn.execute("SELECT t.id FROM events e JOIN events t ON t.key = e.key"
                        " AND t.space = ? WHERE e.id = ?", (space, event_id)).fetchone()
    if twin is not None:  # keys are unique per space (m022_event_keys_per_space)
        raise InputError(f"event {event_id} carries the same client key as event {twin[0]},"
                         f" already in space {space}: nothing was moved")
    conn.execute("UPDATE events SET space = ? WHERE id = ?", (space, event_id))
    conn.execute("INSERT INTO event_moves (event_id, from_space, to_space, moved_at, origin)"
                 " VALUES (?, ?, ?, ?, 'person')", (event_id, row[0], space, iso(now)))
    move_event_nodes(conn, event_id, space)
    return str(row[0])


class EventMove(TypedDict):
    """One move of an event between spaces, as recorded."""

    from_space: str
    to_space: str
    moved_at: str
    origin: str


def event_moves(conn: sqlite3.Connection, event_id: int) -> list[EventMove]:
    """The moves of an event between spaces, oldest first (none: it stayed where written)."""
    return [EventMove(from_space=r[0], to_space=r[1], moved_at=r[2], origin=r[3])
            for r in conn.execute(
                "SELECT from_space, to_space, moved_at, origin FROM event_moves"
                " WHERE event_id = ? ORDER BY id", (event_id,))]


_NO_UPDATE_TRIGGER = "events_no_update"


def forget_in_events(conn: sqlite3.Connection, forgetting: Forgetting) -> dict[int, str]:
    """Replace the forgotten text in events' text, meta, source, kind and key (same length, so
    fragments, pages and evidence spans stay valid; keys stay unique: `_forget_in_keys`);
    inside the caller's write transaction. Returns {event id: its old text} for each event
    whose text changed (the recall index re-indexes those).

    The immutability trigger is lifted for this one UPDATE and put back, exactly as the schema
    had it, in the same transaction: no other writer ever sees the table without it.
    """
    trigger = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?",
                           (_NO_UPDATE_TRIGGER,)).fetchone()
    if forgetting.apply and trigger is not None:
        conn.execute(f"DROP TRIGGER {_NO_UPDATE_TRIGGER}")
    try:
        found = forget_in_rows(conn, forgetting, "events", ("text", "meta", "source", "kind"),
                               key="id")
        if forgetting.apply:  # derived from the text: estimated again (chars stay the same)
            conn.executemany("UPDATE events SET est_tokens = ? WHERE id = ?",
                             [(estimate_tokens(forgetting.replace(old["text"])), event_id)
                              for event_id, old in found if "text" in old])
        _forget_in_keys(conn, forgetting)
    finally:
        if forgetting.apply and trigger is not None:
            conn.execute(trigger[0])
    return {event_id: old["text"] for event_id, old in found if "text" in old}


def _forget_in_keys(conn: sqlite3.Connection, forgetting: Forgetting) -> None:
    """Replace the forgotten text in event keys (counted as `events.key`, a dry run too).

    Keys are unique (the events_key index): a key that, replaced, would equal another event's
    key, or one an earlier event's replacement made, is cleared instead (NULL). A key is only
    the client's message id: the event loses nothing but being recognised when the same
    message comes again, which a key holding the forgotten text no longer could anyway.
    A replaced key never equals a key still holding the text, so no order of the updates
    collides on the way."""
    clause, params = forgetting.sql_match("key")
    rows = conn.execute(f"SELECT id, key FROM events WHERE key IS NOT NULL AND {clause}"
                        " ORDER BY id", params).fetchall()
    replaced: dict[int, str] = {}
    for event_id, key in rows:
        forgetting.note("events.key", event_id, forgetting.occurrences(key))
        replaced[event_id] = forgetting.replace(key)
    if not forgetting.apply or not replaced:
        return
    taken = {key for event_id, key in conn.execute(
        "SELECT id, key FROM events WHERE key IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(set(replaced.values())), ensure_ascii=False),))
        if event_id not in replaced}
    updates: list[tuple[str | None, int]] = []
    for event_id, key in replaced.items():
        if key in taken:
            updates.append((None, event_id))
        else:
            taken.add(key)
            updates.append((key, event_id))
    conn.executemany("UPDATE events SET key = ? WHERE id = ?", updates)
