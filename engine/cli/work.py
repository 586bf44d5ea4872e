"""Commands that run model batches: compact, organize, worker, usage, project approve."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from ..base.clock import ManualClock, parse_time
from ..base.display import for_terminal
from ..base.errors import InputError
from ..store.connection import get_state
from ..store.jobs import get_job, job_summary
from ..store.leases import lease_info, parse_holder
from .app import LazyConsole, escape, json_option, open_memory, print_json
from .inspect import console

if TYPE_CHECKING:
    from ..home.memory import Memory
    from ..jobs.worker import TickResult, Worker

FINISHED = ("done", "partial", "failed")
# Progress bars go to stderr: stdout carries the result (and stays valid JSON with --json).
progress_console = LazyConsole(progress=True, stderr=True, highlight=False, soft_wrap=True,
                               emoji=False)


def model_option(f: Any) -> Any:
    return click.option(
        "--model", "model", default=None, metavar="NAME",
        help="Provider: builtin (default), openai, openai:MODEL or scripted; "
             "else model.provider in memvault.toml.",
    )(f)


def make_worker(mem: Memory, model: str | None, **kwargs: Any) -> Worker:
    provider, _, name = (model or "").partition(":")
    return mem.worker(provider or None, name or None, **kwargs)


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
        mem.clock.advance(seconds=mem.config["worker.poll_s"])
    else:
        time.sleep(mem.config["worker.poll_s"])


def wait_note(mem: Memory, result: TickResult, job_id: int) -> str | None:
    """What `--wait` is waiting for after `result` (None when the tick did work)."""
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

        until = get_state(mem.conn, BUSY_KEY)
        return ("waiting: the agent said it is busy"
                + (f" until {_clock_time(mem, parse_time(until))}" if until else ""))
    if result.action == "idle":
        return f"waiting: job {job_id} has no batch due now (a failed batch waits out its backoff)"
    return None


def _clock_time(mem: Memory, when: datetime) -> str:
    return when.astimezone(mem.tz).strftime("%H:%M:%S")


def run_to_end(mem: Memory, worker: Worker, job_id: int, total: int, label: str) -> str:
    """Tick until the job finishes, with a progress bar of committed batches; while nothing
    runs, say on stderr what it waits for (once per change, not every poll)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    last_note: str | None = None
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[note]}"), console=progress_console.get(),
                  transient=False) as bar:
        task = bar.add_task(label, total=max(total, 1), note="")
        while True:
            result: TickResult = worker.tick()
            if result.action == "committed" and result.job_id == job_id:
                bar.advance(task)
            elif result.action in ("failed", "terminal"):
                # The bar writes under the terminal guard: a model's words in the error are
                # escaped here (and rich markup in them is not markup).
                error = escape(for_terminal(result.error or ""))
                bar.update(task, note=f"[yellow]{result.action}: {error}[/yellow]")
            state = get_job(mem.conn, job_id).state
            if state in FINISHED:
                bar.update(task, completed=max(total, 1))
                return state
            note = wait_note(mem, result, job_id)
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
@model_option
@json_option
@click.pass_context
def compact(ctx: click.Context, node_range: str | None, wait: bool, model: str | None,
            as_json: bool) -> None:
    """Compact the hot timeline: fold runs of nodes into shorter summary heads."""
    with open_memory(ctx) as mem:
        before = mem.timeline_view()
        receipt = mem.compact(parse_range(node_range))
        if not wait:
            from .followup import worker_line, worker_running

            if as_json:
                return print_json({**receipt, "worker_running": worker_running(mem)})
            click.echo(f"compact job {receipt['job_id']} queued")
            click.echo(worker_line(mem, receipt["job_id"], "compact"), err=True)
            return
        worker = make_worker(mem, model, scheduler=False)
        state = run_to_end(mem, worker, receipt["job_id"],
                           -(-before["total_nodes"] // mem.config["compact.nodes_per_batch"]),
                           "compact")
        after = mem.timeline_view()
    report = {"job_id": receipt["job_id"], "state": state,
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
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Run the job to its end here (progress bar, then what was recognised); "
                   "--no-wait only queues it for `memvault serve` or `memvault worker`.")
@model_option
@json_option
@click.pass_context
def organize(ctx: click.Context, mode: str, scope: str | None, retry_blocked: bool, wait: bool,
             model: str | None, as_json: bool) -> None:
    """Organize queued events into objects (or, --mode deep, review every object).

    Runs the job here to its end by default, as compact does, then reports what was
    recognised and refreshes the vault; --no-wait only queues it."""
    from . import followup

    with open_memory(ctx) as mem:
        receipt = mem.organize(mode, scope, retry_blocked)
        if not wait:
            if as_json:
                return print_json({**receipt, "worker_running": followup.worker_running(mem)})
            click.echo(f"{mode} job {receipt['job_id']} queued"
                       + (f" (already queued: {receipt['state']})" if receipt["replayed"]
                          else ""))
            click.echo(followup.worker_line(mem, receipt["job_id"]), err=True)
            return
        before = followup.counts(mem)
        total = (before["events"]["pending"] + before["events"]["continue"]
                 if mode == "organize" else
                 sum(before["objects"].values()) // mem.config["deep.objects_per_batch"] + 1)
        worker = make_worker(mem, model, scheduler=False)
        state = run_to_end(mem, worker, receipt["job_id"], total, mode)
        report = followup.recognised(before, followup.counts(mem))
        partial = job_summary(mem.conn, receipt["job_id"]) if state == "partial" else None
        vault = followup.refresh_vault(mem)
    if as_json:
        data = {**receipt, "final_state": state, "recognised": report,
                "model": worker.provider.name, "vault": vault}
        if partial:  # why: a terminal batch, or events still blocked (named)
            data.update(note=partial["note"], blocked_events=partial["blocked_events"])
        return print_json(data)
    click.echo(f"{mode} job {receipt['job_id']}: {state}"
               + (f" ({partial['note']})" if partial and partial["note"] else ""))
    for line in followup.recognised_lines(report, worker.provider.name):
        click.echo(line)
    note = followup.waiting_note(before) if mode == "organize" else None
    if note:
        click.echo(note)
    click.echo(vault["line"], err=True)


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
