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
from ...objects.proposals import Strict, Text
from ...secrets.detector import check_no_secret
from ...timeline.hot import add_head, fold_under, timeline_totals
from ...timeline.queue import enqueue_departed
from ..batch_loop import FieldError, Tool
from ..claims import CompactClaim, JsonObject
from ..kinds import JobMode
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


@dataclass(frozen=True, slots=True)
class Node:
    """A hot node as the prompt and the commit use it (NODE_COLUMNS): with its text and its
    event's source."""

    id: int
    kind: str  # raw | head
    level: int
    seq: int
    event_id: int | None  # a raw fragment's event
    active: int
    chars: int
    est_tokens: int
    first_at: str
    last_at: str
    source: str | None
    text: str

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Node:
        """The node from a row holding NODE_COLUMNS (and maybe more), read by name."""
        return cls(**{key: row[key] for key in NODE_KEYS})


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


class CompactMode(Mode[CompactClaim, list[Node], list[Node]]):
    """Claims a run of nodes; what claiming read of them (reads) is what the prompt shows and
    what the commit folds (prepared)."""

    name = JobMode.COMPACT
    proposal = CompactionProposal
    claim_type = CompactClaim

    def next_claim(self, conn: sqlite3.Connection, job: Job, config: Config,
                   now: datetime) -> Claim[CompactClaim, list[Node]] | None:
        params = job.params
        lo, hi = params.get("min_seq", 0), params["max_seq"]
        if job.origin == "threshold":
            target = config.settings.compact.threshold_tokens * config.settings.compact.target_ratio
            if timeline_totals(conn, EVERY_SPACE)["est_tokens"] < target:
                return None
        failed, held, scan_from = self._batch_marks(conn, job)
        # An explicit job covers the timeline as it was when it was asked for: heads that other
        # jobs made since then are not its to fold again (else two jobs re-fold each other's).
        newest = params.get("max_node_id") if job.origin != "threshold" else None
        raw_only = bool(params.get("raw_only"))
        start = max(lo, scan_from if newest is not None else lo)
        # Iterated lazily: the loop stops at the first run, never reading a long timeline whole.
        # Each node comes with what the prompt shows of it (NODE_COLUMNS), so the prompt of
        # this claim reads nothing again.
        rows = conn.execute(
            f"SELECT {NODE_COLUMNS}, b.job_id AS made_by, n.space AS node_space FROM hot_nodes n"
            " LEFT JOIN events e ON e.id = n.event_id LEFT JOIN batches b ON b.id = n.batch_id"
            " WHERE n.active = 1 AND n.seq BETWEEN ? AND ? ORDER BY n.seq",
            (start, hi),
        )
        size = config.settings.compact.nodes_per_batch
        run: list[int] = []
        nodes: list[Node] = []  # the run's nodes, as load_nodes reads them
        lone_tokens = 0  # estimated tokens of the run's first node
        resume: int | None = None  # where the next claim of this job must scan from
        run_space = ""  # a run is of one space: a head never folds two (memvault.base.spaces)
        for row in rows:
            # An explicit job covers each node of its range once; its own heads are left alone.
            eligible = ((job.origin == "threshold" or row["made_by"] != job.id)
                        and row["id"] not in failed and row["id"] not in held
                        and (newest is None or row["id"] <= newest)
                        and not (raw_only and row["kind"] != "raw"))
            if eligible and run and row["node_space"] != run_space:
                if not _unshortenable(run, lone_tokens):
                    break  # the run ends where another space's node begins
                run = []  # a lone node before it: left hot, and a run of this space begins
            if eligible:
                if not run and resume is None:
                    resume = row["seq"]
                if not run:
                    lone_tokens, run_space = row["est_tokens"], row["node_space"]
                    nodes = []
                run.append(row["id"])
                nodes.append(Node.from_row(row))
                if len(run) == size:
                    break
            elif run and _unshortenable(run, lone_tokens):
                run = []  # a lone "ok": left hot, and the scan goes on
            elif run:
                break
            elif row["id"] in held and resume is None:
                resume = row["seq"]  # held only for now: a later claim must look again
        if _unshortenable(run, lone_tokens):
            run = []
        if not run or (job.origin == "threshold" and len(run) < 2):
            return None
        # An explicit job's claim says where its next one scans from (resume is set: run is).
        return Claim(CompactClaim(tuple(run), resume if newest is not None else None), nodes)

    @staticmethod
    def _batch_marks(conn: sqlite3.Connection, job: Job) -> tuple[set[int], set[int], int]:
        """What the job's and the other jobs' batches say about the next claim, in one read:

        - the nodes of this job's terminal batches: they stay hot and are not claimed again by
          it (else a compaction that cannot succeed would be retried forever, the job unended);
        - the nodes another job's open batch holds (its worker died, or waits to retry): that
          batch's to fold, claiming them too would make its commit fail for nothing;
        - where an explicit job's next claim starts scanning: its last claim's `scan_from`.
          Everything before it was, when that claim was made, this job's own head, a node of
          its terminal batches or newer than the job, and stays so; so the job reads each node
          of its range about once instead of re-reading its own heads at every claim."""
        failed: set[int] = set()
        held: set[int] = set()
        scan_from = 0
        for row in conn.execute(
            "SELECT 'failed' AS kind, j.value FROM batches b,"
            " json_each(b.claim, '$.node_ids') j WHERE b.job_id = ? AND b.state = 'terminal'"
            " UNION ALL SELECT 'held', j.value FROM batches b, json_each(b.claim, '$.node_ids') j"
            " WHERE b.job_id != ? AND b.state = 'claimed'"
            " UNION ALL SELECT 'scan', json_extract(claim, '$.scan_from') FROM"
            " (SELECT claim FROM batches WHERE job_id = ? ORDER BY id DESC LIMIT 1)",
            (job.id, job.id, job.id),
        ):
            kind, value = row["kind"], row["value"]
            if kind == "failed":
                failed.add(value)
            elif kind == "held":
                held.add(value)
            elif isinstance(value, int):
                scan_from = value
        return failed, held, scan_from

    def shrink(self, claim: CompactClaim, config: Config) -> CompactClaim:
        """The first half of the run (at least one node)."""
        nodes = claim.node_ids
        return replace(claim, node_ids=nodes[: max(1, len(nodes) // 2)])

    def prompt(self, ctx: BatchContext[CompactClaim],
               reads: list[Node] | None = None) -> Prompt[list[Node]]:
        """The batch's nodes; they are also `prepared` for the commit: what it needs of them
        (seq, level, sizes, times, event) never changes once written, and whether they are
        still hot is checked again there."""
        node_ids = ctx.batch.claim.node_ids
        nodes = reads if _nodes_of(reads, node_ids) else None
        if nodes is None:  # a retried batch: its claim was made in an earlier tick
            nodes = load_nodes(ctx.conn, node_ids)
        payload = {
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
              prepared: list[Node] | None = None) -> CompactResult:
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


def _nodes_of(nodes: list[Node] | None, node_ids: Sequence[int]) -> bool:
    """Whether `nodes` (read at claim or for the prompt) are exactly the claim's nodes."""
    return nodes is not None and sorted(n.id for n in nodes) == sorted(node_ids)


def _unshortenable(run: list[int], first_tokens: int) -> bool:
    """A run of one node of at most one estimated token ("ok", "yes"): no summary can be shorter
    in tokens, so claiming it would only fail five times (and hold up what waits for the job)."""
    return len(run) == 1 and first_tokens <= 1


# A node as the prompt and the commit use it: its text and its event's source (hot_nodes n
# LEFT JOIN events e).
NODE_COLUMNS = (
    "n.id, n.kind, n.level, n.seq, n.event_id, n.active, n.chars, n.est_tokens,"
    " n.first_at, n.last_at, e.source,"
    " CASE WHEN n.kind = 'raw' THEN substr(e.text, n.start_char + 1, n.end_char - n.start_char)"
    " ELSE n.summary END AS text")
NODE_KEYS = ("id", "kind", "level", "seq", "event_id", "active", "chars", "est_tokens",
             "first_at", "last_at", "source", "text")


def load_nodes(conn: sqlite3.Connection, node_ids: Sequence[int]) -> list[Node]:
    """The claimed nodes in timeline order, with their text and their event's source."""
    marks = ",".join("?" * len(node_ids))
    cursor = conn.execute(
        f"SELECT {NODE_COLUMNS}"
        f" FROM hot_nodes n LEFT JOIN events e ON e.id = n.event_id WHERE n.id IN ({marks})"
        " ORDER BY n.seq",
        node_ids,
    )
    # Zipped with the column names once: dict(sqlite3.Row) looks every key up by name and
    # cost more than the query itself (measured by bench/batch_overhead.py).
    columns = [d[0] for d in cursor.description]
    return [Node(**dict(zip(columns, row, strict=True))) for row in cursor.fetchall()]


def fold_nodes(
    conn: sqlite3.Connection, node_ids: Sequence[int], summary: str, batch_id: int | None,
    now: datetime, nodes: list[Node] | None = None,
) -> CompactResult:
    """Create the head over `node_ids` inside the caller's transaction; return the receipt body.

    `nodes` are those ids as `load_nodes` read them (for the prompt), to spare reading them
    again: their columns used here never change; that they are all still hot and a contiguous
    run is checked here, inside the transaction, either way."""
    if nodes is None:
        nodes = load_nodes(conn, node_ids)
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
                       nodes: list[Node]) -> str:
    """Refuse unless every node is still active, no other active node lies between the first
    and the last, and all are of one space (a head never folds two, so a client bound to one
    never reads another's in a summary); return that space, the head's. One statement: the
    hot nodes of that seq range, how many of them are the claimed ones and their spaces."""
    marks = ",".join("?" * len(node_ids))
    row = conn.execute(
        f"SELECT COUNT(*) AS between_, COALESCE(SUM(id IN ({marks})), 0) AS claimed,"
        f" COUNT(DISTINCT CASE WHEN id IN ({marks}) THEN space END) AS spaces,"
        f" MAX(CASE WHEN id IN ({marks}) THEN space END) AS space"
        " FROM hot_nodes WHERE active = 1 AND seq BETWEEN ? AND ?",
        (*node_ids, *node_ids, *node_ids, nodes[0].seq, nodes[-1].seq),
    ).fetchone()
    between, claimed = row["between_"], row["claimed"]
    if row["spaces"] > 1:
        raise CommitRefused("refused: the claimed nodes are of several spaces")
    if claimed != len(node_ids):
        raise CommitRefused("refused: the claimed nodes are no longer all on the hot timeline")
    if between != len(node_ids):
        raise CommitRefused("refused: the claimed nodes are not a contiguous run of the timeline")
    return str(row["space"])

