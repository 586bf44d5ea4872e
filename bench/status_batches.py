"""What the `batches` part of memory_status costs on a long history.

    python bench/status_batches.py [--batches 200000] [--jobs 2000] [--repeat 50]

Builds a throwaway home with `--jobs` organize jobs (one in 50 partial) and `--batches`
committed batches among them (one in 5,000 terminal, one claimed and one retrying), then times
`batch_report` (what memory_status adds) beside the plain queries it replaces: a scan of every
batch for the claimed and terminal ones. Prints median and p95 in milliseconds. Nothing here
asserts a time.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from memvault import ManualClock, Memory
from memvault.jobs.progress import batch_report
from memvault.store.connection import write
from timing import print_table


def build(mem: Memory, batches: int, jobs: int) -> None:
    per_job = max(1, batches // jobs)
    with write(mem.conn):
        mem.conn.executemany(
            "INSERT INTO jobs (mode, origin, params, state, created_at)"
            " VALUES ('organize', 'hourly', '{}', ?, '2026-10-01T00:00:00+00:00')",
            [("partial" if j % 50 == 0 else "done",) for j in range(jobs)])
        rows = []
        for i in range(batches):
            terminal = i % 5_000 == 0
            rows.append((1 + min(i // per_job, jobs - 1), "terminal" if terminal else "committed",
                         json.dumps({"event_id": i, "page_start": 0, "page_end": 10}),
                         "provider down" if terminal else None, None))
        rows[-1] = (jobs, "claimed", rows[-1][2], None, None)
        rows[-2] = (jobs, "claimed", rows[-2][2], "refused", "2026-10-01T00:00:10+00:00")
        mem.conn.executemany(
            "INSERT INTO batches (job_id, state, claim, base_revision, claimed_at, error,"
            " next_attempt_at) VALUES (?, ?, ?, 0, '2026-10-01T00:00:00+00:00', ?, ?)", rows)


def plain(conn: sqlite3.Connection) -> None:
    """The straightforward queries: every batch scanned for claimed and terminal ones."""
    conn.execute("SELECT * FROM batches WHERE state = 'claimed' AND next_attempt_at IS NULL"
                 " ORDER BY id DESC LIMIT 1").fetchall()
    conn.execute("SELECT * FROM batches WHERE state = 'terminal' ORDER BY id DESC LIMIT 1"
                 ).fetchall()
    conn.execute("SELECT COUNT(*) FROM batches WHERE state = 'terminal'").fetchall()


def timed(fn: Callable[[sqlite3.Connection], object], conn: sqlite3.Connection,
          repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(conn)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=200_000)
    parser.add_argument("--jobs", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp) / "home", clock=ManualClock(datetime(2026, 10, 1, tzinfo=UTC)))
        build(mem, args.batches, args.jobs)
        print(f"{args.batches:,} batches in {args.jobs:,} jobs")
        print_table([("batch_report", timed(batch_report, mem.conn, args.repeat)),
                     ("plain scans", timed(plain, mem.conn, args.repeat))], unit="runs")
        mem.close()


if __name__ == "__main__":
    main()
