"""Commands that run model batches: compact, organize, worker, usage, project approve."""

from __future__ import annotations

import threading
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..base.errors import InputError
from ..jobs.records import JobState
from . import followup
from .app import LazyConsole, json_option, open_memory, print_json
from .inspect import console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from ..home.memory import Memory
    from ..home.runs import CompactionRun, JobRun
    from ..jobs.requests import JobReceipt
    from ..jobs.worker import TickResult, Worker

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


def parse_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    if not sep or not lo.strip().isdigit() or not hi.strip().isdigit():
        raise InputError(f"--range must be FROM:TO node numbers, e.g. 1:200; got {text!r}")
    return int(lo), int(hi)


class ProgressBars:
    """A job run drawn for people: a progress bar of committed batches per job on stderr,
    each batch named when claimed (in the bar on a terminal, else one stderr line, so a slow
    model shows where it is), a failed batch's cause at once, and what a wait is for."""

    def __init__(self) -> None:
        self.console = progress_console.get()
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def started(self, label: str, total: int, done: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[note]}"), console=self.console,
                            transient=False)
        self.bar.start()
        self.task = self.bar.add_task(label, total=total, completed=done, note="")

    def claimed(self, line: str) -> None:
        if self.console.is_terminal and self.bar is not None and self.task is not None:
            self.bar.update(self.task, note=line)
        else:
            click.echo(line, err=True)

    def committed(self) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.advance(self.task)

    def failed(self, line: str) -> None:
        click.echo(line, err=True)

    def waiting(self, note: str) -> None:
        click.echo(note, err=True)

    def finished(self, total: int) -> None:
        if self.bar is not None and self.task is not None:  # every batch that ran, counted
            self.bar.update(self.task, total=max(total, 1), completed=total, note="")
            self.bar.stop()
        self.bar = self.task = None


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
        if not wait:
            receipt = mem.compact(parse_range(node_range), model=model)
            from .followup import worker_line, worker_running

            if as_json:
                return print_json({**receipt, "worker_running": worker_running(mem)})
            click.echo(f"compact job {receipt['job_id']} queued")
            click.echo(worker_line(mem, receipt["job_id"], "compact"), err=True)
            return
        run = mem.compact(parse_range(node_range), model=model, wait=True,
                          observer=ProgressBars())
    report = compaction_json(run)
    if as_json:
        print_json({key: report[key] for key in ("job_id", "state", "before", "after")})
    else:
        console.print(f"compact job {run.job_id}: {run.state}; hot timeline "
                      f"{run.before.nodes} nodes / ~{run.before.est_tokens:,} "
                      f"tokens -> {run.after.nodes} nodes / ~{run.after.est_tokens:,} tokens")


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
    with open_memory(ctx) as mem:
        if not wait:
            receipt = mem.organize(mode, scope, retry_blocked, compact_first=compact_first,
                                   model=model)
            return _queued_only(mem, receipt, as_json)
        run = mem.organize(mode, scope, retry_blocked, compact_first=compact_first,
                           model=model, wait=True, observer=ProgressBars())
        vault_path = mem.config.vault_path
    if as_json:
        return print_json(job_run_json(run, vault_path))
    if run.compaction is not None:
        click.echo(followup.compaction_line(run.compaction))
    click.echo(f"{mode} job {run.receipt['job_id']}: {run.state}"
               + (f" ({followup.cli_terms(run.note)})" if run.note else ""))
    for line in followup.recognised_lines(run.recognised, run.provider):
        click.echo(line)
    note = followup.waiting_note(run.before, run.compaction) if mode == "organize" else None
    if note:
        click.echo(note)
    click.echo(followup.vault_line(run.vault, vault_path), err=True)


def job_run_json(run: JobRun, vault_path: Path) -> dict[str, Any]:
    """`organize --json`: the receipt, the final state and what the job changed."""
    recognised = run.recognised
    data: dict[str, Any] = {
        **run.receipt, "final_state": run.state,
        "recognised": {"new_objects": recognised.new_objects,
                       "events": {"linked": recognised.linked,
                                  "archive_only": recognised.archive_only,
                                  "blocked": recognised.blocked}},
        "model": run.provider, "vault": followup.vault_json(run.vault, vault_path),
        "compaction": compaction_json(run.compaction) if run.compaction else None}
    if run.state == JobState.PARTIAL:  # why: a terminal batch, or events still blocked (named)
        data.update(note=run.note, blocked_events=run.blocked_events)
    return data


def compaction_json(run: CompactionRun) -> dict[str, Any]:
    """A compaction run as JSON: its job, state, note and the timeline before and after."""
    return {"job_id": run.job_id, "state": run.state, "note": run.note,
            "before": asdict(run.before), "after": asdict(run.after)}


def _queued_only(mem: Memory, receipt: JobReceipt, as_json: bool) -> None:
    """`organize --no-wait`: the receipt, and who will run the jobs."""
    if as_json:
        return print_json({**receipt, "worker_running": followup.worker_running(mem)})
    first = receipt.get("compact_job_id")
    click.echo(f"{receipt['mode']} job {receipt['job_id']} queued"
               + (f" (already queued: {receipt['state']})" if receipt["replayed"] else "")
               + (f", after compact job {first} moves the hot turns to its queue"
                  if first is not None else ""))
    click.echo(followup.worker_line(mem, receipt["job_id"]), err=True)


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
        calls = f"{row['calls']} ({row['bad']} bad)" if row["bad"] else str(row["calls"])
        table.add_row(row["day"], str(row["mode"]), calls, f"{row['input_tokens']:,}",
                      f"{row['output_tokens']:,}", str(row["estimated"]), str(row["failed"]),
                      f"{row['latency_ms'] / 1000:.1f}")
    console.print(table)
    total = data["total"]
    console.print(f"total: {total['calls']} calls, {total['input_tokens']:,} in, "
                  f"{total['output_tokens']:,} out ({total['estimated_calls']} estimated)")
    if total["bad_calls"]:
        console.print(f"{total['bad_calls']} bad: the provider reported token counts no call "
                      "can have (negative, or 10,000,000 or more); left out of these sums")


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
