"""What `memvault status` and `memory_status` report: counts per state, the oldest unfinished
records, the batches in flight or failing (with the cause), the timeline's size and the
database's health. Reads only.

A client bound to a space (memvault.base.spaces) gets every count of the spaces it sees, and
no part that grows with another space's activity: jobs, batches, model usage, the vault, the
graph revision and the database file's sizes are the home's as a whole, so they are left out
of its report (OWNER_ONLY); a work agent polling status learns nothing of when home is written.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from ..base.spaces import EVERY_SPACE, Spaces
from ..jobs.ledger import UsageSummary, usage_summary
from ..jobs.progress import BatchReport, batch_report
from ..jobs.records import job_state_counts
from ..objects.corefiles import CORE_FILES, core_file_chars
from ..objects.counts import evidence_count, live_objects_per_space, object_counts, relation_count
from ..recall.masking import mask_slice
from ..secrets.detector import find_secret, redact_secrets
from ..store.connection import graph_revision
from ..timeline.counts import event_counts, timeline_per_space
from ..timeline.events import get_event, newest_texts
from ..timeline.hot import timeline_totals
from ..timeline.queue import UnfinishedEvent, oldest_unfinished
from ..vault.bookkeeping import vault_status
from .disk import disk_usage

# Plain strings: the tuple's repr is the SQL list below.
# Newest events scanned for secret-looking text per status call: a bounded scan (100-250 us
# an event of a few hundred chars), so status stays cheap at any size of memory.
SECRET_SCAN_EVENTS = 200
SECRET_IDS_SHOWN = 10
# Parts of the report only the owner's unbound status has: each is of the whole home
# (`capture` is Memory.status's: capture.log names no space).
OWNER_ONLY = ("jobs", "batches", "graph_revision", "vault", "usage", "capture")


def space_counts(conn: sqlite3.Connection, spaces: Spaces) -> dict[str, dict[str, int]]:
    """Per space `spaces` sees: its events, its live objects and its active hot nodes."""
    counts: dict[str, dict[str, int]] = {}
    for space, timeline in timeline_per_space(conn, spaces).items():
        counts[space] = {"events": timeline["events"], "objects": 0,
                         "hot_nodes": timeline["hot_nodes"]}
    for space, count in live_objects_per_space(conn, spaces).items():
        counts.setdefault(space, {"events": 0, "objects": 0, "hot_nodes": 0})["objects"] = count
    return dict(sorted(counts.items()))


class BoundTo(TypedDict):
    """A bound status's own part: its space, what it sees, what it leaves out."""

    space: str
    sees: list[str]
    left_out: list[str]  # OWNER_ONLY; and of `disk`, the audit tables and the file


class StatusReport(TypedDict):
    """memory_status's answer: counts, what is unfinished, jobs, sizes and health. The
    NotRequired parts of OWNER_ONLY are in the owner's (unbound) report only."""

    events: dict[str, int]  # total, hot and one count per archive-queue state
    spaces: dict[str, dict[str, int]]  # space -> events, objects, hot_nodes
    objects: dict[str, dict[str, int]]  # type -> status (or 'merged') -> count
    relations: int
    evidence: int
    timeline: dict[str, Any]
    jobs: NotRequired[dict[str, int]]  # job state -> count
    batches: NotRequired[BatchReport]
    oldest_unfinished: list[UnfinishedEvent]
    core_files_chars: dict[str, int | None]
    graph_revision: NotRequired[int]
    vault: NotRequired[dict[str, Any]]
    disk: dict[str, Any]  # bound: raw text, growth and object versions only
    usage: NotRequired[UsageSummary]
    quick_check: str
    secrets: SecretPointer
    home: NotRequired[str]  # Memory.status adds the home's path
    capture: NotRequired[CaptureReport]  # Memory.status adds it for the owner
    bound: NotRequired[BoundTo]  # a bound client's status only


def memory_status(conn: sqlite3.Connection, oldest: int = 20,
                  spaces: Spaces = EVERY_SPACE) -> StatusReport:
    """A snapshot of the whole memory, cheap enough to call every turn. A bound client's
    counts, unfinished events, timeline, disk figures and secret pointers are those of the
    spaces it sees, and the parts of OWNER_ONLY are left out (see the module docstring)."""
    events = event_counts(conn, spaces)
    objects = object_counts(conn, spaces)
    unfinished = oldest_unfinished(conn, oldest, spaces)
    _mask_previews(conn, unfinished, spaces)
    core = {name: core_file_chars(conn, name) for name in CORE_FILES}
    report = StatusReport(
        events=events,
        spaces=space_counts(conn, spaces),
        objects=objects,
        relations=relation_count(conn, spaces),
        evidence=evidence_count(conn, spaces),
        timeline=timeline_totals(conn, spaces),
        oldest_unfinished=unfinished,
        core_files_chars=core,
        disk=disk_usage(conn, spaces=spaces),
        quick_check=conn.execute("PRAGMA quick_check").fetchone()[0],
        secrets=secret_pointer(conn, spaces=spaces),
    )
    if spaces.bound is not None:
        report["bound"] = BoundTo(space=spaces.bound, sees=list(spaces.visible or ()),
                                  left_out=list(OWNER_ONLY))
        return report
    report["jobs"] = job_state_counts(conn)
    report["batches"] = batch_report(conn)
    report["graph_revision"] = graph_revision(conn)
    report["vault"] = vault_status(conn)
    report["usage"] = usage_summary(conn, days=7)
    return report


def _mask_previews(conn: sqlite3.Connection, rows: list[UnfinishedEvent],
                   spaces: Spaces) -> None:
    """Mask secret-looking values in the previews of unfinished events (found in the whole
    event, so a value cut by the preview's end is masked too)."""
    for row in rows:
        text = get_event(conn, row["event_id"], spaces).text
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
    for event_id, text in newest_texts(conn, newest, spaces):
        scanned += 1
        kind = find_secret(text)
        if kind:
            found.append(event_id)
            kinds.add(kind)
    hint = ("see one with `memvault event ID` (masked; --reveal-secrets shows it), then remove "
            "the value everywhere with `memvault forget TEXT --yes`") if found else None
    return SecretPointer(events=len(found), scanned=scanned, ids=found[:SECRET_IDS_SHOWN],
                         kinds=sorted(kinds), hint=hint)


# -- capture.log: the hook calls that failed -----------------------------------------------------
# memvault.home.capture writes it (LOG_NAME there; tests/test_spaces_status.py checks the two
# agree): a JSON line per hook call that failed (`error`) or skipped lines (`skipped`).
CAPTURE_LOG = "capture.log"
CAPTURE_SHOWN = 5  # newest entries status shows
# Bytes read from the log's end: an entry is at most ~7 KB (a 1,000-char detail, escaped), so
# the tail holds more than CAPTURE_SHOWN of them, and status never reads the whole 1 MB log.
CAPTURE_TAIL_BYTES = 64 * 1024
_CAPTURE_KINDS = ("error", "skipped")
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class CaptureFailure(TypedDict):
    """One hook call that failed or skipped lines, as capture.log has it (secrets redacted)."""

    at: str
    host: str
    what: str  # error | skipped
    session: str | None
    detail: str


class CaptureReport(TypedDict):
    """Status's `capture` (the owner's only): the newest failed hook calls, newest first."""

    last_at: str | None  # when the newest of them was (None: the log holds none)
    recent: list[CaptureFailure]


def capture_failures(home: Path, shown: int = CAPTURE_SHOWN) -> CaptureReport:
    """The newest `shown` failures in the home's capture.log, read from its last
    CAPTURE_TAIL_BYTES only; a log that is missing, a symlink or no regular file reads as
    none, and a line that is not an entry is passed over."""
    recent: list[CaptureFailure] = []
    for line in reversed(_capture_tail(home / CAPTURE_LOG).splitlines()):
        entry = _capture_entry(line)
        if entry is not None:
            recent.append(entry)
            if len(recent) == shown:
                break
    return CaptureReport(last_at=recent[0]["at"] if recent else None, recent=recent)


def _capture_tail(path: Path) -> bytes:
    """The log's last CAPTURE_TAIL_BYTES, from its first whole line (b"" when unreadable)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:  # missing, a symlink (ELOOP), unreadable
        return b""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b""
        start = max(0, info.st_size - CAPTURE_TAIL_BYTES)
        data = os.pread(fd, CAPTURE_TAIL_BYTES, start)
    except OSError:
        return b""
    finally:
        os.close(fd)
    return data if start == 0 else data.partition(b"\n")[2]


def _capture_entry(line: bytes) -> CaptureFailure | None:
    """A failure entry of capture.log, or None for any other line."""
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or entry.get("what") not in _CAPTURE_KINDS:
        return None
    at, host, detail, session = (entry.get(key) for key in ("at", "host", "detail", "session"))
    if not (isinstance(at, str) and isinstance(host, str) and isinstance(detail, str)):
        return None
    # capture.py redacts as it writes; again here, for a line written another way
    return CaptureFailure(
        at=at[:40], host=host[:40], what=entry["what"],
        session=redact_secrets(session[:200]) if isinstance(session, str) else None,
        detail=redact_secrets(detail[:1_000]))
