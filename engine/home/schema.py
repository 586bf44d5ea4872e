"""The home's own schema: the forget audit (home/forget_audit.py writes it)."""

from __future__ import annotations

import sqlite3

from ..store.script import run_script


def m009_forget_audit(conn: sqlite3.Connection) -> None:
    """The forget audit: one row per `memvault forget`, without the text."""
    run_script(
        conn,
        """
        CREATE TABLE forget_audit (
            id           INTEGER PRIMARY KEY,
            forgotten_at TEXT    NOT NULL,
            who          TEXT    NOT NULL,          -- the OS user who ran it
            occurrences  INTEGER NOT NULL,          -- copies replaced in the database
            places       TEXT    NOT NULL,          -- JSON {"events.text": 2, ...}
            files        INTEGER NOT NULL DEFAULT 0 -- files under the home rewritten
        );
        """,
    )
