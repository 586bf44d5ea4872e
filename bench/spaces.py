"""Spaces at scale: how fast is memory_find bound to a space, beside unbound, at 1,000,000 events?

    python bench/spaces.py --db /tmp/spaces-scale.db            # 1,000,000 events (built once)
    python bench/spaces.py --events 50000 --objects 1000 --queries 10   # quick, in a temp dir

The memory is bench/recall.py's scale memory (section 4: synthetic LoCoMo and MemoryBank turns,
10,000 objects), built when the file holds fewer events. Its events and objects are then dealt
round-robin into three spaces (work, home, shared), once: events are immutable, so this
benchmark lifts the immutability trigger on ITS OWN database for that one UPDATE and puts it
back (a home never does this; give it a copy, never a real home). Each query is asked
unbound and bound to work, interleaved, after a warm-up; every bound hit is checked to be of
work or shared. The target: p95 under 20 ms bound, as unbound is (bench/README.md).
Timings are wall-clock and CPU time on this machine; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from memvault.base.spaces import Spaces  # noqa: E402
from memvault.home.migrations import open_home_db  # noqa: E402
from memvault.recall.index import sync_index  # noqa: E402
from memvault.recall.masking import mark_objects  # noqa: E402
from memvault.recall.query import memory_find  # noqa: E402
from memvault.store.connection import write  # noqa: E402
from recall import DATA, Synth, _ms, build_scale, scale_queries, source_texts, table  # noqa: E402

SPACES = ("work", "home", "shared")


def deal_spaces(path: Path) -> float:
    """Deal events and objects round-robin into SPACES (once); the seconds it took."""
    conn = open_home_db(path)  # applies the spaces migrations to an older scale memory
    if conn.execute("SELECT 1 FROM events WHERE space != 'shared' LIMIT 1").fetchone():
        conn.close()
        return 0.0
    start = time.perf_counter()
    trigger = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'"
                           " AND name = 'events_no_update'").fetchone()[0]
    deal = "CASE {0} % 3 WHEN 0 THEN 'work' WHEN 1 THEN 'home' ELSE 'shared' END"
    with write(conn):
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute(f"UPDATE events SET space = {deal.format('id')}")
        conn.execute(trigger)
        conn.execute(f"UPDATE objects SET space = {deal.format('rowid')}"
                     " WHERE id != 'project:daily'")
        conn.execute("UPDATE hot_nodes SET space = (SELECT space FROM events"
                     " WHERE events.id = hot_nodes.event_id) WHERE event_id IS NOT NULL")
        sync_index(conn)  # the objects' UPDATE marked each one for the recall index again
        mark_objects(conn, None)  # and for its secret marks (as `memvault reindex` does)
    conn.close()
    return time.perf_counter() - start


def outside(conn: object, answer: dict, spaces: Spaces) -> int:
    """Hits of `answer` of a space `spaces` does not see (must be 0)."""
    bad = 0
    for hit in answer["hits"]:
        table_ = "events" if hit["kind"] == "event" else "objects"
        space = conn.execute(f"SELECT space FROM {table_} WHERE id = ?",  # type: ignore[attr-defined]
                             (hit["id"],)).fetchone()[0]
        bad += not spaces.sees(space)
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default=None,
                        help="the scale memory (built when missing; default: a temporary one)")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=40, help="queries per kind")
    parser.add_argument("--locomo", default=str(DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--memorybank", default=str(DATA / "memorybank"))
    parser.add_argument("--cjk-share", type=float, default=0.3)
    args = parser.parse_args()
    path = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "spaces.db"
    en, cn = source_texts(Path(args.locomo), Path(args.memorybank))
    synth = Synth(en, cn, args.cjk_share, seed=3)
    start = time.perf_counter()
    build_scale(path, synth, args.events, args.objects)
    built = time.perf_counter() - start
    dealt = deal_spaces(path)
    conn = open_home_db(path, readonly=True)
    counts = dict(conn.execute("SELECT space, count(*) FROM events GROUP BY space").fetchall())
    print(f"memory: {sum(counts.values()):,} events ({counts}), built/migrated in {built:.0f} s,"
          f" spaces dealt in {dealt:.0f} s")
    kinds = scale_queries(Path(args.locomo), Path(args.memorybank), synth, args.queries)
    work = Spaces("work")
    for query in [q for qs in kinds.values() for q in qs][:50]:  # warm the page cache
        memory_find(conn, query)
        memory_find(conn, query, spaces=work)
    rows, every = [], {"unbound": ([], []), "work": ([], [])}
    leaked = 0
    for kind, queries in kinds.items():
        took: dict[str, tuple[list[float], list[float]]] = {"unbound": ([], []), "work": ([], [])}
        for query in queries:
            for name, spaces in (("unbound", Spaces()), ("work", work)):
                start, start_cpu = time.perf_counter(), time.process_time()
                answer = memory_find(conn, query, spaces=spaces)
                took[name][0].append(time.perf_counter() - start)
                took[name][1].append(time.process_time() - start_cpu)
                if name == "work":
                    leaked += outside(conn, answer, work)
        for name in took:
            every[name][0].extend(took[name][0])
            every[name][1].extend(took[name][1])
        rows.append([kind, len(queries), _ms(took["unbound"][0], 95),
                     _ms(took["unbound"][1], 95), _ms(took["work"][0], 50),
                     _ms(took["work"][0], 95), _ms(took["work"][1], 95)])
    rows.append(["all", len(every["work"][0]), _ms(every["unbound"][0], 95),
                 _ms(every["unbound"][1], 95), _ms(every["work"][0], 50),
                 _ms(every["work"][0], 95), _ms(every["work"][1], 95)])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    table(f"memory_find latency (ms) at {sum(counts.values()):,} events, unbound vs bound to "
          f"work ({os.cpu_count()} CPUs, load average {load:.1f}); hits outside work+shared: "
          f"{leaked}", ["query kind", "n", "unbound wall p95", "unbound cpu p95",
                        "work wall p50", "work wall p95", "work cpu p95"], rows)
    conn.close()


if __name__ == "__main__":
    main()
