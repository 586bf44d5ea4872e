"""Read-only inspection, no model calls: status, list, object, events, event, timeline, expand.

Each opens the database read-only. object/event answers carry next_offset and time lists a
cursor; pass it as the last argument to go on. Secret-looking values in what they show are
masked as [secret: kind] (engine/recall/masking.py) unless --reveal-secrets, which is logged.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from ..objects.ids import OBJECT_TYPES
from ..objects.states import marked_summary
from .app import (
    SQLITE_MAX_INT,
    LazyConsole,
    NumericArgsCommand,
    escape,
    json_option,
    open_memory,
    print_json,
    report_reveal,
    reveal_ask,
    reveal_option,
    space_option,
)

if TYPE_CHECKING:
    from rich.table import Table

# User text is printed through escape() and emoji codes are off, so "[/x]" or ":smile:" in an
# event is shown as written (not parsed as rich markup, which can also raise MarkupError).
console = LazyConsole(highlight=False, soft_wrap=True, emoji=False)


def _table(title: str, *columns: str) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        table.add_column(column)
    return table


@click.command()
@space_option
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Counts per state, the 20 oldest unfinished records, the hook calls that failed lately
    and PRAGMA quick_check. With --space: only what an agent bound to that space sees."""
    from .replicate import print_status, replica_status

    with open_memory(ctx, readonly=True) as mem:
        report = mem.status()
        home, now = mem.config.home, mem.clock.now()
    replica = replica_status(home, now) if "graph_revision" in report else None  # owner only
    if as_json:
        print_json({**report, "replica": replica} if replica else report)
        return
    render_status(report)
    if replica:
        print_status(home, now)


def render_status(report: Mapping[str, Any]) -> None:
    """Print a status report as tables for people."""
    revision = (f"  graph revision: {report['graph_revision']}" if "graph_revision" in report
                else "")  # a bound status has none (engine/home/status.py OWNER_ONLY)
    console.print(f"[bold]memvault[/bold] at {escape(report['home'])}  "
                  f"quick_check: {report['quick_check']}{revision}")
    if bound := report.get("bound"):
        console.print(escape(
            f"bound to space {bound['space']}: counts of {', '.join(bound['sees'])} only; "
            f"{', '.join(bound['left_out'])} and the database file's sizes are the owner's"))
    ev = _table("events", "state", "count")
    for state, count in report["events"].items():
        ev.add_row(state, str(count))
    console.print(ev)
    tl = report["timeline"]
    console.print(f"hot timeline: {tl['nodes']} nodes, ~{tl['est_tokens']:,} estimated tokens")
    if len(report.get("spaces", {})) > 1:  # one space (shared) is every memory before spaces
        sp = _table("spaces", "space", "events", "live objects", "hot nodes")
        for space, counts in report["spaces"].items():
            sp.add_row(escape(space), str(counts["events"]), str(counts["objects"]),
                       str(counts["hot_nodes"]))
        console.print(sp)
    if report["objects"]:
        ob = _table("objects", "type", "by status")
        for type_, counts in sorted(report["objects"].items()):
            ob.add_row(type_, ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        console.print(ob)
    console.print(f"relations: {report['relations']}  evidence links: {report['evidence']}")
    if report.get("jobs"):
        console.print("jobs: " + ", ".join(f"{k} {v}" for k, v in sorted(report["jobs"].items())))
    core = ", ".join(f"{k} {v if v is not None else '-'}" for k, v in
                     report["core_files_chars"].items())
    console.print(f"core files (chars): {core}")
    if "vault" in report:
        render_vault_status(report["vault"])
    if "usage" in report:
        total = report["usage"]["total"]
        console.print(f"model usage: {total['calls']} calls, {total['input_tokens']:,} input / "
                      f"{total['output_tokens']:,} output tokens ({total['estimated_calls']} "
                      "estimated" + (f", {total['bad_calls']} bad, left out" if total["bad_calls"]
                                     else "") + ")")
        for row in report["usage"]["per_day"]:
            console.print(f"  {row['day']} {row['mode']}: {row['calls']} calls, "
                          f"{row['input_tokens']:,} in / {row['output_tokens']:,} out, "
                          f"{row['failed']} failed")
    if "disk" in report:
        render_status_disk(report["disk"])
    if "batches" in report:
        from ..jobs.progress import report_lines

        for line in report_lines(report["batches"]):
            console.print(escape(line))
    for key in sorted(set(report) - _SHOWN):
        value = report[key]  # a newer part of the report: JSON, never a Python repr
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                                  default=str)
        console.print(escape(f"{key}: {shown}"))
    if "capture" in report:
        render_capture(report["capture"])
    if report.get("secrets", {}).get("events"):
        render_secrets(report["secrets"])
    if report["oldest_unfinished"]:
        un = _table("oldest unfinished", "event", "state", "enqueued", "read", "preview")
        for row in report["oldest_unfinished"]:
            un.add_row(str(row["event_id"]), row["state"], row["enqueued_at"],
                       f"{row['page_cursor']}/{row['chars']}",
                       escape(row["preview"].replace("\n", " ")))
        console.print(un)


def render_status_disk(disk: dict[str, Any]) -> None:
    """The disk lines: the whole file's (render_disk), or for a status bound to a space,
    which has no file figures, the raw text and object versions of the spaces it sees."""
    if "db_file_bytes" in disk:
        from .maintenance import render_disk

        return render_disk(disk)
    raw, versions, week = disk["raw_text"], disk["object_versions"], disk["growth"]["last_7d"]
    console.print(f"disk (spaces seen): raw text {raw['bytes']:,} bytes ({raw['chars']:,} "
                  f"chars, {raw['events']} events); object versions {versions['bytes']:,} "
                  f"bytes ({versions['rows']} rows); growth {week['bytes_per_day']:,} "
                  "bytes/day over 7 days")


def render_capture(capture: dict[str, Any]) -> None:
    """The hook calls that failed lately (capture.log), newest first; nothing when none."""
    if not capture["recent"]:
        return
    table = _table(f"capture: hook calls that failed or skipped lines (newest "
                   f"{escape(capture['last_at'])}; capture.log in the home)",
                   "at", "host", "what", "detail")
    for row in capture["recent"]:
        table.add_row(*(escape(str(row[k])) for k in ("at", "host", "what", "detail")))
    console.print(table)


def render_secrets(secrets: dict[str, Any]) -> None:
    """The status line pointing at events that hold secret-looking text."""
    ids = ", ".join(str(i) for i in secrets["ids"])
    more = " …" if secrets["events"] > len(secrets["ids"]) else ""
    console.print(f"[yellow]secret-looking text ({escape(', '.join(secrets['kinds']))}) in "
                  f"{secrets['events']} of the newest {secrets['scanned']} events: "
                  f"{ids}{more}; {escape(secrets['hint'])}[/yellow]")


def render_vault_status(vault: dict[str, Any]) -> None:
    """The vault's lines of status: backlog, heartbeat, failures, hand edits, conflict copies."""
    age = vault.get("watcher_heartbeat_age_s")
    beat = f"watcher heartbeat {age} s ago" if age is not None else "no watcher seen"
    console.print(f"vault: {vault['files']} files, {vault['pending_objects']} objects waiting "
                  f"to be rendered, {beat}")
    if vault["errors"]:
        table = _table(f"vault errors ({vault['error_total']})", "object", "path", "error",
                       "at")
        for row in vault["errors"]:
            table.add_row(*(escape(str(row[k] or "")) for k in ("object_id", "path", "error",
                                                                  "created_at")))
        console.print(table)
    if vault["hand_edits"]:
        table = _table("vault files edited by hand (not imported)", "file", "object", "kind",
                       "detail")
        for row in vault["hand_edits"]:
            table.add_row(*(escape(str(row[k] or "")) for k in ("path", "object_id", "kind",
                                                                  "detail")))
        console.print(table)
    for row in vault["conflicts"]:
        console.print(f"kept hand edit: {escape(row['path'])} -> {escape(row['conflict_path'])}")


_SHOWN = {"usage", "disk", "vault", "home", "quick_check", "graph_revision", "events",
          "timeline", "objects", "relations", "evidence", "jobs", "core_files_chars",
          "oldest_unfinished", "secrets", "batches", "spaces", "capture", "bound"}


@click.command("list")
@space_option
@click.argument("type_", metavar="[TYPE]", type=click.Choice(OBJECT_TYPES), required=False)
@click.option("--current", is_flag=True,
              help="Only what is still ahead or open: no schedule or todo that is cancelled, "
                   "done, dropped or past (a one-off whose day has gone).")
@reveal_option
@json_option
@click.pass_context
def list_(ctx: click.Context, type_: str | None, current: bool, reveal: bool,
          as_json: bool) -> None:
    """List the objects of one type, or of every type by type (a schedule's or todo's state as
    of today)."""
    ask = reveal_ask("list", reveal)
    with open_memory(ctx, readonly=True) as mem:
        rows = mem.list_objects(type_, current=current, reveal=ask or False)
    report_reveal(ask)
    if as_json:
        print_json(rows)
        return
    by_type = {t: [row for row in rows if row["type"] == t] for t in OBJECT_TYPES}
    for listed in [type_] if type_ else [t for t in OBJECT_TYPES if by_type[t]]:
        print_type_list(listed, by_type[listed])


def print_type_list(type_: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """One type's objects: a table on a wide terminal, else an entry each."""
    if console.is_terminal and console.width >= WIDE_LIST:
        return print_object_table(type_, rows)
    console.print(f"{type_} ({len(rows)})", highlight=False)
    for row in rows:
        print_object_entry(row, console.width)


# A table of id, name, status and summary needs this many columns to give the summary room.
WIDE_LIST = 120


def print_object_table(type_: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """`memvault list` on a wide terminal: one table row an object."""
    from rich.table import Table

    from .recall import id_column

    table = Table(id_column(row["id"] for row in rows), "name", "status", "summary",
                  title=f"{type_} ({len(rows)})", title_justify="left")
    for row in rows:
        table.add_row(escape(row["id"]), escape(row["name"]), _status(row),
                      escape(marked_summary(row.get("state"), row["summary"])[:80]))
    console.print(table)


def _status(row: Mapping[str, Any]) -> str:
    """The status a list shows: the lifecycle, then a schedule's or todo's state (`active,
    cancelled`)."""
    state = row.get("state")
    return f"{row['status']}, {state}" if state else str(row["status"])


def print_object_entry(row: Mapping[str, Any], width: int) -> None:
    """`memvault list` at 80 columns or piped: the id whole on its own line (with the status,
    and the name when the summary does not say it), then the summary indented and wrapped, so
    `grep` finds an object by id or word and no column is squeezed to a word a line."""
    head = f"{row['id']}  {_status(row)}"
    if row["name"].casefold() not in row["summary"].casefold():
        head += f"  {row['name']}"
    console.print(escape(head), highlight=False, soft_wrap=True)
    summary = " ".join(marked_summary(row.get("state"), row["summary"]).split())
    lines = textwrap.wrap(summary, width=max(width - 4, 20)) or [""]
    for line in lines[:3]:
        console.print("    " + escape(line), highlight=False, soft_wrap=True)


@click.command("object", cls=NumericArgsCommand)
@space_option
@click.argument("object_id", metavar="ID")
@click.argument("offset", type=click.IntRange(min=0), default=0)
@click.option("--versions", is_flag=True,
              help="List the object's versions instead: when, made by whom (model or person), "
                   "which fields changed.")
@reveal_option
@json_option
@click.pass_context
def object_(ctx: click.Context, object_id: str, offset: int, versions: bool, reveal: bool,
            as_json: bool) -> None:
    """Show an object's profile, relations and evidence (paged: pass next_offset as OFFSET).

    ID is an object id (person:zhang-wei) or a unique name or alias (张伟, "zhang wei")."""
    from ..objects.ids import check_object_id
    from .recall import print_profile

    if object_id.strip().isdigit() or object_id.startswith("event:"):
        check_object_id(object_id)  # an event's id is refused: `memvault event` shows events
    if versions:
        _print_versions(ctx, object_id, as_json)
        return
    ask = reveal_ask("object", reveal)
    with open_memory(ctx, readonly=True) as mem:
        data = mem.read(object_id, offset, reveal=ask or False)
        assert data["kind"] == "object"  # an event's id was refused above
    report_reveal(ask)
    if as_json:
        print_json(data)
        return
    print_profile(data)


def _print_versions(ctx: click.Context, ref: str, as_json: bool) -> None:
    """`memvault object ID --versions`: every version, oldest first, with who made it."""
    with open_memory(ctx, readonly=True) as mem:
        history = mem.object_versions(ref)
    if as_json:
        print_json(history)
        return
    object_id, rows = history["id"], history["versions"]
    table = _table(escape(f"{object_id}: {len(rows)} versions"), "version", "changed_at",
                   "made by", "batch", "status", "changed")
    for row in rows:
        status = f"merged into {row['redirect_to']}" if row["redirect_to"] else row["status"]
        table.add_row(str(row["version"]), row["changed_at"], row["origin"],
                      str(row["batch_id"] or ""), escape(status), ", ".join(row["changed"]))
    console.print(table)


@click.command(cls=NumericArgsCommand)
@space_option
@click.argument("start", metavar="FROM")
@click.argument("end", metavar="TO")
@click.argument("cursor", required=False)
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True,
              help="Events per page.")
@reveal_option
@json_option
@click.pass_context
def events(
    ctx: click.Context, start: str, end: str, cursor: str | None, limit: int, reveal: bool,
    as_json: bool,
) -> None:
    """List events with FROM <= occurred_at < TO (ISO times, e.g. 2026-10-13T12:30:00+08:00)."""
    ask = reveal_ask("events", reveal)
    with open_memory(ctx, readonly=True) as mem:
        data = mem.list_events(start, end, cursor, limit, reveal=ask or False)
    report_reveal(ask)
    if as_json:
        print_json(data)
        return
    table = _table(escape(f"events {start} – {end}"), "id", "occurred_at", "source", "chars",
                   "preview")
    for row in data["events"]:
        table.add_row(str(row["id"]), row["occurred_at"], escape(row["source"]), str(row["chars"]),
                      escape(row["preview"].replace("\n", " ")[:70]))
    console.print(table)
    console.print(f"cursor: {data['cursor']}")


@click.command(cls=NumericArgsCommand)
@space_option
@click.argument("event_id", metavar="ID")
@click.argument("offset", type=click.IntRange(min=0), default=0)
@reveal_option
@json_option
@click.pass_context
def event(ctx: click.Context, event_id: str, offset: int, reveal: bool, as_json: bool) -> None:
    """Show one event's raw text (paged: pass next_offset as OFFSET)."""
    from ..timeline.events import parse_event_id
    from .recall import print_event

    ask = reveal_ask("event", reveal)
    with open_memory(ctx, readonly=True) as mem:
        # a reveal is logged only when it shows what the masked page hides (Memory)
        data = mem.read(str(parse_event_id(event_id)), offset, reveal=ask or False)
        assert data["kind"] == "event"  # parse_event_id took an event's id only
        report_reveal(ask)
        moves = mem.event_moves(int(data["id"])) if mem.spaces.bound is None else []
    if as_json:  # the owner sees where the event was before `memvault space move` re-placed it
        print_json({**data, "moves": moves} if moves else data)
        return
    print_event(data)
    for move in moves:
        console.print(escape(f"moved from space {move['from_space']} to {move['to_space']} "
                             f"at {move['moved_at']} ({move['origin']})"), highlight=False)


@click.command()
@space_option
@click.option("--max-bytes", type=click.IntRange(min=1), default=None,
              help="Bytes the view may carry (default timeline.view_max_bytes).")
@reveal_option
@json_option
@click.pass_context
def timeline(ctx: click.Context, max_bytes: int | None, reveal: bool, as_json: bool) -> None:
    """Show the hot timeline as the agent sees it, with an explicit account of any cut."""
    ask = reveal_ask("timeline", reveal)
    with open_memory(ctx, readonly=True) as mem:
        view = mem.timeline_view(max_bytes, reveal=ask or False)
    report_reveal(ask)
    if as_json:
        print_json(view)
        return
    table = _table("hot timeline", "node", "kind", "event", "at", "tokens", "text")
    for node in view["nodes"]:
        label = node["kind"] if node["kind"] == "head" else f"raw {node['fragment']}"
        table.add_row(str(node["id"]), label, str(node["event_id"] or ""), node["first_at"],
                      str(node["est_tokens"]), escape(node["text"].replace("\n", " ")[:60]))
    console.print(table)
    console.print(f"{view['shown_nodes']} of {view['total_nodes']} nodes shown, "
                  f"~{view['est_tokens']:,} of {view['total_est_tokens']:,} estimated tokens")
    if view["notice"]:
        console.print(f"[yellow]{escape(view['notice'])}[/yellow]")


@click.command(cls=NumericArgsCommand)
@space_option
@click.argument("node_id", metavar="NODE", type=click.IntRange(1, SQLITE_MAX_INT))
@reveal_option
@json_option
@click.pass_context
def expand(ctx: click.Context, node_id: int, reveal: bool, as_json: bool) -> None:
    """Show the children a summary head replaced."""
    ask = reveal_ask("expand", reveal)
    with open_memory(ctx, readonly=True) as mem:
        children = mem.expand(node_id, reveal=ask or False)
    report_reveal(ask)
    if as_json:
        print_json(children)
        return
    if not children:
        click.echo(f"node {node_id} has no children (a raw fragment)")
    for node in children:
        click.echo(f"[{node['id']} {node['kind']} L{node['level']}] {node['text']}")
