"""compact: fold runs of hot-timeline nodes into summary heads.

The model sees only this batch's nodes (≤ compact.nodes_per_batch) and one tool,
commit_compaction. The engine checks exact coverage and a real shortening, then in ONE
transaction creates the head, deactivates the covered nodes, enqueues every event whose last
fragment left the timeline (never one already queued) and records the receipt. A job covers a
range fixed when it was created: nodes that arrive during the job are left alone. A job with
params `raw_only` (the compaction an organize request or the quiet-time rule asks for) folds only
raw fragments: its purpose is to move events to the organize queue, and summary heads have no
event left to move, so re-folding them would only shrink the agent's context further.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from pydantic import BaseModel, Field

from ...base.config import Config
from ...base.spaces import EVERY_SPACE
from ...base.tokens import estimate_tokens
from ...models.payloads import CompactPayload
from ...objects.proposals import Strict, Text
from ...secrets.detector import check_no_secret
from ...timeline.hot import (
    HotNode,
    active_range,
    add_head,
    check_run,
    fold_under,
    nodes_by_id,
    timeline_totals,
)
from ...timeline.queue import enqueue_departed
from ..batch_loop import FieldError, Tool
from ..claims import CompactClaim, JsonObject
from ..kinds import JobMode, JobOrigin
from ..mode import BatchContext, Claim, CommitRefused, Mode, Prompt, commit_tool
from ..records import Batch, Job

SYSTEM = (
    "You compact an agent's hot timeline. You get a run of consecutive timeline nodes (raw "
    "event fragments or earlier summaries). Write ONE summary that covers all of them and is "
    "clearly shorter: keep who, what, when, decisions, commitments, names and numbers; drop "
    "chatter. Then call commit_compaction with node_ids = exactly the ids you were given and the "
    "summary. You cannot write objects, relations or core files here."
)


class CompactionProposal(Strict):
    """Arguments of commit_compaction; anything else (objects, relations...) is refused."""

    node_ids: list[int] = Field(min_length=1, max_length=64,
                                description="exactly the ids of the nodes in this batch")
    summary: Text = Field(min_length=1, max_length=16_000,
                          description="one summary of all the nodes, shorter than them")


@dataclass(frozen=True)
class CompactResult:
    """What a compaction committed: the receipt's body."""

    head_id: int
    covered: int  # nodes folded under the head
    enqueued: tuple[int, ...]  # events whose last fragment left the timeline, now queued
    tokens_before: int
    tokens_after: int

    def to_json(self) -> JsonObject:
        return {"head_id": self.head_id, "covered": self.covered, "enqueued": list(self.enqueued),
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after}


class CompactMode(Mode[CompactClaim, list[HotNode], list[HotNode]]):
    """Claims a run of nodes; what claiming read of them (reads) is what the prompt shows and
    what the commit folds (prepared)."""

    name = JobMode.COMPACT
    proposal = CompactionProposal
    claim_type = CompactClaim

    def next_claim(self, conn: sqlite3.Connection, job: Job, config: Config,
                   now: datetime) -> Claim[CompactClaim, list[HotNode]] | None:
        params = job.params
        lo, hi = params.get("min_seq", 0), params["max_seq"]
        if job.origin == JobOrigin.THRESHOLD:
            target = config.settings.compact.threshold_tokens * config.settings.compact.target_ratio
            if timeline_totals(conn, EVERY_SPACE)["est_tokens"] < target:
                return None
        failed, held, scan_from, own = self._batch_marks(conn, job)
        # An explicit job covers the timeline as it was when it was asked for: heads that other
        # jobs made since then are not its to fold again (else two jobs re-fold each other's).
        newest = params.get("max_node_id") if job.origin != JobOrigin.THRESHOLD else None
        raw_only = bool(params.get("raw_only"))
        start = max(lo, scan_from if newest is not None else lo)
        # Iterated lazily: the loop stops at the first run, never reading a long timeline whole.
        # Each node comes with what the prompt shows of it, so the prompt of this claim reads
        # nothing again.
        scanned = active_range(conn, start, hi, EVERY_SPACE)
        size = config.settings.compact.nodes_per_batch
        run: list[int] = []
        nodes: list[HotNode] = []  # the run's nodes, as nodes_by_id reads them
        lone_tokens = 0  # estimated tokens of the run's first node
        resume: int | None = None  # where the next claim of this job must scan from
        run_space = ""  # a run is of one space: a head never folds two (memvault.base.spaces)
        for scan in scanned:
            node = scan.node
            # An explicit job covers each node of its range once; its own heads are left alone.
            eligible = ((job.origin == JobOrigin.THRESHOLD or scan.made_in_batch not in own)
                        and node.id not in failed and node.id not in held
                        and (newest is None or node.id <= newest)
                        and not (raw_only and node.kind != "raw"))
            if eligible and run and scan.space != run_space:
                if not _unshortenable(run, lone_tokens):
                    break  # the run ends where another space's node begins
                run = []  # a lone node before it: left hot, and a run of this space begins
            if eligible:
                if not run and resume is None:
                    resume = node.seq
                if not run:
                    lone_tokens, run_space = node.est_tokens, scan.space
                    nodes = []
                run.append(node.id)
                nodes.append(node)
                if len(run) == size:
                    break
            elif run and _unshortenable(run, lone_tokens):
                run = []  # a lone "ok": left hot, and the scan goes on
            elif run:
                break
            elif node.id in held and resume is None:
                resume = node.seq  # held only for now: a later claim must look again
        if _unshortenable(run, lone_tokens):
            run = []
        if not run or (job.origin == JobOrigin.THRESHOLD and len(run) < 2):
            return None
        # An explicit job's claim says where its next one scans from (resume is set: run is).
        return Claim(CompactClaim(tuple(run), resume if newest is not None else None), nodes)

    @staticmethod
    def _batch_marks(conn: sqlite3.Connection,
                     job: Job) -> tuple[set[int], set[int], int, set[int]]:
        """What the job's and the other jobs' batches say about the next claim, in one read:

        - the nodes of this job's terminal batches: they stay hot and are not claimed again by
          it (else a compaction that cannot succeed would be retried forever, the job unended);
        - the nodes another job's open batch holds (its worker died, or waits to retry): that
          batch's to fold, claiming them too would make its commit fail for nothing;
        - where an explicit job's next claim starts scanning: its last claim's `scan_from`.
          Everything before it was, when that claim was made, this job's own head, a node of
          its terminal batches or newer than the job, and stays so; so the job reads each node
          of its range about once instead of re-reading its own heads at every claim;
        - the job's own batches: the heads they made are not its to fold again."""
        failed: set[int] = set()
        held: set[int] = set()
        own: set[int] = set()
        scan_from = 0
        for row in conn.execute(
            "SELECT 'failed' AS kind, j.value FROM batches b,"
            " json_each(b.claim, '$.node_ids') j WHERE b.job_id = ? AND b.state = 'terminal'"
            " UNION ALL SELECT 'held', j.value FROM batches b, json_each(b.claim, '$.node_ids') j"
            " WHERE b.job_id != ? AND b.state = 'claimed'"
            " UNION ALL SELECT 'scan', json_extract(claim, '$.scan_from') FROM"
            " (SELECT claim FROM batches WHERE job_id = ? ORDER BY id DESC LIMIT 1)"
            " UNION ALL SELECT 'own', id FROM batches WHERE job_id = ?",
            (job.id, job.id, job.id, job.id),
        ):
            kind, value = row["kind"], row["value"]
            if kind == "failed":
                failed.add(value)
            elif kind == "held":
                held.add(value)
            elif kind == "own":
                own.add(value)
            elif isinstance(value, int):
                scan_from = value
        return failed, held, scan_from, own

    def shrink(self, claim: CompactClaim, config: Config) -> CompactClaim:
        """The first half of the run (at least one node)."""
        nodes = claim.node_ids
        return replace(claim, node_ids=nodes[: max(1, len(nodes) // 2)])

    def prompt(self, ctx: BatchContext[CompactClaim],
               reads: list[HotNode] | None = None) -> Prompt[list[HotNode]]:
        """The batch's nodes; they are also `prepared` for the commit: what it needs of them
        (seq, level, sizes, times, event) never changes once written, and whether they are
        still hot is checked again there."""
        node_ids = ctx.batch.claim.node_ids
        nodes = reads if _nodes_of(reads, node_ids) else None
        if nodes is None:  # a retried batch: its claim was made in an earlier tick
            nodes = nodes_by_id(ctx.conn, node_ids)
        payload: CompactPayload = {
            "mode": JobMode.COMPACT,
            "nodes": [
                {"id": n.id, "kind": n.kind, "level": n.level, "from": n.first_at,
                 "to": n.last_at, "source": n.source, "chars": n.chars, "text": n.text}
                for n in nodes
            ],
        }
        return Prompt([{"role": "system", "content": SYSTEM},
                       {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}],
                      prepared=nodes)

    def tools(self, ctx: BatchContext[CompactClaim]) -> list[Tool]:
        """commit_compaction only: compaction browses nothing."""
        return [commit_tool("commit_compaction", "Replace the batch's nodes with one shorter "
                            "summary.", CompactionProposal)]

    def apply(self, ctx: BatchContext[CompactClaim], proposal: BaseModel,
              prepared: list[HotNode] | None = None) -> CompactResult:
        """Fold the claimed nodes under the proposed summary (fold_nodes)."""
        assert isinstance(proposal, CompactionProposal)
        claimed = list(ctx.batch.claim.node_ids)
        if sorted(proposal.node_ids) != sorted(claimed):
            raise FieldError("node_ids", f"must be exactly this batch's nodes {claimed}")
        if not proposal.summary.strip():
            raise FieldError("summary", "is blank: the head would replace its nodes with nothing")
        # The head outlives the raw text it folds (recall, later compactions): a secret the
        # events held must be left out of it, e.g. "the wifi password was given".
        check_no_secret("summary", proposal.summary)
        nodes = prepared if _nodes_of(prepared, claimed) else None
        return fold_nodes(ctx.conn, claimed, proposal.summary, ctx.batch.id, ctx.now, nodes)

    def on_terminal(self, conn: sqlite3.Connection, batch: Batch[CompactClaim],
                    now: datetime) -> None:
        """A compaction that cannot succeed blocks nothing: its nodes simply stay hot."""


def _nodes_of(nodes: list[HotNode] | None, node_ids: Sequence[int]) -> bool:
    """Whether `nodes` (read at claim or for the prompt) are exactly the claim's nodes."""
    return nodes is not None and sorted(n.id for n in nodes) == sorted(node_ids)


def _unshortenable(run: list[int], first_tokens: int) -> bool:
    """A run of one node of at most one estimated token ("ok", "yes"): no summary can be shorter
    in tokens, so claiming it would only fail five times (and hold up what waits for the job)."""
    return len(run) == 1 and first_tokens <= 1


# A node as the prompt and the commit use it: its text and its event's source (hot_nodes n
# LEFT JOIN events e).
def fold_nodes(
    conn: sqlite3.Connection, node_ids: Sequence[int], summary: str, batch_id: int | None,
    now: datetime, nodes: list[HotNode] | None = None,
) -> CompactResult:
    """Create the head over `node_ids` inside the caller's transaction; return the receipt body.

    `nodes` are those ids as `nodes_by_id` read them (for the prompt), to spare reading them
    again: their columns used here never change; that they are all still hot and a contiguous
    run is checked here, inside the transaction, either way."""
    if nodes is None:
        nodes = nodes_by_id(conn, node_ids)
    if len(nodes) != len(node_ids):
        raise CommitRefused("refused: the claimed nodes are no longer all on the hot timeline")
    space = _check_still_a_run(conn, node_ids, nodes)
    chars = sum(n.chars for n in nodes)
    tokens = sum(n.est_tokens for n in nodes)
    new_tokens = estimate_tokens(summary)
    if len(summary) >= chars or new_tokens >= tokens:
        raise FieldError(
            "summary",
            f"must be shorter than what it replaces ({chars} chars, ~{tokens} estimated tokens);"
            f" got {len(summary)} chars, ~{new_tokens} tokens",
        )
    head = add_head(conn, 1 + max(n.level for n in nodes), nodes[0].seq, summary,
                    new_tokens, min(n.first_at for n in nodes),
                    max(n.last_at for n in nodes), now, batch_id, space)
    fold_under(conn, head, node_ids)
    enqueued = enqueue_departed(conn, {n.event_id for n in nodes if n.event_id}, batch_id, now)
    return CompactResult(head, len(nodes), tuple(enqueued), tokens, new_tokens)


def _check_still_a_run(conn: sqlite3.Connection, node_ids: Sequence[int],
                       nodes: list[HotNode]) -> str:
    """Refuse unless every node is still active, no other active node lies between the first
    and the last, and all are of one space (a head never folds two, so a client bound to one
    never reads another's in a summary); return that space, the head's. One statement: the
    hot nodes of that seq range, how many of them are the claimed ones and their spaces."""
    run = check_run(conn, node_ids, nodes[0].seq, nodes[-1].seq)
    if run.spaces > 1:
        raise CommitRefused("refused: the claimed nodes are of several spaces")
    if run.claimed != len(node_ids):
        raise CommitRefused("refused: the claimed nodes are no longer all on the hot timeline")
    if run.between != len(node_ids):
        raise CommitRefused("refused: the claimed nodes are not a contiguous run of the timeline")
    return str(run.space)

