"""What a mode (compact, organize, deep) must provide to the worker, and the shared commit.

The flow of a batch, as the worker runs it: `next_claim` (inside the claim's transaction) ->
`prompt` (the messages, and what they read that `apply` may reuse) -> the batch loop (model
calls, browsing tools; the commit tool only validates its arguments) -> `commit_proposal`.

The commit runs in ONE transaction: replayed token -> original receipt, unchanged store;
otherwise the lease must still be valid and the graph revision unchanged since the claim,
the mode validates and applies the proposal, the revision advances and the receipt is saved;
last, the caller's own rows that belong with it (the ledger rows of the calls that proposed
it) are written and the lease is given back, in the same transaction.

Types: a mode is a `Mode[C, R, P]`: C its claim (jobs/claims.py, stored on the batch row), R
what claiming read (`Claim.reads`), P what its prompt read for the commit (`Prompt.prepared`);
`apply` returns a `ModeResult`, the receipt's body. The worker keeps modes of different types
in one registry (`SomeMode`); a mode hands itself to the worker's claim (`claim_with`), so each
batch's claim, reads and prepared values keep their mode's types all the way to the commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel

from ..base.config import Config
from ..models.base import Message
from ..secrets.detector import scan_once
from ..store.connection import bump_revision, write
from .batch_loop import BatchFailed, Tool
from .claims import JsonObject, StoredClaim
from .kinds import JobMode
from .leases import drop_lease
from .ledger import CallRecord, insert_calls
from .records import Batch, Job, commit_state, save_receipt

C = TypeVar("C", bound=StoredClaim)  # the claim a mode stores on its batch rows
R = TypeVar("R")  # what a mode's claiming read, for the prompt of the same tick
P = TypeVar("P")  # what a mode's prompt read, for its commit
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class CommitRefused(BatchFailed):
    """The engine refused a commit for a reason the model cannot fix (lease, revision)."""


@dataclass(frozen=True)
class Claim(Generic[C, R]):
    """A mode's next claim: `fields`, what the batch row stores, and `reads`, what claiming
    read that this tick's prompt may use instead of reading it again (never stored: a retried
    batch has none and its prompt reads its own)."""

    fields: C
    reads: R | None = None


@dataclass(frozen=True)
class Prompt(Generic[P]):
    """What `prompt` built: the messages, and `prepared`, what it read that the commit's
    `apply` may reuse (only what cannot change meanwhile; the mode checks the rest there)."""

    messages: list[Message]
    prepared: P | None = None


@dataclass
class BatchContext(Generic[C]):
    """Everything a mode's tools need while one batch runs; `batch.claim` is the mode's."""

    conn: sqlite3.Connection
    config: Config
    batch: Batch[C]
    job: Job
    holder: str
    now: datetime
    read_ids: set[str] = field(default_factory=set)  # objects this batch may overwrite


class ModeResult(Protocol):
    """What a mode's commit changed: the body of the batch's receipt."""

    def to_json(self) -> JsonObject:
        """The receipt's keys after its head (token, batch, job, mode, revision), in order."""
        ...


class Claimer(Protocol[T_co]):
    """Who claims batches for the modes (the worker): `claim_batch` is generic in the mode's
    types, so whichever mode hands itself over keeps them."""

    def claim_batch(self, mode: Mode[C, R, P], job: Job, pending: Batch[JsonObject] | None,
                    now: datetime, /) -> T_co | None:
        """Claim `job`'s next batch, or `pending` again, with `mode`."""
        ...


class SomeMode(Protocol):
    """A mode of whichever claim, reads and prepared types: what the worker's registry holds."""

    name: JobMode

    def claim_with(self, claimer: Claimer[T], job: Job, pending: Batch[JsonObject] | None,
                   now: datetime) -> T | None:
        """`claimer.claim_batch(self, ...)`, with this mode's types."""
        ...


class Mode(SomeMode, Protocol[C, R, P]):
    """A mode, generic over its claim (C), what claiming read (R) and what its prompt read
    for the commit (P). A mode class subclasses it, naming the three (`claim_with` is
    inherited)."""

    claim_type: type[C]

    @property  # read-only, so a mode may narrow it to its own proposal model
    def proposal(self) -> type[BaseModel]: ...

    def next_claim(self, conn: sqlite3.Connection, job: Job, config: Config,
                   now: datetime) -> Claim[C, R] | None:
        """The next batch's claim, or None when the job has no work left."""
        ...

    def shrink(self, claim: C, config: Config) -> C:
        """A smaller claim after a failure (or the same claim when it cannot shrink)."""
        ...

    def prompt(self, ctx: BatchContext[C], reads: R | None = None) -> Prompt[P]:
        """The system and user messages that present the batch to the model; `reads` is the
        claim's, when it was claimed this tick."""
        ...

    def tools(self, ctx: BatchContext[C]) -> list[Tool]:
        """Browsing tools plus the terminal commit tool (which only validates its arguments)."""
        ...

    def apply(self, ctx: BatchContext[C], proposal: BaseModel,
              prepared: P | None = None) -> ModeResult:
        """Validate (FieldError) and write the proposal inside the open transaction."""
        ...

    def on_terminal(self, conn: sqlite3.Connection, batch: Batch[C], now: datetime) -> None:
        """What a terminal failure of this batch marks (inside the caller's transaction)."""
        ...

    def claim_with(self, claimer: Claimer[T], job: Job, pending: Batch[JsonObject] | None,
                   now: datetime) -> T | None:
        # Why this hop: the registry holds modes whose types differ, and Python cannot name
        # "a Mode of some C, R, P"; handed over here, the claim keeps this mode's types.
        return claimer.claim_batch(self, job, pending, now)


def commit_tool(name: str, description: str, proposal: type[BaseModel]) -> Tool:
    """A mode's terminal tool: its arguments, once they validate, are the batch's proposal."""
    return Tool(name, description, proposal, lambda args: args, terminal=True)


def commit_proposal(
    ctx: BatchContext[C], mode: Mode[C, R, P], proposal: BaseModel, prepared: P | None = None,
    *, now: datetime | None = None,
    ledger_rows: Sequence[tuple[CallRecord, datetime]] = (),
    hand_back_lease: bool = False,
) -> JsonObject:
    """Commit a validated proposal for the batch, idempotently by the batch's token, in ONE
    write transaction at `now` (default: the context's): the receipt, with `ledger_rows`
    written and, with `hand_back_lease`, the context holder's lease dropped. Raises FieldError
    (the model can correct it) or CommitRefused; either way nothing of it is written."""
    # The lease must be valid when the commit happens, not when the batch started.
    ctx = replace(ctx, now=now or ctx.now)
    with write(ctx.conn):
        receipt = _commit(ctx, mode, proposal, prepared)
        insert_calls(ctx.conn, ledger_rows)
        if hand_back_lease:
            drop_lease(ctx.conn, ctx.holder)
    return receipt


def _commit(ctx: BatchContext[C], mode: Mode[C, R, P], proposal: BaseModel,
            prepared: P | None) -> JsonObject:
    """The receipt's checks and writes, inside the caller's transaction."""
    # Receipt, lease and revision in one read; a replay is answered before the others.
    state = commit_state(ctx.conn, ctx.batch.token, ctx.holder, ctx.now)
    if state.receipt is not None:
        return {**state.receipt, "replayed": True}
    if not state.lease_valid:
        raise CommitRefused("refused: the worker lease expired before the commit")
    revision = state.revision
    if revision != ctx.batch.base_revision:
        raise CommitRefused(
            f"refused: stale graph revision (claimed at {ctx.batch.base_revision}, "
            f"now {revision})"
        )
    # One commit scans each of its texts for secrets once, however many checks name it.
    with scan_once():
        body = mode.apply(ctx, proposal, prepared)
    new_revision = bump_revision(ctx.conn)
    receipt: JsonObject = {"token": ctx.batch.token, "batch_id": ctx.batch.id,
                           "job_id": ctx.job.id, "mode": mode.name, "revision": new_revision,
                           **body.to_json()}
    save_receipt(ctx.conn, ctx.batch, new_revision, receipt, ctx.now)
    return receipt
