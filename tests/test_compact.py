"""compact: the model sees only its nodes and one tool; exact coverage and a real
shortening are enforced; one transaction creates the head, deactivates the nodes, enqueues the
events whose last fragment left and records the receipt; heads never re-enqueue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import count
from memvault import ManualClock, Memory
from memvault.jobs import mode as modes_module
from modes_support import (
    batch_row,
    compact_step,
    counts,
    errors_seen,
    job_state,
    make_worker,
    open_memory,
    payload,
    queue_row,
    run_until_idle,
)
from scripted_provider import call

SMALL_BATCHES = "[compact]\nnodes_per_batch = 2\n"


def node_ids(mem: Memory, where: str = "active = 1") -> list[int]:
    return [r[0] for r in mem.conn.execute(f"SELECT id FROM hot_nodes WHERE {where} ORDER BY seq")]


def test_the_model_sees_only_its_nodes_and_one_tool(mem: Memory) -> None:
    for i in range(3):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.write_core_file("SOUL.md", "secret persona text")
    mem.compact()
    seen: list[dict] = []
    worker, provider = make_worker(mem, [compact_step("three messages", seen)])
    assert worker.tick().action == "committed"
    (request,) = provider.history
    assert request["tools"] == ["commit_compaction"]
    assert set(seen[0]) == {"mode", "nodes"}
    assert [n["id"] for n in seen[0]["nodes"]] == [1, 2, 3]
    assert "persona" not in json.dumps(request["messages"])
    assert "message 1: the team met" in seen[0]["nodes"][1]["text"]


def test_wrong_node_ids_get_a_correction_naming_node_ids(mem: Memory) -> None:
    for i in range(3):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.compact()
    worker, provider = make_worker(mem, [
        call("commit_compaction", {"node_ids": [1, 2], "summary": "two"}),
        call("commit_compaction", {"node_ids": [1, 2, 3, 4], "summary": "four"}),
        compact_step("all three"),
    ])
    result = worker.tick()
    assert result.action == "committed"
    assert [e["field"] for e in errors_seen(provider)] == ["node_ids", "node_ids"]
    assert "exactly this batch's nodes" in errors_seen(provider)[0]["error"]
    assert count(mem.conn, "hot_nodes", "kind = 'head'") == 1


def test_a_summary_that_is_not_shorter_gets_a_correction_naming_summary(mem: Memory) -> None:
    mem.append_event("short note one")
    mem.append_event("short note two")
    mem.compact()
    worker, provider = make_worker(mem, [
        compact_step("a summary that is much longer than the two notes it replaces, surely"),
        compact_step("notes"),
    ])
    assert worker.tick().action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "summary" and "shorter" in error["error"]


@pytest.mark.parametrize("extra", [
    {"objects": [{"id": "person:x", "name": "x"}]},
    {"relations": [{"src": "person:x", "label": "knows", "dst": "person:y"}]},
    {"core_files": [{"name": "USER.md", "content": "x"}]},
])
def test_a_proposal_that_writes_objects_is_refused(mem: Memory, extra: dict) -> None:
    mem.append_event("the team met and agreed on the launch date")
    mem.compact()
    before = counts(mem.conn)

    def sneaky(messages, tools, max_out):
        ids = [n["id"] for n in payload(messages)["nodes"]]
        return call("commit_compaction", {"node_ids": ids, "summary": "met", **extra})

    worker, provider = make_worker(mem, [sneaky, compact_step("met")])
    assert worker.tick().action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == next(iter(extra))
    after = counts(mem.conn)
    # Nothing the proposal carried was written (project:daily, built in, was there before).
    for table in ("objects", "object_versions", "relations", "core_files"):
        assert after[table] == before[table], table
    assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE id LIKE 'person:%'"
                            ).fetchone()[0] == 0
    assert after["receipts"] == before["receipts"] + 1


def test_one_transaction_creates_head_deactivates_nodes_and_enqueues_on_last_fragment(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, SMALL_BATCHES)
    long_id = mem.append_event("The long report. " * 294 + "End.")  # ~5,000 chars
    short_id = mem.append_event("A short follow-up message about the report.")
    fragments = node_ids(mem, f"event_id = {long_id}")
    assert len(fragments) == 3
    job_id = mem.compact()["job_id"]
    worker, _ = make_worker(mem, [compact_step("report, part 1"), compact_step("report end")])

    first = worker.tick()
    assert first.receipt["enqueued"] == []  # one fragment of the long event is still hot
    assert first.receipt["covered"] == 2
    assert count(mem.conn, "archive_queue") == 0
    head = mem.conn.execute("SELECT * FROM hot_nodes WHERE id = ?",
                            (first.receipt["head_id"],)).fetchone()
    assert (head["kind"], head["level"], head["seq"], head["active"]) == ("head", 1, 1, 1)
    assert head["batch_id"] == first.batch_id
    covered = mem.conn.execute("SELECT active, parent_id FROM hot_nodes WHERE id IN (?, ?)",
                               fragments[:2]).fetchall()
    assert [tuple(r) for r in covered] == [(0, head["id"]), (0, head["id"])]

    second = worker.tick()
    assert second.receipt["enqueued"] == [long_id, short_id]  # its last fragment left now
    assert queue_row(mem.conn, long_id)["state"] == "pending"
    assert queue_row(mem.conn, long_id)["enqueued_by"] == second.batch_id
    assert queue_row(mem.conn, short_id)["enqueued_by"] == second.batch_id
    assert count(mem.conn, "receipts") == 2
    run_until_idle(worker)
    assert job_state(mem.conn, job_id) == "done"

    # expand() walks from a head back to what it replaced.
    expanded = mem.expand(first.receipt["head_id"])
    assert [n["id"] for n in expanded] == fragments[:2]
    assert "".join(n["text"] for n in expanded) == mem.read_event(long_id)["text"][
        :sum(n["chars"] for n in expanded)]
    assert mem.read_event(long_id)["text"].startswith("The long report.")
    mem.close()


def test_a_failing_commit_leaves_no_head_and_no_queue_entry(
    mem: Memory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    event_id = mem.append_event("the team met and agreed on the launch date")
    mem.compact()
    before = counts(mem.conn)

    def broken_receipt(*args, **kwargs):
        raise RuntimeError("disk full while saving the receipt")

    monkeypatch.setattr(modes_module, "save_receipt", broken_receipt)
    worker, _ = make_worker(mem, [compact_step("met")])
    result = worker.tick()  # the crash fails the batch (counted), it never kills the worker
    assert result.action == "failed" and "disk full" in (result.error or "")
    assert counts(mem.conn) == before
    assert count(mem.conn, "hot_nodes", "kind = 'head'") == 0
    assert queue_row(mem.conn, event_id) == {}
    assert mem.conn.execute("SELECT active FROM hot_nodes").fetchone()[0] == 1


def test_recompacting_heads_never_re_enqueues(mem: Memory, clock: ManualClock) -> None:
    ids = [mem.append_event(f"message {i}: the team met and agreed on the launch date")
           for i in range(4)]
    mem.compact()
    worker, _ = make_worker(mem, [compact_step("first summary")])
    run_until_idle(worker)
    assert count(mem.conn, "archive_queue", "state = 'pending'") == 4
    # Two of the events are organized meanwhile.
    mem.conn.execute("UPDATE archive_queue SET state = 'archive_only', reason = 'r'"
                     " WHERE event_id IN (?, ?)", ids[:2])
    queue_before = mem.conn.execute("SELECT * FROM archive_queue ORDER BY event_id").fetchall()
    mem.append_event("one more message after the first compaction, long enough")
    clock.advance(minutes=1)
    mem.compact()
    worker.provider.enqueue(compact_step("sum"))
    result = worker.tick()
    assert result.action == "committed"
    assert result.receipt["enqueued"] == [5]  # only the new raw event; heads enqueue nothing
    head = mem.conn.execute("SELECT level FROM hot_nodes WHERE id = ?",
                            (result.receipt["head_id"],)).fetchone()[0]
    assert head == 2
    queue_after = mem.conn.execute(
        "SELECT * FROM archive_queue WHERE event_id != 5 ORDER BY event_id").fetchall()
    assert [tuple(r) for r in queue_after] == [tuple(r) for r in queue_before]


def test_a_head_over_heads_only_enqueues_nothing(mem: Memory) -> None:
    for i in range(4):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.compact((1, 2))
    mem.compact((3, 4))
    worker, _ = make_worker(mem, [compact_step("a"), compact_step("b"), compact_step("c")])
    run_until_idle(worker)
    assert count(mem.conn, "archive_queue") == 4
    mem.compact()
    result = worker.tick()
    assert result.receipt["enqueued"] == [] and result.receipt["covered"] == 2
    assert count(mem.conn, "archive_queue") == 4
    assert [n["kind"] for n in mem.expand(result.receipt["head_id"])] == ["head", "head"]


def test_explicit_compaction_covers_every_node_of_its_range(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, SMALL_BATCHES)
    for i in range(6):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    job_id = mem.compact((2, 4))["job_id"]  # far below any threshold
    seen: list[dict] = []
    worker, _ = make_worker(mem, [compact_step("s", seen), compact_step("s", seen)])
    run_until_idle(worker)
    assert [[n["id"] for n in d["nodes"]] for d in seen] == [[2, 3], [4]]
    assert node_ids(mem, "active = 1 AND kind = 'raw'") == [1, 5, 6]
    assert job_state(mem.conn, job_id) == "done"
    mem.close()


def test_nodes_arriving_during_an_explicit_job_are_not_covered(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, SMALL_BATCHES)
    for i in range(3):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.compact()
    late: list[int] = []

    def step(messages, tools, max_out):
        late.append(mem.append_event("a message that arrives while the job runs, long"))
        return compact_step("s")(messages, tools, max_out)

    worker, _ = make_worker(mem, [step, compact_step("s")])
    run_until_idle(worker)
    assert node_ids(mem, "active = 1 AND kind = 'raw'") == [4]
    assert mem.conn.execute("SELECT event_id FROM hot_nodes WHERE id = 4").fetchone()[0] == late[0]


def test_a_compaction_that_always_fails_ends_partial_and_its_nodes_stay_hot(
    mem: Memory, clock: ManualClock,
) -> None:
    for i in range(2):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    job_id = mem.compact()["job_id"]
    worker, provider = make_worker(mem, [RuntimeError("model down")] * 10)
    results = []
    for _ in range(30):
        results.append(worker.tick())
        clock.advance(seconds=200)
        if job_state(mem.conn, job_id) != "running":
            break
    # The failing claim shrinks to node 1 and goes terminal; node 2 then gets its own five
    # tries; then the job ends partial instead of claiming the same nodes forever.
    assert [r.action for r in results] == (["failed"] * 4 + ["terminal"]) * 2 + ["idle"]
    assert job_state(mem.conn, job_id) == "partial"
    assert len(provider.history) == 10
    assert node_ids(mem) == [1, 2]
    assert count(mem.conn, "archive_queue") == 0
    terminal = [batch_row(mem.conn, r.batch_id) for r in results if r.action == "terminal"]
    assert [b["claim"]["node_ids"] for b in terminal] == [[1], [2]]


def test_a_failed_compaction_claim_shrinks(mem: Memory, clock: ManualClock) -> None:
    for i in range(8):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.compact()
    seen: list[dict] = []
    worker, _ = make_worker(mem, [RuntimeError("context too small"), compact_step("s", seen)])
    first = worker.tick()
    assert first.action == "failed"
    assert batch_row(mem.conn, first.batch_id)["claim"]["node_ids"] == list(range(1, 9))
    clock.advance(seconds=11)
    assert worker.tick().action == "committed"
    assert [n["id"] for n in seen[0]["nodes"]] == [1, 2, 3, 4]


def test_an_explicit_job_resumes_its_scan_yet_claims_nodes_that_were_held_then_freed(
    home: Path, clock: ManualClock,
) -> None:
    """A job's next claim scans from where its last one said (not over all its own heads again,
    which made a long job quadratic), and that point stays before any node another job's batch
    held: freed later, such a node is still this job's to fold."""
    from memvault.jobs.claims import CompactClaim
    from memvault.jobs.modes.compact import CompactMode, fold_nodes
    from memvault.jobs.records import get_job, new_batch
    from memvault.store.connection import write

    mem = open_memory(home, clock, SMALL_BATCHES)
    for i in range(8):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    other = get_job(mem.conn, mem.compact((1, 2))["job_id"])
    job = get_job(mem.conn, mem.compact()["job_id"])
    mode, conn, now = CompactMode(), mem.conn, clock.now()

    def claim_and_fold() -> list[int]:
        claimed = mode.next_claim(conn, job, mem.config, now)
        assert claimed is not None
        claim = claimed.fields
        with write(conn):
            batch = new_batch(conn, job.id, claim, now)
            fold_nodes(conn, claim.node_ids, "s", batch.id, now)
            conn.execute("UPDATE batches SET state = 'committed' WHERE id = ?", (batch.id,))
        return list(claim.node_ids)

    with write(conn):
        held = new_batch(conn, other.id, CompactClaim((1, 2)), now)
    assert claim_and_fold() == [3, 4]  # 1 and 2 are held by the other job's open batch
    assert claim_and_fold() == [5, 6]
    with write(conn):  # the other batch gives up: its nodes stay hot, free for this job
        conn.execute("UPDATE batches SET state = 'terminal' WHERE id = ?", (held.id,))
    assert claim_and_fold() == [1, 2]
    assert claim_and_fold() == [7, 8]
    assert mode.next_claim(conn, job, mem.config, now) is None  # only its own heads are left
    mem.close()


def test_the_commit_enqueues_a_batch_of_events_in_a_fixed_number_of_statements(
    mem: Memory,
) -> None:
    """The queue writes of a commit do not grow with its events (one lookup of the
    still-hot fragments, one insert), and the receipt still lists only the newly queued."""
    ids = [mem.append_event(f"message {i}: the team met and agreed on the launch date")
           for i in range(6)]
    mem.conn.execute("INSERT INTO archive_queue (event_id, state, enqueued_at, updated_at)"
                     " VALUES (?, 'linked', 'a', 'a')", (ids[2],))  # already organized
    mem.compact()
    worker, _ = make_worker(mem, [compact_step("sum")])
    statements: list[str] = []
    mem.conn.set_trace_callback(statements.append)
    result = worker.tick()
    mem.conn.set_trace_callback(None)
    assert result.receipt["enqueued"] == [i for i in ids if i != ids[2]]
    assert queue_row(mem.conn, ids[2])["state"] == "linked"  # never re-queued
    assert len([s for s in statements if "INTO archive_queue" in s]) == 1
    assert len([s for s in statements if "fragment_count > 1" in s]) == 1


def _transactions(statements: list[str]) -> list[list[str]]:
    """The traced statements grouped by write transaction (BEGIN..COMMIT)."""
    groups: list[list[str]] = []
    for sql in statements:
        if sql.startswith("BEGIN"):
            groups.append([])
        if groups and (len(groups[-1]) == 0 or groups[-1][-1] != "COMMIT"):
            groups[-1].append(sql)
    return groups


def test_a_compact_tick_runs_a_small_fixed_number_of_statements(mem: Memory) -> None:
    """The claim transaction reads the job's batches once and takes the graph
    revision inside its insert; the commit checks receipt, lease and revision in one read, never
    reads the nodes' text again (the prompt did) and checks them (all still hot, a contiguous
    run) in one statement."""
    for i in range(12):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.compact()
    worker, _ = make_worker(mem, [compact_step("sum"), compact_step("sum")])
    assert worker.tick().action == "committed"  # a job's later claims read its last batch too
    statements: list[str] = []
    mem.conn.set_trace_callback(statements.append)
    result = worker.tick()
    mem.conn.set_trace_callback(None)
    assert result.action == "committed"
    claim, commit = _transactions(statements)
    assert len(claim) <= 10, claim  # BEGIN and COMMIT included
    assert len(commit) <= 12, commit
    assert not [s for s in commit if "substr(e.text" in s]
    assert len([s for s in statements if "FROM hot_nodes n LEFT JOIN events" in s]) == 1


def test_a_node_that_left_the_timeline_after_the_prompt_refuses_the_commit(mem: Memory) -> None:
    """The commit uses the nodes the prompt read, yet still checks them inside its own
    transaction: one folded away meanwhile refuses it, and nothing is written."""
    for i in range(3):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    mem.compact()
    inner = compact_step("met")

    def meanwhile(messages, tools, max_out):
        mem.conn.execute("UPDATE hot_nodes SET active = 0 WHERE id = 2")  # another writer
        return inner(messages, tools, max_out)

    before = counts(mem.conn)
    worker, _ = make_worker(mem, [meanwhile])
    result = worker.tick()
    assert result.action == "failed"
    assert "no longer all on the hot timeline" in (result.error or "")
    assert count(mem.conn, "hot_nodes", "kind = 'head'") == 0
    assert count(mem.conn, "archive_queue") == 0
    assert counts(mem.conn)["receipts"] == before["receipts"]


def test_fold_nodes_refuses_a_run_with_a_hot_node_in_between(mem: Memory) -> None:
    from memvault.jobs.mode import CommitRefused
    from memvault.jobs.modes.compact import fold_nodes
    from memvault.store.connection import write

    for i in range(3):
        mem.append_event(f"message {i}: the team met and agreed on the launch date")
    with pytest.raises(CommitRefused, match="contiguous"), write(mem.conn):
        fold_nodes(mem.conn, [1, 3], "s", None, mem.clock.now())
    assert count(mem.conn, "hot_nodes", "kind = 'head'") == 0
    with pytest.raises(CommitRefused, match="no longer all"), write(mem.conn):
        fold_nodes(mem.conn, [1, 99], "s", None, mem.clock.now())
