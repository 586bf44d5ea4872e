"""Pseudo-relevance feedback over events (RM3-style): the best turns a question finds say what
it is about in words the question does not use, and those words find the turns it misses.

The hope: "What career path has Caroline decided to pursue?" finds turns that speak of
"counseling" and "mental health", and so does the turn that answers it without a word of the
question but her name. After the first ranking, the terms of the top FEEDBACK_DOCS event hits
are weighed (each occurrence counted by its hit's score over the best hit's, times the term's
idf from the index's own statistics), and the best FEEDBACK_TERMS of them become a
second, weighted query: a second candidate pass through the same FTS5 index (and the unindexed
tail) finds the turns holding them, and every event read is scored (1 - FEEDBACK_WEIGHT) x its
own score + FEEDBACK_WEIGHT x its feedback score (both a share of the best possible).

Measured, not adopted, so not in the product: on the validation split it moves LoCoMo recall@10
by +0.003 (12 questions better, 9 worse), costs temporal and open-domain questions and the
pooled Chinese memory, and a LoCoMo question's cpu at 1M events goes from 10.9 to 17.6 ms at p50
(docs/recall.md, "Tried and not adopted"). It lives here, tested
(tests/test_recall_feedback.py), so that it can be measured again on another corpus.
`switched_on()` (or the patch ON) wraps memory_find's neighbour step
(memvault.recall.query.add_neighbours): feedback on the events scored so far, then the
neighbours read, then those blended too, as the engine ran it when it still held it (switched
off), so the answers are the ones it gave switched on. `python bench/recall.py --feedback` and
`python bench/recall_ablation.py --only feedback` measure it.

Invariants:
- Feedback terms are the index's own units (English words, CJK bigrams: analyze_words), never
  a word of the question or of its family, a stopword, a function-character bigram, a number,
  a word in more than about a tenth of the events (a speaker's name: recency.RARE_IDF) or a
  term only one event holds (it finds nothing new).
- A secret never becomes a feedback term: terms are read from the masked text of a hit
  (secrets/detector.py: mask_secrets), so no word of a secret reaches `why`.
- Only questions get feedback: a query of fewer than CONTEXT_MIN_TERMS terms (a name, a
  keyword) lists the events that hold it, and nothing else.
- Statistics count the unindexed tail (up to TAIL_COUNT_MAX events; a longer one is estimated
  from the indexed density), so a turn ranks the same before and after sync_index.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from unittest import mock

from memvault.base.spaces import EVERY_SPACE, Spaces
from memvault.recall import query as find
from memvault.recall.context import add_neighbours, event_rows
from memvault.recall.index import CJK_RUN, analyze_words, fold, fts_phrase, get_stat, units
from memvault.recall.rank import (
    EVENT_B,
    K1,
    Stats,
    candidates,
    occurrences,
    score_text,
    tail_candidates,
)
from memvault.recall.recency import RARE_IDF
from memvault.recall.stem import MIN_WORD, stem
from memvault.recall.terms import CJK_FUNCTION_CHARS, STOPWORDS, Query, Term
from memvault.secrets.detector import mask_secrets

# k, m and lambda were chosen on the tuning split only (LoCoMo conversations 0-2 and the first
# half of the MemoryBank users: bench/recall.py), from k 2-5 or 10, m 5-15, lambda 0.1-0.4.
FEEDBACK_DOCS = 3  # k: the best-scoring events whose terms are weighed
FEEDBACK_TERMS = 10  # m: feedback terms added to the query
FEEDBACK_WEIGHT = 0.2  # lambda: the feedback score's share of an event's score
# The second candidate pass: FEEDBACK_CANDIDATES events found by the feedback terms are read.
# Without it feedback re-ranks only the events already read (the question's candidates and
# their turns): the same validation recall at about half the cost.
SECOND_PASS = True
FEEDBACK_CANDIDATES = 20
MIN_WORD_CHARS = 3  # shorter English words ("ok", "im") say nothing of a topic
TAIL_COUNT_MAX = 2_000  # unindexed events whose terms are counted; more: estimated
WHY_TERMS = 2  # feedback terms named in a hit's `why`

_WORD = re.compile(r"[^\W_]+")
_MARKER = re.compile(r"\[secret: [^\]]*\]")


@dataclass
class Feedback:
    """The feedback terms of one find, their weights, and the events already scored by them."""

    query: Query
    weights: dict[str, float]  # term -> share of the feedback query (they sum to 1)
    stats: Stats
    blended: set[int] = field(default_factory=set)

    @cached_property
    def best(self) -> float:
        """The feedback query's best possible score: every term saturated."""
        return sum(self.weights[t] * self.stats.idf[t] for t in self.weights) * (K1 + 1)

    def score(self, text: str) -> tuple[float, list[str]]:
        """Weighted BM25 of `text` over the feedback terms, as a share of the best possible;
        the matched terms, heaviest first (for `why`)."""
        folded = fold(text)
        present = [t for t in self.query.terms if t.text in folded]  # most texts hold none
        if not present or not self.best:
            return 0.0, []
        norm = 1 - EVENT_B + EVENT_B * units(text) / self.stats.avg_len
        score, matched = 0.0, []
        for term in present:
            tf = occurrences(term, folded)[0]
            if tf:
                weight = self.weights[term.text] * self.stats.idf[term.text]
                score += weight * tf * (K1 + 1) / (tf + K1 * norm)
                matched.append(term.text)
        return score / self.best, matched


def term_counts(text: str) -> Counter[str]:
    """The index's units of `text` with their counts, secrets masked out first."""
    masked = _MARKER.sub(" ", mask_secrets(text))
    return Counter(_WORD.findall(fold(analyze_words(masked)[0])))


def _usable(token: str, own: set[str], roots: tuple[str, ...]) -> bool:
    """Whether `token` may be a feedback term, before its statistics are known. (Only a
    token that starts with a root of the question's words can be of their family.)"""
    if CJK_RUN.fullmatch(token):
        return len(token) == 2 and not set(token) <= CJK_FUNCTION_CHARS and token not in own
    if len(token) < MIN_WORD_CHARS or token.isdigit() or token in STOPWORDS or token in own:
        return False
    return not (token.startswith(roots) and len(token) >= MIN_WORD and token.isascii()
                and stem(token) in own)


def _own_terms(query: Query) -> tuple[set[str], tuple[str, ...]]:
    """The question's terms and their family keys (never fed back), and the roots every word
    of those families starts with."""
    keyed = [t for t in query.terms if t.stem]
    return ({t.text for t in query.terms} | {t.stem for t in keyed},
            tuple(t.needle for t in keyed))


def _doc_freqs(
    conn: sqlite3.Connection, tokens: Sequence[str], tail: Sequence[Sequence[Any]],
    indexed_docs: int,
) -> dict[str, float]:
    """Document frequency of each token: recall_vocab's count, plus the unindexed tail's
    (counted when the tail is short, else the indexed density times its length)."""
    df: dict[str, float] = {t: 0.0 for t in tokens}
    for term, docs in conn.execute(
        "SELECT term, docs FROM recall_vocab WHERE term IN (SELECT value FROM json_each(?))",
        (json.dumps(list(tokens), ensure_ascii=False),),
    ):
        df[term] = float(docs)
    if not tail:
        return df
    if len(tail) <= TAIL_COUNT_MAX or not indexed_docs:
        wanted = set(tokens)
        for row in tail:
            for token in wanted.intersection(analyze_words(row[1])[1]):
                df[token] += 1
        return df
    scale = 1 + len(tail) / indexed_docs
    return {t: d * scale for t, d in df.items()}


def expand(
    conn: sqlite3.Connection, query: Query, stats: Stats,
    own: dict[int, tuple[float, list[str]]], by_id: dict[int, Sequence[Any]],
    tail: Sequence[Sequence[Any]],
) -> Feedback | None:
    """The feedback terms of the best FEEDBACK_DOCS events scored so far; None when none."""
    top = sorted((i for i in own if own[i][0] > 0), key=lambda i: (-own[i][0], -i))
    top = top[:FEEDBACK_DOCS]
    if not top:
        return None
    best = own[top[0]][0]
    mass: dict[str, float] = {}
    mine, roots = _own_terms(query)
    for event_id in top:
        share = own[event_id][0] / best
        for token, count in term_counts(by_id[event_id][6]).items():
            if _usable(token, mine, roots):
                mass[token] = mass.get(token, 0.0) + share * count
    if not mass:
        return None
    df = _doc_freqs(conn, sorted(mass), tail, stats.n - len(tail))
    scored = Stats(stats.n, stats.avg_len)
    weighed: dict[str, float] = {}
    for token, amount in mass.items():
        scored.set_df(token, min(float(stats.n), df[token]))
        if df[token] >= 2 and scored.idf[token] >= RARE_IDF:
            weighed[token] = amount * scored.idf[token]
    chosen = sorted(weighed, key=lambda t: (-weighed[t], t))[:FEEDBACK_TERMS]
    if not chosen:
        return None
    total = sum(mass[t] for t in chosen)
    terms = tuple(Term(t, "cjk" if CJK_RUN.fullmatch(t) else "word", fts_phrase(t)) for t in chosen)
    return Feedback(Query("", terms, ()), {t: mass[t] / total for t in chosen}, scored)


def feedback_rows(
    conn: sqlite3.Connection, feedback: Feedback, watermark: int, allowed: set[int] | None,
    tail: Sequence[Sequence[Any]], known: set[int],
) -> list[Sequence[Any]]:
    """The events the feedback terms find (the second candidate pass, the tail included) that
    were not read yet; sets the feedback terms' document frequencies."""
    ids = candidates(conn, "recall_events_fts", feedback.query, feedback.stats, watermark,
                     allowed, set(), FEEDBACK_CANDIDATES, vocab=True)
    ids += tail_candidates(feedback.query, feedback.stats, tail, FEEDBACK_CANDIDATES)
    return event_rows(conn, sorted(set(ids) - known))


def with_feedback(
    conn: sqlite3.Connection, query: Query, stats: Stats,
    own: dict[int, tuple[float, list[str]]], by_id: dict[int, Sequence[Any]],
    tail: Sequence[Sequence[Any]], watermark: int, allowed: set[int] | None,
) -> Feedback | None:
    """Feedback on the events scored so far (`own`, `by_id`, updated in place): the events
    the feedback terms find are read and scored, and every event is blended. None (nothing
    changed) when the hits give no usable term."""
    feedback = expand(conn, query, stats, own, by_id, tail)
    if feedback is None:
        return None
    if SECOND_PASS:
        for row in feedback_rows(conn, feedback, watermark, allowed, tail, set(by_id)):
            own[row[0]] = score_text(query, stats, row[6])
            by_id[row[0]] = row
    blend(feedback, own, by_id)
    return feedback


def blend(
    feedback: Feedback, own: dict[int, tuple[float, list[str]]],
    by_id: dict[int, Sequence[Any]],
) -> None:
    """Each event read and not yet blended scores (1 - FEEDBACK_WEIGHT) x its own score +
    FEEDBACK_WEIGHT x its feedback score; `why` names up to WHY_TERMS feedback terms."""
    for event_id, row in by_id.items():
        if event_id in feedback.blended:
            continue
        feedback.blended.add(event_id)
        score, why = own[event_id]
        extra, matched = feedback.score(row[6])
        if extra:
            why = [*why, *(f"feedback: {t}" for t in matched[:WHY_TERMS])]
        own[event_id] = ((1 - FEEDBACK_WEIGHT) * score + FEEDBACK_WEIGHT * extra, why)


def _tail(conn: sqlite3.Connection, watermark: int,
          allowed: set[int] | None) -> list[Sequence[Any]]:
    """The unindexed events memory_find scans (recall/query.py, _find_events): the newest
    TAIL_SCAN_MAX past the watermark, those `allowed` only."""
    tail = conn.execute("SELECT id, text FROM events WHERE id > ? ORDER BY id DESC LIMIT ?",
                        (watermark, find.TAIL_SCAN_MAX)).fetchall()
    return [row for row in tail if allowed is None or row[0] in allowed]


def add_neighbours_with_feedback(
    conn: sqlite3.Connection, query: Query, stats: Stats,
    own: dict[int, tuple[float, list[str]]], by_id: dict[int, Sequence[Any]],
    allowed: set[int] | None, unread: tuple[int, int], spaces: Spaces = EVERY_SPACE,
) -> None:
    """memory_find's neighbour step with feedback around it: a question (CONTEXT_MIN_TERMS
    terms or more) gets feedback on the events scored so far, then the turns around the hits
    are read, and scored by the feedback terms too. (Measured unbound: `spaces` only reaches
    the neighbour step.)"""
    feedback = None
    if len(query.terms) >= find.CONTEXT_MIN_TERMS:
        watermark = get_stat(conn, "events_indexed_to")
        feedback = with_feedback(conn, query, stats, own, by_id,
                                 _tail(conn, watermark, allowed), watermark, allowed)
    add_neighbours(conn, query, stats, own, by_id, allowed, unread, spaces)
    if feedback is not None:
        blend(feedback, own, by_id)


# The patch that switches feedback on in memory_find (module, attribute, value).
ON: list[tuple[Any, str, Any]] = [(find, "add_neighbours", add_neighbours_with_feedback)]


@contextmanager
def switched_on(second_pass: bool = SECOND_PASS) -> Iterator[None]:
    """memory_find with feedback, for the duration (`second_pass` False: re-rank only the
    events already read)."""
    with (mock.patch.object(find, "add_neighbours", add_neighbours_with_feedback),
          mock.patch.dict(globals(), {"SECOND_PASS": second_pass})):
        yield
