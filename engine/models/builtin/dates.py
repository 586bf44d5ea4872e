"""Dates a sentence names, as calendar days: the builtin model's one place for date arithmetic.

English phrases ("2027-01-14", "Jan 21", "14 January 2027", "next Tuesday", "tomorrow", "in two
weeks") are found by a pattern and turned into a day by dateparser, relative to the day the
sentence was said; dateparser knows month names, weekdays and relative words in more forms than
a hand table would, and is imported only when a sentence holds such a phrase (the command line
never pays for it). Chinese dates ("2027年1月14日", "12月16日", "下周三", "明天") are plain
arithmetic here: dateparser's Chinese reads "12月16日" as another day entirely and misses "下周三".
A phrase that names no single day ("next month", "this summer") gives no date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_WEEKDAY = r"(?:Mon|Tues|Wed(?:nes)?|Thu(?:rs)?|Fri|Sat(?:ur)?|Sun)(?:day)?"
DATE_EN = re.compile(
    r"\b(?P<when>\d{4}-\d{2}-\d{2}|"
    + _MONTH + r"\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?|"
    r"\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+\d{4})?|"
    r"(?:next|this|last|on)\s+" + _WEEKDAY + r"|tomorrow|yesterday|today|"
    r"in\s+(?:a\s+week|(?:two|three|four|five|six|\d+)\s+(?:days|weeks)))\b",
    re.IGNORECASE,
)
_WD_ZH = "一二三四五六日天"
DATE_ZH = re.compile(
    r"(?P<when>(?:(?P<y>\d{4})\s*年\s*)?(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号]|"
    r"(?P<iso>\d{4}-\d{1,2}-\d{1,2})|(?P<rel>今天|明天|后天|大后天|昨天)|"
    r"(?<![每隔])(?P<wk>下下|下|这|本)?(?:个)?(?:周|星期|礼拜)(?P<wd>[" + _WD_ZH + r"]))")
_REL_ZH = {"今天": 0, "明天": 1, "后天": 2, "大后天": 3, "昨天": -1}


@dataclass(frozen=True)
class Dated:
    """A date phrase in a sentence: where it is, as said, and the day it names."""

    start: int
    end: int
    said: str
    day: date


# "12-16", "12/16": month first. Only where a day is expected ("moved to 12-16"): elsewhere
# such digits are as often a score, a range or a version.
NUMERIC_DAY = re.compile(r"(?<![\d./-])(?P<m>\d{1,2})[-/](?P<d>\d{1,2})(?![\d/-]|\.\d)")


def find_dates(text: str, said_on: date | None, numeric: bool = False) -> list[Dated]:
    """Every phrase of `text` that names one calendar day, in order (with `numeric`, also a
    bare "12-16")."""
    out = [d for m in DATE_ZH.finditer(text) if (d := _zh(m, said_on))]
    if numeric:
        out += [d for m in NUMERIC_DAY.finditer(text) if (d := _zh(m, said_on))
                and not any(o.start <= m.start() < o.end for o in out)]
    taken = [(d.start, d.end) for d in out]
    out += [d for m in DATE_EN.finditer(text)
            if not any(a < m.end() and m.start() < b for a, b in taken) and (d := _en(m, said_on))]
    return sorted(out, key=lambda d: d.start)


def _zh(m: re.Match[str], said_on: date | None) -> Dated | None:
    base = said_on or date.today()
    try:
        if m.groupdict().get("iso"):
            day = date.fromisoformat("-".join(f"{int(p):02d}" if i else p for i, p in
                                              enumerate(m.group("iso").split("-"))))
        elif m.groupdict().get("m"):
            year = int(m.groupdict().get("y") or base.year)
            day = date(year, int(m.group("m")), int(m.group("d")))
            if not m.groupdict().get("y") and said_on and day < said_on - timedelta(days=60):
                day = date(year + 1, day.month, day.day)  # "1月21日" said in December
        elif m.group("rel"):
            if said_on is None:
                return None
            day = said_on + timedelta(days=_REL_ZH[m.group("rel")])
        else:
            if said_on is None:
                return None
            weekday = "一二三四五六日".find(m.group("wd").replace("天", "日"))
            monday = said_on - timedelta(days=said_on.weekday())
            weeks = {"下下": 2, "下": 1}.get(m.group("wk") or "", 0)
            day = monday + timedelta(days=7 * weeks + weekday)
    except ValueError:
        return None
    return Dated(m.start(), m.end(), m.group(), day)


def _en(m: re.Match[str], said_on: date | None) -> Dated | None:
    said = m.group("when")
    absolute = bool(re.search(r"\d{4}", said)) or bool(re.match(r"\d|" + _MONTH, said, re.I))
    if said_on is None and not absolute:
        return None
    import dateparser  # lazy: only a sentence that names a date pays for it

    words = re.sub(r"^on\s+", "", said, flags=re.IGNORECASE)
    base = datetime.combine(said_on or date.today(), datetime.min.time())
    prefer = "past" if re.match(r"last|yesterday", words, re.I) else "future"
    try:
        parsed = dateparser.parse(words, languages=["en"], settings={
            "RELATIVE_BASE": base, "PREFER_DATES_FROM": prefer})
    except (ValueError, OverflowError):  # "Feb 31", a year past 9999: no day, not an error
        return None
    if parsed is None:
        return None
    return Dated(m.start("when"), m.end("when"), said, parsed.date())
