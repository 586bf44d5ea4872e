"""`memvault ingest FILE|-`: append JSONL events; `memvault import FORMAT FILE`: a chat export."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from ..base.config import DB_NAME, resolve_home
from ..base.errors import IngestError
from .app import LazyConsole, json_option, open_memory, print_json

if TYPE_CHECKING:
    pass

progress_console = LazyConsole(stderr=True, highlight=False, soft_wrap=True, emoji=False)


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
            report = mem.ingest(stream)
        except IngestError as exc:
            if as_json:
                print_json({"stored": exc.stored, "skipped": exc.skipped, "error": str(exc),
                            "line": exc.line})
                sys.exit(1)
            raise
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    ids, skipped, deferred = report.new, report.skipped, report.index_deferred
    if deferred:
        click.echo(f"the events are stored; indexing them for recall is deferred ({deferred})",
                   err=True)
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


@click.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(["chatgpt", "claude", "jsonl"]))
@click.argument("source", metavar="FILE", type=click.Path(dir_okay=False, exists=True))
@click.option("--yes", is_flag=True, help="Do not ask before queueing organize work for a "
              "model provider that is not the built-in one.")
@json_option
@click.pass_context
def import_(ctx: click.Context, fmt: str, source: str, yes: bool, as_json: bool) -> None:
    """Import a chat export's conversations as events (history, straight to organize).

    FORMAT is chatgpt (the ChatGPT data export's conversations.json), claude (the Claude
    export's conversations.json) or jsonl (memvault's own JSONL). Each message becomes one
    event with its own time (else its conversation's, said in meta), source user or assistant,
    the conversation's title and id in meta, and the key FORMAT:conversation:message, so
    importing the same or a newer export again stores only what is new. System and tool
    messages, empty ones and edited/regenerated branches are skipped and counted.

    Imported events skip the hot timeline: they go straight to the archive queue, where the
    hourly organize (or `memvault organize`) reads them. With a model provider other than
    the built-in one, the import first estimates that work and asks (unless --yes). Each
    conversation is stored in its own transaction; a bad one stops the import naming it, what
    came before stays, and running it again continues by key.
    """
    from ..home.chat_import import ImportStopped, estimate_import, import_export, open_export

    with open_memory(ctx, create=True) as mem:
        provider = mem.config.settings.model.provider
        if provider != "builtin" and not yes:
            with open_export(source) as stream:
                guess = estimate_import(mem, fmt, stream)
            click.echo(f"organize work this adds for the {provider} provider: {guess.events:,} "
                       f"event(s) of {guess.conversations:,} conversation(s), "
                       f"{guess.chars:,} chars, about {guess.tokens:,} tokens of raw text to "
                       "read (plus prompts and answers)", err=True)
            if guess.events and not click.confirm("import and queue it?", err=True):
                raise click.ClickException("import cancelled; nothing was stored")
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        # Bytes of the file read so far: the stream's position after each conversation. Only
        # on a terminal (rich draws nothing elsewhere), and on stderr: stdout may be --json.
        with open_export(source) as stream, Progress(
                TextColumn("importing"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                console=progress_console.get(), disable=as_json) as bar:
            task = bar.add_task("import", total=os.fstat(stream.fileno()).st_size)
            try:
                report = import_export(mem, fmt, stream, source,
                                       lambda: bar.update(task, completed=stream.tell()))
            except ImportStopped as exc:
                if as_json:
                    print_json({**exc.report.to_dict(), "error": str(exc)})
                    sys.exit(1)
                raise
    if as_json:
        print_json(report.to_dict())
        return
    click.echo(f"imported {report.events:,} event(s) from {report.conversations:,} "
               f"conversation(s) ({report.chars:,} chars)"
               + (f"; {report.already_stored:,} already stored" if report.already_stored else ""))
    click.echo(f"skipped: {report.skipped_roles} system/tool, {report.skipped_empty} empty or "
               f"attachment-only, {report.dropped_branch} on edited/regenerated branches")
    if report.conversation_time or report.no_time:
        click.echo(f"times: {report.conversation_time} message(s) took their conversation's "
                   f"time, {report.no_time} had none (stored at the import time); meta "
                   "time_from says which")
    if report.events:
        click.echo("next: these events are history, not the hot timeline; they wait in the "
                   "archive queue, and the hourly organize of a running `memvault serve` (or "
                   "`memvault organize` now) turns them into objects")
