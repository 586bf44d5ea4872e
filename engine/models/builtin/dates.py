"""Dates a sentence names, as calendar days: the builtin model reads them with the engine's one
date reader (memvault.dates.reader `find_dates`: English and Chinese, relative to the day the
sentence was said), so a day it files is read by the same words as recall's."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date

from ...dates.reader import Dated, find_dates
from .textspan import Span

__all__ = ["Dated", "dated_clauses", "find_dates"]

# Where one sentence joins two plans: ", and", "; ", "，还有" ("Cian's booster on 14 December at
# 4pm, and a playdate at Ollie's on Saturday 12 December from 2 to 5").
_JOIN = re.compile(r",\s+(?:and|plus|then)\s+|;\s+|，(?:还有|另外|然后)")


def dated_clauses(sent: Span, said_on: date | None,
                  days: Callable[[str, date | None], list[Dated]] = find_dates) -> list[Span]:
    """The sentence's plans, one a clause: split where every joined clause names a day ahead
    of `said_on` (any day without it), so one plan never holds another's words (a change
    naming the second would land on the first); the whole sentence otherwise."""
    joins = list(_JOIN.finditer(sent.text))
    if not joins:
        return [sent]
    starts, ends = [0, *[m.end() for m in joins]], [*[m.start() for m in joins], len(sent.text)]
    parts = list(zip(starts, ends, strict=True))
    if not all(any(said_on is None or d.day > said_on for d in days(sent.text[a:b], said_on))
               for a, b in parts):
        return [sent]
    out = []
    for a, b in parts:
        piece = sent.text[a:b]
        text = piece.strip()
        lead = len(piece) - len(piece.lstrip())
        out.append(Span(sent.start + a + lead, sent.start + a + lead + len(text), text))
    return out
