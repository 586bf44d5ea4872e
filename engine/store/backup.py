"""`memvault backup`: a consistent copy of memory.db while the service and worker keep writing.

The copy goes through SQLite's online backup API in one step (`Connection.backup` with the
default pages=-1 semantics): it reads one snapshot of the source under a single read transaction,
so in WAL mode writers keep committing while it runs and none of their half-done work is copied.
The copy is first written to a temporary file beside DEST, switched out of WAL (so DEST is one
self-contained file), verified with PRAGMA integrity_check and only then put in place.

Invariants: never overwrites an existing file unless `force`; never leaves a partial DEST; the
source is only read.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..base.errors import StoreError


def default_name(now: datetime | None = None) -> str:
    """`memory-<UTC timestamp>.db`, e.g. memory-20261013T040000Z.db."""
    when = (now or datetime.now(UTC)).astimezone(UTC)
    return f"memory-{when:%Y%m%dT%H%M%SZ}.db"


def source_path(conn: sqlite3.Connection) -> Path | None:
    """The file behind the connection's main database (None for an in-memory one)."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return Path(row[2]).resolve() if row[2] else None
    return None


def resolve_dest(dest: str | Path, now: datetime | None = None) -> Path:
    """A directory (existing, or named with a trailing separator) gets a timestamped file."""
    text = str(dest)
    path = Path(dest).expanduser()
    if path.is_dir() or text.endswith(("/", os.sep)):
        return path / default_name(now)
    return path


def backup_database(
    conn: sqlite3.Connection, dest: str | Path, force: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Copy the database behind `conn` to `dest` (a file or a directory); verify; describe it."""
    target = resolve_dest(dest, now)
    source = source_path(conn)
    if source is not None and target.resolve() == source:
        raise StoreError(f"{target} is the live database itself; choose another destination")
    if target.exists() and not force:
        raise StoreError(f"{target} already exists; pass --force to overwrite it")
    if target.exists() and not target.is_file():
        raise StoreError(f"{target} exists and is not a file")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        copy = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.backup(copy)  # one step: one consistent snapshot of the source
            copy.execute("PRAGMA journal_mode = DELETE")  # DEST stands alone, no -wal beside it
            integrity = [r[0] for r in copy.execute("PRAGMA integrity_check")]
            counts = {
                table: copy.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("events", "objects")
            }
        finally:
            copy.close()
        if integrity != ["ok"]:
            raise StoreError(f"the copy failed PRAGMA integrity_check: {'; '.join(integrity)}")
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        _place(tmp, target, force)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return {
        "path": str(target),
        "source": str(source) if source else None,
        "bytes": target.stat().st_size,
        "integrity_check": "ok",
        "events": counts["events"],
        "objects": counts["objects"],
    }


def _place(tmp: Path, target: Path, force: bool) -> None:
    """Move the verified copy to `target`; without `force` fail (atomically) if it appeared."""
    if force:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)  # fails if target exists, even if it appeared a moment ago
    except FileExistsError:
        raise StoreError(f"{target} already exists; pass --force to overwrite it") from None
    except OSError:  # a file system without hard links
        if target.exists():
            raise StoreError(f"{target} already exists; pass --force to overwrite it") from None
        os.replace(tmp, target)
        return
    tmp.unlink()
