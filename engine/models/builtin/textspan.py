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
# A Chinese statement run on into a question ("我下个月要去日本，需要办签证吗？", "我下周三面试，
# 怎么准备？"): the question starts at its last comma, so the statement before it is a sentence
# of its own and not read as asked; unless the first clause asks too ("明天要不要去爬山，你觉得
# 呢？", "你明天来不来，还是后天？"). English run-ons ("I have an interview on May 19, how should I
# prepare?") are left whole: splitting them did not raise the statement facts and cost
# LoCoMo's conversations a little (docs/builtin-model.md).
_ASKED_ZH = re.compile(r"[，,;；]\s*(?=[^，,;；。！!\n]*[？?]\s*$)")
_ASKING_ZH = re.compile(r"吗|呢|([\u4e00-\u9fff])[不没]\1|怎么|什么|哪|谁|几[点个号天]|多少")


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
    """Sentences of `text` with their offsets (ender included), never crossing a line; a
    Chinese statement run on into a question is two (see _ASKED_ZH)."""
    out: list[Span] = []
    for line in lines(text):
        cursor = line.start
        for match in _END.finditer(text, line.start, line.end):
            out += _unasked(text, cursor, match.end())
            cursor = match.end()
        out += _unasked(text, cursor, line.end)
    return out


def _unasked(text: str, start: int, end: int) -> list[Span]:
    """The sentence text[start:end], split where a Chinese statement runs on into a question."""
    span = _trimmed(text, start, end)
    if span is None or not span.text.endswith(("?", "？")) or not HAN.search(span.text):
        return [span] if span else []
    asked = _ASKED_ZH.search(span.text)
    if asked is None or asked.start() < 4 or _ASKING_ZH.search(span.text, 0, asked.start()):
        return [span]
    return [s for s in (_trimmed(text, span.start, span.start + asked.end()),
                        _trimmed(text, span.start + asked.end(), span.end)) if s]


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
