"""How a recall query becomes terms: the same analysis as the index (recall/index.py),
stopwords dropped when other terms remain, a query of at most MAX_QUERY_CHARS chars.

A query of more than MAX_TERMS terms keeps the MAX_TERMS most informative ones, whatever their
position (`keep_informative`): the rarest in this memory, so a question after a paragraph of
small talk keeps its question, not the first terms the parser met.

Every term of the query weighs by its informativeness in this memory (its idf, rank.Stats), the
same wherever it stands: no term weighs less for lying outside a sentence ending in "?". A
dialogue's last turns carry their content in statements as often as in the question.

The words of a date the query names ("May 3rd", "12月16日") are no terms: the date answers for
them (an event's own day, the date mentions indexed in text), so the verb "may" of another turn
that day does not outrank the answer. A date counts as another term for the stopword rule."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property

from ..base.errors import InputError
from ..base.patterns import lazy_compile
from ..dates.reader import DateMentions, DateWindow, mentions_in
from ..timeline.fragments import find_lone_surrogate
from .index import CJK_CHARS, fold, fts_phrase
from .stem import MIN_WORD, root, stem

MAX_QUERY_CHARS = 1_000
MAX_TERMS = 32
PREFIX_CREDIT = 0.5
PREFIX_QUERY_WORDS = 3  # a query of at most this many words and CJK runs: words are prefixes

_QUERY_TOKEN = lazy_compile(f"([{CJK_CHARS}]+)|((?:(?![{CJK_CHARS}])[^\\W_])+)")
# Function words dropped from a query that has other terms ("the Who" keeps both).
STOPWORDS = frozenset("""
a an the and or but if of at by for with about against between into through during before after
above below to from up down in out on off over under again further then once here there when where
why how all any both each few more most other some such no nor not only own same so than too very
s t can will just don should now i me my myself we our ours ourselves you your yours yourself
yourselves he him his himself she her hers herself it its itself they them their theirs themselves
what which who whom this that these those am is are was were be been being have has had having do
does did doing would could ever
""".split())
# Chinese function characters: a query bigram made only of these ("我们", "什么", "它的") is
# dropped when the query has other terms, like an English stopword.
CJK_FUNCTION_CHARS = frozenset(
    "的了是我你他她它们在和与吗呢吧啊呀也都就还又很这那个不有过着把被给对从于而之其么什怎哪谁哦嗯啦些该会能可要"
)
# Every content character of a longer CJK run is a term too (kind cjk1, weighed by its idf like
# any term), beside the run's bigrams: a turn that shares only characters with the query
# ("腿疼" against "腿有点疼") still scores, as a BM25 over unigrams and bigrams scores it.
CJK_CHAR_TERMS = True
# ... when the query has at least this many other terms: a name or a keyword ("张伟", "张小明")
# still lists only events that hold it, and ranks the name said whole first.
CHAR_TERMS_MIN = 3
MAX_CHAR_TERMS = 16  # a run's characters kept as terms, the rarest in this memory (rarest_chars)

@dataclass(frozen=True)
class Term:
    """One query term. `fts` is its FTS5 MATCH expression, quoted so user text stays text."""

    text: str  # folded term as shown in `why`
    kind: str  # word | prefix | cjk (one token) | cjk1 (one CJK char: a prefix of tokens)
    fts: str
    credit: float = 0.0  # what a longer token starting with `text` counts for (0: nothing)
    stem: str = ""  # family key of an English word (recall/stem.py): its inflections match
    in_run: bool = False  # a cjk1 character of a longer run (CJK_CHAR_TERMS): weighs, events only

    @cached_property  # read per term for every text scored (tens of thousands a find)
    def needle(self) -> str:
        """What every matching token starts with: the family's root, else the term."""
        if not self.stem:
            return self.text
        common = root(self.stem)
        return common if self.text.startswith(common) else self.text


@dataclass(frozen=True)
class Query:
    """A parsed query: the terms to look up and the CJK phrases that earn a bonus when whole."""

    text: str
    terms: tuple[Term, ...]
    phrases: tuple[str, ...]
    notice: str | None = None
    prefixes: tuple[str, ...] = ()  # terms that also match longer tokens they start
    windows: tuple[DateWindow, ...] = ()  # the dates it names (their words are no terms)


def parse_query(query: object, date_words: bool = False) -> Query:
    """Split user text into terms. Any input is text: FTS5 syntax in it is quoted, never run.

    `date_words` keeps the words of the dates the query names as terms (and reads no dates):
    objects have no date index, so their words are the only way a date finds an object.

    Raises InputError for a non-string, an empty query, one over MAX_QUERY_CHARS chars or one
    that is not valid Unicode; a query of only punctuation parses to no terms (an empty answer).
    """
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InputError("query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(
            f"query is {len(query):,} chars; recall takes at most {MAX_QUERY_CHARS:,} "
            "(search for the distinctive words instead)"
        )
    bad = find_lone_surrogate(query)
    if bad is not None:
        raise InputError(f"query has a lone surrogate at char {bad}: not valid Unicode text")
    dates = mentions_in(query) if not date_words else DateMentions((), ())
    folded = fold(_blank(query, dates.spans))
    dated = bool(dates.windows)
    words: list[str] = []
    runs: list[str] = []
    for match in _QUERY_TOKEN.finditer(folded):
        if match.group(1):
            runs.append(match.group(1))
        else:
            words.append(match.group(2))
    content = [w for w in words if w not in STOPWORDS]
    if content or runs or dated:
        words = content
    terms: dict[str, Term] = {}
    short = len(words) + len(runs) <= PREFIX_QUERY_WORDS  # a name or a few words
    for word in words:
        key = stem(word) if len(word) >= MIN_WORD and word.isascii() else ""
        if short and len(word) >= 2:
            terms.setdefault(word, Term(word, "prefix", fts_phrase(word) + "*", 1.0, key))
        else:  # a longer word found inside a longer one ("paint": "painter") counts half
            credit = PREFIX_CREDIT if len(word) >= 4 else 0.0
            terms.setdefault(word, Term(word, "word", fts_phrase(word), credit, key))
    phrases: list[str] = []
    pairs: list[str] = []
    singles = [r for r in runs if len(r) == 1]
    for run in singles:
        if run not in CJK_FUNCTION_CHARS or (len(singles) == len(runs) and not words
                                             and not dated):
            terms.setdefault(run, Term(run, "cjk1", fts_phrase(run) + "*", 1.0))
    for run in runs:
        if len(run) == 1:
            continue
        if len(run) > 2:
            phrases.append(run)
        pairs += [run[i : i + 2] for i in range(len(run) - 1)]
    content_pairs = [p for p in pairs if not set(p) <= CJK_FUNCTION_CHARS]
    for pair in content_pairs if content_pairs or words or dated else pairs:
        terms.setdefault(pair, Term(pair, "cjk", fts_phrase(pair)))
    if CJK_CHAR_TERMS and len(terms) >= CHAR_TERMS_MIN:
        for run in runs:
            for char in run if len(run) > 1 else ():
                if char not in CJK_FUNCTION_CHARS:
                    terms.setdefault(char, Term(char, "cjk1", fts_phrase(char) + "*", 1.0,
                                                in_run=True))
    ordered = tuple(terms.values())
    prefixes = tuple(t.text for t in ordered if t.credit)
    return Query(query, ordered, tuple(dict.fromkeys(phrases)), None, prefixes, dates.windows)


# Where a query with several questions is cut into parts (query.memory_find gives each part its
# share of the hits): after a "?", before 另外/还有/"and also"/"also,", and before ", and" that a
# question word follows.
_PART_BREAK = lazy_compile(
    r"(?<=[?？])\s*|[,，;；]?\s*(?=另外|还有)|[,;]?\s+(?=and also\b|also,)"
    r"|,\s*(?=and\s+(?:what|when|where|who|whom|whose|which|how|why)\b)", re.IGNORECASE)
# A part asks when it holds one of these (a part that does not ask joins the next one).
_ASKS = lazy_compile(r"\b(?:what|when|where|who|whom|whose|which|how|why)\b|什么|哪|谁|几|多少|怎么"
                     r"|为什么|吗|呢", re.IGNORECASE)
MAX_PARTS = 3


def question_parts(text: str) -> list[str]:
    """The questions of `text` when it asks several ("我哥的手机号是多少？另外，那个读书会在
    哪里办？", "What is X, and when did Y ...?"); [text] when it asks one. Small talk or a
    statement before a question stays with it; past MAX_PARTS, the rest joins the last part."""
    pieces = [p for p in _PART_BREAK.split(text) if p and p.strip(" ,，;；")]
    parts: list[str] = []
    pending: list[str] = []
    for piece in pieces:
        pending.append(piece.strip())
        if _ASKS.search(piece):
            parts.append(" ".join(pending))
            pending = []
    if not parts:
        return [text]
    if pending:
        parts[-1] = " ".join([parts[-1], *pending])
    if len(parts) > MAX_PARTS:
        parts[MAX_PARTS - 1 :] = [" ".join(parts[MAX_PARTS - 1 :])]
    return parts


def keep_informative(query: Query, df: Mapping[str, float]) -> Query:
    """`query` with at most MAX_TERMS terms (a run's characters aside: rarest_chars keeps
    those): first the terms this memory holds, then those it lacks; within each, a lone CJK
    character after a bigram (which says more), and the lowest document frequency `df` first;
    the kept terms stay in query order. A CJK phrase stays while one of its bigrams does. A
    notice says how many terms were left out.

    Trigger: a question after small talk, a dialogue's last turns, or an agent's long query.
    Why: a cut by position kept the small talk and lost the question. Informativeness, not
    punctuation: in a dialogue the content often sits in a statement and the "?" is small
    talk ("... have you ever tried it?")."""
    counted = [t for t in query.terms if not t.in_run]
    if len(counted) <= MAX_TERMS:
        return query

    def rank(term: Term) -> tuple[bool, bool, float]:
        held = df.get(term.text, 0.0)
        return (held <= 0, term.kind == "cjk1", held)

    kept = {t.text for t in sorted(counted, key=rank)[:MAX_TERMS]}
    terms = tuple(t for t in query.terms if t.text in kept or t.in_run)
    phrases = tuple(p for p in query.phrases
                    if any(p[i : i + 2] in kept for i in range(len(p) - 1)))
    notice = (f"query has {len(counted)} terms; searched the {MAX_TERMS} rarest in this "
              "memory")
    return replace(query, terms=terms, phrases=phrases, notice=notice,
                   prefixes=tuple(t.text for t in terms if t.credit))


def rarest_chars(query: Query, df: Mapping[str, float], keep: int | None = None) -> Query:
    """`query` with at most `keep` (MAX_CHAR_TERMS) of its runs' characters: those this
    memory holds before those it lacks, the lowest document frequency `df` first; every other
    term as it was, all in query order.

    Why: a character is a weak term (a bigram says more), and each one costs a lookup and a
    count in every text scored; the rarest few carry what characters add."""
    keep = MAX_CHAR_TERMS if keep is None else keep
    chars = [t for t in query.terms if t.in_run]
    if len(chars) <= keep:
        return query
    kept = {t.text for t in sorted(chars, key=lambda t: (df.get(t.text, 0.0) <= 0,
                                                         df.get(t.text, 0.0)))[:keep]}
    terms = tuple(t for t in query.terms if not t.in_run or t.text in kept)
    return replace(query, terms=terms, prefixes=tuple(t.text for t in terms if t.credit))


def without_run_chars(query: Query) -> Query:
    """`query` without its runs' characters: what objects are searched with (a name, an alias
    or a summary is matched by its bigrams; their characters would only cost lookups)."""
    if not any(t.in_run for t in query.terms):
        return query
    terms = tuple(t for t in query.terms if not t.in_run)
    return replace(query, terms=terms, prefixes=tuple(t.text for t in terms if t.credit))


def _blank(text: str, spans: tuple[tuple[int, int], ...]) -> str:
    """`text` with each span a space: the words a date consumed split no neighbours into one
    token ("我12月16日买" keeps "我" and "买", never the bigram "日买")."""
    for start, end in reversed(spans):
        text = text[:start] + " " + text[end:]
    return text

