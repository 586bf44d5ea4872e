"""A job run to its end by the library: compact first, tick batch after batch until the job
finishes, count what it changed, and bring the vault up to date.

`Memory.organize(wait=True)` and `Memory.compact(wait=True)` run here and return a typed
report; the CLI and the MCP server only call them and print. What a person watches while a job
runs (a batch claimed, a batch failed, what a wait is for) reaches a `RunObserver`, which the
CLI draws as progress bars; the library's default observer says nothing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from ..base.clock import ManualClock, parse_time
from ..base.errors import MemvaultError
from ..base.spaces import EVERY_SPACE
from ..jobs.chain import hot_raw_nodes
from ..jobs.kinds import JobMode
from ..jobs.leases import lease_info, parse_holder
from ..jobs.progress import batch_report, batch_row, describe_claim, failure_line
from ..jobs.records import BatchState, JobState, get_job, job_summary, mark_stopped
from ..jobs.worker import BUSY_KEY, TickResult, Worker
from ..objects.counts import object_counts
from ..store.connection import get_state, write
from ..timeline.counts import event_counts
from ..timeline.hot import timeline_totals
from ..timeline.queue import EventState
from ..vault.projector import ProjectionBusy, render_vault

if TYPE_CHECKING:
    from ..jobs.records import Batch, Job
    from ..jobs.requests import JobReceipt
    from .memory import Memory

FINISHED = (JobState.DONE, JobState.PARTIAL, JobState.FAILED)


class RunStopped(MemvaultError):
    """A run ended at a failure that waiting will not heal (a refused connection, an unknown
    host, a refused key, an unknown model): the job stays queued for a worker, to run once a
    person has fixed the cause."""

    def __init__(self, mode: str, job_id: int, cause: str) -> None:
        super().__init__(
            f"{mode} job {job_id} stopped: {cause}. Waiting would not fix this; the job stays "
            "queued, and `memvault worker` or `memvault serve` (or this command again) runs "
            "it once the cause is fixed")
        self.job_id = job_id
        self.cause = cause


class RunObserver(Protocol):
    """What a job run reports while it runs, for a person watching."""

    def started(self, label: str, total: int, done: int) -> None:
        """A job of `label` (its mode) starts: `total` batches expected, `done` already."""

    def claimed(self, line: str) -> None:
        """A batch was claimed, before its model call: `compact batch 3: nodes 1–8`."""

    def committed(self) -> None:
        """A batch of the job committed."""

    def failed(self, line: str) -> None:
        """A batch failed: which, how often, the cause."""

    def waiting(self, note: str) -> None:
        """Nothing runs now, and why (said once per change, not every poll)."""

    def finished(self, total: int) -> None:
        """The job finished, after `total` batches of it ran (committed or terminal)."""


class QuietRun:
    """The observer of a program that wants only the report."""

    def started(self, label: str, total: int, done: int) -> None:
        pass

    def claimed(self, line: str) -> None:
        pass

    def committed(self) -> None:
        pass

    def failed(self, line: str) -> None:
        pass

    def waiting(self, note: str) -> None:
        pass

    def finished(self, total: int) -> None:
        pass


@dataclass(frozen=True)
class TimelineSize:
    """The hot timeline's active nodes and estimated tokens."""

    nodes: int
    est_tokens: int

    @classmethod
    def now(cls, mem: Memory) -> TimelineSize:
        totals = timeline_totals(mem.conn, EVERY_SPACE)
        return cls(totals["nodes"], totals["est_tokens"])


@dataclass(frozen=True)
class CompactionRun:
    """A compaction run to its end: its state, why it stopped short, the timeline around it."""

    job_id: int
    state: JobState
    note: str | None
    before: TimelineSize
    after: TimelineSize


@dataclass(frozen=True)
class MemoryCounts:
    """Events per state (total, hot, and each archive-queue state) and objects per type."""

    events: dict[str, int]
    objects: dict[str, int]

    @classmethod
    def now(cls, mem: Memory) -> MemoryCounts:
        return cls(event_counts(mem.conn, EVERY_SPACE),
                   {t: sum(by.values())
                    for t, by in object_counts(mem.conn, EVERY_SPACE).items()})


@dataclass(frozen=True)
class Recognised:
    """What a job changed: new objects per type, events newly linked, archive_only, blocked."""

    new_objects: dict[str, int]
    linked: int
    archive_only: int
    blocked: int

    @classmethod
    def between(cls, before: MemoryCounts, after: MemoryCounts) -> Recognised:
        types = sorted(set(before.objects) | set(after.objects))
        new = {t: after.objects.get(t, 0) - before.objects.get(t, 0) for t in types}

        def grew(state: str) -> int:
            return max(after.events.get(state, 0) - before.events.get(state, 0), 0)

        return cls({t: n for t, n in new.items() if n > 0}, grew(EventState.LINKED),
                   grew(EventState.ARCHIVE_ONLY), grew(EventState.BLOCKED))


@dataclass(frozen=True)
class VaultRefresh:
    """What bringing the vault up to date did. `refreshed` is False when the home has no vault
    yet (`memvault project-vault --all` makes it) or another projection was running
    (`busy`), which picks the change up."""

    refreshed: bool
    busy: bool = False
    runs: int = 0  # projector runs, each of at most vault.objects_per_run objects
    summary: dict[str, Any] = field(default_factory=dict)  # the last run's, with the totals

    @property
    def written(self) -> int:
        return int(self.summary.get("written", 0))

    @property
    def remaining(self) -> int:
        return int(self.summary.get("remaining", 0))

    @property
    def errors(self) -> int:
        return int(self.summary.get("errors", 0))


@dataclass(frozen=True)
class JobRun:
    """An organize, deep or compact job run to its end, and what it changed."""

    receipt: JobReceipt
    state: JobState
    provider: str  # the name of the provider the job ran on
    before: MemoryCounts
    recognised: Recognised
    compaction: CompactionRun | None  # the compaction an organize job ran first, if any
    note: str | None  # why a partial job stopped short
    blocked_events: list[int]  # events it was asked about that are still blocked
    vault: VaultRefresh


def wait_a_poll(mem: Memory) -> None:
    """Sleep one poll, or move a manual clock (the demo's, a test's) forward by as much."""
    if isinstance(mem.clock, ManualClock):
        mem.clock.advance(seconds=mem.config.settings.worker.poll_s)
    else:
        time.sleep(mem.config.settings.worker.poll_s)


def run_to_end(mem: Memory, worker: Worker, job_id: int, total: int, label: str,
               observer: RunObserver | None = None) -> JobState:
    """Tick until job `job_id` finishes; its final state. `total` is the batches left; each
    batch is told to `observer` when claimed (before the model is called), a failure at once,
    and while nothing runs, what the run waits for."""
    observer = observer or QuietRun()
    # Batches the job committed already (its first may run in the tick that ended the
    # compaction before it) count as done.
    done = job_summary(mem.conn, job_id)["batches"].get(BatchState.COMMITTED, 0)
    observer.started(label, max(total + done, 1), done)

    def claimed(job: Job, batch: Batch) -> None:
        # Another job's batch (the organize job's first, claimed in the tick that ends the
        # compaction before it) is said on its own line, never drawn on this job's bar.
        if job.id == job_id:
            observer.claimed(_claim_line(mem, job, batch))
        else:
            observer.waiting(_claim_line(mem, job, batch))

    previous, worker.on_claim = worker.on_claim, claimed
    try:
        state = _tick_until_finished(mem, worker, job_id, observer)
    finally:
        worker.on_claim = previous
    batches = job_summary(mem.conn, job_id)["batches"]
    observer.finished(batches.get(BatchState.COMMITTED, 0) + batches.get(BatchState.TERMINAL, 0))
    return state


def _tick_until_finished(mem: Memory, worker: Worker, job_id: int,
                         observer: RunObserver) -> JobState:
    """The loop of `run_to_end`: its job's final state. RunStopped at the first failure of one
    of its batches that waiting will not heal (the retry schedule is for the others)."""
    last_note: str | None = None
    announced: set[tuple[int, int]] = set()  # failures said already: (batch id, count)
    while True:
        result = worker.tick()
        if result.action == "committed" and result.job_id == job_id:
            observer.committed()
        elif result.action in ("failed", "terminal"):
            observer.failed(_batch_failed(mem, result, announced))
        job = get_job(mem.conn, job_id)
        state = job.state
        if result.lasting and result.action == "failed" and result.job_id == job_id \
                and state not in FINISHED:
            with write(mem.conn):  # not left `running` when nothing runs it
                mark_stopped(mem.conn, job_id)
            raise RunStopped(job.mode, job_id, result.error or "")
        if state in FINISHED:
            return state
        note = wait_note(mem, result, job_id, frozenset(announced))
        if note is not None and note != last_note:
            observer.waiting(note)
        last_note = note
        if note is not None:
            wait_a_poll(mem)


def wait_note(mem: Memory, result: TickResult, job_id: int,
              announced: frozenset[tuple[int, int]] = frozenset()) -> str | None:
    """What a run is waiting for after `result` (None when the tick did work). A failed
    batch's cause is named, unless this failure (batch id, count) was `announced` already."""
    if result.action == "waiting":
        lease = lease_info(mem.conn)
        if lease is None:  # released between the tick and this look
            return "waiting for the worker lease"
        holder = parse_holder(lease["holder"])
        who = holder.describe() if holder else lease["holder"]
        until = _clock_time(mem, datetime(1970, 1, 1, tzinfo=UTC)
                            + timedelta(microseconds=lease["expires_us"]))
        return f"waiting for the lease held by worker {who} until {until}"
    if result.action == "busy":
        busy_until = get_state(mem.conn, BUSY_KEY)
        return ("waiting: the agent said it is busy"
                + (f" until {_clock_time(mem, parse_time(busy_until))}" if busy_until else ""))
    if result.action == "idle":
        retrying = batch_report(mem.conn)["retrying"]
        if retrying:  # the cause, not just "backoff": the model may be unreachable
            batch = retrying[0]
            if (batch["batch_id"], batch["failures"]) not in announced:
                return "waiting: " + _failure_line(mem, batch)
            return (f"waiting: {batch['mode']} batch {batch['batch_id']} is tried again at "
                    f"{_clock_time(mem, parse_time(batch['retry_at']))}")
        return f"waiting: job {job_id} has no batch due now"
    return None


def _clock_time(mem: Memory, when: datetime) -> str:
    return when.astimezone(mem.tz).strftime("%H:%M:%S")


def _failure_line(mem: Memory, batch: dict[str, Any]) -> str:
    """A `batch_report` row in one line, its next try as a local clock time."""
    retry_at = batch.get("retry_at")
    shown = {**batch, "retry_at": _clock_time(mem, parse_time(retry_at)) if retry_at else None}
    return failure_line(shown, mem.config.settings.worker.max_failed_claims)


def _batch_failed(mem: Memory, result: TickResult, announced: set[tuple[int, int]]) -> str:
    """The line said at once when a batch fails: which batch, how often, the cause (noted in
    `announced`, so the wait that follows need not repeat it)."""
    if result.batch_id is None:
        return f"{result.action}: {result.error}"
    batch = batch_row(mem.conn, result.batch_id)
    announced.add((batch["batch_id"], batch["failures"]))
    line = _failure_line(mem, batch)
    return line + ("; terminal, not retried" if result.action == "terminal" else "")


def _claim_line(mem: Memory, job: Job, batch: Batch) -> str:
    """`organize batch 3: event 2 chars 0–8,000 of 19,204 (try 2)`."""
    return (f"{job.mode} batch {batch.id}: {describe_claim(mem.conn, batch.claim)}"
            + (f" (try {batch.failures + 1})" if batch.failures else ""))


def run_compaction(mem: Memory, worker: Worker, job_id: int,
                   observer: RunObserver | None = None) -> CompactionRun:
    """Run a queued compaction to its end; what it did to the hot timeline."""
    before = TimelineSize.now(mem)
    batches = -(-hot_raw_nodes(mem.conn) // mem.config.settings.compact.nodes_per_batch)
    state = run_to_end(mem, worker, job_id, batches, JobMode.COMPACT, observer)
    return CompactionRun(job_id, state, job_summary(mem.conn, job_id)["note"], before,
                         TimelineSize.now(mem))


def run_job(mem: Memory, receipt: JobReceipt, observer: RunObserver | None = None) -> JobRun:
    """Run a queued organize or deep job to its end (first the compaction it asked for, if
    any), then bring the vault up to date; what it changed."""
    before = MemoryCounts.now(mem)
    worker = Worker(mem, scheduler=False)  # each job on the provider it was queued with
    first = receipt.get("compact_job_id")
    compaction = run_compaction(mem, worker, first, observer) if first is not None else None
    queued = MemoryCounts.now(mem).events
    settings = mem.config.settings
    total = (queued[EventState.PENDING] + queued[EventState.CONTINUE]
             if receipt["mode"] == JobMode.ORGANIZE else
             sum(before.objects.values()) // settings.deep.objects_per_batch + 1)
    state = run_to_end(mem, worker, receipt["job_id"], total, receipt["mode"], observer)
    summary = job_summary(mem.conn, receipt["job_id"])
    partial = state == JobState.PARTIAL
    return JobRun(receipt, state, job_provider(mem, receipt["job_id"]), before,
                  Recognised.between(before, MemoryCounts.now(mem)), compaction,
                  summary["note"] if partial else None,
                  summary["blocked_events"] if partial else [], refresh_vault(mem))


def job_provider(mem: Memory, job_id: int) -> str:
    """The name of the provider a job was queued with (the configured one when none)."""
    recorded = get_job(mem.conn, job_id).provider
    return str((recorded or {}).get("name") or mem.config.settings.model.provider)


def refresh_vault(mem: Memory, first: Sequence[str] = ()) -> VaultRefresh:
    """Bring the home's vault up to date, in projector runs of at most vault.objects_per_run
    objects each, until nothing is pending (or a run changes nothing: what fails stays
    pending and is reported). `first`: objects rendered in the first run whatever its limit
    (a correction's). A home without a vault yet is left without one."""
    path = mem.config.vault_path
    if not path.is_dir():
        return VaultRefresh(refreshed=False)
    runs, written, errors = 0, 0, 0
    summary: dict[str, Any] = {}
    left = None  # objects pending after the previous run
    while True:
        try:
            result = render_vault(mem.conn, path, all=False, config=mem.config,
                                  now=mem.clock.now(), first=first if runs == 0 else ())
        except ProjectionBusy:
            return VaultRefresh(refreshed=runs > 0, busy=True, runs=runs, summary=summary)
        runs += 1
        summary = result.summary()
        written += summary["written"]
        errors = summary["errors"]
        # Done, or no closer to done: an object that fails every run stays pending (and is
        # reported); it must not keep this loop going.
        if not summary["remaining"] or (left is not None and summary["remaining"] >= left):
            break
        left = summary["remaining"]
    return VaultRefresh(refreshed=True, runs=runs,
                        summary={**summary, "written": written, "errors": errors})
