"""The objects' schema: objects, their versions, relations, evidence, core files, the name
index and the corrections a person made.

`M001_TABLES` is this feature's part of the first schema (m001_initial, run by
home/migrations.py with every feature's part); the later migrations follow, each under the
name a home records it by. The schema keeps relation labels short (except rows marked legacy)
and summary, body, progress and reason within docs/spec.md's hard limits.
"""

from __future__ import annotations

import sqlite3

from ..store.script import run_script, sql_in
from .states import state_from_body

# The value lists m001's CHECK constraints were written with. A migration's text is history: it
# does not follow the domain's live lists (objects.ids.OBJECT_TYPES and RELATION_LABELS,
# objects.corefiles.CORE_FILES; a new value needs a migration of its own), and
# tests/test_migrations.py checks that the two still agree.
M001_OBJECT_TYPES = ("person", "task", "todo", "schedule", "knowledge", "project",
                     "credential")
M001_RELATION_LABELS = (
    "member_of", "related_to", "assigned_to", "depends_on", "about", "supersedes", "knows",
)
M001_CORE_FILES = ("AGENTS.md", "SOUL.md", "USER.md")

M001_TABLES = f"""
        CREATE TABLE objects (
            id          TEXT PRIMARY KEY,
            type        TEXT NOT NULL CHECK (type IN {sql_in(M001_OBJECT_TYPES)}),
            name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
            aliases     TEXT NOT NULL DEFAULT '[]',     -- JSON list of strings
            summary     TEXT NOT NULL DEFAULT '' CHECK (length(summary) <= 400),
            body        TEXT NOT NULL DEFAULT '' CHECK (length(body) <= 16000),
            cues        TEXT NOT NULL DEFAULT '[]',     -- JSON list of strings
            status      TEXT NOT NULL DEFAULT 'active'
                        CHECK (status IN ('candidate', 'active', 'archived')),
            version     INTEGER NOT NULL DEFAULT 1,
            redirect_to TEXT REFERENCES objects (id),   -- set when merged into a survivor
            created_at  TEXT NOT NULL,
            updated_at  TEXT NOT NULL,
            CHECK (substr(id, 1, length(type) + 1) = type || ':' AND length(id) > length(type) + 1)
        );
        CREATE INDEX objects_type_name ON objects (type, name);
        CREATE INDEX objects_updated ON objects (updated_at);

        CREATE TABLE object_versions (
            object_id   TEXT NOT NULL REFERENCES objects (id),
            version     INTEGER NOT NULL,
            name        TEXT NOT NULL,
            aliases     TEXT NOT NULL,
            summary     TEXT NOT NULL,
            body        TEXT NOT NULL,
            cues        TEXT NOT NULL,
            status      TEXT NOT NULL,
            redirect_to TEXT,
            changed_at  TEXT NOT NULL,
            batch_id    INTEGER REFERENCES batches (id),
            PRIMARY KEY (object_id, version)
        );

        CREATE TABLE relations (
            id         INTEGER PRIMARY KEY,
            src_id     TEXT NOT NULL REFERENCES objects (id),
            label      TEXT NOT NULL,
            dst_id     TEXT NOT NULL REFERENCES objects (id),
            legacy     INTEGER NOT NULL DEFAULT 0,     -- old long-sentence labels stay readable
            archived   INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            batch_id   INTEGER REFERENCES batches (id),
            UNIQUE (src_id, label, dst_id),
            CHECK (legacy = 1 OR label IN {sql_in(M001_RELATION_LABELS)})
        );
        CREATE INDEX relations_dst ON relations (dst_id);

        CREATE TABLE evidence (
            id         INTEGER PRIMARY KEY,
            object_id  TEXT    NOT NULL REFERENCES objects (id),
            event_id   INTEGER NOT NULL REFERENCES events (id),
            start_char INTEGER NOT NULL,
            end_char   INTEGER NOT NULL,
            created_at TEXT    NOT NULL,
            batch_id   INTEGER REFERENCES batches (id),
            UNIQUE (object_id, event_id, start_char, end_char),
            CHECK (0 <= start_char AND start_char < end_char)
        );
        CREATE INDEX evidence_event ON evidence (event_id);

        CREATE TABLE core_files (
            name       TEXT    NOT NULL CHECK (name IN {sql_in(M001_CORE_FILES)}),
            version    INTEGER NOT NULL,
            content    TEXT    NOT NULL,
            sha256     TEXT    NOT NULL,
            origin     TEXT    NOT NULL,               -- api | hand | organize | import
            created_at TEXT    NOT NULL,
            batch_id   INTEGER REFERENCES batches (id),
            PRIMARY KEY (name, version)
        );
"""


_NAME_KEY = (
    "CASE WHEN unicode({x}) >= 11904 THEN substr({x}, 1, 2)"
    " ELSE lower(substr({x}, 1, instr({x} || ' ', ' ') - 1)) END"
)


def m004_object_names(conn: sqlite3.Connection) -> None:
    """A name index: the first word (or first two CJK chars) of every object's name and alias,
    kept by triggers, so a claim finds the objects a page may name with indexed lookups and
    checks only those, instead of scanning every object."""
    name, alias = _NAME_KEY.format(x="NEW.name"), _NAME_KEY.format(x="value")
    run_script(
        conn,
        f"""
        CREATE TABLE object_names (
            term      TEXT NOT NULL,
            object_id TEXT NOT NULL,
            PRIMARY KEY (term, object_id)
        ) WITHOUT ROWID;
        CREATE INDEX object_names_object ON object_names (object_id);
        CREATE TRIGGER object_names_insert AFTER INSERT ON objects BEGIN
            INSERT OR IGNORE INTO object_names SELECT {name}, NEW.id WHERE length(NEW.name) >= 2;
            INSERT OR IGNORE INTO object_names SELECT {alias}, NEW.id
                FROM json_each(NEW.aliases) WHERE length(value) >= 2;
        END;
        CREATE TRIGGER object_names_update AFTER UPDATE OF name, aliases ON objects BEGIN
            DELETE FROM object_names WHERE object_id = OLD.id;
            INSERT OR IGNORE INTO object_names SELECT {name}, NEW.id WHERE length(NEW.name) >= 2;
            INSERT OR IGNORE INTO object_names SELECT {alias}, NEW.id
                FROM json_each(NEW.aliases) WHERE length(value) >= 2;
        END;
        INSERT OR IGNORE INTO object_names SELECT {_NAME_KEY.format(x="name")}, id FROM objects
            WHERE length(name) >= 2;
        INSERT OR IGNORE INTO object_names SELECT {_NAME_KEY.format(x="a.value")}, o.id
            FROM objects o, json_each(o.aliases) a WHERE length(a.value) >= 2;
        """,
    )


VERSION_ORIGINS = ("model", "person")
CORRECTION_KINDS = ("edit", "merge", "archive", "accept_edit")


def m008_version_origin(conn: sqlite3.Connection) -> None:
    """Who made each object version: `model` (organize, deep, and every version before this
    migration) or `person` (a correction from the command line). A person's corrections keep
    their receipts in `corrections`, as a batch's commit keeps its in `receipts`: the same
    token sent again returns the original receipt."""
    run_script(
        conn,
        f"""
        ALTER TABLE object_versions ADD COLUMN origin TEXT NOT NULL DEFAULT 'model'
            CHECK (origin IN {sql_in(VERSION_ORIGINS)});
        CREATE TABLE corrections (
            id         INTEGER PRIMARY KEY,
            token      TEXT NOT NULL UNIQUE,
            kind       TEXT NOT NULL CHECK (kind IN {sql_in(CORRECTION_KINDS)}),
            objects    TEXT NOT NULL,                  -- JSON list of the ids it named
            revision   INTEGER NOT NULL,               -- the graph revision after it
            receipt    TEXT NOT NULL,                  -- JSON returned again on replay
            created_at TEXT NOT NULL
        );
        """,
    )


# A person may also create an object by hand (`memvault add`).
M016_CORRECTION_KINDS = (*CORRECTION_KINDS, "create")


def m016_correction_create(conn: sqlite3.Connection) -> None:
    """A correction may create an object (`memvault add`): the corrections table is rebuilt
    with `create` among its kinds (SQLite cannot change a CHECK in place); every row is kept."""
    run_script(
        conn,
        f"""
        CREATE TABLE corrections_m016 (
            id         INTEGER PRIMARY KEY,
            token      TEXT NOT NULL UNIQUE,
            kind       TEXT NOT NULL CHECK (kind IN {sql_in(M016_CORRECTION_KINDS)}),
            objects    TEXT NOT NULL,                  -- JSON list of the ids it named
            revision   INTEGER NOT NULL,               -- the graph revision after it
            receipt    TEXT NOT NULL,                  -- JSON returned again on replay
            created_at TEXT NOT NULL
        );
        INSERT INTO corrections_m016 (id, token, kind, objects, revision, receipt, created_at)
            SELECT id, token, kind, objects, revision, receipt, created_at FROM corrections;
        DROP TABLE corrections;
        ALTER TABLE corrections_m016 RENAME TO corrections;
        """,
    )


# The states m018 allows, frozen as it wrote them (objects.states holds the live lists; a new
# value needs a migration of its own, and tests/test_migrations.py checks the two agree).
M018_STATES = ("scheduled", "moved", "cancelled", "done", "open", "dropped")


def m018_object_state(conn: sqlite3.Connection) -> None:
    """An object's state as a field: `objects.state` (and each version's), NULL for a type
    without states. Which state fits which type is the writer's rule (objects.states); the
    column only refuses a word that is no state at all. Every schedule and todo written before
    gets the state its body's state line says (`- state: cancelled`), its versions too."""
    run_script(
        conn,
        f"""
        ALTER TABLE objects ADD COLUMN state TEXT
            CHECK (state IS NULL OR state IN {sql_in(M018_STATES)});
        ALTER TABLE object_versions ADD COLUMN state TEXT;
        """,
    )
    for table, key in (("objects", "id"), ("object_versions", "object_id")):
        rows = conn.execute(
            f"SELECT rowid, {key}, body FROM {table}"
            f" WHERE substr({key}, 1, instr({key}, ':') - 1) IN ('schedule', 'todo')").fetchall()
        conn.executemany(
            f"UPDATE {table} SET state = ? WHERE rowid = ?",
            [(state_from_body(row[1].partition(":")[0], row[2]), row[0]) for row in rows])


def m020_object_spaces(conn: sqlite3.Connection) -> None:
    """The space each object belongs to (that of the event that created it; `memvault space
    move` re-places it): every existing object, `project:daily` among them, is `shared`.
    objects_id_space answers "whose space is object X" without reading the row (the column
    comes after a body of up to 16,000 chars): recall checks it for every posting."""
    run_script(
        conn,
        """
        ALTER TABLE objects ADD COLUMN space TEXT NOT NULL DEFAULT 'shared'
            CHECK (length(space) BETWEEN 1 AND 32);
        CREATE INDEX objects_space ON objects (space, updated_at);
        CREATE INDEX objects_id_space ON objects (id, space);
        """,
    )
