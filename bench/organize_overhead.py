"""Engine time per organize commit with many existing objects, beside the bare SQL.

Builds a home with N objects (100,000 by default) and B pending events, then runs organize
batches through the real worker with a scripted model that answers instantly with a typical
proposal (two new objects, one update of an object sent in the claim, three relations, three
evidence links, linked). Reports per batch: the whole tick (recall-index upkeep, lease and claim
incl. finding related objects, prompt, loop, validation, commit with its ledger row) and the
commit transaction alone, beside the bare SQL statements of the same writes on a copy of the
database; medians, and means (which count the rare slow tick).

    python bench/organize_overhead.py [--objects 100000] [--batches 100]
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

import memvault.jobs.worker as worker_module
from memvault import ManualClock, Memory, NewEvent
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write
from timing import print_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from scripted_provider import ScriptedProvider, call  # noqa: E402 (the tests' fake provider)

T0 = datetime(2026, 10, 1, tzinfo=UTC)


def build_home(home: Path, objects: int, events: int) -> None:
    with Memory.open(home, clock=ManualClock(T0)) as mem:
        with write(mem.conn):
            for i in range(objects):
                save_object(mem.conn, ObjectRecord(
                    id=f"knowledge:fact-{i}", type="knowledge", name=f"topic{i} notes",
                    summary=f"fact number {i}", body=f"结论：第 {i} 条知识。"), T0)
        ids = mem.append_events(NewEvent(f"Remember that topic{i} notes matter; 张伟 said so.")
                                for i in range(events))
        with write(mem.conn):
            mem.conn.executemany(
                "INSERT INTO archive_queue (event_id, state, enqueued_at, updated_at)"
                " VALUES (?, 'pending', ?, ?)", [(i, T0.isoformat(), T0.isoformat()) for i in ids])
            mem.conn.execute("UPDATE hot_nodes SET active = 0")
        # Setup, not a tick's work: recall's index catches up with what was just built here
        # (the first ticks would otherwise index it all and skew the means).
        mem.sync_recall_index(max_events=None)


def proposal(payload: dict) -> dict:
    event = payload["event"]["id"]
    end = payload["page"]["end"]
    related = payload["related"][0] if payload["related"] else None
    objects = [
        {"id": f"person:p{event}", "name": f"P{event}", "summary": "a person",
         "body": "身份：unknown"},
        {"id": f"todo:t{event}", "name": f"todo {event}", "body": "状态：open"},
    ]
    if related:
        objects.append({**{k: related[k] for k in ("id", "name", "aliases", "summary", "cues")},
                        "body": related["body"] + f"\n更新 {event}"})
    return {
        "objects": objects,
        "relations": [{"src": f"todo:t{event}", "label": "about", "dst": f"person:p{event}"},
                      {"src": f"person:p{event}", "label": "knows", "dst": "knowledge:fact-0"},
                      {"src": f"todo:t{event}", "label": "related_to", "dst": "knowledge:fact-1"}],
        "evidence": [{"object_id": o["id"], "event_id": event, "start": 0, "end": end}
                     for o in objects],
        "events": [{"event_id": event, "outcome": "linked"}],
    }


def engine_batches(home: Path, batches: int) -> tuple[list[float], list[float], list[float]]:
    """Per batch: the tick's wall time, its CPU time (steadier on a busy machine) and the
    commit transaction's wall time."""
    commit_times: list[float] = []
    original = worker_module.commit_proposal

    def timed_commit(*args, **kwargs):
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            commit_times.append(time.perf_counter() - began)

    def answer(messages, tools, max_out):
        return call("commit_organize", proposal(json.loads(messages[1]["content"])))

    # The worker commits each proposal itself (one call, one transaction).
    worker_module.commit_proposal = timed_commit
    with Memory.open(home, clock=ManualClock(T0)) as mem:
        mem.organize()
        worker = mem.worker(ScriptedProvider([answer] * batches), scheduler=False)
        ticks, cpu = [], []
        for _ in range(batches):
            began, began_cpu = time.perf_counter(), time.process_time()
            result = worker.tick()
            ticks.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
            assert result.action == "committed", result
    return ticks, cpu, commit_times


def bare_batches(db: Path, batches: int) -> list[float]:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    times = []
    stamp = T0.isoformat()
    for b in range(1, batches + 1):
        began = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        for oid, name in ((f"person:p{b}", f"P{b}"), (f"todo:t{b}", f"todo {b}")):
            conn.execute("INSERT INTO objects (id, type, name, summary, body, created_at,"
                         " updated_at) VALUES (?, ?, ?, '', '', ?, ?)",
                         (oid, oid.split(":")[0], name, stamp, stamp))
            conn.execute("INSERT INTO object_versions (object_id, version, name, aliases, summary,"
                         " body, cues, status, changed_at) VALUES (?, 1, ?, '[]', '', '', '[]',"
                         " 'active', ?)", (oid, name, stamp))
        conn.execute("UPDATE objects SET body = body || 'x', version = version + 1 WHERE id = ?",
                     (f"knowledge:fact-{b}",))
        conn.execute("INSERT INTO object_versions (object_id, version, name, aliases, summary,"
                     " body, cues, status, changed_at) VALUES (?, 2, 'f', '[]', '', '', '[]',"
                     " 'active', ?)", (f"knowledge:fact-{b}", stamp))
        for src, label, dst in ((f"todo:t{b}", "about", f"person:p{b}"),
                                (f"person:p{b}", "knows", "knowledge:fact-0"),
                                (f"todo:t{b}", "related_to", "knowledge:fact-1")):
            conn.execute("INSERT INTO relations (src_id, label, dst_id, created_at)"
                         " VALUES (?, ?, ?, ?)", (src, label, dst, stamp))
        for oid in (f"person:p{b}", f"todo:t{b}", f"knowledge:fact-{b}"):
            conn.execute("INSERT INTO evidence (object_id, event_id, start_char, end_char,"
                         " created_at) VALUES (?, ?, 0, 10, ?)", (oid, b, stamp))
        conn.execute("UPDATE archive_queue SET state = 'linked', updated_at = ? WHERE event_id = ?",
                     (stamp, b))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - began)
    conn.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        began = time.perf_counter()
        build_home(home, args.objects, args.batches)
        print(f"built {args.objects:,} objects and {args.batches} pending events in "
              f"{time.perf_counter() - began:.1f} s")
        bare_db = Path(tmp) / "bare.db"
        shutil.copy(home / "memory.db", bare_db)
        ticks, cpu, commits = engine_batches(home, args.batches)
        bare = bare_batches(bare_db, args.batches)
    rows = [("engine tick (claim+prompt+loop+commit)", ticks), ("engine tick, CPU time", cpu),
            ("engine commit transaction", commits), ("bare SQL of the same writes", bare)]
    print_table(rows)
    bare_median, bare_mean = statistics.median(bare), statistics.fmean(bare)
    print(f"\nratio commit/bare (median): {statistics.median(commits) / bare_median:.1f}x"
          f"   tick/bare: {statistics.median(ticks) / bare_median:.1f}x")
    # The mean counts the rare slow tick too (e.g. the one that re-indexes the changed objects
    # of the batches before it for recall).
    print(f"ratio commit/bare (mean): {statistics.fmean(commits) / bare_mean:.1f}x"
          f"   tick/bare: {statistics.fmean(ticks) / bare_mean:.1f}x")


if __name__ == "__main__":
    main()
