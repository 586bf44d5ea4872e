"""What a batch claims, one frozen type per mode: the JSON a batch row stores in `claim`.

Invariant: `to_json` gives the object exactly as memvault has always stored it (its keys in
that order; records.new_batch writes it after the batch's `token`), so a row that an earlier
version stored reads back and is written again byte for byte: homes hold such rows, and a
replayed batch must claim what it claimed. `from_json` refuses (ValueError) a claim that lacks
a key or holds a value of another type.

A light module (no pydantic, no graph code): the status report describes stored claims with it
without loading the modes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, Self, TypeVar

from ..base.spaces import EVERY_SPACE
from ..timeline.events import event_chars
from .kinds import JobMode

JsonObject = dict[str, object]  # a JSON object as json.loads gives it: values to be checked

_T = TypeVar("_T", int, str)


class StoredClaim(Protocol):
    """A mode's claim as a batch row stores it."""

    def to_json(self) -> JsonObject:
        """The stored object, keys in their stored order."""
        ...

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        """The claim read back from its stored object (ValueError when malformed)."""
        ...

    def covers(self, conn: sqlite3.Connection) -> str:
        """What the batch covers, for people (jobs/progress.py)."""
        ...


@dataclass(frozen=True)
class CompactClaim:
    """A run of hot-timeline nodes; an explicit job's claim also says where its next claim
    starts scanning (`scan_from`, stored only then)."""

    node_ids: tuple[int, ...]
    scan_from: int | None = None

    def to_json(self) -> JsonObject:
        data: JsonObject = {"node_ids": list(self.node_ids)}
        if self.scan_from is not None:
            data["scan_from"] = self.scan_from
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        scan_from = data.get("scan_from")
        return cls(_items(data, "node_ids", int),
                   scan_from if isinstance(scan_from, int) else None)

    def covers(self, conn: sqlite3.Connection) -> str:
        nodes = self.node_ids
        if not nodes:
            return "no nodes"
        return f"node {nodes[0]}" if len(nodes) == 1 else f"nodes {nodes[0]}–{nodes[-1]}"


@dataclass(frozen=True)
class OrganizeClaim:
    """One page of one queued event: chars [page_start, page_end), page_chars the most a
    page may hold (halved by each shrink)."""

    event_id: int
    page_start: int
    page_end: int
    page_chars: int

    def to_json(self) -> JsonObject:
        return {"event_id": self.event_id, "page_start": self.page_start,
                "page_end": self.page_end, "page_chars": self.page_chars}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        return cls(_int(data, "event_id"), _int(data, "page_start"), _int(data, "page_end"),
                   _int(data, "page_chars"))

    def covers(self, conn: sqlite3.Connection) -> str:
        chars = event_chars(conn, self.event_id, EVERY_SPACE)
        of = f" of {chars:,}" if chars is not None else ""
        return f"event {self.event_id} chars {self.page_start:,}–{self.page_end:,}{of}"


@dataclass(frozen=True)
class DeepClaim:
    """Objects of the job's snapshot to review: their positions in it and their ids."""

    positions: tuple[int, ...]
    object_ids: tuple[str, ...]

    def to_json(self) -> JsonObject:
        return {"positions": list(self.positions), "object_ids": list(self.object_ids)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        return cls(_items(data, "positions", int), _items(data, "object_ids", str))

    def covers(self, conn: sqlite3.Connection) -> str:
        ids = self.object_ids
        shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
        return f"objects {shown}" if ids else "no objects"


SomeClaim = CompactClaim | OrganizeClaim | DeepClaim  # the claim of whichever mode
CLAIM_TYPES: dict[str, type[SomeClaim]] = {
    JobMode.COMPACT: CompactClaim, JobMode.ORGANIZE: OrganizeClaim, JobMode.DEEP: DeepClaim}


def read_claim(mode: str, data: Mapping[str, object]) -> SomeClaim:
    """The stored claim of a batch of a `mode` job (ValueError when malformed or unknown)."""
    if mode not in CLAIM_TYPES:
        raise ValueError(f"no claim type for mode {mode!r}")
    return CLAIM_TYPES[mode].from_json(data)


def _int(data: Mapping[str, object], key: str) -> int:
    value = data.get(key)
    # bool is an int to Python, never to a claim
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"claim {key} must be an integer, got {value!r}")
    return value


def _items(data: Mapping[str, object], key: str, kind: type[_T]) -> tuple[_T, ...]:
    value = data.get(key)
    items = tuple(v for v in value if type(v) is kind) if isinstance(value, list) else ()
    if not isinstance(value, list) or len(items) != len(value):
        raise ValueError(f"claim {key} must be a list of {kind.__name__}, got {value!r}")
    return items
