"""Recall from the command line: `find QUERY`, `read ID`, `evidence ID` (read-only, `--json`),
and `reindex`, the one writer, which brings the recall index up to date.

find/read/evidence open the database read-only and never write: events not yet indexed are
scanned (the answer says how many). read/evidence answers carry next_offset; pass it as OFFSET.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import click

from ..objects.ids import OBJECT_TYPES
from ..objects.states import is_current, marked_summary
from .app import (
    LazyConsole,
    Line,
    NumericArgsCommand,
    json_option,
    open_memory,
    piped,
    plain_width,
    print_json,
    report_reveal,
    reveal_ask,
    reveal_option,
    space_option,
    write_lines,
)

if TYPE_CHECKING:
    from rich.table import Column
    from rich.text import Text

REINDEX_CHUNK = 20_000  # events per write transaction: other writers wait at most one chunk

console = LazyConsole(highlight=False, soft_wrap=True)


def _text(value: object, terms: list[str] | None = None) -> Text:
    """User content as plain text (never rich markup), query terms in bold."""
    from rich.text import Text

    text = Text(str(value) if value is not None else "")
    if terms:
        text.highlight_words(terms, style="bold", case_sensitive=False)
    return text


def id_column(ids: Iterable[str], header: str = "id") -> Column:
    """A column that never cuts or wraps an id: narrow terminals shrink the other columns."""
    from rich.cells import cell_len
    from rich.table import Column

    width = max((cell_len(i) for i in ids), default=len(header))
    return Column(header, no_wrap=True, overflow="ignore", min_width=max(width, len(header)))


@click.command()
@space_option
@click.argument("query", nargs=-1, required=True)
@click.option("--type", "types", multiple=True, type=click.Choice([*OBJECT_TYPES, "event"]),
              help="Only these kinds (repeat the option); 'event' means raw events.")
@click.option("--project", default=None, help="Only this project, its members and their events.")
@click.option("--limit", type=click.IntRange(1, 200), default=20, show_default=True,
              help="Most hits to show.")
@reveal_option
@json_option
@click.pass_context
def find(
    ctx: click.Context, query: tuple[str, ...], types: tuple[str, ...], project: str | None,
    limit: int, reveal: bool, as_json: bool,
) -> None:
    """Find objects and raw events by names, aliases, cues and words (Chinese or English).

    Secret-looking values show as [secret: kind] unless --reveal-secrets."""
    text = " ".join(query)
    ask = reveal_ask("find", reveal)
    with open_memory(ctx, readonly=True) as mem:
        data = mem.find(text, types=list(types) or None, project=project, limit=limit,
                        reveal=ask or False)
    report_reveal(ask)
    if as_json:
        print_json(data)
        return
    if piped():  # plain lines, as the console would print them, without loading rich
        write_lines(_find_lines(text, data, plain_width()))
        return
    if console.is_terminal and console.width >= WIDE_FIND:
        _print_hit_table(text, data)
        lines = _notice_lines(data)
    else:
        lines = _find_lines(text, data, console.width)
    for line in lines:
        console.print(_text(line.text, data["terms"] if line.terms else None), style=line.style,
                      soft_wrap=True)


# The hit table's seven columns need this many to leave the snippet readable.
WIDE_FIND = 140


def _label(hit: Mapping[str, Any]) -> str:
    """An object's name (with its state when the plan is no longer ahead), an event's time."""
    if hit["kind"] != "object":
        return str(hit["occurred_at"])
    state = hit.get("state")
    return str(hit["name"]) if is_current(state) else f"{hit['name']} ({state})"


def _print_hit_table(text: str, data: Mapping[str, Any]) -> None:
    """`memvault find` on a wide terminal: one table row a hit."""
    from rich.table import Table

    ids = id_column(str(hit["id"]) for hit in data["hits"])
    table = Table("#", "kind", ids, "score", "name / when", "snippet", "why",
                  title=_text(f"find {text!r}: {len(data['hits'])} hits"), title_justify="left")
    for rank, hit in enumerate(data["hits"], 1):
        table.add_row(str(rank), hit["kind"] if hit["kind"] == "event" else hit["type"],
                      _text(hit["id"]), f"{hit['score']:.3f}", _text(_label(hit)),
                      _text(hit["snippet"], data["terms"]), _text("; ".join(hit["why"])))
    console.print(table)


def _find_lines(text: str, data: Mapping[str, Any], width: int) -> list[Line]:
    """`memvault find` at 80 columns or piped: a heading, then per hit its rank, id, score and
    name or time on one line (an event's id as `event N`), the snippet wrapped and why it
    matched, indented (no column is squeezed to a word a line); the notices last."""
    lines = [Line(f"find {text!r}: {len(data['hits'])} hits")]
    for rank, hit in enumerate(data["hits"], 1):
        record = hit["id"] if hit["kind"] == "object" else f"event {hit['id']}"
        lines.append(Line(f"{rank}. {record}  {hit['score']:.3f}  {_label(hit)}"))
        snippet = " ".join(str(hit["snippet"]).split())
        lines += [Line("    " + line, terms=True)
                  for line in (textwrap.wrap(snippet, width=max(width - 4, 20)) or [""])[:4]]
        if hit["why"]:
            lines.append(Line("    why: " + "; ".join(hit["why"])))
    return lines + _notice_lines(data)


def _notice_lines(data: Mapping[str, Any]) -> list[Line]:
    """What closes find's answer, the hit table's too: events scanned unindexed, a notice."""
    lines = []
    if data.get("unindexed_events"):
        lines.append(Line(f"{data['unindexed_events']} events are not indexed yet and were "
                          "scanned directly (`memvault reindex` catches up)", style="yellow"))
    if data.get("notice"):
        lines.append(Line(str(data["notice"]), style="yellow"))
    return lines


@click.command(cls=NumericArgsCommand)
@space_option
@click.argument("record_id", metavar="ID")
@click.argument("offset", type=click.IntRange(min=0), default=0)
@reveal_option
@json_option
@click.pass_context
def read(ctx: click.Context, record_id: str, offset: int, reveal: bool, as_json: bool) -> None:
    """Show an object's profile, relations and evidence list, or an event (paged: OFFSET).

    ID is an object id, a unique name or alias, or an event id (42, event:42)."""
    ask = reveal_ask("read", reveal)
    with open_memory(ctx, readonly=True) as mem:
        data = mem.read(record_id, offset, reveal=ask or False)
    report_reveal(ask)
    if as_json:
        print_json(data)
        return
    if data["kind"] == "event":
        print_event(data)
        return
    print_profile(data)


def print_profile(data: Mapping[str, Any]) -> None:
    """An object as memory_read returns it: profile, links, next_offset (for people)."""
    obj = data["object"]
    if data["redirected_from"]:
        console.print(_text(f"{data['redirected_from']} was merged into {obj['id']}"),
                      style="yellow")
    state = f", {obj['state']}" if obj.get("state") else ""
    console.print(_text(f"{obj['name']}  {obj['id']}  ({obj['status']}{state}, "
                        f"v{obj['version']})"), style="bold")
    for label, value in (("aliases", ", ".join(obj["aliases"])),
                         ("summary", marked_summary(obj.get("state"), obj["summary"])),
                         ("cues", "; ".join(obj["cues"])),
                         ("merged here", ", ".join(data["merged"]))):
        if value:
            console.print(_text(f"{label}: {value}"))
    if obj["body"]:
        console.print(_text(obj["body"]))
    for link in data["links"]:
        console.print(_text(_link_line(link)))
    console.print(f"{data['total_links']} links; next_offset: {data['next_offset']}")


def _link_line(link: dict[str, Any]) -> str:
    if link["kind"] == "relation":
        arrow = "->" if link["direction"] == "out" else "<-"
        return f"  {arrow} {link['label']} {link['other']} ({link['name'] or '?'})"
    return (f"  evidence event {link['event_id']} [{link['start_char']}:{link['end_char']}] "
            f"{link['occurred_at']}")


def print_event(data: Mapping[str, Any]) -> None:
    """An event as memory_read returns it: header, meta, raw text, who cites it."""
    console.print(_text(f"event {data['id']}  {data['occurred_at']}  {data['source']}/"
                        f"{data['event_kind']}  "
                        f"{data['chars']} chars  state: {data['state']}"), style="bold")
    if data.get("key"):  # the client's message id (memvault.timeline.keys)
        console.print(_text(f"key: {data['key']}"))
    if data["meta"]:
        console.print(_text("meta: " + json.dumps(data["meta"], ensure_ascii=False)))
    click.echo(data["text"])
    for cite in data.get("cited_by", []):
        console.print(_text(f"  cited by {cite['object_id']} [{cite['start_char']}:"
                            f"{cite['end_char']}]"))
    console.print(f"next_offset: {data['next_offset']}")


@click.command(cls=NumericArgsCommand)
@space_option
@click.argument("record_id", metavar="ID")
@click.argument("offset", type=click.IntRange(min=0), default=0)
@reveal_option
@json_option
@click.pass_context
def evidence(ctx: click.Context, record_id: str, offset: int, reveal: bool,
             as_json: bool) -> None:
    """Show the raw text behind an object's evidence, or an event and who cites it (paged)."""
    ask = reveal_ask("evidence", reveal)
    with open_memory(ctx, readonly=True) as mem:
        data = mem.evidence(record_id, offset, reveal=ask or False)
    report_reveal(ask)
    if as_json:
        print_json(data)
        return
    if data["kind"] == "event":
        print_event(data)
        return
    if data["redirected_from"]:
        console.print(_text(f"{data['redirected_from']} was merged into {data['id']}"),
                      style="yellow")
    console.print(_text(f"evidence of {data['id']}: {data['total_chars']} chars"), style="bold")
    for item in data["items"]:
        part = " (part)" if item["partial"] else ""
        console.print(_text(f"-- event {item['event_id']} [{item['start_char']}:"
                            f"{item['end_char']}]{part} {item['occurred_at']} {item['source']}"
                            + (f" via {item['object_id']}" if item["object_id"] != data["id"]
                               else "")), style="dim")
        click.echo(item["text"])
    console.print(f"next_offset: {data['next_offset']}")


@click.command()
@json_option
@click.pass_context
def reindex(ctx: click.Context, as_json: bool) -> None:
    """Bring the recall index up to date: new events and changed objects."""
    with open_memory(ctx) as mem:
        done = mem.reindex(REINDEX_CHUNK)
    if as_json:
        print_json(done)
    else:
        click.echo(f"indexed {done['events']:,} events and {done['objects']:,} objects")
