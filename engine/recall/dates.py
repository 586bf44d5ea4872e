"""Dates in recall: a query's explicit dates as windows (`date_mentions`), and the date tokens
an event's text carries in the index (`mention_tokens`). The dates are read by the engine's one
date reader, memvault.dates.reader (its docstring says which forms); this module adds only what
recall makes of them. An event's relative phrases ("yesterday", "last Friday") are read by
engine/recall/spoken.py.
"""

from __future__ import annotations

from ..dates.reader import (
    MONTHS,
    WINDOW_RULES,
    DateMentions,
    DateWindow,
    date_mentions,
    date_windows,
    first_readings,
    windows_in,
)

# What recall reads of a text's dates, under the names recall has used (its tests too).
__all__ = ["DateMentions", "DateWindow", "date_mentions", "date_windows", "first_readings",
           "mention_readings", "mention_tokens", "may_name_in_words", "window_token"]

# -- dates written inside text, as index tokens ------------------------------------------------
# A date an event's text mentions ("moved to 2026-12-16", "12月16日") is indexed as a token no
# word can be (unicode61 keeps it whole), so a query naming that date finds the event by its
# text, not only by its own timestamp. One token per reading a query can ask for: the day in
# its year, the day in any year, the month in its year.
DAY_TOKEN = "mvdateday"
ANY_YEAR_TOKEN = "mvdatemd"
MONTH_TOKEN = "mvdatemon"
# The index reads every window form a query reads, month-only mentions too ("in May", "五月": a
# turn that says it carries the month in the year it was written), running only the patterns
# the text can match (windows_in reads what first_readings(text, _MENTION_RULES) reads).
_MENTION_RULES = WINDOW_RULES
mention_readings = windows_in


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


def mention_tokens(text: str, year: int | None) -> list[str]:
    """The date tokens of the dates `text` mentions (lower-case, sorted); a mention without a
    year is read in `year` (the year the text was written), or in no year when None."""
    tokens: set[str] = set()
    for found in windows_in(text):
        full = DateWindow(found.year or year, found.month, found.day)
        if full.year is not None:
            tokens.add(window_token(DateWindow(full.year, full.month, None)) or "")
        if full.day is not None:
            tokens.add(window_token(DateWindow(None, full.month, full.day)) or "")
            if full.year is not None:
                tokens.add(window_token(full) or "")
    return sorted(tokens - {""})
