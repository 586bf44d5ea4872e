"""`memvault forget TEXT`: every stored copy of a text replaced by a marker of its length.

The one deliberate exception to "raw text is never rewritten" (docs/spec.md section 9): the
owner asked for it. The order, and why:

1. The worker lease is taken (refused while a live worker holds it), so no claimed batch can
   commit a copy of the text back while this runs.
2. One write transaction, with `PRAGMA secure_delete` on (freed bytes are zeroed): each module
   that owns a table replaces the text in its own columns (`forget_in_*`), the recall index
   re-indexes the rewritten events and is optimized (no FTS5 segment keeps a deleted token),
   objects citing a rewritten event are marked for the vault, and one audit row is written
   (who, when, copies per place; never the text nor a hash of it).
3. The caller (the command line: only it may use the vault) re-renders the vault and then
   `scrub_files` rewrites any other file under the home that still holds the text (conflict
   copies, hand-edited files). A file that is not UTF-8 text (a backup copy), holds the text
   only as UTF-16 or UTF-32, or belongs to an export kept in the home (its manifest's sha256
   would no longer match) is reported, never rewritten; files are read in bounded blocks.
4. `compact_database` runs VACUUM and a TRUNCATE checkpoint, so neither the database file nor
   its WAL keeps an old page; `files_holding` then checks every file under the home.

Ids are never rewritten: objects whose id holds the text are named in the report.
A new table that keeps text needs its owner's `forget_in_*` call in `_forget_everywhere`
(tests/test_forget.py seeds every place and walks every file afterwards).
Backups made earlier (`memvault backup`) are out of reach; the report says so.
"""

from __future__ import annotations

import getpass
import os
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import StoreError
from ..base.forgetting import Forgetting
from ..jobs.leases import acquire_lease, lease_info, parse_holder, process_holder, release_lease
from ..jobs.ledger import forget_in_ledger
from ..jobs.records import forget_in_jobs
from ..legacy.upgrade import forget_in_legacy_tables
from ..objects.corefiles import CORE_FILES, forget_in_core_files
from ..objects.records import forget_in_objects
from ..recall.index import optimize_index, reindex_forgotten
from ..store.connection import forget_in_state, write
from ..store.forget_rows import forget_in_rows
from ..timeline.events import forget_in_events
from ..timeline.hot import forget_in_heads
from ..timeline.queue import forget_in_queue
from ..vault.bookkeeping import forget_in_vault_tables, mark_citers_dirty
from .check import check_memory
from .forget_audit import record_forget, set_forget_files

if TYPE_CHECKING:  # Memory.forget calls this module
    from .memory import Memory

BACKUPS_NOTE = ("backups made earlier (memvault backup) still hold the text: forget cannot "
                "reach them; delete or re-make them")
DB_FILES = ("memory.db", "memory.db-wal", "memory.db-shm", "memory.db-journal")


@dataclass
class ForgetReport:
    """What a forget found (and, unless a dry run, replaced), place by place."""

    dry_run: bool
    places: dict[str, int]
    events: list[int]
    ids_kept: list[str]
    objects_marked: int = 0
    audit_id: int | None = None
    files: list[str] = field(default_factory=list)  # rewritten (or, dry run, holding it)
    files_not_text: list[str] = field(default_factory=list)  # holding it, left alone
    residue: list[str] = field(default_factory=list)  # files still holding it afterwards
    left: dict[str, int] = field(default_factory=dict)  # copies a table still holds (ids)
    checkpoint_busy: bool = False
    vault: str | None = None  # what re-rendering the vault did
    check_ok: bool | None = None  # `memvault check` afterwards (None: a dry run)
    backups: str = BACKUPS_NOTE

    @property
    def occurrences(self) -> int:
        return sum(self.places.values())

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "occurrences": self.occurrences}


def who_forgets() -> str:
    """The OS user running the forget (for the audit row)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"


@contextmanager
def holding_lease(conn: sqlite3.Connection, now: datetime, seconds: float) -> Iterator[str]:
    """Hold the worker lease for the block; refused while a live worker holds it."""
    holder = process_holder("forget")
    if not acquire_lease(conn, holder, now, seconds):
        info = lease_info(conn) or {}
        parsed = parse_holder(str(info.get("holder", "")))
        who = parsed.describe() if parsed else str(info.get("holder", "another process"))
        raise StoreError(f"a worker ({who}) holds the lease: stop it (or let its batch end) "
                         "and run forget again; nothing was changed")
    try:
        yield holder
    finally:
        release_lease(conn, holder)


def _forget_everywhere(conn: sqlite3.Connection, forgetting: Forgetting) -> tuple[
        dict[int, str], list[str]]:
    """Each owner replaces the text in its own tables; returns (old texts of rewritten events,
    object ids holding the text)."""
    old_texts = forget_in_events(conn, forgetting)
    forget_in_heads(conn, forgetting, sorted(old_texts))
    forget_in_queue(conn, forgetting)
    ids = forget_in_objects(conn, forgetting)
    forget_in_core_files(conn, forgetting)
    forget_in_jobs(conn, forgetting)
    forget_in_ledger(conn, forgetting)
    forget_in_vault_tables(conn, forgetting)
    forget_in_state(conn, forgetting)
    forget_in_legacy_tables(conn, forgetting)
    return old_texts, ids


def count_copies(conn: sqlite3.Connection, text: str) -> ForgetReport:
    """A dry run: where the database holds the text and how often, counted by the same
    owners' calls a forget makes (so it finds exactly what `--yes` replaces), and in `left`
    the copies no owner would replace (every column read, as `copies_left` checks after a
    forget: ids, and any column an owner does not cover). Changes nothing (works on a
    read-only connection)."""
    forgetting = Forgetting(text, apply=False)
    conn.execute("BEGIN")
    try:
        old_texts, ids = _forget_everywhere(conn, forgetting)
        everywhere = copies_left(conn, text)
    finally:
        conn.execute("COMMIT")
    left = {place: copies - forgetting.counts.get(place, 0)
            for place, copies in everywhere.items() if copies > forgetting.counts.get(place, 0)}
    return ForgetReport(True, dict(forgetting.counts), sorted(old_texts), ids, left=left)


def forget_in_database(
    conn: sqlite3.Connection, text: str, now: datetime, who: str,
) -> ForgetReport:
    """Replace every copy of the text in the database in one write transaction (the caller
    holds the lease: `holding_lease`), and write the audit row."""
    forgetting = Forgetting(text)
    conn.execute("PRAGMA secure_delete = ON")  # stays on for this connection's later writes
    with write(conn):
        old_texts, ids = _forget_everywhere(conn, forgetting)
        reindex_forgotten(conn, old_texts)
        marked = mark_citers_dirty(conn, sorted(old_texts))
        optimize_index(conn)
        audit_id = record_forget(conn, who, now, dict(forgetting.counts))
    return ForgetReport(False, dict(forgetting.counts), sorted(old_texts), ids, marked,
                        audit_id)


def forget_everywhere(
    memory: Memory, text: str, render_vault: Callable[[], str | None],
) -> ForgetReport:
    """The whole forget, in the order the module docstring gives: lease, database, the vault's
    core files, `render_vault` (the caller's: the engine never imports the vault; it returns a
    line for the report), every other file, VACUUM and checkpoint, the residue, `check`."""
    conn, home, now = memory.conn, memory.config.home, memory.clock.now()
    lease_s = memory.config.settings.lease_s
    with holding_lease(conn, now, lease_s):
        report = forget_in_database(conn, text, now, who_forgets())
        report.left = copies_left(conn, text)
        vault = memory.config.vault_path
        # Core files first: a hand-edited one still holding the text would be imported back.
        cores = {vault / name for name in CORE_FILES}
        scrub_files(home, text, report,
                    [p for p in files_holding(home, text, skip_db=True) if p in cores])
        report.vault = render_vault() if vault.is_dir() else None
        scrub_files(home, text, report)
        record_files(conn, report)
    report.checkpoint_busy = compact_database(conn)
    report.residue = [str(p.relative_to(home)) for p in files_holding(home, text)]
    report.check_ok = check_memory(conn, now=now, lease_s=lease_s)["ok"]
    return report


def copies_left(conn: sqlite3.Connection, text: str) -> dict[str, int]:
    """Copies of the text any table still holds, by table.column: a check of the owners'
    work (reads only), not a redaction. Ids are expected here (they are never rewritten);
    anything else names a table whose owner has no `forget_in_*` call yet."""
    probe = Forgetting(text, apply=False)
    tables = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name")]
    for table in tables:
        columns = tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
        forget_in_rows(conn, probe, table, columns, key=columns[0])
    return dict(probe.counts)


def record_files(conn: sqlite3.Connection, report: ForgetReport) -> None:
    """Add the files scrubbed after the database commit to the forget's audit row."""
    if report.audit_id is not None:
        with write(conn):
            set_forget_files(conn, report.audit_id, len(report.files))


def compact_database(conn: sqlite3.Connection) -> bool:
    """VACUUM (the file is rebuilt: no free page or cell keeps old bytes) and fold the WAL
    into it, truncated to nothing. Returns True when a reader kept the checkpoint from
    finishing (the WAL may then still hold old pages until it can).

    Why a VACUUM although `secure_delete` zeroes what the forget frees and the checkpoint
    overwrites the pages it changed: secure_delete zeroes only what is freed while it is on.
    Copies freed before the forget, when it was off (an object's body before an edit, a
    text's cells moved by earlier page splits, FTS5 segments merged by earlier optimizes),
    still sit in free pages and in the freeblocks of live pages, a long text cut across
    overflow pages where no scan of the file for the text's bytes can recognise it. Only a
    rebuilt file holds none of them (at 1M events it costs about 16 s)."""
    conn.execute("VACUUM")
    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    return bool(busy)


# -- files under the home -------------------------------------------------------------------------
def _regular_files(root: Path) -> Iterator[Path]:
    """Every regular file under `root`, never through a symlink."""
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(files):
            path = Path(folder) / name
            try:
                if stat.S_ISREG(path.lstat().st_mode):
                    yield path
            except OSError:
                continue
        dirs.sort()


SCAN_BLOCK = 1 << 20  # bytes of a file read at a time when looking for the text
# Encodings a file may hold the text in besides UTF-8 (no byte order mark: a needle may stand
# anywhere in the file). A file found by one of these is reported, never rewritten.
_OTHER_ENCODINGS = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")


def _needles(text: str, encodings: tuple[str, ...] = ("utf-8", *_OTHER_ENCODINGS)) -> list[
        bytes]:
    """The bytes the text may be stored as: each form (itself, JSON-escaped) in UTF-8, and in
    UTF-16 and UTF-32 (a file saved so is reported: forget cannot rewrite it safely)."""
    forms = Forgetting(text, apply=False).forms
    return list(dict.fromkeys(form.encode(encoding, "surrogatepass")
                              for encoding in encodings for form in forms))


def _holds(path: Path, needles: list[bytes]) -> bool:
    """Whether the regular file at `path` holds a needle, read in SCAN_BLOCK blocks (each
    block searched with the tail of the one before, so a needle across two blocks is found):
    memory stays bounded whatever the file's size (memory.db at 1M events is 500 MB). Never
    through a symbolic link, never a FIFO (opened without blocking, checked on its descriptor)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        keep = max(map(len, needles)) - 1
        tail = b""
        while block := stream.read(SCAN_BLOCK):
            window = tail + block
            if any(needle in window for needle in needles):
                return True
            tail = window[-keep:] if keep else b""
    return False


def files_holding(home: Path, text: str, skip_db: bool = False) -> list[Path]:
    """Files under the home whose bytes hold the text (UTF-8, a JSON-escaped form, UTF-16 or
    UTF-32)."""
    needles = _needles(text)
    in_db = _needles(text, ("utf-8",))  # SQLite keeps memvault's text as UTF-8
    found = []
    for path in _regular_files(home):
        database = path.parent == home and path.name in DB_FILES
        if skip_db and database:
            continue
        if _holds(path, in_db if database else needles):
            found.append(path)
    return found


def _export_of(path: Path) -> bool:
    """Whether `path` is a file of a `memvault export` folder (its manifest beside it)."""
    manifest = path.parent / "manifest.json"
    try:
        if manifest.is_symlink() or not manifest.is_file() or manifest.stat().st_size > 1 << 24:
            return False
        return b'"memvault-export"' in manifest.read_bytes()
    except OSError:
        return False


def scrub_files(home: Path, text: str, report: ForgetReport, paths: list[Path] | None = None,
                apply: bool = True) -> None:
    """Rewrite each file under the home (but the database's own files) that holds the text,
    replacing it as the database did. Listed in `files_not_text`, never touched: a file that
    is not UTF-8 text (a backup copy), one that holds the text only in another encoding
    (UTF-16, Latin-1: a replacement there could not keep its bytes), and a file of an export
    kept inside the home (rewritten, it would no longer match its manifest's sha256, and
    restore would refuse the whole export)."""
    forgetting = Forgetting(text, apply=apply)
    targets = files_holding(home, text, skip_db=True) if paths is None else paths
    for path in targets:
        name = str(path.relative_to(home))
        if _export_of(path):
            report.files_not_text.append(f"{name} (a memvault export: delete it, or export "
                                         "again after the forget)")
            continue
        try:
            content = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            report.files_not_text.append(name)
            continue
        if not forgetting.occurrences(content):  # found only as UTF-16 or UTF-32 bytes
            report.files_not_text.append(name)
            continue
        if apply:
            _rewrite(path, forgetting.replace(content).encode("utf-8"))
        report.files.append(name)


def _rewrite(path: Path, data: bytes) -> None:
    """Replace `path` atomically (temp file beside it, same mode, fsync, rename)."""
    mode = stat.S_IMODE(path.lstat().st_mode)
    fd, tmp = tempfile.mkstemp(prefix=".forget-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
