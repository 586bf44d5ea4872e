"""Archiving legacy long-sentence relations in the nightly review: the batch must have read one
end of the relation (either end is enough), and the archived relations count toward the
relation limit of one write (graph.max_relations, 64 by default) with the relations it adds.

What breaks this test (each mutation made in engine/objects/graph_write.py, the test run and
seen to fail, the code restored):
- `_check_archives`: the "neither end was read" check removed ->
  test_a_legacy_relation_is_archived_only_by_a_batch_that_read_one_end;
- the same check with `and` changed to `or` (both ends required) -> the same test;
- `validate_write`: the relation count `[*write.relations, *write.archive_relations]` changed
  to `write.relations` -> test_archived_relations_count_toward_the_relation_limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memvault import ManualClock, Memory
from memvault.store.connection import write
from modes_support import errors_seen, make_worker, open_memory, put_object, review_step

LEGACY = "worked with her on the 2019 launch and still asks her about rollbacks"
ONE_A_BATCH = "[deep]\nobjects_per_batch = 1\n"


def add_legacy(mem: Memory, src: str, dst: str, label: str = LEGACY) -> None:
    """A long-sentence relation as an upgraded database of the original design holds it."""
    with write(mem.conn):
        mem.conn.execute(
            "INSERT INTO relations (src_id, label, dst_id, legacy, created_at)"
            " VALUES (?, ?, ?, 1, '2026-01-01T00:00:00+00:00')", (src, label, dst))


def archive(src: str, dst: str, label: str = "knows", legacy: str = LEGACY) -> dict[str, Any]:
    return {"src": src, "legacy_label": legacy, "dst": dst, "label": label}


def legacy_state(mem: Memory, src: str, dst: str) -> int:
    """1 if the legacy relation from src to dst is archived, else 0."""
    return mem.conn.execute("SELECT archived FROM relations WHERE src_id = ? AND dst_id = ?"
                            " AND legacy = 1", (src, dst)).fetchone()[0]


def people(home: Path, clock: ManualClock, toml: str = ONE_A_BATCH) -> Memory:
    """Alice, Bob and Carol; the review takes them one a batch in that order."""
    mem = open_memory(home, clock, toml)
    for name in ("Alice", "Bob", "Carol"):
        put_object(mem, f"person:{name.lower()}", name)
    return mem


def test_a_legacy_relation_is_archived_only_by_a_batch_that_read_one_end(
    home: Path, clock: ManualClock,
) -> None:
    mem = people(home, clock)
    add_legacy(mem, "person:bob", "person:carol")
    mem.organize(mode="deep")
    bob_carol = {"archive_relations": [archive("person:bob", "person:carol")]}
    seen: list[dict[str, Any]] = []
    worker, provider = make_worker(mem, [
        review_step(lambda d: bob_carol, seen),  # reviews Alice: neither end read
        review_step(seen=seen),
        review_step(lambda d: bob_carol, seen),  # reviews Bob: the source end read
    ])
    assert worker.tick().action == "committed"
    assert [o["id"] for o in seen[0]["review"]] == ["person:alice"]
    (error,) = errors_seen(provider)
    assert error["field"] == "archive_relations.0" and "neither" in error["error"]
    assert legacy_state(mem, "person:bob", "person:carol") == 0
    result = worker.tick()
    assert result.action == "committed", result.error
    assert [o["id"] for o in seen[2]["review"]] == ["person:bob"]
    assert errors_seen(provider) == []
    assert result.receipt["relations_archived"] == 1  # Carol, the other end, was not read
    assert legacy_state(mem, "person:bob", "person:carol") == 1
    mem.close()


def test_archived_relations_count_toward_the_relation_limit(
    home: Path, clock: ManualClock,
) -> None:
    mem = people(home, clock, ONE_A_BATCH + "[graph]\nmax_relations = 2\n")
    add_legacy(mem, "person:alice", "person:bob")
    add_legacy(mem, "person:alice", "person:carol")
    mem.organize(mode="deep")
    archives = [archive("person:alice", "person:bob"), archive("person:alice", "person:carol")]
    one_more = {"relations": [{"src": "person:bob", "label": "knows", "dst": "person:carol"}]}
    worker, provider = make_worker(mem, [
        review_step(lambda d: {"archive_relations": archives, **one_more}),  # 3 of at most 2
        review_step(lambda d: {"archive_relations": archives}),
    ])
    result = worker.tick()
    assert result.action == "committed", result.error
    (error,) = errors_seen(provider)
    assert error["field"] == "relations" and "3 given; at most 2" in error["error"]
    assert result.receipt["relations_archived"] == 2
    assert mem.conn.execute("SELECT COUNT(*) FROM relations WHERE src_id = 'person:bob'"
                            ).fetchone()[0] == 0  # the refused write added nothing
    mem.close()
