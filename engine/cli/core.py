"""`memvault core show|set|history NAME`: the core files AGENTS.md, SOUL.md and USER.md, read
and written by hand (the watcher imports a hand edit of the vault's copy the same way).

`show` masks secret-looking values as every read command does (a person may keep a password
in USER.md: theirs to keep, not to print by accident); `--reveal-secrets` shows them and logs
that it did. `history` lists versions and sizes, never content."""

from __future__ import annotations

import sys

import click

from ..base.config import load_config
from ..base.errors import InputError
from ..objects.corefiles import CORE_FILES
from .app import json_option, open_memory, print_json, report_reveal, reveal_ask, reveal_option

NAME = click.Choice(CORE_FILES)


@click.group()
def core() -> None:
    """Read and write the core files AGENTS.md, SOUL.md and USER.md."""


@core.command("show")
@click.argument("name", type=NAME)
@reveal_option
@json_option
@click.pass_context
def show(ctx: click.Context, name: str, reveal: bool, as_json: bool) -> None:
    """Print the current version of a core file (secret-looking values as [secret: kind]
    unless --reveal-secrets)."""
    ask = reveal_ask("core show", reveal)
    with open_memory(ctx, readonly=True) as mem:
        # as every read: a reveal is logged only when it shows what the masked file hides
        current = mem.read_core_file(name, reveal=ask or False)
    report_reveal(ask)
    if as_json:
        print_json(current)
    elif current is None:
        click.echo(f"{name} has never been written")
    else:
        click.echo(current["content"], nl=False)


@core.command("set")
@click.argument("name", type=NAME)
@click.argument("source", type=click.Path(allow_dash=True, dir_okay=False, exists=True))
@click.pass_context
def set_(ctx: click.Context, name: str, source: str) -> None:
    """Save a new version of a core file from a file (or - for stdin).

    Refused, the stored version left as it is: bytes that are not UTF-8, a NUL character, or
    more bytes than vault.core_file_max_bytes (the limit a hand edit in the vault has too).
    """
    limit = load_config(ctx.find_root().obj["home"])["vault.core_file_max_bytes"]
    if source == "-":
        raw = sys.stdin.buffer.read(limit + 1)
    else:
        with open(source, "rb") as handle:
            raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise click.ClickException(
            f"{source}: over the limit vault.core_file_max_bytes = {limit:,} bytes "
            f"(memvault.toml); {name} left unchanged"
        )
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.ClickException(
            f"{source}: not valid UTF-8 (byte {exc.start}); {name} left unchanged"
        ) from None
    with open_memory(ctx, create=True) as mem:
        try:
            version = mem.write_core_file(name, content, origin="api")
        except InputError as exc:
            raise click.ClickException(f"{exc} (in {source}); {name} left unchanged") from None
        if version is not None:  # the vault's copy of the file: rendered now, not stale
            from ..home.runs import refresh_vault
            from .followup import vault_line

            vault_said = vault_line(refresh_vault(mem), mem.config.vault_path)
    click.echo(f"{name}: unchanged" if version is None else f"{name}: version {version}")
    if version is not None:
        click.echo(vault_said, err=True)


@core.command("history")
@click.argument("name", type=NAME)
@json_option
@click.pass_context
def history(ctx: click.Context, name: str, as_json: bool) -> None:
    """List the versions of a core file: number, time, origin and size (never the content)."""
    with open_memory(ctx, readonly=True) as mem:
        rows = mem.core_file_history(name)
    if as_json:
        print_json(rows)
        return
    for row in rows:
        click.echo(
            f"v{row['version']}  {row['created_at']}  {row['origin']:8} {row['chars']} chars"
        )
