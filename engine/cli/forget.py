"""`memvault forget TEXT`: remove every stored copy of a text (a pasted secret), for good.

The command line runs it because only it may use the vault: the database part is
engine/home/forget.py (lease, one transaction, audit row); then the vault is re-rendered, the
other files under the home are scrubbed, the database is vacuumed and its WAL truncated, and
`check` runs. TEXT never appears in the output, the audit or a log.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ..base.forgetting import check_forget_text
from .app import LazyConsole, escape, json_option, open_memory, print_json

console = LazyConsole(highlight=False, soft_wrap=True, emoji=False)


def _read_text(text: str) -> str:
    """TEXT as given, or read from stdin for `-` (kept out of the shell history and of `ps`);
    one trailing line end is dropped."""
    if text != "-":
        return text
    data = sys.stdin.read()
    return data[:-1] if data.endswith("\n") else data


@click.command()
@click.argument("text")
@click.option("--yes", is_flag=True, help="Do it without asking (it cannot be undone).")
@click.option("--dry-run", is_flag=True, help="Only count the copies and say where they are.")
@json_option
@click.pass_context
def forget(ctx: click.Context, text: str, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Replace every stored copy of TEXT (exact, case-sensitive; at least 6 chars; `-` reads
    it from stdin) by a run of one marker char of the same length.

    Covers event text, summary heads, objects and their versions, core files and their
    history, jobs, batches, receipts, stored errors, the usage ledger, the recall index and
    the vault's files. Ids stay. The database is vacuumed and its WAL truncated; an audit row
    keeps who, when and how many copies (never the text). Backups made earlier keep it.
    A TEXT starting with '-' goes after `--` (`memvault forget --yes -- -----BEGIN…`), or
    through stdin.
    """
    text = check_forget_text(_read_text(text))
    if dry_run:
        report = _dry_run(ctx, text)
    else:
        _confirm(yes)
        report = _forget(ctx, text)
    if as_json:
        print_json(report)
    else:
        _render(report)
    # Ids are never rewritten: a copy in an id is expected to remain (the report names them).
    if report["check_ok"] is False or (report["residue"] and not report["ids_kept"]):
        ctx.exit(1)


def _confirm(yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.ClickException("forget rewrites stored text and cannot be undone: add "
                                   "--yes to do it, or --dry-run to see what it would change")
    click.confirm("Replace every stored copy of this text? It cannot be undone", abort=True)


def _dry_run(ctx: click.Context, text: str) -> dict[str, Any]:
    from .replicate import ForgetReplica

    with open_memory(ctx, readonly=True) as mem:
        report = mem.forget_dry_run(text).to_dict()
        replica = ForgetReplica(mem).dry_run_note()
    return {**report, **({"replica": replica} if replica else {})}


def _forget(ctx: click.Context, text: str) -> dict[str, Any]:
    from .replicate import ForgetReplica

    with open_memory(ctx) as mem:
        return ForgetReplica(mem).forget(lambda: mem.forget(text).to_dict(), text)


def _is_id(place: str) -> bool:
    """A column of ids (never rewritten): objects.id, evidence.object_id, relations.src_id…"""
    column = place.rpartition(".")[2]
    return column == "id" or column.endswith("_id")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _render(report: dict[str, Any]) -> None:
    verb = "would replace" if report["dry_run"] else "replaced"
    places = report["places"]
    events = len(report["events"])
    console.print(f"forget: {verb} {_count(report['occurrences'], 'copy', 'copies')} in "
                  f"{_count(len(places), 'place', 'places')}"
                  + (f" ({_count(events, 'event', 'events')})" if events else ""))
    for place, copies in sorted(places.items()):
        console.print(f"  {place}: {copies}")
    files = report["files"]
    if files:
        console.print(f"files {'holding it' if report['dry_run'] else 'rewritten'}: "
                      + escape(", ".join(files)))
    if report["files_not_text"]:
        console.print("[yellow]left alone (not UTF-8 text: a backup? another encoding; or an "
                      "export, whose manifest must match): "
                      + escape(", ".join(report["files_not_text"])) + "[/yellow]")
    others = {k: v for k, v in report.get("left", {}).items() if not _is_id(k)}
    if others:
        said = ("tables it cannot replace it in (no owner covers them)" if report["dry_run"]
                else "tables still holding it (no owner replaced it)")
        console.print(f"[red]{said}: "
                      + escape(", ".join(f"{k} {v}" for k, v in sorted(others.items())))
                      + "[/red]")
    if report["ids_kept"]:
        console.print("[yellow]ids are never rewritten; these object ids hold the text and "
                      "keep it: " + escape(", ".join(report["ids_kept"])) + "[/yellow]")
    if report.get("vault"):
        console.print(f"vault: {escape(report['vault'])}")
    if report["residue"]:
        console.print("[red]still holding it: " + escape(", ".join(report["residue"]))
                      + "[/red]")
    if report.get("replica"):
        console.print(f"replica {escape(report['replica']['url'])}: "
                      + escape(report["replica"]["note"]))
    if report["checkpoint_busy"]:
        console.print("[yellow]a reader kept the WAL from being truncated: run `memvault "
                      "forget` again once the service is stopped[/yellow]")
    if report["check_ok"] is not None:
        console.print("check: ok" if report["check_ok"] else
                      "[red]check found problems: run `memvault check`[/red]")
    console.print(f"[yellow]{report['backups']}[/yellow]")
