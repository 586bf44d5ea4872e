"""Which objects a text names, by the name index (object_names): the lookup behind organize's
related objects and the anti-backflow check (engine/jobs/modes/backflow.py)."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from itertools import chain

__all__ = ["by_specificity", "name_keys", "named_objects"]


def named_objects(conn: sqlite3.Connection, text: str) -> list[str]:
    """Live objects whose name or alias (≥ 2 chars) occurs in the text, case-insensitively,
    the most specific match first (`by_specificity`). The name index narrows the candidates by
    first word; each candidate is then checked against the text itself."""
    matched: dict[str, set[str]] = {}
    lowered = text.translate(_ASCII_LOWER)
    terms = sorted(name_keys(text) | mixed_keys(conn, lowered))
    for start in range(0, len(terms), 500):  # stay well under SQLite's parameter limit
        chunk = {f"t{i}": term for i, term in enumerate(terms[start:start + 500])}
        marks = ",".join(f":{key}" for key in chunk)
        # The check against the text runs in SQL: a common first word may bring many candidates.
        for row in conn.execute(_MATCHED_NAMES.format(marks=marks), {**chunk, "text": lowered}):
            matched.setdefault(row["id"], set()).add(row["name"])
    return by_specificity(matched)


# Each candidate's name and aliases that occur in the text, lowercased as the text is: one row
# per (object, matched name), so the ranking needs no query of its own. `id IN (...)` reads each
# candidate once however many of its keys the text holds (cheaper than DISTINCT over the join).
_MATCHED_NAMES = (
    "WITH hit AS (SELECT id, name, aliases FROM objects WHERE redirect_to IS NULL AND id IN"
    " (SELECT object_id FROM object_names WHERE term IN ({marks})))"
    " SELECT id, lower(name) AS name FROM hit WHERE instr(:text, lower(name)) > 0"
    " UNION ALL SELECT hit.id, lower(a.value) FROM hit, json_each(hit.aliases) a"
    " WHERE length(a.value) >= 2 AND instr(:text, lower(a.value)) > 0")


def by_specificity(matched: dict[str, set[str]]) -> list[str]:
    """Object ids ordered by their most specific matched name: the one the fewest of the named
    objects share first (a person's own name before an alias 150 todos share, so a shared alias
    never crowds the person out of a bounded list), then the longer name, then the id. The count
    is over `matched`, with no query of its own: a live object sharing a name the text holds has
    that name's index key too, so it was looked up and matched as well."""
    sharers = Counter(chain.from_iterable(matched.values()))
    rank = {name: (count, -len(name)) for name, count in sharers.items()}
    return sorted(matched, key=lambda i: (min(map(rank.__getitem__, matched[i])), i))


_HAN = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_SPLIT = re.compile(
    r"[\s\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff,;!?()\[\]{}<>\"“”、，。；：！？（）《》]+")


def name_keys(text: str) -> set[str]:
    """Every key (see migrations.m004_object_names) a name occurring in `text` could have:
    each space- or CJK-delimited chunk (as is and without trailing punctuation), lowercased
    like SQLite's lower(), and every two-char piece of a CJK run. (A name that runs from Latin
    letters into CJK is found by `mixed_keys`.)"""
    keys: set[str] = set()
    for chunk in _SPLIT.split(text.translate(_ASCII_LOWER)):
        if chunk:
            keys.update({chunk, chunk.rstrip(".:'’-"), chunk.split("'")[0], chunk.split("’")[0]})
    for run in _HAN.findall(text):
        keys.update(run[i:i + 2] for i in range(len(run) - 1))
    return {k for k in keys if k}


# A name's key runs to its first space, so a name that starts in Latin letters and runs
# straight into CJK ("Lighthouse负责第36版设计稿") keeps CJK in its key, which the chunks of
# name_keys (cut at CJK) never produce, and whose end no split of the text can know. Such keys
# are looked up by their Latin start instead: one indexed range of the name index per word.
_MIXED_START = re.compile(r"(?<![a-z0-9])[a-z0-9][^\s\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]*"
                          r"(?=[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff])")
_LAST_CHAR = "\U0010ffff"  # sorts after every other character in SQLite's binary order


def mixed_starts(lowered: str) -> set[str]:
    """The Latin words of lowercased text that run straight into CJK characters."""
    return {match.group() for match in _MIXED_START.finditer(lowered)}


def mixed_keys(conn: sqlite3.Connection, lowered: str) -> set[str]:
    """Name-index keys that begin with one of the text's Latin-into-CJK words, hold CJK, and
    occur in the text: the keys of names written in both scripts without a space."""
    starts = sorted(mixed_starts(lowered))
    keys: set[str] = set()
    for at in range(0, len(starts), 200):
        chunk = starts[at:at + 200]
        ranges = " OR ".join("(term > ? AND term < ?)" for _ in chunk)
        for row in conn.execute(f"SELECT DISTINCT term FROM object_names WHERE {ranges}",
                                [v for w in chunk for v in (w, w + _LAST_CHAR)]):
            if row["term"] in lowered:
                keys.add(row["term"])
    return keys
