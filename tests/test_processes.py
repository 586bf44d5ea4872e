"""PROCESS TESTS (real subprocesses, real clock, real sleeps; each well under 20 s).

1. Two worker processes on one home never run a batch twice: every batch is committed exactly
   once, by one of them, and every receipt is unique.
2. A worker process SIGKILLed in the middle of a batch: after its lease expires a new worker
   re-claims the batch and commits it; nothing is lost or duplicated.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from helpers import count, write_config
from memvault import Memory
from memvault.jobs.worker import Worker
from modes_support import archive, queue_row
from scripted_provider import ScriptedProvider, call

REPO = Path(__file__).resolve().parents[1]

WORKER_SCRIPT = r"""
import json, sys, time
from memvault import Memory
from tests.scripted_provider import ScriptedProvider, call
from memvault.jobs.worker import Worker

home, name, deadline, nap = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
in_call = sys.argv[5] if len(sys.argv) > 5 else None  # a file made once inside a model call

def step(messages, tools, max_out):
    data = json.loads(messages[1]["content"])
    if in_call:
        open(in_call, "w").close()
    time.sleep(nap)
    if data["mode"] == "compact":
        return call("commit_compaction",
                    {"node_ids": [n["id"] for n in data["nodes"]], "summary": "s"})
    return call("commit_organize", {"events": [{
        "event_id": data["event"]["id"], "outcome": "archive_only", "reason": name}]})

mem = Memory.open(home)
worker = Worker(mem, ScriptedProvider([step] * 200), holder=name, scheduler=False)
ran = []
print("started", flush=True)
while time.time() < deadline:
    result = worker.tick()
    if result.action == "committed":
        ran.append(result.batch_id)
    left = mem.conn.execute(
        "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')").fetchone()[0]
    if left == 0:
        break
    if result.action in ("idle", "waiting"):
        time.sleep(0.02)
print(json.dumps(ran), flush=True)
"""


def start_worker(home: Path, name: str, seconds: float, nap: float,
                 in_call: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER_SCRIPT, str(home), name, str(time.time() + seconds),
         str(nap), *([str(in_call)] if in_call else [])],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_process_two_workers_on_one_home_never_double_run_a_batch(home: Path) -> None:
    write_config(home, "[compact]\nnodes_per_batch = 2\n")
    with Memory.open(home) as mem:
        hot = [mem.append_event(f"hot message {i}: the team agreed on the plan, in detail")
               for i in range(6)]
        queued = [mem.append_event(f"queued message {i}") for i in range(8)]
        archive(mem, queued)
        mem.compact((1, 6))
        mem.organize()
    procs = [start_worker(home, f"proc-{i}", 15, 0.3) for i in range(2)]
    outputs = [p.communicate(timeout=25) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    ran = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]

    with Memory.open(home) as mem:
        conn = mem.conn
        assert count(conn, "jobs", "state IN ('queued', 'running')") == 0
        batches = conn.execute("SELECT id, state, failures FROM batches").fetchall()
        receipts = conn.execute("SELECT token, batch_id, receipt FROM receipts").fetchall()
        # Each process's committed batches are disjoint; together they are all the batches.
        assert not set(ran[0]) & set(ran[1])
        assert sorted(ran[0] + ran[1]) == sorted(b["id"] for b in batches)
        assert all((b["state"], b["failures"]) == ("committed", 0) for b in batches)
        assert len(receipts) == len(batches) == len({r["batch_id"] for r in receipts})
        assert len({r["token"] for r in receipts}) == len(receipts)
        # Every hot node was covered once; every queued event was organized exactly once.
        assert count(conn, "hot_nodes", f"event_id IN ({','.join(map(str, hot))})"
                     " AND (active = 1 OR parent_id IS NULL)") == 0
        organized = [json.loads(r["receipt"])["event_id"] for r in receipts
                     if json.loads(r["receipt"])["mode"] == "organize"]
        assert len(organized) == len(set(organized))
        assert set(queued) <= set(organized)
        assert all(queue_row(conn, e)["state"] == "archive_only" for e in queued)
        assert count(conn, "events") == 14


def test_process_sigkilled_worker_is_taken_over_after_its_lease_expires(home: Path) -> None:
    write_config(home, "[batch]\ntimeout_s = 5\n[worker]\nlease_extra_s = 10\n")
    with Memory.open(home) as mem:
        ids = [mem.append_event(f"note {i}: remember the dentist appointment") for i in range(2)]
        archive(mem, ids)
        job_id = mem.organize()["job_id"]

    in_call = home.parent / "doomed-in-call"
    doomed = start_worker(home, "doomed", 60, 60, in_call)  # its model "thinks" for a minute
    deadline = time.time() + 10
    while not in_call.exists():  # the file says: inside the model call, its batch claimed
        assert time.time() < deadline and doomed.poll() is None, "never reached the model"
        time.sleep(0.05)
    with Memory.open(home) as watcher:
        held = watcher.conn.execute("SELECT holder FROM leases").fetchone()
        assert held is not None and held[0] == "doomed"
        (claimed_id,) = watcher.conn.execute(
            "SELECT id FROM batches WHERE state = 'claimed'").fetchone()
    doomed.kill()  # SIGKILL inside the model call: no finally, no lease release
    doomed.wait(timeout=10)
    killed_at = time.time()

    with Memory.open(home) as mem:
        assert mem.conn.execute("SELECT holder FROM leases").fetchone()[0] == "doomed"
        failures_seen: list[int] = []

        def step(messages, tools, max_out):
            data = json.loads(messages[1]["content"])
            row = mem.conn.execute("SELECT failures FROM batches WHERE id = ?",
                                   (claimed_id,)).fetchone()
            failures_seen.append(row[0])
            return call("commit_organize", {"events": [{
                "event_id": data["event"]["id"], "outcome": "archive_only",
                "reason": "a reminder already handled"}]})

        worker = Worker(mem, ScriptedProvider([step] * 4), holder="rescuer", scheduler=False)
        actions = []
        while time.time() < killed_at + 18:
            result = worker.tick()
            actions.append((result.action, result.batch_id))
            if mem.conn.execute("SELECT state FROM jobs WHERE id = ?",
                                (job_id,)).fetchone()[0] == "done":
                break
            if result.action in ("waiting", "idle"):
                time.sleep(0.1)
        assert ("waiting", None) in actions  # the dead worker's lease was respected
        done = [a for a in actions if a[0] == "committed"]
        assert done[0] == ("committed", claimed_id)  # the same batch, re-claimed
        assert failures_seen[0] == 1  # the abandoned claim counted as a failed claim
        assert len(done) == 2

        conn = mem.conn
        assert count(conn, "events") == 2
        receipts = conn.execute("SELECT token, batch_id FROM receipts").fetchall()
        assert len(receipts) == 2 and len({r[0] for r in receipts}) == 2
        assert all(queue_row(conn, e)["state"] == "archive_only" for e in ids)
        assert count(conn, "batches") == 2
        assert count(conn, "batches", "state = 'committed'") == 2
        assert count(conn, "model_calls", "provider = 'scripted'") == 2  # the killed call left none
