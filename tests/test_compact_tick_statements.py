"""A compaction tick's SQL: the claim transaction reads what the prompt needs (no read between
the claim's COMMIT and the commit's BEGIN), takes the lease with one upsert and finds each job's
pending batch with the job; 22 statements in all (was 25; the bare commit is 12)."""

from __future__ import annotations

from memvault import ManualClock, Memory
from memvault.models.base import ModelReply
from modes_support import compact_step, make_worker


def transactions(statements: list[str]) -> list[list[str]]:
    """The statements grouped: each transaction (BEGIN..COMMIT) and each run of statements
    outside one, in order."""
    groups: list[list[str]] = [[]]
    for sql in statements:
        if sql.startswith("BEGIN") and groups[-1]:
            groups.append([])
        groups[-1].append(sql)
        if sql == "COMMIT":
            groups.append([])
    return [g for g in groups if g]


def compact_job(mem: Memory) -> None:
    for i in range(4):
        mem.append_event(f"message {i}: the team met and agreed on the launch date, again")
    mem.sync_recall_index()
    mem.compact()


def test_a_compaction_tick_runs_22_statements_and_none_for_its_prompt(mem: Memory) -> None:
    compact_job(mem)
    worker, _ = make_worker(mem, [compact_step("met four times, agreed the date")])
    seen: list[str] = []
    mem.conn.set_trace_callback(seen.append)
    try:
        assert worker.tick().action == "committed"
    finally:
        mem.conn.set_trace_callback(None)
    groups = transactions(seen)
    claim, commit = [g for g in groups if g[0].startswith("BEGIN")]
    assert len(claim) == 8, claim
    assert claim[1].startswith("INSERT INTO leases")  # the lease, in place, first
    assert len(commit) == 12, commit
    between = groups[groups.index(claim) + 1]
    assert between is commit  # the prompt read nothing
    assert len(seen) == 22, seen


def test_a_retried_compaction_reads_its_nodes_for_the_prompt(
    mem: Memory, clock: ManualClock,
) -> None:
    compact_job(mem)
    worker, _ = make_worker(mem, [RuntimeError("model down"),
                                  compact_step("met four times, agreed the date")])
    assert worker.tick().action == "failed"
    clock.advance(seconds=mem.config["worker.backoff_s"] + 1)
    seen: list[str] = []
    mem.conn.set_trace_callback(seen.append)
    try:
        result = worker.tick()
    finally:
        mem.conn.set_trace_callback(None)
    assert result.action == "committed", result.error
    groups = transactions(seen)
    claim = next(g for g in groups if g[0].startswith("BEGIN"))
    prompt = groups[groups.index(claim) + 1]
    assert len(prompt) == 1 and "FROM hot_nodes n" in prompt[0]  # its claim was made earlier
    assert result.receipt is not None and result.receipt["covered"] == 2  # shrunk on retry


def test_a_text_answer_does_not_keep_the_prompt_from_the_claim(mem: Memory) -> None:
    """The nodes read at the claim serve the prompt and then the commit: a batch of two turns
    commits them as claimed."""
    compact_job(mem)
    worker, provider = make_worker(mem, [ModelReply(text="thinking"),
                                         compact_step("met four times, agreed the date")])
    result = worker.tick()
    assert result.action == "committed" and result.receipt["covered"] == 4
    assert len(provider.history) == 2
