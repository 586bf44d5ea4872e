"""The three core files, the only vault files whose hand edits flow back into SQLite.

Both the projector (on every run) and the watcher (on every change) go through here, so a hand
edit of AGENTS.md, SOUL.md or USER.md is imported whichever of them sees it first.

Invariants:
- the vault copy is the stored content, byte for byte: no front matter, no newline changes.
- bytes on disk that differ from what the projector last wrote there are a hand edit: they are
  imported as a new version (origin 'hand') before anything is written, so nothing typed is
  overwritten. Both versions stay in SQLite's history. Bytes the projector announced (a write
  intent, committed before its rename) are its own even when a kill cut off their record: they
  are replaced, never imported as a person's edit of an older version.
- a file that is not valid UTF-8, or is larger than `vault.core_file_max_bytes`, is refused with
  a message naming the limit: the file is left as it is, memory keeps its last good version,
  and an open `core_refused` report says so until a valid file is imported.
- only a regular file at the vault root is read, never more than the limit (plus one byte) of
  it: a symlink (to /etc/passwd, /dev/zero, ...), a FIFO or a device is refused the same way,
  reported, and neither read, imported nor overwritten.
- a core file with more than one hard link is refused the same way: its other name may be any
  file outside the vault (a hand edit never makes one; the projector writes by rename).
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..base.errors import MemvaultError
from ..objects.corefiles import CoreFile, read_core_file, write_core_file
from ..store.connection import write
from .bookkeeping import (
    clear_intents_many,
    open_report,
    record_intents,
    record_owner,
    resolve_reports,
)
from .files import UnsafeFile, atomic_write, read_file, sha256, vault_file


class CoreFileRefused(MemvaultError):
    """A core file in the vault that cannot be imported (not UTF-8, or too large)."""


@dataclass
class CoreOutcome:
    """What happened to one core file."""

    name: str
    action: str  # unchanged | written | imported | refused | missing
    message: str = ""
    version: int | None = None


def decode_core_file(name: str, data: bytes, max_bytes: int) -> str:
    """The text of a core file read from the vault, or CoreFileRefused saying why not."""
    if len(data) > max_bytes:  # the reader stops at max_bytes + 1: the size is a floor
        raise CoreFileRefused(
            f"{name} is more than {max_bytes:,} bytes, over the limit "
            f"vault.core_file_max_bytes = {max_bytes:,} (memvault.toml): not imported"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CoreFileRefused(
            f"{name} is not valid UTF-8 (bad byte at offset {exc.start}): not imported"
        ) from None
    if "\x00" in text:
        raise CoreFileRefused(f"{name} holds a NUL character: not imported")
    return text


def import_core_bytes(
    conn: sqlite3.Connection, name: str, data: bytes, max_bytes: int, now: datetime,
) -> CoreOutcome:
    """Import bytes found at the vault's `name` as a new version, or refuse them (reported)."""
    current = read_core_file(conn, name)
    kept = _kept(current)
    digest = sha256(data)
    try:
        text = decode_core_file(name, data, max_bytes)
    except CoreFileRefused as exc:
        message = f"{exc}; the file is left as it is and {kept}"
        with write(conn):
            open_report(conn, name, name, "core_refused", message, digest, now)
        return CoreOutcome(name, "refused", message)
    try:
        with write(conn):
            version = write_core_file(conn, name, text, "hand", now)
            stored = read_core_file(conn, name)
            assert stored is not None
            record_owner(conn, name, name, digest, stored["version"], now)
            resolve_reports(conn, name, now)
    except MemvaultError as exc:
        message = f"{name}: {exc}; the file is left as it is and {kept}"
        with write(conn):
            open_report(conn, name, name, "core_refused", message, digest, now)
        return CoreOutcome(name, "refused", message)
    if version is None:
        return CoreOutcome(name, "unchanged", "already in memory", stored["version"])
    return CoreOutcome(name, "imported", f"{name}: imported hand edit as version {version}",
                       version)


def _kept(current: CoreFile | None) -> str:
    return f"memory keeps version {current['version']}" if current else "memory keeps no version"


def read_core_disk(vault: Path, name: str, max_bytes: int, stored: bytes) -> bytes | None:
    """The bytes of the vault's core file `name`, or None if absent; UnsafeFile if it is not a
    regular file. At most max(max_bytes, len(stored)) + 1 bytes are read: enough to recognise
    the stored content (which a lowered limit must not turn into a refusal) and to refuse
    anything larger without reading it all."""
    path = vault_file(vault, name)
    _refuse_hard_link(path)
    return read_file(path, max(max_bytes, len(stored)))


def _refuse_hard_link(path: Path) -> None:
    """UnsafeFile when `path` is a regular file with more than one hard link (st_nlink)."""
    try:
        st = os.lstat(path)
    except OSError:
        return  # absent, or not ours to judge: read_file says what it is
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise UnsafeFile(
            f"{path} has {st.st_nlink} hard links: another name for the same file exists, "
            "maybe outside the vault; memvault does not import it; replace it with a copy of "
            "its own (copy it, then move the copy over it)", "hardlink")


def refuse_unsafe(
    conn: sqlite3.Connection, name: str, error: UnsafeFile, now: datetime,
) -> CoreOutcome:
    """Report a core file that is a symlink or special file: not imported, not overwritten."""
    message = f"{error}; not imported and not overwritten, {_kept(read_core_file(conn, name))}"
    with write(conn):
        open_report(conn, name, name, "core_refused", message, None, now)
    return CoreOutcome(name, "refused", message)


def sync_core_file(
    conn: sqlite3.Connection, vault: Path, name: str, max_bytes: int, now: datetime,
) -> CoreOutcome:
    """Bring the vault's copy of a core file and SQLite together (the projector's side)."""
    current = read_core_file(conn, name)
    content = (current["content"] if current else "").encode("utf-8")
    try:
        disk = read_core_disk(vault, name, max_bytes, content)
    except UnsafeFile as exc:
        return refuse_unsafe(conn, name, exc, now)
    version = current["version"] if current else 0
    row = conn.execute(  # one read, whether or not a projection row exists
        "SELECT (SELECT sha256 FROM projection WHERE object_id = ?1) AS sha256,"
        " (SELECT version FROM projection WHERE object_id = ?1) AS version,"
        " (SELECT json_group_array(sha256) FROM projection_intents WHERE object_id = ?1)"
        " AS intended", (name,),
    ).fetchone()
    if disk is not None:
        digest = sha256(disk)
        if disk == content:
            if row["sha256"] != digest or row["version"] != version or row["intended"] != "[]":
                with write(conn):
                    record_owner(conn, name, name, digest, version, now)
                    clear_intents_many(conn, [name])
                    resolve_reports(conn, name, now)
            return CoreOutcome(name, "unchanged", version=version)
        if digest != row["sha256"] and digest not in json.loads(row["intended"]):
            return import_core_bytes(conn, name, disk, max_bytes, now)
    digest = sha256(content)
    with write(conn):  # the intent, committed before the rename
        record_intents(conn, [(name, name, digest)], now)
    atomic_write(vault_file(vault, name), content, durable=True)
    with write(conn):
        record_owner(conn, name, name, digest, version, now)
        clear_intents_many(conn, [name])
        resolve_reports(conn, name, now)
    return CoreOutcome(name, "written", f"{name}: wrote version {version}", version)
