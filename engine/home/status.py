"""What `memvault status` and `memory_status` report: counts per state, the oldest unfinished
records, the batches in flight or failing (with the cause), the timeline's size and the
database's health. Reads only."""

from __future__ import annotations

import sqlite3
from typing import Any, NotRequired, TypedDict

from ..base.spaces import EVERY_SPACE, Spaces
from ..jobs.ledger import UsageSummary, usage_summary
from ..jobs.progress import BatchReport, batch_report
from ..objects.corefiles import CORE_FILES
from ..recall.masking import mask_slice
from ..secrets.detector import find_secret
from ..store.connection import graph_revision
from ..store.disk import disk_usage
from ..timeline.hot import timeline_totals
from ..timeline.queue import EVENT_STATES, EventState
from ..vault.bookkeeping import vault_status

# Plain strings: the tuple's repr is the SQL list below.
UNFINISHED = tuple(s.value for s in (EventState.PENDING, EventState.CONTINUE, EventState.BLOCKED))
# Newest events scanned for secret-looking text per status call: a bounded scan (100-250 us
# an event of a few hundred chars), so status stays cheap at any size of memory.
SECRET_SCAN_EVENTS = 200
SECRET_IDS_SHOWN = 10


def event_counts(conn: sqlite3.Connection, spaces: Spaces = EVERY_SPACE) -> dict[str, int]:
    """Events (of the spaces `spaces` sees) in all, still hot, and per archive-queue state."""
    seen, args = spaces.sql("space")
    total_events = conn.execute(f"SELECT COUNT(*) FROM events WHERE {seen}", args).fetchone()[0]
    states = dict.fromkeys(EVENT_STATES, 0)
    queued = ("SELECT state, COUNT(*) FROM archive_queue GROUP BY state" if spaces.bound is None
              else "SELECT q.state, COUNT(*) FROM archive_queue q JOIN events e"
                   f" ON e.id = q.event_id WHERE {spaces.sql('e.space')[0]} GROUP BY q.state")
    for state, count in conn.execute(queued, args):
        states[state] = count
    return {"total": total_events, "hot": total_events - sum(states.values()), **states}


def object_counts(conn: sqlite3.Connection,
                  spaces: Spaces = EVERY_SPACE) -> dict[str, dict[str, int]]:
    """Objects (of the spaces `spaces` sees) per type and status (a merged object counts as
    'merged')."""
    objects: dict[str, dict[str, int]] = {}
    seen, args = spaces.sql("space")
    for type_, status, count in conn.execute(
        "SELECT type, CASE WHEN redirect_to IS NULL THEN status ELSE 'merged' END, COUNT(*)"
        f" FROM objects WHERE {seen} GROUP BY 1, 2", args,
    ):
        objects.setdefault(type_, {})[status] = count
    return objects


def space_counts(conn: sqlite3.Connection,
                 spaces: Spaces = EVERY_SPACE) -> dict[str, dict[str, int]]:
    """Per space `spaces` sees: its events, its live objects and its active hot nodes."""
    seen, args = spaces.sql("space")
    counts: dict[str, dict[str, int]] = {}
    for what, sql in (
        ("events", f"SELECT space, COUNT(*) FROM events WHERE {seen} GROUP BY space"),
        ("objects", "SELECT space, COUNT(*) FROM objects WHERE redirect_to IS NULL"
                    f" AND {seen} GROUP BY space"),
        ("hot_nodes", f"SELECT space, COUNT(*) FROM hot_nodes WHERE active = 1 AND {seen}"
                      " GROUP BY space"),
    ):
        for space, count in conn.execute(sql, args):
            counts.setdefault(space, {"events": 0, "objects": 0, "hot_nodes": 0})[what] = count
    return dict(sorted(counts.items()))


class StatusReport(TypedDict):
    """memory_status's answer: counts, what is unfinished, jobs, sizes and health."""

    events: dict[str, int]  # total, hot and one count per archive-queue state
    spaces: dict[str, dict[str, int]]  # space -> events, objects, hot_nodes
    objects: dict[str, dict[str, int]]  # type -> status (or 'merged') -> count
    relations: int
    evidence: int
    timeline: dict[str, Any]
    jobs: dict[str, int]  # job state -> count
    batches: BatchReport
    oldest_unfinished: list[dict[str, Any]]
    core_files_chars: dict[str, int | None]
    graph_revision: int
    vault: dict[str, Any]
    disk: dict[str, Any]
    usage: UsageSummary
    quick_check: str
    secrets: SecretPointer
    home: NotRequired[str]  # Memory.status adds the home's path


def memory_status(conn: sqlite3.Connection, oldest: int = 20,
                  spaces: Spaces = EVERY_SPACE) -> StatusReport:
    """A snapshot of the whole memory, cheap enough to call every turn. A bound client's
    counts, unfinished events and secret pointers are those of the spaces it sees; the
    timeline's size stays the whole timeline's (compaction's threshold is on all of it)."""
    events = event_counts(conn, spaces)
    objects = object_counts(conn, spaces)
    seen, args = spaces.sql("e.space")
    jobs = dict(conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
    unfinished = [
        dict(r)
        for r in conn.execute(
            "SELECT q.event_id, q.state, q.enqueued_at, q.page_cursor, e.chars, e.occurred_at,"
            " substr(e.text, 1, 60) AS preview FROM archive_queue q JOIN events e"
            f" ON e.id = q.event_id WHERE q.state IN {UNFINISHED!r} AND {seen}"
            " ORDER BY q.enqueued_at, q.event_id LIMIT ?",
            (*args, oldest),
        )
    ]
    _mask_previews(conn, unfinished)
    core = {
        name: (row[0] if (row := conn.execute(
            "SELECT length(content) FROM core_files WHERE name = ? ORDER BY version DESC LIMIT 1",
            (name,),
        ).fetchone()) else None)
        for name in CORE_FILES
    }
    return StatusReport(
        events=events,
        spaces=space_counts(conn, spaces),
        objects=objects,
        relations=conn.execute("SELECT COUNT(*) FROM relations").fetchone()[0],
        evidence=conn.execute("SELECT COUNT(*) FROM evidence").fetchone()[0],
        timeline=timeline_totals(conn),
        jobs=jobs,
        batches=batch_report(conn),
        oldest_unfinished=unfinished,
        core_files_chars=core,
        graph_revision=graph_revision(conn),
        vault=vault_status(conn),
        disk=disk_usage(conn),
        usage=usage_summary(conn, days=7),
        quick_check=conn.execute("PRAGMA quick_check").fetchone()[0],
        secrets=secret_pointer(conn, spaces=spaces),
    )


def _mask_previews(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    """Mask secret-looking values in the previews of unfinished events (found in the whole
    event, so a value cut by the preview's end is masked too)."""
    for row in rows:
        text = conn.execute("SELECT text FROM events WHERE id = ?",
                            (row["event_id"],)).fetchone()[0]
        row["preview"] = mask_slice(text, 0, len(row["preview"]))


class SecretPointer(TypedDict):
    """Status's `secrets`: which recent events hold secret-looking text; kinds, never values."""

    events: int  # how many of the scanned events hold one
    scanned: int
    ids: list[int]  # the newest of them
    kinds: list[str]
    hint: str | None  # how to see one and remove it (None when there is none)


def secret_pointer(conn: sqlite3.Connection, newest: int = SECRET_SCAN_EVENTS,
                   spaces: Spaces = EVERY_SPACE) -> SecretPointer:
    """Which of the newest `newest` events hold secret-looking text (count, the newest ids),
    with how to remove a value. Names kinds only, never a value."""
    found: list[int] = []
    kinds: set[str] = set()
    scanned = 0
    seen, args = spaces.sql("space")
    for event_id, text in conn.execute(
            f"SELECT id, text FROM events WHERE {seen} ORDER BY id DESC LIMIT ?",
            (*args, newest)):
        scanned += 1
        kind = find_secret(text)
        if kind:
            found.append(event_id)
            kinds.add(kind)
    hint = ("see one with `memvault event ID` (masked; --reveal-secrets shows it), then remove "
            "the value everywhere with `memvault forget TEXT --yes`") if found else None
    return SecretPointer(events=len(found), scanned=scanned, ids=found[:SECRET_IDS_SHOWN],
                         kinds=sorted(kinds), hint=hint)
