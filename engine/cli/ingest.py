"""`memvault ingest FILE|-`: append JSONL events."""

from __future__ import annotations

import sqlite3
import sys
from typing import TYPE_CHECKING

import click

from ..base.config import DB_NAME, resolve_home
from ..base.errors import IngestError
from .app import json_option, open_memory, print_json

if TYPE_CHECKING:
    from ..home.memory import Memory


@click.command()
@click.argument("source", type=click.Path(allow_dash=True, dir_okay=False, exists=True))
@json_option
@click.pass_context
def ingest(ctx: click.Context, source: str, as_json: bool) -> None:
    """Append events from a JSONL file (or - for stdin), one event a line.

    A new home is created when --home / $MEMVAULT_HOME names none yet.

    Each line: {"text": ..., "occurred_at": "2026-10-13T12:30:00+08:00", "source": "user",
    "kind": "message", "meta": {...}, "key": "msg-123"}; only text is required. A bad line stops
    the import with its line number; the lines before it stay stored. A line whose key (your
    message id, at most 200 chars) is already stored with the same text is skipped, so fixing
    the bad line and running the whole file again stores nothing twice; the same key with other
    text is a bad line.
    """
    new_home = not (resolve_home(ctx.find_root().obj["home"]) / DB_NAME).exists()
    with open_memory(ctx, create=True) as mem:
        stream = sys.stdin.buffer if source == "-" else open(source, "rb")  # noqa: SIM115
        try:
            report = mem.ingest_jsonl_report(stream)
        except IngestError as exc:
            if as_json:
                print_json({"stored": exc.stored, "skipped": exc.skipped, "error": str(exc),
                            "line": exc.line})
                sys.exit(1)
            raise
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
        deferred = _sync_index(mem)
    ids, skipped = report.new, report.skipped
    if as_json:
        print_json({"stored": ids, "skipped": skipped,
                    **({"index_deferred": deferred} if deferred else {})})
    else:
        click.echo(f"stored {len(ids)} event(s)" + (f": ids {ids[0]}–{ids[-1]}" if ids else ""))
        if skipped:
            click.echo(f"skipped {len(skipped)} already stored (same key, same text)")
        if ids and new_home:  # a newcomer: events reach the vault only as objects
            click.echo("next: `memvault organize` compacts them off the hot timeline, turns "
                       "them into objects and refreshes the vault (`memvault project-vault "
                       "--all` renders it); a running `memvault serve` does this each night for "
                       "turns older than compact.max_age_hours", err=True)


def _sync_index(mem: Memory) -> str | None:
    """Index the new events for recall; on failure (a full disk, a busy database) say so on
    stderr and return the reason. The events are committed already: reporting them as an
    error would make a caller retry and store them twice. Recall scans unindexed events, and
    the worker's poll (or `memvault reindex`) indexes them later."""
    try:
        mem.sync_recall_index(max_events=None)
    except sqlite3.Error as exc:  # a full disk, a busy or a damaged index
        click.echo(f"the events are stored; indexing them for recall is deferred ({exc})",
                   err=True)
        return str(exc)
    return None
