"""Date phrases in a recall query ("5月2号", "on May 3, 2023", "in March 2023", "2023-05-03"),
read as calendar windows that an event's `occurred_at` (its local date) falls in or not.

Only explicit dates are read: relative ones ("last July", "yesterday") need a "now" the
question does not state. (An event's own relative phrases have one, the day it was said:
engine/recall/spoken.py reads them.) A month alone counts only after "in"/"during"/"of" or as
"N月" (so the verb "may" is not a month); a bare year is too coarse to be a window and is left
to words.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Protocol, TypeVar

T = TypeVar("T")
DAY_US = 86_400 * 1_000_000
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MONTH = "(" + "|".join(m[:3] + f"(?:{m[3:]})?" for m in MONTHS) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"
# A month by its Chinese numeral (五月, 十二月); not 月亮, 月光, 月饼…, nor a count (一个月).
_CJK_MONTH = r"(十[一二]?|[一二三四五六七八九])\s*月(?![亮光球饼色刊])"
# A day of the month in digits or numerals (3, 三, 十五, 二十五, 三十一).
_CJK_DAY = r"(\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "ymd"),
    # Numbers only: year first when it has four digits (2024.01.10, 2024/01/10); dotted
    # day-month-year otherwise (10.01.2024, the European form); slashed only when one side
    # cannot be a month (25/12/2023 day first, 12/25/2023 month first; 05/06/2023 is neither).
    (re.compile(r"(?<![\d.])(\d{4})\.(\d{1,2})\.(\d{1,2})(?![\d]|\.\d)"), "ymd"),
    (re.compile(r"(?<![\d/])(\d{4})/(\d{1,2})/(\d{1,2})(?![\d]|/\d)"), "ymd"),
    (re.compile(r"(?<![\d.])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\d]|\.\d)"), "dmy_num"),
    (re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d]|/\d)"), "slashed"),
    (re.compile(rf"\b{_MONTH}\s+{_DAY}(?:\s*,\s*|\s+){_YEAR}\b", re.I), "mdy"),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:\s*,\s*|\s+){_YEAR}\b", re.I), "dmy"),
    (re.compile(rf"\b{_MONTH}\s+{_YEAR}\b", re.I), "my"),
    (re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*,?\s*\d)", re.I), "md"),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b", re.I), "dm"),
    (re.compile(rf"\b(?:in|during|of)\s+{_MONTH}\b", re.I), "m"),
    (re.compile(r"(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月\s*(?:(\d{1,2})\s*[日号號])?"), "cjk"),
    (re.compile(rf"(?:(\d{{4}})\s*年\s*)?{_CJK_MONTH}\s*(?:{_CJK_DAY}\s*[日号號])?"),
     "cjk_numeral"),
)
CJK_NUMERALS = {ch: n for n, ch in enumerate("一二三四五六七八九十", 1)}


@dataclass(frozen=True)
class DateWindow:
    """A calendar day or month, in some year or in any year (year None)."""

    year: int | None
    month: int
    day: int | None

    def holds(self, occurred_at: str) -> bool:
        """Whether an ISO `occurred_at` (its local date, as written) falls in the window."""
        try:
            year, month, day = int(occurred_at[:4]), int(occurred_at[5:7]), int(
                occurred_at[8:10])
        except ValueError:
            return False
        return ((self.year is None or year == self.year) and month == self.month
                and (self.day is None or day == self.day))

    def days_in(self, years: Iterable[int]) -> Iterator[tuple[date, date]]:
        """The window's first and last day in each year it covers: its own year, else each of
        `years` (a year without the day, 2月29号 in 2023, has none)."""
        for year in [self.year] if self.year is not None else years:
            try:
                first = date(year, self.month, self.day or 1)
            except ValueError:
                continue
            yield first, first.replace(day=self.day or calendar.monthrange(year, self.month)[1])

    def overlaps(self, first: date, last: date) -> bool:
        """Whether a day from `first` to `last` (inclusive; a span of days an event speaks
        of) falls in the window."""
        return any(start <= last and first <= end
                   for start, end in self.days_in(range(first.year, last.year + 1)))

    def spans_us(self, years: Iterable[int]) -> list[tuple[int, int]]:
        """UTC microsecond ranges that hold the window in any offset (a day's slack each side),
        for the `years` given when the window names none. Integer arithmetic: a window in 9999
        or in year 1 is still one."""
        return [(day_us(first) - DAY_US, day_us(last) + 2 * DAY_US)
                for first, last in self.days_in(years)]


def day_us(day: date) -> int:
    """Microseconds since the epoch at the start of `day`, UTC (for occurred_us ranges)."""
    return (day.toordinal() - _EPOCH_ORDINAL) * DAY_US


def _month(name: str) -> int | None:
    """The month a name the patterns matched names. Case-folded as re.I matches: "ſep" (a long
    s) is September; lower() left it unknown, and the lookup raised StopIteration out of
    ingest and find. None when no month starts so."""
    return next((i for i, m in enumerate(MONTHS, 1) if m.startswith(name.casefold()[:3])),
                None)


def _cjk_numeral(text: str) -> int:
    """A number of at most two digits in digits or numerals: 一 … 九, 十, 十二, 二十五."""
    if text.isdigit():
        return int(text)
    tens, ten, ones = text.rpartition("十")
    if not ten:
        return CJK_NUMERALS[ones]
    return (CJK_NUMERALS[tens] if tens else 1) * 10 + (CJK_NUMERALS[ones] if ones else 0)


def _slashed(first: int, second: int) -> tuple[int, int] | None:
    """(month, day) of a slashed date, only when one side cannot be a month."""
    if first > 12 >= second:
        return second, first
    if second > 12 >= first:
        return first, second
    return None


def _window(kind: str, groups: tuple[str | None, ...]) -> DateWindow | None:
    g = [x or "" for x in groups]  # only a CJK date has optional parts, read as None below
    if kind == "cjk":
        year, month, day = (int(x) if x else None for x in groups)
    elif kind == "cjk_numeral":
        year, month, day = (int(g[0]) if g[0] else None, _cjk_numeral(g[1]),
                            _cjk_numeral(g[2]) if g[2] else None)
    elif kind == "dmy_num":
        year, month, day = int(g[2]), int(g[1]), int(g[0])
    elif kind == "slashed":
        read = _slashed(int(g[0]), int(g[1]))
        if read is None:
            return None
        year, (month, day) = int(g[2]), read
    elif kind == "ymd":
        year, month, day = int(g[0]), int(g[1]), int(g[2])
    elif kind == "mdy":
        year, month, day = int(g[2]), _month(g[0]), int(g[1])
    elif kind == "dmy":
        year, month, day = int(g[2]), _month(g[1]), int(g[0])
    elif kind == "my":
        year, month, day = int(g[1]), _month(g[0]), None
    elif kind == "md":
        year, month, day = None, _month(g[0]), int(g[1])
    elif kind == "dm":
        year, month, day = None, _month(g[1]), int(g[0])
    else:
        year, month, day = None, _month(g[0]), None
    if month is None or not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    if year is not None and not 1900 <= year <= 2999:
        return None
    try:  # a day the month does not have ("2月30号") is no window
        date(year or 2000, month, day or 1)
    except ValueError:
        return None
    return DateWindow(year, month, day)


class Finder(Protocol):
    """What read_spans scans a text with: a compiled pattern, or one tried at given starts."""

    def finditer(self, text: str, /) -> Iterator[re.Match[str]]: ...


def read_spans(
    text: str, rules: Sequence[tuple[Finder, Callable[[re.Match[str]], T | None]]],
) -> tuple[list[T], list[tuple[int, int]]]:
    """What `rules` read in `text`, each distinct reading once, and the character spans of
    the phrases read: a phrase is read by the first rule whose pattern matches it and whose
    reader makes something of it (None: a later, shorter rule may still read it), and a phrase
    already read is not read again in part."""
    taken: list[tuple[int, int]] = []
    found: list[T] = []
    for pattern, read in rules:
        for match in pattern.finditer(text):
            if any(a < match.end() and match.start() < b for a, b in taken):
                continue
            reading = read(match)
            if reading is not None:
                taken.append(match.span())
                if reading not in found:
                    found.append(reading)
    return found, sorted(taken)


def first_readings(
    text: str, rules: Sequence[tuple[Finder, Callable[[re.Match[str]], T | None]]],
) -> list[T]:
    """What `rules` read in `text`, each distinct reading once (read_spans without spans)."""
    return read_spans(text, rules)[0]


@dataclass(frozen=True)
class DateMentions:
    """The explicit dates a query names and where: `spans` are the (start, end) character
    ranges of the phrases read, in order, so the words they consume can be left out of the
    query's lexical terms (the date answers for them)."""

    windows: tuple[DateWindow, ...]
    spans: tuple[tuple[int, int], ...]


_QUERY_RULES = [(pattern, lambda m, kind=kind: _window(kind, m.groups()))
                for pattern, kind in _PATTERNS]


def date_mentions(text: str) -> DateMentions:
    """The explicit dates a query names, each once, longest phrase first (a phrase already
    read is not read again as a shorter one: "May 3, 2023" is not also "May 3"), with the
    spans of the phrases that named them."""
    windows, spans = read_spans(text, _QUERY_RULES)
    return DateMentions(tuple(windows), tuple(spans))


def date_windows(text: str) -> list[DateWindow]:
    """The explicit dates a query names, each once, longest phrase first."""
    return list(date_mentions(text).windows)


# -- dates written inside text, as index tokens ------------------------------------------------
# A date an event's text mentions ("moved to 2026-12-16", "12月16日") is indexed as a token no
# word can be (unicode61 keeps it whole), so a query naming that date finds the event by its
# text, not only by its own timestamp. One token per reading a query can ask for: the day in
# its year, the day in any year, the month in its year.
DAY_TOKEN = "mvdateday"
ANY_YEAR_TOKEN = "mvdatemd"
MONTH_TOKEN = "mvdatemon"
# Every kind a query reads, month-only mentions too ("in May", "五月"): a turn that says it
# carries the month in the year it was written.
_MENTION_RULES = [(pattern, lambda m, kind=kind: _window(kind, m.groups()))
                  for pattern, kind in _PATTERNS]
# Every pattern above needs 月 (the Chinese forms), two numbers joined by - . or / (the
# numeric forms: 2026-12-16, 10.01.2024, 25/12/2023) or a month's name (the English forms),
# which stands at a word's start, followed by no letter or digit ("May 3", "3rd of May", "in
# May.", never "decide" or "Mayfair"): a turn runs only the patterns whose need it holds, and
# most turns (a number alone included: "#12", "3 people") none. Measured on a restore of
# 100,000 numbered turns, the patterns were 2/3 of the recall index's time.
_NEEDS = {"cjk": "月", "cjk_numeral": "月", "ymd": "digits", "dmy_num": "digits",
          "slashed": "digits"}  # every other kind: "month"
_NEED_FOUND = {"月": re.compile("月"), "digits": re.compile(r"\d[-./]\d")}
_MONTH_WORD = re.compile(rf"\b{_MONTH}(?!\w)", re.I)
_RULES_NEEDING = [(_NEEDS.get(kind, "month"), rule)
                  for (_, kind), rule in zip(_PATTERNS, _MENTION_RULES, strict=True)]
# And where a pattern's match can begin. The patterns open with a lookbehind, a word boundary
# or a case-blind month's name, so sre finds no first character to skip to and tries every
# position of the text, pattern after pattern (the English ones, each scanning the whole turn,
# were most of the date tokens' time on a restore). A numeric date, and "3rd of May", begin a
# run of digits; "May 3" and "May 2023" a month's name (the need's matches): each is tried
# only there (`_Tried`). The readings are the same: no match can begin anywhere else.
_DIGIT_RUN = re.compile(r"\d+")
_STARTS_AT = {"ymd": "digits", "dmy_num": "digits", "slashed": "digits", "dmy": "digits",
              "dm": "digits", "mdy": "month", "my": "month", "md": "month"}
_RULE_STARTS = [_STARTS_AT.get(kind) for _, kind in _PATTERNS]


class _Tried:
    """A pattern tried only at the given starts (in order), reading what its finditer reads
    when no match can begin elsewhere."""

    def __init__(self, pattern: re.Pattern[str], starts: list[int]) -> None:
        self.pattern = pattern
        self.starts = starts

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        end = 0
        for start in self.starts:
            if start >= end and (match := self.pattern.match(text, start)):
                yield match
                end = match.end()


def may_name_in_words(window: DateWindow, text: str) -> bool:
    """Whether `text` may name a date of `window` without its day's or year's digits: a day
    only in Chinese numerals (十二月二十五号), a month also by its name ("in May"). A quick
    test (substring searches) before the patterns run."""
    if "月" in text:
        return True
    return window.day is None and MONTHS[window.month - 1][:3] in text.lower()


def window_token(window: DateWindow) -> str | None:
    """The index token that a text mentioning a date inside `window` carries (None for a month
    in any year: too broad to look up)."""
    if window.day is None:
        return f"{MONTH_TOKEN}{window.year:04d}{window.month:02d}" if window.year else None
    if window.year is None:
        return f"{ANY_YEAR_TOKEN}{window.month:02d}{window.day:02d}"
    return f"{DAY_TOKEN}{window.year:04d}{window.month:02d}{window.day:02d}"


def mention_readings(text: str) -> list[DateWindow]:
    """first_readings(text, _MENTION_RULES), running only the patterns whose need (_NEEDS)
    the text holds: a pattern left out could not have matched, so the readings are the same."""
    months = [found.start() for found in _MONTH_WORD.finditer(text)]
    held = {need for need, found in _NEED_FOUND.items() if found.search(text)}
    if months:
        held.add("month")
    if not held:
        return []
    starts = {"month": months, "digits": [found.start() for found in _DIGIT_RUN.finditer(text)]}
    rules: list[tuple[Finder, Callable[[re.Match[str]], DateWindow | None]]] = []
    for (need, (pattern, read)), kind in zip(_RULES_NEEDING, _RULE_STARTS, strict=True):
        if need in held:
            rules.append((pattern if kind is None else _Tried(pattern, starts[kind]), read))
    return first_readings(text, rules)


def mention_tokens(text: str, year: int | None) -> list[str]:
    """The date tokens of the dates `text` mentions (lower-case, sorted); a mention without a
    year is read in `year` (the year the text was written), or in no year when None."""
    tokens: set[str] = set()
    for found in mention_readings(text):
        full = DateWindow(found.year or year, found.month, found.day)
        if full.year is not None:
            tokens.add(window_token(DateWindow(full.year, full.month, None)) or "")
        if full.day is not None:
            tokens.add(window_token(DateWindow(None, full.month, full.day)) or "")
            if full.year is not None:
                tokens.add(window_token(full) or "")
    return sorted(tokens - {""})
