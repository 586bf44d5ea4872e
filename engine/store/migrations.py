"""Numbered schema migrations, append-only, each applied in one transaction with its record.

Invariants the schema itself keeps (so no code path can break them):
- an event row is never updated or deleted (triggers refuse it);
- relation labels are the short ones, except rows marked legacy;
- summary/body/progress/reason lengths stay within docs/spec.md's hard limits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .ledger import m009_forget_audit
from .recall_tables import (
    m002_recall_index,
    m010_recall_date_mentions,
    m013_recall_objects_vocab,
    m014_recall_secret_marks,
)
from .script import run_script
from .vault_tables import m003_vault, m012_projection_intents

# The value lists m001's CHECK constraints were written with. The domain's own lists live with
# the domain (objects.ids.OBJECT_TYPES and RELATION_LABELS, objects.corefiles.CORE_FILES,
# timeline.queue.EVENT_STATES), which the store may not import; these stay as m001 wrote them
# (a new value needs a migration anyway), and tests/test_migrations.py checks the two agree.
_M001_OBJECT_TYPES = ("person", "task", "todo", "schedule", "knowledge", "project",
                      "credential")
_M001_RELATION_LABELS = (
    "member_of", "related_to", "assigned_to", "depends_on", "about", "supersedes", "knows",
)
_M001_CORE_FILES = ("AGENTS.md", "SOUL.md", "USER.md")
_M001_EVENT_STATES = ("pending", "continue", "linked", "archive_only", "blocked")


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def m001_initial(conn: sqlite3.Connection) -> None:
    """Events, hot timeline, archive queue, objects, relations, evidence, core files, jobs."""
    run_script(
        conn,
        f"""
        CREATE TABLE events (
            id          INTEGER PRIMARY KEY,
            occurred_at TEXT    NOT NULL,           -- ISO 8601 with offset, as given
            occurred_us INTEGER NOT NULL,           -- UTC microseconds, for ordering
            ingested_at TEXT    NOT NULL,
            source      TEXT    NOT NULL,
            kind        TEXT    NOT NULL,
            meta        TEXT,                       -- caller's JSON object, verbatim
            text        TEXT    NOT NULL CHECK (length(text) BETWEEN 1 AND 32000),
            chars       INTEGER NOT NULL,
            est_tokens  INTEGER NOT NULL
        );
        CREATE INDEX events_time ON events (occurred_us, id);
        CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'events are immutable: raw text is never rewritten'); END;
        CREATE TRIGGER events_no_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'events are immutable: raw text is never deleted'); END;

        CREATE TABLE jobs (
            id            INTEGER PRIMARY KEY,
            mode          TEXT NOT NULL CHECK (mode IN ('compact', 'organize', 'deep')),
            origin        TEXT NOT NULL CHECK (origin IN ('threshold', 'explicit', 'hourly',
                                                          'nightly')),
            scope         TEXT,
            params        TEXT NOT NULL DEFAULT '{{}}',
            state         TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'partial',
                                                         'failed', 'cancelled')),
            request_token TEXT UNIQUE,
            local_date    TEXT,                      -- nightly: one per local date
            created_at    TEXT NOT NULL,
            started_at    TEXT,
            last_claim_at TEXT,
            finished_at   TEXT,
            error         TEXT
        );
        CREATE INDEX jobs_state ON jobs (state, last_claim_at);

        CREATE TABLE batches (
            id             INTEGER PRIMARY KEY,
            job_id         INTEGER NOT NULL REFERENCES jobs (id),
            state          TEXT NOT NULL CHECK (state IN ('claimed', 'committed', 'failed',
                                                          'terminal')),
            claim          TEXT NOT NULL,            -- JSON: node ids / event page / object ids
            base_revision  INTEGER NOT NULL,
            failures       INTEGER NOT NULL DEFAULT 0,
            claimed_at     TEXT NOT NULL,
            next_attempt_at TEXT,
            committed_at   TEXT,
            error          TEXT
        );
        CREATE INDEX batches_job ON batches (job_id, state);

        CREATE TABLE hot_nodes (
            id             INTEGER PRIMARY KEY,
            kind           TEXT    NOT NULL CHECK (kind IN ('raw', 'head')),
            level          INTEGER NOT NULL,         -- 0 raw; a head is 1 + its highest child
            seq            INTEGER NOT NULL,         -- timeline order; a head takes its first
            event_id       INTEGER REFERENCES events (id),
            fragment_index INTEGER,
            fragment_count INTEGER,
            start_char     INTEGER,                  -- raw: a slice of the event, not a copy
            end_char       INTEGER,
            summary        TEXT,
            parent_id      INTEGER REFERENCES hot_nodes (id),
            active         INTEGER NOT NULL DEFAULT 1,
            chars          INTEGER NOT NULL,
            est_tokens     INTEGER NOT NULL,
            first_at       TEXT NOT NULL,
            last_at        TEXT NOT NULL,
            created_at     TEXT NOT NULL,
            batch_id       INTEGER REFERENCES batches (id),
            CHECK ((kind = 'raw' AND event_id IS NOT NULL AND summary IS NULL)
                OR (kind = 'head' AND event_id IS NULL AND summary IS NOT NULL))
        );
        CREATE INDEX hot_nodes_active ON hot_nodes (seq) WHERE active = 1;
        -- Partial: a fragment is born without a parent, so ingest pays nothing for this index.
        CREATE INDEX hot_nodes_parent ON hot_nodes (parent_id) WHERE parent_id IS NOT NULL;
        CREATE INDEX hot_nodes_event ON hot_nodes (event_id);

        CREATE TABLE archive_queue (
            event_id      INTEGER PRIMARY KEY REFERENCES events (id),
            state         TEXT NOT NULL CHECK (state IN {_in(_M001_EVENT_STATES)}),
            page_cursor   INTEGER NOT NULL DEFAULT 0,   -- chars of the event read so far
            progress      TEXT CHECK (progress IS NULL OR length(progress) <= 2000),
            reason        TEXT CHECK (reason IS NULL OR length(reason) <= 1000),
            enqueued_at   TEXT NOT NULL,
            updated_at    TEXT NOT NULL,
            enqueued_by   INTEGER REFERENCES batches (id),
            blocked_batch INTEGER REFERENCES batches (id),
            unblocked_by  TEXT                          -- request token that unblocked it
        );
        CREATE INDEX archive_queue_state ON archive_queue (state, enqueued_at);

        CREATE TABLE objects (
            id          TEXT PRIMARY KEY,
            type        TEXT NOT NULL CHECK (type IN {_in(_M001_OBJECT_TYPES)}),
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
            CHECK (legacy = 1 OR label IN {_in(_M001_RELATION_LABELS)})
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
            name       TEXT    NOT NULL CHECK (name IN {_in(_M001_CORE_FILES)}),
            version    INTEGER NOT NULL,
            content    TEXT    NOT NULL,
            sha256     TEXT    NOT NULL,
            origin     TEXT    NOT NULL,               -- api | hand | organize | import
            created_at TEXT    NOT NULL,
            batch_id   INTEGER REFERENCES batches (id),
            PRIMARY KEY (name, version)
        );

        CREATE TABLE deep_snapshot (
            job_id      INTEGER NOT NULL REFERENCES jobs (id),
            position    INTEGER NOT NULL,
            object_id   TEXT    NOT NULL,
            reviewed_at TEXT,
            batch_id    INTEGER REFERENCES batches (id),
            PRIMARY KEY (job_id, position)
        );

        CREATE TABLE leases (
            name        TEXT PRIMARY KEY,              -- 'worker': one valid lease at a time
            holder      TEXT NOT NULL,
            batch_id    INTEGER REFERENCES batches (id),
            acquired_at TEXT NOT NULL,
            expires_us  INTEGER NOT NULL
        );

        CREATE TABLE receipts (
            token      TEXT PRIMARY KEY,
            batch_id   INTEGER NOT NULL REFERENCES batches (id),
            job_id     INTEGER NOT NULL REFERENCES jobs (id),
            revision   INTEGER NOT NULL,
            receipt    TEXT NOT NULL,                  -- JSON returned again on replay
            created_at TEXT NOT NULL
        );

        CREATE TABLE model_calls (
            id            INTEGER PRIMARY KEY,
            job_id        INTEGER REFERENCES jobs (id),
            batch_id      INTEGER REFERENCES batches (id),
            mode          TEXT,
            provider      TEXT NOT NULL,
            model         TEXT NOT NULL,
            input_tokens  INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            estimated     INTEGER NOT NULL DEFAULT 0,  -- 1 when the provider reported none
            latency_ms    INTEGER NOT NULL,
            outcome       TEXT NOT NULL,
            created_at    TEXT NOT NULL
        );
        CREATE INDEX model_calls_time ON model_calls (created_at);

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

        CREATE TABLE state (
            key   TEXT PRIMARY KEY,                    -- graph_revision, scheduler checks, busy
            value TEXT NOT NULL
        );
        INSERT INTO state (key, value) VALUES ('graph_revision', '0');
        """
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [m001_initial]


def apply_migrations(conn: sqlite3.Connection) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction; return their names."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    names = [m.__name__ for m in MIGRATIONS]
    if len(set(names)) != len(names):
        raise RuntimeError("duplicate migration names")
    unknown = done - set(names)
    if unknown:
        raise newer_version_error(sorted(unknown))
    applied = []
    for migration in MIGRATIONS:
        if migration.__name__ in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another connection may have applied it while this one waited for the write lock.
            if conn.execute(
                "SELECT 1 FROM _migrations WHERE name = ?", (migration.__name__,)
            ).fetchone():
                conn.execute("COMMIT")
                continue
            migration(conn)
            conn.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, datetime('now'))",
                (migration.__name__,),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(migration.__name__)
    return applied


def newer_version_error(unknown: list[str]) -> Exception:
    """The refusal for a database that a newer memvault has migrated further than this one."""
    from ..base.errors import StoreError

    return StoreError(
        f"database has migrations this memvault does not know ({', '.join(unknown)}): "
        "it was written by a newer version"
    )


def unknown_migrations(conn: sqlite3.Connection) -> list[str]:
    """Migrations the database records that this code does not know, sorted."""
    try:
        done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    except sqlite3.OperationalError:
        return []
    return sorted(done - {m.__name__ for m in MIGRATIONS})


def pending_migrations(conn: sqlite3.Connection) -> list[str]:
    """Names of migrations a read-only connection would still need."""
    try:
        done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    except sqlite3.OperationalError:
        done = set()
    return [m.__name__ for m in MIGRATIONS if m.__name__ not in done]


def m005_fragment_index(conn: sqlite3.Connection) -> None:
    """Index fragments by event only for events of several fragments.

    The one question asked by event (does this event still have a hot fragment elsewhere?) only
    arises for those, and most events are one fragment: ingest no longer pays for their entry.
    """
    run_script(
        conn,
        """
        DROP INDEX hot_nodes_event;
        CREATE INDEX hot_nodes_event_multi ON hot_nodes (event_id) WHERE fragment_count > 1;
        """,
    )


# Tables only a database of the original design has (engine/legacy/upgrade.py reads them).
LEGACY_TABLES = ("timeline", "hot_timeline", "memory_objects")
LEGACY_DONE_KEY = "legacy_migration"


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the database's tables."""
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def unmigrated_legacy(conn: sqlite3.Connection) -> bool:
    """True for a database of the original design that `memvault migrate` has not converted."""
    tables = table_names(conn)
    if not set(LEGACY_TABLES) <= tables:
        return False
    if "state" not in tables:
        return True
    return conn.execute(
        "SELECT 1 FROM state WHERE key = ?", (LEGACY_DONE_KEY,)).fetchone() is None


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


# Order is application order and never changes.
def m006_batch_lookups(conn: sqlite3.Connection) -> None:
    """Indexes for the questions a claim or a commit asks of batches, so none reads them all:
    a job's latest claim, the claims open now, and the batches of one event."""
    run_script(
        conn,
        """
        CREATE INDEX batches_job_latest ON batches (job_id, id);
        CREATE INDEX batches_open ON batches (job_id) WHERE state = 'claimed';
        CREATE INDEX batches_event ON batches (json_extract(claim, '$.event_id'));
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
            CHECK (origin IN {_in(VERSION_ORIGINS)});
        CREATE TABLE corrections (
            id         INTEGER PRIMARY KEY,
            token      TEXT NOT NULL UNIQUE,
            kind       TEXT NOT NULL CHECK (kind IN {_in(CORRECTION_KINDS)}),
            objects    TEXT NOT NULL,                  -- JSON list of the ids it named
            revision   INTEGER NOT NULL,               -- the graph revision after it
            receipt    TEXT NOT NULL,                  -- JSON returned again on replay
            created_at TEXT NOT NULL
        );
        """,
    )


def m007_event_keys(conn: sqlite3.Connection) -> None:
    """The client's message id on an event (`key`, nullable), unique where given: the same
    message ingested twice is stored once (memvault.timeline.keys decides what a repeat means).

    It lives here, beside the events table m001 made, because the store never imports the
    timeline package; existing events keep no key."""
    run_script(
        conn,
        """
        ALTER TABLE events ADD COLUMN key TEXT CHECK (key IS NULL OR length(key) BETWEEN 1 AND 200);
        CREATE UNIQUE INDEX events_key ON events (key) WHERE key IS NOT NULL;
        """,
    )


def m011_job_provider(conn: sqlite3.Connection) -> None:
    """Jobs record the provider spec they were queued with (JSON, engine/models/spec.py; NULL:
    queued by an older memvault, run on the worker's default provider). Here, not in
    store/jobs.py (the table's owner), because jobs.py imports connection.py, which imports
    this module: the function there would close an import circle."""
    conn.execute("ALTER TABLE jobs ADD COLUMN provider TEXT")


MIGRATIONS.extend([m002_recall_index, m003_vault, m004_object_names, m005_fragment_index,
                   m006_batch_lookups, m007_event_keys, m008_version_origin,
                   m009_forget_audit, m010_recall_date_mentions, m011_job_provider,
                   m012_projection_intents, m013_recall_objects_vocab,
                   m014_recall_secret_marks])
