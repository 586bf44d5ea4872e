"""The typed claims and commit results keep the stored JSON byte for byte (jobs/claims.py): homes
hold batch rows and receipts written before the types existed, a re-claimed batch writes its
claim again, and a replayed token answers the stored receipt."""

from __future__ import annotations

import json

import pytest
from memvault import Memory
from memvault.jobs.claims import CompactClaim, DeepClaim, OrganizeClaim, read_claim
from memvault.jobs.modes.compact import CompactResult
from memvault.jobs.modes.deep import DeepResult
from memvault.jobs.modes.organize import OrganizeResult
from memvault.jobs.progress import batch_report
from memvault.jobs.records import create_job, get_batch, new_batch, reclaim_batch
from memvault.objects.graph_write import WriteSummary
from memvault.store.connection import write

# Claims as memvault has always stored them (records.new_batch: the token, then the claim).
STORED = [
    ("compact", '{"token": "t1", "node_ids": [1, 2, 3]}'),
    ("compact", '{"token": "t2", "node_ids": [9], "scan_from": 7}'),
    ("organize", '{"token": "t3", "event_id": 4, "page_start": 8000, "page_end": 12000,'
                 ' "page_chars": 4000}'),
    ("deep", '{"token": "t4", "positions": [5, 6], "object_ids": ["person:林晓梅", "todo:x"]}'),
]


@pytest.mark.parametrize(("mode", "text"), STORED)
def test_a_stored_claim_reads_back_and_is_written_again_byte_for_byte(mode: str,
                                                                      text: str) -> None:
    stored = json.loads(text)
    claim = read_claim(mode, stored)
    assert json.dumps({"token": stored["token"], **claim.to_json()}, ensure_ascii=False) == text


def test_new_and_reclaimed_batches_store_the_claim_as_before(mem: Memory) -> None:
    now = mem.clock.now()
    with write(mem.conn):
        job = create_job(mem.conn, "compact", "explicit", now, params={"max_seq": 9})
        batch = new_batch(mem.conn, job.id, CompactClaim((1, 2, 3, 4), 1), now)
    stored = mem.conn.execute("SELECT claim FROM batches WHERE id = ?", (batch.id,)).fetchone()[0]
    assert stored == f'{{"token": "{batch.token}", "node_ids": [1, 2, 3, 4], "scan_from": 1}}'
    with write(mem.conn):
        again = reclaim_batch(mem.conn, batch, now, CompactClaim((1, 2), 1))
    stored = mem.conn.execute("SELECT claim FROM batches WHERE id = ?", (batch.id,)).fetchone()[0]
    assert stored == f'{{"token": "{batch.token}", "node_ids": [1, 2], "scan_from": 1}}'
    assert again.claim == CompactClaim((1, 2), 1) and again.token == batch.token
    read = get_batch(mem.conn, batch.id)
    assert read.token == batch.token
    assert read.typed(CompactClaim.from_json).claim == again.claim


@pytest.mark.parametrize(("mode", "data"), [
    ("compact", {"scan_from": 3}),  # no node_ids
    ("compact", {"node_ids": [1, "2"]}),
    ("organize", {"event_id": 1, "page_start": 0, "page_end": 10}),  # no page_chars
    ("organize", {"event_id": True, "page_start": 0, "page_end": 10, "page_chars": 10}),
    ("deep", {"positions": [1], "object_ids": [1]}),
    ("merge", {}),  # no such mode
])
def test_a_malformed_claim_is_refused(mode: str, data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="claim"):
        read_claim(mode, data)


def test_the_status_report_calls_an_unreadable_claim_so(mem: Memory) -> None:
    now = mem.clock.now()
    with write(mem.conn):
        job = create_job(mem.conn, "organize", "explicit", now)
        new_batch(mem.conn, job.id, OrganizeClaim(1, 0, 10, 10), now)
        mem.conn.execute("UPDATE batches SET claim = '{\"token\": \"t\", \"event\": 1}'")
    report = batch_report(mem.conn)
    assert report["in_flight"] is not None
    assert report["in_flight"]["covers"] == "an unreadable claim"


CHANGES = WriteSummary(objects_changed=1, objects_unchanged=0, relations_added=2,
                       evidence_added=3, core_files=0, merged=["person:b"], relations_archived=0)


def test_commit_results_give_the_receipt_body_as_before() -> None:
    assert json.dumps(CompactResult(5, 2, (3,), 40, 9).to_json()) == (
        '{"head_id": 5, "covered": 2, "enqueued": [3], "tokens_before": 40, "tokens_after": 9}')
    assert json.dumps(OrganizeResult(4, "linked", (0, 600), CHANGES).to_json()) == (
        '{"event_id": 4, "outcome": "linked", "page": [0, 600], "objects_changed": 1,'
        ' "objects_unchanged": 0, "relations_added": 2, "evidence_added": 3, "core_files": 0,'
        ' "merged": ["person:b"], "relations_archived": 0}')
    assert json.dumps(DeepResult(("person:a", "person:b"), CHANGES).to_json()) == (
        '{"reviewed": ["person:a", "person:b"], "objects_changed": 1, "objects_unchanged": 0,'
        ' "relations_added": 2, "evidence_added": 3, "core_files": 0, "merged": ["person:b"],'
        ' "relations_archived": 0}')


def test_each_claim_says_what_it_covers(mem: Memory) -> None:
    event_id = mem.append_event("x" * 19_204)
    assert CompactClaim((4, 5, 11)).covers(mem.conn) == "nodes 4–11"
    assert CompactClaim((4,)).covers(mem.conn) == "node 4"
    assert OrganizeClaim(event_id, 0, 8000, 8000).covers(mem.conn) == (
        f"event {event_id} chars 0–8,000 of 19,204")
    claim = DeepClaim((1, 2, 3, 4, 5), ("a:1", "a:2", "a:3", "a:4", "a:5"))
    assert claim.covers(mem.conn) == "objects a:1, a:2, a:3, a:4 and 1 more"
