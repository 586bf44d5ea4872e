"""What memory_find, memory_read and memory_evidence answer, as types, built as these types
where they are made (engine/recall/query.py, checked by mypy); `Memory` hands them on as they
are. While find ranks its hits they are candidates (ObjectCandidate, EventCandidate): the hits
with what their snippets are cut from, taken out before the answer leaves. The JSON on the
wire is the same.

`tests/test_answer_types.py` checks real answers carry exactly the keys declared here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NotRequired, TypedDict

from ..objects.records import ObjectProfile


class ObjectHit(TypedDict):
    """An object memory_find matched (a merged object is reported as its survivor)."""

    kind: Literal["object"]
    id: str
    type: str
    name: str
    status: str
    score: float  # the share of the query's best possible score (a member's: half its project's)
    snippet: str
    why: list[str]  # what matched, at most 8 reasons
    merged: NotRequired[list[str]]  # ids merged into it that matched
    # a schedule's or todo's state as of today (objects/states.py: `past` too); the snippet of
    # one no longer ahead starts `[cancelled] `, and it ranks below a current one
    state: NotRequired[str]


class EventHit(TypedDict):
    """A raw event memory_find matched, alone or by the turns around it."""

    kind: Literal["event"]
    id: int
    score: float
    snippet: str
    why: list[str]
    occurred_at: str
    source: str
    event_kind: str  # the event's own kind ("message", …)
    meta: dict[str, Any] | None
    context: NotRequired[list[int]]  # the ids of the neighbouring turns that helped it score


class FindAnswer(TypedDict):
    """memory_find: ranked hits, objects and events interleaved."""

    query: str
    terms: list[str]  # the searchable terms the query was split into
    hits: list[ObjectHit | EventHit]
    notice: str | None  # what the answer could not do (no searchable words, unindexed events)
    unindexed_events: NotRequired[int]  # events past the index, scanned from their table
    parts: NotRequired[list[str]]  # the questions of a query that asks several, each searched


# What a hit's snippet is cut from while find ranks it: an event's text and the query terms'
# idf; an object's fields, the reasons it matched and the idf (None: a project member found
# through its project). `masking.add_snippets` takes them out before the answer leaves.
EventSource = tuple[str, dict[str, float]]
ObjectSource = tuple[Sequence[str], list[str], dict[str, float]]


class ObjectCandidate(ObjectHit):
    """An object hit while find ranks it (recall/query.py), with what its snippet is cut from."""

    _source: NotRequired[ObjectSource | None]
    _summary: NotRequired[str]


class EventCandidate(EventHit):
    """An event hit while find ranks it, with what its snippet is cut from."""

    _source: NotRequired[EventSource]
    _summary: NotRequired[str]


Candidate = ObjectCandidate | EventCandidate


class ObjectRead(TypedDict):
    """memory_read of an object: objects.records.ObjectPage, with `kind` and `merged`."""

    kind: Literal["object"]
    object: ObjectProfile
    redirected_from: str | None
    links: list[dict[str, Any]]
    total_links: int
    offset: int
    next_offset: int | None
    merged: list[str]  # ids merged into it


class EventRead(TypedDict):
    """memory_read of an event: one page of its text (timeline.events.read_event_page)."""

    kind: Literal["event"]
    id: int
    occurred_at: str
    source: str
    event_kind: str
    meta: dict[str, Any] | None
    chars: int
    est_tokens: int
    ingested_at: str
    key: str | None
    state: str  # "hot", or its archive-queue state
    offset: int
    text: str
    next_offset: int | None


class Citation(TypedDict):
    """A span of an event an object cites as evidence."""

    object_id: str
    start_char: int
    end_char: int


class EventEvidence(EventRead):
    """memory_evidence of an event: its text, paged, and the objects citing it."""

    cited_by: list[Citation]


class EvidenceItem(TypedDict):
    """One cited span's text (cut to the page: `partial`)."""

    object_id: str  # the object citing it (the survivor or one merged into it)
    event_id: int
    occurred_at: str
    source: str
    start_char: int
    end_char: int
    text: str
    partial: bool


class ObjectEvidence(TypedDict):
    """memory_evidence of an object: the raw text behind its evidence, oldest first, paged by
    chars of evidence text."""

    kind: Literal["object"]
    id: str
    redirected_from: str | None
    merged: list[str]
    total_chars: int
    offset: int
    items: list[EvidenceItem]
    next_offset: int | None


ReadAnswer = ObjectRead | EventRead
EvidenceAnswer = ObjectEvidence | EventEvidence
