"""New events are indexed by the append that stores them (ingest-then-find is the agent's
common path), in a transaction after the events' own commit, so a failing index write
never costs the events."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import count, run_cli
from memvault import Memory, NewEvent
from memvault.recall import index as recall_index
from memvault.recall.index import get_stat
from memvault.recall.query import memory_find


def test_an_appended_event_is_indexed_before_append_returns(mem: Memory) -> None:
    first = mem.append_event("张伟的新电话是 12345")
    second = mem.append_events([NewEvent("Zhang Wei called about the roadmap"),
                                NewEvent("roadmap review on Friday")])
    assert get_stat(mem.conn, "events_indexed_to") == second[-1]
    answer = memory_find(mem.conn, "roadmap", types=["event"])
    assert "unindexed_events" not in answer
    assert set(second) <= {h["id"] for h in answer["hits"]}
    assert memory_find(mem.conn, "张伟", types=["event"])["hits"][0]["id"] == first
    assert count(mem.conn, "recall_events_fts") == 3


def test_an_append_indexes_as_many_as_it_stored_oldest_first(mem: Memory) -> None:
    backlog = mem.append_events([NewEvent(f"bulk line {i}") for i in range(3)], index=False)
    assert get_stat(mem.conn, "events_indexed_to") == 0
    mem.append_event("one more")
    assert get_stat(mem.conn, "events_indexed_to") == backlog[0]  # the backlog shrinks in turn
    mem.sync_recall_index()
    assert get_stat(mem.conn, "events_indexed_to") == backlog[-1] + 1


def test_a_failing_index_write_keeps_the_events_and_says_so_in_the_log(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def full(*args: object, **kwargs: object) -> dict[str, int]:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(recall_index, "sync_index", full)
    with caplog.at_level(logging.WARNING):
        ids = mem.append_events([NewEvent("secret-free text about 浩宇"), NewEvent("more")])
    assert ids == [1, 2] and count(mem.conn, "events") == 2
    assert "deferred (database or disk is full)" in caplog.text
    assert "浩宇" not in caplog.text  # the log names the failure, never the text
    assert not mem.conn.in_transaction
    answer = memory_find(mem.conn, "浩宇", types=["event"])  # the tail scan still finds it
    assert answer["unindexed_events"] == 2 and answer["hits"][0]["id"] == 1
    monkeypatch.undo()
    mem.sync_recall_index()
    assert "unindexed_events" not in memory_find(mem.conn, "浩宇", types=["event"])


def test_an_index_write_that_fails_otherwise_is_not_swallowed(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> dict[str, int]:
        raise TypeError("a bug, not a full disk")

    monkeypatch.setattr(recall_index, "sync_index", broken)
    with pytest.raises(TypeError):
        mem.append_event("stored before the bug shows")
    assert count(mem.conn, "events") == 1


def test_a_damaged_index_never_fails_an_append_that_stored_its_events(mem: Memory) -> None:
    mem.append_event("first")
    with mem.conn:  # FTS5's structure record gone: any index write is SQLITE_CORRUPT_VTAB
        mem.conn.execute("DELETE FROM recall_events_fts_data WHERE id = 10")
    second = mem.append_event("second")  # a DatabaseError, not an OperationalError
    assert second == 2 and count(mem.conn, "events") == 2


def test_ingest_acknowledges_its_events_when_the_index_is_damaged(
    home: Path, runner: CliRunner, mem: Memory,
) -> None:
    """The CLI's catch-up after ingest treats a damaged index as the append does: the events
    are stored, so it exits 0 with their ids and says the indexing is deferred."""
    mem.append_event("first")
    with mem.conn:
        mem.conn.execute("DELETE FROM recall_events_fts_data WHERE id = 10")
    result = run_cli(runner, "ingest", "--json", "-", input='{"text": "second"}\n')
    assert json.loads(result.stdout)["stored"] == [2]
    assert "deferred" in result.stderr
    assert count(mem.conn, "events") == 2
