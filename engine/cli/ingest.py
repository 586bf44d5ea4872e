"""`memvault ingest FILE|-`: append JSONL events."""

from __future__ import annotations

import sys

import click

from ..base.errors import IngestError
from .app import json_option, main, open_memory, print_json


@main.command()
@click.argument("source", type=click.Path(allow_dash=True, dir_okay=False, exists=True))
@json_option
@click.pass_context
def ingest(ctx: click.Context, source: str, as_json: bool) -> None:
    """Append events from a JSONL file (or - for stdin), one event a line.

    Each line: {"text": ..., "occurred_at": "2026-10-13T12:30:00+08:00", "source": "user",
    "kind": "message", "meta": {...}}; only text is required. A bad line stops the import with
    its line number; the lines before it stay stored.
    """
    with open_memory(ctx) as mem:
        stream = sys.stdin.buffer if source == "-" else open(source, "rb")  # noqa: SIM115
        try:
            ids = mem.ingest_jsonl(stream)
        except IngestError as exc:
            if as_json:
                print_json({"stored": exc.stored, "error": str(exc), "line": exc.line})
                sys.exit(1)
            raise
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
        mem.sync_recall_index(max_events=None)
    if as_json:
        print_json({"stored": ids})
    else:
        click.echo(f"stored {len(ids)} event(s)" + (f": ids {ids[0]}–{ids[-1]}" if ids else ""))
