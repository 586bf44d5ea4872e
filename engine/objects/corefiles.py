"""Core files AGENTS.md, SOUL.md and USER.md, kept in SQLite with every version.

Invariant: a version row is never changed (except by `memvault forget`, which the owner asked
for: `forget_in_core_files`); writing identical content adds no version.
A model's write (origin organize or deep) never stores a secret-looking value: graph_write
refuses it first as a correction; the check here is the last line, should a caller skip that.
A person's own edit (api, hand, import) is theirs to keep.
"""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import datetime
from typing import Any, TypedDict

from ..base.clock import iso
from ..base.errors import InputError
from ..base.forgetting import Forgetting
from ..secrets.detector import find_secret
from ..store.forget_rows import forget_in_rows
from ..timeline.fragments import find_lone_surrogate

CORE_FILES = ("AGENTS.md", "SOUL.md", "USER.md")  # the only files whose hand edits are imported
MODEL_ORIGINS = ("organize", "deep")  # writes proposed by a model, never by a person


def check_core_name(name: str) -> str:
    """`name` if it is one of the three core files, else InputError listing them."""
    if name not in CORE_FILES:
        raise InputError(f"not a core file: {name!r} (core files: {', '.join(CORE_FILES)})")
    return name


class CoreFile(TypedDict):
    """One stored version of a core file (`Memory.read_core_file`)."""

    name: str
    version: int
    content: str
    sha256: str
    origin: str  # who wrote it: api, vault, a mode, person, ...
    created_at: str


def read_core_file(conn: sqlite3.Connection, name: str) -> CoreFile | None:
    """The current version of a core file, or None if it was never written."""
    check_core_name(name)
    row = conn.execute(
        "SELECT name, version, content, sha256, origin, created_at FROM core_files"
        " WHERE name = ? ORDER BY version DESC LIMIT 1",
        (name,),
    ).fetchone()
    if row is None:
        return None
    return CoreFile(name=row["name"], version=row["version"], content=row["content"],
                    sha256=row["sha256"], origin=row["origin"], created_at=row["created_at"])


def core_file_chars(conn: sqlite3.Connection, name: str) -> int | None:
    """The length in chars of the core file's newest version; None when it has none."""
    row = conn.execute("SELECT length(content) FROM core_files WHERE name = ?"
                       " ORDER BY version DESC LIMIT 1", (name,)).fetchone()
    return None if row is None else int(row[0])


def core_file_history(conn: sqlite3.Connection, name: str) -> list[dict[str, Any]]:
    check_core_name(name)
    rows = conn.execute(
        "SELECT name, version, sha256, origin, created_at, length(content) AS chars"
        " FROM core_files WHERE name = ? ORDER BY version",
        (name,),
    ).fetchall()
    return [dict(r) for r in rows]


def write_core_file(
    conn: sqlite3.Connection, name: str, content: str, origin: str, now: datetime,
    batch_id: int | None = None,
) -> int | None:
    """Add a new version inside the caller's transaction; None when the content is unchanged."""
    check_core_name(name)
    if not isinstance(content, str):
        raise InputError(f"{name}: content must be text")
    if find_lone_surrogate(content) is not None:
        raise InputError(f"{name}: content is not valid Unicode text")
    if "\x00" in content:
        # SQLite's length() stops at a NUL (history would misreport the size), and the vault
        # refuses to import such a file back: refused here too, so both sides agree.
        raise InputError(f"{name}: content has a NUL character at char {content.index(chr(0))}")
    if origin in MODEL_ORIGINS:
        kind = find_secret(content)
        if kind:
            raise InputError(f"{name}: content holds what looks like {kind}; a model never "
                             "writes a secret into a core file")
    current = read_core_file(conn, name)
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
    if current and current["sha256"] == digest:
        return None
    version = (current["version"] + 1) if current else 1
    conn.execute(
        "INSERT INTO core_files (name, version, content, sha256, origin, created_at, batch_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (name, version, content, digest, origin, iso(now), batch_id),
    )
    return version


def forget_in_core_files(conn: sqlite3.Connection, forgetting: Forgetting) -> None:
    """Replace the forgotten text in every version of every core file, and its sha256 with
    the new content's; inside the caller's write transaction."""
    found = forget_in_rows(conn, forgetting, "core_files", ("content",))
    if not forgetting.apply:
        return
    for rowid, _old in found:
        content = conn.execute("SELECT content FROM core_files WHERE rowid = ?",
                               (rowid,)).fetchone()[0]
        conn.execute("UPDATE core_files SET sha256 = ? WHERE rowid = ?",
                     (hashlib.sha256(content.encode("utf-8")).hexdigest(), rowid))
