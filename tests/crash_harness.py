"""Crash-safety harness: SIGKILL a working memvault process again and again, then check the home.

    python tests/crash_harness.py --kills 200 --seed 7 [--home DIR] [--fresh 5] [--inject 0.03]

Each generation forks a child from this already-imported process (a few use a fresh
interpreter instead: `subprocess.Popen([sys.executable, this file, --child ...])`). The child
opens its own Memory and works (tests/crash_child.py: appends, ingests, requests jobs, runs worker
ticks with a scripted model). After a seeded random delay (most 0-25 ms or 25-80 ms, some up
to 200 ms, counted from when the child has opened the home, or for 15% of kills from its start)
the parent SIGKILLs it, so kills land while opening, ingesting, syncing the recall index,
claiming, building a prompt, calling the model and committing. The parent then reopens the home
read-only and checks every invariant of tests/crash_audit.py (the next child reopens it for
writing and must take over whatever the dead one left).

After the last kill the parent resumes the work in process (an explicit compact of the whole
timeline and an organize with retry_blocked, repeated at most three times) and checks that it
settles: every job finished, no raw node left hot, every event linked or archive_only, no claim
or lease left, memvault.home.check clean, and every invariant again over all batches.

The seed fixes the plan (delays, which generations use a fresh interpreter, every text, every
child's choices); where a kill lands still depends on timing, so a failing seed shows the same
workload, not necessarily the same kill points. Counts are printed as a table; `run()` returns
them for tests/test_crash_safety.py.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from crash_audit import Audit
from crash_child import (
    BOARD,
    CHILD_ERROR,
    GAP,
    PHASES,
    TXN_COMMITTING,
    TXN_OPEN,
    Board,
    HarnessModel,
    NullBoard,
    child_main,
    failure_kind,
    generation_start,
)
from memvault import ManualClock, Memory
from memvault.base.clock import iso
from memvault.jobs.worker import TickResult, Worker

# A fixed zone (the nightly deep review comes every 12 generations of 2 hours), a low compaction
# threshold (threshold jobs start within a few generations) and a short backoff (a failed batch
# is retried within one child's life: the manual clock moves 1 s per action).
CONFIG = """\
[time]
timezone = "Asia/Shanghai"
[compact]
threshold_tokens = 20000
[worker]
backoff_s = 1.0
"""


@dataclass
class Report:
    """What a run did and found; `problems` empty means every invariant held."""

    seed: int
    kills: int = 0
    fresh_kills: int = 0
    in_write_txn: int = 0  # killed between BEGIN and COMMIT
    in_commit: int = 0  # killed during COMMIT (or before the next statement)
    left_claim: int = 0  # killed holding a claimed, unfinished batch
    phases: Counter[str] = field(default_factory=Counter)
    early_exits: int = 0
    taken_over: dict[int, str] = field(default_factory=dict)  # abandoned batch -> final state
    counts: dict[str, int] = field(default_factory=dict)
    failures: Counter[str] = field(default_factory=Counter)  # failed batches by kind
    resume_rounds: int = 0
    resumed_ok: bool = False
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def prepare_home(home: Path) -> None:
    """Write the harness config and create the database (before any child exists)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "memvault.toml").write_text(CONFIG, encoding="utf-8")
    Memory.open(home, clock=ManualClock(generation_start(0))).close()


@dataclass
class Kill:
    """When one generation's child dies: `delay` seconds after it started (from_start: kills
    land while it opens the home) or after it opened the home; `fresh`: a new interpreter."""

    gen: int
    delay: float
    from_start: bool
    fresh: bool


def plan_kills(kills: int, seed: int, fresh: int) -> list[Kill]:
    """The seeded plan: delays very short, short, or long enough to reach later phases."""
    rng = random.Random(f"memvault-crash-plan:{seed}")
    fresh_gens = set(rng.sample(range(1, kills + 1), min(fresh, kills)))
    plan = []
    for gen in range(1, kills + 1):
        roll = rng.random()
        if roll < 0.45:
            delay = rng.uniform(0.0, 0.025)
        elif roll < 0.85:
            delay = rng.uniform(0.025, 0.08)
        else:
            delay = rng.uniform(0.08, 0.2)
        plan.append(Kill(gen, delay, rng.random() < 0.15, gen in fresh_gens))
    return plan


def fork_child(home: Path, seed: int, gen: int, inject: float) -> int:
    """Fork a child that lives (tests/crash_child.py) until killed; never returns in it."""
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        child_main(home, seed, gen, inject)
    except BaseException:  # report whatever ended the child early, then leave at once
        (home / CHILD_ERROR).write_text(traceback.format_exc(), encoding="utf-8")
        code = 1
    finally:
        os._exit(code)  # never run the parent's cleanup (pytest, atexit) in the child


def start_fresh(home: Path, seed: int, gen: int, inject: float) -> subprocess.Popen[bytes]:
    """Start a child in a new interpreter (tests/crash_harness.py --child GEN ...)."""
    return subprocess.Popen([sys.executable, __file__, "--child", str(gen), "--seed", str(seed),
                             "--home", str(home), "--inject", str(inject)])


def wait_until(board: Board, phases: tuple[str, ...], child: int | subprocess.Popen[bytes],
               seconds: float = 60.0) -> None:
    """Wait while the child is in one of `phases` (and alive, and not past `seconds`)."""
    deadline = time.monotonic() + seconds
    while board.read()[1] in phases and time.monotonic() < deadline:
        if isinstance(child, subprocess.Popen) and child.poll() is not None:
            return
        if isinstance(child, int) and os.waitid(  # ended? (left unreaped for kill())
                os.P_PID, child, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return
        time.sleep(0.0005)


def kill(child: int | subprocess.Popen[bytes]) -> bool:
    """SIGKILL the child and reap it; False when it had already ended on its own."""
    if isinstance(child, subprocess.Popen):
        child.kill()
        return child.wait() == -signal.SIGKILL
    os.kill(child, signal.SIGKILL)
    _, status = os.waitpid(child, 0)
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def one_generation(home: Path, kill_at: Kill, board: Board, report: Report,
                   inject: float) -> None:
    """Start a child, let it work, SIGKILL it as planned and note where it was."""
    board.reset()
    gen = kill_at.gen
    child: int | subprocess.Popen[bytes]
    if kill_at.fresh:
        child = start_fresh(home, report.seed, gen, inject)
        report.fresh_kills += 1
        wait_until(board, ("start",), child)  # the interpreter starts and imports the engine
    else:
        child = fork_child(home, report.seed, gen, inject)
    if not kill_at.from_start:
        wait_until(board, ("start", "open"), child)
    time.sleep(kill_at.delay)
    if not kill(child):
        report.early_exits += 1
        error = home / CHILD_ERROR
        detail = error.read_text(encoding="utf-8") if error.exists() else "no traceback"
        report.problems.append(f"child {gen} ended before its kill: {detail[-2000:]}")
    report.kills += 1
    txn, phase = board.read()
    report.phases[phase] += 1
    report.in_write_txn += txn == TXN_OPEN
    report.in_commit += txn == TXN_COMMITTING


def audit_generation(home: Path, gen: int, audit: Audit, report: Report) -> None:
    """Reopen the home after a kill, note an abandoned claim and check every invariant."""
    now = generation_start(gen) + GAP / 2
    with Memory.open(home, clock=ManualClock(now), readonly=True) as mem:
        abandoned = [row[0] for row in mem.conn.execute(  # claimed by this child, unfinished
            "SELECT id FROM batches WHERE state = 'claimed' AND next_attempt_at IS NULL"
            " AND julianday(claimed_at) >= julianday(?)", (iso(generation_start(gen)),))]
        report.left_claim += bool(abandoned)
        report.taken_over.update((batch_id, "claimed") for batch_id in abandoned)
        found = audit.check(mem.conn, now, since=generation_start(gen))
        report.problems += [f"after kill {gen}: {p}" for p in found]


def run(home: Path, kills: int = 200, seed: int = 7, fresh: int = 5,
        inject: float = 0.03) -> Report:
    """The whole harness on `home` (created; should be empty): kill, check, resume, check."""
    started = time.monotonic()
    report = Report(seed)
    prepare_home(home)
    board = Board(home / BOARD)
    audit = Audit(home, seed)
    for kill_at in plan_kills(kills, seed, fresh):
        one_generation(home, kill_at, board, report, inject)
        audit_generation(home, kill_at.gen, audit, report)
        if len(report.problems) > 50:
            break
    resume(home, kills + 1, audit, report)
    report.seconds = time.monotonic() - started
    return report


def unsettled(conn: sqlite3.Connection) -> list[str]:
    """What keeps the home from being settled (empty: all work done)."""
    checks = {
        "open jobs": "SELECT id FROM jobs WHERE state IN ('queued', 'running')",
        "claimed batches": "SELECT id FROM batches WHERE state = 'claimed'",
        "raw nodes still hot": "SELECT id FROM hot_nodes WHERE kind = 'raw' AND active = 1",
        "events not linked or archive_only": "SELECT e.id FROM events e LEFT JOIN archive_queue q"
            " ON q.event_id = e.id WHERE q.state IS NULL OR q.state NOT IN"
            " ('linked', 'archive_only')",
        "leases left": "SELECT holder FROM leases",
    }
    found = []
    for what, sql in checks.items():
        rows = [row[0] for row in conn.execute(sql)]
        if rows:
            found.append(f"{len(rows)} {what}: {rows[:10]}")
    return found


def drain(worker: Worker, clock: ManualClock, limit: int = 200_000) -> None:
    """Tick until no job is open (waiting out backoffs on the manual clock)."""
    conn = worker.mem.conn
    for _ in range(limit):
        result = worker.tick()
        clock.advance(seconds=1)
        if result.action in ("idle", "waiting", "busy"):
            if not conn.execute(
                    "SELECT 1 FROM jobs WHERE state IN ('queued', 'running')").fetchone():
                return
            clock.advance(seconds=60)


def resume(home: Path, gen: int, audit: Audit, report: Report) -> None:
    """Finish all work in process after the last kill; check it settles and every invariant."""
    clock = ManualClock(generation_start(gen))
    with Memory.open(home, clock=clock) as mem:
        model = HarnessModel(random.Random(f"memvault-crash-resume:{report.seed}"), NullBoard())

        def on_tick(result: TickResult) -> None:
            if result.action in ("failed", "terminal"):
                found = audit.failure(result.batch_id, failure_kind(result.error or ""))
                report.problems.extend(f"while resuming: {p}" for p in found)

        worker = Worker(mem, model, holder="resume", scheduler=True, on_tick=on_tick)
        for round_ in range(1, 4):
            mem.compact()
            mem.organize(retry_blocked=True)
            drain(worker, clock)
            report.resume_rounds = round_
            if not unsettled(mem.conn):
                break
        left = unsettled(mem.conn)
        found = audit.check(mem.conn, clock.now())
        report.problems += [f"after resume: {p}" for p in left + found]
        report.resumed_ok = not left and not found
        for batch_id in report.taken_over:
            report.taken_over[batch_id] = mem.conn.execute(
                "SELECT state FROM batches WHERE id = ?", (batch_id,)).fetchone()[0]
        report.counts = final_counts(mem.conn, audit)
        report.failures = audit.failures


def final_counts(conn: sqlite3.Connection, audit: Audit) -> dict[str, int]:
    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    events = one("SELECT COUNT(*) FROM events")
    counts = {
        "events acknowledged": len(audit.acked),
        "events found": events,
        "events committed, ack lost": events - len(audit.acked),
        "torn ack lines": audit.torn_acks,
        "jobs acknowledged": len(audit.acked_jobs),
        "receipts": one("SELECT COUNT(*) FROM receipts"),
        "model calls": one("SELECT COUNT(*) FROM model_calls"),
        "objects": one("SELECT COUNT(*) FROM objects"),
        "compact batches re-folding one head": one(
            "SELECT COUNT(*) FROM batches b JOIN hot_nodes n"
            " ON n.id = json_extract(b.claim, '$.node_ids[0]') WHERE b.state = 'committed'"
            " AND json_array_length(b.claim, '$.node_ids') = 1 AND n.kind = 'head'"),
    }
    for table in ("batches", "jobs"):
        for state, n in conn.execute(f"SELECT state, COUNT(*) FROM {table} GROUP BY state"):
            counts[f"{table} {state}"] = n
    for state, n in conn.execute("SELECT state, COUNT(*) FROM archive_queue GROUP BY state"):
        counts[f"events {state}"] = n
    return counts


def table(report: Report) -> str:
    """The counts as a two-column text table."""
    taken = Counter(report.taken_over.values())
    rows: list[tuple[str, object]] = [
        ("seed", report.seed),
        ("kills", report.kills),
        ("  in a fresh interpreter", report.fresh_kills),
        ("  inside an open write transaction", report.in_write_txn),
        ("  during / just after COMMIT", report.in_commit),
        ("  holding a claimed, unfinished batch", report.left_claim),
        *((f"  in phase {p}", report.phases[p]) for p in PHASES if report.phases[p]),
        ("children that ended before the kill", report.early_exits),
        ("abandoned batches later committed", taken["committed"]),
        ("abandoned batches later terminal", taken["terminal"]),
        *((f"batches failed: {kind[:40]}", n) for kind, n in sorted(report.failures.items())),
        *report.counts.items(),
        ("resume rounds", report.resume_rounds),
        ("resumed ok", report.resumed_ok),
        ("problems", len(report.problems)),
        ("wall seconds", f"{report.seconds:.1f}"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--home", type=Path, help="an empty directory (default: a temp dir)")
    parser.add_argument("--fresh", type=int, default=5,
                        help="kills whose child is a fresh interpreter")
    parser.add_argument("--inject", type=float, default=0.03,
                        help="share of model answers that are garbage / invalid")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)  # internal
    args = parser.parse_args(argv)
    if args.child is not None:
        child_main(args.home, args.seed, args.child, args.inject)
        return 0
    with tempfile.TemporaryDirectory(prefix="memvault-crash-") as tmp:
        report = run(args.home or Path(tmp) / "home", args.kills, args.seed, args.fresh,
                     args.inject)
    print(table(report))
    for line in report.problems:
        print("PROBLEM", line)
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
