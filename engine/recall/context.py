"""Events in context: the turns around a hit in the same conversation, the events of a date
the query names, and the helpers memory_find's event search reads rows with.

A conversation is a run of adjacent events (consecutive ids) at most CONVERSATION_GAP_US
apart, whatever their source: a user's question and the agent's answer are two sources of one
exchange. An answer often shares no word with the question that finds the turn before it
("How long have you been doing yoga?" -> "Been at it for three years"), so an event earns a
share of its neighbours' scores, and names them in `context`. An exchange is more than one pair
of turns: a speaker goes on about what they said two turns earlier ("I've been thinking about
my career" - "Oh? Tell me more!" - "I'm keen on counseling"), so the turns up to NEIGHBOUR_REACH
away count too, each step further for NEIGHBOUR_DECAY of the share of the step before.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import Sequence
from datetime import MAXYEAR, MINYEAR, UTC, date, datetime
from typing import Any

from ..base.spaces import EVERY_SPACE, Spaces
from ..dates.reader import DateWindow, day_us
from .dates import may_name_in_words, mention_tokens, window_token
from .index import units, year_of_iso
from .rank import Stats, score_text
from .spoken import spoken_spans
from .terms import Query

TAIL_EXACT_UNITS = 2_000  # a tail up to this long has its length counted, not estimated
NEIGHBOUR_SEEDS = 20  # best-scoring events whose turns before and after are read and scored
NEIGHBOUR_REACH = 2  # turns each way that share their score (bench/recall.py: 3 adds nothing)
NEIGHBOUR_DECAY = 0.5  # each turn further away shares this much of what the nearer one does
AFTER_WEIGHT = 0.7  # share of the turn before's score an event earns (it may answer it)
BEFORE_WEIGHT = 0.4  # share of the turn after's score an event earns (it may be asked)
DATE_BONUS = 0.4  # an event dated inside a date the query names ("5月2号", "May 3, 2023"),
# or that speaks of a day inside it ("next month", said in the month before)
DATE_FETCH = 300  # events of such a date read even when no word of theirs matches
# Adjacent events at most this apart are one conversation. A reply comes within minutes; a
# statement made half an hour after another is not its context (held-out memdaily, a user's
# statements among unrelated talk about 28 minutes apart: validation recall@10 0.837 -> 0.875 at
# 5 minutes instead of 30, below BM25's 0.849 before; the real chats of realtalk held, 0.568;
# LoCoMo and MemoryBank turns are seconds to minutes apart: unchanged; docs/recall.md).
CONVERSATION_GAP_US = 5 * 60 * 1_000_000
MENTIONS_READ_MAX = 5_000  # events per date token read from the index for date_reason, at most
YEARS_MAX = 50  # distinct years of events a date without a year is looked for in, at most

EVENT_COLS = "id, occurred_at, occurred_us, source, kind, meta, text"


def tail_units(tail: Sequence[Sequence[Any]], indexed: int, indexed_units: int) -> int:
    """units() of the unindexed rows: counted when few, else the indexed mean times their
    number (it only sets the mean length BM25 normalizes by)."""
    if indexed < TAIL_EXACT_UNITS or len(tail) <= TAIL_EXACT_UNITS:
        return sum(units(row[1]) for row in tail)
    return round(len(tail) * indexed_units / indexed)


def event_rows(conn: sqlite3.Connection, ids: Sequence[int],
               spaces: Spaces = EVERY_SPACE) -> list[Sequence[Any]]:
    """The EVENT_COLS of the events with these ids that `spaces` sees (one statement)."""
    seen, args = spaces.sql("space")
    return conn.execute(
        f"SELECT {EVENT_COLS} FROM events WHERE id IN (SELECT value FROM json_each(?))"
        f" AND {seen}", (json.dumps(list(ids)), *args),
    ).fetchall()


def events_in_windows(
    conn: sqlite3.Connection, windows: list[DateWindow], allowed: set[int] | None,
    unread: tuple[int, int], spaces: Spaces = EVERY_SPACE,
) -> set[int]:
    """Ids of the events `spaces` sees dated inside the query's windows, when there are at
    most DATE_FETCH of them (more: the window only lifts events found by their words)."""
    # "+space": the time index answers the window; the space index would scan a whole space
    seen, args = spaces.sql("+space")
    years = event_years(conn)
    if years is None:  # events over too many years: a window without a year only lifts
        years = []
    spans = [s for w in windows for s in w.spans_us(years)]
    found: set[int] = set()
    read = 0
    for low, high in spans:
        rows = conn.execute(
            "SELECT id, occurred_at FROM events WHERE occurred_us >= ? AND occurred_us < ?"
            f" AND {seen} LIMIT ?", (low, high, *args, DATE_FETCH + 1 - read),
        ).fetchall()
        read += len(rows)
        if read > DATE_FETCH:  # a busy window: too many to read on every find
            return set()
        found |= {r[0] for r in rows if any(w.holds(r[1]) for w in windows)
                  and not unread[0] < r[0] < unread[1]}
    return found if allowed is None else found & allowed


def events_mentioning(
    conn: sqlite3.Connection, windows: list[DateWindow], allowed: set[int] | None,
    tail: Sequence[Sequence[Any]], spaces: Spaces = EVERY_SPACE,
) -> set[int]:
    """Ids of the events `spaces` sees whose text mentions a date inside the query's windows
    (their date tokens: recall/dates.py), indexed or in the scanned `tail` (which holds only
    events it sees), when at most DATE_FETCH."""
    seen, args = spaces.sql("+e.space")
    tokens = sorted({t for w in windows if (t := window_token(w))})
    if not tokens:
        return set()
    match = " OR ".join(f'"{t}"' for t in tokens)
    found = {r[0] for r in conn.execute(
        "SELECT f.rowid FROM recall_events_fts f CROSS JOIN events e ON e.id = f.rowid"
        f" WHERE f.recall_events_fts MATCH ? AND {seen} LIMIT ?",
        (match, *args, DATE_FETCH + 1))}
    wanted = set(tokens)
    found |= {row[0] for row in tail if wanted & set(mention_tokens(row[1], None))}
    if len(found) > DATE_FETCH:  # a date mentioned everywhere only lifts events found by words
        return set()
    return found if allowed is None else found & allowed


def indexed_mentions(
    conn: sqlite3.Connection, windows: list[DateWindow], ids: Sequence[int],
) -> dict[int, set[str]] | None:
    """For each of the indexed events `ids`, the date tokens of the query's windows its index
    entry holds (sync_index adds mention_tokens(text, its year) to every event it indexes), so
    date_reason need not parse those texts again; events holding none are left out. None when
    a token is in more than MENTIONS_READ_MAX events: reading its postings would cost more than
    parsing the texts. (Postings are read whole: FTS5 answers `rowid IN (...)` one seek per id,
    slower at a few hundred ids than reading a short posting list.)"""
    wanted = set(ids)
    held: dict[int, set[str]] = {}
    for token in sorted({t for w in windows if (t := window_token(w))}):
        rowids = json.loads(conn.execute(
            "SELECT json_group_array(rowid) FROM (SELECT rowid FROM recall_events_fts"
            " WHERE recall_events_fts MATCH ? LIMIT ?)", (f'"{token}"', MENTIONS_READ_MAX + 1),
        ).fetchone()[0])
        if len(rowids) > MENTIONS_READ_MAX:
            return None
        for rowid in wanted.intersection(rowids):
            held.setdefault(rowid, set()).add(token)
    return held


def date_reason(
    windows: list[DateWindow], occurred_at: str, text: str, found: bool,
    held: set[str] | None = None,
) -> str | None:
    """Why an event is about a date the query names: it happened on it ("on 2023-05-08"), or
    its text mentions a date in it ("mentions 2023-05-08"), or, when its words or its turns'
    were `found`, its text speaks of a day in it relative to the day it was said ("said
    2023-08-31 of 2023-09-01..2023-09-30"); None when none. (A date alone lifts only the events
    said on it: reading every turn's phrases would cost a scan.) `held`: the windows' date
    tokens the event's index entry holds (indexed_mentions), None to read them from `text`."""
    if any(w.holds(occurred_at) for w in windows):
        return f"on {occurred_at[:10]}"
    # every mention of a window's date holds its day number (or, for a month, its year), or
    # is written in words (十二月二十五号, "in May"): a substring test spares the date patterns
    # on most texts (find reads hundreds per query)
    named = {t for w in windows if (t := window_token(w))
             and (str(w.day or w.year) in text or may_name_in_words(w, text))}
    if held is not None:
        mentioned = named & held
    else:
        mentioned = named and named & set(mention_tokens(text, year_of_iso(occurred_at)))
    if mentioned:
        return f"mentions {_token_date(min(mentioned))}"
    if not found:
        return None
    for first, last in spoken_spans(text, occurred_at):
        if any(w.overlaps(first, last) for w in windows):
            days = str(first) if first == last else f"{first}..{last}"
            return f"said {occurred_at[:10]} of {days}"
    return None


def _token_date(token: str) -> str:
    """A date token as the date it stands for ("mvdateday20261216" -> "2026-12-16")."""
    digits = token.lstrip("mvdateyonh")
    if len(digits) == 8:
        return f"{digits[:4]}-{digits[4:6]}-{digits[6:]}"
    return f"{digits[:4]}-{digits[4:]}" if len(digits) == 6 else f"--{digits[:2]}-{digits[2:]}"


def event_years(conn: sqlite3.Connection) -> list[int] | None:
    """The years a date without a year is looked for in: each UTC year that holds an event
    (one index seek each, skipping empty years), with the years either side (a local date
    may fall in the UTC year next to it); None when events span more than YEARS_MAX years."""
    found: list[int] = []
    row = conn.execute("SELECT min(occurred_us) FROM events").fetchone()
    while row[0] is not None:
        found.append(year_of(row[0]))
        if len(found) > YEARS_MAX:
            return None
        if found[-1] >= MAXYEAR:
            break
        row = conn.execute("SELECT min(occurred_us) FROM events WHERE occurred_us >= ?",
                           (day_us(date(found[-1] + 1, 1, 1)),)).fetchone()
    return sorted({y + d for y in found for d in (-1, 0, 1) if MINYEAR <= y + d <= MAXYEAR})


def year_of(micros: int) -> int:
    """The UTC year of an occurred_us value."""
    return datetime.fromtimestamp(micros / 1_000_000, UTC).year


def add_neighbours(
    conn: sqlite3.Connection, query: Query, stats: Stats,
    own: dict[int, tuple[float, list[str]]], by_id: dict[int, Sequence[Any]],
    allowed: set[int] | None, unread: tuple[int, int], spaces: Spaces = EVERY_SPACE,
) -> None:
    """Read and score the turns up to NEIGHBOUR_REACH before and after the best NEIGHBOUR_SEEDS
    hits: the answer to a question is often a turn or two after the one that echoes it. Only
    turns `spaces` sees are read: another space's turn ends the conversation there."""
    seeds = heapq.nlargest(NEIGHBOUR_SEEDS, (i for i in own if own[i][0] > 0),
                           key=lambda i: own[i][0])
    steps = [d for d in range(-NEIGHBOUR_REACH, NEIGHBOUR_REACH + 1) if d]
    wanted = {i + d for i in seeds for d in steps
              if i + d not in by_id and i + d > 0 and not unread[0] < i + d < unread[1]}
    if allowed is not None:
        wanted &= allowed
    for row in event_rows(conn, sorted(wanted), spaces):
        own[row[0]] = score_text(query, stats, row[6])
        by_id[row[0]] = row


def same_conversation(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Adjacent events close in time are turns of one conversation (whatever their source:
    a user's question and the agent's answer are two sources of one exchange)."""
    return abs(a[2] - b[2]) <= CONVERSATION_GAP_US


def in_context(
    event_id: int, own: dict[int, tuple[float, list[str]]], by_id: dict[int, Sequence[Any]],
) -> tuple[float, list[str], list[int]]:
    """An event's score: its own, plus a share of the turns around it in the same conversation
    (the turns before weigh more: they hold the question the event may answer), walking out
    while the turns stay one conversation, each step sharing NEIGHBOUR_DECAY of the last."""
    score, why = own[event_id]
    context: list[int] = []
    total = score
    for step, weight, label in ((-1, AFTER_WEIGHT, "after"), (1, BEFORE_WEIGHT, "before")):
        last = by_id[event_id]
        for distance in range(1, NEIGHBOUR_REACH + 1):
            other = event_id + step * distance
            if other not in by_id or not same_conversation(last, by_id[other]):
                break
            last = by_id[other]
            near = own[other]
            if near[0] <= 0:
                continue
            total += weight * NEIGHBOUR_DECAY ** (distance - 1) * near[0]
            context.append(other)
            if not score and len(context) == 1:
                why = [f"{label} event {other}: {', '.join(near[1][:3])}"]
    return total, why, context
