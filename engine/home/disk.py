"""Disk growth: how big the memory is and how fast it grows. Reads only.

Raw text is kept forever (events are immutable), so the rate that matters is events per day:
bytes of raw text ingested over the last 7 and 30 days (by ingested_at), per day. Object
versions and the audit tables (batches, receipts, model_calls) are the other growing parts.
Row bytes are the UTF-8 length of each row's columns (what the rows carry, before SQLite's page
overhead); on request, and when SQLite has the dbstat table, on-disk bytes per table (indexes
included) are added.

A client bound to a space gets the raw text, growth and object versions of the spaces it sees,
and nothing of the file (its size, pages, WAL) or the audit tables: those grow with every
space's activity, so they would tell it when another space is written.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from ..base.spaces import EVERY_SPACE, Spaces
from ..objects.records import version_bytes
from ..store.disk import file_sizes, on_disk, table_bytes
from ..timeline.events import raw_growth, raw_text_size

# The audit tables grow with every batch; their sizes are measured by name (table_bytes),
# which reads no row's content.
AUDIT_TABLES = ("batches", "receipts", "model_calls")


def disk_usage(
    conn: sqlite3.Connection, now: datetime | None = None, detailed: bool = False,
    spaces: Spaces = EVERY_SPACE,
) -> dict[str, Any]:
    """Sizes of raw text, object versions, audit tables and the file; raw growth per day.
    Bound to a space (`spaces`), the raw text, growth and object versions of what it sees
    only (see the module docstring).

    Scans events, object_versions and the audit tables once each. `detailed` adds on-disk bytes
    per table from dbstat, which reads every page of the file: not for every status call.
    """
    now = now or datetime.now(UTC)
    events = raw_text_size(conn, spaces)
    growth = {}
    for days in (7, 30):
        count, size = raw_growth(conn, now, days, spaces)
        growth[f"last_{days}d"] = {"events": count, "bytes": size,
                                   "bytes_per_day": round(size / days, 1)}
    versions = version_bytes(conn, spaces)
    report: dict[str, Any] = {
        "raw_text": {"events": events[0], "chars": events[1], "bytes": events[2]},
        "object_versions": versions,
        "growth": growth,
    }
    if spaces.bound is not None:
        return report
    audit = {table: table_bytes(conn, table) for table in AUDIT_TABLES}
    report["audit"] = {**audit, "total_bytes": sum(a["bytes"] for a in audit.values())}
    report.update(file_sizes(conn))
    on_disk_sizes = on_disk(conn) if detailed else None
    if on_disk_sizes is not None:
        keep = ("events", "hot_nodes", "object_versions", "objects", *AUDIT_TABLES)
        report["on_disk_bytes"] = {t: on_disk_sizes.get(t, 0) for t in keep}
    return report
