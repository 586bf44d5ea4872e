"""The timeline's schema: events (raw text, immutable), the hot timeline and the archive queue.

`M001_TABLES` is the timeline's part of the first schema (m001_initial, which
home/migrations.py runs with every feature's part); the later migrations follow, each under
the name a home records it by. Invariant: an event row is never updated or deleted (its
triggers refuse it).
"""

from __future__ import annotations

import sqlite3

from ..store.script import run_script, sql_in

# The queue states m001's CHECK was written with. A migration's text is history: it does not
# follow timeline.queue.EVENT_STATES (a new state needs a migration of its own), and
# tests/test_migrations.py checks that the two still agree.
M001_EVENT_STATES = ("pending", "continue", "linked", "archive_only", "blocked")

M001_TABLES = f"""
        CREATE TABLE events (
            id          INTEGER PRIMARY KEY,
            occurred_at TEXT    NOT NULL,           -- ISO 8601 with offset, as given
            occurred_us INTEGER NOT NULL,           -- UTC microseconds, for ordering
            ingested_at TEXT    NOT NULL,
            source      TEXT    NOT NULL,
            kind        TEXT    NOT NULL,
            meta        TEXT,                       -- caller's JSON object, verbatim
            text        TEXT    NOT NULL CHECK (length(text) BETWEEN 1 AND 32000),
            chars       INTEGER NOT NULL,
            est_tokens  INTEGER NOT NULL
        );
        CREATE INDEX events_time ON events (occurred_us, id);
        CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'events are immutable: raw text is never rewritten'); END;
        CREATE TRIGGER events_no_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'events are immutable: raw text is never deleted'); END;

        CREATE TABLE hot_nodes (
            id             INTEGER PRIMARY KEY,
            kind           TEXT    NOT NULL CHECK (kind IN ('raw', 'head')),
            level          INTEGER NOT NULL,         -- 0 raw; a head is 1 + its highest child
            seq            INTEGER NOT NULL,         -- timeline order; a head takes its first
            event_id       INTEGER REFERENCES events (id),
            fragment_index INTEGER,
            fragment_count INTEGER,
            start_char     INTEGER,                  -- raw: a slice of the event, not a copy
            end_char       INTEGER,
            summary        TEXT,
            parent_id      INTEGER REFERENCES hot_nodes (id),
            active         INTEGER NOT NULL DEFAULT 1,
            chars          INTEGER NOT NULL,
            est_tokens     INTEGER NOT NULL,
            first_at       TEXT NOT NULL,
            last_at        TEXT NOT NULL,
            created_at     TEXT NOT NULL,
            batch_id       INTEGER REFERENCES batches (id),
            CHECK ((kind = 'raw' AND event_id IS NOT NULL AND summary IS NULL)
                OR (kind = 'head' AND event_id IS NULL AND summary IS NOT NULL))
        );
        CREATE INDEX hot_nodes_active ON hot_nodes (seq) WHERE active = 1;
        -- Partial: a fragment is born without a parent, so ingest pays nothing for this index.
        CREATE INDEX hot_nodes_parent ON hot_nodes (parent_id) WHERE parent_id IS NOT NULL;
        CREATE INDEX hot_nodes_event ON hot_nodes (event_id);

        CREATE TABLE archive_queue (
            event_id      INTEGER PRIMARY KEY REFERENCES events (id),
            state         TEXT NOT NULL CHECK (state IN {sql_in(M001_EVENT_STATES)}),
            page_cursor   INTEGER NOT NULL DEFAULT 0,   -- chars of the event read so far
            progress      TEXT CHECK (progress IS NULL OR length(progress) <= 2000),
            reason        TEXT CHECK (reason IS NULL OR length(reason) <= 1000),
            enqueued_at   TEXT NOT NULL,
            updated_at    TEXT NOT NULL,
            enqueued_by   INTEGER REFERENCES batches (id),
            blocked_batch INTEGER REFERENCES batches (id),
            unblocked_by  TEXT                          -- request token that unblocked it
        );
        CREATE INDEX archive_queue_state ON archive_queue (state, enqueued_at);
"""


def m005_fragment_index(conn: sqlite3.Connection) -> None:
    """Index fragments by event only for events of several fragments.

    The one question asked by event (does this event still have a hot fragment elsewhere?) only
    arises for those, and most events are one fragment: ingest no longer pays for their entry.
    """
    run_script(
        conn,
        """
        DROP INDEX hot_nodes_event;
        CREATE INDEX hot_nodes_event_multi ON hot_nodes (event_id) WHERE fragment_count > 1;
        """,
    )


def m007_event_keys(conn: sqlite3.Connection) -> None:
    """The client's message id on an event (`key`, nullable), unique where given: the same
    message ingested twice is stored once (memvault.timeline.keys decides what a repeat means).
    Existing events keep no key."""
    run_script(
        conn,
        """
        ALTER TABLE events ADD COLUMN key TEXT CHECK (key IS NULL OR length(key) BETWEEN 1 AND 200);
        CREATE UNIQUE INDEX events_key ON events (key) WHERE key IS NOT NULL;
        """,
    )


def m019_spaces(conn: sqlite3.Connection) -> None:
    """The space each event and hot node was written in (memvault.base.spaces): every existing
    row is `shared`. Recall's tail scan and a bound listing read events by (space, id); a
    head's space is its children's (compaction never folds two spaces under one head). The
    immutability trigger now names every column but `space`: the text and its facts stay
    immutable, and `memvault space move` may re-place an event by hand."""
    run_script(
        conn,
        """
        ALTER TABLE events ADD COLUMN space TEXT NOT NULL DEFAULT 'shared'
            CHECK (length(space) BETWEEN 1 AND 32);
        DROP TRIGGER events_no_update;
        CREATE TRIGGER events_no_update BEFORE UPDATE OF id, occurred_at, occurred_us,
            ingested_at, source, kind, meta, text, chars, est_tokens, key ON events
        BEGIN SELECT RAISE(ABORT, 'events are immutable: raw text is never rewritten'); END;
        CREATE INDEX events_space ON events (space, id);
        ALTER TABLE hot_nodes ADD COLUMN space TEXT NOT NULL DEFAULT 'shared'
            CHECK (length(space) BETWEEN 1 AND 32);
        """,
    )


def m021_event_moves(conn: sqlite3.Connection) -> None:
    """Each time a person re-places an event into another space (`memvault space move`): the
    event keeps only its current space, so its history of spaces is kept here, oldest first
    (an object's moves are versions of its own)."""
    run_script(
        conn,
        """
        CREATE TABLE event_moves (
            id         INTEGER PRIMARY KEY,
            event_id   INTEGER NOT NULL REFERENCES events (id),
            from_space TEXT    NOT NULL CHECK (length(from_space) BETWEEN 1 AND 32),
            to_space   TEXT    NOT NULL CHECK (length(to_space) BETWEEN 1 AND 32),
            moved_at   TEXT    NOT NULL,
            origin     TEXT    NOT NULL DEFAULT 'person' CHECK (origin = 'person')
        );
        CREATE INDEX event_moves_event ON event_moves (event_id, id);
        """,
    )


def m022_event_keys_per_space(conn: sqlite3.Connection) -> None:
    """A client's message key is unique within a space, not across the home: an agent bound to
    one space that hands in a key another space holds stores its own event, and learns nothing
    of the other's (a shared key index answered "already stored as event N" across spaces)."""
    run_script(
        conn,
        """
        DROP INDEX events_key;
        CREATE UNIQUE INDEX events_space_key ON events (space, key) WHERE key IS NOT NULL;
        """,
    )
