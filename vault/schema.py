"""The vault's schema: its part of the first schema (`projection`, `projection_errors`), the
later migrations m003_vault and m012_projection_intents, and the read-only status query.

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
vault/bookkeeping.py is the tables' one writer, and reads their status.
"""

from __future__ import annotations

import sqlite3

M001_TABLES = """
        CREATE TABLE projection (
            object_id   TEXT PRIMARY KEY,              -- or a core file name
            path        TEXT NOT NULL,
            sha256      TEXT NOT NULL,                 -- what the projector last wrote
            version     INTEGER NOT NULL,
            written_at  TEXT NOT NULL
        );
        CREATE TABLE projection_errors (
            id         INTEGER PRIMARY KEY,
            object_id  TEXT,
            path       TEXT,
            error      TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
"""

DIRECTORY_KEY = "objects/README.md"  # the directory's row in `projection`

MARK_DIRTY = (
    "INSERT INTO vault_dirty (object_id, mark, reason) {source} "
    "ON CONFLICT (object_id) DO UPDATE SET mark = mark + 1, reason = excluded.reason"
)


def _mark(value: str, reason: str) -> str:
    return MARK_DIRTY.format(source=f"VALUES ({value}, 1, '{reason}')")


def _mark_neighbours(object_ref: str, reason: str) -> str:
    source = (
        f"SELECT dst_id, 1, '{reason}' FROM relations WHERE src_id = {object_ref} "
        f"UNION SELECT src_id, 1, '{reason}' FROM relations WHERE dst_id = {object_ref}"
    )
    # "WHERE true" keeps SQLite from reading ON CONFLICT as a join constraint of the SELECT.
    return MARK_DIRTY.format(source=f"SELECT * FROM ({source}) WHERE true")


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
