"""The batch payloads a mode sends a model: one typed shape per mode, the contract between the
modes (jobs/modes/) that write them and any model that reads them (the builtin's rules parse
them back; a real model reads the same JSON).

Each shape is a TypedDict, so the JSON a real model sees is exactly the dict the mode built (no
field added or reordered) and a field renamed on either side fails in mypy. `read_payload`
checks a payload whole against its mode's shape, for a provider that wants to (a third party's,
registered through the entry points) and for the test that holds every mode to its shape; the
builtin reads only what its rules need.
"""

from __future__ import annotations

import functools
from typing import (
    Any,
    NotRequired,  # pydantic checks these on Python 3.11
)

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from .base import ProviderError


class ObjectPayload(TypedDict):
    """An object as a payload shows it (organize's related objects, deep's reviewed objects and
    duplicate candidates): its whole profile but its redirect."""

    id: str
    type: str
    name: str
    aliases: list[str]
    summary: str
    body: str
    cues: list[str]
    status: str
    state: str | None  # a schedule's or todo's (objects/states.py); None for other types
    version: int
    created_at: str
    updated_at: str


# A hot-timeline node to fold, as compact's payload shows it ("from" is a Python keyword: the
# functional form keeps the JSON key as it is).
CompactNode = TypedDict("CompactNode", {
    "id": int, "kind": str, "level": int, "from": str, "to": str, "source": str | None,
    "chars": int, "text": str})


class CompactPayload(TypedDict):
    mode: str  # the mode's name (jobs/kinds.py JobMode)
    nodes: list[CompactNode]


class PayloadEvent(TypedDict):
    """The event an organize batch reads a page of."""

    id: int
    occurred_at: str
    source: str
    kind: str
    meta: dict[str, Any] | None
    chars: int


class PayloadPage(TypedDict):
    """The page of the event the batch reads: chars [start, end), the last page or not."""

    start: int
    end: int
    last: bool
    text: str


class MemorySpan(TypedDict):
    """Chars of the page that are the memory's own output (never cited), absolute offsets."""

    start: int
    end: int
    what: str


class OrganizePayload(TypedDict):
    mode: str  # the mode's name (jobs/kinds.py JobMode)
    event: PayloadEvent
    page: PayloadPage
    progress: str | None  # what earlier pages of the event noted
    targets: list[str]  # objects already citing the event
    related: list[ObjectPayload]
    memory_output: NotRequired[list[MemorySpan]]  # only when the page holds any
    scope: str | None


class BodyCut(TypedDict):
    """How much of a reviewed body the payload shows, and what to do before rewriting it."""

    shown_chars: int
    total_chars: int
    read: str


class ReviewItem(ObjectPayload, total=False):
    """A reviewed object as the payload shows it: its profile, its first links and, when its
    body was cut to fit, how much of it is shown."""

    links: list[dict[str, Any]]  # as objects.links.object_links gives them
    body_cut: BodyCut


class DeepPayload(TypedDict):
    mode: str  # the mode's name (jobs/kinds.py JobMode)
    review: list[ReviewItem]
    related: list[ObjectPayload]
    scope: str | None


Payload = CompactPayload | OrganizePayload | DeepPayload


@functools.cache  # built on first use: a start that reads no payload never builds one
def _adapter(mode: str) -> TypeAdapter[Any]:
    shape = {"compact": CompactPayload, "organize": OrganizePayload, "deep": DeepPayload}[mode]
    return TypeAdapter(shape)


def read_payload(mode: str, data: object) -> Any:
    """`data` (a parsed JSON payload) checked against `mode`'s shape; a ProviderError naming
    the first wrong field when it does not fit. The caller annotates what it gets back."""
    try:
        return _adapter(mode).validate_python(data, strict=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "payload"
        raise ProviderError(f"a {mode} payload that does not fit its shape: {where}: "
                            f"{first['msg']}") from None
