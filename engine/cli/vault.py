"""`memvault project-vault` and `memvault watch`: the vault's commands.

The command line is the one part of the engine that imports the vault: the vault package
itself never imports the command line.

`project-vault` is safe from cron or a systemd timer: runs never overlap (a second one skips
with exit status 0), `--quiet` prints nothing unless something failed, and a failure is kept in
the store for `memvault status` as well as giving exit status 1.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

import click

from .app import LazyConsole, json_option, open_memory, print_json

if TYPE_CHECKING:
    from ..vault.projector import ProjectionResult
    from ..vault.watcher import WatchOutcome

console = LazyConsole(highlight=False, soft_wrap=True)
err_console = LazyConsole(stderr=True, highlight=False, soft_wrap=True)
# The projection's bar draws itself (cursor moves): it writes under the terminal guard and
# shows only counts.
bar_console = LazyConsole(progress=True, stderr=True, highlight=False, soft_wrap=True)


@click.command("project-vault")
@click.option("--all", "all_", is_flag=True,
              help="Render every pending object (progress bar), not one batch.")
@click.option("--rebuild", is_flag=True,
              help="Render every object, pending or not: restores deleted or hand-edited files "
                   "(files already right are still not rewritten). Implies --all.")
@click.option("--quiet", is_flag=True, help="Print nothing unless something failed (for cron).")
@json_option
@click.pass_context
def project_vault(ctx: click.Context, all_: bool, rebuild: bool, quiet: bool,
                  as_json: bool) -> None:
    """Render the vault from SQLite: one batch of vault.objects_per_run, or everything."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from ..vault.projector import ProjectionBusy

    every = all_ or rebuild
    show_bar = every and not quiet and not as_json and sys.stderr.isatty()
    with open_memory(ctx) as mem:
        try:
            if show_bar:
                with Progress(TextColumn("projecting"), BarColumn(), MofNCompleteColumn(),
                              TimeElapsedColumn(), console=bar_console.get(),
                              transient=True) as bar:
                    task = bar.add_task("objects", total=None)

                    def advance(done: int, total: int) -> None:
                        bar.update(task, completed=done, total=total)

                    result = mem.render_vault(all=True, rebuild=rebuild, progress=advance)
            else:
                result = mem.render_vault(all=every, rebuild=rebuild)
        except ProjectionBusy as exc:
            # A batch run from cron that overlaps another is routine: skip quietly. A full
            # render someone asked for did not happen: say so and fail, so they run it again.
            if every:
                what = "--rebuild" if rebuild else "--all"
                raise click.ClickException(f"{exc}; {what} did not run: run it again when the "
                                           "other projection ends") from None
            if not quiet:
                err_console.print(f"[yellow]{exc}[/yellow]")
            return
        vault = mem.config.vault_path
    if as_json:
        print_json({"vault": str(vault), **result.to_dict()})
    elif not quiet or result.errors:
        _print_result(vault, result)
    if result.errors:
        ctx.exit(1)


def _print_result(vault: Any, result: ProjectionResult) -> None:
    s = result.summary()
    console.print(
        f"vault {vault}: {s['objects']} objects rendered, {s['written']} files written, "
        f"{s['unchanged']} unchanged, {s['remaining']} objects still pending"
    )
    for core in result.core:
        if core["action"] in ("imported", "refused"):
            style = "green" if core["action"] == "imported" else "red"
            console.print(f"[{style}]{core['message']}[/{style}]")
    for path in result.conflicts:
        console.print(f"[yellow]a hand edit was kept as {path}[/yellow]")
    for error in result.errors:
        console.print(f"[red]failed: {error['object_id']} {error['path'] or ''}: "
                      f"{error['error']}[/red]")


_STYLE = {"imported": "green", "refused": "red", "hand_edit": "yellow", "deleted": "yellow",
          "error": "red"}


@click.command()
@click.option("--debounce-ms", type=click.IntRange(50, 60_000), default=1_000, show_default=True,
              help="Group a burst of saves for at most this long.")
@click.option("--verbose", is_flag=True, help="Also print the projection's own writes.")
@click.pass_context
def watch(ctx: click.Context, debounce_ms: int, verbose: bool) -> None:
    """Import hand edits of AGENTS.md, SOUL.md, USER.md; report edits of object files.

    Runs until Ctrl-C or SIGTERM.
    """
    from ..vault.watcher import VaultWatcher

    with open_memory(ctx) as mem:
        config, clock = mem.config, mem.clock

    def on_batch(outcomes: list[WatchOutcome]) -> None:
        for o in outcomes:
            if o.action in ("own_write", "unchanged") and not verbose:
                continue
            style = _STYLE.get(o.action, "dim")
            console.print(f"[{style}]{o.action}[/{style}] {o.message or o.path}")

    def on_ready() -> None:
        console.print(f"watching {config.vault_path} (Ctrl-C to stop)")

    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    watcher = VaultWatcher.for_config(
        config, debounce_ms=debounce_ms, clock=clock, on_batch=on_batch, on_ready=on_ready,
    )
    watcher.run(stop)

