"""CPU seconds of a local model server, beside the engine's own (Linux /proc; elsewhere None).

A bench that runs organize on a local model reports both: the engine's process CPU
(`time.process_time`) and the server's (its utime + stime, children included), so "organize
is slow" says whose time it is. The server is found by `--server-pid`, or as the process
listening on the base URL's 127.0.0.1 port.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

PROC = Path("/proc")


def process_cpu_s(pid: int) -> float | None:
    """utime + stime (and its waited-for children's) of `pid` in seconds; None if unknown."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    ticks = sum(int(v) for v in fields[11:15])  # utime stime cutime cstime (fields 14-17)
    return ticks / os.sysconf("SC_CLK_TCK")


def listening_pid(base_url: str) -> int | None:
    """The process listening on a local base URL's port (what a user started by hand)."""
    url = urlparse(base_url)
    if url.hostname not in ("127.0.0.1", "localhost", "::1") or url.port is None:
        return None
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            rows = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) \
                    == url.port:
                inodes.add(f"socket:[{cols[9]}]")
    for proc in PROC.glob("[0-9]*"):
        try:
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                return int(proc.name)
        except OSError:  # another user's process, or gone meanwhile
            continue
    return None


class ServerCpu:
    """CPU seconds a server spent between `start()` and `seconds()`."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.began = process_cpu_s(pid) if pid else None

    def seconds(self) -> float | None:
        now = process_cpu_s(self.pid) if self.pid else None
        return None if now is None or self.began is None else now - self.began
