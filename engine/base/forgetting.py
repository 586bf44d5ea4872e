"""Forgetting a text: the marker that replaces it and the forms it is looked for in.

`memvault forget TEXT` is the one deliberate exception to "raw text is never rewritten"
(docs/spec.md section 9). This module only decides *what* replaces what; the module that owns
each table applies it to its own columns (engine/home/forget.py calls them in one transaction).

Invariants:
- TEXT is at least MIN_CHARS chars; shorter text would wipe ordinary words.
- TEXT is looked for as itself and in its JSON-escaped forms (json.dumps with and without
  ensure_ascii), so a copy inside a stored JSON column (meta, claims, receipts, aliases) is
  found too.
- Each occurrence becomes a run of one ASCII fill char of the same length in chars as what it
  replaces: event text keeps its length, so evidence spans, pages and fragment boundaries stay
  valid, and JSON stays valid (the fill char needs no escaping).
- The fill char occurs in none of the forms, so a replacement can never make a new occurrence
  with the text around it: one pass removes every copy.
- Nothing here keeps TEXT beyond the object's life, nor a hash of it.
"""

from __future__ import annotations

import json
import string
from collections import Counter
from dataclasses import dataclass, field

from .errors import InputError

MIN_CHARS = 6
# Preferred fills first: X reads as a redaction on paper, and runs of it are a placeholder to
# the secret detector; the rest only when TEXT holds the ones before.
_FILLS = "X*#~=^x_-.+!|"
_NEVER_FILL = set('"\\' + string.whitespace)


def text_forms(text: str) -> list[str]:
    """TEXT as stored in plain columns and inside JSON strings, longest first, no repeats."""
    forms = {text, json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1]}
    return sorted(forms, key=lambda f: (-len(f), f))


def choose_fill(forms: list[str]) -> str:
    """An ASCII char that occurs in no form (and needs no JSON escape)."""
    used = set("".join(forms))
    for ch in _FILLS + string.ascii_letters + string.digits + string.punctuation:
        if ch not in used and ch not in _NEVER_FILL:
            return ch
    raise InputError("the text uses every printable ASCII character: no marker can replace "
                     "it without making a new copy; forget a shorter part of it")


def check_forget_text(text: object) -> str:
    """TEXT if it may be forgotten, else InputError saying why (never echoing it)."""
    if not isinstance(text, str):
        raise InputError("the text to forget must be a string")
    if "\x00" in text:
        raise InputError("the text to forget holds a NUL character")
    if len(text) < MIN_CHARS:
        raise InputError(f"the text to forget is {len(text)} chars; give at least {MIN_CHARS} "
                         "(a shorter one would wipe ordinary words)")
    if not text.strip():
        raise InputError("the text to forget is blank")
    return text


@dataclass
class Forgetting:
    """One forget (or a dry run of it): what to replace, and how many copies each place held.

    `apply` False is a dry run: owners count, and write nothing. `counts` maps a place
    ("events.text", "objects.body", ...) to occurrences; `changed` maps a place to the keys of
    the rows changed (or that would be)."""

    text: str
    apply: bool = True
    forms: list[str] = field(init=False)
    fill: str = field(init=False)
    counts: Counter[str] = field(default_factory=Counter)
    changed: dict[str, list[object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_forget_text(self.text)
        self.forms = text_forms(self.text)
        self.fill = choose_fill(self.forms)

    @property
    def marker(self) -> str:
        """What TEXT itself becomes: the fill char, len(TEXT) times."""
        return self.fill * len(self.text)

    def occurrences(self, value: str | None) -> int:
        """How many copies of TEXT (any form) `value` holds."""
        if not value:
            return 0
        total = 0
        for form in self.forms:
            if form in value:
                total += value.count(form)
                value = value.replace(form, "\x00")  # a shorter form inside it counts once
        return total

    def replace(self, value: str) -> str:
        """`value` with every copy of TEXT, in any form, a same-length run of the fill char."""
        for form in self.forms:
            if form in value:
                value = value.replace(form, self.fill * len(form))
        return value

    def note(self, place: str, key: object, copies: int) -> None:
        """Count `copies` found at `place` in the row `key`."""
        if copies:
            self.counts[place] += copies
            self.changed.setdefault(place, []).append(key)

    def sql_match(self, column: str) -> tuple[str, list[str]]:
        """A WHERE clause (and its parameters) for rows whose `column` may hold TEXT."""
        clause = " OR ".join(f"instr({column}, ?) > 0" for _ in self.forms)
        return f"({clause})", list(self.forms)
