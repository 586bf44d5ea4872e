"""Dates a sentence names, as calendar days: the builtin model reads them with the engine's one
date reader (memvault.dates.reader `find_dates`: English and Chinese, relative to the day the
sentence was said), so a day it files is read by the same words as recall's."""

from __future__ import annotations

from ...dates.reader import Dated, find_dates

__all__ = ["Dated", "find_dates"]
