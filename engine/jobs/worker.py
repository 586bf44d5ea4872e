"""The worker: one lease, one batch at a time, batch after batch.

Each tick: catch the recall index up when it is behind; let the scheduler create due jobs;
unless the agent is busy, take the lease, pick the next job by rotation and claim (or re-claim)
its batch, all in one write transaction; run the model loop and commit. The commit's
transaction also records the call that proposed it and gives the lease back, so a committed
tick costs two write transactions when the index has nothing to catch up. A failed
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
from typing import Any, Protocol

from ..base.clock import Clock, iso, parse_time
from ..base.config import Config
from ..models.base import Provider
from ..modes.batch_loop import BatchFailed, BatchLimits, CallLog, run_batch
from ..modes.compact import CompactMode
from ..modes.deep import DeepMode
from ..modes.mode import BatchContext, Mode
from ..modes.organize import OrganizeMode
from ..objects.secrets import redact_secrets
from ..store.connection import get_state, write
from ..store.jobs import (
    Batch,
    BatchState,
    Job,
    finish_job,
    get_batch,
    get_job,
    new_batch,
    pending_batch,
    reclaim_batch,
    record_failure,
    rotation,
)
from ..store.leases import drop_lease, lease_taken, process_holder, release_lease, take_lease
from ..store.ledger import CallRecord, insert_call
from ..store.recall_index import index_lag
from .chain import waits_for
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


@dataclass
class TickResult:
    """What one tick did: 'busy', 'waiting' (lease held elsewhere), 'idle', 'committed',
    'failed' or 'terminal'; with the job, batch and receipt or error."""

    action: str
    job_id: int | None = None
    batch_id: int | None = None
    receipt: dict[str, Any] | None = None
    error: str | None = None
    rounds: int = 0  # model answers the batch took (committed batches)
    corrections: int = 0  # field-level corrections the model needed (committed batches)


def default_modes() -> dict[str, Mode]:
    return {"compact": CompactMode(), "organize": OrganizeMode(), "deep": DeepMode()}


DIRTY_BATCH = 64  # changed objects a worker going batch after batch lets wait, then indexes


def agent_busy(mem: MemoryHome, now: datetime) -> bool:
    until = get_state(mem.conn, BUSY_KEY)
    return now < parse_time(until) if until else False


class Worker:
    """Runs batches for one memory home. `run(burst=True)` works until nothing is due."""

    def __init__(
        self, mem: MemoryHome, provider: Provider, holder: str | None = None,
        modes: dict[str, Mode] | None = None, scheduler: bool = True,
        on_tick: Callable[[TickResult], None] | None = None,
        on_claim: Callable[[Job, Batch], None] | None = None,
    ) -> None:
        self.mem = mem
        self.provider = provider
        # host:pid:start:tag, so a worker on this host can tell when this one died
        self.holder = holder or process_holder(f"{id(self):x}")
        self.modes = modes or default_modes()
        self.scheduler = Scheduler(mem.conn, mem.config, mem.tz) if scheduler else None
        self.limits = BatchLimits.from_config(mem.config)
        self.on_tick = on_tick
        self.on_claim = on_claim  # told before the model is called: a slow model's progress
        self._holding = False  # this worker's lease row is written and not yet given back
        self._in_run = False  # the last tick ran a batch: the next one comes at once

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
                self.on_claim(*claimed)
            return self._report(self._run(*claimed))
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
    def _lease_and_claim(self, now: datetime) -> tuple[Job, Batch] | tuple[()] | None:
        """In ONE write transaction: check the lease, walk the rotation and claim the first
        job's batch, and take the lease for it; None while another holder's lease is live,
        () when no job has work. The write lock makes this the same as taking the lease
        first: no other process can claim or lease in between."""
        conn = self.mem.conn
        with write(conn):
            if lease_taken(conn, self.holder, now):
                return None
            claimed = self._first_claim(now)
            if claimed is None:
                drop_lease(conn, self.holder)  # none of ours should be left; make sure
                return ()
            take_lease(conn, self.holder, now, self.lease_s)
        self._holding = True
        return claimed

    def _first_claim(self, now: datetime) -> tuple[Job, Batch] | None:
        """Walk the rotation and claim the first job with work (inside the caller's
        transaction). A job waiting for its predecessor (jobs/chain.py) is passed over, and
        tried again when the predecessor finished during this same walk: rotation puts a
        never-claimed job first, so the organize job is passed before its compaction ends."""
        conn = self.mem.conn
        waiting: list[Job] = []
        for job in rotation(conn, now):
            if waits_for(conn, job) is not None:
                waiting.append(job)
                continue
            batch = self._claim(job, now)
            if batch is not None:
                return job, batch
        while waiting:
            ready = [job for job in waiting if waits_for(conn, job) is None]
            if not ready:
                return None
            waiting = [job for job in waiting if job not in ready]
            for job in ready:
                batch = self._claim(job, now)
                if batch is not None:
                    return job, batch
        return None

    def _claim(self, job: Job, now: datetime) -> Batch | None:
        """Claim the job's next batch inside the caller's transaction (None: no work left)."""
        mode = self.modes.get(job.mode)
        if mode is None:
            return None
        conn, config = self.mem.conn, self.mem.config
        pending = pending_batch(conn, job.id)
        if pending is not None and pending.next_attempt_at is None:
            # Claimed before but never finished: the last worker died or its lease expired.
            if self._fail(pending, job, mode, "the previous claim never finished "
                          "(worker died or lease expired)", now):
                pending = None
            else:
                pending = get_batch(conn, pending.id)
        if pending is not None:
            claim = mode.shrink(pending.claim, config) if pending.failures else None
            return reclaim_batch(conn, pending, now, claim)
        claim = mode.next_claim(conn, job, config, now)
        if claim is None:
            finish_job(conn, job.id, now)
            return None
        return new_batch(conn, job.id, claim, now)

    def _fail(self, batch: Batch, job: Job, mode: Mode, error: str, now: datetime) -> bool:
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
    def _run(self, job: Job, batch: Batch) -> TickResult:
        mode = self.modes[job.mode]
        calls = _Ledger(self, job, batch)
        ctx = BatchContext(self.mem.conn, self.mem.config, batch, job, self.holder,
                           self.mem.clock.now(), clock=self.mem.clock,
                           in_commit=calls.in_commit, after_commit=calls.after_commit)
        try:
            tools = mode.tools(ctx)
            calls.terminal = next((t.name for t in tools if t.terminal), None)
            outcome = run_batch(self.provider, mode.messages(ctx), tools, self.limits,
                                self.mem.clock, calls.on_call, calls.flush)
        except Exception as exc:  # BatchFailed, or a crash while building the prompt
            error = str(exc) if isinstance(exc, BatchFailed) else f"batch crashed: {exc!r}"
            return self._failed(job, batch, mode, error, calls)
        finally:
            calls.flush()  # nothing is pending after a commit; this is for any other way out
        return TickResult("committed", job.id, batch.id, receipt=outcome.result,
                          rounds=outcome.rounds, corrections=outcome.corrections)

    def _failed(self, job: Job, batch: Batch, mode: Mode, error: str,
                calls: _Ledger) -> TickResult:
        """Record the failed claim, the calls not yet on record and the lease given back, in
        one write transaction."""
        now = self.mem.clock.now()
        conn = self.mem.conn
        with write(conn):
            refused = calls.write_pending_safely(conn)
            if refused:  # recorded with the batch's own cause, never instead of it
                error = f"{error}; {refused}"
            drop_lease(conn, self.holder)
            fresh = get_batch(conn, batch.id)
            if fresh.state != BatchState.CLAIMED:  # committed meanwhile (a replay): nothing to undo
                result = TickResult("committed", job.id, batch.id)
            else:
                terminal = self._fail(fresh, get_job(conn, job.id), mode, error, now)
                result = TickResult("terminal" if terminal else "failed", job.id, batch.id,
                                    error=error)
        calls.pending.clear()
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


class _Ledger:
    """The usage-ledger rows of one batch's model calls. Each row is written at once in its own
    transaction, except the row of a call that proposes the commit: that one waits for the
    commit and goes into its transaction (`in_commit`, which also gives the lease back); if the
    commit is refused, or never runs (its arguments did not validate), the row is written on its
    own right after, and always before the next model call (`flush`)."""

    def __init__(self, worker: Worker, job: Job, batch: Batch) -> None:
        self.worker, self.job, self.batch = worker, job, batch
        self.terminal: str | None = None  # the commit tool's name
        self.pending: list[tuple[CallRecord, datetime]] = []

    def on_call(self, call: CallLog) -> None:
        reply, provider = call.reply, self.worker.provider
        record = CallRecord(
            self.job.id, self.batch.id, self.job.mode, provider.name,
            (reply.model if reply and reply.model else provider.model),
            reply.usage.input_tokens if reply else 0,
            reply.usage.output_tokens if reply else 0,
            reply.usage.estimated if reply else True, call.latency_ms, call.outcome,
        )
        self.pending.append((record, self.worker.mem.clock.now()))
        commits = call.outcome == "ok" and reply is not None and any(
            c.name == self.terminal for c in reply.tool_calls)
        if not commits:
            self.flush()

    def write_pending(self, conn: sqlite3.Connection) -> None:
        """Write the held rows inside the caller's transaction (kept until it committed)."""
        for record, when in self.pending:
            insert_call(conn, record, when)

    def write_pending_safely(self, conn: sqlite3.Connection) -> str | None:
        """write_pending, undone alone (a savepoint) when the ledger refuses a row; then the
        reason, so the batch's failure is recorded with it instead of the whole transaction
        failing and leaving the batch claimed with no cause on record."""
        conn.execute("SAVEPOINT ledger_rows")
        try:
            self.write_pending(conn)
        except (sqlite3.Error, OverflowError, ValueError) as exc:
            conn.execute("ROLLBACK TO ledger_rows")
            return f"the usage ledger refused a call's row ({exc})"
        finally:
            conn.execute("RELEASE ledger_rows")
        return None

    def flush(self) -> None:
        """Write the held rows now, in their own transaction (BatchFailed naming the cause
        when the ledger refuses them: a refused row is dropped, it would be refused again)."""
        if self.pending:
            with write(self.worker.mem.conn):
                refused = self.write_pending_safely(self.worker.mem.conn)
            self.pending.clear()
            if refused:
                raise BatchFailed(refused)

    def in_commit(self, conn: sqlite3.Connection) -> None:
        self.write_pending(conn)
        drop_lease(conn, self.worker.holder)

    def after_commit(self, ok: bool) -> None:
        if ok:
            self.pending.clear()
            self.worker._holding = False
        else:
            self.flush()


def set_busy(mem: MemoryHome, busy: bool, minutes: float = 10.0) -> None:
    """Mark the agent busy (for at most `minutes`, so a crashed agent cannot stall the worker)."""
    from ..store.connection import set_state

    now = mem.clock.now()
    with write(mem.conn):
        set_state(mem.conn, BUSY_KEY, iso(now + timedelta(minutes=minutes)) if busy else "")
