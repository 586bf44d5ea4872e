"""The archive queue: events that left the hot timeline, waiting for organize.

This module is the one writer of `archive_queue` (tests/test_architecture.py checks it); every
function runs inside the caller's write transaction and opens none of its own.

Invariants: an event is queued once (`pending`), when none of its fragments is still hot, and
never queued again, whatever later compactions do; from there organize moves it to `continue`,
`linked` or `archive_only`, or a terminal failure to `blocked`; only an explicit request with
`retry_blocked` unblocks, and records its token on the row it unblocked. Rows are never deleted.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TypedDict

from ..base.clock import iso
from ..base.forgetting import Forgetting
from ..base.spaces import Spaces
from ..store.forget_rows import forget_in_rows

# The life of a queued event (docs/spec.md section 2); blocked by a terminal failure.


class EventState(StrEnum):
    """An event's place in the archive queue (archive_queue.state): organize takes `pending`
    and `continue` events and leaves each `linked` or `archive_only` (`blocked`: it gave up)."""

    PENDING = "pending"
    CONTINUE = "continue"
    LINKED = "linked"
    ARCHIVE_ONLY = "archive_only"
    BLOCKED = "blocked"


EVENT_STATES = tuple(state.value for state in EventState)  # plain str: status keys, schema text


def enqueue_departed(
    conn: sqlite3.Connection, event_ids: set[int], batch_id: int | None, now: datetime
) -> list[int]:
    """Queue (pending) each event none of whose fragments is still hot; never re-queue one.
    One statement whatever the number of events (a batch folds up to 64 nodes). Returns the
    ids newly queued, sorted."""
    if not event_ids:
        return []
    stamp = iso(now)
    # OR IGNORE: an event already queued (in any state) keeps its row; RETURNING lists only
    # the rows this insert made, i.e. the events newly queued. Only an event of several
    # fragments can still have one elsewhere on the timeline; that condition also lets SQLite
    # use the partial index hot_nodes_event_multi (a correlated NOT EXISTS measured cheaper
    # than NOT IN over a list, and than a separate lookup).
    rows = conn.execute(
        "INSERT OR IGNORE INTO archive_queue (event_id, state, enqueued_at, updated_at,"
        " enqueued_by) SELECT value, 'pending', ?, ?, ? FROM json_each(?)"
        " WHERE NOT EXISTS (SELECT 1 FROM hot_nodes h WHERE h.event_id = value"
        " AND h.active = 1 AND h.fragment_count > 1) RETURNING event_id",
        (stamp, stamp, batch_id, json.dumps(sorted(event_ids))),
    ).fetchall()
    return sorted(r[0] for r in rows)


def record_outcome(
    conn: sqlite3.Connection, event_id: int, state: str, page_cursor: int,
    progress: str | None, reason: str | None, now: datetime,
) -> None:
    """An organize batch's disposition of its event: the outcome, how far it read, the
    progress saved for the next page and the reason of an archive_only."""
    conn.execute(
        "UPDATE archive_queue SET state = ?, page_cursor = ?, progress = ?, reason = ?,"
        " updated_at = ? WHERE event_id = ?",
        (state, page_cursor, progress, reason, iso(now), event_id),
    )


def settle_archive_only(
    conn: sqlite3.Connection, event_id: int, chars: int, reason: str, now: datetime
) -> None:
    """End a waiting event as archive_only without a model call (the engine's own verdict:
    the event is wholly memory output), as read to its end (`chars`)."""
    conn.execute(
        "UPDATE archive_queue SET state = 'archive_only', page_cursor = ?, reason = ?,"
        " updated_at = ? WHERE event_id = ? AND state IN ('pending', 'continue')",
        (chars, reason, iso(now), event_id),
    )


def block_event(conn: sqlite3.Connection, event_id: int, batch_id: int, now: datetime) -> None:
    """A terminal failure of `batch_id` blocks its waiting event (text and checkpoint stay)."""
    conn.execute(
        "UPDATE archive_queue SET state = 'blocked', blocked_batch = ?, updated_at = ?"
        " WHERE event_id = ? AND state IN ('pending', 'continue')",
        (batch_id, iso(now), event_id),
    )


def newest_blocking_batch(conn: sqlite3.Connection) -> int:
    """The id of the newest batch that blocked an event still blocked (0 when none is)."""
    return int(conn.execute(
        "SELECT COALESCE(MAX(blocked_batch), 0) FROM archive_queue WHERE state = 'blocked'"
    ).fetchone()[0])


def unblock_all(conn: sqlite3.Connection, request_token: str | None, now: datetime) -> int:
    """Every blocked event waits again (continue where a page was read, else pending), with
    the request token that unblocked it; returns how many."""
    return conn.execute(
        "UPDATE archive_queue SET state = CASE WHEN page_cursor > 0 THEN 'continue'"
        " ELSE 'pending' END, unblocked_by = ?, updated_at = ? WHERE state = 'blocked'",
        (request_token, iso(now)),
    ).rowcount


def forget_in_queue(conn: sqlite3.Connection, forgetting: Forgetting) -> None:
    """Replace the forgotten text in the archive queue's saved progress and reasons (organize
    writes them); inside the caller's write transaction."""
    forget_in_rows(conn, forgetting, "archive_queue", ("progress", "reason"), key="event_id")


@dataclass(frozen=True)
class WaitingEvent:
    """A queued event organize has still to read: how far it read and what it noted."""

    event_id: int
    page_cursor: int  # chars of the event read so far
    progress: str | None  # the model's note from the previous page
    enqueued_at: str


# The waiting events, oldest first (enqueued_at, event id). One ordered index range per state,
# merged: the first row comes without sorting the whole backlog (`state IN (...)` sorted every
# waiting row on every claim).
_WAITING = (
    "SELECT * FROM (SELECT event_id, page_cursor, progress, enqueued_at FROM archive_queue"
    " WHERE state = 'pending' UNION ALL SELECT event_id, page_cursor, progress, enqueued_at"
    " FROM archive_queue WHERE state = 'continue' ORDER BY enqueued_at, event_id)")


def waiting_events(conn: sqlite3.Connection) -> Iterator[WaitingEvent]:
    """The events waiting for organize (pending or continue), oldest first, read lazily: a
    claim that takes the first one reads no further."""
    for event_id, page_cursor, progress, enqueued_at in conn.execute(_WAITING):
        yield WaitingEvent(event_id, page_cursor, progress, enqueued_at)


def queued_progress(conn: sqlite3.Connection, event_id: int) -> str | None:
    """The progress note of a queued event (None for none, or an event not queued)."""
    row = conn.execute("SELECT progress FROM archive_queue WHERE event_id = ?",
                       (event_id,)).fetchone()
    return None if row is None else row[0]


@dataclass(frozen=True)
class QueuedEvent:
    """A queued event's state, with the size and space of its event."""

    state: str
    chars: int
    space: str


def queued_event(conn: sqlite3.Connection, event_id: int, spaces: Spaces) -> QueuedEvent | None:
    """The queue state of an event `spaces` sees, with its size and space; None when it is not
    queued or not seen."""
    seen, args = spaces.sql("e.space")
    row = conn.execute(
        "SELECT q.state, e.chars, e.space FROM archive_queue q JOIN events e"
        f" ON e.id = q.event_id WHERE q.event_id = ? AND {seen}", (event_id, *args)).fetchone()
    return None if row is None else QueuedEvent(*row)


class UnfinishedEvent(TypedDict):
    """A queued event organize has not finished (pending, continue or blocked), as status
    lists it: its first 60 chars as `preview`."""

    event_id: int
    state: str
    enqueued_at: str
    page_cursor: int
    chars: int
    occurred_at: str
    preview: str


UNFINISHED = (EventState.PENDING, EventState.CONTINUE, EventState.BLOCKED)


def oldest_unfinished(conn: sqlite3.Connection, limit: int,
                      spaces: Spaces) -> list[UnfinishedEvent]:
    """The `limit` unfinished events `spaces` sees that were queued first."""
    seen, args = spaces.sql("e.space")
    marks = ",".join("?" * len(UNFINISHED))
    return [UnfinishedEvent(event_id=r[0], state=r[1], enqueued_at=r[2], page_cursor=r[3],
                            chars=r[4], occurred_at=r[5], preview=r[6])
            for r in conn.execute(
                "SELECT q.event_id, q.state, q.enqueued_at, q.page_cursor, e.chars,"
                " e.occurred_at, substr(e.text, 1, 60) FROM archive_queue q JOIN events e"
                f" ON e.id = q.event_id WHERE q.state IN ({marks}) AND {seen}"
                " ORDER BY q.enqueued_at, q.event_id LIMIT ?",
                (*UNFINISHED, *args, limit))]


def any_waiting(conn: sqlite3.Connection) -> bool:
    """Whether any event waits for organize (pending or continue)."""
    return conn.execute("SELECT 1 FROM archive_queue WHERE state IN ('pending', 'continue')"
                        " LIMIT 1").fetchone() is not None


def blocked_event_ids(conn: sqlite3.Connection) -> list[int]:
    """The ids of the blocked events, oldest queued first."""
    return [event_id for (event_id,) in conn.execute(
        "SELECT event_id FROM archive_queue WHERE state = 'blocked'"
        " ORDER BY enqueued_at, event_id")]
