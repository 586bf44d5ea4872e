"""Small helpers shared by the tests (imported as `helpers`; pytest puts tests/ on sys.path)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from click.testing import CliRunner, Result

if TYPE_CHECKING:
    from memvault import Memory

CST = timezone(timedelta(hours=8))
T0 = datetime(2026, 10, 13, 12, 0, 0, tzinfo=CST)


def count(conn: sqlite3.Connection, table: str, where: str = "1=1") -> int:
    return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}").fetchone()[0]


def write_config(home: Path, text: str) -> Path:
    """Write memvault.toml into `home` (creating it) and return its path."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "memvault.toml"
    path.write_text(text, encoding="utf-8")
    return path


def run_cli(runner: CliRunner, *args: str, code: int = 0,
            input: bytes | str | None = None) -> Result:
    """Invoke memvault; fail on a traceback or an unexpected exit status."""
    from memvault.cli import main

    result = runner.invoke(main, list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"memvault {' '.join(args)} raised") from result.exception
    assert result.exit_code == code, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


def add_evidence(conn: sqlite3.Connection, object_id: str, event_id: int, start: int, end: int,
                 now: datetime, batch_id: int | None = None) -> bool:
    """Cite chars [start, end) of an event as evidence for an object; True if new (the one-item
    form of records.add_evidence_items, which the engine calls with a whole write's list)."""
    from memvault.objects.records import add_evidence_items

    return add_evidence_items(conn, [(object_id, event_id, start, end)], now, batch_id) > 0


def meetings_memory(home: Path) -> Memory:
    """A memory at 2026-10-13 04:00 UTC (a ManualClock) holding three short meeting notes: what
    the provider tests send a model."""
    from memvault import ManualClock, Memory

    memory = Memory.open(home, clock=ManualClock(datetime(2026, 10, 13, 4, 0,
                                                          tzinfo=UTC)))
    for i in range(3):
        memory.append_event(f"Meeting {i}: we agreed to ship the Aurora beta on Friday. " * 3)
    return memory
