"""`memvault demo`: the main job on the built-in offline model, on the bundled sample.

Ingest the sample (once per home), compact the whole hot timeline, organize every queued event,
run the deep review, render the vault and print status.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import click

from ..base.clock import ManualClock
from ..base.config import load_config
from ..home.memory import Memory
from ..home.sample import ingest_sample
from ..objects.ids import OBJECT_TYPES
from .inspect import console, render_status
from .work import ProgressBars, make_worker

DEMO_TIME = datetime(2026, 11, 2, 9, 0, tzinfo=timezone(timedelta(hours=8)))


def run_demo(mem: Memory, model: str | None = None) -> dict[str, Any]:
    """compact -> organize -> deep on the home, with progress bars; return what each made."""
    from ..home.runs import run_to_end  # the worker, its modes and the vault: not for --help

    worker = make_worker(mem, model, scheduler=False)
    before = mem.timeline_view(max_bytes=10**9)
    receipt = mem.compact(model=model)
    run_to_end(mem, worker, receipt["job_id"], -(-before["total_nodes"] // 8), "compact",
               ProgressBars())
    after = mem.timeline_view(max_bytes=10**9)
    pending = mem.status()["events"]["pending"]
    organize = mem.organize("organize", scope="demo: the bundled sample", model=model)
    run_to_end(mem, worker, organize["job_id"], pending, "organize", ProgressBars())
    objects = sum(sum(v.values()) for v in mem.status()["objects"].values())
    deep = mem.organize("deep", scope="demo: nightly review", model=model)
    run_to_end(mem, worker, deep["job_id"], -(-objects // 4), "deep", ProgressBars())
    return {"timeline": {"before": (before["total_nodes"], before["total_est_tokens"]),
                         "after": (after["total_nodes"], after["total_est_tokens"])}}


@click.command()
@click.option("--model", default=None, metavar="NAME",
              help="Provider (default: the built-in offline model).")
@click.pass_context
def demo(ctx: click.Context, model: str | None) -> None:
    """Ingest the bundled sample, compact, organize, deep, render the vault, print status."""
    home = ctx.find_root().obj["home"]
    # A new home processes the sample as of the morning after its last event, so the demo (and
    # the committed sample_vault/) come out byte for byte the same on every machine.
    fresh = not load_config(home).db_path.exists()
    with Memory.open(home, clock=ManualClock(DEMO_TIME) if fresh else None) as mem:
        added = ingest_sample(mem)
        console.print(f"sample: {added} events ingested into {mem.config.home}" if added
                      else "sample already ingested in this home")
        report = run_demo(mem, model or "builtin")
        (b_nodes, b_tokens), (a_nodes, a_tokens) = (report["timeline"]["before"],
                                                    report["timeline"]["after"])
        console.print(f"hot timeline: {b_nodes} nodes / ~{b_tokens:,} tokens -> "
                      f"{a_nodes} nodes / ~{a_tokens:,} tokens")
        done = mem.render_vault(all=True).summary()
        console.print(f"vault: {done['objects']} objects rendered, {done['written']} files "
                      f"written, {done['errors']} errors: open "
                      f"{mem.config.vault_path / 'objects' / 'README.md'}")
        show_objects(mem)
        render_status(mem.status())


def show_objects(mem: Memory) -> None:
    """Print what the demo made, a few objects per type."""
    for type_ in OBJECT_TYPES:
        rows = mem.list_objects(type_)
        if rows:
            names = ", ".join(r["name"] for r in rows[:8])
            more = f" (+{len(rows) - 8} more)" if len(rows) > 8 else ""
            console.print(f"[bold]{type_}[/bold] {len(rows)}: {names}{more}")
