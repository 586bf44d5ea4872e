"""Migration m002: the lexical recall index (FTS5), built from the rows already there.

Invariants (see recall_index.py for the reasoning):
- recall_events_fts is contentless (content=''): event text is stored once, in events; the index
  holds analyze(text) tokens under the event's id, up to the watermark in recall_state.
- Both indexes are detail='none' (rowids only, no positions): every query term is one token
  or a token prefix, so positions would only cost space and time (half the index size).
- recall_vocab counts, per token, the indexed events that hold it: document frequencies and
  prefix expansions without reading postings (an FTS5 prefix query reads every posting of
  every expansion before any LIMIT).
- recall_objects_fts keeps its own analyzed copy of name, aliases, cues, summary and body, keyed
  by recall_object_keys.rid (an INTEGER PRIMARY KEY, so VACUUM never renumbers it).
- No trigger touches events (ingestion stays as fast as it was); object triggers only queue the
  changed id in recall_dirty, and cannot fail on any value an object can hold.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ..store.script import run_script
from .index import OBJECTS_VOCAB, reset_index, sync_index

_TOKENIZER = "unicode61 remove_diacritics 2"
REBUILD_CHUNK = 50_000  # events re-indexed between two progress reports
# Set by the CLI while it migrates a home (a rich progress bar); None: silent.
REBUILD_PROGRESS: Callable[[int, int], None] | None = None


def m002_recall_index(conn: sqlite3.Connection) -> None:
    """FTS5 tables for events and objects, the dirty-object triggers, then index existing rows."""
    run_script(
        conn,
        f"""
        CREATE VIRTUAL TABLE recall_events_fts USING fts5 (
            text, content='', detail='none', tokenize='{_TOKENIZER}'
        );
        CREATE VIRTUAL TABLE recall_objects_fts USING fts5 (
            name, aliases, cues, summary, body, detail='none', tokenize='{_TOKENIZER}'
        );
        CREATE TABLE recall_object_keys (
            rid        INTEGER PRIMARY KEY,             -- rowid in recall_objects_fts
            object_id  TEXT NOT NULL UNIQUE,
            type       TEXT NOT NULL,                   -- for a `types` filter without a join
            body_units INTEGER NOT NULL DEFAULT 0       -- body tokens, for length normalization
        );
        CREATE TABLE recall_dirty (
            object_id TEXT PRIMARY KEY                  -- changed since it was last indexed
        );
        CREATE TABLE recall_vocab (
            term TEXT PRIMARY KEY,                      -- a token of recall_events_fts
            docs INTEGER NOT NULL                       -- indexed events holding it
        ) WITHOUT ROWID;
        CREATE TABLE recall_state (
            key   TEXT PRIMARY KEY,                     -- events_indexed_to, events_docs, ...
            value INTEGER NOT NULL
        );
        CREATE TRIGGER recall_objects_insert AFTER INSERT ON objects
        BEGIN INSERT OR IGNORE INTO recall_dirty (object_id) VALUES (new.id); END;
        CREATE TRIGGER recall_objects_update AFTER UPDATE ON objects
        BEGIN
            INSERT OR IGNORE INTO recall_dirty (object_id) VALUES (old.id);
            INSERT OR IGNORE INTO recall_dirty (object_id) VALUES (new.id);
        END;
        CREATE TRIGGER recall_objects_delete AFTER DELETE ON objects
        BEGIN INSERT OR IGNORE INTO recall_dirty (object_id) VALUES (old.id); END;
        INSERT INTO recall_dirty (object_id) SELECT id FROM objects;
        """,
    )
    sync_index(conn)


def rebuild_events_index(conn: sqlite3.Connection,
                         progress: Callable[[int, int], None] | None = None) -> int:
    """Re-analyse every event and object into the recall index (after a change of analysis),
    inside the caller's write transaction; `progress(done, total)` after each chunk. Returns
    how many events it indexed."""
    reset_index(conn)
    total = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    done = 0
    while True:
        step = sync_index(conn, max_events=REBUILD_CHUNK, objects=False)["events"]
        done += step
        if progress is not None:
            progress(done, total)
        if step < REBUILD_CHUNK:
            break
    sync_index(conn, max_events=0)
    return done


def m010_recall_date_mentions(conn: sqlite3.Connection) -> None:
    """Rebuild the recall index: event texts now carry tokens for the dates they mention."""
    rebuild_events_index(conn, REBUILD_PROGRESS)


def m013_recall_objects_vocab(conn: sqlite3.Connection) -> None:
    """A read-only view of the objects index's tokens (FTS5's own fts5vocab: no rows of its
    own, nothing to fill or keep up), so a prefix term is expanded to the few words it starts
    and looked up as their OR (recall_index.py: prefix_match), not as an FTS5 prefix query."""
    conn.execute(f"CREATE VIRTUAL TABLE {OBJECTS_VOCAB} USING fts5vocab("
                 "'recall_objects_fts', 'row')")


def m014_recall_secret_marks(conn: sqlite3.Connection) -> None:
    """Each indexed object's secret mark (recall_index.py): NULL until the next syncs scan its
    fields (Memory.sync_recall_index; the worker's polls see them as work to do)."""
    run_script(
        conn,
        """
        ALTER TABLE recall_object_keys ADD COLUMN secret_mark BLOB;
        CREATE INDEX recall_object_keys_unmarked ON recall_object_keys (rid)
            WHERE secret_mark IS NULL;
        """,
    )


def m015_recall_more_date_forms(conn: sqlite3.Connection) -> None:
    """Rebuild the recall index: event texts now also carry tokens for dates written with dots
    or slashes (10.01.2024, 2024/01/10, 25/12/2023), in Chinese numerals (十二月三号), and for
    the month a turn names alone ("in May", "五月"), read in the year it was written."""
    rebuild_events_index(conn, REBUILD_PROGRESS)


# Letters whose marks unicode61 keeps (Greek, Cyrillic) and separate combining marks: a text
# holding none of them is indexed as it was before m016.
_FOLDED_SCRIPTS = "*[\u0300-\u036f\u0370-\u03ff\u0400-\u04ff\u1f00-\u1fff]*"


def m017_recall_fold_every_script(conn: sqlite3.Connection) -> None:
    """Rebuild the recall index when a text holds Greek or Cyrillic letters or separate
    combining marks: words are now indexed folded as a query folds them (recall/index.py:
    fold(); Greek tonos and other marks removed, a final sigma as sigma), where unicode61 kept
    the marks of non-Latin letters and "πολης" never matched "Πόλης". A home without such text
    skips the rebuild (one scan of the texts)."""
    if conn.execute(
        "SELECT EXISTS (SELECT 1 FROM events WHERE text GLOB :p)"
        " OR EXISTS (SELECT 1 FROM objects WHERE name || aliases || cues || summary || body"
        " GLOB :p)", {"p": _FOLDED_SCRIPTS},
    ).fetchone()[0]:
        rebuild_events_index(conn, REBUILD_PROGRESS)

