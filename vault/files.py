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

from ..base.errors import MemvaultError
from .paths import CONFLICT_SUFFIX, TEMP_SUFFIX


def sha256(data: bytes) -> str:
    """Hex sha256 of bytes (the form stored in `projection.sha256`)."""
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None if there is no such file.

    A folder where a file belongs raises NotAFile (an OSError saying so): it is never
    replaced or removed, since it may hold someone's files."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        raise NotAFile(path) from None


class NotAFile(IsADirectoryError):
    """A folder sits where the vault keeps a file; it is left alone, the file not written."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path} is a folder where the vault keeps a file: move it away "
            "(its contents are left alone); the next projection writes the file"
        )
        self.path = path


class VaultFolderError(MemvaultError):
    """The vault folder cannot be used: it is a file, or it cannot be created."""


def ensure_folder(vault: Path) -> None:
    """Create the vault folder if needed, or say in one line why it cannot be used."""
    if vault.exists() and not vault.is_dir():
        raise VaultFolderError(
            f"the vault {vault} is a file, not a folder: move it away (memory.db is untouched)"
        )
    try:
        vault.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VaultFolderError(
            f"cannot create the vault folder {vault}: {exc.strerror or exc}"
        ) from None


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
