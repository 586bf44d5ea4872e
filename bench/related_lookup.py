"""The related objects of one organize claim (organize.related_objects: the name-index lookup of
what the page names, its order, the rows read and the byte budget), this checkout against an
older revision, on the same home and pages, in alternating rounds.

The home: N knowledge objects ("topic{i} notes", as bench/organize_overhead.py builds), K todos
sharing the alias "garden plan" and K more sharing "花园计划", and two people. The pages: one
naming a person beside the shared English alias, its Chinese variant, one naming a single
object (organize_overhead's events), and an 8,000-char page naming ~600 objects. Each side
times every page `--repeat` times in its own process (cpu, process_time) after a warm-up, and
returns the related ids, compared across sides (the order is what changed, so a page whose
list differs is reported, not refused).

    python bench/related_lookup.py --rev HEAD~1 [--objects 20000] [--shared 250] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from memvault import ManualClock, Memory
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write
from recall_ab import export

T0 = datetime(2026, 10, 1, tzinfo=UTC)
PAGES = {
    "person beside a shared alias": "Marcus Lee walked me through the garden plan this morning.",
    "Chinese person beside a shared alias": "今天静姐把花园计划发给我了，陈静说周五前定。",
    "one object named": "Remember that topic17 notes matter; 张伟 said so.",
    "8,000 chars naming ~600 objects": " ".join(f"topic{i} notes," for i in range(0, 2400, 4)
                                                )[:8000],
}

# Run in a child process: imports `memvault` from sys.argv[1] (a folder holding it, or "" for
# the installed one), times related_objects for each page of sys.argv[3] against the home
# database sys.argv[2], sys.argv[4] times each.
_CHILD = """
import json, sys, time
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
import memvault
from memvault.jobs.modes.organize import related_objects
from memvault.store.connection import open_db
from pathlib import Path
pages = json.loads(Path(sys.argv[3]).read_text(encoding="utf-8"))
conn = open_db(Path(sys.argv[2]), readonly=True)
took, related = {}, {}
for label, text in pages.items():
    related[label] = [o["id"] for o in related_objects(conn, 1, text, 92_000)]
    took[label] = []
    for _ in range(int(sys.argv[4])):
        start = time.process_time()
        related_objects(conn, 1, text, 92_000)
        took[label].append(time.process_time() - start)
print(json.dumps({"from": memvault.__file__, "took": took, "related": related}))
"""


def build_home(home: Path, objects: int, shared: int) -> None:
    """The home the docstring describes, with one event (the claims' event id)."""
    with Memory.open(home, clock=ManualClock(T0)) as mem, write(mem.conn):
        for i in range(objects):
            save_object(mem.conn, ObjectRecord(
                id=f"knowledge:fact-{i}", type="knowledge", name=f"topic{i} notes",
                summary=f"fact number {i}", body=f"结论：第 {i} 条知识。"), T0)
        for i in range(shared):
            for alias, kind in (("garden plan", "en"), ("花园计划", "zh")):
                save_object(mem.conn, ObjectRecord(
                    id=f"todo:{kind}-tray-{i}", type="todo", name=f"Seed tray {kind} {i}",
                    aliases=[alias], body="状态：open"), T0)
        for object_id, name, aliases in (("person:marcus-lee", "Marcus Lee", ["Marcus"]),
                                         ("person:chen-jing", "陈静", ["静姐"])):
            save_object(mem.conn, ObjectRecord(id=object_id, type="person", name=name,
                                               aliases=aliases), T0)
    with Memory.open(home, clock=ManualClock(T0)) as mem:
        mem.append_event("the claim's event")


def run_side(path: str, db: Path, pages: Path, repeat: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, path, str(db), str(pages), str(repeat)],
                         capture_output=True, text=True, check=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", required=True, help="the older git revision")
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--shared", type=int, default=250, help="todos sharing each alias")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=30, help="timings per page and round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memvault-related-") as folder:
        home = Path(folder) / "home"
        build_home(home, args.objects, args.shared)
        listed = Path(folder) / "pages.json"
        listed.write_text(json.dumps(PAGES, ensure_ascii=False), encoding="utf-8")
        sides = {args.rev: str(export(args.rev, Path(folder))), "this checkout": ""}
        took: dict[str, dict[str, list[float]]] = {name: {p: [] for p in PAGES} for name in sides}
        related: dict[str, dict[str, list[str]]] = {}
        for _ in range(args.rounds):
            for name, path in sides.items():
                result = run_side(path, home / "memory.db", listed, args.repeat)
                for label, times in result["took"].items():
                    took[name][label] += times
                related[name] = result["related"]
    print(f"{args.objects:,} objects, {args.shared} todos per shared alias; {args.rounds} rounds"
          f" x {args.repeat}; load average {os.getloadavg()[0]:.1f}; cpu ms median (p95)")
    for label in PAGES:
        print(f"{label}:")
        for name in sides:
            times = sorted(took[name][label])
            ids = related[name][label]
            person = next((i for i, o in enumerate(ids) if o.startswith("person:")), None)
            print(f"  {name:>14}: {statistics.median(times) * 1e3:6.2f} "
                  f"({times[int(len(times) * 0.95) - 1] * 1e3:6.2f})  {len(ids)} related,"
                  f" first person at {person}")


if __name__ == "__main__":
    main()
