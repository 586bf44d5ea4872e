"""The engine's own time per compact batch on a large timeline, beside the bare SQL.

Builds a home with N one-fragment events (100,000 hot nodes by default), then runs compact
batches through the real worker with a scripted model that answers instantly (so the model
costs nothing), and times, per batch: the whole tick (recall-index check, lease and claim in
one transaction, prompt, loop, validation, the commit transaction with its ledger row and the
lease given back) against the bare SQL statements of the same commit (insert head, deactivate
8 nodes, enqueue 8 events) run on a copy. Medians, and means (which count the rare slow tick).
Times are CPU time (time.process_time): the machine running it is often shared, and wall time
then measures the neighbours. Last, the SQL statements of one more tick, per transaction
(conn.set_trace_callback), beside those of the bare commit.

    python bench/batch_overhead.py [--nodes 100000] [--batches 1000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from memvault import ManualClock, Memory, NewEvent
from timing import print_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from scripted_provider import ScriptedProvider, call  # noqa: E402 (the tests' fake provider)


def build_home(home: Path, nodes: int) -> None:
    clock = ManualClock(datetime(2026, 10, 1, tzinfo=UTC))
    with Memory.open(home, clock=clock) as mem:
        for start in range(0, nodes, 5_000):
            mem.append_events(NewEvent(f"turn {i}: we talked about the Aurora sync API and "
                                       f"the Lighthouse runners, item {i}.")
                              for i in range(start, min(nodes, start + 5_000)))
        # Setup, not a tick's work: recall's index catches up with what was just built here
        # (the first ticks would otherwise index it all and skew the means).
        mem.sync_recall_index(max_events=None)


def engine_batches(home: Path, batches: int) -> tuple[list[float], list[str]]:
    """CPU time of each tick, and the statements of one more (untimed) tick."""
    def answer(messages, tools, max_out):
        ids = [n["id"] for n in json.loads(messages[1]["content"])["nodes"]]
        return call("commit_compaction", {"node_ids": ids, "summary": f"s{ids[0]}"})

    clock = ManualClock(datetime(2026, 10, 2, tzinfo=UTC))
    with Memory.open(home, clock=clock) as mem:
        mem.compact((1, (batches + 1) * 8))
        worker = mem.worker(ScriptedProvider([answer] * (batches + 2)), scheduler=False)
        times = []
        for _ in range(batches):
            began = time.process_time()
            result = worker.tick()
            times.append(time.process_time() - began)
            assert result.action == "committed", result
        statements: list[str] = []
        mem.conn.set_trace_callback(statements.append)
        assert worker.tick().action == "committed"
        mem.conn.set_trace_callback(None)
        return times, statements


def bare_batches(db: Path, batches: int) -> tuple[list[float], list[str]]:
    """CPU time of each bare commit, and the statements of the last one."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    times = []
    statements: list[str] = []
    for b in range(batches):
        if b == batches - 1:
            conn.set_trace_callback(statements.append)
        ids = list(range(b * 8 + 1, b * 8 + 9))
        marks = ",".join("?" * 8)
        began = time.process_time()
        conn.execute("BEGIN IMMEDIATE")
        head = conn.execute(
            "INSERT INTO hot_nodes (kind, level, seq, summary, chars, est_tokens, first_at,"
            " last_at, created_at) VALUES ('head', 1, ?, 's', 1, 1, 'a', 'b', 'c')",
            (ids[0],)).lastrowid
        conn.execute(f"UPDATE hot_nodes SET active = 0, parent_id = ? WHERE id IN ({marks})",
                     (head, *ids))
        conn.executemany("INSERT OR IGNORE INTO archive_queue (event_id, state, enqueued_at,"
                         " updated_at) VALUES (?, 'pending', 'a', 'a')", [(i,) for i in ids])
        conn.execute("COMMIT")
        times.append(time.process_time() - began)
    conn.close()
    return times, statements


def per_transaction(statements: list[str]) -> list[int]:
    """Statements per transaction (BEGIN..COMMIT, counted with both), and those outside any."""
    counts, current, inside = [0], 0, False
    for sql in statements:
        word = sql.split(None, 1)[0].upper()
        if word == "BEGIN":
            inside, current = True, 1
        elif inside:
            current += 1
            if word in ("COMMIT", "ROLLBACK"):
                counts.append(current)
                inside = False
        else:
            counts[0] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=1_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        began = time.perf_counter()
        build_home(home, args.nodes)
        print(f"built {args.nodes:,} hot nodes in {time.perf_counter() - began:.1f} s")
        bare_db = Path(tmp) / "bare.db"
        shutil.copy(home / "memory.db", bare_db)
        engine, engine_sql = engine_batches(home, args.batches)
        bare, bare_sql = bare_batches(bare_db, args.batches)
    rows = [("engine (tick: claim+loop+commit)", engine), ("bare SQL of the commit", bare)]
    print("\nCPU time (time.process_time)")
    print_table(rows)
    for name, sql in (("engine tick", engine_sql), ("bare commit", bare_sql)):
        outside, *transactions = per_transaction(sql)
        print(f"{name}: {len(sql)} statements ({outside} outside transactions; per transaction,"
              f" BEGIN and COMMIT included: {', '.join(map(str, transactions))})")
    ratio = statistics.median(engine) / statistics.median(bare)
    mean_ratio = statistics.fmean(engine) / statistics.fmean(bare)
    print(f"\nratio engine/bare (median): {ratio:.1f}x   (mean): {mean_ratio:.1f}x")
    # A job's ticks must stay flat: a claim that re-reads the job's own heads grows with it.
    tenth = max(1, len(engine) // 10)
    first, last = statistics.median(engine[:tenth]), statistics.median(engine[-tenth:])
    print(f"tick median, first {tenth} batches {first * 1e3:.2f} ms, last {tenth} "
          f"{last * 1e3:.2f} ms: {last / first:.2f}x")


if __name__ == "__main__":
    main()
