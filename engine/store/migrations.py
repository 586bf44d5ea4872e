"""The one ordered registry of schema migrations, and the runner that applies them.

Each feature keeps its own migrations beside its tables (`timeline/schema.py`,
`objects/schema.py`, `jobs/schema.py`, `recall/schema.py`, `vault/schema.py`,
`home/schema.py`); this module lists them in the order homes apply them, append-only, each in
one transaction with its record in `_migrations`. The schema itself keeps invariants no code
path can break (events are immutable, relation labels are short, text fields stay within
docs/spec.md's hard limits); each feature's schema module says which.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ..base.errors import StoreError
from ..home import schema as home_schema
from ..jobs import schema as jobs_schema
from ..objects import schema as objects_schema
from ..recall import schema as recall_schema
from ..timeline import schema as timeline_schema
from ..vault import schema as vault_schema
from .script import run_script

# The state table is the store's own (store/connection.py writes it).
M001_STATE = """
        CREATE TABLE state (
            key   TEXT PRIMARY KEY,                    -- graph_revision, scheduler checks, busy
            value TEXT NOT NULL
        );
        INSERT INTO state (key, value) VALUES ('graph_revision', '0');
"""


def m001_initial(conn: sqlite3.Connection) -> None:
    """The first schema, every feature's tables at once: events, the hot timeline and the
    archive queue; objects, relations, evidence and core files; jobs, batches, receipts, the
    lease and the ledger; the vault's projection; the state table."""
    run_script(conn, "\n".join((timeline_schema.M001_TABLES, objects_schema.M001_TABLES,
                                 jobs_schema.M001_TABLES, vault_schema.M001_TABLES, M001_STATE)))


# Every migration of every feature, in the one order homes apply them: append-only, and each
# keeps the name a home records it by in `_migrations` (so none runs twice).
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_initial,
    recall_schema.m002_recall_index,
    vault_schema.m003_vault,
    objects_schema.m004_object_names,
    timeline_schema.m005_fragment_index,
    jobs_schema.m006_batch_lookups,
    timeline_schema.m007_event_keys,
    objects_schema.m008_version_origin,
    home_schema.m009_forget_audit,
    recall_schema.m010_recall_date_mentions,
    jobs_schema.m011_job_provider,
    vault_schema.m012_projection_intents,
    recall_schema.m013_recall_objects_vocab,
    recall_schema.m014_recall_secret_marks,
    recall_schema.m015_recall_more_date_forms,
    objects_schema.m016_correction_create,
    recall_schema.m017_recall_fold_every_script,
    objects_schema.m018_object_state,
    timeline_schema.m019_spaces,
    objects_schema.m020_object_spaces,
    timeline_schema.m021_event_moves,
    timeline_schema.m022_event_keys_per_space,
]


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
