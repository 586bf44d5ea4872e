"""Keeping a memory safe: `backup` (an online copy) and `check` (does the database hold together).

Both open the database read-only, so they run beside the service and the worker.
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..backup import backup_database
from ..check import check_memory
from . import json_option, main, open_memory, print_json

console = Console(highlight=False, soft_wrap=True, emoji=False)


@main.command()
@click.argument("dest", type=click.Path(dir_okay=True, file_okay=True))
@click.option("--force", is_flag=True, help="Overwrite DEST if it is an existing file.")
@json_option
@click.pass_context
def backup(ctx: click.Context, dest: str, force: bool, as_json: bool) -> None:
    """Copy memory.db to DEST (a file, or a directory for memory-<UTC time>.db) while it runs.

    Uses SQLite's online backup API (writers keep going), then verifies the copy with
    PRAGMA integrity_check.
    """
    with open_memory(ctx, readonly=True) as mem:
        report = backup_database(mem.conn, dest, force=force)
    if as_json:
        print_json(report)
        return
    console.print(f"backup written: {escape(report['path'])}")
    console.print(f"{report['bytes']:,} bytes, integrity_check {report['integrity_check']}, "
                  f"{report['events']} events, {report['objects']} objects")


@main.command()
@json_option
@click.pass_context
def check(ctx: click.Context, as_json: bool) -> None:
    """Integrity, foreign keys, orphan links, queue states, stale claims, projection failures.

    Exit status 1 when a problem is found (warnings, such as projection lag, do not count).
    """
    with open_memory(ctx, readonly=True) as mem:
        lease_s = mem.config["batch.timeout_s"] + mem.config["worker.lease_extra_s"]
        report = check_memory(mem.conn, now=mem.clock.now(), lease_s=lease_s)
    if as_json:
        print_json(report)
    else:
        render_check(report)
    if not report["ok"]:
        ctx.exit(1)


def render_check(report: dict[str, Any]) -> None:
    for title, rows, style in (("problems", report["problems"], "red"),
                               ("warnings", report["warnings"], "yellow")):
        if not rows:
            continue
        table = Table(title=f"{title} ({len(rows)})", title_justify="left")
        for column in ("kind", "detail", "ids"):
            table.add_column(column)
        for row in rows:
            ids = ", ".join(str(i) for i in row["ids"])
            table.add_row(f"[{style}]{row['kind']}[/{style}]", escape(row["detail"]),
                          escape(ids))
        console.print(table)
    if report["ok"]:
        console.print("check: ok, no problems found")
    else:
        console.print(f"check: {len(report['problems'])} kinds of problem found")


def render_disk(disk: dict[str, Any]) -> None:
    """The disk lines of `memvault status` (for render_status, once status reports "disk")."""
    raw, growth = disk["raw_text"], disk["growth"]
    wal = disk["wal_file_bytes"]
    console.print(f"disk: database {disk['db_file_bytes']:,} bytes"
                  + (f" + WAL {wal:,}" if wal else "")
                  + f"; raw text {raw['bytes']:,} bytes ({raw['chars']:,} chars, "
                  f"{raw['events']} events); object versions "
                  f"{disk['object_versions']['bytes']:,} bytes "
                  f"({disk['object_versions']['rows']} rows); audit "
                  f"{disk['audit']['total_bytes']:,} bytes")
    console.print(f"growth: {growth['last_7d']['bytes_per_day']:,} bytes/day over 7 days, "
                  f"{growth['last_30d']['bytes_per_day']:,} bytes/day over 30 days")
