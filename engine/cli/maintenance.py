"""Keeping a memory safe: `backup` (an online copy), `check` (does the database hold together),
`export` and `restore` (everything in open formats, and back).

backup, check and export open the database read-only, so they run beside the service and the
worker; restore writes only into a new or empty home.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any

import click

from .app import LazyConsole, escape, json_option, open_memory, print_json

console = LazyConsole(highlight=False, soft_wrap=True, emoji=False)


@click.command()
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
        report = mem.backup(dest, force=force)
    if as_json:
        print_json(report)
        return
    console.print(f"backup written: {escape(report['path'])}")
    console.print(f"{report['bytes']:,} bytes, integrity_check {report['integrity_check']}, "
                  f"{report['events']} events, {report['objects']} objects")


@click.command()
@json_option
@click.pass_context
def check(ctx: click.Context, as_json: bool) -> None:
    """Integrity, foreign keys, orphan links, queue states, stale claims, projection failures.

    Also reports a home that other users can read. Exit status 1 when a finding of severity
    error is found; warnings (a stale claim, projection lag) are printed but exit 0.
    """
    with open_memory(ctx, readonly=True) as mem:
        report = mem.check()
    if as_json:
        print_json(report)
    else:
        render_check(report)
    if not report["ok"]:
        ctx.exit(1)


def render_check(report: dict[str, Any]) -> None:
    from rich.table import Table

    for title, rows, style in (("problems", report["problems"], "red"),
                               ("warnings", report["warnings"], "yellow")):
        if not rows:
            continue
        table = Table(title=f"{title} ({len(rows)})", title_justify="left")
        for column in ("kind", "severity", "detail", "ids"):
            table.add_column(column)
        for row in rows:
            ids = ", ".join(str(i) for i in row["ids"])
            color = style if row["severity"] == "error" else "yellow"
            table.add_row(f"[{color}]{row['kind']}[/{color}]", row["severity"],
                          escape(row["detail"]), escape(ids))
        console.print(table)
    if not report["problems"]:
        console.print("check: ok, no problems found")
    elif report["ok"]:
        console.print(f"check: ok, {len(report['problems'])} kinds of problem found, "
                      "all warnings")
    else:
        console.print(f"check: {report['errors']} kinds of problem found"
                      + (f" (and {len(report['problems']) - report['errors']} warnings)"
                         if len(report["problems"]) > report["errors"] else ""))


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


@click.command()
@click.option("--from", "source", type=click.Path(dir_okay=False),
              help="An older database to copy into this empty home and upgrade (only read).")
@json_option
@click.pass_context
def migrate(ctx: click.Context, source: str | None, as_json: bool) -> None:
    """Upgrade a database of the original design, or apply pending schema migrations.

    Queues the events that already left the hot timeline, links objects to their sources,
    releases running old-protocol snapshots, keeps failed ones failed and deletes nothing.
    Refuses while an old or a memvault worker holds the lease. Back the file up first.
    """
    from ..home.memory import Memory

    with nullcontext() if as_json else _reindex_progress():
        report = Memory.migrate(ctx.find_root().obj["home"], source=source)
    if as_json:
        print_json(report)
        return
    if not report["legacy"]:
        applied = report["schema_migrations"]
        console.print("not an older-design database: "
                      + (f"applied {', '.join(applied)}" if applied else "schema up to date"))
        return
    render_migration(report)


@contextmanager
def _reindex_progress() -> Iterator[None]:
    """A progress bar while a migration rebuilds the recall index (1M events: minutes)."""
    from rich.progress import Progress

    from ..recall import schema as recall_tables

    with Progress(transient=True) as bar:
        task = bar.add_task("re-indexing recall", total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        recall_tables.REBUILD_PROGRESS = report
        try:
            yield
        finally:
            recall_tables.REBUILD_PROGRESS = None


def render_migration(report: Mapping[str, Any]) -> None:
    """Counts before and after, then what the upgrade added, released and left alone."""
    from rich.table import Table

    before, after, kept = report["before"], report["after"], report["after_old_tables"]
    table = Table(title="migration from the original design", title_justify="left")
    for column in ("what", "old tables before", "old tables after", "memvault now"):
        table.add_column(column, justify="right" if column != "what" else "left")
    pairs = [("events", "events", "events"), ("hot nodes", "nodes", "hot_nodes"),
             ("active hot nodes", "active_nodes", "active_nodes"),
             ("objects", "objects", "objects"),
             ("object versions", "object_versions", "object_versions"),
             ("relations", "relations", "relations"), ("sources → evidence", "sources", "evidence"),
             ("core files", "core_documents", "core_files")]
    for label, old, new in pairs:
        table.add_row(label, str(before[old]), str(kept[old]), str(after[new]))
    console.print(table)
    changes = report["changes"]
    console.print(f"queued: {changes['pending_added']} pending, {changes['blocked_added']} "
                  f"blocked (their old batch failed: never turned into done)")
    console.print(f"old snapshots: {changes['snapshots_released']} running released for "
                  f"re-claim, {kept['snapshots_failed']} failed kept failed; "
                  f"{kept['receipts']} old receipts kept")
    for key in ("trimmed", "dangling_sources", "dangling_relations", "status_changed",
                "core_skipped"):
        if changes[key]:
            console.print(f"{key.replace('_', ' ')}: {escape(', '.join(changes[key]))}")
    console.print("nothing was deleted: the old tables stay in the file")


@click.command()
@click.argument("dest", metavar="DIR", type=click.Path(file_okay=False))
@json_option
@click.pass_context
def export(ctx: click.Context, dest: str, as_json: bool) -> None:
    """Write everything the home holds into DIR, in open formats (JSON Lines + manifest.json).

    Events with raw text and meta, the hot timeline and summary heads, the archive queue,
    objects with every version, relations, evidence, projects, core files with history, jobs,
    batches, receipts, corrections, the usage ledger, the forget audit, and memvault.toml.
    manifest.json lists each file's rows and sha256. DIR must be new or an empty folder; it is
    made 0700 and its files 0600. The export holds raw text, secret-looking text included:
    keep it as safe as the home. `memvault restore DIR` rebuilds a home from it.
    """
    from ..home.export import export_home

    click.echo(f"warning: {dest} will hold your raw text, secret-looking text included; "
               "keep it private", err=True)
    with open_memory(ctx, readonly=True) as mem:
        manifest = export_home(mem, dest, mem.clock.now())
    if as_json:
        print_json(manifest)
        return
    files = manifest["files"]
    rows = {name.removesuffix(".jsonl"): entry["rows"] for name, entry in files.items()
            if "table" in entry}
    console.print(f"exported to {escape(dest)}: {len(files)} files, "
                  f"{sum(e['bytes'] for e in files.values()):,} bytes")
    console.print(", ".join(f"{table} {count:,}" for table, count in rows.items() if count))


@click.command()
@click.argument("source", metavar="DIR", required=False,
                type=click.Path(file_okay=False, exists=True))
@click.option("--from-replica", "replica_url", metavar="URL",
              help="Restore from a replica `memvault replicate` wrote, not an export.")
@click.option("--timestamp", metavar="T",
              help="With --from-replica: the home as it was at T (ISO 8601).")
@click.option("--sftp-key", metavar="F", type=click.Path(dir_okay=False, exists=True),
              help="With an sftp:// --from-replica: the SSH key file to log in with.")
@json_option
@click.pass_context
def restore(ctx: click.Context, source: str | None, replica_url: str | None,
            timestamp: str | None, sftp_key: str | None, as_json: bool) -> None:
    """Rebuild a new or empty home (--home / $MEMVAULT_HOME) from `memvault export DIR`, or
    from a replica (--from-replica URL [--timestamp T]).

    Refuses a home that holds anything, checks every file against the manifest's sha256
    before writing, loads every table in one transaction keeping every id, rebuilds the
    recall index, then runs `memvault check` (exit status 1 if it finds an error). The vault
    is re-rendered by `memvault project-vault --all` (from a replica: at once). The export's
    memvault.toml is not copied over the home's. A replica's database must pass PRAGMA
    integrity_check, then is loaded as an export is.
    """
    from ..home.restore import restore_home

    if (source is None) == (replica_url is None):
        raise click.UsageError("give DIR (an export) or --from-replica URL, one of them")
    if (timestamp is not None or sftp_key is not None) and replica_url is None:
        raise click.UsageError("--timestamp and --sftp-key go with --from-replica")
    with open_memory(ctx, create=True) as mem:
        if source is not None:
            report = restore_home(mem, source)
        else:
            from .replicate import restore_replica

            report = restore_replica(mem, str(replica_url), timestamp, sftp_key)
    if as_json:
        print_json(report)
    else:
        restored = report["restored"]
        console.print(f"restored {sum(restored.values()):,} rows into {len(restored)} tables: "
                      + ", ".join(f"{t} {n:,}" for t, n in restored.items() if n))
        render_check(report["check"])
        if report["config_in_export"]:
            console.print(f"the export's settings are in {escape(report['config_in_export'])}"
                          "; the home keeps its own memvault.toml")
    if not report["check"]["ok"]:
        ctx.exit(1)
