"""The file-writing step of a projection run: one owner's rendered files put on disk safely.

Invariants (those of the projector, `vault/projector.py`, that concern the disk):
- a file whose bytes already equal the rendering is not rewritten (its mtime stays).
- a file whose bytes differ from what the projector last wrote there (a hand edit, or a file it
  never wrote) is kept as a `.conflict` copy before being replaced; nothing typed is lost.
  Bytes matching an open write intent (`intents`: committed before a rename whose record a
  kill may have cut off) are the projector's own: replaced without a copy.
- every write is atomic (temp file + rename); a symlink where a file belongs is never followed:
  the link itself is moved aside as the `.conflict` copy; a FIFO or device is refused.
- a continuation page the owner no longer needs is removed, or kept as a conflict copy if it
  was edited by hand.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from .files import (
    UnsafeFile,
    atomic_write,
    checked_file,
    keep_conflict,
    keep_link_aside,
    read_file,
    sha256,
    vault_file,
)
from .paths import relative
from .render import Rendered


@dataclass
class OwnerJob:
    """One owner in flight: what was rendered and what the store said when it was."""

    owner: str
    mark: int | None
    recorded: dict[str, str]
    intended: dict[str, set[str]] = field(default_factory=dict)  # open intents {path: {sha}}
    rendered: Rendered | None = None
    error: str | None = None
    error_path: str | None = None
    written: list[str] = field(default_factory=list)
    conflicts: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0


def write_failure(exc: OSError) -> str:
    """The recorded error of a failed or refused write."""
    return f"refused: {exc}" if isinstance(exc, UnsafeFile) else f"write failed: {exc}"


def intents(job: OwnerJob) -> list[tuple[str, str, str]]:
    """(path, owner, sha256) of each rendered file whose bytes are not the recorded ones: the
    write intents to commit before `write_owner_files` may rename them into place."""
    assert job.rendered is not None
    rows = []
    for rel_path, data in job.rendered.files.items():
        digest = sha256(data)
        if digest != job.recorded.get(rel_path):
            rows.append((rel_path, job.owner, digest))
    return rows


def put_file(
    vault: Path, rel_path: str, data: bytes, last_written: str | None, durable: bool = True,
    intended: Collection[str] = (),
) -> tuple[bool, str | None]:
    """Write one vault file safely; return (written, conflict copy path or None).

    Not rewritten when its bytes are already `data`. Bytes that are neither what the projector
    last wrote (`last_written`, a sha256) nor what it meant to write there before a kill
    (`intended`, sha256s) are kept as a conflict copy first.
    """
    path = checked_file(os.fspath(vault), rel_path, create=True)  # a str; refuses linked folders
    try:
        disk = read_file(path)
    except UnsafeFile as exc:
        if exc.kind != "symlink":
            raise  # a FIFO or device: refused, recorded, left alone
        conflict = relative(vault, keep_link_aside(Path(path)))  # the link, not its target
        atomic_write(path, data, durable=durable)
        return True, conflict
    if disk == data:
        return False, None
    conflict = (relative(vault, keep_conflict(Path(path), disk))
                if disk is not None and not _own(sha256(disk), last_written, intended)
                else None)
    # read_file just found a regular file or nothing there (O_NOFOLLOW): no second lstat.
    atomic_write(path, data, durable=durable, target_checked=True)
    return True, conflict


def _own(digest: str, last_written: str | None, intended: Collection[str]) -> bool:
    """Bytes the projector wrote: recorded, or announced by an intent (a kill may have come
    between their rename and their record)."""
    return digest == last_written or digest in intended


def write_owner_files(vault: Path, job: OwnerJob, durable: bool) -> None:
    assert job.rendered is not None
    try:
        for rel_path, data in job.rendered.files.items():
            job.error_path = rel_path
            written, conflict = put_file(vault, rel_path, data, job.recorded.get(rel_path),
                                         durable, job.intended.get(rel_path, ()))
            if written:
                job.written.append(rel_path)
            else:
                job.unchanged += 1
            if conflict:
                job.conflicts[rel_path] = conflict
        for rel_path, last in job.recorded.items():
            if rel_path in job.rendered.files:
                continue
            job.error_path = rel_path
            path = vault_file(vault, rel_path)
            try:
                disk = read_file(path)
            except UnsafeFile as exc:
                if exc.kind != "symlink":
                    raise
                target = keep_link_aside(path)  # a stale page that became a link: kept aside
                job.conflicts[rel_path] = relative(vault, target) or str(target)
                job.removed.append(rel_path)
                continue
            if disk is None:
                continue
            if _own(sha256(disk), last, job.intended.get(rel_path, ())):
                path.unlink()
            else:  # a hand-edited page that is no longer needed: keep the edit, not the page
                target = keep_conflict(path, disk)
                path.unlink()
                job.conflicts[rel_path] = relative(vault, target) or str(target)
            job.removed.append(rel_path)
        job.error_path = None
    except OSError as exc:
        job.error = write_failure(exc)
