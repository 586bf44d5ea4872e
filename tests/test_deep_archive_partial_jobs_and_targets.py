"""Deep archives a legacy relation (with its standard relation in the same
commit); a job ends partial while any event it was asked about is blocked, and says which;
every durable write of an event's batches is a target, and a last-page continue must change an
object, relation or core file."""

from __future__ import annotations

from typing import Any

import pytest
from memvault import ManualClock, Memory
from memvault.jobs.records import job_summary
from memvault.store.connection import write
from modes_support import (
    add_archived,
    commit_organize,
    errors_seen,
    job_state,
    make_worker,
    obj,
    one_batch,
    put_object,
    queue_row,
    review_step,
    run_until_idle,
)
from scripted_provider import call

LONG = ("Wanda runs the billing migration and reviews every invoice change. " * 140)[:9_000]


# -- deep archives a legacy relation -------------------------------------------------------------

LEGACY = "worked with her on the 2019 launch and still asks her about rollbacks"


@pytest.fixture
def legacy_pair(mem: Memory) -> None:
    put_object(mem, "person:alice", "Alice")
    put_object(mem, "person:bob", "Bob")
    with write(mem.conn):  # as `memvault migrate` leaves an old long-sentence relation
        mem.conn.execute(
            "INSERT INTO relations (src_id, label, dst_id, legacy, created_at)"
            " VALUES ('person:alice', ?, 'person:bob', 1, '2026-01-01T00:00:00+00:00')",
            (LEGACY,))


def archive_args(label: str = "knows", legacy_label: str = LEGACY) -> dict[str, Any]:
    return {"archive_relations": [{"src": "person:alice", "legacy_label": legacy_label,
                                   "dst": "person:bob", "label": label}]}


def relation_rows(mem: Memory) -> list[tuple]:
    return [tuple(r) for r in mem.conn.execute(
        "SELECT label, legacy, archived, batch_id IS NOT NULL FROM relations"
        " WHERE src_id = 'person:alice' ORDER BY legacy DESC, label")]


def test_deep_archives_a_legacy_relation_and_writes_its_standard_one(
    mem: Memory, legacy_pair: None,
) -> None:
    mem.organize(mode="deep")
    seen: list[dict[str, Any]] = []
    worker, provider = make_worker(mem, [
        review_step(lambda d: archive_args(legacy_label="not the stored label")),
        review_step(lambda d: archive_args(), seen)])
    result = worker.tick()
    assert result.action == "committed", result.error
    (error,) = errors_seen(provider)
    assert error["field"] == "archive_relations.0" and "no legacy relation" in error["error"]
    # The model saw the legacy row (label, legacy flag) among the links it reviewed.
    links = [link for o in seen[0]["review"] for link in o["links"] if link.get("legacy")]
    assert links and links[0]["label"] == LEGACY
    assert result.receipt["relations_archived"] == 1
    # Same commit: the legacy row is archived (still readable), the standard one is written.
    assert relation_rows(mem) == [(LEGACY, 1, 1, False), ("knows", 0, 0, True)]
    read = mem.read_object("person:alice")["links"]
    assert {(x["label"], x["archived"]) for x in read if x["kind"] == "relation"} == {
        (LEGACY, 1), ("knows", 0)}


def test_archiving_is_refused_twice_and_from_organize(mem: Memory, legacy_pair: None) -> None:
    mem.organize(mode="deep")
    worker, _ = make_worker(mem, [review_step(lambda d: archive_args())] * 3)
    run_until_idle(worker)
    mem.organize(mode="deep")
    worker, provider = make_worker(mem, [review_step(lambda d: archive_args()),
                                         review_step()])
    assert worker.tick().action == "committed"
    assert "already archived" in errors_seen(provider)[0]["error"]
    (event,) = add_archived(mem, "Alice and Bob met again.")
    mem.organize()
    result, provider = one_batch(mem, call("commit_organize", {
        **archive_args(), "events": [{"event_id": event, "outcome": "archive_only",
                                      "reason": "chit-chat"}]}),
        commit_organize(event, "archive_only", reason="chit-chat"))
    assert result.action == "committed"
    assert errors_seen(provider)[0]["field"] == "archive_relations"  # not in organize's schema


# -- partial while any event the job was asked about is blocked ----------------------------------


def test_a_second_organize_job_is_partial_while_an_event_stays_blocked(
    mem: Memory, clock: ManualClock,
) -> None:
    stuck, fine = add_archived(mem, "Yusuf owns the pager rota.", "Zelda likes tea.")
    first = mem.organize()["job_id"]
    worker, _ = make_worker(mem, [RuntimeError("model down")] * 5 + [
        commit_organize(fine, "archive_only", reason="small talk")])
    for _ in range(5):  # five failed claims make the first batch terminal
        worker.tick()
        clock.advance(seconds=100)
    assert queue_row(mem.conn, stuck)["state"] == "blocked"
    run_until_idle(worker)
    assert job_state(mem.conn, first) == "partial"
    second = mem.organize(scope="everything")["job_id"]
    worker, _ = make_worker(mem, [])
    run_until_idle(worker)  # nothing claimable: the blocked event is not retried
    assert job_state(mem.conn, second) == "partial"  # was "done"
    summary = job_summary(mem.conn, second)
    assert summary["blocked_events"] == [stuck]
    assert f"events still blocked: {stuck}" in summary["note"]
    # Once it is unblocked and organized, a later job is done again.
    mem.organize(retry_blocked=True)
    worker, _ = make_worker(mem, [commit_organize(stuck, "archive_only", reason="rota chat")])
    run_until_idle(worker)
    third = mem.organize()["job_id"]
    run_until_idle(make_worker(mem, [])[0])
    assert job_state(mem.conn, third) == "done" and job_summary(mem.conn, third)["note"] is None


# -- targets and progress ------------------------------------------------------------------------


@pytest.fixture
def two_pages(mem: Memory) -> int:
    (event_id,) = add_archived(mem, LONG)
    mem.organize()
    return event_id


def first_page(mem: Memory, event: int, **writes: Any) -> None:
    result, _ = one_batch(mem, commit_organize(event, "continue", progress="page one", **writes))
    assert result.action == "committed", result.error


@pytest.mark.parametrize("writes", [
    {"core_files": [{"name": "USER.md", "content": "Wanda: billing migration."}]},
    {"objects": [obj("person:wanda", "Wanda", body="billing migration owner")]},
], ids=["core-file", "uncited-object"])
def test_an_earlier_pages_durable_write_forbids_archive_only(
    mem: Memory, two_pages: int, writes: dict[str, Any],
) -> None:
    first_page(mem, two_pages, **writes)
    result, provider = one_batch(
        mem, commit_organize(two_pages, "archive_only", reason="nothing more"),
        commit_organize(two_pages, "continue", progress="cite it next",
                        objects=[obj("knowledge:billing", "billing migration")]))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "events.0.outcome" and "cannot be archive_only" in error["error"]
    assert queue_row(mem.conn, two_pages)["state"] == "continue"


def test_an_object_written_now_without_evidence_forbids_archive_only(
    mem: Memory, two_pages: int,
) -> None:
    first_page(mem, two_pages)
    result, provider = one_batch(
        mem, commit_organize(two_pages, "archive_only", reason="nothing durable",
                             objects=[obj("person:wanda", "Wanda")]),
        commit_organize(two_pages, "archive_only", reason="nothing durable"))
    assert result.action == "committed"
    assert "cannot be archive_only" in errors_seen(provider)[0]["error"]
    assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE id = 'person:wanda'"
                            ).fetchone()[0] == 0  # the refused write was rolled back


def test_a_last_page_continue_with_one_evidence_link_only_is_refused(
    mem: Memory, two_pages: int,
) -> None:
    first_page(mem, two_pages, objects=[obj("person:wanda", "Wanda", body="billing")],
               evidence=[{"object_id": "person:wanda", "event_id": two_pages, "start": 0,
                          "end": 5}])
    end = mem.read_event(two_pages)["chars"]
    cite = [{"object_id": "person:wanda", "event_id": two_pages, "start": end - 20, "end": end}]
    result, provider = one_batch(
        mem, commit_organize(two_pages, "continue", progress="more later", evidence=cite),
        commit_organize(two_pages, "linked", evidence=cite))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "events.0.outcome" and "evidence alone" in error["error"]
    assert queue_row(mem.conn, two_pages)["state"] == "linked"


def test_a_last_page_continue_that_changes_a_relation_is_accepted(
    mem: Memory, two_pages: int,
) -> None:
    first_page(mem, two_pages, objects=[obj("person:wanda", "Wanda"),
                                        obj("knowledge:billing", "billing migration")])
    result, provider = one_batch(mem, commit_organize(
        two_pages, "continue", progress="relation written; cite next",
        relations=[{"src": "person:wanda", "label": "about", "dst": "knowledge:billing"}]))
    assert result.action == "committed" and errors_seen(provider) == []
    assert queue_row(mem.conn, two_pages)["state"] == "continue"
