"""Safe file operations for the vault: atomic writes, hashes, conflict copies.

Invariants:
- a reader (Obsidian, an editor, the watcher) sees either the old file or the new one, never a
  half-written file: bytes go to a temporary file in the same folder, are flushed and fsynced,
  then `os.replace`d over the target. A failure removes the temporary file and leaves the old
  file as it was.
- temporary files end in `.memvault-tmp` and start with '.', so the watcher and Obsidian ignore
  them.
- a conflict copy never overwrites an earlier one: `<stem>.conflict-1.md`, then
  `<stem>.conflict-2.md`, ... A Markdown name, so Obsidian shows it beside the file (a symlink
  moved aside, and every copy older memvault made, is named `<file>.conflict`,
  `<file>.2.conflict`, ...: not Markdown; `paths.is_conflict_copy` knows both forms).
- nothing on disk is trusted: a file is opened with O_NOFOLLOW|O_NONBLOCK and checked on the
  opened descriptor, so a symlink is never followed, a FIFO or device never blocks or streams
  without end, and a read is bounded when the caller gives a limit. Every folder from the vault
  root down to a file is checked (lstat) to be a real folder, so nothing is read or written
  outside the vault's real path; a vault root that is itself a symlink is refused.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..base.errors import MemvaultError
from ..base.home_trust import file_kind, open_lock_file
from .paths import CONFLICT_SUFFIX, TEMP_SUFFIX, conflict_name

# No symlink followed at the last step, no blocking open of a FIFO, no descriptor leaked to a
# child. (O_NOFOLLOW is missing only on Windows, where the lstat checks below still apply.)
# The vault holds a person's memory: its folders are the owner's alone (files come from
# `_create_temp`, 0600), so a writing open of the home never has to tighten them.
PRIVATE_FOLDER = 0o700
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0))
_CHUNK = 1 << 16


def sha256(data: bytes) -> str:
    """Hex sha256 of bytes (the form stored in `projection.sha256`)."""
    return hashlib.sha256(data).hexdigest()


class NotAFile(IsADirectoryError):
    """A folder sits where the vault keeps a file; it is left alone, the file not written."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            f"{path} is a folder where the vault keeps a file: move it away "
            "(its contents are left alone); the next projection writes the file"
        )
        self.path = Path(path)


class UnsafeFile(OSError):
    """A vault path that is not read or written: a symlink, a special file (FIFO, device,
    socket), or a path whose folders leave the vault. `kind` says which:
    'symlink' (the file itself is a link), 'special', or 'folder' (a folder on the way is a
    link or not a folder)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind

    def __str__(self) -> str:
        return str(self.args[0])


class VaultFolderError(MemvaultError):
    """The vault folder cannot be used: it is a file, a symlink, or it cannot be created."""


class ProjectionBusy(MemvaultError):
    """Another projection of this vault is running."""


@contextmanager
def vault_lock(vault: Path) -> Iterator[None]:
    """Hold `<vault>.lock` (beside the vault, not in it) for a run; ProjectionBusy if held."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no advisory locks here; runs must not overlap
        yield
        return
    lock_path = vault.with_name(vault.name + ".lock")
    lock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = open_lock_file(lock_path)  # a planted link or FIFO is a clear error, never followed
    with os.fdopen(fd, "r+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ProjectionBusy(
                f"another projection of {vault} is running (it holds {lock_path}); skipped"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _link_text(path: Path | str) -> str:
    try:
        return f" (to {os.readlink(path)})"
    except OSError:
        return ""


def refuse_link(path: Path | str) -> UnsafeFile:
    """The refusal of a symlink found where the vault keeps a file."""
    return UnsafeFile(
        f"{path} is a symbolic link{_link_text(path)}: memvault does not follow links in the "
        "vault; replace it with a regular file", "symlink")


def refuse_special(path: Path | str, mode: int) -> UnsafeFile:
    """The refusal of a FIFO, device or socket found where the vault keeps a file."""
    return UnsafeFile(
        f"{path} is {file_kind(mode)}, not a regular file: left alone; remove it", "special")


def read_file(path: Path | str, limit: int | None = None) -> bytes | None:
    """The bytes of the regular file `path` (at most `limit` + 1 of them), or None if absent.

    Never follows a symlink at `path` and never blocks: a symlink, FIFO, device or socket
    raises UnsafeFile, a folder NotAFile (it is never replaced or removed: it may hold
    someone's files). The caller checks the folders on the way
    (`vault_file`). With a limit, more than `limit` bytes come back as `limit` + 1 bytes, so
    the caller can refuse an oversized file without reading it all.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise refuse_link(path) from None
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket cannot be opened
            raise refuse_special(path, os.lstat(path).st_mode) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise NotAFile(path)
        if not stat.S_ISREG(mode):
            raise refuse_special(path, mode)
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def _read_fd(fd: int, limit: int | None) -> bytes:
    chunks = []
    left = None if limit is None else limit + 1
    while left is None or left > 0:
        chunk = os.read(fd, _CHUNK if left is None else min(_CHUNK, left))
        if not chunk:
            break
        chunks.append(chunk)
        if left is not None:
            left -= len(chunk)
    return b"".join(chunks)


def check_root(vault: Path) -> None:
    """Refuse a vault root that is a symlink: its files would live somewhere else."""
    if os.path.islink(vault):
        raise VaultFolderError(
            f"the vault {vault} is a symbolic link{_link_text(vault)}: memvault only reads and "
            "writes a real folder; replace the link with the folder itself (memory.db is "
            "untouched)")


def vault_file(vault: Path, rel_path: str, create: bool = False) -> Path:
    """The disk path of `rel_path`, once every folder from the vault root down to it is a real
    folder (not a symlink), so the path stays inside the vault's real folder.

    `create` makes missing folders (for a write). A symlink or a non-folder on the way raises
    UnsafeFile (kind 'folder'). The file itself is checked when it is opened (`read_file`) or
    replaced (`atomic_write`).
    """
    return Path(checked_file(os.fspath(vault), rel_path, create))


def checked_file(vault: str, rel_path: str, create: bool = False) -> str:
    """`vault_file` as a plain string path: the projector calls it for every file it writes,
    and a Path a file cost more than the folder checks themselves."""
    folder = vault
    present = _check_folder(folder, None, create=False)  # made by ensure_folder
    parts = rel_path.split("/")
    for depth in range(1, len(parts)):
        if not present:
            break  # missing and not created: nothing below it exists to read
        folder = os.path.join(folder, parts[depth - 1])
        present = _check_folder(folder, parts[:depth], create)
    return os.path.join(vault, *parts)


def _check_folder(folder: str, shown: list[str] | None, create: bool) -> bool:
    """True if `folder` is a real folder (made if `create`), False if it is missing.

    `shown` is its vault-relative parts (None for the root), joined only for an error.
    """
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.mkdir(folder, PRIVATE_FOLDER)
        except FileExistsError:
            pass
        mode = os.lstat(folder).st_mode
    if stat.S_ISDIR(mode):
        return True
    name = folder if shown is None else "/".join(shown)
    if stat.S_ISLNK(mode):
        raise UnsafeFile(
            f"{name} is a symbolic link{_link_text(Path(folder))}: memvault does not write through "
            "links in the vault (nothing was written outside it); replace the link with a "
            "real folder", "folder")
    raise UnsafeFile(f"{name} is not a folder: move it away", "folder")


def ensure_folder(vault: Path) -> None:
    """Create the vault folder if needed, or say in one line why it cannot be used."""
    check_root(vault)
    if vault.exists() and not vault.is_dir():
        raise VaultFolderError(
            f"the vault {vault} is a file, not a folder: move it away (memory.db is untouched)"
        )
    try:
        vault.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
    except OSError as exc:
        raise VaultFolderError(
            f"cannot create the vault folder {vault}: {exc.strerror or exc}"
        ) from None


def atomic_write(path: Path | str, data: bytes, durable: bool = True, *,
                 target_checked: bool = False) -> None:
    """Replace `path` with `data` atomically (temp file + fsync + rename).

    `durable=False` skips the fsync: still atomic for readers and for a crash of this process,
    but a power loss may leave an empty file on filesystems that do not order rename after data.
    A symlink or special file at `path` is refused (UnsafeFile), never replaced or followed;
    the vault's callers check the folders first (`vault_file`). `target_checked` skips that
    lstat when the caller has just opened `path` itself with `read_file` (which refuses the
    same things): one system call less a file. The rename replaces a link that appears in
    between, never what it points to.
    """
    target = os.fspath(path)
    if not target_checked:
        _refuse_unsafe_target(target)
    fd, tmp = _create_temp(target)
    try:
        try:
            view = memoryview(data)
            while view:  # os.write may write less than asked (a signal, a full pipe)
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# The temporary file: `.<name>.<pid>-<n>.memvault-tmp` beside the target, created exclusively
# (O_EXCL: never an existing file, O_NOFOLLOW: never through a link) and private (0600). A
# counter in place of mkstemp's random letters: the name only has to be free, and O_EXCL makes
# a clash (a leftover of a crashed run with the same pid) a retry with the next number.
_TEMP_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_TEMP_MODE = 0o600
_TEMP_TRIES = 10_000
_temp_counter = itertools.count()


def _create_temp(target: str) -> tuple[int, str]:
    folder, name = os.path.split(target)
    prefix = os.path.join(folder, f".{name}.{os.getpid()}-")
    for _ in range(_TEMP_TRIES):
        tmp = f"{prefix}{next(_temp_counter)}{TEMP_SUFFIX}"
        try:
            return os.open(tmp, _TEMP_FLAGS, _TEMP_MODE), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:  # the folder is missing (the vault's callers made it already)
            os.makedirs(folder or ".", mode=PRIVATE_FOLDER, exist_ok=True)
            return os.open(tmp, _TEMP_FLAGS, _TEMP_MODE), tmp
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {target}")


_TEMP_PID = re.compile(r"\.(\d+)-\d+" + re.escape(TEMP_SUFFIX) + "$")


def remove_leftover_temps(vault: Path) -> int:
    """Delete the temporary files a killed writer left in the vault; return how many.

    Only `.<name>.<pid>-<n>.memvault-tmp` regular files whose pid is no running process: a live
    writer's temp is in flight (a reused pid only keeps a leftover until a later run). Folders
    are walked without following links."""
    removed = 0
    for folder, dirs, names in os.walk(vault, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".") or d == ".obsidian"]
        for name in names:
            found = _TEMP_PID.search(name) if name.startswith(".") else None
            if found is None or _process_alive(int(found.group(1))):
                continue
            path = os.path.join(folder, name)
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    os.unlink(path)
                    removed += 1
            except OSError:  # gone meanwhile, or not ours to remove: the next run tries again
                continue
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # this process's own writer threads may have one in flight
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # exists (another user's), or unknowable: keep the file
    return True


def _refuse_unsafe_target(path: str) -> None:
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISLNK(mode):
        raise refuse_link(path)
    if stat.S_ISDIR(mode):
        raise NotAFile(path)
    if not stat.S_ISREG(mode):
        raise refuse_special(path, mode)


def conflict_path(path: Path, markdown: bool = True) -> Path:
    """The first free conflict-copy name beside `path` (a dangling link counts as taken):
    `<stem>.conflict-1.md`, `-2`, ...; with `markdown=False` the old-style name Obsidian does
    not show, `<file>.conflict`, `<file>.2.conflict`, ... (for a symlink moved aside: a link
    is no one's edit, and Obsidian would follow it)."""
    def name(n: int) -> str:
        if markdown:
            return conflict_name(path.name, n)
        return path.name + (CONFLICT_SUFFIX if n == 1 else f".{n}{CONFLICT_SUFFIX}")

    n = 1
    while os.path.lexists(candidate := path.with_name(name(n))):
        n += 1
    return candidate


def keep_conflict(path: Path, data: bytes) -> Path:
    """Save `data` (a hand edit found at `path`) as a new conflict copy beside it; return it."""
    target = conflict_path(path)
    atomic_write(target, data)
    return target


def keep_link_aside(path: Path) -> Path:
    """Move the symlink at `path` (not what it points to) to a new conflict-copy name beside
    it; return that name. Whatever the link pointed to is neither read nor touched."""
    target = conflict_path(path, markdown=False)
    os.rename(path, target)
    return target
