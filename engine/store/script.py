"""Running a multi-statement SQL script inside the caller's transaction (for migrations)."""

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
