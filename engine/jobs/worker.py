"""The worker: one lease, one batch at a time, batch after batch.

Each tick: catch the recall index up when it is behind; let the scheduler create due jobs;
unless the agent is busy, take the lease, pick the next job by rotation and claim (or re-claim)
its batch, all in one write transaction; build the prompt, drive the batch loop turn by turn
(each turn's model calls put on the usage ledger before the next) and commit the proposal it
hands back (jobs/mode.py commit_proposal, with the ledger rows and the lease hand-back as plain
arguments). The commit's transaction also records the call that proposed it and gives the lease
back, so a committed tick costs two write transactions when the index has nothing to catch up.
Each model call must end before the lease does (its deadline: jobs/batch_loop.py). A failed
batch is retried with backoff (shrinking its claim) up to worker.max_failed_claims times, then it
is terminal: only its events become blocked and the job goes on. A batch whose worker died is
found claimed after the lease expired and re-claimed; that counts as a failed claim.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Generic, Literal, Protocol

from ..base.clock import Clock, iso, parse_time
from ..base.config import Config
from ..base.errors import FieldError
from ..models.base import Provider, ProviderError
from ..models.spec import ProviderSpec
from ..recall.index import index_lag
from ..secrets.detector import redact_secrets
from ..store.connection import get_state, set_state, write
from .batch_loop import BatchFailed, BatchLimits, BatchLoop, Proposal, Turn
from .chain import waits_for
from .claims import JsonObject, StoredClaim
from .kinds import JobMode
from .leases import claim_lease, drop_lease, process_holder, release_lease
from .ledger import CallRecord, insert_call
from .mode import BatchContext, C, Mode, P, R, SomeMode, commit_proposal
from .modes.compact import CompactMode
from .modes.deep import DeepMode
from .modes.organize import OrganizeMode
from .records import (
    Batch,
    BatchState,
    Job,
    finish_job,
    get_batch,
    get_job,
    new_batch,
    reclaim_batch,
    record_failure,
    rotation_with_pending,
)
from .scheduler import Scheduler, pause_automatic

BUSY_KEY = "agent.busy_until"


class MemoryHome(Protocol):
    """What the worker needs of a memory home; `memvault.Memory` is one. A protocol, so this
    layer never imports the home that builds workers."""

    conn: sqlite3.Connection
    config: Config
    clock: Clock

    @property
    def tz(self) -> tzinfo | None: ...

    def sync_recall_index(self, max_events: int | None = ...) -> dict[str, int]: ...


@dataclass(frozen=True)
class Claimed(Generic[C, R, P]):
    """What a tick claimed: the job, its batch with the mode's claim, the mode, and what
    claiming read (`Claim.reads`) that the batch's prompt may use; None for a re-claimed
    batch, whose prompt reads its own."""

    mode: Mode[C, R, P]
    job: Job
    batch: Batch[C]
    lease_expires: datetime  # the lease this tick took for it
    reads: R | None = None

    def run_on(self, worker: Worker) -> TickResult:
        """`worker.run_batch(self)`: the tick holds a claim of whichever mode (`SomeClaimed`);
        from here on, its mode's types are known again."""
        return worker.run_batch(self)


class SomeClaimed(Protocol):
    """A `Claimed` of whichever mode, as the tick holds it between claiming and running."""

    @property
    def job(self) -> Job: ...

    @property
    def batch(self) -> Batch[StoredClaim]: ...

    def run_on(self, worker: Worker) -> TickResult: ...


# busy: the agent holds the busy flag; waiting: another worker holds the lease; idle: no work;
# committed; failed (to be retried); terminal (failed for good)
TickAction = Literal["busy", "waiting", "idle", "committed", "failed", "terminal"]


@dataclass
class TickResult:
    """What one tick did (`TickAction`), with the job, batch and receipt or error."""

    action: TickAction
    job_id: int | None = None
    batch_id: int | None = None
    receipt: JsonObject | None = None
    error: str | None = None
    rounds: int = 0  # model answers the batch took (committed batches)
    corrections: int = 0  # field-level corrections the model needed (committed batches)
    lasting: bool = False  # a failure that waiting will not heal (failed, terminal)


def default_modes() -> dict[JobMode, SomeMode]:
    return {JobMode.COMPACT: CompactMode(), JobMode.ORGANIZE: OrganizeMode(),
            JobMode.DEEP: DeepMode()}


DIRTY_BATCH = 64  # changed objects a worker going batch after batch lets wait, then indexes


def agent_busy(mem: MemoryHome, now: datetime) -> bool:
    until = get_state(mem.conn, BUSY_KEY)
    return now < parse_time(until) if until else False


class Worker:
    """Runs batches for one memory home. `run(burst=True)` works until nothing is due."""

    def __init__(
        self, mem: MemoryHome, provider: Provider | ProviderSpec | None = None,
        holder: str | None = None,
        modes: dict[str, SomeMode] | None = None, scheduler: bool = True,
        on_tick: Callable[[TickResult], None] | None = None,
        on_claim: Callable[[Job, Batch[StoredClaim]], None] | None = None,
    ) -> None:
        self.mem = mem
        # A Provider object runs every job (tests, embedding: the caller chose that object);
        # else each job runs on the provider it was queued with (`provider_for`), and `default`
        # (this process's --model, else model.provider) on jobs an older memvault queued and
        # on the jobs this worker's scheduler creates.
        self._pinned = None if provider is None or isinstance(provider, ProviderSpec) else provider
        self.default = (provider if isinstance(provider, ProviderSpec)
                        else ProviderSpec.configured(mem.config))
        self._built: dict[ProviderSpec, Provider] = {}
        # host:pid:start:tag, so a worker on this host can tell when this one died
        self.holder = holder or process_holder(f"{id(self):x}")
        self.modes = modes or default_modes()
        self.scheduler = (Scheduler(mem.conn, mem.config, mem.tz, self.default)
                          if scheduler else None)
        self.limits = BatchLimits.from_config(mem.config)
        self.on_tick = on_tick
        self.on_claim = on_claim  # told before the model is called: a slow model's progress
        self._holding = False  # this worker's lease row is written and not yet given back
        self._in_run = False  # the last tick ran a batch: the next one comes at once

    @property
    def provider(self) -> Provider:
        """The provider of jobs that record none (the pinned one, if given)."""
        return self._pinned or self._build(self.default)

    def provider_for(self, job: Job) -> Provider:
        """The provider `job` runs on: the one it was queued with (a job queued by an older
        memvault: the default). One that cannot be built fails the batch naming the cause,
        never falling back to another model."""
        if self._pinned is not None:
            return self._pinned
        try:
            spec = ProviderSpec.from_record(job.provider) if job.provider else self.default
            return self._build(spec)
        except ProviderError as exc:
            raise BatchFailed(f"job {job.id}'s provider cannot be built: {exc}",
                              lasting=True) from None

    def _build(self, spec: ProviderSpec) -> Provider:
        if spec not in self._built:
            from .. import models  # looked up now, so a test's wrapped make_provider is used

            self._built[spec] = models.make_provider(self.mem.config, spec)
        return self._built[spec]

    @property
    def lease_s(self) -> float:
        return self.mem.config.settings.lease_s

    def tick(self) -> TickResult:
        """One step of work; never raises for a batch failure (it is recorded instead)."""
        now = self.mem.clock.now()
        if self._index_due():
            self.mem.sync_recall_index()  # keep recall's index caught up, a bounded step a poll
        if self.scheduler:
            self.scheduler.check(now)
        if agent_busy(self.mem, now):
            return self._report(TickResult("busy"))
        claimed = self._lease_and_claim(now)
        if claimed is None:
            return self._report(TickResult("waiting"))
        if not claimed:
            return self._report(TickResult("idle"))
        try:
            if self.on_claim:
                self.on_claim(claimed.job, claimed.batch)
            return self._report(claimed.run_on(self))
        finally:
            if self._holding:  # a path that could not give it back with its last write
                release_lease(self.mem.conn, self.holder)
                self._holding = False

    def run(self, burst: bool = False, stop: threading.Event | None = None,
            max_ticks: int | None = None) -> int:
        """Tick until stopped (or, with burst, until idle); return the number of batches run."""
        ran = ticks = 0
        stop = stop or threading.Event()
        while not stop.is_set():
            result = self.tick()
            ticks += 1
            if result.batch_id is not None:
                ran += 1
            if max_ticks is not None and ticks >= max_ticks:
                break
            if result.action in ("idle", "busy", "waiting"):
                if burst:
                    break
                stop.wait(self.mem.config.settings.worker.poll_s)
        return ran

    # -- claims -------------------------------------------------------------------------------
    def _lease_and_claim(self, now: datetime) -> SomeClaimed | tuple[()] | None:
        """In ONE write transaction: take the lease (None while another holder's is live),
        walk the rotation and claim the first job's batch (() when no job has work, the lease
        given back). The write lock keeps any other process from claiming or leasing in
        between."""
        conn = self.mem.conn
        with write(conn):
            if not claim_lease(conn, self.holder, now, self.lease_s):
                return None
            claimed = self._first_claim(now)
            if claimed is None:
                drop_lease(conn, self.holder)  # no batch: none of ours is left
                return ()
        self._holding = True
        return claimed

    def _first_claim(self, now: datetime) -> SomeClaimed | None:
        """Walk the rotation and claim the first job with work (inside the caller's
        transaction). A job waiting for its predecessor (jobs/chain.py) is passed over, and
        tried again when the predecessor finished during this same walk: rotation puts a
        never-claimed job first, so the organize job is passed before its compaction ends."""
        conn = self.mem.conn
        waiting: list[tuple[Job, Batch[JsonObject] | None]] = []
        for job, pending in rotation_with_pending(conn, now):
            if waits_for(conn, job) is not None:
                waiting.append((job, pending))
                continue
            claimed = self._claim(job, pending, now)
            if claimed is not None:
                return claimed
        while waiting:
            ready = [(job, pending) for job, pending in waiting if waits_for(conn, job) is None]
            if not ready:
                return None
            waiting = [item for item in waiting if item not in ready]
            for job, pending in ready:
                claimed = self._claim(job, pending, now)
                if claimed is not None:
                    return claimed
        return None

    def _claim(self, job: Job, pending: Batch[JsonObject] | None,
               now: datetime) -> SomeClaimed | None:
        """Claim the job's next batch inside the caller's transaction (None: no work left);
        `pending` is the job's claimed-but-unfinished batch, as the rotation read it."""
        mode = self.modes.get(job.mode)
        return None if mode is None else mode.claim_with(self, job, pending, now)

    def claim_batch(self, mode: Mode[C, R, P], job: Job, pending: Batch[JsonObject] | None,
              now: datetime, /) -> SomeClaimed | None:
        """`_claim` with the job's mode (reached through `mode.claim_with`, so the claim keeps
        the mode's types): its pending batch again (shrunk after a failure), else the next."""
        conn, config = self.mem.conn, self.mem.config
        batch = self._still_pending(mode, job, pending, now)
        if batch is not None:
            shrunk = mode.shrink(batch.claim, config) if batch.failures else None
            again: Claimed[C, R, P] = Claimed(mode, job, reclaim_batch(conn, batch, now, shrunk),
                                              self._expiry(now))
            return again
        claim = mode.next_claim(conn, job, config, now)
        if claim is None:
            finish_job(conn, job.id, now)
            return None
        claimed: Claimed[C, R, P] = Claimed(mode, job, new_batch(conn, job.id, claim.fields, now),
                                            self._expiry(now), claim.reads)
        return claimed

    def _still_pending(self, mode: Mode[C, R, P], job: Job, pending: Batch[JsonObject] | None,
                       now: datetime) -> Batch[C] | None:
        """The pending batch read as the mode's, to claim again; None when there is none or
        it became terminal now."""
        if pending is None:
            return None
        batch = pending.typed(mode.claim_type.from_json)
        if batch.next_attempt_at is not None:
            return batch
        # Claimed before but never finished: the last worker died or its lease expired.
        if self._fail(batch, job, mode, "the previous claim never finished "
                      "(worker died or lease expired)", now):
            return None
        return get_batch(self.mem.conn, batch.id).typed(mode.claim_type.from_json)

    def _expiry(self, now: datetime) -> datetime:
        """When the lease taken at `now` (claim_lease) expires."""
        return now + timedelta(seconds=self.lease_s)

    def _fail(self, batch: Batch[C], job: Job, mode: Mode[C, R, P], error: str,
              now: datetime) -> bool:
        """Record a failed claim inside the caller's transaction; True when now terminal."""
        config = self.mem.config.settings
        # Stored errors are shown by status and check: a model's message may quote a key.
        error = redact_secrets(error)
        terminal = record_failure(self.mem.conn, batch, error, now,
                                  config.worker.max_failed_claims, config.worker.backoff_s)
        if terminal:
            mode.on_terminal(self.mem.conn, batch, now)
        if job.origin != "explicit":
            pause_automatic(self.mem.conn, now, config.worker.cooldown_s, job.origin)
        return terminal

    # -- running ------------------------------------------------------------------------------
    def run_batch(self, claimed: Claimed[C, R, P]) -> TickResult:
        """Run the claimed batch: its prompt, then turn after turn of the batch loop, each
        turn's model calls put on record before the next, until the worker commits a proposal
        (with the calls that proposed it, giving the lease back) or the batch fails."""
        job, batch, mode = claimed.job, claimed.batch, claimed.mode
        ctx = BatchContext(self.mem.conn, self.mem.config, batch, job, self.holder,
                           self.mem.clock.now())
        unrecorded: list[tuple[CallRecord, datetime]] = []  # calls not yet on record
        try:
            provider = self.provider_for(job)
            prompt = mode.prompt(ctx, claimed.reads)
            loop = BatchLoop(provider, prompt.messages, mode.tools(ctx), self.limits,
                             self.mem.clock, claimed.lease_expires)
            while True:
                turn = loop.next_turn()
                unrecorded += self._ledger_rows(job, batch, turn, provider)
                if turn.failure is not None:
                    return self._failed(job, batch, mode, turn.failure, unrecorded,
                                        turn.lasting)
                if turn.proposal is None:
                    self._record_calls(unrecorded)  # before the next model call
                    continue
                receipt = self._commit(ctx, mode, loop, turn.proposal, prompt.prepared,
                                       unrecorded)
                if receipt is not None:
                    return TickResult("committed", job.id, batch.id, receipt=receipt,
                                      rounds=loop.rounds, corrections=loop.corrections)
        except Exception as exc:  # BatchFailed, or a crash while building the prompt
            error = str(exc) if isinstance(exc, BatchFailed) else f"batch crashed: {exc!r}"
            return self._failed(job, batch, mode, error, unrecorded,
                                isinstance(exc, BatchFailed) and exc.lasting)

    def _commit(self, ctx: BatchContext[C], mode: Mode[C, R, P], loop: BatchLoop,
                proposal: Proposal, prepared: P | None,
                unrecorded: list[tuple[CallRecord, datetime]]) -> JsonObject | None:
        """Commit the proposal with the ledger rows of the calls that made it and the lease
        given back, in one transaction; the receipt, or None when it was refused for a
        reason the model can correct (handed back to the loop; the rows written alone)."""
        try:
            receipt = commit_proposal(ctx, mode, proposal.args, prepared,
                                      now=self.mem.clock.now(), ledger_rows=unrecorded,
                                      hand_back_lease=True)
        except FieldError as exc:
            self._record_calls(unrecorded)
            loop.refuse(proposal, exc)
            return None
        except BatchFailed:
            raise
        except Exception as exc:  # a bug or a database error: fail this batch, keep the worker
            self._record_calls(unrecorded)  # BatchFailed when the ledger refused them
            raise BatchFailed(f"tool {proposal.tool} failed: {exc!r}") from exc
        unrecorded.clear()
        self._holding = False  # given back by the commit's transaction
        return receipt

    def _ledger_rows(self, job: Job, batch: Batch, turn: Turn, provider: Provider
                     ) -> list[tuple[CallRecord, datetime]]:
        """The usage-ledger rows of the turn's model calls (made by the job's provider),
        stamped now."""
        now = self.mem.clock.now()
        return [(CallRecord(
            job.id, batch.id, job.mode, provider.name,
            (call.reply.model if call.reply and call.reply.model else provider.model),
            call.reply.usage.input_tokens if call.reply else 0,
            call.reply.usage.output_tokens if call.reply else 0,
            call.reply.usage.estimated if call.reply else True, call.latency_ms, call.outcome,
        ), now) for call in turn.calls]

    def _record_calls(self, unrecorded: list[tuple[CallRecord, datetime]]) -> None:
        """Write the rows now, in their own transaction, and forget them (BatchFailed naming
        the cause when the ledger refuses them: a refused row is dropped, it would be refused
        again)."""
        if unrecorded:
            with write(self.mem.conn):
                refused = _write_calls_safely(self.mem.conn, unrecorded)
            if refused:
                raise BatchFailed(refused)

    def _failed(self, job: Job, batch: Batch[C], mode: Mode[C, R, P], error: str,
                unrecorded: list[tuple[CallRecord, datetime]],
                lasting: bool = False) -> TickResult:
        """Record the failed claim, the calls not yet on record and the lease given back, in
        one write transaction; `lasting`: its cause will not heal by waiting."""
        now = self.mem.clock.now()
        conn = self.mem.conn
        with write(conn):
            refused = _write_calls_safely(conn, unrecorded)
            if refused:  # recorded with the batch's own cause, never instead of it
                error = f"{error}; {refused}"
            drop_lease(conn, self.holder)
            fresh = get_batch(conn, batch.id).typed(mode.claim_type.from_json)
            if fresh.state != BatchState.CLAIMED:  # committed meanwhile (a replay): nothing to undo
                result = TickResult("committed", job.id, batch.id)
            else:
                terminal = self._fail(fresh, get_job(conn, job.id), mode, error, now)
                result = TickResult("terminal" if terminal else "failed", job.id, batch.id,
                                    error=error, lasting=lasting)
        self._holding = False
        return result

    def _index_due(self) -> bool:
        """Whether this tick syncs recall's index: not when it has nothing to catch up (a read
        instead of a write transaction). New events are indexed at once; changed objects (each
        organize batch makes some) wait while the worker goes batch after batch, up to
        DIRTY_BATCH of them, and are indexed together at the next quiet poll: recall scores a
        changed object from the objects table until then, so no answer depends on it."""
        events_behind, dirty = index_lag(self.mem.conn)
        return events_behind or dirty >= DIRTY_BATCH or (dirty > 0 and not self._in_run)

    def _report(self, result: TickResult) -> TickResult:
        self._in_run = result.batch_id is not None
        if self.on_tick:
            self.on_tick(result)
        return result


def _write_calls_safely(conn: sqlite3.Connection,
                        unrecorded: list[tuple[CallRecord, datetime]]) -> str | None:
    """Write the rows inside the caller's transaction and forget them; undone alone (a
    savepoint) when the ledger refuses a row, then the reason, so the batch's failure is
    recorded with it instead of the whole transaction failing and leaving the batch claimed
    with no cause on record."""
    rows = list(unrecorded)
    unrecorded.clear()
    if not rows:
        return None
    conn.execute("SAVEPOINT ledger_rows")
    try:
        for record, when in rows:
            insert_call(conn, record, when)
    except (sqlite3.Error, OverflowError, ValueError) as exc:
        conn.execute("ROLLBACK TO ledger_rows")
        return f"the usage ledger refused a call's row ({exc})"
    finally:
        conn.execute("RELEASE ledger_rows")
    return None


def set_busy(mem: MemoryHome, busy: bool, minutes: float = 10.0) -> None:
    """Mark the agent busy (for at most `minutes`, so a crashed agent cannot stall the worker)."""
    now = mem.clock.now()
    with write(mem.conn):
        set_state(mem.conn, BUSY_KEY, iso(now + timedelta(minutes=minutes)) if busy else "")
