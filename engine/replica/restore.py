"""`memvault restore --from-replica URL`: a new home from a replica, validated as a restore of
an export is.

Litestream restores the database (at `--timestamp`, if given) into a private folder in the
new home; PRAGMA integrity_check must say ok; Litestream's own tables are dropped; the copy is
exported and that export restored into the home by `memvault restore`'s own code (every row
checked, every id, space and key kept, the recall index rebuilt, `check` run). The folder is
removed whatever happens. The caller renders the vault afresh.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import tempfile
from datetime import UTC
from pathlib import Path
from typing import Any

from ..base.clock import parse_time
from ..base.errors import InputError, StoreError
from ..home.export import export_home
from ..home.memory import Memory
from ..home.restore import restore_home
from .litestream import NO_EXPAND, config_text
from .target import ReplicaTarget

RESTORE_TIMEOUT_S = 3_600.0
LITESTREAM_TABLES = "_litestream_*"


def litestream_timestamp(text: str) -> str:
    """An ISO 8601 time as Litestream takes it (RFC 3339, UTC); InputError if it is none."""
    try:
        when = parse_time(text)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def restore_from_replica(memory: Memory, target: ReplicaTarget, binary: str,
                         timestamp: str | None = None) -> dict[str, Any]:
    """Fill this new, empty home from the replica; `restore_home`'s report plus the source."""
    work = Path(tempfile.mkdtemp(prefix=".from-replica-", dir=memory.config.home))
    try:
        copy = work / "home" / "memory.db"
        copy.parent.mkdir(mode=0o700)
        _litestream_restore(binary, target, copy, timestamp)
        _check_copy(copy)
        with Memory.open(copy.parent, clock=memory.clock) as source:
            export_home(source, work / "export", memory.clock.now())
        report = restore_home(memory, work / "export")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["config_in_export"] = None  # the export was ours, and is gone
    report["replica"] = {"url": target.url, "timestamp": timestamp}
    return report


def _litestream_restore(binary: str, target: ReplicaTarget, out: Path,
                        timestamp: str | None) -> None:
    """Litestream restores the replica to `out`: by its URL, or, for an sftp:// replica with
    a key file, through a config beside `out` naming the key (a URL cannot carry it)."""
    command = [binary, "restore", NO_EXPAND, "-o", str(out)]
    if timestamp is not None:
        command += ["-timestamp", litestream_timestamp(timestamp)]
    if target.key_path is not None:
        config = out.with_name("restore.yml")
        config.write_text(config_text(out, target), encoding="utf-8")
        config.chmod(0o600)
        command += ["-config", str(config), str(out)]
    else:
        command.append(target.url)
    done = subprocess.run(command, capture_output=True, text=True, timeout=RESTORE_TIMEOUT_S)
    if done.returncode != 0 or not out.is_file():
        said = (done.stderr or done.stdout).strip().splitlines()
        raise InputError(f"Litestream could not restore {target.url}: "
                         f"{said[-1] if said else 'no database'}; nothing was written")


def _check_copy(copy: Path) -> None:
    """integrity_check of the restored file; Litestream's bookkeeping tables dropped."""
    conn = sqlite3.connect(copy, isolation_level=None)
    try:
        verdict = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if verdict != ["ok"]:
            raise StoreError(f"the database restored from the replica fails integrity_check "
                             f"({'; '.join(verdict[:5])}); nothing was written")
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB ?",
            (LITESTREAM_TABLES,))]
        for name in names:
            conn.execute(f'DROP TABLE "{name}"')
    finally:
        conn.close()
