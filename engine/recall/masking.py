"""Secrets masked on the way out: what recall and the read commands show of stored text.

Stored text is never changed here (`memvault forget` is the one way to remove a value); each
answer is masked as it leaves, so a pasted token or password is shown as `[secret: kind]`
(engine/secrets/detector.py finds them). The owner may ask the command line to reveal them
(`--reveal-secrets`, logged); over MCP nothing is revealed. Every read of `Memory` masks
unless its caller asks to reveal (memvault.home.reveals), so a new reader, command or tool
cannot forget to mask.

Invariants:
- Paging is unchanged: a page is cut from the raw text first and then masked, with the secrets
  found in the *whole* text, so a value cut by a page end is masked on both pages and
  `next_offset` still counts raw chars. A hot fragment of a longer event is masked the same
  way (mask_fragments). Masking masked text changes nothing, so a last pass is always safe.
- Nothing derived from a secret leaks around the mask: snippets are cut from masked text, and
  the words of a secret (as recall folds them) are masked in `why` and in the echoed terms.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import unicodedata
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, TypeVar, cast

from ..secrets import detector as secrets
from ..secrets.detector import SecretHit, mask_secrets, redact_slice, scan_secrets
from ..timeline.events import EventPage
from .answers import Candidate, EvidenceItem
from .index import (
    clear_secret_marks,
    fold,
    get_stat,
    secret_marks,
    set_secret_marks,
    set_stat,
    unmarked_objects,
)
from .rank import SNIPPET_CHARS, snippet, snippet_field
from .terms import Query

SECRET_WORD = "[secret]"
_WORD = re.compile(r"[^\W_]+")
_MIN_WORD = 4  # shorter words of a secret ("ghp", "sk") say nothing of its value
# Words that name a kind of secret, not its value: an assigned value's span starts at its cue
# ("token is ...", "password: ..."), and the cue itself gives nothing away.
_CUE_WORDS = frozenset({"token", "tokens", "password", "passwd", "passcode", "passphrase",
                        "secret", "bearer", "apikey", "access", "auth", "refresh", "session",
                        "client", "private", "security", "code"})
_MARKER = re.compile(r"\[secret(?:: [^\]]*)?\]")
# Keys whose values are ids or labels the engine made: never masked (an id stays an id). Not
# `kind`: an event's kind is the caller's own label, stored as given.
_KEEP = frozenset({"id", "type", "object_id", "event_id", "merged", "redirected_from",
                   "status", "state", "direction", "other", "occurred_at",
                   "ingested_at", "created_at", "updated_at", "first_at", "last_at", "cursor"})


def mask_slice(text: str, start: int, end: int, hits: list[SecretHit] | None = None) -> str:
    """text[start:end] with every part of a secret found in the whole `text` as
    `[secret: kind]` (a secret cut by the slice is masked too)."""
    return redact_slice(text, start, end, scan_secrets(text) if hits is None else hits, "secret")


def secret_words(texts: Iterable[str]) -> set[str]:
    """The folded words (as recall matches them) of every secret in `texts`."""
    words: set[str] = set()
    for text in texts:
        words |= words_of(text, scan_secrets(text))
    return words


def words_of(text: str, hits: list[SecretHit]) -> set[str]:
    """The folded words of the secrets `hits` found in `text`."""
    return {w for hit in hits for w in _WORD.findall(fold(text[hit.start:hit.end]))
            if len(w) >= _MIN_WORD and w not in _CUE_WORDS}


def masked_text(text: str) -> tuple[str, set[str]]:
    """`text` with its secrets masked, and their words (one scan of the text)."""
    hits = scan_secrets(text)
    if not hits:
        return text, set()
    return mask_slice(text, 0, len(text), hits), words_of(text, hits)


def mask_words(value: str, words: set[str] | frozenset[str]) -> str:
    """`value` with each of `words` (whole folded words) as `[secret]`; the masks already in
    it (`[secret: kind]`) are left whole."""
    if not words:
        return value
    out, pos = [], 0
    for marker in [*_MARKER.finditer(value), None]:
        end = marker.start() if marker else len(value)
        out.append(_WORD.sub(lambda m: SECRET_WORD if fold(m.group()) in words else m.group(),
                             value[pos:end]))
        if marker:
            out.append(marker.group())
            pos = marker.end()
    return "".join(out)


_Answer = TypeVar("_Answer")


def mask_tree(value: _Answer, words: set[str] | frozenset[str] = frozenset(),
              key: str | None = None, done: frozenset[str] = frozenset()) -> _Answer:
    """A copy of an answer (dicts, lists, strings) with every string masked: secrets as
    `[secret: kind]`, then `words` as `[secret]`. Ids and engine labels stay as they are;
    strings under a key in `done` were masked already and only get `words`. The copy has the
    answer's shape and type (a tuple comes back a list), so a typed answer stays typed."""
    return cast(_Answer, _mask_tree(value, words, key, done, {}))


def _mask_tree(value: Any, words: set[str] | frozenset[str], key: str | None,
               done: frozenset[str], seen: dict[str, str]) -> Any:
    """mask_tree, scanning each distinct string once (an answer repeats its sources, kinds
    and terms from hit to hit); `seen` lives for one answer."""
    if isinstance(value, str):
        if key in _KEEP:
            return value
        if key in done:
            return mask_words(value, words)
        if value not in seen:
            seen[value] = mask_words(mask_secrets(value), words)
        return seen[value]
    if isinstance(value, dict):
        return {k: _mask_tree(v, words, k, done, seen) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_tree(v, words, key, done, seen) for v in value]
    return value


def mask_fragments(conn: sqlite3.Connection, nodes: list[Any]) -> list[Any]:
    """Timeline nodes (NodeView dicts) with the text of each raw fragment of a longer event
    masked by the secrets of the whole event, so a key cut by a fragment's end is masked on
    both sides; every other node is left as it is, for mask_tree (a single fragment is its
    whole event, a head its own text)."""
    split = [n["id"] for n in nodes
             if n.get("kind") == "raw" and n.get("fragment") not in (None, "1/1")]
    if not split:
        return nodes
    spans = {row[0]: (row[1], row[2], row[3]) for row in conn.execute(
        "SELECT id, event_id, start_char, end_char FROM hot_nodes"
        " WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(split),))}
    texts = _event_texts(conn, (span[0] for span in spans.values()))
    hits: dict[int, list[SecretHit]] = {}
    out = []
    for node in nodes:
        span = spans.get(node["id"]) if node.get("kind") == "raw" else None
        if span is None:
            out.append(node)
            continue
        event_id, start, end = span
        if event_id not in hits:
            hits[event_id] = scan_secrets(texts[event_id])
        out.append({**node, "text": mask_slice(texts[event_id], start, end, hits[event_id])})
    return out


def _event_texts(conn: sqlite3.Connection, event_ids: Iterable[int]) -> dict[int, str]:
    ids = sorted(set(event_ids))
    rows = conn.execute(
        f"SELECT id, text FROM events WHERE id IN ({', '.join('?' * len(ids))})", ids)
    return {row[0]: row[1] for row in rows}


def mask_event_page(conn: sqlite3.Connection, page: EventPage) -> EventPage:
    """An event page (read_event_page) with its text masked by the secrets of the whole
    event, and every other field by mask_tree."""
    full = _event_texts(conn, [page["id"]])[page["id"]]
    offset = page["offset"]
    blank: EventPage = {**page, "text": ""}  # the text is masked as a slice of the whole
    masked = mask_tree(blank)
    masked["text"] = mask_slice(full, offset, offset + len(page["text"]))
    return masked


def mask_evidence_items(conn: sqlite3.Connection,
                        items: list[EvidenceItem]) -> list[EvidenceItem]:
    """Evidence slices, each masked by the secrets of its whole event."""
    texts = _event_texts(conn, (item["event_id"] for item in items))
    hits = {event_id: scan_secrets(text) for event_id, text in texts.items()}
    shown: list[EvidenceItem] = []
    for item in items:
        blank: EvidenceItem = {**item, "text": ""}  # the text: as a slice of the whole
        masked = mask_tree(blank)
        masked["text"] = mask_slice(texts[item["event_id"]], item["start_char"],
                                    item["end_char"], hits[item["event_id"]])
        shown.append(masked)
    return shown


def mask_previews(conn: sqlite3.Connection, items: list[dict[str, Any]]) -> list[
        dict[str, Any]]:
    """An event listing: each preview (the first chars of its event) masked by the secrets
    of the whole event."""
    texts = _event_texts(conn, (item["id"] for item in items))
    return [{**mask_tree({k: v for k, v in item.items() if k != "preview"}),
             "preview": mask_slice(texts[item["id"]], 0, len(item["preview"]))}
            for item in items]


# -- marks: an object's fields known to hold no secret ----------------------------------------
# Scanning what a find shows is most of its secret-scan time, and most of that is object fields
# (bodies of up to 16,000 chars). The syncs scan each indexed object's fields once and leave a
# mark (recall/index.py): the digest of the detector's source and the exact field texts
# when none holds a secret. A find trusts a mark only when it equals the digest of the texts it
# shows, so an edit, a merge, a forget or a new detector can never make one stale.
MARK_STEP = 200  # objects scanned per bounded sync (a worker poll): ~0.1 s at 1,400 chars each
RULES_STAT = "secret_rules"  # recall_state: the detector the marks were made with
MARK_VERSION = b"1"  # how clean_mark digests; a new way makes every mark again


@cache
def _rules() -> bytes:
    """A fingerprint of the secret detector (its two modules' source as they were loaded:
    secrets.LOADED_SOURCE, and the Unicode tables it normalises text with); random (no mark is
    ever trusted by another process) when the source could not be read."""
    import hashlib  # here, not at import: a read that checks no mark never loads OpenSSL

    source = secrets.LOADED_SOURCE or os.urandom(32)
    unicode = unicodedata.unidata_version.encode()
    return hashlib.blake2b(MARK_VERSION + unicode + source, digest_size=16).digest()


def clean_mark(fields: Sequence[str]) -> bytes:
    """The mark of an object whose `fields` (recall_index.object_field_texts) hold no secret."""
    import hashlib

    digest = hashlib.blake2b(_rules(), digest_size=16)
    for text in fields:  # each with its length: no two lists of texts hash alike
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.digest()


def mark_objects(conn: sqlite3.Connection, limit: int | None = MARK_STEP) -> int:
    """Scan the fields of up to `limit` (None: all) indexed objects not scanned yet and mark
    them (first forgetting every mark, when the detector changed); inside the caller's write
    transaction (Memory.sync_recall_index). Returns how many it scanned."""
    rules = int.from_bytes(_rules()[:6], "big")
    if get_stat(conn, RULES_STAT) != rules:
        clear_secret_marks(conn)
        set_stat(conn, RULES_STAT, rules)
    pending = unmarked_objects(conn, limit)
    set_secret_marks(conn, [(rid, b"" if any(map(holds_secret, fields))
                             else clean_mark(fields)) for rid, fields in pending])
    return len(pending)


def _clean_objects(conn: sqlite3.Connection, hits: Sequence[Candidate]) -> set[str]:
    """The object hits whose fields (in `_source`) a mark vouches for."""
    shown = {h["id"]: source[0] for h in hits
             if h["kind"] == "object" and (source := h.get("_source")) is not None}
    if not shown:
        return set()
    marks = secret_marks(conn, sorted(shown))
    return {i for i, mark in marks.items() if mark and mark == clean_mark(shown[i])}


def holds_secret(text: str) -> bool:
    """Whether `text` holds a secret-looking value."""
    return bool(scan_secrets(text))


def add_snippets(conn: sqlite3.Connection, hits: Sequence[Candidate], parsed: Query,
                 reveal: bool) -> set[str]:
    """Snippets for the hits memory_find returns (their `_source` and `_summary` taken out),
    cut from masked text unless `reveal` (a snippet cut from raw text could hold part of a
    secret no detector sees once it is cut); an object whose mark vouches for its fields is
    not scanned again. Returns the words of the secrets in the hits' texts, for the caller to
    mask wherever they appear."""
    words: set[str] = set()
    clean = set() if reveal else _clean_objects(conn, hits)

    def shown(text: str) -> str:
        if reveal:
            return text
        masked, found = masked_text(text)
        words.update(found)
        return masked

    for hit in hits:
        if hit["kind"] == "event":
            text, idf = hit.pop("_source")
            hit.pop("_summary", None)
            hit["snippet"] = snippet(shown(text), parsed, idf)
            continue
        source, summary = hit.pop("_source", None), hit.pop("_summary", "")
        if source is None:
            hit["snippet"] = shown(summary)[:SNIPPET_CHARS] or hit["name"]
            continue
        fields, why, idf = source
        chosen = snippet_field(fields, why)
        if hit["id"] in clean:  # its mark vouches that none of its fields holds a secret
            hit["snippet"] = snippet(fields[chosen], parsed, idf)
            continue
        # a field is scanned when the snippet shows it or a term of the query is in it (only
        # then can a word of its secrets be in `why` or the terms); an object's body of up to
        # 16,000 chars matched by its name alone is not read for secrets
        hit["snippet"] = snippet(shown(fields[chosen]), parsed, idf)
        for index, text in enumerate(fields):
            if index != chosen and _holds_a_term(text, parsed):
                shown(text)
    return words


def _holds_a_term(text: str, parsed: Query) -> bool:
    """Whether the folded `text` holds the needle of one of the query's terms (what every
    token a term matches starts with)."""
    folded = fold(text)
    return any(term.needle in folded for term in parsed.terms)
