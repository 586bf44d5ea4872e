"""Which objects an event's text names: the lookup behind organize's related objects and the
anti-backflow check (engine/modes/backflow.py)."""

from __future__ import annotations

import re
import sqlite3

__all__ = ["name_keys", "named_objects"]


def named_objects(conn: sqlite3.Connection, text: str) -> list[str]:
    """Live objects whose name or alias (≥ 2 chars) occurs in the text, case-insensitively.
    The name index narrows the candidates by first word; each candidate is then checked
    against the text itself."""
    ids: list[str] = []
    terms = sorted(name_keys(text))
    lowered = text.translate(_ASCII_LOWER)
    for start in range(0, len(terms), 500):  # stay well under SQLite's parameter limit
        chunk = {f"t{i}": term for i, term in enumerate(terms[start:start + 500])}
        marks = ",".join(f":{key}" for key in chunk)
        # The check against the text runs in SQL: a common first word may bring many candidates.
        ids += [r[0] for r in conn.execute(
            "SELECT DISTINCT o.id FROM object_names n JOIN objects o ON o.id = n.object_id"
            f" WHERE n.term IN ({marks}) AND o.redirect_to IS NULL AND ("
            "  instr(:text, lower(o.name)) > 0 OR EXISTS (SELECT 1 FROM json_each(o.aliases) a"
            "  WHERE length(a.value) >= 2 AND instr(:text, lower(a.value)) > 0))",
            {**chunk, "text": lowered},
        )]
    return ids


_HAN = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_SPLIT = re.compile(
    r"[\s\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff,;!?()\[\]{}<>\"“”、，。；：！？（）《》]+")


def name_keys(text: str) -> set[str]:
    """Every key (see migrations.m004_object_names) a name occurring in `text` could have:
    each space- or CJK-delimited chunk (as is and without trailing punctuation), lowercased
    like SQLite's lower(), and every two-char piece of a CJK run."""
    keys: set[str] = set()
    for chunk in _SPLIT.split(text.translate(_ASCII_LOWER)):
        if chunk:
            keys.update({chunk, chunk.rstrip(".:'’-"), chunk.split("'")[0], chunk.split("’")[0]})
    for run in _HAN.findall(text):
        keys.update(run[i:i + 2] for i in range(len(run) - 1))
    return {k for k in keys if k}
