"""A person's corrections of objects: `memvault add | edit | merge | archive | accept-edit`.

Each command is one correction (objects/corrections.py): validated by the same graph-write rules
as a model's proposal, committed in one transaction with a receipt, its object versions marked
as made by a person. `--token` makes a command safe to re-send: the same token returns the
first receipt and changes nothing. Afterwards the corrected objects' vault files are rendered
again (when the home has a vault), so the vault shows the correction at once.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import click

from ..base.errors import InputError
from ..objects.ids import OBJECT_TYPES
from .app import json_option, open_memory, print_json

if TYPE_CHECKING:
    from ..home.memory import Memory
    from ..objects.corrections import Correction
    from ..vault.hand_edit import HandEdit

TOKEN_HELP = ("Idempotency token: sending the same token again returns the first receipt and "
              "changes nothing (default: a new one each run).")


def _token_option(f: Any) -> Any:
    return click.option("--token", default=None, metavar="TOKEN", help=TOKEN_HELP)(f)


@click.command("edit")
@click.argument("ref", metavar="ID")
@click.option("--name", default=None, help="The object's new name.")
@click.option("--summary", default=None, help="The new summary (at most 400 chars).")
@click.option("--body", default=None, help="The new body (or use --body-file).")
@click.option("--body-file", type=click.Path(allow_dash=True, dir_okay=False, exists=True),
              default=None, help="Read the new body from a UTF-8 file (- for stdin).")
@click.option("--add-alias", multiple=True, help="Add an alias (repeatable).")
@click.option("--remove-alias", multiple=True, help="Remove an alias (repeatable).")
@click.option("--add-cue", multiple=True, help="Add a cue: a question it answers (repeatable).")
@click.option("--remove-cue", multiple=True, help="Remove a cue (repeatable).")
@click.option("--state", default=None, metavar="STATE",
              help="A schedule's state (scheduled, moved, cancelled, done) or a todo's (open, "
                   "done, dropped).")
@_token_option
@json_option
@click.pass_context
def edit(ctx: click.Context, ref: str, name: str | None, summary: str | None,
         body: str | None, body_file: str | None, add_alias: tuple[str, ...],
         remove_alias: tuple[str, ...], add_cue: tuple[str, ...], remove_cue: tuple[str, ...],
         state: str | None, token: str | None, as_json: bool) -> None:
    """Correct fields of one object (ID: an id, or a unique name or alias).

    Fields not given are kept. Refused, nothing changed: an unknown or ambiguous ID, a field
    past its limit, a secret-looking value, removing an alias or cue it does not have, a name
    or alias another object of the same type answers to, a state its type does not have."""
    from ..objects.corrections import Correction, ProfileEdit

    if body is not None and body_file is not None:
        raise click.UsageError("give --body or --body-file, not both")
    with open_memory(ctx) as mem:
        if body_file is not None:
            body = _read_text(body_file, mem.config.settings.objects.body_max_chars)
        change = ProfileEdit(name=name, summary=summary, body=body, add_aliases=add_alias,
                             remove_aliases=remove_alias, add_cues=add_cue,
                             remove_cues=remove_cue, state=state)
        _run(mem, Correction("edit", [ref], change, **_token(token)), as_json)


@click.command("add")
@click.argument("type_", metavar="TYPE", type=click.Choice(OBJECT_TYPES))
@click.argument("name")
@click.option("--summary", default=None, help="Its summary (at most 400 chars).")
@click.option("--body", default=None, help="Its body (or use --body-file).")
@click.option("--body-file", type=click.Path(allow_dash=True, dir_okay=False, exists=True),
              default=None, help="Read the body from a UTF-8 file (- for stdin).")
@click.option("--alias", "aliases", multiple=True, help="An alias (repeatable).")
@click.option("--cue", "cues", multiple=True, help="A question it answers (repeatable).")
@_token_option
@json_option
@click.pass_context
def add(ctx: click.Context, type_: str, name: str, summary: str | None, body: str | None,
        body_file: str | None, aliases: tuple[str, ...], cues: tuple[str, ...],
        token: str | None, as_json: bool) -> None:
    """Create an object the memory lacks, by hand (made by you, as every correction is).

    A project starts as a candidate (`memvault project approve` activates it). Refused, nothing
    created: a live object of TYPE already has NAME (edit that one), a field past its limit, a
    secret-looking value (a credential says where the secret lives, never the secret)."""
    from ..objects.corrections import Correction, ProfileEdit

    if body is not None and body_file is not None:
        raise click.UsageError("give --body or --body-file, not both")
    with open_memory(ctx, create=True) as mem:
        if body_file is not None:
            body = _read_text(body_file, mem.config.settings.objects.body_max_chars)
        fields = ProfileEdit(summary=summary, body=body, add_aliases=aliases, add_cues=cues)
        _run(mem, Correction("create", [type_, name], fields, **_token(token)), as_json)


@click.command("merge")
@click.argument("loser", metavar="FROM")
@click.argument("survivor", metavar="INTO")
@_token_option
@json_option
@click.pass_context
def merge(ctx: click.Context, loser: str, survivor: str, token: str | None,
          as_json: bool) -> None:
    """Merge object FROM into object INTO (ids, or unique names or aliases).

    INTO keeps its profile and gains FROM's name and aliases as aliases, FROM's evidence and a
    `supersedes` relation to it; FROM stays readable and redirects to INTO."""
    from ..objects.corrections import Correction

    with open_memory(ctx) as mem:
        _run(mem, Correction("merge", [loser, survivor], **_token(token)), as_json)


@click.command("archive")
@click.argument("ref", metavar="ID")
@_token_option
@json_option
@click.pass_context
def archive(ctx: click.Context, ref: str, token: str | None, as_json: bool) -> None:
    """Archive an object: kept, readable and findable, no longer current."""
    from ..objects.corrections import Correction

    with open_memory(ctx) as mem:
        _run(mem, Correction("archive", [ref], **_token(token)), as_json)


@click.command("accept-edit")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True,
              help="Apply the fields you changed even though the object changed since the "
                   "file was rendered.")
@json_option
@click.pass_context
def accept_edit(ctx: click.Context, file: str, force: bool, as_json: bool) -> None:
    """Take a hand-edited object file of the vault as your correction.

    FILE is objects/<type>/<hash>.md or a conflict copy beside it (<hash>.conflict-1.md).
    The name (title), aliases and state (front matter), summary, body and cues you changed are
    saved as a new version made by you; relations and sources in the file are not read.
    Refused, nothing changed: a file outside the vault, a link or special file, a mangled front
    matter (or one naming a key twice), a name another object of its type answers to, a state
    its type does not have, the file of another object, or (without --force) an object changed
    since the file was rendered."""
    from ..objects.corrections import Correction

    with open_memory(ctx) as mem:
        hand = mem.read_hand_edit(file)
        if not hand.changed:
            line = (f"{hand.rel_path}: nothing to accept: its name, aliases, state, summary, "
                    f"body and cues are what {hand.object_id} version {hand.version} holds")
            if as_json:
                print_json({"object": hand.object_id, "changed": False, "message": line})
            else:
                click.echo(line)
            return
        # The same file accepted again is the same correction: its receipt comes back.
        correction = Correction("accept_edit", [hand.object_id], hand.edit,
                                token=f"accept:{hand.object_id}:{hand.digest}",
                                base_version=None if force else hand.version)
        _run(mem, correction, as_json, accepted=hand)


class _TokenArg(TypedDict, total=False):
    token: str  # absent: Correction makes a fresh one


def _token(token: str | None) -> _TokenArg:
    return {} if token is None else {"token": token}


def _read_text(source: str, max_chars: int) -> str:
    """A UTF-8 file (or stdin) of at most `max_chars` chars, read without reading more."""
    limit = max_chars * 4  # UTF-8 takes at most 4 bytes a char
    if source == "-":
        raw = sys.stdin.buffer.read(limit + 1)
    else:
        with open(source, "rb") as handle:
            raw = handle.read(limit + 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not valid UTF-8 (byte {exc.start}); nothing "
                         "changed") from None
    if len(raw) > limit or len(text) > max_chars:
        raise InputError(f"{source}: a body holds at most {max_chars:,} chars; nothing changed")
    return text


def _run(mem: Memory, correction: Correction, as_json: bool,
         accepted: HandEdit | None = None) -> None:
    """Commit the correction, refresh the vault for its objects, print the receipt."""
    receipt = mem.correct(correction)
    vault_line = None
    if receipt["changed"] and not receipt.get("replayed"):
        if accepted is not None and not accepted.is_copy:
            _adopt(mem, accepted)
        vault_line = _refresh(mem, receipt["objects"])
    if as_json:
        print_json(receipt)
    else:
        for line in receipt_lines(receipt):
            click.echo(line)
    if vault_line:
        click.echo(vault_line, err=True)


def _adopt(mem: Memory, hand: HandEdit) -> None:
    """The accepted object file is in memory now: let the projector replace it without keeping
    it as a conflict copy (bytes that differ from these are still kept)."""
    mem.adopt_vault_file(hand)


def _refresh(mem: Memory, object_ids: Sequence[str]) -> str:
    from ..home.runs import refresh_vault
    from .followup import vault_line

    return vault_line(refresh_vault(mem, first=object_ids), mem.config.vault_path)


def receipt_lines(receipt: Mapping[str, Any]) -> list[str]:
    """A correction's receipt for people: one line per object, then the receipt itself."""
    if receipt.get("replayed"):
        head = "already applied (same token): the first receipt, nothing changed again"
    elif not receipt["changed"]:
        head = "unchanged: memory already says that"
    elif receipt["kind"] == "create":
        head = f"created by you; graph revision {receipt['revision']}"
    else:
        head = (f"corrected by you ({receipt['kind'].replace('_', ' ')}); graph revision "
                f"{receipt['revision']}")
    lines = [head]
    for object_id, version in receipt["versions"].items():
        note = " (merged away)" if object_id in receipt["merged"] else ""
        lines.append(f"  {object_id}: version {version}{note}")
    lines.append(f"receipt: correction {receipt['correction_id']}, token {receipt['token']}")
    return lines


@click.group("space")
def space() -> None:
    """Spaces: which agent's part of the memory an event or object is in (docs/spec.md 1.8)."""


@space.command("move")
@click.argument("ref", metavar="OBJECT|EVENT")
@click.argument("target", metavar="SPACE")
@json_option
@click.pass_context
def space_move(ctx: click.Context, ref: str, target: str, as_json: bool) -> None:
    """Re-place an object (an id, or a unique name or alias; what was merged into it goes
    with it) or an event (42 or event:42) into SPACE, by hand.

    An object's move is a new version made by a person; an event's text stays as it is, its
    hot fragments follow it (a summary head that already folded it keeps its own space).
    """
    with open_memory(ctx) as mem:
        done = mem.move_space(ref, target)
    if as_json:
        print_json(done)
        return
    if not done["moved"]:
        click.echo(f"{done['kind']} {done['id']} is already in space {target}")
        return
    click.echo(f"moved {done['kind']} {done['id']} from space {done['was']} to {target}"
               + (f" (with {', '.join(done['moved'][1:])})" if len(done["moved"]) > 1 else ""))
