"""Ranking for recall: candidates from the FTS5 index, then exact scores from the rows.

Invariants:
- Stage 1 reads at most CAP + 1 postings per term (newest first) into Python and sums at most
  POSTINGS_BUDGET, so its cost does not grow with the events index: there, document counts and
  prefix expansions come from recall_vocab. (On the objects index, small by nature, a word
  prefix is an FTS5 prefix query, whose internal cost grows with that index.)
- Stage 2 never tokenizes a candidate: term frequencies are substring counts on the folded text
  (str.find/count, in C), with word boundaries checked for words; CJK bigrams are substrings by
  construction. A 16,000-char body costs a few C scans, not a Python tokenization.
- A score is BM25 (k1 1.2; b 0.75 for object bodies, EVENT_B for events) divided by the
  query's best possible score, so objects and events rank on one scale; objects use field
  weights (BM25F) over name, aliases, cues, summary and body.
"""

from __future__ import annotations

import bisect
import heapq
import json
import math
import sqlite3
from collections.abc import Sequence
from typing import Any

from ..base.spaces import EVERY_SPACE, Spaces
from ..objects.states import is_current
from .index import CJK_RUN, fold, fts_phrase, prefix_match, units
from .stem import MIN_WORD, stem
from .terms import Query, Term

K1, B = 1.2, 0.75
# An event is one turn or message, not a document: a long turn is long because it says more
# (the facts a later question asks about), not because it repeats its words, so its length
# discounts a match less than a long body does (bench/recall.py: b 0.3-0.5 all beat 0.75).
EVENT_B = 0.4
CAP = 1_000  # postings read per term; a term in more documents is "common"
POSTINGS_BUDGET = 10_000  # postings summed in stage 1, rarest terms first
MAX_EXPANSIONS = 200  # words a prefix expands to (in vocabulary order)
PHRASE_BONUS = 0.5  # a whole CJK phrase of the query, times the mean idf of its bigrams
FIELD_WEIGHTS = (4.0, 4.0, 2.5, 2.0, 1.0)  # name, aliases, cues, summary, body
FIELD_LABELS = ("name", "alias", "cue", "summary", "body")
SNIPPET_CHARS = 160
LONE_CJK_CANDIDATES = True  # a lone CJK character brings candidates beside other terms too
CHAR_POSTINGS = 2  # a run's characters whose postings stage 1 reads (the rarest; others weigh)
STEM_CREDIT = 1.0  # an inflection of a query word ("countries" for "country")
# A schedule or todo no longer ahead (cancelled, done, dropped, past) keeps this share of its
# score: it still answers "what happened to the dentist?", but below a current plan about the
# same thing (objects/states.py; bench/recall.py measured it changes no bench answer).
CLOSED_PLAN_SHARE = 0.7


def plan_share(state: str | None) -> float:
    """The share of its score a hit keeps for its state (1.0: still ahead, open, or none)."""
    return 1.0 if is_current(state) else CLOSED_PLAN_SHARE


# The dates a query names stand as one term whose documents are the events they find (on the
# day, or mentioning it): their words are no terms (recall/terms.py), yet the date weighs in the
# best possible score as those words did, so a word's share does not grow because a date was said.
DATE_TERM = "\x00date"


def _idf(df: float, n: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class Stats:
    """Document count, mean length and per-term document frequency of one index."""

    def __init__(self, n: int, avg_len: float) -> None:
        self.n, self.avg_len = max(n, 1), max(avg_len, 1.0)
        self.df: dict[str, float] = {}
        self.idf: dict[str, float] = {}
        self._best: float | None = None

    def set_df(self, term: str, df: float) -> None:
        self.df[term] = df
        self.idf[term] = _idf(df, self.n)
        self._best = None

    def best(self, query: Query) -> float:
        """The query's best possible score: every term saturated, every phrase whole."""
        if self._best is None:
            top = (sum(self.idf.get(t.text, 0.0) for t in query.terms)
                   + self.idf.get(DATE_TERM, 0.0)) * (K1 + 1)
            phrases = sum(self.phrase_idf(p) for p in query.phrases)
            self._best = top + PHRASE_BONUS * phrases or 1.0
        return self._best

    def phrase_idf(self, phrase: str) -> float:
        pairs = [phrase[i : i + 2] for i in range(len(phrase) - 1)]
        return sum(self.idf.get(p, 0.0) for p in pairs) / max(1, len(pairs))


# -- stage 1 ----------------------------------------------------------------------------------

def _looked_up(term: Term, terms: Sequence[Term]) -> bool:
    """Whether a term generates candidates: every term, a lone CJK content character too
    ("超过40岁": 岁 is in the answer only inside bigrams such as 岁了, which its prefix
    lookup reaches; issue 36). A 2-letter word prefix ("ER") is looked up
    through the vocabulary (bounded expansions) or, on an index without one, as the word alone
    (an FTS5 prefix query reads every posting of every word it starts)."""
    if term.kind == "cjk1":
        return LONE_CJK_CANDIDATES or all(t.kind == "cjk1" for t in terms)
    return True


def _exact(term: Term, terms: Sequence[Term], vocab: bool) -> Term:
    """The term to look up: a short prefix without a vocabulary is looked up as a word."""
    if term.kind == "prefix" and len(term.text) < 3 and len(terms) > 1 and not vocab:
        return Term(term.text, "word", fts_phrase(term.text))
    return term


# How a candidate ({key}) of each index reaches the space of its row: an event's rowid is its
# id, an object's is its recall_object_keys.rid. CROSS JOIN keeps the candidates the outer
# loop (SQLite never reorders it): one seek each, never a scan of a space probing them.
_SPACE_JOINS = {
    "recall_events_fts": " CROSS JOIN events s ON s.id = {key}",
    "recall_objects_fts": " CROSS JOIN recall_object_keys k ON k.rid = {key}"
                          " CROSS JOIN objects s ON s.id = k.object_id",
}
VISIBLE_STEP = 64  # ranked candidates whose space one statement checks, at least


def _rowids(conn: sqlite3.Connection, table: str, match: str, limit: int = -1) -> list[int]:
    """Rowids matching one FTS5 expression, newest first (one JSON array: faster than rows)."""
    row = conn.execute(
        f"SELECT json_group_array(rowid) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ?"
        " ORDER BY rowid DESC LIMIT ?)", (match, limit),
    ).fetchone()
    return json.loads(row[0])


def _lookup(
    conn: sqlite3.Connection, table: str, term: Term, stats: Stats, top_id: int
) -> tuple[list[int] | None, float, list[str]]:
    """(rowids holding `term`, or None when more than CAP do; its document frequency; the
    FTS5 expressions whose newest postings stand for it when every term is common)."""
    match = prefix_match(conn, table, term.text) if term.fts.endswith("*") else None
    match = term.fts if match is None else match  # "": no token starts with the prefix
    try:
        postings = _rowids(conn, table, match, CAP + 1) if match else []
    except sqlite3.OperationalError:  # a term the tokenizer reduces to nothing
        return [], 0.0, []
    if len(postings) <= CAP:
        return postings, float(len(postings)), []
    # CAP + 1 postings in (last, top]: scale that density to the whole index
    span = max(1, top_id - postings[-1])
    return None, min(float(stats.n), max(CAP + 1.0, (CAP + 1) * top_id / span)), [match]


def _lookup_vocab(
    conn: sqlite3.Connection, table: str, term: Term, stats: Stats
) -> tuple[list[int] | None, float, list[str]]:
    """_lookup through recall_vocab: exact document counts without reading postings, and a
    prefix expanded to the tokens it starts (never an FTS5 prefix query: its cost is unbounded).
    """
    if term.stem:
        return _lookup_family(conn, table, term, stats)
    fts = term.fts
    words = [] if term.credit and term.kind != "word" else conn.execute(
        "SELECT term, docs FROM recall_vocab WHERE term = ?", (term.text,)).fetchall()
    if term.credit and not words:  # a prefix, or a word absent ("customize": "customized")
        words = conn.execute(
            "SELECT term, docs FROM recall_vocab WHERE term >= ? AND term < ? LIMIT ?",
            (term.text, term.text + "\U0010ffff", MAX_EXPANSIONS),
        ).fetchall()
        fts = fts_phrase(term.text) + "*"
    return _vocab_postings(conn, table, words, stats, fts)


def _lookup_family(
    conn: sqlite3.Connection, table: str, term: Term, stats: Stats
) -> tuple[list[int] | None, float, list[str]]:
    """_lookup_vocab of an English word with its inflections ("countries": "country"), and the
    tokens it starts when it is a prefix term or is itself absent ("customize": "customized")."""
    near = conn.execute(
        "SELECT term, docs FROM recall_vocab WHERE term >= ? AND term < ? LIMIT ?",
        (term.needle, term.needle + "\U0010ffff", MAX_EXPANSIONS),
    ).fetchall()
    absent = all(w != term.text for w, _ in near)
    longer = term.kind == "prefix" or (term.credit and absent)
    words = [(w, n) for w, n in near if w == term.text or _kin(w, term)
             or (longer and w.startswith(term.text))]
    return _vocab_postings(conn, table, words, stats, " OR ".join(fts_phrase(w) for w, _ in words))


def _kin(word: str, term: Term) -> bool:
    """Whether `word` is an inflection of the term's word. A word shorter than MIN_WORD is its
    own family, never another's: "tim" is not "time" (whose key, "tim", it happens to equal)."""
    return bool(term.stem) and len(word) >= MIN_WORD and stem(word) == term.stem


def _vocab_postings(
    conn: sqlite3.Connection, table: str, words: list[tuple[str, int]], stats: Stats, fts: str,
) -> tuple[list[int] | None, float, list[str]]:
    """The postings of the vocabulary `words` (term, docs) through the FTS expression `fts`, or
    None with the 3 commonest words when they hold more than CAP documents in all."""
    words = sorted(words, key=lambda w: -w[1])
    df = min(float(stats.n), float(sum(w[1] for w in words)))
    if df > CAP:
        return None, df, [fts_phrase(w[0]) for w in words[:3]]
    if not words:
        return [], 0.0, []
    # at most CAP postings in all: now even a prefix query reads few (one statement for all)
    return _rowids(conn, table, fts), df, []


def char_docs(conn: sqlite3.Connection, chars: Sequence[str]) -> dict[str, float]:
    """How many indexed events hold each CJK character, as _lookup_vocab counts a lone one:
    the documents of the tokens it starts (its bigrams and its run ends, the first
    MAX_EXPANSIONS), summed inside SQLite in one statement for all of them (read into Python
    one lookup at a time, a Chinese query's characters cost a find several ms at 1M events).
    A document holding two of those tokens counts twice: an upper bound, as for a prefix."""
    rows = conn.execute(
        "SELECT j.value, (SELECT total(docs) FROM (SELECT docs FROM recall_vocab"
        " WHERE term >= j.value AND term < j.value || char(1114111) LIMIT ?))"
        " FROM json_each(?) j", (MAX_EXPANSIONS, json.dumps(list(chars), ensure_ascii=False)),
    ).fetchall()
    return {char: float(docs) for char, docs in rows}


def _char_postings(conn: sqlite3.Connection, table: str, query: Query, stats: Stats,
                   char_df: dict[str, float]) -> dict[str, list[int]]:
    """Set the df of the query's run characters (from `char_df`); the postings of the
    CHAR_POSTINGS rarest that at most CAP events hold (the others only weigh in stage 2:
    a run's bigrams bring its candidates, a rare character adds those that share no bigram)."""
    rare: list[tuple[float, Term]] = []
    for term in query.terms:
        if term.in_run:
            df = min(float(stats.n), char_df.get(term.text, 0.0))
            stats.set_df(term.text, df)
            if 0 < df <= CAP:
                rare.append((df, term))
    rare.sort(key=lambda r: r[0])
    return {term.text: _rowids(conn, table, term.fts) for _, term in rare[:CHAR_POSTINGS]}


def candidates(
    conn: sqlite3.Connection, table: str, query: Query, stats: Stats, top_id: int,
    allowed: set[int] | None, exclude: set[int], want: int, vocab: bool = False,
    spaces: Spaces = EVERY_SPACE, char_df: dict[str, float] | None = None,
) -> list[int]:
    """Up to `want` rowids of `table` (only `allowed` ones when given, never `exclude`d ones,
    only those of rows `spaces` sees: _visible_first), best first by the summed idf of the
    rare terms they hold. Sets every term's document frequency in `stats` (counted over the
    whole index: a weight, never a hit). With `vocab`, terms are looked up in recall_vocab
    first; a run's characters by `char_df` (char_docs), when given."""
    lists: dict[str, list[int]] = {}
    fallback: dict[str, list[str]] = {}
    if char_df is not None:
        lists.update(_char_postings(conn, table, query, stats, char_df))
    for term in query.terms:
        if term.in_run and char_df is not None:
            continue
        if not _looked_up(term, query.terms):
            stats.set_df(term.text, stats.n / 10)  # unknown: a middling idf for stage 2
            continue
        if vocab:
            postings, df, newest = _lookup_vocab(conn, table, term, stats)
        else:
            postings, df, newest = _lookup(conn, table, _exact(term, query.terms, vocab),
                                           stats, top_id)
        stats.set_df(term.text, df)
        if postings is None:
            fallback[term.text] = newest
        else:
            lists[term.text] = postings
    chosen: list[str] = []
    used = 0
    for name in sorted((t for t, p in lists.items() if p), key=lambda t: len(lists[t])):
        if chosen and used + len(lists[name]) > POSTINGS_BUDGET:
            break
        chosen.append(name)
        used += len(lists[name])
    common_only = not chosen
    if common_only:  # only common terms: the newest CAP postings of each stand for them
        for name, matches in fallback.items():
            # the newest CAP of their OR: the same rows as the newest CAP of each, merged and
            # cut, in one statement that stops at the LIMIT
            lists[name] = _rowids(conn, table, " OR ".join(matches), CAP)
            chosen.append(name)
    acc = _summed(lists, chosen, stats, allowed, exclude)
    if spaces.visible is None or not acc:
        return _best(acc, want)
    # the best few first (most are seen: a bound client sees its space and shared); all of
    # them, in order, only when those hold too few it sees
    best = _best(acc, 4 * want)
    found = _visible_first(conn, table, best, want, spaces)
    if len(found) < want < len(acc) and len(best) < len(acc):
        found = _visible_first(conn, table, _best(acc, len(acc)), want, spaces)
    if common_only and len(found) < want:
        # The newest CAP postings were mostly other spaces': read the newest CAP this client
        # sees instead (a join per posting, paid only when the cheap pass came up short).
        seen = {name: _visible_rowids(conn, table, " OR ".join(fallback[name]), spaces)
                for name in fallback}
        return _best(_summed(seen, list(seen), stats, allowed, exclude), want)
    return found


def _summed(lists: dict[str, list[int]], chosen: list[str], stats: Stats,
            allowed: set[int] | None, exclude: set[int]) -> dict[int, float]:
    """Each rowid of the `chosen` terms' postings with the summed idf of those it holds."""
    # up to POSTINGS_BUDGET postings: the loop stays lean (no filter when nothing is filtered)
    acc: dict[int, float] = {}
    get = acc.get
    for name in chosen:
        weight = stats.idf[name]
        postings = lists[name]
        if allowed is not None or exclude:
            postings = [r for r in postings
                        if (allowed is None or r in allowed) and r not in exclude]
        for rowid in postings:
            acc[rowid] = get(rowid, 0.0) + weight
    return acc


def _best(acc: dict[int, float], want: int) -> list[int]:
    """The `want` rowids of highest score, best first ((score, rowid) pairs compare in C)."""
    return [r for _, r in heapq.nlargest(want, zip(acc.values(), acc.keys(), strict=True))]


def _visible_rowids(conn: sqlite3.Connection, table: str, match: str,
                    spaces: Spaces) -> list[int]:
    """The newest CAP rowids matching `match` whose rows `spaces` sees (_rowids, joined to
    each posting's space: FTS5 hands them newest first, so the LIMIT stops the scan)."""
    seen, args = spaces.sql("s.space")
    join = _SPACE_JOINS[table].format(key="f.rowid")
    row = conn.execute(
        f"SELECT json_group_array(rowid) FROM (SELECT f.rowid AS rowid FROM {table} f{join}"
        f" WHERE {table} MATCH ? AND {seen} ORDER BY f.rowid DESC LIMIT ?)",
        (match, *args, CAP),
    ).fetchone()
    return list(json.loads(row[0]))


def _visible_first(conn: sqlite3.Connection, table: str, ranked: list[int], want: int,
                   spaces: Spaces) -> list[int]:
    """The first `want` of the `ranked` rowids whose rows `spaces` sees, best first.

    The space is checked in SQL, a step of the best candidates at a time, until `want` are
    found: a few dozen seeks, where a join on every posting (thousands a term) cost a bound
    find 2-3x an unbound one at 1,000,000 events (bench/spaces.py). Stage 1 reads the same
    postings whatever the binding (they only weigh candidates); every row a bound answer is
    built from passed this query."""
    seen, args = spaces.sql("s.space")
    join = _SPACE_JOINS[table].format(key="j.value")
    step = max(2 * want, VISIBLE_STEP)
    out: list[int] = []
    for start in range(0, len(ranked), step):
        chunk = ranked[start:start + step]
        visible = set(json.loads(conn.execute(
            f"SELECT json_group_array(j.value) FROM json_each(?) j{join} WHERE {seen}",
            (json.dumps(chunk), *args)).fetchone()[0]))
        out += [r for r in chunk if r in visible]
        if len(out) >= want:
            break
    return out[:want]


# -- stage 2 ----------------------------------------------------------------------------------

def _word_char(ch: str) -> bool:
    return ch.isalnum() and (ch.isascii() or not CJK_RUN.match(ch))


def occurrences(term: Term, folded: str) -> tuple[float, list[str]]:
    """Weighted frequency of `term` in folded text, and the tokens that matched (for `why`).

    A word must start at a word boundary; a longer word it starts counts `term.credit`.
    """
    text = term.text
    if term.kind in ("cjk", "cjk1"):
        n = folded.count(text)
        return float(n), [text] if n else []
    needle = term.needle
    matched: list[str] = []
    tf, start, size = 0.0, 0, len(folded)
    while (i := folded.find(needle, start)) >= 0:
        start = i + 1
        if i and _word_char(folded[i - 1]):
            continue
        end = i + len(needle)
        while end < size and _word_char(folded[end]):
            end += 1
        word = folded[i:end]
        if word == text:
            tf += 1.0
        elif _kin(word, term):
            tf += STEM_CREDIT
        elif term.credit and word.startswith(text):
            tf += term.credit
        else:
            continue
        if len(matched) < 3 and word not in matched:
            matched.append(word)
    return tf, matched


def _why(term: str, matched: list[str]) -> str:
    return term if matched == [term] else f"{term}* ({', '.join(matched)})"


def score_text(query: Query, stats: Stats, text: str) -> tuple[float, list[str]]:
    """BM25 of one event text, as a share of the best possible; the matched terms for `why`."""
    folded = fold(text)
    norm = 1 - EVENT_B + EVENT_B * units(text) / stats.avg_len
    score, why = 0.0, []
    for term in query.terms:
        tf, matched = occurrences(term, folded)
        if tf:
            score += stats.idf[term.text] * tf * (K1 + 1) / (tf + K1 * norm)
            why.append(_why(term.text, matched))
    for phrase in query.phrases if score else ():
        if phrase in folded:
            score += PHRASE_BONUS * stats.phrase_idf(phrase)
            why.append(f'"{phrase}"')
    return score / stats.best(query), why


def score_object(query: Query, stats: Stats, fields: Sequence[str]) -> tuple[float, list[str]]:
    """BM25F over name, aliases, cues, summary and body (the body length-normalized), as a
    share of the best possible; `why` names field and term, e.g. "alias: qhy"."""
    folded = [fold(f) for f in fields]
    joined = "\n".join(folded)
    body_norm = 1 - B + B * units(fields[4]) / stats.avg_len
    score, why = 0.0, []
    for term in query.terms:
        if term.text not in joined:
            continue
        weighted, where = 0.0, []
        for index, text in enumerate(folded):
            tf, matched = occurrences(term, text) if text else (0.0, [])
            if tf:
                weighted += FIELD_WEIGHTS[index] * tf / (body_norm if index == 4 else 1.0)
                where.append(f"{FIELD_LABELS[index]}: {_why(term.text, matched)}")
        if weighted:
            score += stats.idf[term.text] * weighted * (K1 + 1) / (weighted + K1)
            why += where[:2]
    for phrase in query.phrases if score else ():
        if phrase in joined:
            score += PHRASE_BONUS * stats.phrase_idf(phrase)
    return score / stats.best(query), why


def tail_candidates(
    query: Query, stats: Stats, rows: Sequence[Sequence[Any]], want: int
) -> list[int]:
    """Stage 1 over unindexed (id, text) rows: up to `want` ids, best first by the summed idf
    of the terms they hold; each term's document frequency grows by the rows holding it.

    The texts are searched as one folded string with one compiled pattern per term (C scans),
    so the Python work grows with the rows that hold a term, not with the rows scanned."""
    if not rows:
        return []
    texts = _fold_all([row[1] for row in rows])
    starts, pos = [], 0
    for text in texts:
        starts.append(pos)
        pos += len(text) + 1
    joined = _SEP.join(texts)
    holding: dict[str, list[int]] = {}
    for term in query.terms:
        word = term.kind not in ("cjk", "cjk1")
        needle = term.needle if word else term.text
        docs, at = [], joined.find(needle)
        while at >= 0:
            if word and at and _word_char(joined[at - 1]):  # inside a word: look further
                at = joined.find(needle, at + 1)
                continue
            doc = bisect.bisect_right(starts, at) - 1
            if not word or occurrences(term, texts[doc])[0]:
                docs.append(doc)
            at = joined.find(needle, starts[doc] + len(texts[doc]) + 1)
        holding[term.text] = docs
        if docs:
            stats.set_df(term.text, min(float(stats.n), stats.df[term.text] + len(docs)))
    acc: dict[int, float] = {}
    for name, docs in holding.items():
        weight = stats.idf[name]
        for doc in docs:
            acc[doc] = acc.get(doc, 0.0) + weight
    best = heapq.nlargest(want, ((w, rows[d][0]) for d, w in acc.items()))
    return [event_id for _, event_id in best]


_SEP = "\x00"


_FOLDED: dict[str, str] = {}  # text -> fold(text): events never change, so it never goes stale
FOLD_CACHE_MAX = 40_000


def _fold_cached(text: str) -> str:
    """fold() of a non-ASCII text (NFKC and diacritics are the slow part), remembered for the
    next find, which scans the same unindexed events again."""
    folded = _FOLDED.get(text)
    if folded is None:
        if len(_FOLDED) >= FOLD_CACHE_MAX:
            _FOLDED.clear()
        folded = _FOLDED[text] = fold(text).replace(_SEP, " ")
    return folded


def _fold_all(texts: list[str]) -> list[str]:
    """fold() of each text: the ASCII ones lower-cased in one call, the others one by one
    (one accented character would otherwise make the whole batch take the slow path)."""
    out = [t if t.isascii() else _fold_cached(t) for t in texts]
    plain = [i for i, t in enumerate(texts) if t.isascii()]
    if plain:
        lowered = _SEP.join(texts[i] for i in plain).lower().split(_SEP)
        if len(lowered) == len(plain):
            for i, text in zip(plain, lowered, strict=True):
                out[i] = text
        else:  # a text holds the separator
            for i in plain:
                out[i] = texts[i].lower().replace(_SEP, " ")
    return out


# -- snippets ---------------------------------------------------------------------------------

def snippet(text: str, query: Query, idf: dict[str, float]) -> str:
    """About SNIPPET_CHARS of `text` (whitespace collapsed) around its weightiest match."""
    folded = fold(text)
    low = folded if len(folded) == len(text) else text.lower()  # positions must match `text`
    best, best_weight = -1, -1.0
    needles = [(p, 100.0) for p in query.phrases]
    needles += [(t.text, idf.get(t.text, 0.0)) for t in query.terms]
    for needle, weight in needles:
        pos = low.find(needle)
        while pos > 0 and needle.isascii() and _word_char(low[pos - 1]):
            pos = low.find(needle, pos + 1)
        if pos >= 0 and weight > best_weight:
            best, best_weight = pos, weight
    start = max(0, best - SNIPPET_CHARS // 3)
    while start and not text[start - 1].isspace() and best - start < SNIPPET_CHARS // 2:
        start -= 1  # begin at a word
    flat = " ".join(text[start : start + 2 * SNIPPET_CHARS].split())
    more = len(flat) > SNIPPET_CHARS or start + 2 * SNIPPET_CHARS < len(text.rstrip())
    return ("…" if start else "") + flat[:SNIPPET_CHARS] + ("…" if more else "")


def snippet_field(fields: Sequence[str], why: list[str]) -> int:
    """Which of an object's fields its snippet is cut from: the body when only the body
    matched, else the summary, the cues or the name (the first that is not empty)."""
    if fields[4] and any(w.startswith("body") for w in why) and not any(
        w.startswith("summary") for w in why
    ):
        return 4
    return 3 if fields[3] else 2 if fields[2] else 0
