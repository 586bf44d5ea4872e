"""Replication by Litestream: lag under a steady append rate, and a new home from the replica.

    python bench/replica.py [--n 100000] [--rate 20] [--seconds 20]

Builds a home of `--n` events (the bundled sample's texts, numbered) and runs `memvault
replicate` to a file:// replica. Lag: `--rate` appends a second for `--seconds`, each its own
transaction; an append's lag is the time until the first LTX file the replica receives after
it (Litestream ships every pending frame at each sync). Baseline: bare `litestream replicate`
of a plain SQLite table taking the same appends (what Litestream itself costs; memvault's
appends also index and write the hot timeline).

Restore: `memvault restore --from-replica` of the replica into a new home, beside `memvault
restore` of an export of the same home, and beside `litestream restore` alone (the floor).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault import Memory, NewEvent  # noqa: E402
from memvault.replica.litestream import find_binary  # noqa: E402
from memvault.replica.state import read_state  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "engine" / "data" / "sample_events.jsonl"
CLI = [sys.executable, "-c", "import sys; from memvault.cli import main; sys.exit(main())"]


def build(home: Path, n: int) -> None:
    texts = [json.loads(line)["text"] for line in SAMPLE.read_text("utf-8").splitlines()]
    with Memory.open(home) as mem:
        for start in range(0, n, 5_000):
            mem.append_events([NewEvent(f"{texts[i % len(texts)]} #{i}")
                               for i in range(start, min(n, start + 5_000))])


def wait(ready: Callable[[], bool], seconds: float = 600.0) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the replica")
        time.sleep(0.02)


def shipped(replica: Path) -> list[float]:
    """mtimes of the replica's level-0 LTX files (one a sync)."""
    folder = replica / "ltx" / "0"
    return sorted(p.stat().st_mtime for p in folder.glob("*.ltx")) if folder.is_dir() else []


def lags(appended: list[float], replica: Path) -> list[float]:
    """Each append's wait for the first sync after it (wall-clock times, same machine)."""
    times = shipped(replica)
    out = []
    for at in appended:
        later = [t for t in times if t >= at]
        if later:
            out.append(later[0] - at)
    return out


def steady(append: Callable[[int], None], rate: float, seconds: float) -> list[float]:
    """Append at `rate` a second for `seconds`; the wall-clock time of each commit."""
    stamps, step, began = [], 1.0 / rate, time.monotonic()
    for i in range(int(rate * seconds)):
        pause = began + i * step - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        append(i)
        stamps.append(time.time())
    return stamps


def memvault_lag(home: Path, replica: Path, rate: float, seconds: float) -> list[float]:
    child = subprocess.Popen([*CLI, "--home", str(home), "replicate", f"file://{replica}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        wait(lambda: (s := read_state(home)) is not None and s.last_sync_at is not None)
        with Memory.open(home) as mem:
            stamps = steady(lambda i: mem.append_event(f"steady append {i}"), rate, seconds)
        wait(lambda: bool(shipped(replica)) and shipped(replica)[-1] >= stamps[-1], 60)
        return lags(stamps, replica)
    finally:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(60)


def bare_lag(work: Path, rate: float, seconds: float) -> list[float]:
    db, replica = work / "bare.db", work / "bare-replica"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x TEXT)")
    child = subprocess.Popen([find_binary(), "replicate", str(db), f"file://{replica}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait(lambda: bool(shipped(replica)))
        stamps = steady(lambda i: conn.execute("INSERT INTO t VALUES (?)", (f"append {i}",)),
                        rate, seconds)
        wait(lambda: shipped(replica)[-1] >= stamps[-1], 60)
        return lags(stamps, replica)
    finally:
        child.terminate()
        child.wait(60)
        conn.close()


def timed(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - began


def summary(values: list[float]) -> str:
    if not values:
        return "no sync seen"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return (f"median {statistics.median(values):.2f} s, p95 {p95:.2f} s, "
            f"max {max(values):.2f} s ({len(values)} appends)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        home, replica = work / "home", work / "replica"
        began = time.perf_counter()
        build(home, args.n)
        print(f"built a home of {args.n:,} events in {time.perf_counter() - began:.1f} s")
        print(f"\nlag at {args.rate:g} appends/s for {args.seconds:g} s (sync-interval 1 s)")
        print(f"  memvault replicate:        {summary(memvault_lag(home, replica, args.rate, args.seconds))}")  # noqa: E501
        print(f"  bare litestream (baseline): {summary(bare_lag(work, args.rate, args.seconds))}")
        events = args.n + int(args.rate * args.seconds)
        print(f"\nrestore of {events:,} events")
        floor = timed([find_binary(), "restore", "-o", str(work / "floor.db"),
                       f"file://{replica}"])
        from_replica = timed([*CLI, "--home", str(work / "new"), "restore", "--from-replica",
                              f"file://{replica}"])
        timed([*CLI, "--home", str(home), "export", str(work / "export")])
        from_export = timed([*CLI, "--home", str(work / "again"), "restore",
                             str(work / "export")])
        print(f"  restore --from-replica:     {from_replica:.1f} s")
        print(f"  restore of an export:       {from_export:.1f} s")
        print(f"  litestream restore (floor): {floor:.1f} s")


if __name__ == "__main__":
    main()
