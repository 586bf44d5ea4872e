"""The measures of disk use a feature takes of its own tables: rows and the bytes their
columns carry (`table_bytes`), pages per table (dbstat), the database file's size. Reads only;
the memory's disk use, part by part and space by space, is home/disk.py's `disk_usage`.
"""

from __future__ import annotations

import os
import sqlite3


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


def on_disk(conn: sqlite3.Connection) -> dict[str, int] | None:
    """Bytes of pages per table, its indexes folded in (None without SQLite's dbstat)."""
    try:
        rows = conn.execute(
            "SELECT COALESCE(m.tbl_name, s.name), SUM(s.pgsize) FROM dbstat s"
            " LEFT JOIN sqlite_schema m ON m.name = s.name GROUP BY 1").fetchall()
    except sqlite3.DatabaseError:
        return None
    return {name: size for name, size in rows}


def file_sizes(conn: sqlite3.Connection) -> dict[str, int | None]:
    path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]

    def size(name: str) -> int | None:
        return os.path.getsize(name) if name and os.path.exists(name) else None

    return {"db_file_bytes": size(path) if path else page_size * pages,
            "wal_file_bytes": size(path + "-wal") if path else None,
            "page_size": page_size, "pages": pages, "free_pages": free}
