"""Recall: memory_find, memory_read, memory_evidence. Synchronous, lexical, read-only.

Invariants:
- Nothing here writes; each call reads one snapshot (one read transaction).
- User text is only ever text: parse_query quotes every term for FTS5; a query over 1,000 chars
  or an empty one is an InputError; one with no searchable terms is an empty answer.
- A hit never depends on whether `sync_index` ran: events past the index watermark (up to the
  newest TAIL_SCAN_MAX, with a notice beyond) and objects in recall_dirty are read and scored
  from their own tables.
- Merged objects are reported as their survivor (redirect_to followed), naming the merged ids.
- Ranking (engine/recall/rank.py): FTS5 postings give candidates, the rows give exact scores;
  a score is the share of the query's best possible score, so objects and events interleave.
  An event also earns a share of the scores of the turns near it (up to two each way) in its
  conversation and a bonus when it falls on a date the query names or speaks of a day in it
  ("next month": engine/recall/spoken.py) (engine/recall/context.py);
  English words match their inflections (engine/recall/stem.py).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any

from ..base.errors import InputError, NotFound
from ..base.spaces import EVERY_SPACE, Spaces
from ..objects.ids import OBJECT_TYPES, check_object_id, resolve_object_ref
from ..objects.records import (
    merged_ids,
    read_object,
    resolve_redirect,
)
from ..objects.states import marked_summary, shown_state
from ..timeline.events import parse_event_id, read_event_page
from .answers import (
    Candidate,
    Citation,
    EventCandidate,
    EventEvidence,
    EventHit,
    EventRead,
    EvidenceAnswer,
    EvidenceItem,
    FindAnswer,
    ObjectCandidate,
    ObjectEvidence,
    ObjectHit,
    ObjectRead,
    ObjectSource,
    ReadAnswer,
)
from .context import (
    DATE_BONUS,
    add_neighbours,
    date_reason,
    event_rows,
    events_in_windows,
    events_mentioning,
    in_context,
    indexed_mentions,
    tail_units,
)
from .index import OBJECTS_VOCAB, fold, get_stat, object_field_texts
from .masking import (
    add_snippets,
    mask_event_page,
    mask_evidence_items,
    mask_tree,
    secret_words,
)
from .rank import (
    DATE_TERM,
    Stats,
    candidates,
    char_docs,
    plan_share,
    score_object,
    score_text,
    tail_candidates,
)
from .recency import later_first
from .terms import (
    MAX_TERMS,
    Query,
    keep_informative,
    parse_query,
    question_parts,
    rarest_chars,
    without_run_chars,
)

CANDIDATES = 40  # events re-scored exactly (at least; 2 x limit when larger)
OBJECT_CANDIDATES = 10  # objects re-scored exactly (at least; limit / 2 when larger)
EXACT_NAME_BONUS = 0.5  # the whole query is the object's name or one of its aliases
PROJECT_MEMBER_SHARE = 0.5  # a member of a matching project scores half the project's score
PROJECT_MEMBERS_MAX = 50
MAX_LIMIT = 200
EVIDENCE_PAGE_CHARS = 8_000
TAIL_SCAN_MAX = 20_000  # unindexed events scanned per find; more are cut, with a notice
CONTEXT_MIN_TERMS = 3  # a query of fewer terms finds only events that match it themselves
SPLIT_QUESTIONS = True  # a query asking several questions: each gets its share of the hits


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction, unless the caller already holds one."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


# -- memory_find ------------------------------------------------------------------------------

def _check_types(types: Sequence[str] | None) -> tuple[set[str], bool]:
    if types is None:
        return set(OBJECT_TYPES), True
    if isinstance(types, str):
        types = [types]
    allowed = (*OBJECT_TYPES, "event")
    bad = [t for t in types if t not in allowed]
    if bad or not types:
        raise InputError(f"types must be among {', '.join(allowed)}; got {list(types)!r}")
    return set(types) - {"event"}, "event" in types


@dataclass
class _Scope:
    """What a project filter lets through: the project and its direct members (as survivors),
    every id that resolves to one of them, and the events they cite as evidence."""

    members: set[str]
    object_ids: set[str]
    events: set[int]


def _project_scope(conn: sqlite3.Connection, project: str, spaces: Spaces) -> _Scope:
    kind, _ = check_object_id(project)
    if kind != "project":
        raise InputError(f"project must be a project id like project:daily, got {project!r}")
    target = resolve_redirect(conn, project)
    if not _visible_object(conn, target, spaces):
        raise NotFound(f"no object {project}")
    members = {target}
    for (src,) in conn.execute(
        "SELECT src_id FROM relations WHERE label = 'member_of' AND archived = 0"
        " AND dst_id IN (SELECT value FROM json_each(?))",
        (json.dumps([target, *_merged_into(conn, target)]),),
    ):
        members.add(resolve_redirect(conn, src))
    object_ids = members | {i for i in merged_ids(conn) if resolve_redirect(conn, i) in members}
    events = {r[0] for r in conn.execute(
        "SELECT event_id FROM evidence WHERE object_id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(object_ids)),),
    )}
    return _Scope(members, object_ids, events)


def _visible_object(conn: sqlite3.Connection, object_id: str, spaces: Spaces) -> bool:
    """Whether the object exists and `spaces` sees it (one that it does not see is answered
    as one that does not exist)."""
    seen, args = spaces.sql("space")
    return conn.execute(f"SELECT 1 FROM objects WHERE id = ? AND {seen}",
                        (object_id, *args)).fetchone() is not None


def _merged_into(conn: sqlite3.Connection, survivor: str) -> list[str]:
    """Ids whose redirect chain ends at `survivor` (not including it)."""
    return sorted(
        i for i in merged_ids(conn) if i != survivor and resolve_redirect(conn, i) == survivor
    )


def memory_find(
    conn: sqlite3.Connection, query: str, types: Sequence[str] | None = None,
    project: str | None = None, limit: int = 20, include_events: bool = True,
    reveal: bool = False, today: date | None = None, spaces: Spaces = EVERY_SPACE,
) -> FindAnswer:
    """Ranked hits over objects (name, aliases, cues, summary, body, direct project membership)
    and raw events, for Chinese and English text; each hit with a snippet and why it matched.

    `types` narrows to object types and/or "event" (raw events); `include_events=False` leaves
    events out whatever `types` says; `project` narrows to that project, its direct members and
    the events they cite as evidence. Read-only. Raises InputError for an empty query, one over
    1,000 chars, a bad `types`, `project` or `limit`; never for query content.
    Secret-looking values are masked (engine/recall/masking.py) unless `reveal`.
    A schedule or todo hit says its state as of `today` (a one-off whose day has gone: `past`;
    None: no day, none is past); one no longer ahead ranks below a current one (rank.plan_share).
    Only events and objects `spaces` sees are candidates (filtered in each query,
    memvault.base.spaces).
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    parsed = parse_query(query)
    parts = question_parts(query) if SPLIT_QUESTIONS and parsed.terms else [query]
    if len(parts) > 1:
        answers = [memory_find(conn, part, types, project, limit, include_events, reveal, today,
                               spaces) for part in parts]
        return _merge_parts(query, answers, limit)
    object_types, with_events = _check_types(types)
    with_events = with_events and include_events
    answer = FindAnswer(query=query, terms=[t.text for t in parsed.terms], hits=[],
                        notice=parsed.notice)
    if not parsed.terms and not parsed.windows:  # a date alone is searched by its day
        answer["notice"] = "no searchable words in the query (only punctuation or symbols)"
        return answer
    want = max(CANDIDATES, 2 * limit)
    with _snapshot(conn):
        scope = _project_scope(conn, project, spaces) if project is not None else None
        # Events answer a date by their day and the dates indexed in their text; objects have
        # no date index, so for them the date's words stay words ("2027-01-21" finds the
        # schedule that says it).
        as_words = parse_query(query, date_words=True) if parsed.windows else parsed
        as_words = without_run_chars(as_words)  # a run's characters search events only
        counted = {t.text for t in (*parsed.terms, *as_words.terms) if not t.in_run}
        if len(counted) > MAX_TERMS:
            df = _term_docs(conn, counted)
            parsed, as_words = keep_informative(parsed, df), keep_informative(as_words, df)
            answer["terms"], answer["notice"] = [t.text for t in parsed.terms], parsed.notice
        char_df = None
        if with_events and any(t.in_run for t in parsed.terms):
            char_df = char_docs(conn, [t.text for t in parsed.terms if t.in_run])
            parsed = rarest_chars(parsed, char_df)
            answer["terms"] = [t.text for t in parsed.terms]
        hits: list[Candidate] = []
        if object_types:
            hits += _find_objects(conn, as_words, object_types, scope,
                                  max(OBJECT_CANDIDATES, limit // 2), today, spaces)
        if with_events:
            hits += _find_events(conn, parsed, scope.events if scope else None, answer, want,
                                 spaces, char_df)
        said_last = _said_last(conn, hits)
    hits.sort(key=lambda h: (-h["score"], h["kind"] != "object",  # ties: objects, then newest
                             -h["id"] if h["kind"] == "event" else 0, str(h["id"])))
    later_first(hits, parsed, said_last)
    chosen = hits[:limit]
    words = add_snippets(conn, chosen, parsed, reveal)  # takes the private keys out
    for hit in chosen:
        if hit["kind"] == "object" and (state := hit.get("state")):
            hit["snippet"] = marked_summary(state, hit["snippet"])
    answer["hits"] = [hit for hit in chosen]  # candidates, their private keys out: hits
    if reveal:
        return answer
    words |= secret_words([query])
    return mask_tree(answer, words, done=frozenset({"snippet"}))


def _said_last(conn: sqlite3.Connection, hits: Sequence[Candidate]) -> dict[str, str]:
    """Each object hit's newest evidence time, its own or that of an object merged into it:
    when the object was last said of (recency.later_first)."""
    owner = {oid: h["id"] for h in hits if h["kind"] == "object"
             for oid in [h["id"], *h.get("merged", [])]}
    if not owner:
        return {}
    said: dict[str, str] = {}
    for object_id, at in conn.execute(
            "SELECT v.object_id, max(e.occurred_at) FROM evidence v JOIN events e"
            " ON e.id = v.event_id WHERE v.object_id IN (SELECT value FROM json_each(?))"
            " GROUP BY v.object_id", (json.dumps(sorted(owner)),)):
        said[owner[object_id]] = max(said.get(owner[object_id], ""), str(at))
    return said


def _merge_parts(query: str, answers: list[FindAnswer], limit: int) -> FindAnswer:
    """One answer of the answers to each part of a query that asks several questions: each
    part's best limit / parts hits first (a hit two parts find counts once, at its best score),
    the rest by score; then every hit by score.

    Trigger: "我哥的手机号是多少？另外，那个读书会在哪里办？". Why: as one query, the part with more
    terms filled the top k and the other part's answer fell out (issue 36)."""
    share = max(1, limit // len(answers))
    best: dict[tuple[str, object], ObjectHit | EventHit] = {}
    for answer in answers:
        for hit in answer["hits"]:
            key = (hit["kind"], hit["id"])
            if key not in best or hit["score"] > best[key]["score"]:
                best[key] = hit
    chosen: dict[tuple[str, object], None] = {}
    for answer in answers:
        for hit in answer["hits"][:share]:
            chosen.setdefault((hit["kind"], hit["id"]))
    for ranked, _ in sorted(best.items(), key=lambda kv: -kv[1]["score"]):
        if len(chosen) >= limit:
            break
        chosen.setdefault(ranked)
    hits = sorted((best[key] for key in list(chosen)[:limit]), key=lambda h: -h["score"])
    notices = [notice for a in answers if (notice := a["notice"])]
    merged = FindAnswer(
        query=query, terms=list(dict.fromkeys(t for a in answers for t in a["terms"])),
        hits=hits, notice="; ".join(dict.fromkeys(notices)) or None,
        parts=[a["query"] for a in answers])
    unindexed = [a["unindexed_events"] for a in answers if "unindexed_events" in a]
    if unindexed:
        merged["unindexed_events"] = max(unindexed)
    return merged


def _term_docs(conn: sqlite3.Connection, terms: set[str]) -> dict[str, float]:
    """How many indexed events hold each term (recall_vocab), or, in a memory without indexed
    events, how many objects do (their fts5vocab view): the weight that picks a long query's
    terms (terms.keep_informative)."""
    rows = conn.execute("SELECT term, docs FROM recall_vocab WHERE term IN"
                        " (SELECT value FROM json_each(?))",
                        (json.dumps(sorted(terms), ensure_ascii=False),)).fetchall()
    if rows or get_stat(conn, "events_docs"):
        return {term: float(docs) for term, docs in rows}
    df: dict[str, float] = {}
    try:
        for term in terms:  # one seek each: the view answers `term = ?`, not IN, from its index
            row = conn.execute(f"SELECT doc FROM {OBJECTS_VOCAB} WHERE term = ?",
                               (term,)).fetchone()
            if row:
                df[term] = float(row[0])
    except sqlite3.OperationalError:  # no view: a home opened read-only before migration m013
        pass
    return df


def _find_events(
    conn: sqlite3.Connection, query: Query, allowed: set[int] | None, answer: FindAnswer,
    want: int, spaces: Spaces, char_df: dict[str, float] | None = None,
) -> list[EventCandidate]:
    watermark = get_stat(conn, "events_indexed_to")
    seen, args = spaces.sql("space")
    tail = conn.execute(f"SELECT id, text FROM events WHERE id > ? AND {seen}"
                        " ORDER BY id DESC LIMIT ?",
                        (watermark, *args, TAIL_SCAN_MAX + 1)).fetchall()
    if tail:  # scanned, and counted into the statistics
        answer["unindexed_events"] = len(tail)
    if len(tail) > TAIL_SCAN_MAX:
        tail = tail[:TAIL_SCAN_MAX]
        answer["unindexed_events"] = conn.execute(
            f"SELECT count(*) FROM events WHERE id > ? AND {seen}",
            (watermark, *args)).fetchone()[0]
        answer["notice"] = (f"{answer['unindexed_events']:,} events are not indexed yet; "
                            f"searched the newest {TAIL_SCAN_MAX:,} of them")
    # past the watermark, only the scanned tail is searched (neighbours included)
    unread = (watermark, tail[-1][0]) if len(tail) == TAIL_SCAN_MAX else (0, 0)
    if allowed is not None:
        tail = [row for row in tail if row[0] in allowed]
    docs = get_stat(conn, "events_docs") + len(tail)
    total_units = get_stat(conn, "events_units")
    total = total_units + tail_units(tail, docs - len(tail), total_units)
    stats = Stats(docs, total / max(docs, 1))
    ids = candidates(conn, "recall_events_fts", query, stats, watermark, allowed, set(), want,
                     vocab=True, spaces=spaces, char_df=char_df)
    ids += tail_candidates(query, stats, tail, want)
    windows = list(query.windows)
    dated = (events_in_windows(conn, windows, allowed, unread, spaces)
             | events_mentioning(conn, windows, allowed, tail, spaces)) if windows else set()
    if windows:  # the date is a term whose documents are the events it finds
        stats.set_df(DATE_TERM, len(dated))
    rows = event_rows(conn, sorted(set(ids) | dated), spaces)
    own: dict[int, tuple[float, list[str]]] = {}
    by_id: dict[int, Sequence[Any]] = {}
    for row in rows:
        own[row[0]] = score_text(query, stats, row[6])
        by_id[row[0]] = row
    # a name or a keyword asks where it is mentioned; a question may be answered next door
    asks = sum(not t.in_run for t in query.terms) >= CONTEXT_MIN_TERMS
    add_neighbours(conn, query, stats, own, by_id, allowed, unread, spaces)
    # the date tokens of indexed events come from the index (the tail's are read from text)
    held = indexed_mentions(conn, windows, [i for i in by_id if i <= watermark]) if windows else {}
    indexed, held = (watermark, held) if held is not None else (0, {})  # None: read texts
    hits: list[EventCandidate] = []
    for event_id, row in by_id.items():
        if not asks and own[event_id][0] <= 0 and event_id not in dated:
            continue
        score, why, context = in_context(event_id, own, by_id)
        dated_why = date_reason(windows, row[1], row[6], score > 0, held.get(event_id, set())
                                if event_id <= indexed else None) if windows else None
        if dated_why is not None:
            score += DATE_BONUS
            why = [*why, dated_why]
        if score > 0:
            hit = EventCandidate(
                kind="event", id=event_id, score=round(score, 4), snippet="", why=why,
                occurred_at=row[1], source=row[3], event_kind=row[4],
                meta=json.loads(row[5]) if row[5] else None, _source=(row[6], stats.idf),
                _summary="")
            if context:
                hit["context"] = context
            hits.append(hit)
    return hits


def _find_objects(
    conn: sqlite3.Connection, query: Query, types: set[str], scope: _Scope | None, want: int,
    today: date | None,
    spaces: Spaces,
) -> list[ObjectCandidate]:
    dirty = [r[0] for r in conn.execute("SELECT object_id FROM recall_dirty")]
    exclude = {r[0] for r in conn.execute(
        "SELECT rid FROM recall_object_keys WHERE object_id IN (SELECT object_id FROM recall_dirty)"
    )}
    allowed: set[int] | None = None
    if types != set(OBJECT_TYPES):
        allowed = set(json.loads(conn.execute(
            "SELECT json_group_array(rid) FROM recall_object_keys"
            " WHERE type IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(types)),),
        ).fetchone()[0]))
    if scope is not None:
        inside = {r[0] for r in conn.execute(
            "SELECT rid FROM recall_object_keys"
            " WHERE object_id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(scope.object_ids)),),
        )}
        allowed = inside if allowed is None else allowed & inside
    n, top = get_stat(conn, "objects_docs"), conn.execute(
        "SELECT coalesce(max(rid), 0) FROM recall_object_keys").fetchone()[0]
    stats = Stats(n, get_stat(conn, "objects_body_units") / max(n, 1))
    rids = candidates(conn, "recall_objects_fts", query, stats, top, allowed, exclude, want,
                      spaces=spaces)
    seen, args = spaces.sql("space")
    rows = conn.execute(
        f"SELECT {_OBJECT_COLS} FROM objects WHERE id IN (SELECT object_id FROM"
        " recall_object_keys WHERE rid IN (SELECT value FROM json_each(?))"
        f" UNION SELECT value FROM json_each(?)) AND {seen}",
        (json.dumps(rids), json.dumps(dirty), *args),
    ).fetchall()
    exact = fold(query.text).strip()
    found: dict[str, ObjectCandidate] = {}
    for row in rows:
        fields = object_field_texts(row)
        score, why = score_object(query, stats, fields)
        if not score:
            continue
        names = {fold(x) for x in (fields[0], *fields[1].split("\n"))}
        score += EXACT_NAME_BONUS if exact in names else 0.0
        _add_object_hit(conn, found, row, score, why, (fields, why, stats.idf), today, spaces)
    for hit in [h for h in found.values() if h["type"] == "project"]:
        _add_members(conn, found, hit, today, spaces)
    return [h for h in found.values() if h["type"] in types
            and (scope is None or h["id"] in scope.members)]


_OBJECT_COLS = ("id, name, aliases, cues, summary, body, type, status, redirect_to, state,"
                " space")


def _add_object_hit(
    conn: sqlite3.Connection, found: dict[str, ObjectCandidate], row: Sequence[Any],
    score: float, why: list[str], source: ObjectSource | None, today: date | None,
    spaces: Spaces,
) -> None:
    """Record a hit under the surviving id; keep the best score, gather every reason. A
    schedule or todo says its state, and keeps plan_share of the score for it. A survivor
    `spaces` does not see is no hit (merges keep to one space; a guard all the same)."""
    object_id = row[0]
    if row[8] is not None:  # merged: report the survivor
        target = resolve_redirect(conn, object_id)
        row = conn.execute(f"SELECT {_OBJECT_COLS} FROM objects WHERE id = ?",
                           (target,)).fetchone() or row
    if not spaces.sees(row[10]):
        return
    hit = found.get(row[0])
    if hit is None:
        hit = found[row[0]] = ObjectCandidate(
            kind="object", id=row[0], type=row[6], name=row[1], status=row[7], score=0.0,
            snippet="", why=[], _source=None, _summary=row[4])
        state = shown_state(row[6], row[9], row[5], row[4], today)
        if state is not None:
            hit["state"] = state
    if row[0] != object_id:
        hit.setdefault("merged", []).append(object_id)
        why = [f"via merged {object_id}: {w}" for w in why]
    score *= plan_share(hit.get("state"))
    if score > hit["score"]:
        hit["score"] = round(score, 4)
        if source is not None and row[0] == object_id:
            hit["_source"] = source
    hit["why"] = [*hit["why"], *why][:8]


def _add_members(
    conn: sqlite3.Connection, found: dict[str, ObjectCandidate], project: ObjectCandidate,
    today: date | None,
    spaces: Spaces,
) -> None:
    """Direct members of a matching project that `spaces` sees become hits at half its score."""
    ids = [project["id"], *project.get("merged", [])]
    cols = ", ".join(f"o.{c.strip()}" for c in _OBJECT_COLS.split(","))
    # "+": the planner joins by id; an index on space would have it scan a whole space
    seen, args = spaces.sql("+o.space")
    rows = conn.execute(
        f"SELECT {cols} FROM relations r JOIN objects o ON o.id = r.src_id"
        " WHERE r.label = 'member_of' AND r.archived = 0 AND r.dst_id IN"
        f" (SELECT value FROM json_each(?)) AND {seen} ORDER BY o.name, o.id LIMIT ?",
        (json.dumps(ids), *args, PROJECT_MEMBERS_MAX),
    ).fetchall()
    share = round(project["score"] * PROJECT_MEMBER_SHARE, 4)
    for row in rows:
        _add_object_hit(conn, found, row, share, [f"member of {project['id']}"], None, today,
                        spaces)


# -- memory_read, memory_evidence -------------------------------------------------------------

def _is_event_ref(value: object) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, str) and (value.strip().isdigit() or value.startswith("event:"))


def memory_read(
    conn: sqlite3.Connection, object_id: str | int, offset: int = 0, reveal: bool = False,
    spaces: Spaces = EVERY_SPACE, today: date | None = None,
) -> ReadAnswer:
    """An object's profile, relations and evidence list, paged by next_offset (redirects
    followed; `merged` lists ids merged into it). An event id (42, "event:42") reads the event;
    a unique name or alias stands for its object's id. Secrets are masked unless `reveal`.
    What `spaces` does not see is NotFound, as what does not exist. A schedule's or todo's
    state is as of `today`, as memory_find shows it (a one-off whose day has gone: `past`).
    """
    if not isinstance(offset, int) or offset < 0:
        raise InputError("offset must be an integer >= 0")
    with _snapshot(conn):
        if _is_event_ref(object_id):
            return _event_page(conn, parse_event_id(object_id), offset, reveal, spaces)
        data = read_object(conn, resolve_object_ref(conn, str(object_id), spaces), offset,
                           spaces, today)
        answer = ObjectRead(kind="object", **data, merged=_merged_into(conn, data["object"]["id"]))
    return answer if reveal else mask_tree(answer)


def memory_evidence(
    conn: sqlite3.Connection, id_or_event: str | int, offset: int = 0, reveal: bool = False,
    spaces: Spaces = EVERY_SPACE,
) -> EvidenceAnswer:
    """The raw text behind an object's evidence (its own and that of objects merged into it),
    oldest first, at most EVIDENCE_PAGE_CHARS chars a page; `offset`/`next_offset` count chars
    of evidence text. For an event id: the event's text, paged, and the objects citing it.
    Secrets are masked unless `reveal` (the pages are cut from the raw text first). Only
    objects and events `spaces` sees are read or named.
    """
    if not isinstance(offset, int) or offset < 0:
        raise InputError("offset must be an integer >= 0")
    with _snapshot(conn):
        if _is_event_ref(id_or_event):
            event_id = parse_event_id(id_or_event)
            page = _event_page(conn, event_id, offset, reveal, spaces)
            seen, args = spaces.sql("+o.space")
            cited = [
                Citation(object_id=r[0], start_char=r[1], end_char=r[2])
                for r in conn.execute(
                    "SELECT v.object_id, v.start_char, v.end_char FROM evidence v"
                    f" JOIN objects o ON o.id = v.object_id WHERE v.event_id = ? AND {seen}"
                    " ORDER BY v.object_id, v.start_char", (event_id, *args),
                )
            ]
            return EventEvidence(**page, cited_by=cited)
        object_id = resolve_object_ref(conn, id_or_event, spaces)
        target = resolve_redirect(conn, object_id)
        if not _visible_object(conn, target, spaces):
            raise NotFound(f"no object {id_or_event}")
        answer = _evidence_page(conn, object_id, target, offset, spaces)
        if not reveal:
            answer["items"] = mask_evidence_items(conn, answer["items"])
        return answer


def _event_page(
    conn: sqlite3.Connection, event_id: int, offset: int, reveal: bool, spaces: Spaces,
) -> EventRead:
    """read_event_page with the event's own kind as `event_kind` (`kind` says "event"),
    masked unless `reveal`; NotFound for an event `spaces` does not see."""
    page = read_event_page(conn, event_id, offset, spaces=spaces)
    if not reveal:
        page = mask_event_page(conn, page)
    return EventRead(kind="event", id=page["id"], occurred_at=page["occurred_at"],
                     source=page["source"], event_kind=page["kind"], meta=page["meta"],
                     chars=page["chars"], est_tokens=page["est_tokens"],
                     ingested_at=page["ingested_at"], key=page["key"], state=page["state"],
                     offset=page["offset"], text=page["text"], next_offset=page["next_offset"])


def _evidence_page(
    conn: sqlite3.Connection, asked: str, target: str, offset: int, spaces: Spaces,
) -> ObjectEvidence:
    owners = [target, *_merged_into(conn, target)]
    seen, args = spaces.sql("+e.space")
    links = conn.execute(
        "SELECT v.object_id, v.event_id, v.start_char, min(v.end_char, e.chars), e.occurred_at,"
        " e.source FROM evidence v JOIN events e ON e.id = v.event_id"
        " WHERE v.object_id IN (SELECT value FROM json_each(?)) AND v.start_char < e.chars"
        f" AND {seen} ORDER BY e.occurred_us, v.event_id, v.start_char, v.object_id",
        (json.dumps(owners), *args),
    ).fetchall()
    total = sum(end - start for _, _, start, end, _, _ in links)
    if offset > total:
        raise InputError(f"offset {offset} is past the end of the evidence ({total} chars)")
    items, pos, budget = [], 0, EVIDENCE_PAGE_CHARS
    for owner, event_id, start, end, occurred_at, source in links:
        length = end - start
        if pos + length <= offset:
            pos += length
            continue
        if budget <= 0:
            break
        skip = max(0, offset - pos)
        take = min(length - skip, budget)
        text = conn.execute(
            "SELECT substr(text, ?, ?) FROM events WHERE id = ?",
            (start + skip + 1, take, event_id),
        ).fetchone()[0]
        items.append(EvidenceItem(
            object_id=owner, event_id=event_id, occurred_at=occurred_at, source=source,
            start_char=start + skip, end_char=start + skip + take, text=text,
            partial=skip > 0 or take < length))
        budget -= take
        pos += length
    end_pos = offset + (EVIDENCE_PAGE_CHARS - budget)
    return ObjectEvidence(
        kind="object", id=target, redirected_from=asked if asked != target else None,
        merged=owners[1:], total_chars=total, offset=offset, items=items,
        next_offset=end_pos if end_pos < total else None)
