"""The SQLite connection: WAL, foreign keys, migrations at open, explicit write transactions.

Connections run in autocommit mode; every multi-row change goes through `write(conn)`, one
`with conn:` block that starts with BEGIN IMMEDIATE, so the check-then-write sequences of the
engine (leases, revisions, receipts) hold the write lock from their first read.

The file is created 0600 (SQLite gives its -wal and -shm the database file's permissions).
Reads work on a read-only filesystem or home: a `mode=ro` connection needs to create the -shm
file of a WAL database, and where the folder refuses that it falls back to `immutable=1` (no
locks, no change detection: right for files nothing can write). A writing open there fails
with a StoreError that says the home is read-only.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..base.config import FILE_MODE, make_private_dir
from ..base.errors import StoreError
from ..base.forgetting import Forgetting
from ..base.home_trust import file_kind
from .forget_rows import forget_in_rows
from .migrations import (
    Migration,
    apply_migrations,
    newer_version_error,
    pending_migrations,
    unknown_migrations,
    unmigrated_legacy,
)

BUSY_TIMEOUT_MS = 30_000


def open_db(path: str | Path, readonly: bool = False,
            busy_timeout_ms: int = BUSY_TIMEOUT_MS, *,
            migrations: Sequence[Migration] | None) -> sqlite3.Connection:
    """Open (creating and migrating unless `readonly`) the memory database at `path`, waiting
    at most `busy_timeout_ms` for a lock another connection holds (each statement).

    `migrations` is the registry to apply (or, read-only, to require): a home's is
    home/migrations.py's, which `open_home_db` passes. None opens the file as it is, for a
    second connection in a process that opened the home through it (the vault watcher)."""
    db_path = Path(path)
    refuse_unsafe_files(db_path)
    if not readonly and db_path.parent.is_dir():
        # SQLite opens a file it cannot write read-only without a word and fails at the first
        # write, after the caller has done its work: say so before anything starts.
        _raise_if_readonly_home(db_path, readonly, None)
    conn: sqlite3.Connection | None = None
    try:
        conn = connect(db_path, readonly, busy_timeout_ms)
        return _prepare(conn, db_path, readonly, migrations)
    except OSError as exc:
        _raise_if_readonly_home(db_path, readonly, exc)
        raise
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, sqlite3.OperationalError):
            _raise_if_readonly_home(db_path, readonly, exc)
        if type(exc) is not sqlite3.DatabaseError:  # locked, constraint, ...: not a bad file
            raise
        raise StoreError(f"{db_path}: not a readable SQLite database ({exc})") from None


def refuse_unsafe_files(db_path: Path) -> None:
    """StoreError naming the file when the database (or what its link names) is not a regular
    file, or its -wal or -shm is a symbolic link or not a regular file: SQLite would hang on a
    FIFO, read /dev/zero, follow the link, or say only "unable to open database file" or
    "disk I/O error". Changes nothing."""
    try:
        mode = os.stat(db_path).st_mode  # a linked database is allowed, if it is a file
    except OSError:
        mode = None  # absent (created next) or unreachable (the open says why)
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise StoreError(f"{db_path} is {file_kind(mode)}, not a regular file: SQLite cannot use "
                         "it as the database; move it away")
    for suffix, advice in (("-wal", "replace it with the file it points to if that is this "
                                    "memory's, else remove it (its unsaved writes are lost)"),
                           ("-shm", "remove it (SQLite makes a new one)")):
        part = db_path.with_name(db_path.name + suffix)
        try:
            mode = os.lstat(part).st_mode
        except OSError:  # absent (or unreachable: the open says why)
            continue
        if stat.S_ISLNK(mode):
            raise StoreError(f"{part} is a symbolic link: memvault does not let SQLite follow "
                             f"links in the home; {advice}")
        if not stat.S_ISREG(mode):
            raise StoreError(f"{part} is {file_kind(mode)}, not a regular file: SQLite cannot use "
                             "it; remove it")


def connect(db_path: Path, readonly: bool = False,
            busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """A configured connection (autocommit, Row, busy timeout, foreign keys); no migrations."""
    if readonly:
        if not db_path.exists():
            raise StoreError(
                f"no memory at {db_path.parent} (no {db_path.name}); "
                "run `memvault ingest` or `memvault demo` first"
            )
        conn = _connect_readonly(db_path)
    else:
        make_private_dir(db_path.parent)
        _create_private(db_path)
        conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _create_private(db_path: Path) -> None:
    """Create an empty database file 0600 before SQLite opens it (SQLite would create it with
    0644 less the umask, and copies the file's mode onto its -wal and -shm)."""
    if db_path.exists():  # checked first: on a read-only filesystem O_CREAT fails even then
        return
    try:
        fd = os.open(db_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:  # another process created it meanwhile
        return
    try:
        os.fchmod(fd, FILE_MODE)  # the umask may have narrowed it; never leave it wider
    finally:
        os.close(fd)


def _connect_readonly(db_path: Path) -> sqlite3.Connection:
    """A `mode=ro` connection; `immutable=1` when the folder cannot hold the -wal/-shm files."""
    uri = f"{db_path.resolve().as_uri()}?mode=ro"
    try:
        return _connect_probed(uri)
    except sqlite3.OperationalError as exc:
        reason = readonly_reason(db_path) if _is_open_refusal(exc) else None
        if reason is None:
            raise
    wal = db_path.with_name(db_path.name + "-wal")
    if wal.exists() and wal.stat().st_size:  # immutable=1 would silently skip these commits
        raise StoreError(
            f"{wal} holds the latest writes, and SQLite cannot read them here ({reason}): "
            "open the home once where it is writable (any command) to fold them in"
        )
    return sqlite3.connect(f"{uri}&immutable=1", uri=True, isolation_level=None,
                           check_same_thread=False)


def _connect_probed(uri: str) -> sqlite3.Connection:
    """Connect and read once: SQLite opens a WAL database's -shm file at the first read."""
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _is_open_refusal(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_CANTOPEN or SQLITE_READONLY_*: what SQLite says when it cannot create a file
    beside the database (matched on the message too: the code is missing on some builds)."""
    text = str(exc)
    return "unable to open database file" in text or "readonly database" in text


def readonly_reason(db_path: Path) -> str | None:
    """Why the database's folder (or file) cannot be written, or None when it can."""
    folder = db_path.parent
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "the filesystem is read-only"
    except OSError:
        pass
    if not os.access(folder, os.W_OK) or (db_path.exists() and not os.access(db_path, os.W_OK)):
        return "the memory home is not writable"
    return None


def _raise_if_readonly_home(
    db_path: Path, readonly: bool, exc: BaseException | None,
) -> None:
    """Raise one clear StoreError when a writing open (that failed with `exc`, or has not
    started) is on a read-only home; return otherwise."""
    if readonly:
        return
    if isinstance(exc, sqlite3.OperationalError) and not _is_open_refusal(exc):
        return
    reason = readonly_reason(db_path)
    if reason is None:
        return
    raise StoreError(
        f"cannot write to the memory at {db_path.parent}: {reason}; "
        "read commands (status, timeline, find, ...) still work"
    ) from None


def _prepare(conn: sqlite3.Connection, db_path: Path, readonly: bool,
             migrations: Sequence[Migration] | None) -> sqlite3.Connection:
    if unmigrated_legacy(conn):
        conn.close()
        raise StoreError(
            f"{db_path} is a database of the original (pre-memvault) design; back it up, then "
            "run `memvault migrate` to upgrade it (nothing is deleted)"
        )
    if readonly and migrations is not None:
        unknown = unknown_migrations(conn, migrations)
        if unknown:  # reading a newer layout could misreport it: refuse as writers do
            conn.close()
            raise newer_version_error(unknown)
        missing = pending_migrations(conn, migrations)
        if missing:
            conn.close()
            raise StoreError(
                f"{db_path} needs migrations {', '.join(missing)}; "
                "run any writing command (e.g. `memvault migrate`) first"
            )
    if readonly:
        return conn
    use_wal(conn)
    # NORMAL in WAL mode: a commit survives a process crash; only power loss may drop the last one.
    conn.execute("PRAGMA synchronous = NORMAL")
    if migrations is not None:
        apply_migrations(conn, migrations)
    return conn


def use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL (it stays so). Connections opening a new file at once race for
    the exclusive lock this takes, and SQLite answers the loser 'database is locked' without
    calling the busy handler: retry within the connection's busy timeout."""
    deadline = time.monotonic() + conn.execute("PRAGMA busy_timeout").fetchone()[0] / 1000
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


# The graph revision as an SQL expression (0 before any commit): statements that need it
# with other reads or writes read it in the same statement (jobs/records.py).
GRAPH_REVISION_SQL = (
    "COALESCE((SELECT CAST(value AS INTEGER) FROM state WHERE key = 'graph_revision'), 0)")


def graph_revision(conn: sqlite3.Connection) -> int:
    return int(conn.execute(f"SELECT {GRAPH_REVISION_SQL}").fetchone()[0])


def get_state(conn: sqlite3.Connection, key: str, default: str | None = None) -> str | None:
    row = conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def set_state(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def forget_in_state(conn: sqlite3.Connection, forgetting: Forgetting) -> None:
    """The forgotten text out of the `state` table's values (inside the caller's transaction)."""
    forget_in_rows(conn, forgetting, "state", ("value",), key="key")
