"""`memvault replicate`: Litestream run in the foreground for one home, its log read for
what status shows, paused while a forget rewrites the file, stopped with the command.

One supervisor a home (a lock file); Litestream dies with it (Linux: PR_SET_PDEATHSIG), so a
killed supervisor leaves no replication running that status would not see.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..base.clock import Clock
from ..base.errors import InputError
from .litestream import NO_EXPAND, replica_dir, write_config
from .pause import pause_requested
from .state import HEARTBEAT_S, ReplicaState, stamp, write_state
from .target import ReplicaTarget

LOCK_FILE = "replicate.lock"
POLL_S = 0.2
STOP_WAIT_S = 30.0
_FIELD = re.compile(r'(\w[\w.]*)=("(?:[^"\\]|\\.)*"|\S+)')


def log_fields(line: str) -> dict[str, str]:
    """The key=value fields of one Litestream log line (values unquoted)."""
    return {key: value.strip('"') for key, value in _FIELD.findall(line)}


@dataclass
class Tracker:
    """The replication's state, updated from Litestream's log lines as they come."""

    clock: Clock
    state: ReplicaState
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_error: str | None = None

    def read_line(self, line: str) -> None:
        """Take one log line: a replica sync gives both positions; errors are kept."""
        fields = log_fields(line)
        if fields.get("level") == "ERROR":
            # shown by status while it lasts (a replica that refuses uploads: lag grows)
            self.last_error = fields.get("error") or fields.get("msg") or line.strip()
            self.update(reason=f"litestream: {self.last_error}"[:500])
        if fields.get("msg") != "replica sync":
            return
        try:
            replica, db = int(fields["txid.replica"], 16), int(fields["txid.db"], 16)
        except (KeyError, ValueError):
            return
        now = stamp(self.clock.now())
        with self.lock:
            s = self.state
            if replica >= db:
                self.state = s.with_(phase="running", db_txid=db, replica_txid=replica,
                                     last_sync_at=now, behind_since=None, reason=None)
            else:
                moved = s.last_sync_at if replica == s.replica_txid else now
                self.state = s.with_(phase="running", db_txid=db, replica_txid=replica,
                                     last_sync_at=moved, behind_since=s.behind_since or now)

    def update(self, **changes: object) -> ReplicaState:
        """Change the state (under the lock the log reader shares); the new state."""
        with self.lock:
            self.state = self.state.with_(**changes)
            return self.state


def hold_lock(home: Path) -> IO[str]:
    """The home's replication lock, held while this process lives; InputError when another
    `memvault replicate` holds it."""
    path = replica_dir(home) / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    handle = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = handle.read().strip() or "?"
        handle.close()
        raise InputError(f"memvault replicate already runs for this home (pid {other}): one "
                         "replication a home") from None
    handle.truncate(0)
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def _die_with_parent() -> None:
    """In the child before exec: Linux sends it SIGTERM when the supervisor dies."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_litestream(binary: str, config: Path, echo: Callable[[str], None],
                     tracker: Tracker) -> subprocess.Popen[str]:
    """Start `litestream replicate` on the config; a thread reads its log into `tracker`
    and passes what is not debug chatter to `echo`."""
    child = subprocess.Popen(
        [binary, "replicate", NO_EXPAND, "-config", str(config), "-log-level", "debug"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=_die_with_parent)

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            tracker.read_line(line)
            if "level=DEBUG" not in line:
                echo(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True, name="litestream-log").start()
    return child


def stop_litestream(child: subprocess.Popen[str] | None) -> None:
    """SIGTERM (Litestream finishes its sync and exits), then SIGKILL after STOP_WAIT_S."""
    if child is None or child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def supervise(home: Path, db_path: Path, target: ReplicaTarget, binary: str, clock: Clock,
              stop: threading.Event, echo: Callable[[str], None]) -> ReplicaState:
    """Replicate until `stop` is set or Litestream exits on its own; the final state."""
    config = write_config(home, db_path, target)
    now = stamp(clock.now())
    tracker = Tracker(clock, ReplicaState(target.url, os.getpid(), "starting", now, now))
    child: subprocess.Popen[str] | None = None
    last_beat = 0.0
    try:
        while not stop.is_set():
            paused = pause_requested(home)
            if paused and child is not None:
                stop_litestream(child)
                child = None
                tracker.update(phase="paused", reason=paused)
            elif not paused and child is None:
                # a new Litestream run (after a forget, a fresh replica): positions anew
                tracker.update(phase="starting", reason=None, db_txid=0, replica_txid=0,
                               behind_since=None)
                child = start_litestream(binary, config, echo, tracker)
            elif child is not None and child.poll() is not None:
                why = tracker.last_error or f"litestream exited with status {child.returncode}"
                return _final(home, tracker, clock, f"replication stopped: {why}")
            elapsed = clock.now().timestamp()
            if elapsed - last_beat >= HEARTBEAT_S or paused:
                last_beat = elapsed
                write_state(home, tracker.update(heartbeat_at=stamp(clock.now())))
            stop.wait(POLL_S)
    finally:
        stop_litestream(child)
    return _final(home, tracker, clock, "replication stopped: memvault replicate ended")


def _final(home: Path, tracker: Tracker, clock: Clock, reason: str) -> ReplicaState:
    state = tracker.update(phase="stopped", reason=reason, heartbeat_at=stamp(clock.now()))
    write_state(home, state)
    return state
