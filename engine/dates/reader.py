"""Dates a text names, read in one place for every feature: the words (month and weekday names,
Chinese numerals, counts, relative days), the calendar arithmetic, and the patterns.

Three readings, one per question asked of a text:

- windows (`date_mentions`; `windows_in` and `mentions_in` read the same, quicker): the
  explicit dates a text names, as a day or a month in some year or in any year ("5月2号",
  "on May 3, 2023", "in March 2023", "2023-05-03", "10.01.2024", "Dec 29th", "the 29th of
  December", "in May", "五月"). Recall reads a query's and indexes an event's this way.
  Relative dates ("last July", "yesterday") need a "now" a question does not state. A month
  alone counts only after "in"/"during"/"of" or as "N月" (so the verb "may" is not a month); a
  bare year is too coarse to be a window.
- days (`find_dates`): each phrase that names one calendar day, resolved against the day the
  sentence was said ("next Tuesday", "周四的会改到下周二", "Jan 21", "in two weeks", "12月16日"):
  the builtin model's dated plans and changes.
- relative spans: the arithmetic (`week_of`, `month_of`, `last_weekday`, …) that recall's
  spoken phrases ("last Friday", "上周", "下个月", recall/spoken.py) resolve with, the same as
  the builtin's days ("last Friday" is one day for both).

Weeks start on Monday. Only the standard library (and base/patterns.py: a pattern compiles
when first used, not at import): a reading costs microseconds, so recall's index and queries
can afford it on every turn.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from functools import partial
from typing import Protocol, TypeVar

from ..base.patterns import lazy_compile

T = TypeVar("T")
Span = tuple[date, date]  # first and last day, inclusive
DAY_US = 86_400 * 1_000_000
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()

# -- the words ---------------------------------------------------------------------------------
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
CJK_NUMERALS = {ch: n for n, ch in enumerate("一二三四五六七八九十", 1)}
CJK_WEEKDAYS = "一二三四五六日天"  # 周一 … 周六, 周日 = 周天 (Sunday)
# Counts of days, weeks and months in words ("two weeks ago", "in a few days").
COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
          "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
          "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 4}
CJK_COUNTS = CJK_NUMERALS | {"两": 2, "几": 3}  # 两: two, 几: a few
# The counts in words as a pattern, longest first ("a couple of" before "a couple", "an" before
# "a"), any run of spaces between words.
COUNT_WORDS = "|".join(word.replace(" ", r"\s+") for word in sorted(COUNTS, key=len, reverse=True))
# Days named relative to the day of saying, in days from it.
RELATIVE_DAYS = {"the day after tomorrow": 2, "the day before yesterday": -2,
                 "today": 0, "tomorrow": 1, "yesterday": -1,
                 "今天": 0, "明天": 1, "后天": 2, "大后天": 3, "昨天": -1}

# A month by name: its first three letters, then optionally the rest ("dec", "december").
_MONTH_WORDS = "|".join(m[:3] + f"(?:{m[3:]})?" for m in MONTHS)
MONTH_NAME = f"({_MONTH_WORDS})"
# A weekday by name, in the short forms a day phrase may use ("Tues", "Thu", "Saturday").
WEEKDAY_NAME = r"(?:Mon|Tues?|Wed(?:nes)?|Thu(?:rs)?|Fri|Sat(?:ur)?|Sun)(?:day)?"
ORDINAL = r"(?:st|nd|rd|th)"


def month_number(name: str) -> int | None:
    """The month (1-12) a name names by its first three letters, case-folded as re.I matches:
    "ſep" (a long s) is September. None when no month starts so."""
    return next((i for i, m in enumerate(MONTHS, 1) if m.startswith(name.casefold()[:3])),
                None)


def cjk_numeral(text: str) -> int:
    """A number of at most two digits in digits or numerals: 一 … 九, 十, 十二, 二十五."""
    if text.isdigit():
        return int(text)
    tens, ten, ones = text.rpartition("十")
    if not ten:
        return CJK_NUMERALS[ones]
    return (CJK_NUMERALS[tens] if tens else 1) * 10 + (CJK_NUMERALS[ones] if ones else 0)


def count(word: str) -> int:
    """A count in digits or words ("3", "two", "a couple of")."""
    return int(word) if word.isdigit() else COUNTS[" ".join(word.lower().split())]


def month_day_of_slashes(first: int, second: int) -> tuple[int, int] | None:
    """(month, day) of a slashed date, only when one side cannot be a month: 25/12 is day
    first, 12/25 month first, 05/06 neither."""
    if first > 12 >= second:
        return second, first
    if second > 12 >= first:
        return first, second
    return None


# -- the calendar arithmetic -------------------------------------------------------------------
def day_at(said: date, offset: int) -> Span:
    """The day `offset` days from the day of saying, as a span of one day."""
    day = said + timedelta(days=offset)
    return day, day


def week_of(said: date, weeks: int) -> Span:
    """Monday to Sunday of the week `weeks` weeks from the day of saying's."""
    monday = said - timedelta(days=said.weekday()) + timedelta(weeks=weeks)
    return monday, monday + timedelta(days=6)


def month_of(said: date, months: int) -> Span:
    """The first and last day of the month `months` months from the day of saying's."""
    index = said.year * 12 + said.month - 1 + months
    first = date(index // 12, index % 12 + 1, 1)
    after = date((index + 1) // 12, (index + 1) % 12 + 1, 1)
    return first, after - timedelta(days=1)


def weekend_of(said: date, weeks: int) -> Span:
    """Saturday and Sunday of the week `weeks` weeks from the day of saying's."""
    saturday = said - timedelta(days=said.weekday()) + timedelta(days=5, weeks=weeks)
    return saturday, saturday + timedelta(days=1)


def weekday_in_week(said: date, weeks: int, weekday: int) -> date:
    """That weekday (0 Monday … 6 Sunday) of the week `weeks` weeks from the day of saying's:
    下周二 is (said, 1, 1)."""
    return week_of(said, weeks)[0] + timedelta(days=weekday)


def last_weekday(said: date, weekday: int) -> date:
    """The latest such weekday before the day of saying (1 to 7 days back): "last Friday"."""
    return said - timedelta(days=(said.weekday() - weekday - 1) % 7 + 1)


def next_weekday(said: date, weekday: int) -> date:
    """The first such weekday after the day of saying (1 to 7 days on): "next Friday"."""
    return said + timedelta(days=(weekday - said.weekday() - 1) % 7 + 1)


def coming_weekday(said: date, weekday: int) -> date:
    """That weekday this week if it is not past, else next week's: "this Friday" (the day of
    saying itself when it is a Friday)."""
    return said + timedelta(days=(weekday - said.weekday()) % 7)


def next_month_day(after: date, month: int, day: int) -> date | None:
    """The first `month`/`day` after the day `after` (a later year when this year's is not
    after it; 2月29号 in the next leap year), None when no year has it or none is left."""
    for year in range(after.year, min(after.year + 8, date.max.year) + 1):
        try:
            found = date(year, month, day)
        except ValueError:
            continue
        if found > after:
            return found
    return None


# -- windows: the explicit dates a text names --------------------------------------------------
_MONTH = MONTH_NAME + r"\.?"
_DAY = rf"(\d{{1,2}}){ORDINAL}?"
_YEAR = r"(\d{4})"
# A month by its Chinese numeral (五月, 十二月); not 月亮, 月光, 月饼…, nor a count (一个月).
_CJK_MONTH = r"(十[一二]?|[一二三四五六七八九])\s*月(?![亮光球饼色刊])"
# A day of the month in digits or numerals (3, 三, 十五, 二十五, 三十一).
_CJK_DAY = r"(\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_WINDOW_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy_compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "ymd"),
    # Numbers only: year first when it has four digits (2024.01.10, 2024/01/10); dotted
    # day-month-year otherwise (10.01.2024, the European form); slashed only when one side
    # cannot be a month (25/12/2023 day first, 12/25/2023 month first; 05/06/2023 is neither).
    (lazy_compile(r"(?<![\d.])(\d{4})\.(\d{1,2})\.(\d{1,2})(?![\d]|\.\d)"), "ymd"),
    (lazy_compile(r"(?<![\d/])(\d{4})/(\d{1,2})/(\d{1,2})(?![\d]|/\d)"), "ymd"),
    (lazy_compile(r"(?<![\d.])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\d]|\.\d)"), "dmy_num"),
    (lazy_compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d]|/\d)"), "slashed"),
    (lazy_compile(rf"\b{_MONTH}\s+{_DAY}(?:\s*,\s*|\s+){_YEAR}\b", re.I), "mdy"),
    (lazy_compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:\s*,\s*|\s+){_YEAR}\b", re.I), "dmy"),
    (lazy_compile(rf"\b{_MONTH}\s+{_YEAR}\b", re.I), "my"),
    (lazy_compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*,?\s*\d)", re.I), "md"),
    (lazy_compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b", re.I), "dm"),
    (lazy_compile(rf"\b(?:in|during|of)\s+{_MONTH}\b", re.I), "m"),
    (lazy_compile(r"(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月\s*(?:(\d{1,2})\s*[日号號])?"), "cjk"),
    (lazy_compile(rf"(?:(\d{{4}})\s*年\s*)?{_CJK_MONTH}\s*(?:{_CJK_DAY}\s*[日号號])?"),
     "cjk_numeral"),
)


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


def _window(kind: str, groups: tuple[str | None, ...]) -> DateWindow | None:
    g = [x or "" for x in groups]  # only a CJK date has optional parts, read as None below
    if kind == "cjk":
        year, month, day = (int(x) if x else None for x in groups)
    elif kind == "cjk_numeral":
        year, month, day = (int(g[0]) if g[0] else None, cjk_numeral(g[1]),
                            cjk_numeral(g[2]) if g[2] else None)
    elif kind == "dmy_num":
        year, month, day = int(g[2]), int(g[1]), int(g[0])
    elif kind == "slashed":
        read = month_day_of_slashes(int(g[0]), int(g[1]))
        if read is None:
            return None
        year, (month, day) = int(g[2]), read
    elif kind == "ymd":
        year, month, day = int(g[0]), int(g[1]), int(g[2])
    elif kind == "mdy":
        year, month, day = int(g[2]), month_number(g[0]), int(g[1])
    elif kind == "dmy":
        year, month, day = int(g[2]), month_number(g[1]), int(g[0])
    elif kind == "my":
        year, month, day = int(g[1]), month_number(g[0]), None
    elif kind == "md":
        year, month, day = None, month_number(g[0]), int(g[1])
    elif kind == "dm":
        year, month, day = None, month_number(g[1]), int(g[0])
    else:
        year, month, day = None, month_number(g[0]), None
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


Rule = tuple[Finder, Callable[[re.Match[str]], T | None]]


def read_spans(text: str, rules: Sequence[Rule[T]]) -> tuple[list[T], list[tuple[int, int]]]:
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


def first_readings(text: str, rules: Sequence[Rule[T]]) -> list[T]:
    """What `rules` read in `text`, each distinct reading once (read_spans without spans)."""
    return read_spans(text, rules)[0]


# Every window form, longest first, month-only mentions too ("in May", "五月").
def _window_of(kind: str, match: re.Match[str]) -> DateWindow | None:
    return _window(kind, match.groups())


WINDOW_RULES: list[Rule[DateWindow]] = [
    (pattern, partial(_window_of, kind)) for pattern, kind in _WINDOW_PATTERNS]


@dataclass(frozen=True)
class DateMentions:
    """The explicit dates a text names and where: `spans` are the (start, end) character
    ranges of the phrases read, in order, so the words they consume can be left out of a
    query's lexical terms (the date answers for them)."""

    windows: tuple[DateWindow, ...]
    spans: tuple[tuple[int, int], ...]


def date_mentions(text: str) -> DateMentions:
    """The explicit dates a text names, each once, longest phrase first (a phrase already
    read is not read again as a shorter one: "May 3, 2023" is not also "May 3"), with the
    spans of the phrases that named them."""
    windows, spans = read_spans(text, WINDOW_RULES)
    return DateMentions(tuple(windows), tuple(spans))


def date_windows(text: str) -> list[DateWindow]:
    """The explicit dates a text names, each once, longest phrase first."""
    return list(date_mentions(text).windows)


# Every window pattern needs 月 (the Chinese forms), two numbers joined by - . or / (the
# numeric forms: 2026-12-16, 10.01.2024, 25/12/2023) or a month's name (the English forms),
# which stands at a word's start, followed by no letter or digit ("May 3", "3rd of May", "in
# May.", never "decide" or "Mayfair"): a text runs only the patterns whose need it holds, and
# most turns (a number alone included: "#12", "3 people") none. Measured on a restore of
# 100,000 numbered turns, the patterns were 2/3 of the recall index's time.
_NEEDS = {"cjk": "月", "cjk_numeral": "月", "ymd": "digits", "dmy_num": "digits",
          "slashed": "digits"}  # every other kind: "month"
_NEED_FOUND = {"月": lazy_compile("月"), "digits": lazy_compile(r"\d[-./]\d")}
_MONTH_WORD = lazy_compile(rf"\b{_MONTH}(?!\w)", re.I)
_RULES_NEEDING = [(_NEEDS.get(kind, "month"), pattern, read)
                  for (pattern, kind), (_, read) in zip(_WINDOW_PATTERNS, WINDOW_RULES,
                                                         strict=True)]
# And where a pattern's match can begin. The patterns open with a lookbehind, a word boundary
# or a case-blind month's name, so sre finds no first character to skip to and tries every
# position of the text, pattern after pattern (the English ones, each scanning the whole turn,
# were most of the date tokens' time on a restore). Each is tried only where its match can
# begin (`_Tried`): a numeric date ("2026-12-16", "10.01.2024", "25/12/2023") at a run of 1, 2
# or 4 digits followed by - . or /; "3rd of May" at a run of 1 or 2 digits; "May 3" and
# "May 2023" at a month's name (`_month_starts`). The readings are the same: no match can
# begin anywhere else.
# (Each opens with a digit, so sre skips to the digits; a start found inside a run, or a run
# too long, only costs a try that fails.)
_NUMERIC_RUN = lazy_compile(r"\d+(?=[-./])")
_DAY_RUN = lazy_compile(r"\d{1,2}(?!\d)")
_STARTS_AT = {"ymd": "numeric", "dmy_num": "numeric", "slashed": "numeric", "dmy": "day",
              "dm": "day", "mdy": "month", "my": "month", "md": "month"}
_RULE_STARTS = [_STARTS_AT.get(kind) for _, kind in _WINDOW_PATTERNS]
# Where a month's name may start, looked for in the lower-cased text: its first three letters
# (one found inside another's, "janov", follows a letter: no word starts there). Case-blind
# matching (re.I) folds one other character to a letter of theirs, the long s ("ſep"), and
# lower() keeps it: a text holding it, or one whose lower case is longer (its positions would
# shift: "İ"), is scanned whole.
_MONTH_PREFIX = lazy_compile("|".join(m[:3] for m in MONTHS))
_FOLDED_ELSE = "ſ"


def _month_starts(text: str) -> list[int]:
    """Where _MONTH_WORD matches in `text` (its finditer's starts), trying it only where the
    lower-cased text holds a month's first three letters."""
    lowered = text.lower()
    if len(lowered) != len(text) or _FOLDED_ELSE in text:
        return [found.start() for found in _MONTH_WORD.finditer(text)]
    # a start inside an earlier match (finditer's are apart) is inside a word: no \b there
    return [found.start() for found in _MONTH_PREFIX.finditer(lowered)
            if _MONTH_WORD.match(text, found.start())]


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


def windows_in(text: str) -> list[DateWindow]:
    """first_readings(text, WINDOW_RULES), running only the patterns whose need (_NEEDS) the
    text holds, each only where a match can begin: a pattern left out, or a start skipped,
    could not have matched, so the readings are the same."""
    return first_readings(text, _rules_for(text))


def mentions_in(text: str) -> DateMentions:
    """date_mentions(text), read as windows_in reads: the same windows and the same spans
    (every match read is the same match), the patterns a text cannot match never run."""
    windows, spans = read_spans(text, _rules_for(text))
    return DateMentions(tuple(windows), tuple(spans))


def _rules_for(text: str) -> list[Rule[DateWindow]]:
    """WINDOW_RULES, in their order, less the patterns `text` cannot match, each of the rest
    tried only where its match can begin."""
    months = _month_starts(text)
    held = {need for need, found in _NEED_FOUND.items() if found.search(text)}
    if months:
        held.add("month")
    if not held:
        return []
    starts = {"month": months}
    if "digits" in held:
        starts["numeric"] = [found.start() for found in _NUMERIC_RUN.finditer(text)]
    if months:
        starts["day"] = [found.start() for found in _DAY_RUN.finditer(text)]
    rules: list[Rule[DateWindow]] = []
    for (need, pattern, read), kind in zip(_RULES_NEEDING, _RULE_STARTS, strict=True):
        if need in held:
            rules.append((pattern if kind is None else _Tried(pattern, starts[kind]), read))
    return rules


# -- days: each phrase that names one calendar day ---------------------------------------------
# A day phrase reads "Sept" too (a window does not: what recall indexes stays as it was).
_DAY_MONTH = f"(?:{_MONTH_WORDS}|sept)"
DATE_EN = lazy_compile(
    r"\b(?P<when>(?P<iso>\d{4}-\d{2}-\d{2})|"
    rf"(?P<m1>{_DAY_MONTH})\.?\s+(?P<d1>\d{{1,2}}){ORDINAL}?(?:,?\s+(?P<y1>\d{{4}}))?|"
    rf"(?P<d2>\d{{1,2}}){ORDINAL}?\s+(?:of\s+)?(?P<m2>{_DAY_MONTH})(?:,?\s+(?P<y2>\d{{4}}))?|"
    rf"(?P<step>next|this|last|on)\s+(?P<wd>{WEEKDAY_NAME})|"
    rf"(?P<rel>{'|'.join(k for k in RELATIVE_DAYS if k.isascii())})|"
    r"in\s+(?:a\s+week|(?P<n>two|three|four|five|six|\d+)\s+(?P<unit>days|weeks)))\b",
    re.IGNORECASE,
)
# A month and a day of the month in digits or Chinese numerals (5, 五, 12, 十二; 20, 二十).
ZH_MONTH_NUMBER = r"\d{1,2}|十[一二]?|[一二三四五六七八九]"
ZH_DAY_NUMBER = r"\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九]"
_ZH_NUMBER = ZH_DAY_NUMBER
DATE_ZH = lazy_compile(
    rf"(?P<when>(?:(?P<y>\d{{4}})\s*年\s*)?(?P<m>{ZH_MONTH_NUMBER})\s*月\s*"
    rf"(?P<d>{_ZH_NUMBER})\s*[日号]|"
    rf"(?P<iso>\d{{4}}-\d{{1,2}}-\d{{1,2}})|"
    rf"(?P<rel>{'|'.join(k for k in RELATIVE_DAYS if not k.isascii())})|"
    rf"(?<![每隔])(?P<wk>下下|下|这|本)?(?:个)?(?:周|星期|礼拜)(?P<wd>[{CJK_WEEKDAYS}]))")
# "12-16", "12/16": month first. Only where a day is expected ("moved to 12-16"): elsewhere
# such digits are as often a score, a range or a version.
NUMERIC_DAY = lazy_compile(r"(?<![\d./-])(?P<m>\d{1,2})[-/](?P<d>\d{1,2})(?![\d/-]|\.\d)")
# "09.12.2026": dotted day first with its year (the European form, as recall's windows read it).
DOTTED_DMY = lazy_compile(r"(?<![\d.])(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<y>\d{4})(?![\d]|\.\d)")
# A weekday by the names a day phrase reads: the whole name or its first three letters
# ("Tues" too); "Thurs", "Wednes", "Satur" are no day.
_WEEKDAY_WORDS = ({name: i for i, name in enumerate(WEEKDAYS)}
                  | {name[:3]: i for i, name in enumerate(WEEKDAYS)} | {"tues": 1})
# After "next", "this" or "last" these short names are as often the words ("the chair I last
# sat on", "this sun"): a day only after "on" ("on Sat").
_WORDS_TOO = {"sat", "sun", "wed"}
_WEEKS_ON_ZH = {"下下": 2, "下": 1}  # 这周三, 本周三, 周三: this week's


@dataclass(frozen=True)
class Dated:
    """A date phrase in a sentence: where it is, as said, and the day it names."""

    start: int
    end: int
    said: str
    day: date


# A day of the month said alone, the month understood: the next such day from the day of
# saying ("Piano recital on the 26th", "retro moved to the 5th", "5号交房租"), or next month's
# ("下个月3号"). English after a word that takes a day; Chinese right before 号 and not a
# number's other uses (3号楼, 5号线, 2号床, "05 号 runner": a label, not a day).
_DAY_ALONE = lazy_compile(
    r"\b(?:on|by|to|until|till|for|before|after)\s+the\s+(?P<de>\d{1,2})(?:st|nd|rd|th)\b"
    r"(?!\s+(?:of\b|(?i:" + _MONTH_WORDS + r")\b))|"
    r"(?:(?P<nm>下个?月)|(?<![月\d一二三四五六七八九十]))"
    r"(?P<dz>[1-9]\d?|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])号"
    r"(?![楼线床门房位码店口厅馆车桌机台场院]|\s*[A-Za-z0-9])")


def find_dates(text: str, said_on: date | None, numeric: bool = False) -> list[Dated]:
    """Every phrase of `text` that names one calendar day, in order (with `numeric`, also a
    bare "12-16"), relative to `said_on`, the day the sentence was said: without it a relative
    phrase ("next Tuesday", "明天") names no day, and a year left unsaid is today's. A phrase
    that names no single day ("next month", "this summer") gives no date."""
    out = [d for m in DATE_ZH.finditer(text) if (d := _day_zh(m, said_on))]
    out += [d for m in DOTTED_DMY.finditer(text) if (d := _day_zh(m, said_on))]
    if numeric:
        out += [d for m in NUMERIC_DAY.finditer(text) if (d := _numeric_day(m, said_on))
                and not any(o.start <= m.start() < o.end for o in out)]
    taken = [(d.start, d.end) for d in out]
    out += [d for m in DATE_EN.finditer(text)
            if not any(a < m.end() and m.start() < b for a, b in taken)
            and (d := _day_en(m, said_on))]
    taken = [(d.start, d.end) for d in out]
    out += [d for m in _DAY_ALONE.finditer(text)
            if not any(a < m.end() and m.start() < b for a, b in taken)
            and (d := _day_alone(m, said_on))]
    return sorted(out, key=lambda d: d.start)


def _numeric_day(m: re.Match[str], said_on: date | None) -> Dated | None:
    """A bare "12/16" month first, as said; "15/12" day first, since 15 cannot be a month."""
    first, second = int(m.group("m")), int(m.group("d"))
    if first <= 12:
        return _day_zh(m, said_on)
    if second > 12:
        return None
    swapped = re.match(r"(?P<m>\d+)\D(?P<d>\d+)", f"{second}/{first}")
    assert swapped is not None
    dated = _day_zh(swapped, said_on)
    return None if dated is None else Dated(m.start(), m.end(), m.group(), dated.day)


def _day_alone(m: re.Match[str], said_on: date | None) -> Dated | None:
    """The day a day of the month said alone names: the next one from `said_on` (that day
    itself included), or next month's after 下个月; None without the day of saying."""
    if said_on is None:
        return None
    number = int(m.group("de")) if m.group("de") else cjk_numeral(m.group("dz"))
    year, month = said_on.year, said_on.month
    if m.group("nm") or number < said_on.day:
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    try:
        day = date(year, month, number)
    except ValueError:  # "the 31st" in a month of 30 days: no day, not a guess
        return None
    start = m.start("de") if m.group("de") else m.start()
    return Dated(start, m.end(), text_of(m, start), day)


def text_of(m: re.Match[str], start: int) -> str:
    """What the match says from `start` on."""
    return m.string[start:m.end()]


def _day_zh(m: re.Match[str], said_on: date | None) -> Dated | None:
    base = said_on or date.today()
    found = m.groupdict()
    try:
        if found.get("iso"):
            day = date(*(int(part) for part in m.group("iso").split("-")))
        elif found.get("m"):
            year = int(found.get("y") or base.year)
            day = date(year, cjk_numeral(m.group("m")), cjk_numeral(m.group("d")))
            if not found.get("y") and said_on and day < said_on - timedelta(days=60):
                day = date(year + 1, day.month, day.day)  # "1月21日" said in December
        elif said_on is None:  # relative: no day without the day of saying
            return None
        elif m.group("rel"):
            day = said_on + timedelta(days=RELATIVE_DAYS[m.group("rel")])
        else:
            day = weekday_in_week(said_on, _WEEKS_ON_ZH.get(m.group("wk") or "", 0),
                                  min(CJK_WEEKDAYS.index(m.group("wd")), 6))
    except ValueError:
        return None
    return Dated(m.start(), m.end(), m.group(), day)


def _day_en(m: re.Match[str], said_on: date | None) -> Dated | None:
    said = m.group("when")
    absolute = bool(re.search(r"\d{4}", said)) or bool(re.match(r"\d|" + _DAY_MONTH, said,
                                                                re.I))
    if said_on is None and not absolute:
        return None
    try:
        day = _named_day(m, said_on or date.today())
    except (ValueError, OverflowError):  # "Feb 31", a year past 9999: no day, not an error
        return None
    return None if day is None else Dated(m.start("when"), m.end("when"), said, day)


def _named_day(m: re.Match[str], base: date) -> date | None:
    """The day an English day phrase names, from `base` (the day of saying); a day of the
    month without its year is the next one after `base`."""
    if m.group("iso"):
        return date.fromisoformat(m.group("iso"))
    month, day, year = (m.group("m1"), m.group("d1"), m.group("y1")) if m.group("m1") else (
        m.group("m2"), m.group("d2"), m.group("y2"))
    if month:
        number = month_number(month)
        if number is None or not 1 <= int(day) <= 31:
            return None
        return date(int(year), number, int(day)) if year else next_month_day(
            base, number, int(day))
    if m.group("wd"):
        word, step = m.group("wd").lower(), m.group("step").lower()
        weekday = _WEEKDAY_WORDS.get(word)
        if weekday is None or (word in _WORDS_TOO and step != "on"):
            return None
        find = {"last": last_weekday, "this": coming_weekday}.get(step, next_weekday)
        return find(base, weekday)
    if m.group("rel"):
        return base + timedelta(days=RELATIVE_DAYS[m.group("rel").lower()])
    if m.group("unit") is None:  # "in a week"
        return base + timedelta(weeks=1)
    ahead = count(m.group("n"))
    return base + (timedelta(days=ahead) if m.group("unit").lower() == "days"
                   else timedelta(weeks=ahead))
