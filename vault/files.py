"""Safe file operations for the vault: atomic writes, hashes, conflict copies.

Invariants:
- a reader (Obsidian, an editor, the watcher) sees either the old file or the new one, never a
  half-written file: bytes go to a temporary file in the same folder, are flushed and fsynced,
  then `os.replace`d over the target. A failure removes the temporary file and leaves the old
  file as it was.
- temporary files end in `.memvault-tmp` and start with '.', so the watcher and Obsidian ignore
  them.
- a conflict copy never overwrites an earlier one: `<file>.conflict`, then `<file>.2.conflict`, ...
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from .paths import CONFLICT_SUFFIX, TEMP_SUFFIX


def sha256(data: bytes) -> str:
    """Hex sha256 of bytes (the form stored in `projection.sha256`)."""
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None if there is no such file."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    """Replace `path` with `data` atomically (temp file + fsync + rename).

    `durable=False` skips the fsync: still atomic for readers and for a crash of this process,
    but a power loss may leave an empty file on filesystems that do not order rename after data.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def conflict_path(path: Path) -> Path:
    """The first free conflict-copy name beside `path`."""
    candidate = path.with_name(path.name + CONFLICT_SUFFIX)
    n = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.{n}{CONFLICT_SUFFIX}")
        n += 1
    return candidate


def keep_conflict(path: Path, data: bytes) -> Path:
    """Save `data` (a hand edit found at `path`) as a new conflict copy beside it; return it."""
    target = conflict_path(path)
    atomic_write(target, data)
    return target
