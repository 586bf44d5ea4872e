"""Schema text run inside the caller's transaction: a migration's multi-statement script, and
the value lists its CHECK constraints are written with."""

from __future__ import annotations

import sqlite3


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run a multi-statement script inside the caller's transaction.

    sqlite3's executescript() would COMMIT first, breaking a migration's single transaction.
    """
    for statement in _statements(script):
        conn.execute(statement)


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (trigger bodies kept whole)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out



def sql_in(values: tuple[str, ...]) -> str:
    """A CHECK's value list, `('a', 'b')`, for schema text (values are the schema's own
    constants, never input)."""
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"
