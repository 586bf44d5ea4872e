"""memory_find's cpu time per query at scale, this checkout against an older revision, on the
same database and queries, in alternating rounds (on a machine others load, the load drifts:
rounds that alternate see it alike).

    python bench/recall.py --skip locomo,memorybank,ingest --db /tmp/scale.db   # build once
    python bench/recall_ab.py /tmp/scale.db --rev HEAD~3 --rounds 3

The older revision is exported with `git archive` into a temporary folder and imported as
`memvault` from there in its own process; each process reads every query once to warm up, then
times each query's cpu (process_time) and returns the times. Answers are compared too (the
same hits in the same order, unless ranking changed). Prints p50/p95/mean per side,
overall and for each `--kind` asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a child process: imports `memvault` from sys.argv[1] (a folder holding it), times
# every query of sys.argv[3] (a JSON list) against the database sys.argv[2], opened as open_db
# opens it read-only but without its migration check: the older revision refuses a database
# this checkout migrated further, though the tables it reads are the same.
_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import memvault
from memvault.recall.query import memory_find
from memvault.store.connection import connect
from pathlib import Path
queries = json.loads(Path(sys.argv[3]).read_text(encoding="utf-8"))
conn = connect(Path(sys.argv[2]), readonly=True)
for q in queries:
    memory_find(conn, q)
took, answers = [], []
for q in queries:
    start = time.process_time()
    hits = memory_find(conn, q)["hits"]
    took.append(time.process_time() - start)
    answers.append([[h["kind"], h["id"]] for h in hits])
print(json.dumps({"from": memvault.__file__, "took": took, "answers": answers}))
"""


def export(rev: str, folder: Path) -> Path:
    """`rev`'s engine/ as an importable `memvault` package under `folder`; the folder to put
    on sys.path."""
    archive = folder / "rev.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, "engine"],
                   check=True, timeout=120)
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "tree", filter="data")
    (folder / "path").mkdir()
    (folder / "path" / "memvault").symlink_to(folder / "tree" / "engine")
    return folder / "path"


def run_side(path: str, db: str, queries: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, path, db, str(queries)],
                         capture_output=True, text=True, check=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def pct(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] * 1000


def main() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from recall import DATA, Synth, scale_queries, source_texts

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("db", help="a memory.db built by bench/recall.py --db")
    parser.add_argument("--rev", required=True, help="the older git revision")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=40, help="queries per kind")
    parser.add_argument("--locomo", default=str(DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--memorybank", default=str(DATA / "memorybank"))
    parser.add_argument("--kind", action="append", default=[],
                        help="also report this query kind alone (repeatable), e.g."
                             " 'question naming a date'")
    args = parser.parse_args()
    en, cn = source_texts(Path(args.locomo), Path(args.memorybank))
    kinds = scale_queries(Path(args.locomo), Path(args.memorybank), Synth(en, cn, 0.2, seed=3),
                          args.queries)
    queries = [q for qs in kinds.values() for q in qs]
    kind_of = [k for k, qs in kinds.items() for _ in qs]
    for kind in set(args.kind) - set(kinds):
        parser.error(f"no query kind {kind!r}; the kinds: {', '.join(kinds)}")
    with tempfile.TemporaryDirectory(prefix="memvault-ab-") as folder:
        listed = Path(folder) / "queries.json"
        listed.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
        sides = {args.rev: str(export(args.rev, Path(folder))), "this checkout": str(ROOT)}
        took: dict[str, list[float]] = {name: [] for name in sides}
        answers: dict[str, list] = {}
        origin: dict[str, str] = {}
        for _ in range(args.rounds):
            for name, path in sides.items():
                result = run_side(path, args.db, listed)
                took[name] += result["took"]
                answers[name] = result["answers"]
                origin[name] = str(Path(result["from"]).parent)
    same = sum(a == b for a, b in zip(*answers.values(), strict=True))
    load = os.getloadavg()[0]
    print(f"{len(queries)} queries x {args.rounds} rounds; same answers for {same}/"
          f"{len(queries)}; load average {load:.1f}")
    for name, values in took.items():
        print(f"  {name:>14}: cpu p50 {pct(values, 50):5.1f} ms  p95 {pct(values, 95):5.1f} ms"
              f"  mean {sum(values) / len(values) * 1000:5.1f} ms  (memvault from {origin[name]})")
    for kind in args.kind:
        print(f"{kind}:")
        for name, values in took.items():
            alone = [v for i, v in enumerate(values) if kind_of[i % len(queries)] == kind]
            print(f"  {name:>14}: cpu p50 {pct(alone, 50):5.1f} ms  p95 {pct(alone, 95):5.1f} ms"
                  f"  mean {sum(alone) / max(len(alone), 1) * 1000:5.1f} ms")


if __name__ == "__main__":
    main()
