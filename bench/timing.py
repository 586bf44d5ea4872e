"""The per-batch timing table the overhead benchmarks print."""

from __future__ import annotations

import statistics


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


def print_table(rows: list[tuple[str, list[float]]], unit: str = "batches") -> None:
    """One line a row: how many, median and p95 in milliseconds."""
    width = max(len(name) for name, _ in rows) + 2
    print(f"\n{'':{width}} {unit:>8} {'median ms':>10} {'p95 ms':>8}")
    for name, times in rows:
        print(f"{name:{width}} {len(times):>8} {statistics.median(times) * 1e3:>10.2f} "
              f"{p95(times) * 1e3:>8.2f}")
