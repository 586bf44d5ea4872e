"""How long a rebuild of the recall index takes on a home that already holds N events: what
migrations m010_recall_date_mentions and m015_recall_more_date_forms (date tokens in event
text) cost an existing home, e.g. the 1M-event database bench/recall.py builds:

    python bench/recall.py --skip locomo,memorybank,ingest --db /tmp/scale.db
    python bench/recall_migration.py /tmp/scale.db

Works on a copy of the file (never the one given); prints the time, events/s and the progress
reports the migration made. Timings are wall-clock on this machine; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault.home.migrations import open_home_db  # noqa: E402
from memvault.recall.schema import rebuild_events_index  # noqa: E402
from memvault.store.connection import write  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("db", help="a memory.db to copy and re-index")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memvault-rebuild-") as folder:
        copy = Path(folder) / "memory.db"
        shutil.copyfile(args.db, copy)
        conn = open_home_db(copy)
        reports: list[tuple[float, int, int]] = []
        start = time.perf_counter()

        def progress(done: int, total: int) -> None:
            reports.append((time.perf_counter() - start, done, total))

        with write(conn):
            done = rebuild_events_index(conn, progress)
        took = time.perf_counter() - start
        conn.close()
    print(f"rebuilt the recall index of {done:,} events in {took:.1f} s "
          f"({done / max(took, 1e-9):,.0f} events/s), {len(reports)} progress reports")
    for seconds, count, total in reports[:: max(1, len(reports) // 5)]:
        print(f"  {seconds:6.1f} s  {count:,}/{total:,}")


if __name__ == "__main__":
    main()
