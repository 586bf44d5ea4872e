"""`memvault migrate`: upgrade a database of the original design in place (docs/spec.md section 7).

The original (one-phase) memory kept these tables; a database holding them is refused by every
other command until it is migrated:

    timeline(id TEXT PK, occurred_at TEXT NULL, created_at TEXT, role TEXT, text TEXT)
    hot_timeline(id TEXT PK, kind 'raw'|'summary', event_id TEXT, part INT, parts INT, text TEXT,
                 parent_id TEXT, level INT, position INT, active INT, created_at TEXT)
    memory_objects(id TEXT PK, type, name, aliases JSON, summary, body, cues JSON, status,
                   version INT, sources JSON list of timeline ids, created_at, updated_at)
    memory_object_versions(object_id, version, summary, body, created_at)
    memory_relations(src, relation, dst, created_at)      -- labels may be long sentences
    core_documents(name, content, updated_at)
    memory_snapshots(id INT PK, protocol INT, mode, status running|done|failed,
                     payload JSON {"node_ids": [...], "event_ids": [...]}, claimed_at, error)
    memory_receipts(token PK, snapshot_id, created_at)
    memory_lease(name PK, holder, expires_at INT ms since the epoch)

What the upgrade does, all in one transaction after a read-only preflight:
- copies events (ids renumbered, the old id kept in meta.legacy_id), the hot timeline with its
  summary heads, objects with their version history, relations (long-sentence labels kept
  readable as legacy rows), and non-empty core documents;
- queues every event that already left the hot timeline as `pending` (the original never queued
  them), except events of a failed old batch, which become `blocked`: failed never turns into done;
- turns each object's `sources` into evidence links over the whole source event;
- releases running snapshots of the old protocol (status 'released') so their work is claimed
  again, and takes the old lease for good, so an old worker can never run beside a new one;
- deletes nothing: every old table and row stays where it was.
It refuses while an old or new worker holds a valid lease.

Because the old tables stay, `memvault forget` must reach them too: `forget_in_legacy_tables`
replaces a forgotten text in their text columns (ids excepted, as everywhere).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from ..base.clock import iso, to_micros
from ..base.errors import InputError, StoreError
from ..base.forgetting import Forgetting
from ..objects.corefiles import write_core_file
from ..store.connection import bump_revision, connect, get_state, set_state, use_wal, write
from ..store.forget_rows import forget_in_rows
from ..store.migrations import (
    LEGACY_DONE_KEY,
    Migration,
    apply_migrations,
    table_names,
    unmigrated_legacy,
)
from ..timeline.queue import EventState
from .plan import LegacyPlan, plan_migration

LEGACY_LEASE_FOREVER_MS = 253_402_300_799_000  # 9999-12-31: the old worker never runs again
MIGRATED_HOLDER = "memvault (migrated)"


class MigrationRefused(StoreError):
    """The database cannot be migrated now; nothing was changed."""


def _counter(conn: sqlite3.Connection) -> Callable[..., int]:
    """count(table, where): rows of a table, 0 for a table this database does not have."""
    tables = table_names(conn)

    def count(table: str, where: str = "1 = 1") -> int:
        if table not in tables:
            return 0
        return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}").fetchone()[0]

    return count


def check_no_worker(conn: sqlite3.Connection, now: datetime) -> None:
    """Refuse while an old-protocol worker or a memvault worker holds a valid lease."""
    tables = table_names(conn)
    if "memory_lease" in tables:
        row = conn.execute(
            "SELECT holder, expires_at FROM memory_lease WHERE expires_at > ? AND holder != ?"
            " ORDER BY expires_at DESC LIMIT 1", (to_micros(now) // 1000, MIGRATED_HOLDER),
        ).fetchone()
        if row:
            raise MigrationRefused(
                f"an old-protocol worker ({row['holder']}) holds the lease; stop the old agent "
                "first: old and new workers must not run at once. Nothing was changed.")
    if "leases" in tables:
        row = conn.execute("SELECT holder FROM leases WHERE expires_us > ?",
                           (to_micros(now),)).fetchone()
        if row:
            raise MigrationRefused(
                f"a memvault worker ({row['holder']}) holds the lease; stop it first. "
                "Nothing was changed.")


def legacy_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """What the old tables hold (read before and after: the upgrade deletes none of it)."""
    count = _counter(conn)
    sources = 0
    if "memory_objects" in table_names(conn):
        for (raw,) in conn.execute("SELECT sources FROM memory_objects"):
            try:
                value = json.loads(raw or "[]")
            except ValueError:
                continue
            sources += len(value) if isinstance(value, list) else 0
    return {
        "events": count("timeline"),
        "nodes": count("hot_timeline"),
        "active_nodes": count("hot_timeline", "active = 1"),
        "objects": count("memory_objects"),
        "object_versions": count("memory_object_versions"),
        "relations": count("memory_relations"),
        "sources": sources,
        "core_documents": count("core_documents", "length(content) > 0"),
        "snapshots_running": count("memory_snapshots", "status = 'running'"),
        "snapshots_failed": count("memory_snapshots", "status = 'failed'"),
        "snapshots_done": count("memory_snapshots", "status = 'done'"),
        "snapshots_released": count("memory_snapshots", "status = 'released'"),
        "receipts": count("memory_receipts"),
    }


def memvault_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """What the memvault tables hold after the upgrade."""
    count = _counter(conn)
    return {
        "events": count("events"),
        "hot_nodes": count("hot_nodes"),
        "active_nodes": count("hot_nodes", "active = 1"),
        "objects": count("objects"),
        "object_versions": count("object_versions"),
        "relations": count("relations", "legacy = 0"),
        "legacy_relations": count("relations", "legacy = 1"),
        "evidence": count("evidence"),
        "core_files": count("core_files"),
        "pending": count("archive_queue", "state = 'pending'"),
        "blocked": count("archive_queue", "state = 'blocked'"),
        "done": count("archive_queue", "state IN ('linked', 'archive_only')"),
    }


class MigrationReport(TypedDict):
    """What `memvault migrate` (`Memory.migrate`) reports. A memvault database gets pending
    schema migrations only (`earlier_upgrade`); one of the original design is upgraded (the
    other optional keys)."""

    legacy: bool  # the database was of the original design, and was upgraded now
    schema_migrations: list[str]  # the schema migrations applied now, by name
    earlier_upgrade: NotRequired[dict[str, Any] | None]  # the report of an upgrade done before
    migrated_at: NotRequired[str]
    before: NotRequired[dict[str, int]]  # the old tables' rows before
    after_old_tables: NotRequired[dict[str, int]]  # ... and after (the upgrade deletes none)
    after: NotRequired[dict[str, int]]  # the memvault tables' rows after
    changes: NotRequired[dict[str, Any]]  # what the plan wrote
    recall_index: NotRequired[dict[str, int]]  # the recall index built after (Memory.migrate)


def migrate_database(
    db_path: Path, now: datetime, tz: tzinfo | None, source: Path | None = None, *,
    registry: Sequence[Migration],
) -> MigrationReport:
    """Upgrade `db_path` (after copying `source` there, when given); return the report.

    A database already in memvault's shape just gets any pending schema migrations of
    `registry` (home/migrations.py's: the caller's, as this feature sits below it).
    """
    if source is not None:
        _copy_source(source, db_path, now, tz)
    conn = connect(db_path)
    try:
        if not unmigrated_legacy(conn):
            applied = apply_migrations(conn, registry)
            has_state = "state" in table_names(conn)
            previous = get_state(conn, LEGACY_DONE_KEY) if has_state else None
            return MigrationReport(legacy=False, schema_migrations=applied,
                                   earlier_upgrade=json.loads(previous) if previous else None)
        check_no_worker(conn, now)
        # Planned again on the copy, even after --from planned on the source: the source may
        # have changed between that read and the copy.
        plan = plan_migration(conn, now, tz)
        before = legacy_counts(conn)
        use_wal(conn)
        applied = apply_migrations(conn, registry)
        with write(conn):
            check_no_worker(conn, now)  # again, now under the write lock
            if conn.execute("SELECT 1 FROM events LIMIT 1").fetchone():
                raise MigrationRefused(
                    f"{db_path} already holds memvault events beside the old tables; "
                    "nothing was changed")
            changes = apply_plan(conn, plan, now)
            report = MigrationReport(
                legacy=True, migrated_at=iso(now), schema_migrations=applied, before=before,
                after_old_tables=legacy_counts(conn), after=memvault_counts(conn),
                changes=changes)
            set_state(conn, LEGACY_DONE_KEY, json.dumps(report, ensure_ascii=False))
        return report
    finally:
        conn.close()


def _copy_source(source: Path, db_path: Path, now: datetime, tz: tzinfo | None) -> None:
    """Copy an old database into the home with the backup API; the source is only read."""
    if not source.is_file():
        raise InputError(f"{source}: no such database file")
    if db_path.exists():
        raise MigrationRefused(
            f"{db_path} already exists; migrate into an empty home (--home) instead")
    src = connect(source, readonly=True)
    try:
        if not unmigrated_legacy(src):
            raise MigrationRefused(f"{source} is not a database of the original design")
        check_no_worker(src, now)
        plan_migration(src, now, tz)  # refuse bad data before anything is written
        dest = sqlite3.connect(db_path)
        try:
            src.backup(dest)
        finally:
            dest.close()
    finally:
        src.close()


def apply_plan(conn: sqlite3.Connection, plan: LegacyPlan, now: datetime) -> dict[str, Any]:
    """Write the planned rows inside the caller's transaction; return what changed."""
    stamp, old_tables = iso(now), table_names(conn)
    conn.executemany(
        "INSERT INTO events (id, occurred_at, occurred_us, ingested_at, source, kind, meta, text,"
        " chars, est_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", plan.events)
    conn.executemany(
        "INSERT INTO hot_nodes (id, kind, level, seq, event_id, fragment_index, fragment_count,"
        " start_char, end_char, summary, active, chars, est_tokens, first_at, last_at,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", plan.nodes)
    # Parents after every node exists: the foreign key is checked per statement.
    conn.executemany("UPDATE hot_nodes SET parent_id = ? WHERE id = ?", plan.parents)
    conn.executemany(
        "INSERT INTO archive_queue (event_id, state, reason, enqueued_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(event_id, state, reason, stamp, stamp) for event_id, state, reason in plan.queue])
    conn.executemany(
        "INSERT INTO objects (id, type, name, aliases, summary, body, cues, status, version,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", plan.objects)
    conn.executemany(
        "INSERT INTO object_versions (object_id, version, name, aliases, summary, body, cues,"
        " status, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", plan.versions)
    conn.executemany(
        "INSERT OR IGNORE INTO relations (src_id, label, dst_id, legacy, created_at)"
        " VALUES (?, ?, ?, ?, ?)", plan.relations)
    conn.executemany(
        "INSERT OR IGNORE INTO evidence (object_id, event_id, start_char, end_char, created_at)"
        " VALUES (?, ?, ?, ?, ?)", [(*link, stamp) for link in plan.evidence])
    core = [name for name, content in plan.core
            if write_core_file(conn, name, content, "import", now) is not None]
    released = conn.execute(
        "UPDATE memory_snapshots SET status = 'released', error = COALESCE(error || '; ', '')"
        " || 'released by memvault migrate ' || ? WHERE status = 'running'", (stamp,)
    ).rowcount if "memory_snapshots" in old_tables else 0
    if "memory_lease" in old_tables:
        taken = conn.execute("UPDATE memory_lease SET holder = ?, expires_at = ?",
                             (MIGRATED_HOLDER, LEGACY_LEASE_FOREVER_MS)).rowcount
        if not taken:
            conn.execute("INSERT INTO memory_lease (name, holder, expires_at) VALUES (?, ?, ?)",
                         ("worker", MIGRATED_HOLDER, LEGACY_LEASE_FOREVER_MS))
    bump_revision(conn)
    return {
        "pending_added": sum(1 for _, state, _ in plan.queue if state == EventState.PENDING),
        "blocked_added": sum(1 for _, state, _ in plan.queue if state == EventState.BLOCKED),
        "evidence_added": len(plan.evidence), "core_imported": core,
        "snapshots_released": released, **plan.notes,
    }


# The old tables' text columns: ids are never rewritten, as in memvault's own tables.
_LEGACY_TEXT = {
    "timeline": ("text",),
    "hot_timeline": ("text",),
    "memory_objects": ("name", "aliases", "summary", "body", "cues"),
    "memory_object_versions": ("summary", "body"),
    "memory_relations": ("relation",),
    "core_documents": ("content",),
    "memory_snapshots": ("payload", "error"),
}


def forget_in_legacy_tables(conn: sqlite3.Connection, forgetting: Forgetting) -> None:
    """Replace the forgotten text in the tables a migrated database kept from the original
    design (those present, and their columns present); inside the caller's transaction."""
    tables = table_names(conn)
    for table, columns in _LEGACY_TEXT.items():
        if table not in tables:
            continue
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        wanted = tuple(c for c in columns if c in present)
        if wanted:
            forget_in_rows(conn, forgetting, table, wanted)
