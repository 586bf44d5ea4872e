"""The value said latest is current, whatever order events are organized in.

Events do not reach organize in the order they were said: `memvault import` brings old
history in any order, and a backlog is read oldest-queued first. A write of organize stands
for one event (the one its batch reads); what it says is as of that event's `occurred_at`.
For the values a later statement replaces — a person's role, a schedule's time rule and state,
a todo's state — a write whose event is older than the one that set the current value does not
replace it: the current value stays, and the older one is kept as a `- history:` line
(`keep_latest`). Any model's write is held to this, the builtin's and a real model's alike.

When a value was said: the version that set it (the oldest of the newest run of versions
holding it) was made by a batch; an organize batch's event gives the time. A version with no
event behind it (a person's correction, the nightly review, project approval) counts as said
when it was made. Writes with no event (deep, a person) are current as they are: they are
made now, after reading the object whole.

What the older write keeps: its other changes (new aliases, a dated line, a filled-in unknown
fact). What it loses: each older value, put back as it is stored; a history line it added that
names the value it replaced (it would say the current value came first); and its name or
summary when they say the older value (the stored ones say the current one).
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC

from ..base.clock import parse_time, to_micros
from ..base.spaces import EVERY_SPACE
from ..timeline.events import event_times
from .records import ObjectRecord
from .states import BODY_MAX_CHARS, RULE_LINE, STATE_LINE, body_with_state, state_of


@dataclass(frozen=True)
class _Key:
    """A value a later statement replaces, and the body line it is read from."""

    name: str  # "role" | "time rule" | "state"
    zh: str  # its Chinese name in a history line
    line: re.Pattern[str]


_ROLE_LINE = re.compile(r"^\s*[-*]?\s*(?:role|职责|角色)\s*[:：]\s*(?P<value>.*)$",
                        re.IGNORECASE | re.MULTILINE)
_ROLE, _RULE = _Key("role", "职责", _ROLE_LINE), _Key("time rule", "时间规则", RULE_LINE)
_STATE = _Key("state", "状态", STATE_LINE)  # the field; its body line follows it
KEYS: dict[str, tuple[_Key, ...]] = {"person": (_ROLE,), "schedule": (_RULE, _STATE),
                                     "todo": (_STATE,)}
_UNKNOWN = {"", "unknown", "未知", "不明", "n/a", "unknown."}
_HISTORY_LINE = re.compile(r"^\s*[-*]?\s*(?:history|历史)\s*[:：]", re.IGNORECASE)
_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class _Said:
    """When a value (or a write) was said: UTC microseconds, and the ISO text it came from."""

    micros: int
    at: str

    @property
    def day(self) -> str:
        return self.at[:10]


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _line_value(key: _Key, body: str) -> str | None:
    found = key.line.search(body)
    return found.group("value").strip() if found else None


def _value(key: _Key, type_: str, state: str | None, body: str) -> str | None:
    """The object's value of `key` (None: unknown or not there)."""
    value = state_of(type_, state, body) if key is _STATE else _line_value(key, body)
    return value if value is not None and _norm(value) not in _UNKNOWN else None


def _said(micros: int | None, at: str | None) -> _Said | None:
    if micros is not None and at:
        return _Said(micros, at)
    try:  # a version made with no event behind it: said when it was made
        return _Said(to_micros(parse_time(at or "", UTC)), at or "")
    except (ValueError, OverflowError):
        return None


# Which event each of some batches read: the jobs' records answer it (objects own no batches
# and import no jobs), handed in by the organize write (WriteRules.batch_events).
BatchEvents = Callable[[Sequence[int]], Mapping[int, int]]


def said_times(conn: sqlite3.Connection, object_id: str, keys: tuple[_Key, ...],
               batch_events: BatchEvents) -> dict[str, _Said | None]:
    """When each key's current value was said: the event (else the making) of the version
    that set it, the oldest of the newest versions that all hold it."""
    type_ = object_id.partition(":")[0]
    rows = conn.execute(
        "SELECT state, body, changed_at, batch_id FROM object_versions"
        " WHERE object_id = ? ORDER BY version DESC", (object_id,)).fetchall()
    events = batch_events(sorted({row["batch_id"] for row in rows
                                  if row["batch_id"] is not None}))
    said = event_times(conn, events.values(), EVERY_SPACE)  # by id: any space's event
    times: dict[str, _Said | None] = {}
    for key in keys:
        setter = rows[0] if rows else None
        current = _value(key, type_, rows[0]["state"], rows[0]["body"]) if rows else None
        for row in rows[1:]:
            if _value(key, type_, row["state"], row["body"]) != current:
                break
            setter = row
        if setter is None:
            times[key.name] = None
            continue
        event = said.get(events.get(setter["batch_id"], -1))
        times[key.name] = _said(event.occurred_us if event else None,
                                event.occurred_at if event else setter["changed_at"])
    return times


def event_said(conn: sqlite3.Connection, event_id: int) -> _Said | None:
    """When the event was said (None: no such event)."""
    event = event_times(conn, [event_id], EVERY_SPACE).get(event_id)
    return None if event is None else _Said(event.occurred_us, event.occurred_at)


def keep_latest(conn: sqlite3.Connection, record: ObjectRecord, row: sqlite3.Row | None,
                event_id: int, batch_events: BatchEvents) -> ObjectRecord:
    """`record` as an organize write of event `event_id` stores it over `row` (its stored
    row; None: a new object): each value it replaces that was said after the event is kept,
    the write's older value becoming a history line (see the module doc)."""
    keys = KEYS.get(record.type, ())
    if row is None or not keys:
        return record
    stored_state = state_of(record.type, row["state"], row["body"])
    changed = [key for key in keys
               if (old := _value(key, record.type, stored_state, row["body"])) is not None
               and (new := _value(key, record.type, record.state, record.body)) is not None
               and _norm(old) != _norm(new)]
    if not changed:
        return record
    said = event_said(conn, event_id)
    times = said_times(conn, record.id, keys, batch_events)
    older = [key for key in changed if said is not None
             and (current := times[key.name]) is not None and said.micros < current.micros]
    if not older or said is None:
        return record
    return _as_history(record, row, stored_state, older, said, times)


def _as_history(record: ObjectRecord, row: sqlite3.Row, stored_state: str | None,
                older: list[_Key], said: _Said, times: dict[str, _Said | None]) -> ObjectRecord:
    """The record with each `older` value put back as stored and kept as history instead."""
    stored = row["body"]
    restore = [*older, *([_STATE] if _RULE in older and _STATE not in older else [])]
    # a moved plan's state line names the day it was moved from: it goes back with the day
    written = {key.name: _line_value(key, record.body) or (record.state or "")
               for key in restore}
    body = _put_back(record.body, stored, restore)
    replaced = [_norm(_line_value(k, stored) or (stored_state or "")) for k in older]
    added = set(record.body.splitlines()) - set(stored.splitlines())
    lines = [line for line in body.split("\n") if not (  # it says the current value came first
        line in added and _HISTORY_LINE.match(line) and any(v and v in _norm(line)
                                                           for v in replaced))]
    for key in older:
        line = _history_line(key, written[key.name], said, times[key.name],
                             _chinese_label(key, stored))
        if len("\n".join([*lines, line])) <= BODY_MAX_CHARS:
            lines.append(line)
    news = [_norm(written[k.name]) for k in older if written[k.name]]
    says_older = [any(n in _norm(text) for n in news) for text in (record.name, record.summary)]
    state = stored_state if _STATE in older else record.state
    return replace(record, name=row["name"] if says_older[0] else record.name,
                   summary=row["summary"] if says_older[1] else record.summary, state=state,
                   body=body_with_state(record.type, "\n".join(lines), state))


def _put_back(body: str, stored: str, keys: list[_Key]) -> str:
    """`body` with each key's line value as the stored body has it (when both have the line)."""
    for key in keys:
        found, old = key.line.search(body), _line_value(key, stored)
        if found is not None and old is not None:
            body = body[:found.start("value")] + old + body[found.end("value"):]
    return body


def _chinese_label(key: _Key, body: str) -> bool:
    """Whether the body writes the key's line under a Chinese label (its history line too)."""
    found = key.line.search(body)
    return bool(found and _CJK.search(body[found.start():found.start("value")]))


def _history_line(key: _Key, value: str, said: _Said, current: _Said | None, zh: bool) -> str:
    then = current.day if current else "?"
    if zh:
        return f"- 历史：{key.zh}「{value}」是 {said.day} 说的，早于现值（{then} 说的）"
    return f"- history: {key.name} {value} was said on {said.day}, before the current one " \
           f"(said on {then})"
