"""JSONL ingestion: one event a line, stored in chunks; a bad line stops with its number.

A line nesting JSON past 64 levels is refused before it is parsed (memvault.base.json_depth).
Lines before a bad line stay stored (and the error says how many), so a long import that hits a
broken line loses nothing already read and can be resumed after fixing that line. Run again
whole, lines that carry a `key` are not stored twice: a key already stored with the same text
is skipped (memvault.timeline.keys); lines without a key would be.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, tzinfo
from typing import IO, Any

from ..base.errors import IngestError, InputError
from ..base.json_depth import JsonTooDeep, check_depth
from ..base.spaces import SHARED
from .append import append_events
from .events import META_MAX_DEPTH, NewEvent
from .keys import Appended

FIELDS = {"text", "occurred_at", "source", "kind", "meta", "key"}
CHUNK = 1_000
# A line longer than this is refused unread: an event is at most 32,000 chars (128,000 bytes of
# UTF-8, more with JSON escapes), so 256 KiB holds any good line with room for its meta, and
# reading stops there instead of holding a 2 GB line without a newline in memory.
MAX_LINE_BYTES = 256 * 1024


class LineTooLong(bytes):
    """What `bounded_lines` yields for a line past MAX_LINE_BYTES: its first bytes only."""


def bounded_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of a binary stream, each read at most MAX_LINE_BYTES + 1 bytes at a time: a
    longer line comes as a LineTooLong (and is the last thing read: ingest stops there)."""
    while True:
        line = stream.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES:
            yield LineTooLong(line[:64])
            return
        yield line


def parse_line(raw: bytes | str, number: int) -> NewEvent | None:
    """Parse one JSONL line into a NewEvent (None for a blank line). Errors name the line."""
    if isinstance(raw, LineTooLong) or len(raw) > MAX_LINE_BYTES and (
            isinstance(raw, bytes) or len(raw.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES):
        raise InputError(f"line {number}: longer than {MAX_LINE_BYTES:,} bytes "
                         f"({MAX_LINE_BYTES // 1024} KiB), the most a line may hold; an event's "
                         "text is at most 32,000 chars")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"line {number}: not valid UTF-8 (byte {exc.start})") from None
    if number == 1 and raw.startswith("\ufeff"):
        raw = raw[1:]  # a UTF-8 byte order mark, as some editors write: not part of the JSON
    if not raw.strip():
        return None
    try:
        check_depth(raw)  # before the parser: nothing an event holds nests past 64 levels
    except JsonTooDeep as exc:
        raise InputError(f"line {number}: {exc} (an event's meta holds at most "
                         f"{META_MAX_DEPTH} levels)") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        # Some messages end in "at" ("Invalid control character at"): say it once.
        msg = exc.msg.removesuffix(" at")
        raise InputError(f"line {number}: broken JSON: {msg} at column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"line {number}: broken JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. a number of more digits than int() will convert
        raise InputError(f"line {number}: broken JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"line {number}: expected a JSON object, got {type(data).__name__}")
    unknown = set(data) - FIELDS
    if unknown:
        raise InputError(
            f"line {number}: unknown field(s) {', '.join(sorted(unknown))} "
            f"(allowed: {', '.join(sorted(FIELDS))}; put your own data in meta)"
        )
    if "text" not in data:
        raise InputError(f"line {number}: missing field 'text'")
    kwargs: dict[str, Any] = {k: v for k, v in data.items() if k in FIELDS}
    return NewEvent(**kwargs)


def ingest_lines(
    conn: sqlite3.Connection, lines: Iterable[bytes | str], now: datetime, tz: tzinfo | None,
    space: str = SHARED,
) -> Appended:
    """Parse and store lines in chunks (each one transaction, memvault.timeline.append), in
    `space`; on a bad line raise IngestError after storing the lines before it.

    The answer's `new` are the ids stored, `skipped` those of lines whose key was already
    stored with the same text (memvault.timeline.keys), `ids` one id per non-blank line."""

    def store_chunk(chunk: list[NewEvent]) -> Appended:
        return append_events(conn, chunk, now, tz, space)

    if hasattr(lines, "readline"):  # a stream: read it with bounded memory
        lines = bounded_lines(lines)  # type: ignore[arg-type]
    done = Appended()
    chunk: list[tuple[int, NewEvent]] = []
    for number, raw in enumerate(lines, start=1):
        try:
            event = parse_line(raw, number)
        except InputError as exc:
            _store(store_chunk, chunk, done)
            raise IngestError(_stopped(str(exc), done), number, done.new,
                              done.skipped) from None
        if event is not None:
            chunk.append((number, event))
        if len(chunk) >= CHUNK:
            _store(store_chunk, chunk, done)
            chunk = []
    _store(store_chunk, chunk, done)
    return done


def _store(
    store_chunk: Callable[[list[NewEvent]], Appended],
    chunk: list[tuple[int, NewEvent]],
    done: Appended,
) -> None:
    """Store a chunk in one transaction and add it to `done`; if an event is refused, store the
    chunk one by one so every event before the bad one is kept and the error names the bad
    line."""
    if not chunk:
        return
    try:
        _add(done, store_chunk([event for _, event in chunk]))
    except sqlite3.OperationalError as exc:
        # A full disk, a lock held too long: this chunk rolled back, earlier chunks are
        # committed. Say which, so a caller resumes at this line instead of storing them twice.
        number = chunk[0][0]
        raise IngestError(_stopped(f"line {number}: the database refused: {exc}", done),
                          number, done.new, done.skipped) from None
    except InputError:
        for number, event in chunk:
            try:
                _add(done, store_chunk([event]))
            except InputError as exc:
                raise IngestError(_stopped(f"line {number}: {exc}", done), number, done.new,
                                  done.skipped) from None


def _add(done: Appended, part: Appended) -> None:
    done.ids += part.ids
    done.new += part.new
    done.skipped += part.skipped


def _stopped(message: str, done: Appended) -> str:
    """The error of a bad line, then what happened to the lines before it, in one sentence
    each: the event's own "Nothing was stored." is dropped (what counts is the whole import)."""
    message = message.removesuffix(" Nothing was stored.").rstrip(". ")
    skipped = f" ({len(done.skipped)} more were already stored)" if done.skipped else ""
    if done.new:
        return (f"{message}. Stopped there; the {len(done.new)} event(s) before it are "
                f"stored{skipped}.")
    return f"{message}. Stopped there; nothing was stored{skipped}."
