"""How long `memvault migrate` takes on an old database of the original design, and what it adds.

    python bench/legacy_migration.py [--events 886] [--objects 29] [--seed 7]

Builds an old-shape database (tests/legacy_fixture.py's schema) at the original deployment's
scale by default (886 events, 29 objects): events of 1–3 parts, the oldest
~70% compacted under level-1 heads of eight nodes and level-2 heads of four, objects citing a few
events each, some relations, a running and a failed snapshot. Then migrates a copy and prints the
counts before and after beside the time taken; the baseline is a plain sqlite3 backup copy of
the same file (what migrating costs beyond copying it). The migrate time includes the read-only
preflight of the source, the copy, the one-transaction upgrade and indexing every event for
recall (most of it at scale).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from legacy_fixture import LEGACY_SCHEMA  # noqa: E402
from memvault import Memory  # noqa: E402

TYPES = ("person", "task", "todo", "knowledge", "project")


def build(path: Path, events: int, objects: int, seed: int) -> dict[str, int]:
    """Write the old database; return what it holds."""
    rng = random.Random(seed)
    conn = sqlite3.connect(path)
    nodes, position = 0, 0
    with conn:
        conn.executescript(LEGACY_SCHEMA)
        raws: list[str] = []
        for n in range(events):
            parts = rng.choice([1] * 8 + [2, 3])
            text = "".join(rng.choice(["和浩宇讨论进度。", "Remind Mei about the car. "])
                           for _ in range(60 * parts))[: 1900 * parts]
            conn.execute("INSERT INTO timeline VALUES (?, ?, ?, 'user', ?)",
                         (f"e{n}", f"2026-09-{1 + n * 29 // events:02d}T10:00:00+08:00",
                          "2026-10-01T10:00:00+08:00", text))
            size = -(-len(text) // parts)
            for part in range(parts):
                position += 1
                conn.execute("INSERT INTO hot_timeline VALUES (?, 'raw', ?, ?, ?, ?, NULL, 0, ?,"
                             " 1, '2026-10-01T10:00:00+08:00')",
                             (f"r{n}.{part}", f"e{n}", part, parts,
                              text[part * size:(part + 1) * size], position))
                raws.append(f"r{n}.{part}")
        old = raws[: len(raws) * 7 // 10 // 32 * 32]
        for h in range(0, len(old), 8):
            conn.execute("INSERT INTO hot_timeline VALUES (?, 'summary', NULL, NULL, NULL, ?,"
                         " ?, 1, ?, 0, '2026-10-02T10:00:00+08:00')",
                         (f"h{h}", f"heads {h}", f"g{h // 32}", h))
            conn.executemany("UPDATE hot_timeline SET active = 0, parent_id = ? WHERE id = ?",
                             [(f"h{h}", r) for r in old[h:h + 8]])
        for g in range(len(old) // 32):
            conn.execute("INSERT INTO hot_timeline VALUES (?, 'summary', NULL, NULL, NULL, ?,"
                         " NULL, 2, ?, 1, '2026-10-03T10:00:00+08:00')",
                         (f"g{g}", f"group {g}", g * 32))
        for o in range(objects):
            kind = TYPES[o % len(TYPES)]
            sources = [f"e{rng.randrange(events)}" for _ in range(3)]
            conn.execute("INSERT INTO memory_objects VALUES (?, ?, ?, '[]', 's', 'b', '[]',"
                         " 'active', 1, ?, '2026-10-01T10:00:00+08:00',"
                         " '2026-10-01T10:00:00+08:00')",
                         (f"{kind}:o{o}", kind, f"Object {o}", json.dumps(sources)))
            if o:
                conn.execute("INSERT INTO memory_relations VALUES (?, 'related_to', ?, 'x')",
                             (f"{kind}:o{o}", "person:o0"))
        conn.execute("INSERT INTO memory_snapshots VALUES (1, 1, 'memory', 'running', ?, 'x',"
                     " NULL, NULL)", (json.dumps({"node_ids": raws[-2:]}),))
        conn.execute("INSERT INTO memory_snapshots VALUES (2, 1, 'memory', 'failed', ?, 'x',"
                     " 'x', 'timeout')", (json.dumps({"event_ids": ["e0", "e1"]}),))
        nodes = conn.execute("SELECT COUNT(*) FROM hot_timeline").fetchone()[0]
    conn.close()
    return {"events": events, "nodes": nodes, "objects": objects}


def copy_seconds(source: Path, dest: Path) -> float:
    began = time.perf_counter()
    src, dst = sqlite3.connect(source), sqlite3.connect(dest)
    src.backup(dst)
    src.close()
    dst.close()
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=886)
    parser.add_argument("--objects", type=int, default=29)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memvault-legacy-") as tmp:
        old = Path(tmp) / "old.db"
        built = build(old, args.events, args.objects, args.seed)
        copied = copy_seconds(old, Path(tmp) / "copy.db")
        began = time.perf_counter()
        report = Memory.migrate(Path(tmp) / "home", source=old)
        migrated = time.perf_counter() - began
    before, after = report["before"], report["after"]
    print(f"old database: {built['events']:,} events, {built['nodes']:,} nodes, "
          f"{built['objects']} objects")
    print(f"\n{'':34}{'seconds':>10}")
    print(f"{'memvault migrate --from (all)':34}{migrated:>10.2f}")
    print(f"{'bare sqlite3 backup copy':34}{copied:>10.2f}")
    print(f"\nratio migrate/copy = {migrated / copied:.1f}x")
    print(f"\nbefore: {before['events']} events, {before['nodes']} nodes, {before['objects']} "
          f"objects, {before['sources']} sources")
    print(f"after:  {after['events']} events, {after['hot_nodes']} nodes "
          f"({after['active_nodes']} active), {after['objects']} objects (+ project:daily), "
          f"{after['evidence']} evidence, {after['pending']} pending, {after['blocked']} blocked")
    print(f"released {report['changes']['snapshots_released']} running snapshot(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
