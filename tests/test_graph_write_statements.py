"""A graph write's SQL: each object row read once a commit, links in one INSERT each, the same
rows, versions, redirects and counts as statement-by-statement writing."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from memvault import Memory
from memvault.base.errors import FieldError, InputError
from memvault.objects.graph_write import GraphWrite, WriteRules, apply_write, validate_write
from memvault.objects.proposals import EvidenceWrite, ObjectWrite, RelationWrite
from memvault.objects.provenance import (
    QUOTE_IDS_PER_QUERY,
    QUOTE_MIN_CHARS,
    QUOTE_SLICES,
    stored_quotes,
)
from memvault.objects.records import (
    ObjectRecord,
    add_evidence_items,
    add_relations,
    redirect_targets,
    resolve_redirect,
    save_object,
)
from memvault.store.connection import write

T0 = datetime(2026, 10, 20, tzinfo=UTC)


def put(conn: sqlite3.Connection, object_id: str, body: str = "", summary: str = "") -> None:
    with write(conn):
        save_object(conn, ObjectRecord(id=object_id, type=object_id.split(":")[0],
                                       name=object_id.split(":")[1], summary=summary,
                                       body=body), T0)


class Counting:
    """A connection that counts the statements Python hands it (execute and executemany)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.calls.append(sql)
        return self.conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.calls.append(sql)
        return self.conn.executemany(sql, *args)


@contextmanager
def traced(conn: sqlite3.Connection) -> Iterator[list[str]]:
    """The statements SQLite runs meanwhile (a trigger program repeats its statement's text)."""
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


def typical_write(event: int, end: int) -> GraphWrite:
    """The organize benchmark's proposal: two new objects, one update, three relations, three
    evidence links."""
    return GraphWrite(
        objects=[ObjectWrite(id="person:p1", name="P1", body="身份：unknown"),
                 ObjectWrite(id="todo:t1", name="todo 1", body="状态：open"),
                 ObjectWrite(id="knowledge:fact-2", name="fact-2", body="更新")],
        relations=[RelationWrite(src="todo:t1", label="about", dst="person:p1"),
                   RelationWrite(src="person:p1", label="knows", dst="knowledge:fact-0"),
                   RelationWrite(src="todo:t1", label="related_to", dst="knowledge:fact-1")],
        evidence=[EvidenceWrite(object_id=o, event_id=event, start=0, end=end)
                  for o in ("person:p1", "todo:t1", "knowledge:fact-2")])


def setup_home(mem: Memory) -> tuple[int, int]:
    for i in range(3):
        put(mem.conn, f"knowledge:fact-{i}")
    text = "P1 has a todo about fact 2."
    return mem.append_event(text), len(text)


def rules(event: int, end: int) -> WriteRules:
    return WriteRules({"knowledge:fact-2"}, (event, 0, end), "organize", None,
                      batch_events=lambda ids: {})


def test_a_typical_write_reads_each_row_once_and_writes_links_in_one_call_each(
        mem: Memory) -> None:
    event, end = setup_home(mem)
    graph = typical_write(event, end)
    counting = Counting(mem.conn)
    conn = cast(sqlite3.Connection, counting)
    with write(mem.conn), traced(mem.conn) as seen:
        validated = validate_write(conn, mem.config, graph, rules(event, end), 100)
        changes = apply_write(conn, validated, rules(event, end), T0)
    reads = [s for s in seen if s.startswith("SELECT") and re.search(r"\bFROM objects\b", s)]
    # Was 9 row reads (3 checks, 3 re-reads, 3 in save_object), 1 existence query and 15
    # redirect lookups.
    assert len(reads) == 1, reads
    # One read; 2 INSERTs and 1 UPDATE of objects; one executemany each for their versions,
    # the relations and the evidence (was 40 statements; 9 while the rows kept for apply were
    # checked with PRAGMA data_version, before validation handed them over as a value).
    assert len(counting.calls) == 7, counting.calls
    # The updated object had only its body changed: its name index is left alone.
    assert [s for s in seen if s.startswith("UPDATE objects")][0].startswith(
        "UPDATE objects SET body=")
    assert changes == {"objects_changed": 3, "objects_unchanged": 0, "relations_added": 3,
                       "evidence_added": 3, "core_files": 0, "merged": [],
                       "relations_archived": 0}
    conn = mem.conn
    assert [tuple(r) for r in conn.execute(
        "SELECT object_id, version FROM object_versions WHERE object_id != 'project:daily'"
        " ORDER BY object_id, version")] == [
        ("knowledge:fact-0", 1), ("knowledge:fact-1", 1), ("knowledge:fact-2", 1),
        ("knowledge:fact-2", 2), ("person:p1", 1), ("todo:t1", 1)]
    assert [tuple(r) for r in conn.execute(
        "SELECT src_id, label, dst_id FROM relations ORDER BY id")] == [
        ("todo:t1", "about", "person:p1"), ("person:p1", "knows", "knowledge:fact-0"),
        ("todo:t1", "related_to", "knowledge:fact-1")]
    assert [tuple(r) for r in conn.execute(
        "SELECT object_id, event_id, start_char, end_char FROM evidence ORDER BY id")] == [
        (o, event, 0, end) for o in ("person:p1", "todo:t1", "knowledge:fact-2")]
    # The recall and vault triggers saw every written object.
    assert {r[0] for r in conn.execute("SELECT object_id FROM recall_dirty")} >= {
        "person:p1", "todo:t1", "knowledge:fact-2"}


def test_the_same_write_again_changes_nothing_and_counts_nothing_new(mem: Memory) -> None:
    event, end = setup_home(mem)
    for expected in (3, 0):
        graph = typical_write(event, end)
        with write(mem.conn):
            validated = validate_write(
                mem.conn, mem.config, graph, rules(event, end) if expected else
                WriteRules({"knowledge:fact-2", "person:p1", "todo:t1"}, (event, 0, end),
                           "organize", None, batch_events=lambda ids: {}), 100)
            changes = apply_write(mem.conn, validated, rules(event, end), T0)
        assert (changes["objects_changed"], changes["relations_added"],
                changes["evidence_added"]) == (expected, expected, expected)
    assert mem.conn.execute("SELECT COUNT(*) FROM object_versions"
                            " WHERE object_id != 'project:daily'").fetchone()[0] == 6


def test_a_validated_write_is_applied_only_inside_a_transaction(mem: Memory) -> None:
    """The rows a ValidatedWrite carries hold for the transaction that read them: applied
    outside one it is refused, and nothing is written."""
    event, end = setup_home(mem)
    with write(mem.conn):
        validated = validate_write(mem.conn, mem.config, typical_write(event, end),
                                   rules(event, end), 100)
    before = mem.conn.execute("SELECT COUNT(*) FROM object_versions").fetchone()[0]
    with pytest.raises(RuntimeError, match="outside the transaction"):
        apply_write(mem.conn, validated, rules(event, end), T0)
    assert mem.conn.execute("SELECT COUNT(*) FROM object_versions").fetchone()[0] == before


def test_links_to_merged_objects_land_on_the_survivor_and_self_links_are_refused(
        mem: Memory) -> None:
    event, end = setup_home(mem)
    with write(mem.conn):
        mem.conn.execute("UPDATE objects SET redirect_to = 'knowledge:fact-1'"
                         " WHERE id = 'knowledge:fact-0'")
    graph = GraphWrite(
        relations=[RelationWrite(src="knowledge:fact-2", label="related_to",
                                 dst="knowledge:fact-0")],
        evidence=[EvidenceWrite(object_id="knowledge:fact-0", event_id=event, start=0, end=2)])
    with write(mem.conn):
        validated = validate_write(mem.conn, mem.config, graph, rules(event, end), 100)
        apply_write(mem.conn, validated, rules(event, end), T0)
    assert [tuple(r) for r in mem.conn.execute("SELECT src_id, dst_id FROM relations")] == [
        ("knowledge:fact-2", "knowledge:fact-1")]
    assert [tuple(r) for r in mem.conn.execute("SELECT object_id FROM evidence")] == [
        ("knowledge:fact-1",)]
    self_link = GraphWrite(relations=[RelationWrite(src="knowledge:fact-1", label="knows",
                                                    dst="knowledge:fact-0")])
    with write(mem.conn), pytest.raises(FieldError, match="one end was merged into the other"):
        validate_write(mem.conn, mem.config, self_link, rules(event, end), 100)


def test_redirect_targets_match_resolve_redirect_on_chains_and_cycles(mem: Memory) -> None:
    for name in ("a", "b", "c", "d", "x", "y"):
        put(mem.conn, f"knowledge:{name}")
    with write(mem.conn):
        for loser, survivor in (("a", "b"), ("b", "c"), ("c", "d"), ("x", "y"), ("y", "x")):
            mem.conn.execute("UPDATE objects SET redirect_to = ? WHERE id = ?",
                             (f"knowledge:{survivor}", f"knowledge:{loser}"))
    ids = [f"knowledge:{n}" for n in ("a", "b", "c", "d", "x", "y", "none")]
    with traced(mem.conn) as seen:
        targets = redirect_targets(mem.conn, ids)
    assert targets == {i: resolve_redirect(mem.conn, i) for i in ids}
    assert targets["knowledge:a"] == "knowledge:d"
    assert len(seen) <= 4  # one query per level of redirects, not one per id and level


def test_batched_links_count_new_rows_only_and_refuse_bad_input_whole(mem: Memory) -> None:
    event, _ = setup_home(mem)
    conn = mem.conn
    with write(conn):
        pair = ("knowledge:fact-0", "knows", "knowledge:fact-1")
        assert add_relations(conn, [pair, pair], T0) == 1
        assert add_relations(conn, [pair], T0) == 0
        item = ("knowledge:fact-0", event, 0, 3)
        assert add_evidence_items(conn, [item, item, ("knowledge:fact-1", event, 1, 2)],
                                  T0) == 2
        with pytest.raises(InputError, match="not allowed"):
            add_relations(conn, [("knowledge:fact-1", "knows", "knowledge:fact-2"),
                                 ("knowledge:fact-1", "is the boss of", "knowledge:fact-2")],
                          T0)
    assert conn.execute("SELECT COUNT(*) FROM relations").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM evidence").fetchone()[0] == 2


def reference_quotes(conn: sqlite3.Connection, object_ids: list[str],
                     own_event: int | None) -> list[str]:
    """stored_quotes as it read before it was batched: two queries per object, one for core
    files."""
    quotes: list[str] = []
    for object_id in dict.fromkeys(object_ids):
        row = conn.execute("SELECT summary, body FROM objects WHERE id = ?",
                           (object_id,)).fetchone()
        if row is None:
            continue
        quotes += [row["summary"], row["body"], *row["body"].split("\n")]
        quotes += [r[0] for r in conn.execute(
            "SELECT substr(e.text, v.start_char + 1, v.end_char - v.start_char) FROM evidence v"
            " JOIN events e ON e.id = v.event_id WHERE v.object_id = ? AND v.event_id IS NOT ?"
            " ORDER BY v.event_id, v.start_char, v.end_char LIMIT 200", (object_id, own_event))]
    for (content,) in conn.execute(
        "SELECT c.content FROM core_files c WHERE c.version = (SELECT MAX(version)"
        " FROM core_files d WHERE d.name = c.name)"
    ):
        quotes += [p for p in re.split(r"\n\s*\n", content) if p.strip()]
    return [q for q in dict.fromkeys(quotes) if len(q.strip()) >= QUOTE_MIN_CHARS]


def test_stored_quotes_read_what_they_read_per_object_in_four_statements(
        mem: Memory) -> None:
    long = "x" * QUOTE_MIN_CHARS
    put(mem.conn, "knowledge:many", body=f"first line {long}\nsecond line {long}",
        summary=f"summary {long}")
    put(mem.conn, "knowledge:few", body=f"few {long}")
    mem.write_core_file("USER.md", f"para one {long}\n\npara two {long}")
    events = [mem.append_event(f"event {i:04d} " + long) for i in range(QUOTE_SLICES + 5)]
    with write(mem.conn):
        add_evidence_items(mem.conn, [("knowledge:many", e, 0, QUOTE_MIN_CHARS + 11)
                                      for e in events], T0)
        add_evidence_items(mem.conn, [("knowledge:few", events[0], 1, QUOTE_MIN_CHARS + 11)],
                           T0)
    ids = ["knowledge:few", "knowledge:none", "knowledge:many", "knowledge:few"]
    for own in (None, events[0], events[-1]):
        with traced(mem.conn) as seen:
            got = stored_quotes(mem.conn, ids, own)
        # profiles, the slices' places, their texts (the events' owner), core files: never
        # two per object
        assert len(seen) == 4
        assert got == reference_quotes(mem.conn, ids, own)
        assert len([q for q in got if q.startswith("event ")]) == QUOTE_SLICES


def test_stored_quotes_of_many_objects_are_read_in_chunks(mem: Memory) -> None:
    long = "y" * QUOTE_MIN_CHARS
    ids = [f"knowledge:k{i:03d}" for i in range(QUOTE_IDS_PER_QUERY + 30)]
    for oid in ids:
        put(mem.conn, oid, body=f"{oid} {long}")
    event = mem.append_event("z" * 60)
    with write(mem.conn):
        add_evidence_items(mem.conn, [(oid, event, 0, i % 50 + 2)
                                      for i, oid in enumerate(ids)], T0)
    with traced(mem.conn) as seen:
        got = stored_quotes(mem.conn, ids, None)
    assert len(seen) == 7  # two chunks of profiles, places and texts, then core files
    assert got == reference_quotes(mem.conn, ids, None)


def test_a_name_or_alias_change_alone_still_moves_the_object_in_the_name_index(
        mem: Memory) -> None:
    def terms() -> set[str]:
        return {r[0] for r in mem.conn.execute(
            "SELECT term FROM object_names WHERE object_id = 'person:p'")}

    def save(name: str, aliases: list[str], body: str = "") -> None:
        with write(mem.conn):
            save_object(mem.conn, ObjectRecord(id="person:p", type="person", name=name,
                                               aliases=aliases, body=body), T0)

    save("Priya Nair", ["QA lead"])
    assert terms() == {"priya", "qa"}
    save("Priya Nair", ["release captain"])  # aliases alone
    assert terms() == {"priya", "release"}
    save("Zed Nair", ["release captain"])  # name alone
    assert terms() == {"zed", "release"}
    save("Zed Nair", ["release captain"], "changed")  # neither
    assert terms() == {"zed", "release"}
    assert [tuple(r) for r in mem.conn.execute(
        "SELECT version, name, aliases, body FROM object_versions WHERE object_id = 'person:p'"
        " ORDER BY version")] == [(1, "Priya Nair", '["QA lead"]', ""),
                                  (2, "Priya Nair", '["release captain"]', ""),
                                  (3, "Zed Nair", '["release captain"]', ""),
                                  (4, "Zed Nair", '["release captain"]', "changed")]
