"""The vault's tables (migration m003_vault) and the read-only status query over them.

The vault package (`vault/`) projects SQLite into Markdown; the engine never imports it. What the
engine needs to know about the vault lives here, as SQL only:

- `vault_dirty`: objects whose files must be re-rendered. Triggers on objects, relations and
  evidence mark them, so no engine code path has to remember to: an object's own change marks
  it; a change of its name, type, status or redirect also marks every object linked to it (their
  wikilinks show that name); a relation marks both ends; evidence marks its object. `mark` only
  grows for a row, so the projector clears a row only if it still holds the mark it rendered.
- `projection_pages`: continuation pages (the main file of each object, the directory and the
  core files are rows of `projection`, made by m001).
- `projection_intents` (m012_projection_intents): the sha256 of bytes the projector is about to
  put at a path, recorded (and committed) BEFORE the file is renamed into place and deleted in
  the transaction that records the write. A run killed between the rename and that record
  leaves the intent, so the next run and the watcher know those bytes as the projector's own
  write, never as a hand edit (no false `.conflict` copy, report or core-file import).
- `vault_reports`: what the watcher or the projector found on disk and did not import: hand edits
  and deletions of projected files, refused core files. A report stays open (resolved_at NULL)
  until the projector restores the file (keeping the edit as a `.conflict` copy) or a valid core
  file is imported.

Invariants: the migration adds tables, indexes and triggers only; it changes no existing row.
`vault_status` only reads.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..base.forgetting import Forgetting
from .script import forget_in_rows

DIRECTORY_KEY = "objects/README.md"  # the directory's row in `projection`

_MARK = (
    "INSERT INTO vault_dirty (object_id, mark, reason) {source} "
    "ON CONFLICT (object_id) DO UPDATE SET mark = mark + 1, reason = excluded.reason"
)


def _mark(value: str, reason: str) -> str:
    return _MARK.format(source=f"VALUES ({value}, 1, '{reason}')")


def _mark_neighbours(object_ref: str, reason: str) -> str:
    source = (
        f"SELECT dst_id, 1, '{reason}' FROM relations WHERE src_id = {object_ref} "
        f"UNION SELECT src_id, 1, '{reason}' FROM relations WHERE dst_id = {object_ref}"
    )
    # "WHERE true" keeps SQLite from reading ON CONFLICT as a join constraint of the SELECT.
    return _MARK.format(source=f"SELECT * FROM ({source}) WHERE true")


M003_STATEMENTS: tuple[str, ...] = (
    """CREATE TABLE vault_dirty (
        object_id TEXT PRIMARY KEY,          -- an object id (the row may outlive the object)
        mark      INTEGER NOT NULL,          -- grows on every new mark of this object
        reason    TEXT NOT NULL              -- object | relation | evidence | neighbour | hand_edit
    )""",
    """CREATE TABLE projection_pages (
        path       TEXT PRIMARY KEY,         -- vault-relative, '/'-separated
        object_id  TEXT NOT NULL,
        page       INTEGER NOT NULL CHECK (page >= 2),
        sha256     TEXT NOT NULL,            -- what the projector last wrote there
        written_at TEXT NOT NULL
    )""",
    "CREATE INDEX projection_pages_object ON projection_pages (object_id, page)",
    "CREATE INDEX projection_path ON projection (path)",
    "CREATE INDEX projection_errors_object ON projection_errors (object_id)",
    """CREATE TABLE vault_reports (
        id            INTEGER PRIMARY KEY,
        path          TEXT NOT NULL,         -- vault-relative
        object_id     TEXT,                  -- the object (or core file) the file belongs to
        kind          TEXT NOT NULL CHECK (kind IN ('hand_edit', 'deleted', 'core_refused')),
        detail        TEXT NOT NULL,
        sha256        TEXT,                  -- of the bytes found on disk
        detected_at   TEXT NOT NULL,
        resolved_at   TEXT,
        conflict_path TEXT                   -- where the hand edit was kept, once restored
    )""",
    "CREATE INDEX vault_reports_open ON vault_reports (resolved_at, path)",
    f"""CREATE TRIGGER vault_dirty_object_insert AFTER INSERT ON objects
    BEGIN {_mark("NEW.id", "object")}; END""",
    f"""CREATE TRIGGER vault_dirty_object_update AFTER UPDATE ON objects
    BEGIN {_mark("NEW.id", "object")}; END""",
    f"""CREATE TRIGGER vault_dirty_object_renamed AFTER UPDATE ON objects
    WHEN OLD.name IS NOT NEW.name OR OLD.type IS NOT NEW.type OR OLD.status IS NOT NEW.status
      OR OLD.redirect_to IS NOT NEW.redirect_to
    BEGIN {_mark_neighbours("NEW.id", "neighbour")}; END""",
    f"""CREATE TRIGGER vault_dirty_object_delete AFTER DELETE ON objects
    BEGIN {_mark("OLD.id", "object")}; END""",
    f"""CREATE TRIGGER vault_dirty_relation_insert AFTER INSERT ON relations
    BEGIN {_mark("NEW.src_id", "relation")}; {_mark("NEW.dst_id", "relation")}; END""",
    f"""CREATE TRIGGER vault_dirty_relation_update AFTER UPDATE ON relations
    BEGIN {_mark("OLD.src_id", "relation")}; {_mark("OLD.dst_id", "relation")};
          {_mark("NEW.src_id", "relation")}; {_mark("NEW.dst_id", "relation")}; END""",
    f"""CREATE TRIGGER vault_dirty_relation_delete AFTER DELETE ON relations
    BEGIN {_mark("OLD.src_id", "relation")}; {_mark("OLD.dst_id", "relation")}; END""",
    f"""CREATE TRIGGER vault_dirty_evidence_insert AFTER INSERT ON evidence
    BEGIN {_mark("NEW.object_id", "evidence")}; END""",
    f"""CREATE TRIGGER vault_dirty_evidence_update AFTER UPDATE ON evidence
    BEGIN {_mark("OLD.object_id", "evidence")}; {_mark("NEW.object_id", "evidence")}; END""",
    f"""CREATE TRIGGER vault_dirty_evidence_delete AFTER DELETE ON evidence
    BEGIN {_mark("OLD.object_id", "evidence")}; END""",
)


def m003_vault(conn: sqlite3.Connection) -> None:
    """Dirty marks (kept by triggers), continuation pages and watcher reports for the vault."""
    for statement in M003_STATEMENTS:
        conn.execute(statement)


def m012_projection_intents(conn: sqlite3.Connection) -> None:
    """Write intents: what the projector is about to put at a path, until it is recorded."""
    conn.execute(
        """CREATE TABLE projection_intents (
            path       TEXT NOT NULL,          -- vault-relative, '/'-separated
            object_id  TEXT NOT NULL,          -- its owner (object id, core file, directory)
            sha256     TEXT NOT NULL,          -- of the bytes about to be renamed into place
            created_at TEXT NOT NULL,
            PRIMARY KEY (path, sha256)         -- a run killed twice leaves two: both its own
        )"""
    )
    conn.execute("CREATE INDEX projection_intents_object ON projection_intents (object_id)")


# Objects the projector still has to render: marked dirty, never projected, projected at
# another version, or whose last rendering failed (a run that failed for an owner with no mark,
# e.g. a --rebuild while a type folder was a symlink, must be retried once the folder is fixed,
# not wait for the next --rebuild). Deleted objects with a file and a mark are counted too
# (they get a notice).
PENDING_SQL = """
    SELECT o.id FROM objects o
      LEFT JOIN projection p ON p.object_id = o.id
      LEFT JOIN vault_dirty d ON d.object_id = o.id
     WHERE d.object_id IS NOT NULL OR p.object_id IS NULL OR p.version != o.version
        OR EXISTS (SELECT 1 FROM projection_errors e WHERE e.object_id = o.id)
    UNION ALL
    SELECT d.object_id FROM vault_dirty d
      JOIN projection p ON p.object_id = d.object_id
     WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = d.object_id)
"""


def vault_status(conn: sqlite3.Connection, recent: int = 20) -> dict[str, Any]:
    """The vault's part of `memvault status`: backlog, failures, hand edits, watcher heartbeat.

    Reads only; cheap enough for every status call (one scan of objects for the backlog).
    """
    pending = conn.execute(f"SELECT COUNT(*) FROM ({PENDING_SQL})").fetchone()[0]
    files = conn.execute(
        "SELECT (SELECT COUNT(*) FROM projection) + (SELECT COUNT(*) FROM projection_pages)"
    ).fetchone()[0]
    errors = [
        dict(r) for r in conn.execute(
            "SELECT object_id, path, error, created_at FROM projection_errors"
            " ORDER BY id DESC LIMIT ?", (recent,),
        )
    ]
    error_total = conn.execute("SELECT COUNT(*) FROM projection_errors").fetchone()[0]
    open_reports = [
        dict(r) for r in conn.execute(
            "SELECT path, object_id, kind, detail, detected_at FROM vault_reports"
            " WHERE resolved_at IS NULL ORDER BY detected_at, id LIMIT ?", (recent,),
        )
    ]
    conflicts = [
        dict(r) for r in conn.execute(
            "SELECT path, object_id, conflict_path, resolved_at FROM vault_reports"
            " WHERE conflict_path IS NOT NULL ORDER BY id DESC LIMIT ?", (recent,),
        )
    ]
    state = dict(conn.execute(
        "SELECT key, value FROM state WHERE key IN ('vault.last_run', 'vault.watcher_heartbeat')"
    ).fetchall())
    heartbeat = state.get("vault.watcher_heartbeat")
    age = None
    if heartbeat:
        row = conn.execute(
            "SELECT CAST(round((julianday('now') - julianday(?)) * 86400) AS INTEGER)",
            (heartbeat,),
        ).fetchone()
        age = row[0]
    return {
        "pending_objects": pending,
        "files": files,
        "errors": errors,
        "error_total": error_total,
        "hand_edits": open_reports,
        "conflicts": conflicts,
        "last_run": state.get("vault.last_run"),
        "watcher_heartbeat": heartbeat,
        "watcher_heartbeat_age_s": age,
    }


def forget_in_vault_tables(conn: sqlite3.Connection, forgetting: Forgetting) -> None:
    """Replace the forgotten text in the vault's bookkeeping (recorded projection errors and
    watcher reports, which may quote a file); inside the caller's write transaction."""
    forget_in_rows(conn, forgetting, "projection_errors", ("path", "error"), key="id")
    forget_in_rows(conn, forgetting, "vault_reports", ("path", "detail", "conflict_path"),
                   key="id")


def mark_citers_dirty(conn: sqlite3.Connection, event_ids: list[int]) -> int:
    """Mark every projected object citing one of `event_ids` for re-rendering (its files quote
    the event); inside the caller's write transaction. Returns how many objects were marked.
    An object with no file yet needs no mark: its first rendering reads the text as it is."""
    source = ("SELECT DISTINCT v.object_id, 1, 'evidence' FROM evidence v"
              " JOIN projection p ON p.object_id = v.object_id"
              " WHERE v.event_id IN (SELECT value FROM json_each(?))")
    cur = conn.execute(_MARK.format(source=source), (json.dumps(event_ids),))
    return cur.rowcount
