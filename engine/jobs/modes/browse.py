"""The browsing tools organize and deep offer the model: search, read, evidence, directory.

Reading an object through these tools (or receiving it in the claim) is what allows a batch to
overwrite it: the batch's `read_ids` set grows with every read. The tools see what a client
bound to the batch's space sees (that space and `shared`): a model filing a `work` event never
reads a `home` object or event, so nothing of `home` can reach what it writes.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from ...base.errors import MemvaultError, NotFound
from ...base.spaces import Spaces
from ...objects.links import cited_slices, slice_texts
from ...objects.proposals import ObjectType
from ...objects.records import (
    ObjectPage,
    get_object,
    list_objects,
    read_object,
    resolve_redirect,
)
from ...recall.answers import EventHit, ObjectHit
from ...recall.query import memory_find
from ...timeline.events import parse_event_id, read_event_page
from ..batch_loop import FieldError, Tool

DIRECTORY_PAGE = 50


class SearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=500)
    types: list[ObjectType] | None = Field(default=None, max_length=7)
    limit: int = Field(default=10, ge=1, le=20)


class ReadArgs(BaseModel):
    id: str = Field(max_length=140)
    offset: int = Field(default=0, ge=0)


class EvidenceArgs(BaseModel):
    id_or_event: str = Field(max_length=140, description="an object id or an event id")
    offset: int = Field(default=0, ge=0)


class DirectoryArgs(BaseModel):
    type: ObjectType | None = None
    offset: int = Field(default=0, ge=0)


def search(conn: sqlite3.Connection, query: str, types: list[str] | None,
           limit: int, spaces: Spaces) -> list[ObjectHit | EventHit]:
    """Objects matching `query` that `spaces` sees, through recall (names, aliases, cues,
    words; zh and en)."""
    return memory_find(conn, query, types=types, limit=limit, include_events=False,
                       spaces=spaces)["hits"]


def evidence_text(conn: sqlite3.Connection, id_or_event: str, offset: int,
                  spaces: Spaces) -> dict[str, Any]:
    """Raw text behind an event id, or the evidence slices of an object, paged; only of what
    `spaces` sees (another space's item is answered as a missing one)."""
    if ":" in id_or_event and not id_or_event.startswith("event:"):
        target = resolve_redirect(conn, id_or_event)
        if not spaces.sees(get_object(conn, target).space):
            raise NotFound(f"no object {id_or_event}")
        rows = cited_slices(conn, target, limit=21, offset=offset, spaces=spaces)
        page = rows[:20]
        shown = [{"event_id": r.event_id, "start_char": r.start_char, "end_char": r.end_char,
                  "occurred_at": r.occurred_at, "text": text}
                 for r, text in zip(page, slice_texts(conn, page, spaces), strict=True)]
        return {"id": target, "evidence": shown,
                "next_offset": offset + 20 if len(rows) > 20 else None}
    return dict(read_event_page(conn, parse_event_id(id_or_event), offset, spaces=spaces))


def _field_named(args: BaseModel, message: str) -> str:
    """The argument an error is about: the one its message starts with ("types must be
    among …"), else the first one it names as a word, else the first argument."""
    fields = list(type(args).model_fields)
    named = [f for f in fields if re.search(rf"\b{re.escape(f)}\b", message)]
    leading = [f for f in named if message.startswith(f)]
    return (leading or named or fields)[0]


def browse_tools(conn: sqlite3.Connection, read_ids: set[str],
                 seen: Callable[[], Spaces]) -> list[Tool]:
    """The four browsing tools, seeing what `seen()` sees (asked at each call, so a batch whose
    model never browses never reads it); reads are added to `read_ids`."""

    def guarded(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def run(args: Any) -> Any:
            try:
                return fn(args)
            except MemvaultError as exc:
                raise FieldError(_field_named(args, str(exc)), str(exc)) from None
        return run

    newly_read: set[str] = set()  # ids a read_object call (not the claim) made readable

    def do_read(args: ReadArgs) -> ObjectPage:
        data = read_object(conn, args.id, args.offset, seen())
        if data["object"]["id"] not in read_ids:
            newly_read.add(data["object"]["id"])
        read_ids.add(data["object"]["id"])
        return data

    def unread(data: ObjectPage) -> None:
        """The budget withheld this read: the model never saw the profile, so it may not
        overwrite it on the strength of that read."""
        if data["object"]["id"] in newly_read:
            newly_read.discard(data["object"]["id"])
            read_ids.discard(data["object"]["id"])

    def do_directory(args: DirectoryArgs) -> dict[str, Any]:
        items = [{"id": o.id, "name": o.name, "summary": o.summary[:120], "status": o.status}
                 for o in list_objects(conn, args.type, spaces=seen())]
        page = items[args.offset: args.offset + DIRECTORY_PAGE]
        end = args.offset + len(page)
        return {"objects": page, "total": len(items),
                "next_offset": end if end < len(items) else None}

    return [
        Tool("search_objects", "Find objects by name, alias, cue or words (Chinese or English).",
             SearchArgs, guarded(lambda a: search(conn, a.query, a.types, a.limit, seen()))),
        Tool("read_object", "Read an object's profile, relations and evidence; needed before "
             "rewriting it.", ReadArgs, guarded(do_read), on_withheld=unread),
        Tool("read_evidence", "Read the raw event text behind an event id or an object's "
             "evidence.", EvidenceArgs,
             guarded(lambda a: evidence_text(conn, a.id_or_event, a.offset, seen()))),
        Tool("list_directory", "List objects (optionally of one type), 50 a page.",
             DirectoryArgs, guarded(do_directory)),
    ]
