"""Trusting a home's files before using them: who owns them, and what kind of file they are.

A home another user owns is theirs to change at any time, whatever its mode: its memvault.toml
can name their server as the model and any of your environment variables as its API key, and
they can swap memory.db. So every command that writes or calls a model refuses a home whose
folder, settings, database (with its -wal/-shm) or vault is not owned by the user running it
(root's home owned by root is fine), with an error naming the owner; `memvault check` reports
it; an administrator who means to run as another user passes `--allow-other-owner` (or sets
MEMVAULT_ALLOW_OTHER_OWNER=1).

memvault.toml is read only when it is a regular file: opened O_NOFOLLOW|O_NONBLOCK and checked
by fstat before a byte is read, so a FIFO, a device or a link to /dev/zero is one clear error
instead of a command that hangs or fills memory. A `vault.lock` that is not a regular file
(planted link or FIFO) is removed by a writing open, so a projection never trips on it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .errors import ConfigError

ALLOW_OTHER_OWNER_ENV = "MEMVAULT_ALLOW_OTHER_OWNER"
SETTINGS_MAX_BYTES = 1 << 20  # a settings file of every key with comments is ~6 KB
# The parts of a home whose owner can change what memvault does with it.
OWNED_PARTS = ("", "memvault.toml", "memory.db", "memory.db-wal", "memory.db-shm", "vault")
VAULT_LOCK = "vault.lock"  # beside the vault (vault/projector.py takes it for a run)
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0))


def owner_name(uid: int) -> str:
    """`name (uid N)`, or `uid N` for a uid no account has."""
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def foreign_parts(root: Path) -> list[tuple[Path, int]]:
    """(path, owner uid) of the home's parts (OWNED_PARTS that exist) that the effective user
    does not own. Never follows a link: a link's own owner is what could be swapped."""
    if not hasattr(os, "geteuid"):  # no Unix owners (Windows): nothing to compare
        return []
    me = os.geteuid()
    found = []
    for name in OWNED_PARTS:
        path = root / name if name else root
        try:
            uid = path.lstat().st_uid
        except OSError:
            continue
        if uid != me:
            found.append((path, uid))
    return found


def other_owner_allowed(allow: bool | None = None) -> bool:
    """`allow` when given, else whether $MEMVAULT_ALLOW_OTHER_OWNER is set to a yes."""
    if allow is not None:
        return allow
    return os.environ.get(ALLOW_OTHER_OWNER_ENV, "").strip().lower() in ("1", "true", "yes")


def describe_foreign(root: Path, parts: list[tuple[Path, int]]) -> str:
    """`memory.db is owned by nobody (uid 65534)` for each part, joined."""
    return "; ".join(f"{path if path == root else path.name} is owned by {owner_name(uid)}"
                     for path, uid in parts)


def check_owner(root: Path, allow: bool | None = None) -> None:
    """Raise ConfigError when a part of the home belongs to another user, unless allowed."""
    parts = foreign_parts(root)
    if not parts or other_owner_allowed(allow):
        return
    me = owner_name(os.geteuid())
    raise ConfigError(
        f"the memory home {root} is not yours ({describe_foreign(root, parts)}; you are "
        f"{me}): memvault does not write to it or call a model from it, since its owner "
        "controls its settings and data; chown it to yourself, or pass --allow-other-owner "
        f"(or {ALLOW_OTHER_OWNER_ENV}=1) if you administer it")


def read_settings_text(path: Path) -> str | None:
    """The text of memvault.toml at `path`, or None when there is none. ConfigError (naming the
    file and what is wrong) for a link, a folder, a FIFO or device, a file over
    SETTINGS_MAX_BYTES or one that is not UTF-8; nothing is read from a non-regular file."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"{path} is a symbolic link: memvault reads its settings only "
                              "from a regular file in the home; replace the link with the "
                              "file itself") from None
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket cannot be opened
            raise ConfigError(f"{path} is a socket, not a regular file: memvault does not "
                              "read it; remove it") from None
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{path} is {file_kind(st.st_mode)}, not a regular file: memvault "
                              "does not read it; remove it (a new home writes the defaults)")
        data = _read_at_most(fd, SETTINGS_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > SETTINGS_MAX_BYTES:
        raise ConfigError(f"{path} is over {SETTINGS_MAX_BYTES:,} bytes: not a settings file "
                          "memvault reads")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: not UTF-8 (bad byte at offset "
                          f"{exc.start})") from None


def clear_bad_lock(root: Path) -> str | None:
    """Remove `vault.lock` from the home when it is not a regular file (a symlink, FIFO,
    socket or device: the projector's lock can never have been taken on one, so nothing holds
    it) and say so; a folder there is left alone and named. None when all is well."""
    path = root / VAULT_LOCK
    try:
        st = path.lstat()
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISDIR(st.st_mode):
        return (f"{path} is a folder where the vault projection keeps its lock file: the vault "
                "cannot be projected until it is moved away")
    what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else file_kind(st.st_mode)
    try:
        path.unlink()  # the link itself, never what it points to
    except OSError as exc:
        return (f"{path} is {what}, not the regular lock file the vault projection needs, and "
                f"cannot be removed ({exc.strerror or exc}): remove it")
    return f"removed {path}: it was {what}, not the vault projection's lock file"


def open_lock_file(path: Path) -> int:
    """A descriptor of the lock file at `path` (created 0600 if absent) for flock; ConfigError
    naming it when it is a link, FIFO, folder or other non-regular file (what os.open and
    fdopen would have said: "Too many levels of symbolic links", "File or stream is not
    seekable."). Never follows a link and never blocks on a FIFO."""
    flags = (os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"{path} is a symbolic link, not the lock file memvault keeps "
                              "there: remove it (any writing command does)") from None
        if exc.errno == errno.EISDIR:
            raise ConfigError(f"{path} is a folder where memvault keeps a lock file: move it "
                              "away") from None
        raise ConfigError(f"{path}: cannot be opened: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ConfigError(f"{path} is {file_kind(mode)}, not the lock file memvault keeps there: "
                          "remove it (any writing command does)")
    return fd


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 65_536))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words ("a FIFO", "a folder", ...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"
