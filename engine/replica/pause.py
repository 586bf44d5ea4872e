"""Replication stopped around a forget, and the replica made anew after it.

Litestream holds a read transaction on the database while it runs, so forget's TRUNCATE
checkpoint would wait on it, and the replica keeps older snapshots and LTX files that hold the
text. So a forget asks the running `memvault replicate` to stop Litestream (a pause file
naming its process), rewrites the home, then empties the replica and ships a fresh snapshot
of the rewritten file before replication resumes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..base.errors import StoreError
from .litestream import NO_EXPAND, REPLICA_DIR, drop_local_state, replica_dir, write_config
from .owner import MARKER
from .state import process_alive, read_state, view_state
from .target import ReplicaTarget

PAUSE_FILE = "pause"
PAUSE_WAIT_S = 60.0
SNAPSHOT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Renewal:
    """What forget did to the replica."""

    url: str
    emptied: bool  # older data removed now (file://); else Litestream's retention removes it
    snapshot: bool
    note: str


def pause_requested(home: Path) -> str | None:
    """Why replication should pause now: the reason in a pause file whose process lives."""
    path = home / REPLICA_DIR / PAUSE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        pid, reason = int(data["pid"]), str(data["reason"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return reason if process_alive(pid) else None


@contextmanager
def replication_paused(home: Path, now: datetime, reason: str,
                       wait_s: float = PAUSE_WAIT_S) -> Iterator[bool]:
    """Hold replication paused; yields whether a running `memvault replicate` was paused.
    StoreError (nothing changed) when it does not pause within `wait_s`."""
    path = replica_dir(home) / PAUSE_FILE
    tmp = path.with_name(f".{PAUSE_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"pid": os.getpid(), "reason": reason}, out)
    os.replace(tmp, path)
    try:
        state = read_state(home)
        running = state is not None and view_state(state, now).running
        if running:
            _wait_paused(home, wait_s)
        yield running
    finally:
        path.unlink(missing_ok=True)


def _wait_paused(home: Path, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        state = read_state(home)
        if state is None or state.phase in ("paused", "stopped") or not process_alive(state.pid):
            return
        time.sleep(0.1)
    raise StoreError(f"memvault replicate did not pause within {wait_s:.0f} s: stop it, then "
                     "run forget again (nothing was changed)")


def renew_replica(home: Path, db_path: Path, target: ReplicaTarget, binary: str) -> Renewal:
    """After a forget: Litestream's local copies removed, a file:// replica emptied (its
    owner marker kept), and one fresh snapshot of the rewritten database shipped."""
    drop_local_state(db_path)
    emptied = False
    if target.path is not None and target.path.is_dir():
        for entry in target.path.iterdir():
            if entry.name == MARKER:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        emptied = True
    config = write_config(home, db_path, target, name="snapshot.yml")
    done = subprocess.run([os.fspath(binary), "replicate", NO_EXPAND, "-config", str(config),
                           "-once",
                           "-force-snapshot", "-enforce-retention"],
                          capture_output=True, text=True, timeout=SNAPSHOT_TIMEOUT_S)
    config.unlink(missing_ok=True)
    if done.returncode != 0:
        raise StoreError(f"the fresh snapshot for {target.url} failed: "
                         f"{(done.stderr or done.stdout).strip()[-500:]}")
    note = ("older replica data removed; a fresh snapshot shipped" if emptied else
            "a fresh snapshot shipped; Litestream removes the older data that still holds the "
            "text when its retention passes (empty the replica by hand to remove it now)")
    return Renewal(target.url, emptied, True, note)
