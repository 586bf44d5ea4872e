"""Commands that run model batches: compact, organize, worker, usage, project approve."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from ..base.clock import ManualClock, parse_time
from ..base.errors import InputError
from ..jobs.leases import lease_info, parse_holder
from ..jobs.records import BatchState, JobState, get_job, job_summary
from ..store.connection import get_state
from ..timeline.queue import EventState
from .app import LazyConsole, json_option, open_memory, print_json
from .inspect import console

if TYPE_CHECKING:
    from ..home.memory import Memory
    from ..jobs.records import Batch, Job
    from ..jobs.requests import JobReceipt
    from ..jobs.worker import TickResult, Worker

FINISHED = (JobState.DONE, JobState.PARTIAL, JobState.FAILED)
# Progress bars go to stderr: stdout carries the result (and stays valid JSON with --json).
progress_console = LazyConsole(progress=True, stderr=True, highlight=False, soft_wrap=True,
                               emoji=False)


def model_option(f: Any) -> Any:
    """`--model` of a process that runs the worker."""
    return click.option(
        "--model", "model", default=None, metavar="NAME",
        help="Provider (builtin, openai or openai:MODEL; else model.provider in "
             "memvault.toml) of the jobs this worker's schedule creates and of jobs queued "
             "without one; every other job runs on the provider it was queued with.",
    )(f)


def job_option(f: Any) -> Any:
    """`--model` of a command that queues jobs: only the jobs it queues run on it."""
    return click.option(
        "--model", "model", default=None, metavar="NAME",
        help="Provider of the jobs this command queues: builtin, openai or openai:MODEL; "
             "else model.provider in memvault.toml. Jobs queued earlier keep theirs.",
    )(f)


def make_worker(mem: Memory, model: str | None, **kwargs: Any) -> Worker:
    """A worker whose `model` (else the configured provider) runs the jobs its scheduler
    creates and jobs queued without a provider; every other job runs on its own."""
    provider, _, name = (model or "").partition(":")
    return mem.worker(provider or None, name or None, **kwargs)


def job_provider(mem: Memory, job_id: int) -> str:
    """The name of the provider a job was queued with (the configured one when none)."""
    recorded = get_job(mem.conn, job_id).provider
    return str((recorded or {}).get("name") or mem.config.settings.model.provider)


def parse_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    if not sep or not lo.strip().isdigit() or not hi.strip().isdigit():
        raise InputError(f"--range must be FROM:TO node numbers, e.g. 1:200; got {text!r}")
    return int(lo), int(hi)


def wait_a_poll(mem: Memory) -> None:
    """Sleep one poll, or move a manual clock (the demo's) forward by as much instead."""
    if isinstance(mem.clock, ManualClock):
        mem.clock.advance(seconds=mem.config.settings.worker.poll_s)
    else:
        time.sleep(mem.config.settings.worker.poll_s)


def wait_note(mem: Memory, result: TickResult, job_id: int,
              announced: frozenset[tuple[int, int]] = frozenset()) -> str | None:
    """What `--wait` is waiting for after `result` (None when the tick did work). A failed
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
        from ..jobs.worker import BUSY_KEY

        busy_until = get_state(mem.conn, BUSY_KEY)
        return ("waiting: the agent said it is busy"
                + (f" until {_clock_time(mem, parse_time(busy_until))}" if busy_until else ""))
    if result.action == "idle":
        from ..jobs.progress import batch_report

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
    from ..jobs.progress import failure_line

    retry_at = batch.get("retry_at")
    shown = {**batch, "retry_at": _clock_time(mem, parse_time(retry_at)) if retry_at else None}
    return failure_line(shown, mem.config.settings.worker.max_failed_claims)


def _batch_failed(mem: Memory, result: TickResult, announced: set[tuple[int, int]]) -> str:
    """The line said at once when a batch fails: which batch, how often, the cause (noted in
    `announced`, so the wait that follows need not repeat it)."""
    from ..jobs.progress import batch_row

    if result.batch_id is None:
        return f"{result.action}: {result.error}"
    batch = batch_row(mem.conn, result.batch_id)
    announced.add((batch["batch_id"], batch["failures"]))
    line = _failure_line(mem, batch)
    return line + ("; terminal, not retried" if result.action == "terminal" else "")


def run_to_end(mem: Memory, worker: Worker, job_id: int, total: int, label: str) -> str:
    """Tick until the job finishes, with a progress bar of committed batches. Each batch is
    named when claimed, before the model is called (in the bar on a terminal, else one stderr
    line), so a slow model shows where it is; a failed batch's cause is said at once; while
    nothing runs, say on stderr what it waits for (once per change, not every poll)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = progress_console.get()
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[note]}"), console=console,
                  transient=False) as bar:
        # Batches the job committed already (its first may run in the tick that ended the
        # compaction before it) count as done, and `total` as what is left.
        done = job_summary(mem.conn, job_id)["batches"].get(BatchState.COMMITTED, 0)
        task = bar.add_task(label, total=max(total + done, 1), completed=done, note="")

        def claimed(job: Job, batch: Batch) -> None:
            what = _claim_line(mem, job, batch)
            if console.is_terminal:
                bar.update(task, note=what)
            else:
                click.echo(what, err=True)

        previous, worker.on_claim = worker.on_claim, claimed
        try:
            state = _tick_until_finished(mem, worker, job_id, lambda: bar.advance(task))
        finally:
            worker.on_claim = previous
        bar.update(task, completed=max(total + done, 1), note="")
        return state


def _claim_line(mem: Memory, job: Job, batch: Batch) -> str:
    """`organize batch 3: event 2 chars 0–8,000 of 19,204 (try 2)`."""
    from ..jobs.progress import describe_claim

    return (f"{job.mode} batch {batch.id}: {describe_claim(mem.conn, job.mode, batch.claim)}"
            + (f" (try {batch.failures + 1})" if batch.failures else ""))


def _tick_until_finished(mem: Memory, worker: Worker, job_id: int,
                         advance: Callable[[], None]) -> str:
    """The loop of `run_to_end`: its job's final state."""
    last_note: str | None = None
    announced: set[tuple[int, int]] = set()  # failures said already: (batch id, count)
    while True:
        result: TickResult = worker.tick()
        if result.action == "committed" and result.job_id == job_id:
            advance()
        elif result.action in ("failed", "terminal"):
            click.echo(_batch_failed(mem, result, announced), err=True)
        state = get_job(mem.conn, job_id).state
        if state in FINISHED:
            return state
        note = wait_note(mem, result, job_id, frozenset(announced))
        if note is not None and note != last_note:
            click.echo(note, err=True)
        last_note = note
        if note is not None:
            wait_a_poll(mem)


@click.command()
@click.option("--range", "node_range", default=None, metavar="FROM:TO",
              help="Node numbers to cover (see `memvault timeline`); default: all hot nodes.")
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Run the job to its end here, with a progress bar.")
@job_option
@json_option
@click.pass_context
def compact(ctx: click.Context, node_range: str | None, wait: bool, model: str | None,
            as_json: bool) -> None:
    """Compact the hot timeline: fold runs of nodes into shorter summary heads."""
    with open_memory(ctx) as mem:
        before = mem.timeline_view()
        receipt = mem.compact(parse_range(node_range), model=model)
        if not wait:
            from .followup import worker_line, worker_running

            if as_json:
                return print_json({**receipt, "worker_running": worker_running(mem)})
            click.echo(f"compact job {receipt['job_id']} queued")
            click.echo(worker_line(mem, receipt["job_id"], "compact"), err=True)
            return
        worker = make_worker(mem, None, scheduler=False)  # each job on its own provider
        state = run_to_end(mem, worker, receipt["job_id"],
                           -(-before["total_nodes"] // mem.config.settings.compact.nodes_per_batch),
                           "compact")
        after = mem.timeline_view()
    report: dict[str, Any] = {
        "job_id": receipt["job_id"], "state": state,
        "before": {"nodes": before["total_nodes"], "est_tokens": before["total_est_tokens"]},
        "after": {"nodes": after["total_nodes"], "est_tokens": after["total_est_tokens"]}}
    if as_json:
        print_json(report)
    else:
        console.print(f"compact job {receipt['job_id']}: {state}; hot timeline "
                      f"{report['before']['nodes']} nodes / ~{report['before']['est_tokens']:,} "
                      f"tokens -> {report['after']['nodes']} nodes / "
                      f"~{report['after']['est_tokens']:,} tokens")


@click.command()
@click.option("--mode", type=click.Choice(["organize", "deep"]), default="organize",
              show_default=True, help="organize queued events, or review every object (deep).")
@click.option("--scope", default=None, help="A goal and retrieval hint for the model.")
@click.option("--retry-blocked", is_flag=True, help="Unblock blocked events once.")
@click.option("--compact/--no-compact", "compact_first", default=True, show_default=True,
              help="First compact the raw turns now on the hot timeline (they become summary "
                   "heads, expandable), so the latest conversation is organized too; "
                   "--no-compact organizes only what was queued already.")
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Run the job to its end here (progress bar, then what was recognised); "
                   "--no-wait only queues it for `memvault serve` or `memvault worker`.")
@job_option
@json_option
@click.pass_context
def organize(ctx: click.Context, mode: str, scope: str | None, retry_blocked: bool,
             compact_first: bool, wait: bool, model: str | None, as_json: bool) -> None:
    """Organize queued events into objects (or, --mode deep, review every object).

    organize first compacts the raw turns on the hot timeline, so what was just said is
    organized too (--no-compact: only what was queued already). Runs the jobs here to their
    end by default, then reports what was recognised and refreshes the vault; --no-wait only
    queues them."""
    from . import followup

    with open_memory(ctx) as mem:
        receipt = mem.organize(mode, scope, retry_blocked, compact_first=compact_first,
                               model=model)
        if not wait:
            return _queued_only(mem, receipt, as_json)
        before = followup.counts(mem)
        worker = make_worker(mem, None, scheduler=False)  # each job on its own provider
        provider = job_provider(mem, receipt["job_id"])
        compaction = _compact_first(mem, worker, receipt["compact_job_id"])
        queued = followup.counts(mem)["events"]
        total = (queued[EventState.PENDING] + queued[EventState.CONTINUE] if mode == "organize" else
                 sum(before["objects"].values()) // mem.config.settings.deep.objects_per_batch + 1)
        state = run_to_end(mem, worker, receipt["job_id"], total, mode)
        report = followup.recognised(before, followup.counts(mem))
        partial = job_summary(mem.conn, receipt["job_id"]) if state == JobState.PARTIAL else None
        vault = followup.refresh_vault(mem)
    if as_json:
        data = {**receipt, "final_state": state, "recognised": report,
                "model": provider, "vault": vault, "compaction": compaction}
        if partial:  # why: a terminal batch, or events still blocked (named)
            data.update(note=partial["note"], blocked_events=partial["blocked_events"])
        return print_json(data)
    if compaction is not None:
        click.echo(followup.compaction_line(compaction))
    click.echo(f"{mode} job {receipt['job_id']}: {state}"
               + (f" ({partial['note']})" if partial and partial["note"] else ""))
    for line in followup.recognised_lines(report, provider):
        click.echo(line)
    note = followup.waiting_note(before, compacted=compaction) if mode == "organize" else None
    if note:
        click.echo(note)
    click.echo(vault["line"], err=True)


def _queued_only(mem: Memory, receipt: JobReceipt, as_json: bool) -> None:
    """`organize --no-wait`: the receipt, and who will run the jobs."""
    from . import followup

    if as_json:
        return print_json({**receipt, "worker_running": followup.worker_running(mem)})
    first = receipt.get("compact_job_id")
    click.echo(f"{receipt['mode']} job {receipt['job_id']} queued"
               + (f" (already queued: {receipt['state']})" if receipt["replayed"] else "")
               + (f", after compact job {first} moves the hot turns to its queue"
                  if first is not None else ""))
    click.echo(followup.worker_line(mem, receipt["job_id"]), err=True)


def _compact_first(mem: Memory, worker: Worker, job_id: int | None) -> dict[str, Any] | None:
    """Run the compaction an organize request queued (if any) to its end; what it did."""
    if job_id is None:
        return None
    from ..jobs.chain import hot_raw_nodes
    from ..timeline.hot import timeline_totals

    before = timeline_totals(mem.conn)
    batches = -(-hot_raw_nodes(mem.conn) // mem.config.settings.compact.nodes_per_batch)
    state = run_to_end(mem, worker, job_id, batches, "compact")
    return {"job_id": job_id, "state": state, "note": job_summary(mem.conn, job_id)["note"],
            "before": before, "after": timeline_totals(mem.conn)}


@click.command()
@click.option("--burst", is_flag=True, help="Stop when nothing is due instead of polling.")
@model_option
@click.pass_context
def worker(ctx: click.Context, burst: bool, model: str | None) -> None:
    """Run the worker in the foreground: scheduler, lease, batch after batch (Ctrl-C stops)."""
    stop = threading.Event()

    def show(result: TickResult) -> None:
        if result.action not in ("idle", "busy", "waiting"):
            console.print(f"{result.action} job {result.job_id} batch {result.batch_id}"
                          + (f": {result.error}" if result.error else ""))

    with open_memory(ctx) as mem:
        w = make_worker(mem, model, on_tick=show)
        console.print(f"worker {w.holder} on {mem.config.home} with {w.provider.name}")
        try:
            ran = w.run(burst=burst, stop=stop)
        except KeyboardInterrupt:
            stop.set()
            ran = -1
    if ran >= 0:
        console.print(f"ran {ran} batch(es)")


@click.command()
@click.option("--days", type=click.IntRange(1, 3650), default=30, show_default=True,
              help="How many days back to show.")
@json_option
@click.pass_context
def usage(ctx: click.Context, days: int, as_json: bool) -> None:
    """Model calls and tokens per day and mode, from the usage ledger."""
    with open_memory(ctx, readonly=True) as mem:
        data = mem.usage(days)
    if as_json:
        return print_json(data)
    from rich.table import Table

    table = Table(title="model usage", title_justify="left")
    for column in ("day", "mode", "calls", "input", "output", "estimated", "failed", "seconds"):
        table.add_column(column)
    for row in data["per_day"]:
        table.add_row(row["day"], str(row["mode"]), str(row["calls"]), f"{row['input_tokens']:,}",
                      f"{row['output_tokens']:,}", str(row["estimated"]), str(row["failed"]),
                      f"{row['latency_ms'] / 1000:.1f}")
    console.print(table)
    total = data["total"]
    console.print(f"total: {total['calls']} calls, {total['input_tokens']:,} in, "
                  f"{total['output_tokens']:,} out ({total['estimated_calls']} estimated)")


@click.group()
def project() -> None:
    """Projects: approve a candidate project."""


@project.command("approve")
@click.argument("project_id", metavar="ID")
@json_option
@click.pass_context
def approve(ctx: click.Context, project_id: str, as_json: bool) -> None:
    """Activate a candidate project (the only way one becomes active)."""
    with open_memory(ctx) as mem:
        result = mem.approve_project(project_id)
    if as_json:
        print_json(result)
    else:
        console.print(f"{result['id']}: active" + ("" if result["changed"] else " (already)"))
