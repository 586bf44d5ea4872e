"""Recall's shortcuts find exactly what the long way finds: a prefix term on the objects index
looked up as the OR of the words it starts (read from the index's fts5vocab view, migration
m013), and a home without that view (opened read-only before the migration) still answered by
the FTS5 prefix query."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from memvault import ManualClock, Memory
from memvault.home.migrations import open_home_db
from memvault.objects.records import ObjectRecord, save_object
from memvault.recall.index import OBJECTS_VOCAB, PREFIX_AS_WORDS_MAX, prefix_match, sync_index
from memvault.recall.query import memory_find
from memvault.recall.terms import parse_query
from memvault.store.connection import write

WORDS = ["nate", "nates", "nathan", "national", "natural", "naturally", "navy", "nat"]


def _save(mem: Memory, clock: ManualClock, count: int) -> None:
    with write(mem.conn):
        for i in range(count):
            save_object(mem.conn, ObjectRecord(
                id=f"person:p{i}", type="person", name=f"{WORDS[i % len(WORDS)]} {i}",
                summary=f"talks about {WORDS[(i * 3) % len(WORDS)]}stuff and tea",
                body=f"word{i % 30} natrium{i % 25} 乌龙{i % 4}"), clock.now())
        sync_index(mem.conn)


def _prefix_rows(conn: sqlite3.Connection, match: str) -> list[int]:
    return json.loads(conn.execute(
        "SELECT json_group_array(rowid) FROM (SELECT rowid FROM recall_objects_fts"
        " WHERE recall_objects_fts MATCH ? ORDER BY rowid DESC)", (match,)).fetchone()[0])


@pytest.mark.parametrize("prefix", ["nat", "nate", "natu", "navy", "na", "word1", "乌", "zzz"])
def test_a_prefix_looked_up_as_its_words_matches_the_rows_the_prefix_query_matches(
    mem: Memory, clock: ManualClock, prefix: str
) -> None:
    _save(mem, clock, 60)
    words = prefix_match(mem.conn, "recall_objects_fts", prefix)
    expected = _prefix_rows(mem.conn, f'"{prefix}"*')
    if words is None:  # more words than an OR is worth: the prefix query runs
        assert prefix in ("na", "word1", "nat")
        return
    assert (_prefix_rows(mem.conn, words) if words else []) == expected
    assert (words == "") == (prefix == "zzz")


def test_a_prefix_starting_many_words_is_left_to_the_prefix_query(
    mem: Memory, clock: ManualClock
) -> None:
    _save(mem, clock, 60)
    assert prefix_match(mem.conn, "recall_objects_fts", "natrium1") is not None  # 11 words
    assert prefix_match(mem.conn, "recall_objects_fts", "word") is None  # 30 words
    assert PREFIX_AS_WORDS_MAX < 30
    assert prefix_match(mem.conn, "recall_events_fts", "nate") is None  # events: recall_vocab
    assert prefix_match(mem.conn, "recall_objects_fts", "o'neil") is None  # tokenizer splits it


def test_find_answers_alike_with_and_without_the_vocabulary_view(
    mem: Memory, clock: ManualClock, home: Path
) -> None:
    _save(mem, clock, 60)
    queries = ["nat", "Nate", "natu tea", "乌", "navy 乌龙", "wor"]
    with_view = [memory_find(mem.conn, q) for q in queries]
    mem.conn.execute(f"DROP TABLE {OBJECTS_VOCAB}")  # as a home before migration m013
    without = [memory_find(mem.conn, q) for q in queries]
    assert without == with_view
    assert any(h["kind"] == "object" for h in with_view[0]["hits"])


def test_an_older_home_gains_the_vocabulary_view_when_opened(home: Path) -> None:
    db = home / "memory.db"
    home.mkdir(parents=True, exist_ok=True)
    conn = open_home_db(db)
    conn.execute(f"DROP TABLE {OBJECTS_VOCAB}")
    conn.execute("DELETE FROM _migrations WHERE name = 'm013_recall_objects_vocab'")
    conn.close()
    conn = open_home_db(db)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert OBJECTS_VOCAB in names
        assert conn.execute(f"SELECT count(*) FROM {OBJECTS_VOCAB}").fetchone()[0] == 0
    finally:
        conn.close()


@pytest.mark.parametrize("name", ["ΟΔΥΣΣΕΥΣ", "σισυφος", "Νικος", "カード", "がっこう", "café"])
def test_a_prefix_the_tokenizer_folds_differently_still_finds_its_rows(
    mem: Memory, clock: ManualClock, name: str
) -> None:
    # unicode61 folds a final sigma to σ where Python's lower() keeps ς: the folded term is
    # not the token the index holds, and only the tokenizer reading the query sees it so
    with write(mem.conn):
        save_object(mem.conn, ObjectRecord(id="person:p0", type="person", name=name,
                                           summary="a person", body="met once"), clock.now())
        sync_index(mem.conn)
    term = parse_query(name).terms[0]
    words = prefix_match(mem.conn, "recall_objects_fts", term.text)
    expected = _prefix_rows(mem.conn, term.fts)
    assert expected
    if words is not None:
        assert (_prefix_rows(mem.conn, words) if words else []) == expected
    assert [h["id"] for h in memory_find(mem.conn, name)["hits"]] == ["person:p0"]
