"""`memvault restore DIR`: rebuild a home from `memvault export DIR`, keeping every id.

Order of work, each step refusing before anything is written:
1. DIR is a real folder (not a symlink); its manifest is a memvault export this code can read
   (format version, no schema migration this code does not know);
2. every file the manifest lists is there (not a symlink) with its sha256;
3. the target home is new or empty: no event, no job, no core file, no object but the
   built-in `project:daily` that opening a new home made.
Then ONE write transaction replaces the target's rows of every exported table (the built-in
object included) by the export's, foreign keys checked at its commit; the derived tables follow
by their owners' rules (the name index and vault marks by triggers, the recall index by
store.recall_index.sync_index); then `memvault check` runs and its report is returned.
The export's memvault.toml is not copied over the target's: the report says where it is.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..base.errors import InputError
from ..store.connection import write
from ..store.migrations import MIGRATIONS
from .check import check_memory
from .export import BLOB, FORMAT, FORMAT_VERSION, MANIFEST, exported_tables
from .memory import Memory

CHUNK = 2_000  # rows a statement batch inserts


class RestoreRefused(InputError):
    """The export or the target home cannot be used; nothing was written."""


def restore_home(memory: Memory, source: str | Path) -> dict[str, Any]:
    """Load the export at `source` into this (new or empty) home; return counts and check."""
    root = Path(source)
    manifest = read_manifest(root)
    verify_files(root, manifest)
    conn = memory.conn
    _require_empty(conn)
    target_tables = set(exported_tables(conn))
    unknown = [t for t in manifest["tables"] if t not in target_tables]
    if unknown:
        raise RestoreRefused(f"the export has tables this memvault does not know "
                             f"({', '.join(unknown)}); nothing was written")
    counts: dict[str, int] = {}
    with write(conn):
        conn.execute("PRAGMA defer_foreign_keys = ON")  # tables load in any order
        for table in manifest["tables"]:
            if table != "events":  # immutable and, in an empty home, empty
                conn.execute(f'DELETE FROM "{table}"')
            counts[table] = _load(conn, table, root / f"{table}.jsonl")
    memory.sync_recall_index(max_events=None)
    lease_s = memory.config.settings.lease_s
    report = check_memory(conn, now=memory.clock.now(), lease_s=lease_s)
    return {"restored": counts, "check": report,
            "config_in_export": str(root / "memvault.toml")
            if "memvault.toml" in manifest["files"] else None}


def read_manifest(root: Path) -> dict[str, Any]:
    """The export's manifest, checked for what restore relies on."""
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        raise RestoreRefused(f"{root}: no such folder") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise RestoreRefused(f"{root} is not a folder (a symbolic link is refused)")
    try:
        manifest = orjson.loads(_read_file(root / MANIFEST))
    except orjson.JSONDecodeError as exc:
        raise RestoreRefused(f"{root / MANIFEST}: broken JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RestoreRefused(f"{root / MANIFEST}: not a memvault export manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise RestoreRefused(f"{root / MANIFEST}: export format version "
                             f"{manifest.get('format_version')!r}; this memvault reads "
                             f"{FORMAT_VERSION}")
    known = {m.__name__ for m in MIGRATIONS}
    newer = [m for m in manifest.get("migrations", []) if m not in known]
    if newer:
        raise RestoreRefused(f"the export was made by a newer memvault (migrations "
                             f"{', '.join(newer)}); upgrade memvault first")
    for table in manifest.get("tables", []):
        if manifest.get("files", {}).get(f"{table}.jsonl", {}).get("table") != table:
            raise RestoreRefused(f"{root / MANIFEST}: table {table} has no file entry")
    return manifest


def verify_files(root: Path, manifest: dict[str, Any]) -> None:
    """Every listed file exists, is no symlink, and has the manifest's sha256."""
    for name, entry in manifest["files"].items():
        if "/" in name or name.startswith("."):
            raise RestoreRefused(f"{root / MANIFEST}: a file name outside the folder: {name!r}")
        if _sha256(root / name) != entry.get("sha256"):
            raise RestoreRefused(f"{root / name}: checksum does not match the manifest "
                                 "(changed or damaged); nothing was written")


def _open(path: Path) -> BinaryIO:
    """A file of the export, opened for reading; never through a symbolic link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise RestoreRefused(f"{path}: missing from the export") from None
    except OSError as exc:
        raise RestoreRefused(f"{path}: cannot be read ({exc.strerror}; a symbolic link is "
                             "refused)") from None
    return os.fdopen(fd, "rb")


def _read_file(path: Path) -> bytes:
    with _open(path) as stream:
        return stream.read()


def _sha256(path: Path) -> str:
    """The file's sha256, read in blocks: an export of hundreds of MB is never held whole."""
    digest = hashlib.sha256()
    with _open(path) as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _require_empty(conn: sqlite3.Connection) -> None:
    """Refuse a home that holds anything a person or the engine made (a new home's built-in
    project:daily does not count)."""
    held = []
    for what, sql in (
            ("events", "SELECT COUNT(*) FROM events"),
            ("jobs", "SELECT COUNT(*) FROM jobs"),
            ("core files", "SELECT COUNT(*) FROM core_files"),
            ("objects", "SELECT COUNT(*) FROM objects WHERE id != 'project:daily' OR version > 1"),
            ("relations", "SELECT COUNT(*) FROM relations"),
            ("corrections", "SELECT COUNT(*) FROM corrections")):
        count = conn.execute(sql).fetchone()[0]
        if count:
            held.append(f"{count} {what}")
    if held:
        raise RestoreRefused(f"the home is not empty ({', '.join(held)}); restore works only "
                             "into a new or empty home: pass --home with a new folder")


def _load(conn: sqlite3.Connection, table: str, path: Path) -> int:
    """Insert the file's rows, columns by name, ids as exported; return how many."""
    columns = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
    count = 0
    batch: list[dict[str, Any]] = []
    for row in _rows(path):
        extra = set(row) - columns
        if extra:
            raise RestoreRefused(f"{path.name}: columns this memvault does not have "
                                 f"({', '.join(sorted(extra))}); nothing was written")
        batch.append(row)
        if len(batch) >= CHUNK:
            count += _insert(conn, table, batch)
            batch = []
    return count + _insert(conn, table, batch)


def _insert(conn: sqlite3.Connection, table: str, rows: list[dict[str, Any]]) -> int:
    by_columns: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    for row in rows:
        by_columns.setdefault(tuple(row), []).append(tuple(row.values()))
    for names, values in by_columns.items():
        cols = ", ".join(f'"{n}"' for n in names)
        marks = ", ".join("?" * len(names))
        conn.executemany(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', values)
    return len(rows)


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with _open(path) as stream:
        for number, line in enumerate(stream, start=1):
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise RestoreRefused(f"{path.name} line {number}: broken JSON ({exc})") from None
            yield {k: base64.b64decode(v[BLOB]) if isinstance(v, dict) and BLOB in v else v
                   for k, v in row.items()}
