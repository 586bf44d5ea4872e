"""`memvault ingest FILE|-`: append JSONL events; `memvault import FORMAT FILE`: a chat export."""

from __future__ import annotations

import fnmatch
import os
import stat
import sys
from dataclasses import asdict, dataclass
from typing import IO, TYPE_CHECKING

import click

from ..base.config import DB_NAME, resolve_home
from ..base.errors import IngestError
from ..base.home_trust import file_kind
from .app import LazyConsole, json_option, open_memory, print_json, space_option

if TYPE_CHECKING:
    from ..home.chat_import import ImportReport

progress_console = LazyConsole(stderr=True, highlight=False, soft_wrap=True, emoji=False)


@click.command()
@space_option
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


# Agent hosts' session transcripts (memvault.timeline.transcripts): a file, or every one under
# a folder (~/.claude/projects, ~/.codex/sessions).
TRANSCRIPT_FILES = {"claude-code": "*.jsonl", "codex": "rollout-*.jsonl"}


@click.command("import")
@space_option
@click.argument("fmt", metavar="FORMAT",
                type=click.Choice(["chatgpt", "claude", "jsonl", *TRANSCRIPT_FILES]))
@click.argument("source", metavar="FILE|DIR", type=click.Path(exists=True))
@click.option("--yes", is_flag=True, help="Do not ask before queueing organize work for a "
              "model provider that is not the built-in one.")
@json_option
@click.pass_context
def import_(ctx: click.Context, fmt: str, source: str, yes: bool, as_json: bool) -> None:
    """Import a chat export's conversations as events (history, straight to organize).

    FORMAT is chatgpt (the ChatGPT data export's conversations.json), claude (the Claude
    export's conversations.json), jsonl (memvault's own JSONL), claude-code (Claude Code's
    session transcripts: a FILE, or a DIR such as ~/.claude/projects) or codex (Codex CLI's
    session rollout files: a FILE, or a DIR such as ~/.codex/sessions; under a DIR, an entry
    named like a transcript that is a symbolic link (never followed), a FIFO or a folder is
    not read, and named in the summary). Each message becomes
    one event with its own time (else its conversation's, said in meta), source user or
    assistant, the conversation's title and id in meta, and the key FORMAT:conversation:message
    (a transcript's message is keyed as `memvault hook` captures it), so importing the same or
    a newer export again stores only what is new. System and tool messages, empty ones and
    edited/regenerated branches are skipped and counted.

    Imported events skip the hot timeline: they go straight to the archive queue, where the
    hourly organize (or `memvault organize`) reads them. With a model provider other than
    the built-in one, the import first estimates that work and asks (unless --yes). Each
    conversation is stored in its own transaction; a bad one stops the import naming it, what
    came before stays, and running it again continues by key.
    """
    from ..home.chat_import import (
        Estimate,
        ImportReport,
        ImportStopped,
        estimate_import,
        import_export,
        open_export,
    )

    files, not_read = _import_files(fmt, source)
    skipped_files = {"skipped_files": [asdict(e) for e in not_read]} if not_read else {}
    with open_memory(ctx, create=True) as mem:
        provider = mem.config.settings.model.provider
        if provider != "builtin" and not yes:
            guess = Estimate()
            for path in files:
                with open_export(path) as stream:
                    found = estimate_import(mem, fmt, stream)
                for name in ("conversations", "events", "chars", "tokens"):
                    setattr(guess, name, getattr(guess, name) + getattr(found, name))
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

        # Bytes of the files read so far: the stream's position after each conversation. Only
        # on a terminal (rich draws nothing elsewhere), and on stderr: stdout may be --json.
        report = ImportReport()
        done = 0
        with Progress(TextColumn("importing"), BarColumn(), DownloadColumn(),
                      TimeRemainingColumn(), console=progress_console.get(),
                      disable=as_json) as bar:
            task = bar.add_task("import", total=sum(os.path.getsize(p) for p in files))
            for path in files:
                with open_export(path) as stream:

                    def advance(stream: IO[bytes] = stream, before: int = done) -> None:
                        bar.update(task, completed=before + stream.tell())

                    try:
                        part = import_export(mem, fmt, stream, path, advance)
                    except ImportStopped as exc:
                        _add_report(report, exc.report)
                        if as_json:
                            print_json({**report.to_dict(), **skipped_files, "error": str(exc)})
                            sys.exit(1)
                        raise
                _add_report(report, part)
                done += os.path.getsize(path)
    if as_json:
        print_json({**report.to_dict(), **skipped_files})
        return
    click.echo(f"imported {report.events:,} event(s) from {report.conversations:,} "
               f"conversation(s) ({report.chars:,} chars)"
               + (f"; {report.already_stored:,} already stored" if report.already_stored else ""))
    click.echo(f"skipped: {report.skipped_roles} system/tool, {report.skipped_empty} empty or "
               f"attachment-only, {report.dropped_branch} on edited/regenerated branches")
    for entry in not_read:
        click.echo(f"not read: {entry.path}: {entry.why}")
    if report.conversation_time or report.no_time:
        click.echo(f"times: {report.conversation_time} message(s) took their conversation's "
                   f"time, {report.no_time} had none (stored at the import time); meta "
                   "time_from says which")
    if report.events:
        click.echo("next: these events are history, not the hot timeline; they wait in the "
                   "archive queue, and the hourly organize of a running `memvault serve` (or "
                   "`memvault organize` now) turns them into objects")


@dataclass
class SkippedEntry:
    """An entry under an imported folder that matched the transcripts' pattern and was not
    read, and why (a link, never followed; a FIFO; a folder; one that cannot be read)."""

    path: str
    why: str


def _import_files(fmt: str, source: str) -> tuple[list[str], list[SkippedEntry]]:
    """The files an import reads: SOURCE itself, or for an agent host's transcripts every
    regular file matching under the folder SOURCE (sorted, so a run is repeatable), with the
    entries there that are not read: the ones named like a transcript that are no regular
    file, links to folders, folders that cannot be read. No link is followed."""
    if not os.path.isdir(source):
        return [source], []
    pattern = TRANSCRIPT_FILES.get(fmt)
    if pattern is None:
        raise click.BadParameter(f"{source} is a folder: only claude-code and codex read a "
                                 "folder of transcripts; give the export's file",
                                 param_hint="FILE|DIR")
    files: list[str] = []
    skipped: list[SkippedEntry] = []

    def unreadable(exc: OSError) -> None:
        skipped.append(SkippedEntry(str(exc.filename), f"cannot be read ({exc.strerror})"))

    for folder, dirs, names in os.walk(source, onerror=unreadable):
        # a link to a folder is named whatever its name: the transcripts in it are not read
        linked = [name for name in dirs if os.path.islink(os.path.join(folder, name))]
        for name in sorted({*fnmatch.filter([*dirs, *names], pattern), *linked}):
            path = os.path.join(folder, name)
            why = _not_a_transcript(path)
            if why is None:
                files.append(path)
            else:
                skipped.append(SkippedEntry(path, why))
    if not files:
        found = "".join(f"; {entry.path} is {entry.why}" for entry in skipped)
        raise click.BadParameter(f"no {pattern} file under {source}{found}",
                                 param_hint="FILE|DIR")
    return sorted(files), sorted(skipped, key=lambda entry: entry.path)


def _not_a_transcript(path: str) -> str | None:
    """Why the entry at `path` is not read as a transcript (None: it is a regular file)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISLNK(mode):
        return "a symbolic link (never followed)"
    return None if stat.S_ISREG(mode) else file_kind(mode)


def _add_report(total: ImportReport, part: ImportReport) -> None:
    for name, value in part.to_dict().items():
        setattr(total, name, getattr(total, name) + value)
