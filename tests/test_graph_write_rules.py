"""Rules of one graph write that only the fuzz file (tests/fuzz_strategies.py) guarded: breaking
any of them in the engine left every other test passing (found by mutating
engine/objects/graph_write.py and running the organize, deep, compact, worker, secrets,
backflow and bad-input tests without the fuzz file).

- a proposal must stay under graph.max_proposal_bytes (900,000 bytes: 899,999 commits, 900,000
  is refused);
- the same object twice in one write is refused;
- a merge end the batch has not read, an object merged into itself, and a merge end already
  merged away are refused;
- a core file a model writes is measured in bytes against vault.core_file_max_bytes.

What breaks this test (each mutation made in engine/objects/graph_write.py, the test run and
seen to fail, the code restored):
- `if size >= config["graph.max_proposal_bytes"]` changed to `>`, and separately to `if False`
  -> test_a_proposal_must_stay_under_900000_bytes;
- `if obj.id in seen` changed to `if False` -> test_the_same_object_twice_in_one_write_is_refused;
- in `_check_merges`, `if target not in rules.read_ids` changed to `if False`
  -> test_a_merge_end_the_batch_has_not_read_is_refused;
- `if merge.loser == merge.survivor` changed to `if False`
  -> test_an_object_merged_into_itself_is_refused;
- in `_check_merges`, `if row["redirect_to"]` changed to `if False`
  -> test_a_merge_end_already_merged_away_is_refused;
- `len(core.content.encode()) > config["vault.core_file_max_bytes"]` changed to
  `len(core.content) > ...` -> test_a_core_file_from_a_model_is_measured_in_bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memvault import ManualClock, Memory
from memvault.objects.graph_write import merge_objects
from memvault.objects.proposals import OrganizeProposal
from memvault.store.connection import write
from modes_support import (
    add_archived,
    commit_organize,
    errors_seen,
    make_worker,
    obj,
    one_batch,
    open_memory,
    put_object,
    review_step,
)
from scripted_provider import call

LIMIT = 900_000  # graph.max_proposal_bytes, the default


def proposal_bytes(args: dict[str, Any]) -> int:
    """A proposal's size as the engine measures it (its JSON, as validated)."""
    return len(OrganizeProposal.model_validate(args).model_dump_json().encode())


def big_proposal(event: int, size: int) -> dict[str, Any]:
    """commit_organize arguments of exactly `size` bytes: 32 new objects with long Chinese
    bodies (3 bytes a char), the last one filling up to `size`, each within the body limit."""
    objects = [obj(f"knowledge:k{i}", f"topic {i}", body="记" * 9_500) for i in range(32)]
    args = {"objects": objects, "evidence": [
        {"object_id": "knowledge:k0", "event_id": event, "start": 0, "end": 5}],
        "events": [{"event_id": event, "outcome": "linked"}]}
    objects[-1]["body"] = ""
    missing = size - proposal_bytes(args)
    objects[-1]["body"] = "记" * (missing // 3) + "x" * (missing % 3)
    assert 0 < len(objects[-1]["body"]) <= 16_000, missing
    assert proposal_bytes(args) == size
    return args


def test_a_proposal_must_stay_under_900000_bytes(mem: Memory) -> None:
    assert mem.config["graph.max_proposal_bytes"] == LIMIT
    (event,) = add_archived(mem, "Notes on every topic we discussed this quarter.")
    mem.organize()
    at_limit, under = big_proposal(event, LIMIT), big_proposal(event, LIMIT - 1)
    result, provider = one_batch(mem, call("commit_organize", at_limit),
                                 call("commit_organize", under))
    assert result.action == "committed", result.error
    (error,) = errors_seen(provider)
    assert error["field"] == "proposal" and "900,000 bytes" in error["error"]
    assert result.receipt["objects_changed"] == 32


def test_the_same_object_twice_in_one_write_is_refused(mem: Memory) -> None:
    (event,) = add_archived(mem, "Victor is the new on-call lead for payments.")
    mem.organize()
    cite = [{"object_id": "person:victor", "event_id": event, "start": 0, "end": 6}]
    twice = [obj("person:victor", "Victor", body="on-call lead"),
             obj("person:victor", "Victor", body="payments")]
    result, provider = one_batch(
        mem, commit_organize(event, "linked", objects=twice, evidence=cite),
        commit_organize(event, "linked", objects=twice[:1], evidence=cite))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "objects.1.id" and "appears twice" in error["error"]
    assert mem.read_object("person:victor")["object"]["body"] == "on-call lead"


def review_then(mem: Memory, merges: list[dict[str, str]]) -> dict[str, Any]:
    """Run one deep batch proposing `merges`, then nothing; return the one correction."""
    mem.organize(mode="deep")
    worker, provider = make_worker(mem, [review_step(lambda d: {"merges": merges}),
                                         review_step()])
    result = worker.tick()
    assert result.action == "committed", result.error
    (error,) = errors_seen(provider)
    return error


def live_people(mem: Memory) -> list[str]:
    return [o["id"] for o in mem.list_objects("person")]


def test_a_merge_end_the_batch_has_not_read_is_refused(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, "[deep]\nobjects_per_batch = 1\n")
    put_object(mem, "person:ann", "Ann")
    put_object(mem, "person:zed", "Zed")  # reviewed in a later batch: not read by the first
    error = review_then(mem, [{"loser": "person:ann", "survivor": "person:zed"}])
    assert error["field"] == "merges.0.survivor" and "not read" in error["error"]
    assert live_people(mem) == ["person:ann", "person:zed"]
    mem.close()


def test_an_object_merged_into_itself_is_refused(mem: Memory) -> None:
    put_object(mem, "person:ann", "Ann")
    error = review_then(mem, [{"loser": "person:ann", "survivor": "person:ann"}])
    assert error["field"] == "merges.0" and "into itself" in error["error"]
    assert live_people(mem) == ["person:ann"]


def test_a_merge_end_already_merged_away_is_refused(mem: Memory) -> None:
    for name in ("Ann", "Bea", "Cai"):
        put_object(mem, f"person:{name.lower()}", name)
    with write(mem.conn):  # an earlier review merged Ann into Bea
        merge_objects(mem.conn, "person:ann", "person:bea", mem.clock.now(), None)
    error = review_then(mem, [{"loser": "person:ann", "survivor": "person:cai"}])
    assert error["field"] == "merges.0.loser" and "already merged" in error["error"]
    assert mem.read_object("person:ann")["object"]["id"] == "person:bea"  # still redirects


def test_a_core_file_from_a_model_is_measured_in_bytes(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, "[vault]\ncore_file_max_bytes = 1024\n")
    (event,) = add_archived(mem, "浩宇喜欢安静的早晨，周末常去爬山。")
    mem.organize()
    too_big = "浩宇喜欢安静的早晨。" * 40  # 400 chars, 1,200 bytes
    fits = "浩宇喜欢安静的早晨。" * 30  # 300 chars, 900 bytes
    assert len(too_big) <= 1024 < len(too_big.encode())
    result, provider = one_batch(
        mem, commit_organize(event, "linked", core_files=[{"name": "USER.md", "content": too_big}]),
        commit_organize(event, "linked", core_files=[{"name": "USER.md", "content": fits}]))
    assert result.action == "committed", result.error
    (error,) = errors_seen(provider)
    assert error["field"] == "core_files.0.content" and "core_file_max_bytes" in error["error"]
    assert mem.read_core_file("USER.md")["content"] == fits
    mem.close()
