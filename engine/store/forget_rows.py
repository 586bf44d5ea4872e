"""The replacement of a forgotten text in one table's columns: the one write that names its
table as an argument. Only a table's owner calls it, for its own table
(tests/test_architecture.py checks each call names a table its caller owns)."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..base.forgetting import Forgetting


def forget_in_rows(
    conn: sqlite3.Connection, forgetting: Forgetting, table: str, columns: tuple[str, ...],
    key: str = "rowid",
) -> list[tuple[Any, dict[str, str]]]:
    """Replace every copy of the forgotten text in `columns` of `table` (a dry run only
    counts); inside the caller's write transaction. Returns (key, {column: old value}) of each
    row that held a copy, for owners that must also fix what they derive from it.

    Only the module that owns `table` calls this, for its own columns (engine/home/forget.py).
    """
    clauses, params = zip(*(forgetting.sql_match(c) for c in columns), strict=True)
    rows = conn.execute(
        f"SELECT {key}, {', '.join(columns)} FROM {table} WHERE {' OR '.join(clauses)}",
        [p for group in params for p in group],
    ).fetchall()
    found = []
    for row in rows:
        old = {}
        for column, value in zip(columns, row[1:], strict=True):
            copies = forgetting.occurrences(value) if isinstance(value, str) else 0
            forgetting.note(f"{table}.{column}", row[0], copies)
            if copies:
                old[column] = value
        if not old:
            continue
        found.append((row[0], old))
        if forgetting.apply:
            conn.execute(
                f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in old)} WHERE {key} = ?",
                (*(forgetting.replace(v) for v in old.values()), row[0]),
            )
    return found

