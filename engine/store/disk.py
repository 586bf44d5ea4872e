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

import os
import sqlite3
from datetime import UTC, datetime
from typing import Any

from ..base.spaces import EVERY_SPACE, Spaces

AUDIT_TABLES = ("batches", "receipts", "model_calls")


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def table_bytes(conn: sqlite3.Connection, table: str, where: str = "1",
                args: tuple[str, ...] = ()) -> dict[str, int]:
    """Rows (those `where` holds for, with `args`) and the UTF-8 bytes their columns carry
    (numbers counted as their decimal text)."""
    cols = " + ".join(f"COALESCE(length(CAST(\"{c}\" AS BLOB)), 0)"
                      for c in _columns(conn, table))
    rows, size = conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM({cols}), 0) FROM {table} WHERE {where}", args).fetchone()
    return {"rows": rows, "bytes": size}


def _on_disk(conn: sqlite3.Connection) -> dict[str, int] | None:
    """Bytes of pages per table, its indexes folded in (None without SQLite's dbstat)."""
    try:
        rows = conn.execute(
            "SELECT COALESCE(m.tbl_name, s.name), SUM(s.pgsize) FROM dbstat s"
            " LEFT JOIN sqlite_schema m ON m.name = s.name GROUP BY 1").fetchall()
    except sqlite3.DatabaseError:
        return None
    return {name: size for name, size in rows}


def _files(conn: sqlite3.Connection) -> dict[str, int | None]:
    path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]

    def size(name: str) -> int | None:
        return os.path.getsize(name) if name and os.path.exists(name) else None

    return {"db_file_bytes": size(path) if path else page_size * pages,
            "wal_file_bytes": size(path + "-wal") if path else None,
            "page_size": page_size, "pages": pages, "free_pages": free}


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
    seen, args = spaces.sql("space")
    events = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(chars), 0), COALESCE(SUM(length(CAST(text AS BLOB))), 0)"
        f" FROM events WHERE {seen}", args).fetchone()
    growth = {}
    for days in (7, 30):
        count, size = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(length(CAST(text AS BLOB))), 0) FROM events"
            " WHERE julianday(ingested_at) > julianday(?) - ? AND julianday(ingested_at)"
            f" <= julianday(?) AND {seen}", (now.isoformat(), days, now.isoformat(), *args)
        ).fetchone()
        growth[f"last_{days}d"] = {"events": count, "bytes": size,
                                   "bytes_per_day": round(size / days, 1)}
    of_seen = ("1" if spaces.bound is None
               else f"object_id IN (SELECT id FROM objects WHERE {seen})")
    versions = table_bytes(conn, "object_versions", of_seen, args)
    report: dict[str, Any] = {
        "raw_text": {"events": events[0], "chars": events[1], "bytes": events[2]},
        "object_versions": versions,
        "growth": growth,
    }
    if spaces.bound is not None:
        return report
    audit = {table: table_bytes(conn, table) for table in AUDIT_TABLES}
    report["audit"] = {**audit, "total_bytes": sum(a["bytes"] for a in audit.values())}
    report.update(_files(conn))
    on_disk = _on_disk(conn) if detailed else None
    if on_disk is not None:
        keep = ("events", "hot_nodes", "object_versions", "objects", *AUDIT_TABLES)
        report["on_disk_bytes"] = {t: on_disk.get(t, 0) for t in keep}
    return report
