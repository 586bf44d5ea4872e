"""Splitting an event into hot-timeline fragments.

An event of n characters becomes ceil(n / 2,000) fragments, each at most 2,000 characters,
cut at the best boundary the budget allows: a blank line, then a line end, then a sentence end
(Chinese or Western), then a space. A cut never falls inside a code point (Python strings are
code points; lone surrogates are refused before storage), and where there is any room it never
splits a grapheme: a combining mark, variation selector or zero-width joiner stays with the
character before it. Fragments are (start, end) slices of the event text, never copies.
"""

from __future__ import annotations

import unicodedata

from ..base.patterns import lazy_compile

FRAGMENT_CHARS = 2_000
EVENT_MAX_CHARS = 32_000

# Boundary kinds in order of preference; each pattern matches the text a cut goes after.
_BOUNDARIES = (
    lazy_compile(r"\n[ \t]*\n"),
    lazy_compile(r"\n"),
    lazy_compile(r"[。！？；…][」』”’）)]*|[.!?;][\"')\]]*(?=\s)"),
    lazy_compile(r"[，、,:：]|\s"),
)


def split_fragments(text: str, max_chars: int = FRAGMENT_CHARS) -> list[tuple[int, int]]:
    """Return the (start, end) slices of `text` that become its hot fragments."""
    n = len(text)
    if n <= max_chars:
        return [(0, n)]
    count = -(-n // max_chars)
    pieces: list[tuple[int, int]] = []
    start = 0
    for remaining in range(count, 1, -1):
        hi = start + max_chars
        # Leave the rest enough room to fit into the fragments still to come.
        lo = max(start + 1, n - (remaining - 1) * max_chars, start + max_chars // 2)
        lo = min(lo, hi)
        cut = _best_cut(text, lo, hi)
        pieces.append((start, cut))
        start = cut
    pieces.append((start, n))
    return pieces


def _best_cut(text: str, lo: int, hi: int) -> int:
    window = text[lo - 1 : hi]
    for pattern in _BOUNDARIES:
        # The window starts one char early so a boundary ending exactly at lo is seen;
        # every match ends at >= 1, so each cut lands within [lo, hi].
        ends = [m.end() for m in pattern.finditer(window)]
        for end in reversed(ends):
            if not _joins(text, lo - 1 + end):
                return lo - 1 + end
    return _safe_cut(text, lo, hi)


def _safe_cut(text: str, lo: int, hi: int) -> int:
    """The latest cut in [lo, hi] that keeps a grapheme whole, else hi."""
    cut = hi
    while cut > lo and _joins(text, cut):
        cut -= 1
    return cut if not _joins(text, cut) else hi


def _joins(text: str, cut: int) -> bool:
    """True when cutting before text[cut] would split a grapheme."""
    if cut <= 0 or cut >= len(text):
        return False
    nxt, prev = text[cut], text[cut - 1]
    if prev == "\u200d" or nxt == "\u200d":
        return True
    if "\ufe00" <= nxt <= "\ufe0f" or "\U0001f3fb" <= nxt <= "\U0001f3ff":
        return True
    # Regional indicators pair up into flags.
    if "\U0001f1e6" <= nxt <= "\U0001f1ff" and "\U0001f1e6" <= prev <= "\U0001f1ff":
        return True
    # Any mark (Mn, Mc, Me) belongs to the character before it, whatever its combining class:
    # Devanagari vowel signs and the keycap U+20E3 have class 0 but must not be cut off.
    return unicodedata.category(nxt).startswith("M")


def find_lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate in `text` (not encodable as UTF-8), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None
