"""The runner of schema migrations: a registry applied in order, each in one transaction with
its record in `_migrations`.

Each feature keeps its own migrations beside its tables (`timeline/schema.py`,
`objects/schema.py`, ...); the one ordered registry that lists them is assembled above the
features, in `home/migrations.py`, so no feature imports another above it. The functions here
take the registry as a value. The schema itself keeps invariants no code path can break
(events are immutable, relation labels are short, text fields stay within docs/spec.md's hard
limits); each feature's schema module says which.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from ..base.errors import StoreError

Migration = Callable[[sqlite3.Connection], None]  # named by its function: m001_initial, ...

# The state table is the store's own (store/connection.py writes it); home/migrations.py's
# m001 creates it with every feature's first tables.
M001_STATE = """
        CREATE TABLE state (
            key   TEXT PRIMARY KEY,                    -- graph_revision, scheduler checks, busy
            value TEXT NOT NULL
        );
        INSERT INTO state (key, value) VALUES ('graph_revision', '0');
"""


def apply_migrations(conn: sqlite3.Connection, registry: Sequence[Migration]) -> list[str]:
    """Apply every migration of `registry` not yet recorded, each in its own transaction;
    return their names."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    names = [m.__name__ for m in registry]
    if len(set(names)) != len(names):
        raise RuntimeError("duplicate migration names")
    unknown = done - set(names)
    if unknown:
        raise newer_version_error(sorted(unknown))
    applied = []
    for migration in registry:
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


def unknown_migrations(conn: sqlite3.Connection, registry: Sequence[Migration]) -> list[str]:
    """Migrations the database records that `registry` does not know, sorted."""
    try:
        done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    except sqlite3.OperationalError:
        return []
    return sorted(done - {m.__name__ for m in registry})


def pending_migrations(conn: sqlite3.Connection, registry: Sequence[Migration]) -> list[str]:
    """Names of the migrations of `registry` a read-only connection would still need."""
    try:
        done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    except sqlite3.OperationalError:
        done = set()
    return [m.__name__ for m in registry if m.__name__ not in done]


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
