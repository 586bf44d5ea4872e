"""Export and restore at scale: what `memvault restore` costs beside a plain replay.

    python bench/restore.py [--n 100000] [--repeat 1]

Builds a home of `--n` events (the bundled sample's texts, numbered), indexed as ingest
indexes them, exports it (`memvault export`), then restores the export into a new home, timing
each step of the restore apart: loading the rows (every row checked as ingest checks it), the
recall index, and `memvault check`. Baseline: a plain replay of the same database's
`sqlite3 .dump` (`iterdump`, index tables and all) into a new file, the floor a restore that
checks nothing and analyses no text could reach.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault import Memory, NewEvent  # noqa: E402
from memvault.home import restore as restore_module  # noqa: E402
from memvault.home.export import export_home  # noqa: E402
from memvault.home.restore import restore_home  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "engine" / "data" / "sample_events.jsonl"


def build(home: Path, n: int) -> None:
    texts = [json.loads(line)["text"] for line in SAMPLE.read_text("utf-8").splitlines()]
    with Memory.open(home) as mem:
        for start in range(0, n, 5_000):
            mem.append_events([NewEvent(f"{texts[i % len(texts)]} #{i}")
                               for i in range(start, min(n, start + 5_000))])


def replay(source: Path, target: Path) -> float | None:
    """Seconds the sqlite3 shell takes to replay `source`'s `.dump` into a new database at
    `target` (None without the shell); the dump is written first, untimed."""
    shell = shutil.which("sqlite3")
    if shell is None:
        return None
    dump = target.with_suffix(".sql")
    with dump.open("wb") as out:
        subprocess.run([shell, str(source), ".dump"], stdout=out, check=True)
    began, cpu = time.perf_counter(), _children_cpu()
    with dump.open("rb") as script:
        subprocess.run([shell, str(target)], stdin=script, check=True)
    REPLAY_CPU.append(_children_cpu() - cpu)
    return time.perf_counter() - began


REPLAY_CPU: list[float] = []  # the CPU seconds of each replay (the shell's, user + system)


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def restore_steps(export: Path, home: Path) -> dict[str, float]:
    """Seconds of each step of one restore into a new home at `home`."""
    steps: dict[str, float] = {}
    real_check = restore_module.check_memory

    def timed_check(*args: object, **kwargs: object) -> object:
        steps["rows + index"] = time.perf_counter() - began
        start = time.perf_counter()
        try:
            return real_check(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            steps["check"] = time.perf_counter() - start

    with Memory.open(home) as mem:
        restore_module.check_memory = timed_check  # type: ignore[assignment]
        real_sync = mem.sync_recall_index

        def timed_sync(*args: object, **kwargs: object) -> object:
            steps["rows"] = time.perf_counter() - began
            return real_sync(*args, **kwargs)  # type: ignore[arg-type]

        mem.sync_recall_index = timed_sync  # type: ignore[method-assign]
        try:
            began, cpu = time.perf_counter(), time.process_time()
            restore_home(mem, export)
            steps["total"] = time.perf_counter() - began
            steps["total CPU"] = time.process_time() - cpu
        finally:
            restore_module.check_memory = real_check
    steps["index"] = steps.get("rows + index", steps["total"]) - steps.get("rows", 0.0)
    steps.pop("rows + index", None)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memvault-restore-") as folder:
        root = Path(folder)
        began = time.perf_counter()
        build(root / "source", args.n)
        built = time.perf_counter() - began
        with Memory.open(root / "source") as mem:
            began = time.perf_counter()
            export_home(mem, root / "export", mem.clock.now())
            exported = time.perf_counter() - began
        runs = [restore_steps(root / "export", root / f"restored-{i}")
                for i in range(args.repeat)]
        best = min(runs, key=lambda r: r["total"])
        floors = [replay(root / "source" / "memory.db", root / f"replay-{i}.db")
                  for i in range(args.repeat)]
        floor = min((f for f in floors if f is not None), default=None)
    print(f"\n## restore of {args.n:,} events (best of {args.repeat})\n")
    print("| step | seconds | x replay |")
    print("|---|---|---|")
    for name, seconds in [("build (append_events)", built), ("export", exported),
                          ("restore: rows", best.get("rows", 0.0)),
                          ("restore: recall index", best["index"]),
                          ("restore: check", best.get("check", 0.0)),
                          ("restore: total", best["total"]),
                          ("baseline: sqlite3 .dump replay", floor)]:
        if seconds is None:
            print(f"| {name} | skipped: no sqlite3 shell here | |")
        else:
            times = f"{seconds / floor:.1f}" if floor else "-"
            print(f"| {name} | {seconds:.2f} | {times} |")
    if floor is not None and REPLAY_CPU:
        replay_cpu = min(REPLAY_CPU)
        print(f"\nCPU: restore {best['total CPU']:.2f} s, replay {replay_cpu:.2f} s "
              f"({best['total CPU'] / replay_cpu:.1f}x)")


if __name__ == "__main__":
    main()
