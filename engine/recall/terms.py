"""How a recall query becomes terms: the same analysis as the index (recall/index.py),
stopwords dropped when other terms remain, a query of at most MAX_QUERY_CHARS chars.

A query of more than MAX_TERMS terms keeps the MAX_TERMS most informative ones, whatever their
position (`keep_informative`): the rarest in this memory, so a question after a paragraph of
small talk keeps its question, not the first terms the parser met (issue 36).

The words of a date the query names ("May 3rd", "12月16日") are no terms: the date answers for
them (an event's own day, the date mentions indexed in text), so the verb "may" of another turn
that day does not outrank the answer. A date counts as another term for the stopword rule."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property

from ..base.errors import InputError
from ..dates.reader import DateMentions, DateWindow, date_mentions
from ..timeline.fragments import find_lone_surrogate
from .index import CJK_CHARS, CJK_RUN, fold, fts_phrase
from .stem import MIN_WORD, root, stem

MAX_QUERY_CHARS = 1_000
MAX_TERMS = 32
PREFIX_CREDIT = 0.5
PREFIX_QUERY_WORDS = 3  # a query of at most this many words and CJK runs: words are prefixes

_QUERY_TOKEN = re.compile(f"([{CJK_CHARS}]+)|((?:(?![{CJK_CHARS}])[^\\W_])+)")
# Where a sentence of a query ends (on folded text: NFKC made "？：；！" ASCII); a "." only
# before a space or the end ("3.5" and "e.g" stay whole).
_SENTENCE_END = re.compile(r"[?!;:\n\u3002]+|(?<=[^\W\d_]{3})\.+(?=\s|$)")
# A question that points back ("What was its name?", "那是哪一天？") asks about the sentence
# before it, which keeps its full weight.
_POINTS_BACK = re.compile(r"\b(?:it|its|they|them|there|then|that|those)\b|[它那]")
SMALL_TALK_WEIGHT = 0.1  # a term said only outside the query's questions (idf times this)

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

@dataclass(frozen=True)
class Term:
    """One query term. `fts` is its FTS5 MATCH expression, quoted so user text stays text."""

    text: str  # folded term as shown in `why`
    kind: str  # word | prefix | cjk (one token) | cjk1 (one CJK char: a prefix of tokens)
    fts: str
    credit: float = 0.0  # what a longer token starting with `text` counts for (0: nothing)
    stem: str = ""  # family key of an English word (recall/stem.py): its inflections match

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
    weights: Mapping[str, float] | None = None  # a term's idf times this (absent: 1)


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
    dates = date_mentions(query) if not date_words else DateMentions((), ())
    folded = fold(_blank(query, dates.spans))
    dated = bool(dates.windows)
    words: list[str] = []
    runs: list[str] = []
    asked, told = _sentences(folded)
    in_question: set[str] = set()  # words and CJK runs of the query's questions
    for match in _QUERY_TOKEN.finditer(folded):
        if match.group(1):
            runs.append(match.group(1))
        else:
            words.append(match.group(2))
        if told and asked[bisect.bisect_right(told, match.start()) - 1]:
            in_question.add(match.group(0))
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
    ordered = tuple(terms.values())
    prefixes = tuple(t.text for t in ordered if t.credit)
    return Query(query, ordered, tuple(dict.fromkeys(phrases)), None, prefixes, dates.windows,
                 _small_talk(ordered, in_question) if in_question else None)


# Where a query with several questions is cut into parts (query.memory_find gives each part its
# share of the hits): after a "?", before 另外/还有/"and also"/"also,", and before ", and" that a
# question word follows.
_PART_BREAK = re.compile(
    r"(?<=[?？])\s*|[,，;；]?\s*(?=另外|还有)|[,;]?\s+(?=and also\b|also,)"
    r"|,\s*(?=and\s+(?:what|when|where|who|whom|whose|which|how|why)\b)", re.IGNORECASE)
# A part asks when it holds one of these (a part that does not ask joins the next one).
_ASKS = re.compile(r"\b(?:what|when|where|who|whom|whose|which|how|why)\b|什么|哪|谁|几|多少|怎么"
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


def _sentences(folded: str) -> tuple[list[bool], list[int]]:
    """Whether each sentence of `folded` asks (ends with "?"; before the last such sentence,
    also with a question word or as a yes/no question: _asks), and where each starts; ([], [])
    when no sentence asks or one sentence is all there is."""
    asked, starts, start = [], [], 0
    tags: list[bool] = []  # a "?" sentence that does not ask by its words ("…, right?")
    for end in _SENTENCE_END.finditer(folded):
        if folded[start : end.start()].strip():
            asked.append("?" in end.group())
            tags.append(asked[-1] and not _asks(folded[start : end.start()]))
            starts.append(start)
            if asked[-1] and len(asked) > 1 and _POINTS_BACK.search(folded, start, end.start()):
                asked[-2] = True
        start = end.end()
    if folded[start:].strip():
        asked.append(False)
        starts.append(start)
    last = max((i for i, a in enumerate(asked) if a), default=-1)
    # a tag question before the last question is small talk; the last one is the question
    asked = [a and (i == last or not (i < len(tags) and tags[i])) for i, a in enumerate(asked)]
    return (asked, starts) if any(asked) and not all(asked) else ([], [])


# A yes/no question starts with an auxiliary ("Did Dana move?", "Can you tell me…?").
_AUXILIARY_START = re.compile(r"\s*(?:do|does|did|is|are|was|were|am|can|could|would|will|"
                              r"shall|should|may|might|must|has|have|had)\b")


def _asks(sentence: str) -> bool:
    """Does a sentence that ends with "?" ask by its words: a question word or particle, or a
    yes/no question? A tag question ("…, but it's worth a try, right?", "okay?") does not:
    before another question it is small talk (a tag question alone is the question: "I don't
    like working out, right?")."""
    return bool(_ASKS.search(sentence) or _AUXILIARY_START.match(sentence))


def _small_talk(terms: tuple[Term, ...], in_question: set[str]) -> dict[str, float]:
    """SMALL_TALK_WEIGHT for each term that no question of the query says.

    Trigger: a query with a question ("...?") and other sentences. Why: the small talk before
    a question ("Hope your week went well! Anyway, where did Dana move?") shares words with
    many turns and pushed the answer out of the top 10 (bench/recall.py --noisy); weighed
    down, not dropped, it still tells two equal answers apart."""
    said = set(in_question)  # its words and lone CJK characters, and its runs' bigrams
    for piece in in_question:
        if CJK_RUN.fullmatch(piece):
            said.update(piece[i : i + 2] for i in range(len(piece) - 1))
    return {t.text: SMALL_TALK_WEIGHT for t in terms if t.text not in said}


def keep_informative(query: Query, df: Mapping[str, float]) -> Query:
    """`query` with at most MAX_TERMS terms: first the terms this memory holds, then those it
    lacks; within each, the question's before the small talk's (`weights`), a lone CJK character
    after a bigram (which says more), and the lowest document frequency `df` first; the kept
    terms stay in query order. A CJK phrase stays while one
    of its bigrams does. A notice says how many terms were left out.

    Trigger: a question after small talk, or an agent's long query. Why: a cut by position kept
    the small talk and lost the question (issue 36)."""
    if len(query.terms) <= MAX_TERMS:
        return query

    weights = query.weights or {}

    def rank(term: Term) -> tuple[bool, bool, bool, float]:
        held = df.get(term.text, 0.0)
        return (held <= 0, term.text in weights, term.kind == "cjk1", held)

    kept = {t.text for t in sorted(query.terms, key=rank)[:MAX_TERMS]}
    terms = tuple(t for t in query.terms if t.text in kept)
    phrases = tuple(p for p in query.phrases
                    if any(p[i : i + 2] in kept for i in range(len(p) - 1)))
    notice = (f"query has {len(query.terms)} terms; searched the {MAX_TERMS} rarest in this "
              "memory")
    return replace(query, terms=terms, phrases=phrases, notice=notice,
                   prefixes=tuple(t.text for t in terms if t.credit))


def _blank(text: str, spans: tuple[tuple[int, int], ...]) -> str:
    """`text` with each span a space: the words a date consumed split no neighbours into one
    token ("我12月16日买" keeps "我" and "买", never the bigram "日买")."""
    for start, end in reversed(spans):
        text = text[:start] + " " + text[end:]
    return text

