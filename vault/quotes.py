"""The cited span of an event as a source link shows it: one safe Markdown line.

A source of an object cites chars [start, end) of an event. The vault shows that span under
the link, read from the event when the file is rendered; it is never stored in an object (the
event keeps the quote).

Invariants:
- no secret value reaches the vault: the event text around the span is scanned
  (`objects.secrets`), so a secret the span boundary cuts in half, or one recognised only by a
  cue word outside the span, is still found; every char of the span inside a secret shows as
  `[secret: kind]`, the form `mask_secrets` gives recall and the vault. "Around" is the span,
  `SCAN_MARGIN` chars either side, and its edges moved out to whitespace (`scan_window`): the
  detectors recognise a value by its own chars and a few dozen around it (a cue word, a card
  word), and no value is cut by the window. Of a long span, only the prefix that can be shown
  is looked at (`EventQuotes.quote`).
- at most `QUOTE_MAX_CHARS` visible chars, on one line: whitespace runs fold to one space; a
  longer span is cut before the limit, never inside a `[secret: kind]` marker, ends with `…`
  and says how long it was.
- the line cannot break the file: every Markdown or Obsidian marker char (links, tags, HTML,
  emphasis, math, comments, entities) is backslash-escaped, and control and bidi chars show as
  `⟨U+XXXX⟩`. The caller puts it after a fixed prefix (`> “`), so it never starts a line and
  cannot open a heading, a list or front matter.
- rendering is a pure function of (event text, start, end): the same store renders the same
  bytes anywhere.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from ..secrets.detector import SecretHit, scan_secrets

QUOTE_MAX_CHARS = 200
ELLIPSIS = "…"

# Chars CommonMark or Obsidian give a meaning inline, `\`-escaped (shown as themselves): always
# these; `=`, `%` and `~` only doubled (==highlight==, %%comment%%, ~~strike~~) and `&` only
# where it could open an entity, so ordinary prose ("a = b", "50%", "~/notes", "Tom & Jerry")
# stays as typed.
_MARKDOWN_CHARS = "\\`*_[]<#|$^"
_ESCAPE_MARKDOWN = str.maketrans({ch: "\\" + ch for ch in _MARKDOWN_CHARS})
_DOUBLED = re.compile(r"={2,}|%{2,}|~{2,}|&(?=#|[A-Za-z][A-Za-z0-9]*;)")
# Controls (C0 but whitespace, which folds; DEL; C1), bidi controls, the BOM, noncharacters and
# lone surrogates (not encodable as UTF-8): shown by code point, never as themselves.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\ufeff\ufffe\uffff\ud800-\udfff]"
)


def _visible(text: str) -> str:
    return _INVISIBLE.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", text)


def escape_markdown(text: str) -> str:
    """`text` with every Markdown/Obsidian marker backslash-escaped (renders as itself)."""
    escaped = text.translate(_ESCAPE_MARKDOWN)
    return _DOUBLED.sub(lambda m: "".join("\\" + ch for ch in m.group()), escaped)


def masked_pieces(text: str, start: int, end: int,
                  hits: Sequence[SecretHit]) -> list[tuple[bool, str]]:
    """The span [start, end) of `text` as (is_marker, text) pieces: plain text, and a
    `[secret: kind]` marker for each stretch inside a secret found in the whole `text`."""
    pieces: list[tuple[bool, str]] = []
    pos = start
    for hit in sorted(hits, key=lambda h: (h.start, -h.end)):
        if hit.end <= pos or hit.start >= end:
            continue
        if hit.start > pos:
            pieces.append((False, text[pos:hit.start]))
        pieces.append((True, f"[secret: {hit.kind}]"))
        pos = min(hit.end, end)
    if pos < end:
        pieces.append((False, text[pos:end]))
    return pieces


def _folded(pieces: list[tuple[bool, str]]) -> list[tuple[bool, str]]:
    """Whitespace runs as one space (across pieces too), none at either end; invisibles shown."""
    out: list[tuple[bool, str]] = []
    space_before = False  # a space is owed before the next visible char
    for is_marker, piece in pieces:
        if is_marker:
            words = [piece]
        else:
            space_before = space_before or piece[:1].isspace()
            words = _visible(piece).split()
        if not words:
            continue
        joined = " ".join(words)
        if space_before and out:
            joined = " " + joined
        out.append((is_marker, joined))
        space_before = not is_marker and piece[-1:].isspace()
    return out


def _cut(pieces: list[tuple[bool, str]], limit: int) -> tuple[str, bool]:
    """The pieces joined, cut to at most `limit` chars (ending in `…`) if longer; a marker
    is kept whole or left out. Returns (text, was_cut)."""
    if sum(len(piece) for _, piece in pieces) <= limit:
        return "".join(piece for _, piece in pieces), False
    room = limit - len(ELLIPSIS)
    kept: list[str] = []
    for is_marker, piece in pieces:
        if len(piece) > room:
            if not is_marker:
                kept.append(piece[:room])
            break
        kept.append(piece)
        room -= len(piece)
    return "".join(kept).rstrip() + ELLIPSIS, True


def quote_span(text: str, start: int, end: int, hits: Sequence[SecretHit],
               limit: int = QUOTE_MAX_CHARS) -> str:
    """The span [start, end) of an event's `text` as the vault shows it under a source link:
    secrets masked, one line, at most `limit` visible chars, Markdown-escaped, in quotes.

    `hits` are the secrets found around the span (`span_secrets`), at their places in `text`.
    A span that starts past the text's end (it cannot, in a sound store) is said to be outside
    it rather than shown empty.
    """
    end = min(end, len(text))
    if start >= end:
        return "_(this span lies outside the event's text)_"
    shown, was_cut = _cut(_folded(masked_pieces(text, start, end, hits)), limit)
    return _quote_line(shown, was_cut, end - start)


def _quote_line(shown: str, was_cut: bool, span_chars: int) -> str:
    if not shown:
        return "_(only whitespace)_"
    quote = f"“{escape_markdown(shown)}”"
    return f"{quote} (cut; the span is {span_chars:,} chars)" if was_cut else quote


# Scanning costs ~2-3 µs a char: a span in a long event (tool output, up to 32,000 chars) scans
# its surroundings, not the whole event. The detectors look at most ~40 chars past a value (a
# cue word, a card word): the margin leaves room to spare.
SCAN_MARGIN = 256
# Original chars of a span read first: enough for QUOTE_MAX_CHARS shown unless whitespace or
# masked secrets take up most of them, in which case the prefix read doubles.
PROBE_CHARS = 4 * QUOTE_MAX_CHARS


def scan_window(text: str, start: int, end: int, margin: int = SCAN_MARGIN) -> tuple[int, int]:
    """The stretch of `text` scanned for the secrets of span [start, end): `margin` chars
    either side, each edge moved out to whitespace (or the text's end) so no value is cut."""
    lo, hi = max(0, start - margin), min(len(text), end + margin)
    while lo > 0 and not text[lo - 1].isspace():
        lo -= 1
    while hi < len(text) and not text[hi].isspace():
        hi += 1
    return lo, hi


# The secrets found in each scanned text, by a digest of the text: an event cited from many
# chunks of a run (or many runs of a serving process) is scanned once. Only the digest and the
# hit spans are kept, never the text; a changed text (`forget`) has another digest. Bounded.
_HITS: dict[bytes, list[SecretHit]] = {}
_HITS_MAX = 1 << 14


def secret_hits(text: str) -> list[SecretHit]:
    """`scan_secrets(text)`, remembered by a digest of `text`."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    hits = _HITS.get(digest)
    if hits is None:
        hits = scan_secrets(text)
        if len(_HITS) >= _HITS_MAX:
            _HITS.clear()
        _HITS[digest] = hits
    return hits


def span_secrets(text: str, start: int, end: int) -> list[SecretHit]:
    """The secrets that may touch span [start, end) of `text`, at their places in `text`."""
    lo, hi = scan_window(text, start, end)
    if lo == 0 and hi == len(text):
        return secret_hits(text)
    return [SecretHit(h.kind, h.start + lo, h.end + lo) for h in secret_hits(text[lo:hi])]


class EventQuotes:
    """The texts of the events a batch of pages cites, read in one query; each stretch of
    text is scanned for secrets once however many sources cite it (`secret_hits`)."""

    def __init__(self, texts: dict[int, str], probe: int = PROBE_CHARS) -> None:
        self._texts = texts
        self._probe = max(1, probe)  # a prefix of 0 chars would never grow

    def quote(self, event_id: int, start: int, end: int) -> str:
        """The span of event `event_id` as `quote_span` shows it.

        Only what can be shown is scanned: a prefix of the span that already folds to more
        than QUOTE_MAX_CHARS is cut exactly where the whole span would be (folding, masking
        and cutting never look ahead), so a long span of a long event costs a short scan.
        """
        text = self._texts.get(event_id)
        if text is None:
            return "_(the event is not in the store)_"
        end = min(end, len(text))
        stop = start + self._probe
        while stop < end:
            hits = span_secrets(text, start, stop)
            pieces = _folded(masked_pieces(text, start, stop, hits))
            if sum(len(piece) for _, piece in pieces) > QUOTE_MAX_CHARS:
                return _quote_line(_cut(pieces, QUOTE_MAX_CHARS)[0], True, end - start)
            stop = start + 2 * (stop - start)
        return quote_span(text, start, end, span_secrets(text, start, end))
