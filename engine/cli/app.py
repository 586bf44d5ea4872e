"""The `memvault` click group and what every command module shares: opening the home, JSON
output, clean one-line errors, the `--home` option.

Start-up is kept short: the group loads a command's module only when that command
runs (click's LazyGroup pattern, `COMMANDS` below), and the modules import their heavy parts
(the worker, the vault's templates, rich) inside the commands that need them. `bench/
cli_startup.py` measures it.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import re
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from ..base.display import guard_terminal, unguarded
from ..base.errors import MemvaultError
from ..base.home_trust import ALLOW_OTHER_OWNER_ENV

if TYPE_CHECKING:
    from rich.console import Console

    from ..home.memory import Memory
    from ..home.reveals import Reveal

SQLITE_MAX_INT = 2**63 - 1  # the largest id SQLite stores
_NEGATIVE = re.compile(r"-\d[\d:]*")


class NumericArgsCommand(click.Command):
    """A command whose positional arguments may start with '-': a negative number, or the
    cursor of a listing before 1970 (it starts with a minus sign).

    click takes such an argument for an unknown option ("No such option '-5'"), which is no help
    and makes a pre-1970 cursor impossible to pass back. Here it reaches the argument's own
    check instead (which says what is allowed); a mistyped real option is still refused.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, list(args))  # a copy: the parser consumes its list
        except click.NoSuchOption as exc:
            if not _NEGATIVE.fullmatch(exc.option_name):
                raise
            ctx.ignore_unknown_options = True
            return super().parse_args(ctx, args)


# Every subcommand -> "module:attribute" under memvault.cli, loaded when it runs (or for --help).
COMMANDS: dict[str, str] = {
    "accept-edit": "edits:accept_edit", "add": "edits:add", "archive": "edits:archive",
    "backup": "maintenance:backup", "check": "maintenance:check",
    "compact": "work:compact", "core": "core:core", "demo": "demo:demo",
    "edit": "edits:edit", "event": "inspect:event", "events": "inspect:events",
    "evidence": "recall:evidence",
    "expand": "inspect:expand", "find": "recall:find", "forget": "forget:forget",
    "hook": "hooks:hook",
    "export": "maintenance:export", "import": "ingest:import_", "ingest": "ingest:ingest",
    "list": "inspect:list_", "mcp": "serve:mcp_stdio", "merge": "edits:merge",
    "migrate": "maintenance:migrate", "model": "model:model",
    "object": "inspect:object_", "organize": "work:organize", "project": "work:project",
    "project-vault": "vault:project_vault", "read": "recall:read", "reindex": "recall:reindex",
    "replicate": "replicate:replicate",
    "restore": "maintenance:restore",
    "serve": "serve:serve", "space": "edits:space", "status": "inspect:status",
    "timeline": "inspect:timeline",
    "usage": "work:usage", "watch": "vault:watch", "worker": "work:worker",
}


# Each command's one-line help as `memvault --help` lists it, so the listing imports no command
# module (tests/test_cli.py holds it equal to the command's own help).
SHORT_HELP: dict[str, str] = {
    'accept-edit': 'Take a hand-edited object file of the vault as your correction.',
    'add': 'Create an object the memory lacks, by hand (made by you, as every correction is).',
    'archive': 'Archive an object: kept, readable and findable, no longer current.',
    'backup': (
        'Copy memory.db to DEST (a file, or a directory for memory-<UTC time>.db) while it runs.'),
    'check': (
        'Integrity, foreign keys, orphan links, queue states, stale claims, projection failures.'),
    'compact': 'Compact the hot timeline: fold runs of nodes into shorter summary heads.',
    'core': 'Read and write the core files AGENTS.md, SOUL.md and USER.md.',
    'demo': 'Ingest the bundled sample, compact, organize, deep, render the vault, print status.',
    'edit': 'Correct fields of one object (ID: an id, or a unique name or alias).',
    'event': "Show one event's raw text (paged: pass next_offset as OFFSET).",
    'events': 'List events with FROM <= occurred_at < TO (ISO times, e.g.',
    'evidence': (
        "Show the raw text behind an object's evidence, or an event and who cites it (paged)."),
    'expand': 'Show the children a summary head replaced.',
    'export': (
        'Write everything the home holds into DIR, in open formats (JSON Lines + manifest.json).'),
    'find': 'Find objects and raw events by names, aliases, cues and words (Chinese or English).',
    'forget': (
        'Replace every stored copy of TEXT (exact, case-sensitive; at least 6 chars; `-` reads it'
        ' from stdin) by a run of one marker char of the same length.'),
    'hook': "Capture an agent host's conversation as it happens (hooks that need no agent help).",
    'import': "Import a chat export's conversations as events (history, straight to organize).",
    'ingest': 'Append events from a JSONL file (or - for stdin), one event a line.',
    'list': (
        "List the objects of one type, or of every type by type (a schedule's or todo's state as "
        'of today).'),
    'mcp': "Serve the agent's MCP API on stdin/stdout, for agent hosts that start it.",
    'merge': 'Merge object FROM into object INTO (ids, or unique names or aliases).',
    'migrate': 'Upgrade a database of the original design, or apply pending schema migrations.',
    'model': 'The model provider organize runs on.',
    'object': (
        "Show an object's profile, relations and evidence (paged: pass next_offset as OFFSET)."),
    'organize': 'Organize queued events into objects (or, --mode deep, review every object).',
    'project': 'Projects: approve a candidate project.',
    'project-vault': (
        'Render the vault from SQLite: one batch of vault.objects_per_run, or everything.'),
    'read': "Show an object's profile, relations and evidence list, or an event (paged: OFFSET).",
    'reindex': 'Bring the recall index up to date: new events and changed objects.',
    'replicate': 'Replicate the home continuously by Litestream to URL (or [replica] url) until '
                 'stopped.',
    'restore': ('Rebuild a new or empty home (--home / $MEMVAULT_HOME) from `memvault export '
                'DIR`, or from a replica (--from-replica URL [--timestamp T]).'),
    'serve': (
        "Run the memory service: the agent's MCP API (streamable HTTP at /mcp on 127.0.0.1:8765, "
        'or on a Unix socket), the worker, the vault projector and watcher.'),
    'space': (
        "Spaces: which agent's part of the memory an event or object is in (docs/spec.md 1.8)."),
    'status': (
        'Counts per state, the 20 oldest unfinished records, the hook calls that failed lately '
        'and PRAGMA quick_check.'),
    'timeline': 'Show the hot timeline as the agent sees it, with an explicit account of any cut.',
    'usage': 'Model calls and tokens per day and mode, from the usage ledger.',
    'watch': 'Import hand edits of AGENTS.md, SOUL.md, USER.md; report edits of object files.',
    'worker': (
        'Run the worker in the foreground: scheduler, lease, batch after batch (Ctrl-C stops).'),
}

class MemvaultGroup(click.Group):
    """The lazy `memvault` group: turns deliberate engine errors into clean one-line messages
    with exit status 1, and gives every subcommand the `--home` option too.

    Besides `MemvaultError`, a few failures that come from the environment rather than from a
    bug get one line too, never a traceback: a model provider that cannot be used, a file or
    folder the OS refuses, a number too large for SQLite, a database SQLite cannot use.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command listing of `--help`, from SHORT_HELP: cut to the terminal's width as
        click cuts a command's own help, without importing any command's module."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, click.Command(name, help=SHORT_HELP[name]).get_short_help_str(limit))
                for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, _, attr = COMMANDS[cmd_name].partition(":")
        command = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
        add_home_option(command)
        return command

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        """click's main, but `memvault ... hook ...` runs under the hook's own guard
        (hook_guard.py): an agent host runs it, and click's usage errors exit 2, which Claude
        Code takes for a blocking error (a Stop hook then keeps the agent from stopping and
        hands it the message). click parses the group's options (`--home`, $MEMVAULT_HOME)
        before any command runs, so only here can the hook's "always exit 0" hold for them."""
        argv = list(sys.argv[1:] if args is None else args)
        at = _subcommand_at(self, argv)
        if standalone_mode and at is not None and argv[at] == "hook":
            from .hook_guard import run_guarded

            run_guarded(self, argv, argv[at + 1:], prog_name)
        return super().main(args, prog_name, complete_var, standalone_mode, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemvaultError as exc:
            raise click.ClickException(str(exc)) from None
        except OverflowError as exc:
            raise click.ClickException(f"a number is out of range: {exc}") from None
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # `memvault ... | head`: click handles a closed pipe
                raise
            raise click.ClickException(_os_error(exc)) from None
        except sqlite3.OperationalError as exc:
            raise click.ClickException(f"the database refused: {exc}") from None
        except Exception as exc:
            # A ProviderError can come only from memvault.models, so it is not imported (a
            # slow import) unless it already was.
            models = sys.modules.get("memvault.models")
            if models is not None and isinstance(exc, models.ProviderError):
                raise click.ClickException(f"model provider: {exc}") from None
            raise


def _subcommand_at(group: click.Group, args: Sequence[str]) -> int | None:
    """Where in a command line its subcommand is: the first argument that is neither one of
    the group's options nor an option's value."""
    with_value = {name for param in group.params if isinstance(param, click.Option)
                  and not param.is_flag for name in param.opts}
    at = 0
    while at < len(args):
        if args[at] == "--":
            return at + 1 if at + 1 < len(args) else None
        if args[at] in with_value:
            at += 1
        elif not args[at].startswith("-"):
            return at
        at += 1
    return None


def _os_error(exc: OSError) -> str:
    """An OSError as one line naming the path: `/x/memory.db: Permission denied`."""
    if exc.filename is None:
        return str(exc)
    return f"{exc.filename}: {exc.strerror or exc}"


@click.group(cls=MemvaultGroup)
@click.option(
    "--home", envvar="MEMVAULT_HOME", type=click.Path(file_okay=False), default=None,
    help="Memory home (default $MEMVAULT_HOME, else ~/.memvault).",
)
@click.option(
    "--allow-other-owner", is_flag=True,
    help="Write to (and call a model from) a home another user owns: for administrators. "
         "Without it such a home is refused (its owner controls its settings).",
)
@click.version_option(package_name="memvault")
@click.pass_context
def main(ctx: click.Context, home: str | None, allow_other_owner: bool) -> None:
    """memvault: a two-phase object memory for LLM agents."""
    ctx.ensure_object(dict)
    ctx.obj["home"] = home
    # The one place human output goes through: on a terminal, stored text cannot reorder the
    # screen (bidi overrides) or drive it (escape sequences); pipes and files stay exact.
    sys.stdout = guard_terminal(sys.stdout)
    sys.stderr = guard_terminal(sys.stderr)
    if allow_other_owner:
        # The environment, so every open of this process (the service's pool and worker
        # included) and the processes it starts see the same choice.
        os.environ[ALLOW_OTHER_OWNER_ENV] = "1"


def add_home_option(command: click.Command) -> None:
    """Give `command` (and, for a group, its subcommands) `--home` too, so `memvault status
    --home H` works as `memvault --home H status` does. Both on one line must agree."""
    if any(p.name == "subcommand_home" for p in command.params):
        return
    command.params.append(click.Option(
        ["--home", "subcommand_home"], type=click.Path(file_okay=False), default=None,
        expose_value=False, callback=_set_home, metavar="DIR",
        help="Memory home (the same as `memvault --home DIR`; default $MEMVAULT_HOME, "
             "else ~/.memvault).",
    ))
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_home_option(sub)


def _set_home(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """The subcommand's --home replaces $MEMVAULT_HOME; a different `memvault --home` on the
    same command line is refused rather than silently losing one of them."""
    if value is None:
        return
    root = ctx.find_root()
    root.ensure_object(dict)
    before = root.obj.get("home")
    if (before is not None and root.get_parameter_source("home")
            == click.core.ParameterSource.COMMANDLINE and _same(before) != _same(value)):
        raise click.BadParameter(f"{value!r} differs from `memvault --home {before}`: give "
                                 "the home once", ctx=ctx, param=param)
    root.obj["home"] = value


def _same(path: str) -> Path:
    return Path(path).expanduser().absolute()


def require_home(home: str | None) -> None:
    """Refuse a home that does not exist (a typo in --home or $MEMVAULT_HOME) instead of
    silently creating a new, empty one; only the commands that make a home skip this."""
    from ..base.config import DB_NAME, resolve_home  # the settings: not for --help (~10 ms)

    root = resolve_home(home)
    if not (root / DB_NAME).exists() and not (root / "memvault.toml").exists():
        raise click.ClickException(
            f"no memory at {root} (no memory.db): check --home / $MEMVAULT_HOME, or create "
            "one with `memvault ingest FILE` or `memvault demo`")


def open_memory(ctx: click.Context, readonly: bool = False, create: bool = False) -> Memory:
    """Open the home named by --home / $MEMVAULT_HOME for a command; print its notices (such
    as tightened permissions) on stderr, one line each, so --json output stays clean.

    Only with `create` may a writing command make a new home (ingest, core set; demo,
    migrate, serve and mcp make theirs themselves); read-only opens refuse a missing one."""
    from ..home.memory import Memory

    home = ctx.find_root().obj["home"]
    if not readonly and not create:
        require_home(home)
    memory = Memory.open(home, readonly=readonly, space=ctx.meta.get(SPACE_KEY))
    for notice in memory.notices:
        click.echo(notice, err=True)
    return memory


class LazyConsole:
    """A rich Console made on first use: rich costs start-up time that a `--json` answer
    never needs. `get()` is the Console itself (for rich's Progress).

    `progress=True` is for a live progress display: it moves the cursor (escape sequences the
    terminal guard would write out), so it writes to the terminal under the guard, and is given
    only text memvault made or passed through `for_terminal`."""

    def __init__(self, progress: bool = False, **options: Any) -> None:
        self._options = options
        self._progress = progress
        self._console: Console | None = None
        self._made_for: tuple[Any, str | None] = (None, None)  # (stream, COLUMNS) when made

    def get(self) -> Console:
        stream = None
        if self._progress:
            stream = sys.stderr if self._options.get("stderr") else sys.stdout
        # Made again when sys.stderr/stdout is another stream than it was made for (an
        # embedding program or a test runner swaps them): a console kept on a closed stream
        # would fail with "I/O operation on closed file". Likewise when COLUMNS changed: rich
        # reads the width once, as the console is made, and a width set for one command (a
        # test's 80 columns) would otherwise cut the tables of every later one.
        made_for = (stream, os.environ.get("COLUMNS"))
        if self._console is None or made_for[0] is not self._made_for[0] \
                or made_for[1] != self._made_for[1]:
            from rich.console import Console

            options = dict(self._options)
            if stream is not None:
                options.pop("stderr", None)
                options["file"] = unguarded(stream)
            self._console = Console(**options)
            self._made_for = made_for
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


class Line(NamedTuple):
    """A line of human output: its text (user content, never markup), its style on a
    terminal, and whether the query's terms show in bold in it."""

    text: str
    style: str | None = None
    terms: bool = False


def piped() -> bool:
    """Does a LazyConsole on stdout print plain text here (stdout no terminal, and neither
    TTY_COMPATIBLE nor FORCE_COLOR makes rich take it for one)? Then write_lines prints what
    it would, without loading rich."""
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return False
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False


def plain_width() -> int:
    """The width rich gives a console that is no terminal: $COLUMNS, else the size of the
    terminal stdin, stdout or stderr is (the first that is one), else 80."""
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


def write_lines(lines: Sequence[Line]) -> None:
    """Print `lines` on stdout (piped) as a LazyConsole does there: plain text, one line each.
    A line holding a tab, a control character or any other unprintable one goes through rich,
    which expands tabs by cell width and drops some control characters."""
    plain: LazyConsole | None = None
    for line in lines:
        if line.text.isprintable():
            sys.stdout.write(line.text + "\n")
            continue
        if plain is None:
            plain = LazyConsole(highlight=False, soft_wrap=True)
        from rich.text import Text

        plain.print(Text(line.text), style=line.style, soft_wrap=True)
    sys.stdout.flush()


def escape(text: str) -> str:
    """rich.markup.escape, imported when first needed."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


SPACE_KEY = "memvault.space"


def _set_space(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    from ..base.spaces import check_space

    if value is not None:
        try:
            ctx.meta[SPACE_KEY] = check_space(value)
        except MemvaultError as exc:
            raise click.BadParameter(str(exc)) from None


def space_option(f: Any) -> Any:
    """`--space NAME`: the command sees (and writes) only that space and `shared`; without
    it, the owner's command line sees every space (open_memory binds the Memory)."""
    return click.option(
        "--space", callback=_set_space, expose_value=False, is_eager=True, metavar="NAME",
        help="Only this space and shared (work, home, ...): what an agent bound to it sees, "
             "and where writes go. Default: every space (writes go to shared).")(f)


def json_option(f: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(f)


def reveal_option(f: Any) -> Any:
    from ..home.reveals import REVEAL_LOG

    return click.option(
        "--reveal-secrets", "reveal", is_flag=True,
        help="Show secret-looking values instead of [secret: kind] (logged, without them, to "
             f"{REVEAL_LOG} in the home and on stderr).")(f)


def reveal_ask(command: str, reveal: bool) -> Reveal | None:
    """What a read command passes `Memory` for --reveal-secrets: an ask named after the
    command, which the read fills with what it revealed (None masks)."""
    from ..home.reveals import Reveal

    return Reveal(command) if reveal else None


def report_reveal(ask: Reveal | None) -> None:
    """Tell the person on stderr what a --reveal-secrets read showed (Memory logged it)."""
    from ..home.reveals import REVEAL_LOG

    if ask is None:
        return
    if not ask.revealed:
        click.echo(f"{ask.command}: nothing hidden here: nothing revealed, nothing logged",
                   err=True)
        return
    records = ask.records
    click.echo(f"secrets revealed by {ask.command} for {', '.join(records[:10])}"
               + (" …" if len(records) > 10 else "") + f" (logged to {REVEAL_LOG})", err=True)
    if ask.log_error:
        click.echo(ask.log_error, err=True)
