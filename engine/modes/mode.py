"""What a mode (compact, organize, deep) must provide to the worker, and the shared commit.

The commit runs in ONE transaction: replayed token -> original receipt, unchanged store;
otherwise the lease must still be valid and the graph revision unchanged since the claim,
the mode validates and applies the proposal, the revision advances and the receipt is saved;
last, the caller's own writes that belong with it (`in_commit`: the worker's ledger row and
giving its lease back) join the same transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel

from ..base.clock import Clock
from ..base.config import Config
from ..models.base import Message
from ..objects.secrets import scan_once
from ..store.connection import bump_revision, write
from ..store.jobs import Batch, Job, commit_state, save_receipt
from .batch_loop import BatchFailed, Tool


class CommitRefused(BatchFailed):
    """The engine refused a commit for a reason the model cannot fix (lease, revision)."""


@dataclass
class BatchContext:
    """Everything a mode's tools need while one batch runs."""

    conn: sqlite3.Connection
    config: Config
    batch: Batch
    job: Job
    holder: str
    now: datetime
    read_ids: set[str] = field(default_factory=set)  # objects this batch may overwrite
    clock: Clock | None = None  # when given, the commit checks the lease at commit time
    # The caller's own writes that belong with the commit (the worker: the ledger row of the
    # call that proposed it, and giving the lease back), run last inside its transaction, so a
    # tick needs no extra transaction for them; `after_commit(ok)` then says whether they
    # committed (ok False: the commit raised and rolled them back, the caller writes them
    # itself).
    in_commit: Callable[[sqlite3.Connection], None] | None = None
    after_commit: Callable[[bool], None] | None = None
    # What the mode read to build the prompt and may reuse at commit instead of reading it
    # again: only what cannot change meanwhile (the mode still checks what can, in the commit).
    loaded: dict[str, Any] = field(default_factory=dict)


class Mode(Protocol):
    name: str

    @property  # read-only, so a mode may narrow it to its own proposal model
    def proposal(self) -> type[BaseModel]: ...

    def next_claim(self, conn: sqlite3.Connection, job: Job, config: Config,
                   now: datetime) -> dict[str, Any] | None:
        """The next batch's claim, or None when the job has no work left."""

    def shrink(self, claim: dict[str, Any], config: Config) -> dict[str, Any]:
        """A smaller claim after a failure (or the same claim when it cannot shrink)."""

    def messages(self, ctx: BatchContext) -> list[Message]:
        """The system and user messages that present the batch to the model."""

    def tools(self, ctx: BatchContext) -> list[Tool]:
        """Browsing tools plus the terminal commit tool."""

    def apply(self, ctx: BatchContext, proposal: BaseModel) -> dict[str, Any]:
        """Validate (FieldError) and write the proposal inside the open transaction."""

    def on_terminal(self, conn: sqlite3.Connection, batch: Batch, now: datetime) -> None:
        """What a terminal failure of this batch marks (inside the caller's transaction)."""


def commit_proposal(ctx: BatchContext, mode: Mode, proposal: BaseModel) -> dict[str, Any]:
    """Commit a validated proposal for the batch, idempotently by the batch's token."""
    try:
        receipt = _commit(ctx, mode, proposal)
    except BaseException:
        if ctx.after_commit is not None:
            ctx.after_commit(False)
        raise
    if ctx.after_commit is not None:
        ctx.after_commit(True)
    return receipt


def _commit(ctx: BatchContext, mode: Mode, proposal: BaseModel) -> dict[str, Any]:
    """The commit transaction (see commit_proposal), with the caller's `in_commit` writes."""
    with write(ctx.conn):
        if ctx.clock is not None:
            # The lease must be valid when the commit happens, not when the batch started.
            ctx.now = ctx.clock.now()
        # Receipt, lease and revision in one read; a replay is answered before the others.
        state = commit_state(ctx.conn, ctx.batch.token, ctx.holder, ctx.now)
        if state.receipt is not None:
            if ctx.in_commit is not None:
                ctx.in_commit(ctx.conn)
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
            body = mode.apply(ctx, proposal)
        new_revision = bump_revision(ctx.conn)
        receipt = {"token": ctx.batch.token, "batch_id": ctx.batch.id, "job_id": ctx.job.id,
                   "mode": mode.name, "revision": new_revision, **body}
        save_receipt(ctx.conn, ctx.batch, new_revision, receipt, ctx.now)
        if ctx.in_commit is not None:
            ctx.in_commit(ctx.conn)
    return receipt
