"""The `memvault` click group and what every command module shares: opening the home, JSON
output, clean one-line errors."""

from __future__ import annotations

import errno
import json
import re
import sqlite3
from typing import Any

import click

from ..base.errors import MemvaultError
from ..home.memory import Memory
from ..models import ProviderError

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


class MemvaultGroup(click.Group):
    """Turns deliberate engine errors into clean one-line messages with exit status 1.

    Besides `MemvaultError`, a few failures that come from the environment rather than from a
    bug get one line too, never a traceback: a model provider that cannot be used, a file or
    folder the OS refuses, a number too large for SQLite, a database SQLite cannot use.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemvaultError as exc:
            raise click.ClickException(str(exc)) from None
        except ProviderError as exc:
            raise click.ClickException(f"model provider: {exc}") from None
        except OverflowError as exc:
            raise click.ClickException(f"a number is out of range: {exc}") from None
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # `memvault ... | head`: click handles a closed pipe
                raise
            raise click.ClickException(_os_error(exc)) from None
        except sqlite3.OperationalError as exc:
            raise click.ClickException(f"the database refused: {exc}") from None


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
@click.version_option(package_name="memvault")
@click.pass_context
def main(ctx: click.Context, home: str | None) -> None:
    """memvault: a two-phase object memory for LLM agents."""
    ctx.ensure_object(dict)
    ctx.obj["home"] = home


def open_memory(ctx: click.Context, readonly: bool = False) -> Memory:
    """Open the home named by --home / $MEMVAULT_HOME for a command; print its notices (such
    as tightened permissions) on stderr, one line each, so --json output stays clean."""
    memory = Memory.open(ctx.find_root().obj["home"], readonly=readonly)
    for notice in memory.notices:
        click.echo(notice, err=True)
    return memory


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def json_option(f: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(f)
