"""`memvault export DIR`: everything a home holds, in open formats (JSON Lines + a manifest).

One `<table>.jsonl` per table that is not derived (a JSON object a row, columns by name, every
id as stored), read in one read transaction so the files agree with each other; `manifest.json`
lists each file's rows and sha256, the schema migrations applied and the memvault version;
`memvault.toml` is copied as it is. Derived tables are left out and rebuilt on restore: the
recall index (recall_*), the name index (object_names, kept by triggers), the vault's
bookkeeping (projection*, vault_dirty: the vault is re-rendered) and the worker lease (a
lease belongs to a running process).

Plain sqlite3 rather than sqlite-utils: reading rows is one SELECT a table, and restore must
load every table in ONE transaction of the caller's, which sqlite-utils' insert_all (it
commits per chunk) does not offer.

Security: the export holds raw text, secret-looking text included. DIR is created 0700 (an
existing DIR must be an empty folder, not a symlink) and every file 0600, opened with
O_NOFOLLOW|O_EXCL, so nothing is written through a link or over a file.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import orjson

from ..base.clock import iso
from ..base.config import CONFIG_NAME
from ..base.errors import InputError
from .memory import Memory

FORMAT = "memvault-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
# Derived or runtime tables: rebuilt (or meaningless) in the restored home.
DERIVED_TABLES = frozenset({"object_names", "vault_dirty", "projection", "projection_pages",
                            "projection_errors", "projection_intents", "leases", "_migrations",
                            "sqlite_sequence"})
# _litestream_: Litestream's bookkeeping in a replicated home (engine/replica/).
DERIVED_PREFIXES = ("recall_", "sqlite_", "_litestream_")
BLOB = "$blob"  # a BLOB value, as {"$blob": base64}: no exported column holds one today


def exported_tables(conn: sqlite3.Connection) -> list[str]:
    """The tables an export holds, sorted: every table that is not derived."""
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return [n for n in names
            if n not in DERIVED_TABLES and not n.startswith(DERIVED_PREFIXES)]


def export_home(memory: Memory, target: str | Path, now: datetime) -> dict[str, Any]:
    """Write the home into `target` (new, or an empty folder); return the manifest."""
    root = _make_private_dir(Path(target))
    conn = memory.conn
    files: dict[str, dict[str, Any]] = {}
    conn.execute("BEGIN")  # one read snapshot: the files agree with each other
    try:
        tables = exported_tables(conn)
        for table in tables:
            files[f"{table}.jsonl"] = _write_lines(root / f"{table}.jsonl",
                                                   _table_lines(conn, table))
            files[f"{table}.jsonl"]["table"] = table
        migrations = [row[0] for row in conn.execute(
            "SELECT name FROM _migrations ORDER BY rowid")]
    finally:
        conn.execute("COMMIT")
    config = memory.config.home / CONFIG_NAME
    if config.is_file() and not config.is_symlink():
        files[CONFIG_NAME] = _write_lines(root / CONFIG_NAME, iter([config.read_bytes()]))
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "memvault": _version(),
        "created_at": iso(now), "source_home": str(memory.config.home),
        "migrations": migrations, "tables": tables, "files": files,
    }
    _write_lines(root / MANIFEST, iter([orjson.dumps(manifest, option=orjson.OPT_INDENT_2)]))
    return manifest


def _table_lines(conn: sqlite3.Connection, table: str) -> Iterator[bytes]:
    cursor = conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')
    columns = [d[0] for d in cursor.description]
    for row in cursor:
        values = [{BLOB: base64.b64encode(v).decode()} if isinstance(v, bytes) else v
                  for v in row]
        yield orjson.dumps(dict(zip(columns, values, strict=True))) + b"\n"


def _write_lines(path: Path, lines: Iterator[bytes]) -> dict[str, Any]:
    """Write a new 0600 file (never through a link, never over a file); its rows and sha256."""
    digest, rows, size = hashlib.sha256(), 0, 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as out:
        for line in lines:
            out.write(line)
            digest.update(line)
            rows += 1
            size += len(line)
        out.flush()
        os.fsync(out.fileno())
    return {"rows": rows, "bytes": size, "sha256": digest.hexdigest()}


def _make_private_dir(root: Path) -> Path:
    """Create `root` 0700, or take an existing empty folder (made 0700); refuse a symlink, a
    file or a folder that holds anything."""
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        try:
            os.mkdir(root, 0o700)
        except FileNotFoundError:
            raise InputError(f"{root}: its parent folder does not exist") from None
        os.chmod(root, 0o700)  # mkdir's mode is cut by the umask, never widened: be exact
        return root
    if stat.S_ISLNK(info.st_mode):
        raise InputError(f"{root} is a symbolic link; export writes only into a real folder")
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(f"{root} exists and is not a folder; nothing was written")
    if any(root.iterdir()):
        raise InputError(f"{root} is not empty; export writes only into a new or empty folder")
    os.chmod(root, 0o700)
    return root


def _version() -> str:
    try:
        return version("memvault")
    except PackageNotFoundError:
        return "unknown"
