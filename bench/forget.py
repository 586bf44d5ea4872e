"""Forgetting and masking at scale: `memvault forget` and masked recall on a large home.

    python bench/forget.py [--n 100000] [--every 10000] [--repeat 5]

Builds a home of `--n` events (the bundled sample's texts, numbered), one in `--every` holding
a pasted password, indexed as ingest indexes them. Then measures, best of `--repeat`:
- status's secret pointer (the bounded scan of the newest events);
- `memvault find` answers masked (the default) against revealed, for three queries;
- a dry run of forget (counting every copy), then the forget itself (one transaction, FTS5
  optimize; every table read back; VACUUM and a TRUNCATE checkpoint), timed once.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault import Memory, NewEvent  # noqa: E402
from memvault.home.forget import (  # noqa: E402
    compact_database,
    copies_left,
    count_copies,
    forget_in_database,
    holding_lease,
)
from memvault.home.status import secret_pointer  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "engine" / "data" / "sample_events.jsonl"
SECRET = "Tr0ub4dor-and-3"
QUERIES = ("password", "张伟 后端", "meeting tomorrow")


def build(home: Path, n: int, every: int) -> None:
    texts = [json.loads(line)["text"] for line in SAMPLE.read_text("utf-8").splitlines()]
    with Memory.open(home) as mem:
        for start in range(0, n, 5_000):
            batch = []
            for i in range(start, min(n, start + 5_000)):
                text = f"{texts[i % len(texts)]} #{i}"
                if i % every == every // 2:
                    text += f" wifi password: {SECRET}"
                batch.append(NewEvent(text))
            mem.append_events(batch)


def best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        start = time.perf_counter()
        build(home, args.n, args.every)
        print(f"built {args.n:,} events in {time.perf_counter() - start:.1f} s")
        with Memory.open(home) as mem:
            pointer = best(args.repeat, lambda: secret_pointer(mem.conn))
            print(f"status secret pointer: {pointer:.1f} ms")
            for query in QUERIES:
                masked = best(args.repeat, lambda q=query: mem.find(q))
                shown = best(args.repeat, lambda q=query: mem.find(q, reveal=True))
                print(f"find {query!r}: masked {masked:.1f} ms, revealed {shown:.1f} ms")
            dry = best(args.repeat, lambda: count_copies(mem.conn, SECRET))
            copies = count_copies(mem.conn, SECRET).occurrences
            print(f"forget --dry-run: {dry:.1f} ms ({copies} copies)")
            start = time.perf_counter()
            now = mem.clock.now()
            with holding_lease(mem.conn, now, 360):
                forget_in_database(mem.conn, SECRET, now, "bench")
            middle = time.perf_counter()
            left = copies_left(mem.conn, SECRET)
            checked = time.perf_counter()
            compact_database(mem.conn)
            end = time.perf_counter()
            print(f"forget: database {1000 * (middle - start):.0f} ms, reading every table "
                  f"back {1000 * (checked - middle):.0f} ms ({left or 'no copy left'}), VACUUM"
                  f" + checkpoint {1000 * (end - checked):.0f} ms; file "
                  f"{(home / 'memory.db').stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
