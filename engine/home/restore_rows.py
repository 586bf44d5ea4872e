"""The rows of an export as restore takes them: checked as the engine's own writers check them,
and with what can be derived from them derived again, never trusted from the file.

An export is text anyone could have edited (its checksums only say the files agree with their
manifest, which an editor rewrites too). So every row is held to what the code that first
wrote it holds it to, and a refusal names the file and line, before the transaction commits:
- every column: the type its table declares (an id that is text, a text that is a number, a
  true/false, a nested value are refused), no NUL in text (SQLite's text functions stop at it),
  a value in every NOT NULL column and the id (an export always carries its ids);
- events: as ingest checks them (memvault.timeline.events.validate_event: text non-empty, at
  most 32,000 chars, no NUL, no lone surrogate; source and kind; meta a JSON object of at most
  16 KiB and 32 levels; the key; occurred_at a time); what ingest accepts stays accepted (a
  terminal escape in a text is raw text as said: it is escaped wherever text is shown);
  `chars`, `est_tokens` and (for a time with an offset) `occurred_us` are derived again;
- hot_nodes: a raw fragment is a slice of its event (its bounds inside the text), its `chars`
  and `est_tokens` derived from that slice; a head's from its summary;
- core_files: `sha256` derived from the content.
The constraints SQLite itself holds (unique ids, CHECKs, foreign keys) are named the same way
by memvault.home.restore.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..base.clock import to_micros
from ..base.errors import InputError
from ..base.json_depth import JsonTooDeep, check_depth
from ..base.spaces import check_space
from ..base.tokens import estimate_tokens
from ..timeline.events import NewEvent, validate_event
from ..timeline.keys import check_key

SQLITE_INT = (-(2**63), 2**63 - 1)
Row = dict[str, Any]


_TYPES = {"INTEGER": ((int,), "an integer"), "TEXT": ((str,), "text"),
          "REAL": ((int, float), "a number"), "NUMERIC": ((int, float, str), "a number or text"),
          "BLOB": ((int, float, str, bytes), "a single value")}


@dataclass(frozen=True)
class Column:
    """A column as its table declares it: the Python types a value may have (by SQLite's type
    affinity; bool is no int here), what to call them, and whether it may be NULL."""

    types: tuple[type, ...]
    expected: str
    required: bool

    @classmethod
    def of(cls, declared: str, notnull: bool, pk: bool) -> Column:
        kind = declared.upper()
        if "INT" in kind:
            affinity = "INTEGER"
        elif any(word in kind for word in ("CHAR", "CLOB", "TEXT")):
            affinity = "TEXT"
        elif not kind or "BLOB" in kind:
            affinity = "BLOB"
        elif any(word in kind for word in ("REAL", "FLOA", "DOUB")):
            affinity = "REAL"
        else:
            affinity = "NUMERIC"
        types, expected = _TYPES[affinity]
        return cls(types, expected, notnull or pk)


def table_columns(conn: sqlite3.Connection, table: str) -> dict[str, Column]:
    return {row[1]: Column.of(row[2] or "", bool(row[3]), bool(row[5]))
            for row in conn.execute(f'PRAGMA table_info("{table}")')}


def column_problem(row: Row, columns: dict[str, Column]) -> str | None:
    """What is wrong with `row`'s values by its table's declared columns, or None (one type
    test per value: restore reads millions)."""
    for name, value in row.items():
        column = columns.get(name)
        if column is None:
            extra = sorted(set(row) - set(columns))
            return f"columns this memvault does not have ({', '.join(extra)})"
        kind = type(value)
        if kind not in column.types:
            if value is None:
                if column.required:
                    return f"{name} is missing (null)"
                continue
            return f"{name} must be {column.expected}, got {_kind_of(value)}"
        if kind is str:
            if "\x00" in value:
                return f"{name} holds a NUL character at char {value.index(chr(0))}"
        elif kind is int and not SQLITE_INT[0] <= value <= SQLITE_INT[1]:
            return f"{name} must be an integer SQLite can store (64 bits)"
    if "id" in columns and row.get("id") is None:
        return "id is missing (an export carries every id)"
    return None


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return {str: "text", int: "an integer", float: "a number", dict: "an object",
            list: "a list", bytes: "bytes"}.get(type(value), type(value).__name__)


# -- per table ------------------------------------------------------------------------------------
def event_row(row: Row) -> Row:
    """An events row checked as ingest checks an event, its derived columns derived again."""
    for name in ("id", "occurred_at", "ingested_at", "source", "kind", "text"):
        if row.get(name) is None:
            raise InputError(f"{name} is missing")
    meta = row.get("meta")
    parsed = None
    if meta is not None:
        try:
            check_depth(meta)
            parsed = json.loads(meta)
        except (JsonTooDeep, ValueError, RecursionError) as exc:
            raise InputError(f"meta is not JSON text ({exc})") from None
        if not isinstance(parsed, dict):
            raise InputError(f"meta must be a JSON object, got {type(parsed).__name__}")
    event = NewEvent(row["text"], row["occurred_at"], row["source"], row["kind"], parsed)
    validate_event(event, datetime.now(UTC), UTC)
    check_key(row.get("key"))
    if "space" in row:  # an export made before spaces has none: the column's default, shared
        check_space(row["space"])
    derived = {"chars": len(row["text"]), "est_tokens": estimate_tokens(row["text"])}
    try:
        given = datetime.fromisoformat(row["occurred_at"])
    except ValueError:
        given = None
    if given is not None and given.tzinfo is not None:  # a time without its zone keeps its us
        derived["occurred_us"] = to_micros(given)
    return {**row, **derived}


def core_file_row(row: Row) -> Row:
    """A core_files row with its sha256 derived from its content."""
    content = row.get("content")
    if not isinstance(content, str):
        raise InputError("content is missing")
    return {**row, "sha256": hashlib.sha256(content.encode("utf-8")).hexdigest()}


ROW_CHECKS: dict[str, Callable[[Row], Row]] = {"events": event_row, "core_files": core_file_row}


def derive_nodes(conn: sqlite3.Connection, rows: list[tuple[int, Row]]) -> list[tuple[int, Row]]:
    """hot_nodes rows (line, row) with `chars` and `est_tokens` derived: a raw fragment's from
    its slice of the event (restored before: restore loads events first), a head's from its
    summary. Raises InputError naming the line of a fragment outside its event."""
    wanted = sorted({row["event_id"] for _, row in rows
                     if row.get("kind") == "raw" and isinstance(row.get("event_id"), int)})
    texts = dict(conn.execute(
        "SELECT id, text FROM events WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(wanted),)).fetchall()) if wanted else {}
    out = []
    for number, row in rows:
        if row.get("kind") == "head" and isinstance(row.get("summary"), str):
            summary = row["summary"]
            row = {**row, "chars": len(summary), "est_tokens": estimate_tokens(summary)}
        elif row.get("kind") == "raw":
            text = texts.get(row.get("event_id"))
            start, end = row.get("start_char"), row.get("end_char")
            if text is None:
                raise RestoreLineError(number, f"raw node {row.get('id')} is a fragment of "
                                               f"event {row.get('event_id')}, which the export "
                                               "does not hold")
            if not (isinstance(start, int) and isinstance(end, int)
                    and 0 <= start < end <= len(text)):
                raise RestoreLineError(number, f"raw node {row.get('id')}: chars {start}-{end} "
                                               f"are not a slice of event {row['event_id']} "
                                               f"({len(text)} chars)")
            row = {**row, "chars": end - start, "est_tokens": estimate_tokens(text[start:end])}
        out.append((number, row))
    return out


class RestoreLineError(InputError):
    """A row refused after its batch was read: the line it came from, and why."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason
