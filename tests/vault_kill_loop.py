"""SIGKILL a projecting process again and again; no kill may fake a hand edit.

    python tests/vault_kill_loop.py --kills 50 --seed 3

Each generation forks a child that changes objects (and now and then AGENTS.md) and projects
the vault, over and over; after a seeded random delay the parent SIGKILLs it. The parent then
asks the watcher about every projected file and counts what it would report: any `hand_edit`,
`deleted` or `imported` is a false report (nobody edits this vault), as is any `.conflict` copy
on disk or any row in `vault_reports`. It also counts the kills that left a file renamed into
place but not recorded (its bytes match an open write intent, not the record): the window the
write intents close. After the last kill a final projection must leave no conflict, no report
and `check` clean. `run()` returns the counts for tests/test_vault_recovery.py.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from memvault.home.check import check_memory  # noqa: E402
from memvault.vault.files import read_file, sha256  # noqa: E402
from memvault.vault.watcher import VaultWatcher  # noqa: E402
from vault_support import START, open_memory, project, put_object  # noqa: E402

OBJECTS = 30
FALSE = ("hand_edit", "deleted", "imported")


def child(home: Path, seed: int, gen: int) -> None:
    """Change objects and project, forever (until killed)."""
    rng = random.Random(seed * 100_003 + gen)
    mem = open_memory(home, start=START + timedelta(days=gen))
    step = 0
    while True:
        for _ in range(rng.randint(1, 6)):
            put_object(mem, f"person:p{rng.randrange(OBJECTS):02d}",
                       summary=f"gen {gen} step {step} {rng.random():.6f}")
        if rng.random() < 0.3:
            mem.write_core_file("AGENTS.md", f"# Agents\n\ngen {gen} step {step}\n")
        project(mem)
        step += 1


def fork_and_kill(home: Path, seed: int, gen: int, delay: float) -> bool:
    """Fork a child, SIGKILL it after `delay` s; False when it had ended on its own."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        try:
            child(home, seed, gen)
        finally:
            os._exit(1)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def audit(home: Path, counts: Counter[str]) -> None:
    """What the watcher and the disk say after a kill (nothing here writes a file)."""
    with open_memory(home) as mem:
        vault = mem.config.vault_path
        rows = mem.conn.execute(
            "SELECT path, sha256 FROM projection UNION ALL SELECT path, sha256"
            " FROM projection_pages").fetchall()
        intents = {(r[0], r[1]) for r in mem.conn.execute(
            "SELECT path, sha256 FROM projection_intents")} if _has_intents(mem.conn) else set()
        unrecorded = 0
        for path, recorded in rows:
            data = read_file(vault / path)
            if data is not None and sha256(data) != recorded and (path, sha256(data)) in intents:
                unrecorded += 1
        counts["kills leaving a renamed file unrecorded"] += bool(unrecorded)
        watcher = VaultWatcher.for_config(mem.config, clock=mem.clock)
        for outcome in watcher.handle(mem.conn, [path for path, _ in rows]):
            counts[f"watcher {outcome.action}"] += 1
            counts["false reports"] += outcome.action in FALSE
        counts["conflict copies"] = sum(1 for p in vault.rglob("*") if ".conflict" in p.name)
        counts["vault_reports rows"] = mem.conn.execute(
            "SELECT COUNT(*) FROM vault_reports").fetchone()[0]


def _has_intents(conn: sqlite3.Connection) -> bool:
    """Whether the schema has write intents (so the loop can also measure older code)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'projection_intents'"
                        ).fetchone() is not None


def run(home: Path, kills: int = 50, seed: int = 3) -> Counter[str]:
    """`kills` generations, each audited; then a final projection and `check`."""
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    with open_memory(home) as mem:
        for i in range(OBJECTS):
            put_object(mem, f"person:p{i:02d}", f"P{i}")
        mem.write_core_file("AGENTS.md", "# Agents\n\nstart\n")
        project(mem)
    for gen in range(kills):
        # Most kills land in a run (a child opens in ~50 ms here); a spread covers every step.
        counts["killed"] += fork_and_kill(home, seed, gen, rng.uniform(0.03, 0.4))
        audit(home, counts)
    with open_memory(home) as mem:
        result = project(mem, rebuild=True)
        counts["final conflicts"] = len(result.conflicts)
        counts["final errors"] = len(result.errors)
        counts["check problems"] = len(check_memory(mem.conn, home=home)["problems"])
        origins = [r[0] for r in mem.conn.execute(
            "SELECT DISTINCT origin FROM core_files WHERE name = 'AGENTS.md'")]
        counts["core versions imported as hand edits"] = origins.count("hand")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        counts = run(Path(tmp) / "home", args.kills, args.seed)
    for key, value in sorted(counts.items()):
        print(f"{key:45} {value}")
    bad = counts["false reports"] + counts["conflict copies"] + counts["vault_reports rows"]
    return 1 if bad or counts["check problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
