"""The days an event's text speaks of, relative to the day it was said: "yesterday", "next
month", "last Friday", "上周", "下个月". A question that names a date ("in September 2023",
"5月2号") asks about what happened then, and a turn said on August 31 about "a trip next month"
is about September, though it was not said in it.

Only phrases that name a day, a week or a month relative to the day of saying are read ("last
year" and seasons are too coarse to lift an event for a date); each becomes an inclusive span of
days. Weeks start on Monday.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from functools import partial

from ..base.patterns import lazy_compile
from ..dates.reader import (
    CJK_COUNTS,
    CJK_WEEKDAYS,
    COUNT_WORDS,
    WEEKDAYS,
    Span,
    count,
    day_at,
    first_readings,
    last_weekday,
    month_of,
    next_weekday,
    week_of,
    weekday_in_week,
    weekend_of,
)

_COUNT = rf"(\d{{1,2}}|{COUNT_WORDS})"
# Chinese words that hold a date phrase's characters without being one:
# 目前天气 (前天), 然后天 (后天), 晚上月亮 / 这个月饼 (上月, 这个月), 马上周末 (上周),
# 路上周围 / 日本周末 (上周, 本周), 一本月刊 (本月), 上周一直 (上周一), 上上周 (上周)
_NOT_BEFORE_DAY = r"(?<![之以目提从此先然最其午])"
_NOT_AFTER_DAY = r"(?![气空])"
_NOT_STEP = r"(?<![马路登日上下])"  # 马上, 路上, 登上, 日本, 上上周 hold no step
_CJK_STEP = rf"{_NOT_STEP}(上|这|本|下)"
_NOT_MONTH = r"(?![亮光球饼色份刊])"
_NOT_WEEK = r"(?![围边])"
_NOT_WEEKDAY = r"(?![直起些次定样共切般点气空])"


def _one_day(day: date) -> Span:
    return day, day


def _ago(unit: str, n: int, said: date) -> Span:
    if unit.startswith("day"):
        return day_at(said, -n)
    if unit.startswith("week"):  # "two weeks ago": that week, give or take a few days
        middle = said - timedelta(weeks=n)
        return middle - timedelta(days=3), middle + timedelta(days=3)
    return month_of(said, -n)


_Reader = Callable[[re.Match[str], date], Span]
_STEP: dict[str, int] = {"last": -1, "this": 0, "next": 1, "上": -1, "这": 0, "本": 0, "下": 1}
_RULES: tuple[tuple[re.Pattern[str], _Reader], ...] = (
    (lazy_compile(r"(?<![\d一二三四五六七八九十两几])(\d{1,2}|[一二三四五六七八九十两几])\s*"
                  r"(天|周|个?星期|个月)前"),
     lambda m, d: _ago({"天": "day", "个月": "month"}.get(m.group(2), "week"),
                       CJK_COUNTS.get(m.group(1)) or int(m.group(1)), d)),
    (lazy_compile(rf"\b(?:the\s+)?day\s+before\s+yesterday\b|{_NOT_BEFORE_DAY}前天{_NOT_AFTER_DAY}"),
     lambda m, d: day_at(d, -2)),
    (lazy_compile(rf"\b(?:the\s+)?day\s+after\s+tomorrow\b|{_NOT_BEFORE_DAY}[后後]天{_NOT_AFTER_DAY}"),
     lambda m, d: day_at(d, 2)),
    (lazy_compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b|今天|今晚|今早"),
     lambda m, d: day_at(d, 0)),
    (lazy_compile(r"\b(?:yesterday|last\s+night)\b|昨天|昨晚"), lambda m, d: day_at(d, -1)),
    (lazy_compile(r"\btomorrow\b|明天|明晚"), lambda m, d: day_at(d, 1)),
    (lazy_compile(rf"\b{_COUNT}\s+(day|week|month)s?\s+ago\b"),
     lambda m, d: _ago(m.group(2), count(m.group(1)), d)),
    (lazy_compile(r"\b(last|this|next)\s+weekend\b"),
     lambda m, d: weekend_of(d, _STEP[m.group(1)])),
    (lazy_compile(rf"\b(last|next)\s+({'|'.join(WEEKDAYS)})\b"),
     lambda m, d: _one_day((last_weekday if m.group(1) == "last" else next_weekday)(
         d, WEEKDAYS.index(m.group(2))))),
    (lazy_compile(rf"{_NOT_STEP}(上|下)(?:个)?(?:周|星期|礼拜)([{CJK_WEEKDAYS}]){_NOT_WEEKDAY}"),
     lambda m, d: _one_day(weekday_in_week(d, _STEP[m.group(1)],
                                           min(CJK_WEEKDAYS.index(m.group(2)), 6)))),
    (lazy_compile(rf"\b(last|this|next)\s+week\b|{_CJK_STEP}(?:个)?(?:周|星期|礼拜){_NOT_WEEK}"),
     lambda m, d: week_of(d, _STEP[m.group(1) or m.group(2)])),
    (lazy_compile(rf"\b(last|this|next)\s+month\b|{_CJK_STEP}(?:个)?月{_NOT_MONTH}"),
     lambda m, d: month_of(d, _STEP[m.group(1) or m.group(2)])),
)
# Each rule's phrase holds one of its needles (in _RULES' order; a test checks it).
_RULE_NEEDLES: tuple[tuple[str, ...], ...] = (
    ("前",), ("yesterday", "前天"), ("tomorrow", "后天", "後天"),
    ("today", "tonight", "this", "今天", "今晚", "今早"), ("yesterday", "last", "昨天", "昨晚"),
    ("tomorrow", "明天", "明晚"), ("ago",), ("weekend",), ("day",), ("周", "星期", "礼拜"),
    ("week", "周", "星期", "礼拜"), ("month", "月"))
# Every rule's phrase holds one of these (a test checks it): one scan of a text that holds
# none (nine in ten turns) costs about a tenth of reading it with every rule.
_MENTIONS = lazy_compile(
    r"yesterday|today|tonight|tomorrow|ago\b|week|month|night|"
    r"morning|afternoon|evening|(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
    r"[昨今明前后後]天|[昨今明]晚|今早|[上下这本]个?(?:周|星期|礼拜|月)|(?:天|周|个?星期|个月)前")
# Every match of _MENTIONS holds one of these (a test checks it): substring tests in C, so the
# regex, which tries each of its branches at every position, reads only the texts that pass.
_MENTION_NEEDLES = ("day", "tomorrow", "ago", "week", "month", "night", "morning", "afternoon",
                    "evening", "天", "晚", "今早", "周", "星期", "礼拜", "月")


def spoken_spans(text: str, said_on: str) -> list[Span]:
    """The spans of days `text` speaks of, read relative to `said_on` (an ISO date or
    datetime, of which the first 10 chars are used); [] when it names none or said_on is no
    date. Each phrase is read once, by the first (longest) rule that matches it."""
    folded = text.lower()
    if not any(needle in folded for needle in _MENTION_NEEDLES):
        return []
    try:
        said = date.fromisoformat(said_on[:10])
    except ValueError:
        return []
    if _MENTIONS.search(folded) is None:
        return []
    # a rule none of whose needles is in the text cannot match it: only the others run
    return first_readings(folded, [(pattern, partial(_span_or_none, read, said))
                                   for (pattern, read), needles in zip(_RULES, _RULE_NEEDLES,
                                                                       strict=True)
                                   if any(needle in folded for needle in needles)])


def _span_or_none(read: _Reader, said: date, match: re.Match[str]) -> Span | None:
    try:
        return read(match, said)
    except (OverflowError, ValueError):  # a day outside what `date` holds ("9999-12-15")
        return None
