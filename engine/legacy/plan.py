"""Reading a database of the original design and planning its upgrade, without writing.

`plan_migration` turns the old rows into the rows memvault will insert, checking everything on
the way, so a database that cannot be upgraded is refused before a single byte changes. The
shape of the old tables is described in engine/legacy/upgrade.py.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from ..base.clock import iso, parse_time
from ..base.errors import InputError, StoreError
from ..base.tokens import estimate_tokens
from ..objects.corefiles import CORE_FILES
from ..objects.ids import RELATION_LABELS, ObjectStatus, check_object_id
from ..store.migrations import table_names
from ..timeline.events import NewEvent, validate_event
from ..timeline.queue import EventState

NAME_MAX, SUMMARY_MAX, BODY_MAX, REASON_MAX = 200, 400, 16_000, 1_000
STATUSES = tuple(ObjectStatus)


class LegacyDataError(StoreError):
    """A row of the old database that cannot be carried over; nothing was changed."""


@dataclass
class LegacyPlan:
    """Rows to insert, in the column order engine/legacy/upgrade.py's statements expect."""

    events: list[tuple] = field(default_factory=list)
    nodes: list[tuple] = field(default_factory=list)
    parents: list[tuple[int, int]] = field(default_factory=list)
    queue: list[tuple[int, str, str | None]] = field(default_factory=list)
    objects: list[tuple] = field(default_factory=list)
    versions: list[tuple] = field(default_factory=list)
    relations: list[tuple] = field(default_factory=list)
    evidence: list[tuple[str, int, int, int]] = field(default_factory=list)
    core: list[tuple[str, str]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)


def _rows(conn: sqlite3.Connection, table: str, order: str) -> list[sqlite3.Row]:
    """Every row of an old table, or none when this old database never had it."""
    if table not in table_names(conn):
        return []
    return conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()


def plan_migration(conn: sqlite3.Connection, now: datetime, tz: tzinfo | None) -> LegacyPlan:
    """Read every old table and plan the upgrade; LegacyDataError names the first bad row."""
    plan = LegacyPlan(notes={"trimmed": [], "dangling_sources": [], "dangling_relations": [],
                             "status_changed": []})
    texts, times = _plan_events(plan, _rows(conn, "timeline", "rowid"), now, tz)
    ids = {legacy: new for new, legacy in enumerate(texts, start=1)}
    left = _plan_nodes(plan, _rows(conn, "hot_timeline", "position, id"), ids, texts, times,
                       iso(now))
    failed = _failed_events(_rows(conn, "memory_snapshots", "id"), _rows(
        conn, "hot_timeline", "id"))
    for legacy_id, new_id in ids.items():
        if legacy_id in left:
            snapshot = failed.get(legacy_id)
            if snapshot is None:
                plan.queue.append((new_id, EventState.PENDING, None))
            else:
                reason = f"old-protocol batch {snapshot['id']} failed: {snapshot['error'] or '?'}"
                plan.queue.append((new_id, EventState.BLOCKED, reason[:REASON_MAX]))
    known = _plan_objects(plan, conn, ids, texts, iso(now))
    _plan_relations(plan, _rows(conn, "memory_relations", "rowid"), known)
    plan.notes["core_skipped"] = []
    for row in _rows(conn, "core_documents", "name"):
        if row["name"] not in CORE_FILES or not row["content"]:
            continue
        if "\x00" in row["content"]:  # memvault refuses NUL in core files; the old row stays
            plan.notes["core_skipped"].append(f"{row['name']}: holds a NUL character")
        else:
            plan.core.append((row["name"], row["content"]))
    return plan


def _plan_events(
    plan: LegacyPlan, rows: list[sqlite3.Row], now: datetime, tz: tzinfo | None,
) -> tuple[dict[str, str], dict[str, str]]:
    """Event rows, numbered 1.. in the old insertion order; returns texts and times by old id."""
    texts: dict[str, str] = {}
    times: dict[str, str] = {}
    for new_id, row in enumerate(rows, start=1):
        legacy_id = str(row["id"])
        source = row["role"] if isinstance(row["role"], str) and row["role"].strip() else "legacy"
        event = NewEvent(text=row["text"], occurred_at=row["occurred_at"] or row["created_at"],
                         source=source[:64], kind="message", meta={"legacy_id": legacy_id})
        try:
            occurred_at, occurred_us, _, source, kind, meta, text = validate_event(event, now, tz)
            ingested_at = parse_time(row["created_at"], tz).isoformat()
        except (InputError, ValueError, TypeError, AttributeError) as exc:
            raise LegacyDataError(f"old event {legacy_id!r} cannot be carried over: {exc}. "
                                  "Nothing was changed.") from None
        plan.events.append((new_id, occurred_at, occurred_us, ingested_at, source, kind, meta,
                            text, len(text), estimate_tokens(text)))
        texts[legacy_id] = text
        times[legacy_id] = occurred_at
    return texts, times


def _plan_nodes(
    plan: LegacyPlan, rows: list[sqlite3.Row], ids: dict[str, int], texts: dict[str, str],
    times: dict[str, str], now_text: str,
) -> set[str]:
    """Hot nodes renumbered in timeline order; returns the old ids of events that left it."""
    new_ids = {row["id"]: n for n, row in enumerate(rows, start=1)}
    spans = _raw_spans([r for r in rows if r["kind"] == "raw"], texts)
    children: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        if row["parent_id"] is not None:
            if row["parent_id"] not in new_ids:
                raise LegacyDataError(f"old node {row['id']!r} has a missing parent. "
                                      "Nothing was changed.")
            children[row["parent_id"]].append(row["id"])
    by_id = {row["id"]: row for row in rows}

    def reach(node_id: str, seen: frozenset[str] = frozenset()) -> list[str]:
        """The raw nodes under a node (cycles refused)."""
        if node_id in seen:
            raise LegacyDataError(f"old node {node_id!r} is its own ancestor. Nothing was changed.")
        if by_id[node_id]["kind"] == "raw":
            return [node_id]
        return [r for c in children[node_id] for r in reach(c, seen | {node_id})]

    hot_events = set()
    for row in rows:
        new_id, active = new_ids[row["id"]], 1 if row["active"] else 0
        created = row["created_at"] or now_text
        if row["kind"] == "raw":
            event, (index, count, start, end) = str(row["event_id"]), spans[row["id"]]
            if active:
                hot_events.add(event)
            text = texts[event][start:end]
            plan.nodes.append((new_id, "raw", 0, new_id, ids[event], index, count, start, end,
                               None, active, end - start, estimate_tokens(text), times[event],
                               times[event], created))
        else:
            raws = reach(row["id"])
            summary = row["text"] or ""
            seq = min((new_ids[r] for r in raws), default=new_id)
            moments = sorted(times[str(by_id[r]["event_id"])] for r in raws) or [created]
            plan.nodes.append((new_id, "head", max(1, row["level"] or 1), seq, None, None, None,
                               None, None, summary, active, len(summary),
                               estimate_tokens(summary), moments[0], moments[-1], created))
        if row["parent_id"] is not None:
            plan.parents.append((new_ids[row["parent_id"]], new_id))
    return set(texts) - hot_events


def _raw_spans(
    raws: list[sqlite3.Row], texts: dict[str, str],
) -> dict[str, tuple[int, int, int, int]]:
    """(fragment index, count, start, end) of each raw node; its text must be the event's."""
    parts: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for row in raws:
        event = str(row["event_id"])
        if event not in texts:
            raise LegacyDataError(f"old node {row['id']!r} names a missing event "
                                  f"{row['event_id']!r}. Nothing was changed.")
        parts[event].append(row)
    spans = {}
    for event, rows in parts.items():
        rows.sort(key=lambda r: (r["part"] or 0, r["id"]))
        start, text = 0, texts[event]
        for index, row in enumerate(rows):
            piece = row["text"] or ""
            if text[start:start + len(piece)] != piece or not piece:
                raise LegacyDataError(
                    f"old node {row['id']!r} does not match the text of event {event!r} at "
                    f"char {start}. Nothing was changed.")
            spans[row["id"]] = (index, len(rows), start, start + len(piece))
            start += len(piece)
    return spans


def _failed_events(snapshots: list[sqlite3.Row], nodes: list[sqlite3.Row]) -> dict[str, Any]:
    """Old event id -> the failed snapshot that covered it (by event or by node)."""
    node_event = {row["id"]: str(row["event_id"]) for row in nodes if row["kind"] == "raw"}
    failed: dict[str, Any] = {}
    for snap in snapshots:
        if snap["status"] != "failed":
            continue
        try:
            payload = json.loads(snap["payload"] or "{}")
        except ValueError:
            payload = {}
        if not isinstance(payload, dict):
            continue
        events = [str(e) for e in payload.get("event_ids") or []]
        events += [node_event[n] for n in payload.get("node_ids") or [] if n in node_event]
        for event in events:
            failed.setdefault(event, snap)
    return failed


def _json_strings(raw: Any) -> list[str]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _fit(plan: LegacyPlan, object_id: str, name: str, value: str, limit: int) -> str:
    """Trim to the schema's limit, noting it: the full text stays in the old table."""
    if len(value) <= limit:
        return value
    plan.notes["trimmed"].append(f"{object_id}.{name}")
    return value[:limit]


def _plan_objects(
    plan: LegacyPlan, conn: sqlite3.Connection, ids: dict[str, int], texts: dict[str, str],
    now_text: str,
) -> set[str]:
    """Objects, their versions and evidence from `sources`; returns the ids carried over."""
    history: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for row in _rows(conn, "memory_object_versions", "object_id, version"):
        history[row["object_id"]].append(row)
    known = set()
    for row in _rows(conn, "memory_objects", "rowid"):
        oid = row["id"]
        try:
            kind, slug = check_object_id(oid)
        except InputError as exc:
            raise LegacyDataError(f"old object cannot be carried over: {exc}. "
                                  "Nothing was changed.") from None
        if row["type"] != kind:
            raise LegacyDataError(f"old object {oid!r} has type {row['type']!r}, not {kind!r}. "
                                  "Nothing was changed.")
        status = row["status"] if row["status"] in STATUSES else ObjectStatus.ARCHIVED
        if status != row["status"]:
            plan.notes["status_changed"].append(f"{oid}: {row['status']!r} -> archived")
        name = _fit(plan, oid, "name", (row["name"] or slug).strip() or slug, NAME_MAX)
        aliases = json.dumps(_json_strings(row["aliases"]), ensure_ascii=False)
        cues = json.dumps(_json_strings(row["cues"]), ensure_ascii=False)
        summary = _fit(plan, oid, "summary", row["summary"] or "", SUMMARY_MAX)
        body = _fit(plan, oid, "body", row["body"] or "", BODY_MAX)
        created = row["created_at"] or now_text
        updated = row["updated_at"] or created
        version = max(1, row["version"] or 1)
        # Versions at or above the current one would clash with it; they stay in the old table.
        older = {v["version"]: v for v in history[oid] if 1 <= (v["version"] or 0) < version}
        for v in older.values():
            plan.versions.append((oid, v["version"], name, aliases,
                                  (v["summary"] or "")[:SUMMARY_MAX], (v["body"] or "")[:BODY_MAX],
                                  cues, status, v["created_at"] or created))
        plan.versions.append((oid, version, name, aliases, summary, body, cues, status, updated))
        plan.objects.append((oid, kind, name, aliases, summary, body, cues, status, version,
                             created, updated))
        for source in _json_strings(row["sources"]):
            if source in ids:
                plan.evidence.append((oid, ids[source], 0, len(texts[source])))
            else:
                plan.notes["dangling_sources"].append(f"{oid} -> {source}")
        known.add(oid)
    return known


def _plan_relations(plan: LegacyPlan, rows: list[sqlite3.Row], known: set[str]) -> None:
    """Short labels become relations; long sentences stay readable as legacy rows."""
    for row in rows:
        label = (row["relation"] or "").strip()
        if row["src"] not in known or row["dst"] not in known or not label:
            plan.notes["dangling_relations"].append(f"{row['src']} {label} {row['dst']}")
            continue
        legacy = 0 if label in RELATION_LABELS else 1
        plan.relations.append((row["src"], label, row["dst"], legacy, row["created_at"]))
