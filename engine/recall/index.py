"""The recall index's upkeep: how text becomes FTS5 tokens, and catching the index up.

Recall (recall/) reads this index; its query side (recall/terms.py) analyses queries with the
same `analyze()`. It lives in the store because it is derived data the store keeps, written
by the schema migration that creates it and by every sync.

The index is derived data; SQLite's tables stay authoritative. Invariants:
- Analysis is one deterministic function, `analyze()`: NFKC, then every run of CJK characters
  (Han, kana, Hangul) becomes its overlapping bigrams plus its last character, so a 2-character
  name is one token, a longer name or phrase is a run of bigrams, and every character starts a
  token. Everything else is folded as a query is (`fold()`: lower case, every combining mark
  removed, Greek tonos included, final sigma as sigma), then cut into words by FTS5's unicode61
  tokenizer (whose own diacritics folding covers Latin letters only; no stemming). A date
  the text mentions ("2026-12-16", "Dec 16", "12月16日") adds date tokens (recall/dates.py:
  mention_tokens; a year-less one read in the event's own year).
- Events: every event with id <= `events_indexed_to` (table recall_state) is in recall_events_fts
  exactly once, under its own id, and its distinct tokens are counted in recall_vocab; higher
  ids are not indexed yet and readers scan them directly.
  Event ids only grow (events are never deleted, new ids are max+1), so the watermark is enough.
  No trigger indexes an event: `sync_index()` catches up in bulk, one statement per chunk
  (SQLite 3.40's FTS5 flushes its buffer at every statement savepoint, which makes a per-row
  trigger about 10x slower than the bare insert). `Memory.append_events` calls it for as many
  events as it stored, in a transaction of its own after the events' commit.
- Objects: triggers put the id of every inserted/updated/deleted object into recall_dirty. An
  object listed there may have a stale or missing index row; readers score it from the objects
  table and ignore its index row. Every other object's index row is analyze() of its fields.
- `sync_index()` writes only inside the caller's write transaction; readers never write.
- After `memvault forget` rewrote events (`reindex_forgotten`), the index holds their new text
  only: the old tokens are deleted, the counts fixed, and `optimize_index` merges every
  segment so no FTS5 shadow table keeps a copy of a deleted token.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from collections import Counter
from operator import add

from .dates import mention_tokens

SYNC_CHUNK = 5_000
OBJECTS_VOCAB = "recall_objects_vocab"  # fts5vocab over recall_objects_fts (migration m013)
PREFIX_AS_WORDS_MAX = 20  # a prefix starting at most this many words is looked up as their OR

CJK_CHARS = (
    "\u3005-\u3007\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    "\uf900-\ufaff\U00020000-\U0003134f"
)
CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
_WORD = re.compile(r"[^\W_]+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_MARKS = re.compile(r"[\u0300-\u036f]")
# Full-width punctuation that NFKC maps to ASCII, common in Chinese text: replaced first, the
# text is usually NFKC already and skips unicodedata.normalize (about 50 us on 300 chars).
_FULL_WIDTH = tuple((chr(ord(c) + 0xFEE0), c) for c in ",:;!?()") + (("\u3000", " "),)


def nfkc(text: str) -> str:
    """NFKC `text`; cheap when the only unnormalised characters are full-width punctuation."""
    for wide, narrow in _FULL_WIDTH:
        if wide in text:
            text = text.replace(wide, narrow)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text


def analyze(text: str, year: int | None = None) -> str:
    """The text FTS5 indexes for `text` (unicode61 then folds case and diacritics)."""
    return analyze_tokens(text, year)[0]


def analyze_tokens(text: str, year: int | None = None) -> tuple[str, set[str]]:
    """analyze_words(text) plus a token for each date the text mentions (recall/dates.py:
    mention_tokens; a date without a year is read in `year`, the year the text was written)."""
    analyzed, tokens = analyze_words(text)
    dates = mention_tokens(text, year)
    if not dates:
        return analyzed, tokens
    return f"{analyzed} {' '.join(dates)}", tokens | set(dates)


def year_of_iso(occurred_at: str) -> int | None:
    """The year of an event's ISO occurred_at (its local date, as written)."""
    return int(occurred_at[:4]) if occurred_at[:4].isdigit() else None


def analyze_words(text: str) -> tuple[str, set[str]]:
    """The analysed words of `text`, and the distinct tokens unicode61 will make of them
    (folded words, CJK bigrams and run ends): what recall_vocab counts (date tokens aside).

    The analysed text is the non-CJK text with each CJK run replaced by a space, then every
    run's bigrams and run ends: token positions are never used (recall matches single tokens
    and checks phrases in the raw text), so only which tokens occur, and how often, matters.
    """
    if text.isascii():
        return text, set(_ASCII_WORD.findall(text.lower()))
    text = nfkc(text)
    runs = CJK_RUN.findall(text)
    if not runs:
        text = fold(text)
        return text, set(_WORD.findall(text))
    grams: list[str] = []
    for run in runs:
        grams += map(add, run, run[1:])  # overlapping bigrams, at C speed
    grams += [run[-1] for run in runs]
    other = fold(CJK_RUN.sub(" ", text))
    tokens = set(grams)
    tokens.update(_WORD.findall(other))
    return f"{other} {' '.join(grams)}", tokens


def fold(text: str) -> str:
    """Lower-cased NFKC text without combining diacritics and with a final sigma as sigma: what
    the index holds of a text's words (analyze_words feeds it to unicode61) and what a query's
    words are looked up as, so "Πόλης", "πολης" and "ΠΟΛΗΣ" are one word, as "Café" and "cafe" are.

    (lower(), not casefold(): unicode61 keeps ß, so a folded query term still matches the index.
    unicode61's remove_diacritics covers Latin letters only; the marks of Greek, Cyrillic and
    other scripts are removed here, on both sides.)
    """
    if text.isascii():
        return text.lower()
    text = nfkc(text).lower()
    if "ς" in text:
        text = text.replace("ς", "σ")  # unicode61 folds it so: a term must equal its token
    if text.isascii() or (unicodedata.is_normalized("NFD", text) and not _MARKS.search(text)):
        return text  # no marks to strip
    return unicodedata.normalize("NFC", _MARKS.sub("", unicodedata.normalize("NFD", text)))


def units(text: str) -> int:
    """Estimated tokens of a text, at C speed: words (spaces + 1) plus CJK characters (each
    3 bytes in UTF-8). Document lengths for BM25 are all measured this way."""
    return text.count(" ") + 1 + (len(text.encode("utf-8")) - len(text)) // 2



def fts_phrase(token: str) -> str:
    """`token` as an FTS5 string (a phrase): any text, FTS5 syntax in it quoted, never run."""
    return '"' + token.replace('"', '""') + '"'


def prefix_match(conn: sqlite3.Connection, table: str, prefix: str) -> str | None:
    """An FTS5 expression matching exactly the rows `"prefix"*` matches in `table`, cheaper:
    the OR of the (at most PREFIX_AS_WORDS_MAX) tokens of the objects index starting with
    `prefix`, read from its fts5vocab view. FTS5 merges every posting of every expansion before
    it yields one row of a prefix query (a few ms at 10,000 objects for a name in half of
    them); an OR of words walks their postings newest first and stops at the LIMIT.
    "" when no token starts with it; None when the prefix query is what to run (more words,
    another table, a view missing from a home opened read-only before migration m013, or a
    prefix the tokenizer might split or fold otherwise than fold() did: only an alphanumeric
    one in ASCII or CJK is sure to be the token itself; unicode61 folds a Greek final ς to σ,
    which lower() keeps)."""
    if (table != "recall_objects_fts" or not prefix.isalnum()
            or not (prefix.isascii() or CJK_RUN.fullmatch(prefix))):
        return None
    try:
        words = conn.execute(
            f"SELECT term FROM {OBJECTS_VOCAB} WHERE term >= ? AND term < ? LIMIT ?",
            (prefix, prefix + "\U0010ffff", PREFIX_AS_WORDS_MAX + 1)).fetchall()
    except sqlite3.OperationalError:  # no such table: a home not migrated yet
        return None
    if len(words) > PREFIX_AS_WORDS_MAX:
        return None
    return " OR ".join(fts_phrase(w[0]) for w in words)


def get_stat(conn: sqlite3.Connection, key: str) -> int:
    """An integer from recall_state (0 when absent)."""
    row = conn.execute("SELECT value FROM recall_state WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def index_lag(conn: sqlite3.Connection) -> tuple[bool, int]:
    """What the index has to catch up, in one read: whether an event is past the watermark,
    and how many changed objects wait to be re-indexed or scanned for secrets (the worker
    syncs only when either)."""
    row = conn.execute(
        "SELECT COALESCE((SELECT MAX(id) FROM events), 0)"
        " > COALESCE((SELECT CAST(value AS INTEGER) FROM recall_state"
        "             WHERE key = 'events_indexed_to'), 0),"
        " (SELECT COUNT(*) FROM recall_dirty)"
        " + (SELECT COUNT(*) FROM recall_object_keys WHERE secret_mark IS NULL)").fetchone()
    return bool(row[0]), int(row[1])


def _set_stats(conn: sqlite3.Connection, **values: int) -> None:
    conn.executemany(
        "INSERT INTO recall_state (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        list(values.items()),
    )


def sync_index(
    conn: sqlite3.Connection, max_events: int | None = None, objects: bool = True
) -> dict[str, int]:
    """Index events past the watermark and (unless `objects` is false) re-index dirty objects;
    inside the caller's write transaction (use `store.write(conn)`). Returns how many of each
    it indexed.

    `max_events` bounds the work of one call; call again to go on.
    """
    done_events = 0
    watermark = get_stat(conn, "events_indexed_to")
    docs, total_units = get_stat(conn, "events_docs"), get_stat(conn, "events_units")
    while max_events is None or done_events < max_events:
        step = SYNC_CHUNK if max_events is None else min(SYNC_CHUNK, max_events - done_events)
        rows = conn.execute(
            "SELECT id, text, occurred_at FROM events WHERE id > ? ORDER BY id LIMIT ?",
            (watermark, step)).fetchall()
        if not rows:
            break
        payload = {}
        vocab: Counter[str] = Counter()
        for event_id, text, occurred_at in rows:
            payload[str(event_id)], tokens = analyze_tokens(text, year_of_iso(occurred_at))
            total_units += units(text)
            vocab.update(tokens)
        conn.execute(
            "INSERT INTO recall_events_fts (rowid, text)"
            " SELECT CAST(key AS INTEGER), value FROM json_each(?)",
            (json.dumps(payload, ensure_ascii=False),),
        )
        # in key order: the upserts walk recall_vocab's B-tree once, front to back, instead of
        # jumping between its pages (at 1M events, random order made this step 2x slower)
        conn.execute(
            "INSERT INTO recall_vocab (term, docs) SELECT key, value FROM json_each(?) WHERE true"
            " ON CONFLICT (term) DO UPDATE SET docs = docs + excluded.docs",
            (json.dumps(dict(sorted(vocab.items())), ensure_ascii=False),),
        )
        watermark = rows[-1][0]
        docs += len(rows)
        done_events += len(rows)
    _set_stats(conn, events_indexed_to=watermark, events_docs=docs, events_units=total_units)
    return {"events": done_events, "objects": _sync_objects(conn) if objects else 0}


def object_field_texts(row: sqlite3.Row | tuple) -> tuple[str, str, str, str, str]:
    """name, aliases, cues, summary, body of an objects row (id, name, aliases, cues, summary,
    body) as plain text; aliases and cues are JSON lists, joined one per line."""
    return (row[1], _json_list_text(row[2]), _json_list_text(row[3]), row[4], row[5])


def _json_list_text(raw: str) -> str:
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return raw or ""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(value)


def _sync_objects(conn: sqlite3.Connection) -> int:
    dirty = [r[0] for r in conn.execute("SELECT object_id FROM recall_dirty").fetchall()]
    docs, body_units = get_stat(conn, "objects_docs"), get_stat(conn, "objects_body_units")
    for object_id in dirty:
        key = conn.execute(
            "SELECT rid, body_units FROM recall_object_keys WHERE object_id = ?", (object_id,)
        ).fetchone()
        if key is not None:
            conn.execute("DELETE FROM recall_objects_fts WHERE rowid = ?", (key[0],))
            conn.execute("DELETE FROM recall_object_keys WHERE rid = ?", (key[0],))
            docs, body_units = docs - 1, body_units - key[1]
        row = conn.execute(
            "SELECT id, name, aliases, cues, summary, body, type FROM objects WHERE id = ?",
            (object_id,),
        ).fetchone()
        if row is None:
            continue
        texts = object_field_texts(row)
        body = units(texts[-1])
        rid = conn.execute(
            "INSERT INTO recall_object_keys (rid, object_id, type, body_units) VALUES (?, ?, ?, ?)",
            (key[0] if key else None, object_id, row[6], body),
        ).lastrowid
        conn.execute(
            "INSERT INTO recall_objects_fts (rowid, name, aliases, cues, summary, body)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (rid, *(analyze(t) for t in texts)),
        )
        docs, body_units = docs + 1, body_units + body
    conn.execute("DELETE FROM recall_dirty")
    _set_stats(conn, objects_docs=docs, objects_body_units=body_units)
    return len(dirty)


# -- secret marks ---------------------------------------------------------------------------
# What recall's masking (recall/masking.py) remembers of an indexed object: `secret_mark` is
# NULL until its fields are scanned, then the digest it computes of the detector and the exact
# field texts when none holds a secret, or b"" when one does. A reader trusts a mark only when
# it equals the digest of the texts in hand, so no write can make one stale; re-indexing an
# object (every change of it) drops its mark with its key row.

def unmarked_objects(conn: sqlite3.Connection, limit: int | None) -> list[tuple[int, tuple[
        str, str, str, str, str]]]:
    """(rid, field texts) of up to `limit` indexed objects (all: None) whose fields are not
    scanned yet; an object changed since it was indexed waits for its re-index."""
    rows = conn.execute(
        "SELECT k.rid, o.id, o.name, o.aliases, o.cues, o.summary, o.body"
        " FROM recall_object_keys k JOIN objects o ON o.id = k.object_id"
        " WHERE k.secret_mark IS NULL"
        " AND k.object_id NOT IN (SELECT object_id FROM recall_dirty) LIMIT ?",
        (-1 if limit is None else limit,)).fetchall()
    return [(row[0], object_field_texts(row[1:])) for row in rows]


def set_secret_marks(conn: sqlite3.Connection, marks: list[tuple[int, bytes]]) -> None:
    """Record each (rid, mark) (see above); inside the caller's write transaction."""
    conn.executemany("UPDATE recall_object_keys SET secret_mark = ? WHERE rid = ?",
                     [(mark, rid) for rid, mark in marks])


def clear_secret_marks(conn: sqlite3.Connection) -> None:
    """Forget every mark (the detector changed: each is to be scanned again); inside the
    caller's write transaction."""
    conn.execute("UPDATE recall_object_keys SET secret_mark = NULL"
                 " WHERE secret_mark IS NOT NULL")


def set_stat(conn: sqlite3.Connection, key: str, value: int) -> None:
    """Set an integer of recall_state; inside the caller's write transaction."""
    _set_stats(conn, **{key: value})


def secret_marks(conn: sqlite3.Connection, object_ids: list[str]) -> dict[str, bytes]:
    """The marks of these objects that are set."""
    return {row[0]: row[1] for row in conn.execute(
        "SELECT object_id, secret_mark FROM recall_object_keys"
        " WHERE object_id IN (SELECT value FROM json_each(?)) AND secret_mark IS NOT NULL",
        (json.dumps(object_ids),))}


def reindex_forgotten(conn: sqlite3.Connection, old_texts: dict[int, str]) -> int:
    """Re-index events whose text `memvault forget` rewrote ({id: old text}), inside the
    caller's write transaction: delete each old entry (a contentless index deletes by the
    exact tokens it was given), insert the new one, and move the counts in recall_vocab and
    recall_state with them. Events past the watermark are not indexed yet: nothing to fix."""
    watermark = get_stat(conn, "events_indexed_to")
    total_units = get_stat(conn, "events_units")
    done = 0
    for event_id, old in sorted(old_texts.items()):
        if event_id > watermark:
            continue
        new, occurred_at = conn.execute(
            "SELECT text, occurred_at FROM events WHERE id = ?", (event_id,)).fetchone()
        year = year_of_iso(occurred_at)
        old_analyzed, old_tokens = analyze_tokens(old, year)
        new_analyzed, new_tokens = analyze_tokens(new, year)
        conn.execute("INSERT INTO recall_events_fts (recall_events_fts, rowid, text)"
                     " VALUES ('delete', ?, ?)", (event_id, old_analyzed))
        conn.execute("INSERT INTO recall_events_fts (rowid, text) VALUES (?, ?)",
                     (event_id, new_analyzed))
        conn.executemany("UPDATE recall_vocab SET docs = docs - 1 WHERE term = ?",
                         [(t,) for t in sorted(old_tokens - new_tokens)])
        conn.executemany(
            "INSERT INTO recall_vocab (term, docs) VALUES (?, 1)"
            " ON CONFLICT (term) DO UPDATE SET docs = docs + 1",
            [(t,) for t in sorted(new_tokens - old_tokens)])
        total_units += units(new) - units(old)
        done += 1
    conn.execute("DELETE FROM recall_vocab WHERE docs <= 0")
    _set_stats(conn, events_units=total_units)
    return done


def reset_index(conn: sqlite3.Connection) -> None:
    """Empty the events index (its postings, document counts and watermark) and mark every
    object for re-indexing, inside the caller's write transaction: the next syncs rebuild it."""
    conn.execute("INSERT INTO recall_events_fts (recall_events_fts) VALUES ('delete-all')")
    conn.execute("DELETE FROM recall_vocab")
    conn.execute("DELETE FROM recall_state WHERE key IN"
                 " ('events_indexed_to', 'events_docs', 'events_units')")
    conn.execute("INSERT OR IGNORE INTO recall_dirty (object_id) SELECT id FROM objects")


def optimize_index(conn: sqlite3.Connection) -> None:
    """Merge every FTS5 segment into one (deleted entries are dropped, not just marked), after
    re-indexing what a forget changed; inside the caller's write transaction."""
    sync_index(conn, max_events=0)  # re-index the objects the forget marked dirty
    for table in ("recall_events_fts", "recall_objects_fts"):
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
