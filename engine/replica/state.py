"""What `memvault replicate` last said about its replication, for `memvault status`: one
0600 JSON file in the home's replica/ folder, replaced whole (a reader sees the old or the
new state, never half of one), written at least every HEARTBEAT_S while it runs."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

from ..base.clock import iso, parse_time
from .litestream import REPLICA_DIR, replica_dir

STATE_FILE = "state.json"
HEARTBEAT_S = 2.0
# A running state not renewed for this long: the process is stuck or gone.
STALE_S = 30.0

Phase = Literal["starting", "running", "paused", "stopped"]


@dataclass(frozen=True)
class ReplicaState:
    """The replication of one home as its supervisor sees it. Times are ISO 8601 text.

    `db_txid` is the newest transaction Litestream read from the WAL, `replica_txid` the
    newest it shipped; `behind_since` is when the replica last fell behind (None: caught up).
    """

    url: str
    pid: int
    phase: Phase
    started_at: str
    heartbeat_at: str
    db_txid: int = 0
    replica_txid: int = 0
    last_sync_at: str | None = None
    behind_since: str | None = None
    reason: str | None = None  # why it paused or stopped

    def with_(self, **changes: object) -> ReplicaState:
        """A copy with `changes` (dataclasses.replace, typed loosely for brevity)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ReplicaView:
    """What status shows: the replica, its last sync, its lag, and whether it stopped."""

    url: str
    phase: str
    running: bool
    last_sync_at: str | None
    lag_s: float | None
    db_txid: int
    replica_txid: int
    note: str | None


def state_path(home: Path) -> Path:
    """Where the state file of `home` is."""
    return home / REPLICA_DIR / STATE_FILE


def write_state(home: Path, state: ReplicaState) -> None:
    """Replace the state file (0600, written aside, renamed into place)."""
    path = replica_dir(home) / STATE_FILE
    tmp = path.with_name(f".{STATE_FILE}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(asdict(state), out)
    os.replace(tmp, path)


def read_state(home: Path) -> ReplicaState | None:
    """The last state written, or None (never replicated, or a file that is not one)."""
    path = state_path(home)
    try:
        if path.is_symlink():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return ReplicaState(**data)
    except (OSError, ValueError, TypeError):
        return None


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def view_state(state: ReplicaState, now: datetime) -> ReplicaView:
    """The state as status shows it: a running state whose process is gone or silent reads
    stopped, and says so."""
    beat = (now - parse_time(state.heartbeat_at)).total_seconds()
    live = state.phase in ("starting", "running", "paused")
    note = state.reason
    if live and not process_alive(state.pid):
        live, note = False, f"memvault replicate (pid {state.pid}) is gone: replication stopped"
    elif live and beat > STALE_S:
        live, note = False, (f"memvault replicate (pid {state.pid}) has said nothing for "
                             f"{beat:.0f} s: replication may have stopped")
    phase = state.phase if live else "stopped"
    lag: float | None = None
    if live and state.behind_since is not None:
        lag = max(0.0, (now - parse_time(state.behind_since)).total_seconds())
    elif live and state.last_sync_at is not None:
        lag = 0.0
    return ReplicaView(state.url, phase, live, state.last_sync_at, lag, state.db_txid,
                       state.replica_txid, note)


def replica_status(home: Path, now: datetime) -> dict[str, object] | None:
    """The replica's part of `memvault status`, or None for a home never replicated."""
    state = read_state(home)
    if state is None:
        return None
    return asdict(view_state(state, now))


def stamp(now: datetime) -> str:
    """A time as the state file holds it (ISO 8601)."""
    return iso(now)
