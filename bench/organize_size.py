"""Where the organized objects' characters go: used by organize_quality.py (--sizes).

The size metric (fact_quality.py) counts name + summary + body of the live objects. This
breaks those characters down, so a rule that cuts size can be aimed at what carries no fact:

- by object type (person, schedule, todo, knowledge, …);
- by field: name, summary, body `label: value` lines (split into the label and its value,
  "unknown" values apart), dated lines (split into the "- 2023-05-08: " / "  - " prefix and
  the text), history lines, other lines; aliases and cues are shown too though size does not
  count them;
- duplication: a summary whose words one body line of the same object already holds, and a
  clause (a dated line's part, split at ";") held by a line of ANOTHER object (same words, or
  one containing the other's: 80% of the shorter's words).

    python bench/organize_quality.py --sizes       # the breakdown for both splits
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from typing import Any

_DATED = re.compile(r"^(?:- (?:\d{4}-\d{2}-\d{2}|undated): |  - )")
_LABELLED = re.compile(r"^\s*- ([^:：\n]{1,40}?)[:：]\s*")
_HISTORY = re.compile(r"^- (?:history|历史)[:：]")
_WORD = re.compile(r"[a-z0-9\u4e00-\u9fff]{3,}")
CONTAINS = 0.8


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def _body_parts(body: str, parts: Counter[str]) -> list[str]:
    """Count one body's characters by kind into `parts`; its clauses (dated-line parts)."""
    clauses: list[str] = []
    for line in body.splitlines():
        n = len(line)
        dated = _DATED.match(line)
        if dated:
            parts["body dated prefix"] += len(dated.group(0))
            parts["body dated text"] += n - len(dated.group(0))
            clauses += [c.strip() for c in line[dated.end():].split(";") if c.strip()]
        elif _HISTORY.match(line):
            parts["body history"] += n
        elif (labelled := _LABELLED.match(line)) is not None:
            value = line[labelled.end():].strip()
            parts["body label"] += len(labelled.group(0))
            kind = "unknown" if value.casefold() in ("unknown", "未知") else "value"
            parts[f"body field {kind}"] += n - len(labelled.group(0))
        else:
            parts["body other"] += n
    return clauses


def _contained(a: frozenset[str], b: frozenset[str]) -> bool:
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(small) >= 3 and len(small & large) >= CONTAINS * len(small)


def size_breakdown(conn: sqlite3.Connection) -> dict[str, Any]:
    """Characters of the live objects by type, by field, and duplicated (see the module doc);
    every value is a character count."""
    by_type: Counter[str] = Counter()
    parts: Counter[str] = Counter()
    dup: Counter[str] = Counter()
    clauses: list[tuple[str, str, frozenset[str]]] = []  # (object id, clause, words)
    rows = conn.execute(
        "SELECT id, type, name, summary, body, aliases, cues FROM objects"
        " WHERE redirect_to IS NULL AND status != 'archived' AND id != 'project:daily'")
    for oid, type_, name, summary, body, aliases, cues in rows:
        summary, body = summary or "", body or ""
        by_type[type_] += len(name) + len(summary) + len(body)
        parts["name"] += len(name)
        parts["summary"] += len(summary)
        parts["(aliases, not counted)"] += sum(len(a) for a in json.loads(aliases or "[]"))
        parts["(cues, not counted)"] += sum(len(c) for c in json.loads(cues or "[]"))
        parts["body newlines"] += body.count("\n")
        mine = _body_parts(body, parts)
        said = _words(summary)
        if summary and any(_contained(said, _words(line)) for line in body.splitlines()):
            dup["summary repeats a body line"] += len(summary)
        clauses += [(oid, c, _words(c)) for c in mine]
    seen: dict[frozenset[str], str] = {}
    for oid, clause, words in clauses:
        if any(other != oid and _contained(words, w) for w, other in seen.items()):
            dup["clause held by another object"] += len(clause)
        elif words in seen and seen[words] == oid:
            dup["clause repeated in its object"] += len(clause)
        seen.setdefault(words, oid)
    return {"type": dict(by_type), "field": {k: v for k, v in parts.items() if v},
            "duplicated": dict(dup), "total": sum(by_type.values())}


def merged(breakdowns: list[dict[str, Any]]) -> dict[str, Any]:
    """The breakdowns of several conversations summed."""
    out: dict[str, Any] = {"type": Counter(), "field": Counter(), "duplicated": Counter(),
                           "total": 0}
    for b in breakdowns:
        for key in ("type", "field", "duplicated"):
            out[key].update(b[key])
        out["total"] += b["total"]
    return out


def print_breakdown(name: str, b: dict[str, Any], conversation_chars: int) -> None:
    """One split's breakdown: characters, share of the object characters, and size points
    (characters per conversation character)."""
    total = max(1, b["total"])
    size = b["total"] / max(1, conversation_chars)
    print(f"\n{name}: {b['total']} object chars, size {size:.3f}")
    for key in ("type", "field", "duplicated"):
        print(f"  by {key}:")
        for label, chars in sorted(b[key].items(), key=lambda kv: -kv[1]):
            print(f"    {label:34} {chars:>8} {100 * chars / total:>6.1f}%"
                  f" {chars / max(1, conversation_chars):>7.3f}")
