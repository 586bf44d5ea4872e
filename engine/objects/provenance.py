"""Source anti-backflow: what the memory emits must never come back as new evidence.

The memory's own output (a memory_find / memory_read / memory_evidence result, a vault file,
a status dump, a failure notice, the resident context) may be appended back as an event by the
agent. Such events are kept (nothing is deleted) but:
- an event whose provenance says it is memory output (`source` "memvault", or a `kind` starting
  with "memory_" or "memvault") is wholly memory output;
- in any other event, `memory_spans` finds the verbatim copies by their fingerprint: recall and
  status JSON (by their field names), vault front matter, `[[hash|Name]]` links and the rest of
  a rendered object file, the text status dump, and stored profile text (summaries, body lines,
  evidence slices, core-file paragraphs) quoted at length;
- evidence citing such a span is refused (`check_evidence`); the agent's own words around it
  still count;
- an event that is wholly memory output (`is_wholly_memory`) gets archive_only from the engine,
  with a reason saying so, and never reaches the model.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..base.errors import FieldError
from ..base.spaces import EVERY_SPACE
from ..timeline.events import event_slices

MEMORY_SOURCE = "memvault"  # the source the memory's own notices are appended with
MEMORY_KIND_PREFIXES = ("memory_", "memvault")  # e.g. memory_result, memory_notice
QUOTE_MIN_CHARS = 40  # stored text quoted verbatim at this length is memory output
WHOLLY_SHARE = 0.9  # an event whose words are this share memory output is wholly memory output
JSON_ATTEMPTS = 256  # '{' positions tried per text: bounds the scan on brace-heavy text
WHOLLY_REASON = ("memory output: this event is {what}, the memory's own output appended back; "
                 "it is kept and findable by time but is never evidence (decided by the engine, "
                 "not the model)")

# Field sets that only memvault's answers carry (any one set, all its keys, marks a JSON value).
_SIGNATURES: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (name, frozenset(keys.split())) for name, keys in (
        ("a memory_find result", "query hits"),
        ("a memory_find hit", "snippet why score"),
        ("a memory_read result", "object links total_links"),
        ("a memory_evidence result", "items total_chars"),
        ("a memory_evidence result", "cited_by"),
        ("an event page", "occurred_at ingested_at est_tokens next_offset"),
        ("a status dump", "graph_revision quick_check"),
        ("a status dump", "events objects relations evidence timeline"),
        ("the resident context", "core_files directory timeline"),
        ("a timeline view", "nodes total_nodes cut_nodes"),
        ("an object directory", "entries total omitted"),
        ("an object profile", "id type name summary body cues status version"),
        ("a memory_organize receipt", "job_id request_token enqueued_at"),
        ("a job summary", "job_id mode origin state batches"),
        ("a commit receipt", "token batch_id job_id revision"),
    ))

_FRONT_MATTER = re.compile(r"^---[ \t]*\n(?:.*\n)*?---[ \t]*$", re.MULTILINE)
_VAULT_TAG = re.compile(r"^tags:\s*\n-\s*\"?memvault/", re.MULTILINE)
_WIKILINK = re.compile(r"\[\[(?:[0-9a-f]{16}(?:-p\d+)?|objects/README|AGENTS|SOUL|USER)"
                       r"(?:\|[^\]\n]*)?\]\]")
_VAULT_LINES = re.compile(
    r"^(?:`[a-z]+:[^`\n]+` · [^\n]*version \d+[^\n]*"  # the object file's header line
    r"|- [^\n]*· event \d+ · chars \d+–\d+[^\n]*"  # a source line
    r"|- [a-z_]+ [→←] \[\[[^\n]*\]\][ \t]*"  # a relation line
    r"|\*Projected from memvault's SQLite store[^\n]*)$", re.MULTILINE)
_FOOTER = re.compile(r"^\*Projected from memvault's SQLite store[^\n]*$", re.MULTILINE)
_STATUS_HEAD = re.compile(r"^memvault at [^\n]*quick_check: [^\n]*$", re.MULTILINE)
_STATUS_LINE = re.compile(
    r"^(?:[┏┃┡│└━╇┳┩┗─┼╰╭╮╯ \t].*|events|objects|oldest unfinished.*|(?:hot timeline|relations"
    r"|jobs|core files \(chars\)|vault|model usage|disk|growth):.*|  \d{4}-\d\d-\d\d .*)$")


@dataclass(frozen=True)
class Span:
    """Chars [start, end) of an event that are a verbatim copy of memory output."""

    start: int
    end: int
    what: str

    def as_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "what": self.what}


def is_memory_event(source: str, kind: str) -> bool:
    """True when the event's own provenance says the memory emitted it (a notice, a result)."""
    return source == MEMORY_SOURCE or kind.startswith(MEMORY_KIND_PREFIXES)


def memory_spans(text: str, quotes: Iterable[str] = ()) -> list[Span]:
    """Every span of `text` that is memory output, sorted and merged; `quotes` are stored
    texts (profile text, evidence slices, core files) whose verbatim copies count too."""
    found = [*json_spans(text), *vault_spans(text), *status_spans(text),
             *quote_spans(text, quotes)]
    return _merge(found)


def json_spans(text: str) -> Iterator[Span]:
    """JSON values in the text that carry memvault's field names (also nested, or inside a
    string, as an MCP tool result wraps them)."""
    decoder = json.JSONDecoder()
    pos = attempts = 0
    while attempts < JSON_ATTEMPTS:
        start = text.find("{", pos)
        if start < 0:
            return
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            pos = start + 1
            continue
        what = _memory_json(value, 0)
        if what:
            yield Span(start, end, what)
            pos = end
        else:
            pos = start + 1


def _memory_json(value: Any, depth: int) -> str | None:
    """Which memory answer a decoded JSON value is (or holds), else None."""
    if depth > 8:
        return None
    if isinstance(value, dict):
        keys = {k for k in value if isinstance(k, str)}
        for name, signature in _SIGNATURES:
            if signature <= keys:
                return name
        children: Iterable[Any] = value.values()
    elif isinstance(value, list):
        children = value[:50]
    elif isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return _memory_json(json.loads(value), depth + 1)
        except (ValueError, RecursionError):
            return None
    else:
        return None
    for child in children:
        what = _memory_json(child, depth + 1)
        if what:
            return what
    return None


def vault_spans(text: str) -> Iterator[Span]:
    """A rendered object file (front matter with a memvault/ tag through the footer), and its
    recognisable pieces alone: front matter, header, relation and source lines, links."""
    footers = [m.end() for m in _FOOTER.finditer(text)]
    for match in _FRONT_MATTER.finditer(text):
        if not _VAULT_TAG.search(match.group()):
            continue
        after = [end for end in footers if end > match.end()]
        # Front matter through its footer is one rendered file: its headings and short lines
        # are memory output as much as its summary and body.
        yield Span(match.start(), after[0] if after else match.end(), "a vault file")
    for match in _VAULT_LINES.finditer(text):
        yield Span(match.start(), match.end(), "a vault file")
    for match in _WIKILINK.finditer(text):
        yield Span(match.start(), match.end(), "a vault link")


def status_spans(text: str) -> Iterator[Span]:
    """The text status dump (`memvault status`): its header line and the table and summary
    lines that follow it."""
    for match in _STATUS_HEAD.finditer(text):
        end = match.end()
        for line in text[end + 1:].split("\n"):
            if not line.strip() or not _STATUS_LINE.match(line):
                break
            end += 1 + len(line)
        yield Span(match.start(), end, "a status dump")


def quote_spans(text: str, quotes: Iterable[str]) -> Iterator[Span]:
    """Verbatim copies of stored text of at least QUOTE_MIN_CHARS chars."""
    for quote in quotes:
        quote = quote.strip()
        if len(quote) < QUOTE_MIN_CHARS:
            continue
        at = text.find(quote)
        while at >= 0:
            yield Span(at, at + len(quote), "stored memory text quoted back")
            at = text.find(quote, at + len(quote))


def stored_quotes(conn: sqlite3.Connection, object_ids: Iterable[str],
                  own_event: int | None = None) -> list[str]:
    """The stored texts whose verbatim copies are memory output: each object's summary, body
    and body lines, its evidence slices (at most QUOTE_SLICES, not those of `own_event`: its
    own text is not a copy), and the core files' paragraphs: three queries per
    QUOTE_IDS_PER_QUERY objects and one for the core files, not two per object."""
    ids = list(dict.fromkeys(object_ids))
    quotes: list[str] = []
    if ids:
        quotes = _object_quotes(conn, ids, own_event)
    for (content,) in conn.execute(
        "SELECT c.content FROM core_files c WHERE c.version = (SELECT MAX(version)"
        " FROM core_files d WHERE d.name = c.name)"
    ):
        quotes += [p for p in re.split(r"\n\s*\n", content) if p.strip()]
    return [q for q in dict.fromkeys(quotes) if len(q.strip()) >= QUOTE_MIN_CHARS]


QUOTE_SLICES = 200  # evidence slices per object taken as quotes: bounds a much-cited object
QUOTE_IDS_PER_QUERY = 100  # objects per slices query (SQLite caps a compound SELECT at 500)
# One object's first QUOTE_SLICES slices in (event, start, end) order: the evidence index's
# order, so nothing is sorted. Only the slices' places: their text is the events' owner's read.
_SLICES_ONE = (
    "SELECT object_id, event_id, start_char, end_char FROM evidence"
    " WHERE object_id = ? AND event_id IS NOT ?"
    " ORDER BY event_id, start_char, end_char LIMIT ?")


def _slices_sql(objects: int) -> str:
    """The slices query for this many objects (a compound member needs its own subquery to
    keep its ORDER BY and LIMIT)."""
    if objects == 1:
        return _SLICES_ONE
    return " UNION ALL ".join([f"SELECT * FROM ({_SLICES_ONE})"] * objects)


def _object_quotes(conn: sqlite3.Connection, ids: list[str], own_event: int | None
                   ) -> list[str]:
    """Profile texts and evidence slices of the objects `ids` (distinct), in their order: per
    QUOTE_IDS_PER_QUERY objects, one query for the profiles, one for the slices' places and
    one for their texts. Every space's: a copy of memory is memory whoever's it is."""
    quotes: list[str] = []
    for at in range(0, len(ids), QUOTE_IDS_PER_QUERY):
        chunk = ids[at:at + QUOTE_IDS_PER_QUERY]
        profiles = {row[0]: [row[1], row[2], *row[2].split("\n")] for row in conn.execute(
            f"SELECT id, summary, body FROM objects WHERE id IN ({', '.join('?' * len(chunk))})",
            chunk)}
        listed = [oid for oid in chunk if oid in profiles]  # no object: its evidence is no quote
        slices: dict[str, list[str]] = {}
        if listed:
            places = conn.execute(
                _slices_sql(len(listed)),
                [x for oid in listed for x in (oid, own_event, QUOTE_SLICES)]).fetchall()
            texts = event_slices(conn, [(p[1], p[2], p[3]) for p in places], EVERY_SPACE)
            for place, text in zip(places, texts, strict=True):
                if text is not None:
                    slices.setdefault(place[0], []).append(text)
        quotes += [q for oid in listed for q in profiles[oid] + slices.get(oid, [])]
    return quotes


def is_wholly_memory(text: str, spans: list[Span]) -> bool:
    """True when at least WHOLLY_SHARE of the text's letters and digits lie in memory spans:
    a line of the agent's own around a pasted answer does not make it the agent's words."""
    words = sum(ch.isalnum() for ch in text)
    if words == 0:
        return False
    covered = sum(ch.isalnum() for s in spans for ch in text[s.start:s.end])
    return covered >= WHOLLY_SHARE * words


def wholly_reason(spans: list[Span], provenance: bool) -> str:
    """The archive_only reason the engine writes for an event that is wholly memory output."""
    if provenance:
        return WHOLLY_REASON.format(what="marked as memvault's own (its source or kind)")
    kinds = sorted({s.what for s in spans})
    return WHOLLY_REASON.format(what=", ".join(kinds[:4]))


def check_evidence(evidence: Iterable[Any], spans: list[Span]) -> None:
    """FieldError naming `evidence.N` for the first citation overlapping memory output."""
    for k, ev in enumerate(evidence):
        for span in spans:
            if ev.start < span.end and span.start < ev.end:
                raise FieldError(
                    f"evidence.{k}",
                    f"chars [{span.start}, {span.end}) of event {ev.event_id} are memory output "
                    f"({span.what}), never new evidence: cite only the agent's or user's own "
                    "words outside that range, or end the event archive_only")


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if merged and span.start <= merged[-1].end:
            last = merged[-1]
            if span.end > last.end:
                merged[-1] = Span(last.start, span.end, last.what)
            continue
        merged.append(span)
    return merged
