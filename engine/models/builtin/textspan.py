"""Splitting page text into sentences and lines with their offsets, and finding name mentions.

Offsets are always page-local `[start, end)` indices into the text given; the organize module
adds the page's absolute start. A sentence never crosses a line break.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A sentence ends at Chinese/full-width enders, at ! ? ; and at '.' followed by space or end of
# text (so "24.04", "v0.3" and URLs stay whole), but not after a title ("Dr. Inês Costa").
_END = re.compile(r"[。！？!?；]+|(?<!\bMr)(?<!\bMs)(?<!\bDr)(?<!\bMrs)(?<!\bProf)\.(?=\s|$)|"
                  r"…{1,2}(?=\s|$)")
HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Span:
    """A trimmed slice of the page text."""

    start: int
    end: int
    text: str


def _trimmed(text: str, start: int, end: int) -> Span | None:
    piece = text[start:end]
    left = len(piece) - len(piece.lstrip())
    right = len(piece.rstrip())
    if right <= left:
        return None
    return Span(start + left, start + right, piece[left:right])


def lines(text: str) -> list[Span]:
    """Non-blank lines of `text` with their offsets."""
    out = []
    pos = 0
    for raw in text.split("\n"):
        span = _trimmed(text, pos, pos + len(raw))
        if span:
            out.append(span)
        pos += len(raw) + 1
    return out


def sentences(text: str) -> list[Span]:
    """Sentences of `text` with their offsets (ender included), never crossing a line."""
    out = []
    for line in lines(text):
        cursor = line.start
        for match in _END.finditer(text, line.start, line.end):
            span = _trimmed(text, cursor, match.end())
            if span:
                out.append(span)
            cursor = match.end()
        span = _trimmed(text, cursor, line.end)
        if span:
            out.append(span)
    return out


def mention_pattern(name: str) -> re.Pattern[str] | None:
    """A pattern that finds `name` as a word (ASCII) or as a substring (Han, ≥2 chars)."""
    name = name.strip()
    if len(name) < 2:
        return None
    if HAN.search(name):
        return re.compile(re.escape(name))
    if len(name) < 3:
        return None
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")


def mentions(text: str, names: list[str]) -> bool:
    """Does `text` mention any of `names`?"""
    for name in names:
        pattern = mention_pattern(name)
        if pattern and pattern.search(text):
            return True
    return False


def blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with the chars of `spans` (page-local [start, end)) turned into spaces, line
    breaks kept: the same offsets, and nothing inside them for a rule to find."""
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        for i in range(max(0, start), min(len(chars), end)):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def overlaps(span: Span, spans: list[tuple[int, int]]) -> bool:
    """Does `span` share a char with any of `spans` (page-local [start, end))?"""
    return any(span.start < end and start < span.end for start, end in spans)
