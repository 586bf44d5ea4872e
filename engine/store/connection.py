"""The SQLite connection: WAL, foreign keys, migrations at open, explicit write transactions.

Connections run in autocommit mode; every multi-row change goes through `write(conn)`, one
`with conn:` block that starts with BEGIN IMMEDIATE, so the check-then-write sequences of the
engine (leases, revisions, receipts) hold the write lock from their first read.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..base.errors import StoreError
from .migrations import (
    apply_migrations,
    newer_version_error,
    pending_migrations,
    unknown_migrations,
    unmigrated_legacy,
)

BUSY_TIMEOUT_MS = 30_000


def open_db(path: str | Path, readonly: bool = False) -> sqlite3.Connection:
    """Open (creating and migrating unless `readonly`) the memory database at `path`."""
    db_path = Path(path)
    conn = connect(db_path, readonly)
    try:
        return _prepare(conn, db_path, readonly)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if type(exc) is not sqlite3.DatabaseError:  # locked, constraint, ...: not a bad file
            raise
        raise StoreError(f"{db_path}: not a readable SQLite database ({exc})") from None


def connect(db_path: Path, readonly: bool = False) -> sqlite3.Connection:
    """A configured connection (autocommit, Row, busy timeout, foreign keys); no migrations."""
    if readonly:
        if not db_path.exists():
            raise StoreError(
                f"no memory at {db_path.parent} (no {db_path.name}); "
                "run `memvault ingest` or `memvault demo` first"
            )
        conn = sqlite3.connect(
            f"{db_path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
            check_same_thread=False,
        )
    else:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _prepare(conn: sqlite3.Connection, db_path: Path, readonly: bool) -> sqlite3.Connection:
    if unmigrated_legacy(conn):
        conn.close()
        raise StoreError(
            f"{db_path} is a database of the original (pre-memvault) design; back it up, then "
            "run `memvault migrate` to upgrade it (nothing is deleted)"
        )
    if readonly:
        unknown = unknown_migrations(conn)
        if unknown:  # reading a newer layout could misreport it: refuse as writers do
            conn.close()
            raise newer_version_error(unknown)
        missing = pending_migrations(conn)
        if missing:
            conn.close()
            raise StoreError(
                f"{db_path} needs migrations {', '.join(missing)}; "
                "run any writing command (e.g. `memvault migrate`) first"
            )
        return conn
    use_wal(conn)
    # NORMAL in WAL mode: a commit survives a process crash; only power loss may drop the last one.
    conn.execute("PRAGMA synchronous = NORMAL")
    apply_migrations(conn)
    return conn


def use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL (it stays so). Connections opening a new file at once race for
    the exclusive lock this takes, and SQLite answers the loser 'database is locked' without
    calling the busy handler: retry within the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


@contextmanager
def write(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction: BEGIN IMMEDIATE, commit on success, roll back on any error."""
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        yield conn


def bump_revision(conn: sqlite3.Connection) -> int:
    """Advance the graph revision inside the caller's transaction; return the new value."""
    row = conn.execute(
        "UPDATE state SET value = CAST(value AS INTEGER) + 1 WHERE key = 'graph_revision' "
        "RETURNING CAST(value AS INTEGER)"
    ).fetchone()
    return int(row[0])


def graph_revision(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM state WHERE key = 'graph_revision'").fetchone()
    return int(row[0]) if row else 0


def get_state(conn: sqlite3.Connection, key: str, default: str | None = None) -> str | None:
    row = conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def set_state(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
