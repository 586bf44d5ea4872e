"""Recency as a tie-breaker: of two events that score within TIE_SHARE of each other and both
name the question's named entity, the later one ranks first (a correction beats the statement
it corrects: "Dana moved to Lyon" then "Dana moved again, to Nantes").

A named entity of the query is a capitalised word of it that is not a function word ("Dana",
"Lyon"), or one of its Chinese terms (a CJK bigram: Chinese writes no capitals, and a query's
bigrams that are not function characters are mostly names and nouns). No phrase list decides
anything here: only scores, dates, the query's own words and how common they are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from .answers import Candidate
from .index import fold
from .terms import STOPWORDS, Query

TIE_SHARE = 0.95  # a score at least this share of the one above it counts as a tie
# An entity in more than about a tenth of the events (idf below log(10)), such as a speaker's
# name that starts every turn of a two-person chat, does not single out what a turn corrects.
RARE_IDF = math.log(10.0)
_CAPITALISED = re.compile(r"(?<![\w'])[A-Z][^\W_]*")


def entity_terms(query: Query) -> list[str]:
    """The query's named entities, folded: capitalised non-function words and CJK terms."""
    names = [fold(w) for w in _CAPITALISED.findall(query.text)]
    names = [n for n in names if n not in STOPWORDS and len(n) >= 2]
    names += [t.text for t in query.terms if t.kind == "cjk"]
    return list(dict.fromkeys(names))


def _naming(entities: list[str]) -> re.Pattern[str]:
    """One pattern that finds any of `entities` in folded text (an English one at a word's
    start): compiled once a find, not once per hit and entity."""
    return re.compile("|".join(rf"(?<![^\W_]){re.escape(e)}" if e.isascii() else re.escape(e)
                               for e in entities))


def later_first(hits: list[Candidate], query: Query,
                said_last: Mapping[str, str] | None = None) -> None:
    """Reorder `hits` (sorted by score, best first) in place: a later event that ties the event
    above it and, like it, names one of the query's entities moves up past it; so does an
    object that ties an object of its type above it, names the entity too and was last said
    of later (`said_last`: object id -> its newest evidence's time), so the object holding a
    newer value ("Preference: calls", rewritten) outranks one holding an older. Each swap
    undoes one inversion of time, so this ends."""
    source = next((h.get("_source") for h in hits if h["kind"] == "event"), None)
    idf = source[1] if source else {}
    entities = [e for e in entity_terms(query) if idf.get(e, RARE_IDF) >= RARE_IDF]
    if not entities:
        return
    pattern = _naming(entities)
    said_last = said_last or {}
    # One row per hit, built once: the loop below compares plain values, not dict lookups.
    score = [h["score"] for h in hits]
    when = [str(h["occurred_at"]) if h["kind"] == "event" else said_last.get(h["id"], "")
            for h in hits]
    alike = [_kind_of(h) for h in hits]
    naming: list[bool | None] = [None] * len(hits)  # searched only for hits in a tie
    order = list(range(len(hits)))

    def names(at: int) -> bool:
        found = naming[at]
        if found is None:
            found = naming[at] = _names(hits[at], pattern)
        return found

    swapped = True
    while swapped:
        swapped = False
        for i in range(len(order) - 1):
            above, below = order[i], order[i + 1]
            if (score[below] >= TIE_SHARE * score[above] and when[below] > when[above]
                    and alike[below] == alike[above] and names(above) and names(below)):
                order[i], order[i + 1] = below, above
                swapped = True
    hits[:] = [hits[at] for at in order]


def _names(hit: Candidate, pattern: re.Pattern[str]) -> bool:
    """Does the hit's own text (an event's, an object's fields) name one of the entities?"""
    if hit["kind"] == "event":
        event = hit.get("_source")
        text = event[0] if event else ""
    else:
        fields = hit.get("_source")
        if fields is None:
            return False  # a project member found through its project, not by its own words
        text = "\n".join(fields[0])
    return pattern.search(fold(text)) is not None


def _kind_of(hit: Candidate) -> str:
    """What a newer statement may supersede: an event another event, an object one of its
    type."""
    return "event" if hit["kind"] == "event" else "object:" + str(hit["type"])
