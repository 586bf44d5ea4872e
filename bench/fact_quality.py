"""Fact-level quality of organized objects against LoCoMo's `observation` facts (English).

Used by organize_quality.py. Each observation fact is one sentence about a speaker ("Caroline
attended an LGBTQ support group recently…"). Content words are lowercase alphanumeric words of
at least 2 characters, minus a common English stopword list (NLTK's, plus a few contractions),
no stemming. An object line is the object's name, its summary, or one body line; a body line's
Markdown bullet and its `label:` prefix ("- role: ", "- 2023-05-08: ") are not part of it.

- fact recall: share of facts for which one object line holds >= 60% of the fact's content words;
- line precision: share of object lines with >= 3 content words, not "unknown", that either hold
  >= 60% of some fact's words or have >= 60% of their own words inside one fact;
- size: object characters (name + summary + body) per conversation character (the events' text).
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

SHARE = 0.6
# NLTK's English stopwords (179) and the contraction pieces its tokenizer leaves behind.
STOPWORDS = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
yourselves he him his himself she she's her hers herself it it's its itself they them their
theirs themselves what which who whom this that that'll these those am is are was were be been
being have has had having do does did doing a an the and but if or because as until while of at
by for with about against between into through during before after above below to from up down
in out on off over under again further then once here there when where why how all any both each
few more most other some such no nor not only own same so than too very s t can will just don
don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn
doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn
needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
""".split())
_WORD = re.compile(r"[a-z0-9]+")
_LABEL = re.compile(r"^\s*[-*]?\s*(?:[^:：\n]{1,40}?[:：]\s+)?")


def content_words(text: str) -> set[str]:
    """The content words of `text` (see the module doc)."""
    return {w for w in _WORD.findall(text.casefold()) if len(w) >= 2 and w not in STOPWORDS}


def observation_facts(sample: dict[str, Any], dia_events: dict[str, int]) -> list[str]:
    """Every observation fact whose cited turn was ingested (all of them without --turns)."""
    facts: list[str] = []
    for session in sample["observation"].values():
        for items in session.values():
            for fact in items:
                cited = fact[1] if isinstance(fact[1], list) else [fact[1]]
                ids = [d.strip() for c in cited for d in str(c).replace(",", ";").split(";")]
                if any(d in dia_events for d in ids):
                    facts.append(str(fact[0]))
    return facts


def object_lines(conn: sqlite3.Connection) -> tuple[list[str], int]:
    """(every object line, object characters) of the live objects the model made."""
    out: list[str] = []
    chars = 0
    for name, summary, body in conn.execute(
            "SELECT name, summary, body FROM objects WHERE redirect_to IS NULL"
            " AND status != 'archived' AND id != 'project:daily'"):
        chars += len(name) + len(summary or "") + len(body or "")
        out += [name, summary or ""]
        out += [_LABEL.sub("", line, count=1) for line in (body or "").splitlines()]
    return [line for line in out if line.strip()], chars


def _holds(line: set[str], fact: set[str]) -> bool:
    return bool(fact) and len(line & fact) >= SHARE * len(fact)


def fact_scores(conn: sqlite3.Connection, facts: list[str], conversation_chars: int
                ) -> dict[str, Any]:
    """fact recall, line precision and size (see the module doc), with their raw counts."""
    lines, chars = object_lines(conn)
    words = [content_words(line) for line in lines]
    fact_words = [content_words(f) for f in facts]
    recalled = sum(1 for f in fact_words if any(_holds(w, f) for w in words))
    judged = [w for w, line in zip(words, lines, strict=True)
              if len(w) >= 3 and line.strip().casefold() != "unknown"]
    precise = sum(1 for w in judged if any(_holds(w, f) or _holds(f, w) for f in fact_words))
    return {"fact_recall": recalled / max(1, len(facts)),
            "line_precision": precise / max(1, len(judged)),
            "size": chars / max(1, conversation_chars),
            "fact_raw": (recalled, len(facts), precise, len(judged), chars,
                         conversation_chars)}


def pooled(raws: list[tuple[int, ...]]) -> dict[str, float]:
    """The three shares over several conversations' summed counts."""
    recalled, facts, precise, judged, chars, conv = (sum(r[i] for r in raws) for i in range(6))
    return {"fact_recall": recalled / max(1, facts), "line_precision": precise / max(1, judged),
            "size": chars / max(1, conv)}
