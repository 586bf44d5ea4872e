"""Adding events: the one path every caller takes (memory_append, `Memory.append_event`,
`memvault ingest`). Each batch is validated, its client keys checked (the same message twice is
stored once, memvault.timeline.keys), and stored with its hot fragments in one write
transaction, which also records when the timeline last moved (`LAST_ACTIVITY_KEY`: the nightly
review waits for quiet). Indexing for recall is the caller's next step, once per append.

A chat import (home/chat_import.py) stores through the same `append_rows`, inside a
transaction of its own that also queues the conversation for organize.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, tzinfo

from ..base.clock import iso
from ..base.spaces import SHARED
from ..store.connection import set_state, write
from .events import NewEvent, validate_event
from .keys import Appended, append_rows, check_key

LAST_ACTIVITY_KEY = "agent.last_activity"


def append_events(conn: sqlite3.Connection, batch: Sequence[NewEvent], now: datetime,
                  tz: tzinfo | None, space: str = SHARED) -> Appended:
    """Store `batch` in one write transaction (all or none), in `space`: which events were
    new, and which were skipped because their key was already stored with the same text."""
    rows = [validate_event(e, now, tz, check_encoding=False) for e in batch]
    event_keys = [check_key(e.key) for e in batch]
    try:
        with write(conn):
            appended = append_rows(conn, rows, event_keys, now, space=space)
            if appended.new:
                set_state(conn, LAST_ACTIVITY_KEY, iso(now))
    except UnicodeEncodeError:
        # SQLite could not bind a lone surrogate (the transaction rolled back, nothing is
        # stored): validate again with the scan, which names the event and the char.
        for event in batch:
            validate_event(event, now, tz)
        raise
    return appended
