"""`memvault restore DIR`: rebuild a home from `memvault export DIR`, keeping every id.

Order of work, each step refusing before anything is written:
1. DIR is a real folder (not a symlink); its manifest is a memvault export this code can read
   (format version, no schema migration this code does not know);
2. every file the manifest lists is there (not a symlink) with its sha256;
3. the target home is new or empty: no event, no job, no core file, no object but the
   built-in `project:daily` that opening a new home made.
Then ONE write transaction replaces the target's rows of every exported table (the built-in
object included) by the export's. Every row is checked as the engine's writers check it, and
what can be derived is derived again (memvault.home.restore_rows); a refusal of any kind (a
line too long or nested past 64 levels, broken JSON, a wrong type, an event ingest would
refuse, a repeated id, a CHECK, a row naming a missing one, fewer or more rows than the
manifest lists) names the file and line and rolls the whole transaction back. The derived
tables follow by their owners' rules (the name index and vault marks by triggers, the recall
index by store.recall_index.sync_index); then `memvault check` runs and its report is returned.
The export's memvault.toml is not copied over the target's: the report says where it is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..base.errors import InputError
from ..base.json_depth import JsonTooDeep, check_depth
from ..store.connection import write
from .check import check_memory
from .export import BLOB, FORMAT, FORMAT_VERSION, MANIFEST, exported_tables
from .memory import Memory
from .migrations import MIGRATIONS
from .restore_rows import ROW_CHECKS, RestoreLineError, column_problem, derive_nodes, table_columns

CHUNK = 2_000  # rows a statement batch inserts
# The longest line an export may hold: a core file at the largest vault.core_file_max_bytes
# (10,000,000) with every char written as a 6-byte JSON escape. A longer line is refused by
# its number without being read whole.
MAX_LINE_BYTES = 64 * 1024 * 1024
# An event's line is far shorter: 32,000 chars as 6-byte escapes, a 16 KiB meta escaped again,
# a key. A 60 MB text is refused at its first MiB.
LINE_BYTES = {"events": 1024 * 1024}


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
    # events first: a hot fragment's derived columns are read from its event's text
    tables = sorted(manifest["tables"], key=lambda table: table != "events")
    with write(conn):
        conn.execute("PRAGMA defer_foreign_keys = ON")  # tables load in any order
        for table in tables:
            if table != "events":  # immutable and, in an empty home, empty
                conn.execute(f'DELETE FROM "{table}"')
            counts[table] = _load(conn, table, root / f"{table}.jsonl")
            expected = manifest["files"][f"{table}.jsonl"].get("rows")
            if expected is not None and expected != counts[table]:
                raise RestoreRefused(f"{root / f'{table}.jsonl'}: {counts[table]:,} rows, the "
                                     f"manifest says {expected!r}; nothing was written")
        _check_references(conn)
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
    """A file of the export, opened for reading: a regular file, never through a symbolic
    link, never a FIFO (opened without blocking, checked on its descriptor: reading a FIFO
    would wait for a writer forever)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise RestoreRefused(f"{path}: missing from the export") from None
    except OSError as exc:
        raise RestoreRefused(f"{path}: cannot be read ({exc.strerror}; a symbolic link is "
                             "refused)") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RestoreRefused(f"{path} is not a regular file (a FIFO, a device or a folder); "
                             "nothing was written")
    os.set_blocking(fd, True)
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
    """Insert the file's rows, columns by name, ids as exported, each checked (and its derived
    columns derived) as memvault.home.restore_rows says; return how many. A refusal names the
    file and line."""
    columns = table_columns(conn, table)
    check = ROW_CHECKS.get(table)
    count = 0
    batch: list[tuple[int, dict[str, Any]]] = []
    for number, row in _rows(path, min(MAX_LINE_BYTES, LINE_BYTES.get(table, MAX_LINE_BYTES))):
        problem = column_problem(row, columns)
        if problem:
            raise _refused(path, number, problem)
        if check is not None:
            try:
                row = check(row)
            except InputError as exc:
                raise _refused(path, number, str(exc)) from None
        batch.append((number, row))
        if len(batch) >= CHUNK:
            count += _insert(conn, table, path, batch)
            batch = []
    return count + _insert(conn, table, path, batch)


def _refused(path: Path, line: int, reason: str) -> RestoreRefused:
    reason = reason.removesuffix(" Nothing was stored.").rstrip(". ")
    return RestoreRefused(f"{path} line {line}: {reason}; nothing was written")


def _insert(conn: sqlite3.Connection, table: str, path: Path,
            rows: list[tuple[int, dict[str, Any]]]) -> int:
    """Insert a batch; a row SQLite refuses (a repeated id, a CHECK) is found by inserting the
    batch again row by row, and named by its line."""
    if not rows:
        return 0
    if table == "hot_nodes":
        try:
            rows = derive_nodes(conn, rows)
        except RestoreLineError as exc:
            raise _refused(path, exc.line, exc.reason) from None
    conn.execute("SAVEPOINT restore_batch")
    try:
        by_columns: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        for _, row in rows:
            by_columns.setdefault(tuple(row), []).append(tuple(row.values()))
        try:
            for names, values in by_columns.items():
                conn.executemany(_insert_sql(table, names), values)
        except sqlite3.DatabaseError:
            conn.execute("ROLLBACK TO restore_batch")
            for number, row in rows:
                try:
                    conn.execute(_insert_sql(table, tuple(row)), tuple(row.values()))
                except sqlite3.DatabaseError as exc:
                    raise _refused(path, number, _constraint(exc)) from None
            raise
    finally:
        conn.execute("RELEASE restore_batch")
    return len(rows)


def _insert_sql(table: str, names: tuple[str, ...]) -> str:
    cols = ", ".join(f'"{n}"' for n in names)
    return f'INSERT INTO "{table}" ({cols}) VALUES ({", ".join("?" * len(names))})'


def _constraint(exc: sqlite3.DatabaseError) -> str:
    """SQLite's refusal of a row, said for people."""
    text = str(exc)
    if text.startswith("UNIQUE constraint failed"):
        return f"repeats a row before it ({text})"
    return f"the database refused the row ({text})"


def _check_references(conn: sqlite3.Connection) -> None:
    """Refuse (before the commit, which would fail on them) rows naming a row no table holds:
    the deferred foreign keys, named by table and id."""
    rows = conn.execute("PRAGMA foreign_key_check").fetchmany(5)
    if rows:
        said = "; ".join(f"{table} row {rowid} names a row of {parent} the export does not hold"
                         for table, rowid, parent, _ in rows)
        raise RestoreRefused(f"{said}; nothing was written")


def _rows(path: Path, limit: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) of each line of the file: read with a bound (a line over `limit`
    bytes is refused by number without being held whole), nesting checked before it is
    parsed, BLOB values decoded."""
    with _open(path) as stream:
        number = 0
        while line := stream.readline(limit + 1):
            number += 1
            if len(line) > limit:
                raise _refused(path, number, f"longer than {limit:,} bytes, more than any row "
                                             "of this table holds")
            try:
                check_depth(line)
                row = orjson.loads(line)
            except JsonTooDeep as exc:
                raise _refused(path, number, str(exc)) from None
            except orjson.JSONDecodeError as exc:
                raise _refused(path, number, f"broken JSON ({exc})") from None
            if not isinstance(row, dict):
                raise _refused(path, number, "expected a JSON object (one row), got "
                                             f"{type(row).__name__}")
            if dict in map(type, row.values()):  # a BLOB (one test in C: millions of rows)
                row = {k: _blob(path, number, v) if type(v) is dict and BLOB in v else v
                       for k, v in row.items()}
            yield number, row


def _blob(path: Path, number: int, value: dict[str, Any]) -> bytes:
    try:
        if len(value) != 1 or not isinstance(value[BLOB], str):
            raise ValueError(value)
        return base64.b64decode(value[BLOB], validate=True)
    except (ValueError, binascii.Error):
        raise _refused(path, number, f"a {BLOB} value must be base64 text") from None
