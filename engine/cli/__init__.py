"""The `memvault` command line: one click group, a module per noun."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..errors import MemvaultError
from ..memory import Memory


class MemvaultGroup(click.Group):
    """Turns deliberate engine errors into clean one-line messages with exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemvaultError as exc:
            raise click.ClickException(str(exc)) from None


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
    """Open the home named by --home / $MEMVAULT_HOME for a command."""
    return Memory.open(ctx.find_root().obj["home"], readonly=readonly)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def json_option(f: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(f)


# The command line is the composition root: the vault's own commands join it here (the engine's
# other modules never import the vault).
from vault.cli import project_vault, watch  # noqa: E402

from . import core, demo, ingest, inspect, maintenance, recall, serve, work  # noqa: E402,F401  (registers commands)

main.add_command(project_vault)
main.add_command(watch)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
