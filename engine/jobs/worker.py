"""The worker: one lease, one batch at a time, batch after batch.

Each tick: let the scheduler create due jobs; unless the agent is busy, take the lease, pick the
next job by rotation, claim (or re-claim) its batch, run the model loop and commit. A failed
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
from ..store.leases import acquire_lease, process_holder, release_lease
from ..store.ledger import CallRecord, record_call
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


def agent_busy(mem: MemoryHome, now: datetime) -> bool:
    until = get_state(mem.conn, BUSY_KEY)
    return bool(until) and now < parse_time(until)


class Worker:
    """Runs batches for one memory home. `run(burst=True)` works until nothing is due."""

    def __init__(
        self, mem: MemoryHome, provider: Provider, holder: str | None = None,
        modes: dict[str, Mode] | None = None, scheduler: bool = True,
        on_tick: Callable[[TickResult], None] | None = None,
    ) -> None:
        self.mem = mem
        self.provider = provider
        # host:pid:start:tag, so a worker on this host can tell when this one died
        self.holder = holder or process_holder(f"{id(self):x}")
        self.modes = modes or default_modes()
        self.scheduler = Scheduler(mem.conn, mem.config, mem.tz) if scheduler else None
        self.limits = BatchLimits.from_config(mem.config)
        self.on_tick = on_tick

    @property
    def lease_s(self) -> float:
        return self.mem.config["batch.timeout_s"] + self.mem.config["worker.lease_extra_s"]

    def tick(self) -> TickResult:
        """One step of work; never raises for a batch failure (it is recorded instead)."""
        now = self.mem.clock.now()
        self.mem.sync_recall_index()  # keep recall's index caught up, a bounded step a poll
        if self.scheduler:
            self.scheduler.check(now)
        if agent_busy(self.mem, now):
            return self._report(TickResult("busy"))
        if not acquire_lease(self.mem.conn, self.holder, now, self.lease_s):
            return self._report(TickResult("waiting"))
        try:
            for job in rotation(self.mem.conn, now):
                batch = self._claim(job, now)
                if batch is not None:
                    return self._report(self._run(job, batch))
            return self._report(TickResult("idle"))
        finally:
            release_lease(self.mem.conn, self.holder)

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
                stop.wait(self.mem.config["worker.poll_s"])
        return ran

    # -- claims -------------------------------------------------------------------------------
    def _claim(self, job: Job, now: datetime) -> Batch | None:
        mode = self.modes.get(job.mode)
        if mode is None:
            return None
        conn, config = self.mem.conn, self.mem.config
        with write(conn):
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
        config = self.mem.config
        # Stored errors are shown by status and check: a model's message may quote a key.
        error = redact_secrets(error)
        terminal = record_failure(self.mem.conn, batch, error, now,
                                  config["worker.max_failed_claims"], config["worker.backoff_s"])
        if terminal:
            mode.on_terminal(self.mem.conn, batch, now)
        if job.origin != "explicit":
            pause_automatic(self.mem.conn, now, config["worker.cooldown_s"])
        return terminal

    # -- running ------------------------------------------------------------------------------
    def _run(self, job: Job, batch: Batch) -> TickResult:
        mode = self.modes[job.mode]
        ctx = BatchContext(self.mem.conn, self.mem.config, batch, job, self.holder,
                           self.mem.clock.now(), clock=self.mem.clock)

        def ledger(call: CallLog) -> None:
            reply = call.reply
            record_call(self.mem.conn, CallRecord(
                job.id, batch.id, job.mode, self.provider.name,
                (reply.model if reply and reply.model else self.provider.model),
                reply.usage.input_tokens if reply else 0,
                reply.usage.output_tokens if reply else 0,
                reply.usage.estimated if reply else True, call.latency_ms, call.outcome,
            ), self.mem.clock.now())

        try:
            outcome = run_batch(self.provider, mode.messages(ctx), mode.tools(ctx), self.limits,
                                self.mem.clock, ledger)
        except Exception as exc:  # BatchFailed, or a crash while building the prompt
            error = str(exc) if isinstance(exc, BatchFailed) else f"batch crashed: {exc!r}"
            now = self.mem.clock.now()
            with write(self.mem.conn):
                fresh = get_batch(self.mem.conn, batch.id)
                if fresh.state != "claimed":  # committed meanwhile (a replay): nothing to undo
                    return TickResult("committed", job.id, batch.id)
                terminal = self._fail(fresh, get_job(self.mem.conn, job.id), mode, error, now)
            return TickResult("terminal" if terminal else "failed", job.id, batch.id,
                              error=error)
        return TickResult("committed", job.id, batch.id, receipt=outcome.result,
                          rounds=outcome.rounds, corrections=outcome.corrections)

    def _report(self, result: TickResult) -> TickResult:
        if self.on_tick:
            self.on_tick(result)
        return result


def set_busy(mem: MemoryHome, busy: bool, minutes: float = 10.0) -> None:
    """Mark the agent busy (for at most `minutes`, so a crashed agent cannot stall the worker)."""
    from ..store.connection import set_state

    now = mem.clock.now()
    with write(mem.conn):
        set_state(mem.conn, BUSY_KEY, iso(now + timedelta(minutes=minutes)) if busy else "")
