"""`memvault forget` leaves no byte of the text in the database's files, free pages included.

Rule (docs/spec.md 7, `memvault forget`; engine/home/forget.py `compact_database`): after
`memvault forget TEXT --yes` neither memory.db nor its WAL holds the text's bytes anywhere: not
in a live row, not in a page freed before the forget (with SQLite's `secure_delete` off, its
default unless built with SQLITE_SECURE_DELETE, freed pages keep what they held), not in an old
frame of the WAL.
The forget rebuilds the file (VACUUM) and folds the WAL into it, truncated to nothing.

The copies here are freed before the forget with `secure_delete` off: an object body of
16,000 chars (on overflow pages) edited down to one line, so its old pages sit on the
freelist. A second connection keeps the database open through the forget (as a running MCP
server or service would), so closing the command's own connection neither checkpoints nor
deletes the WAL: the files on disk are what the forget itself left.

What breaks this test (each mutation made in the engine, the test run and seen to fail, the
code restored):
- engine/home/forget.py `compact_database`: `conn.execute("VACUUM")` removed (the whole suite
  passed: where SQLite is built with SECURE_DELETE, as here, no other test leaves a freed page
  holding the text) ->
  test_a_text_freed_before_the_forget_leaves_no_byte_in_the_database_files;
- engine/home/forget.py `compact_database`: `wal_checkpoint(TRUNCATE)` changed to
  `wal_checkpoint(PASSIVE)` (the whole suite passed: the WAL is folded in but left full) ->
  the same test;
- engine/home/forget.py `compact_database`: the checkpoint removed (the file then still holds
  the old pages; test_forget.py's exit status catches it too) -> the same test.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from memvault.cli import main
from vault_support import open_memory, put_object

TEXT = "Oskar Lindqvist keeps the spare key"
LINE = f"- {TEXT} under the third flower pot by the shed.\n"
DB_FILES = ("memory.db", "memory.db-wal")


def byte_forms(text: str) -> list[bytes]:
    """The bytes SQLite may hold the text as: itself and its JSON-escaped forms, UTF-8."""
    return list({form.encode("utf-8") for form in
                 (text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1])})


def database_files_holding(home: Path, text: str) -> list[str]:
    """The database files (memory.db, its WAL) whose raw bytes hold a form of the text."""
    return [name for name in DB_FILES if (home / name).is_file()
            and any(form in (home / name).read_bytes() for form in byte_forms(text))]


def free_pages(home: Path) -> int:
    with sqlite3.connect(home / "memory.db") as conn:
        return int(conn.execute("PRAGMA freelist_count").fetchone()[0])


def seed_freed_copies(home: Path) -> None:
    """Objects whose long bodies held the text, then edited down, with secure_delete off:
    their old overflow pages go to the freelist with the text still in them."""
    with open_memory(home) as mem:
        mem.conn.execute("PRAGMA secure_delete = OFF")
        long_body = (LINE * (16_000 // len(LINE)))[:16_000]
        for slug in ("garden", "shed", "gate"):
            put_object(mem, f"knowledge:{slug}", slug.title(), body=long_body)
            put_object(mem, f"knowledge:{slug}", body="The spare key is with a neighbour.")


def test_a_text_freed_before_the_forget_leaves_no_byte_in_the_database_files(
    home: Path, runner: CliRunner,
) -> None:
    seed_freed_copies(home)
    assert free_pages(home) > 0
    assert database_files_holding(home, TEXT) == ["memory.db"]  # the seed reached the file
    keeper = sqlite3.connect(home / "memory.db")  # another process holding the database open
    try:
        keeper.execute("SELECT COUNT(*) FROM objects").fetchall()
        result = runner.invoke(main, ["forget", TEXT, "--yes", "--json"])
        assert database_files_holding(home, TEXT) == []
        assert (home / "memory.db-wal").stat().st_size == 0  # folded in and truncated
    finally:
        keeper.close()
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["residue"] == [] and report["check_ok"] and not report["checkpoint_busy"]
    assert list(report["places"]) == ["object_versions.body"]  # the live rows no longer held it
    assert free_pages(home) == 0  # the file was rebuilt
