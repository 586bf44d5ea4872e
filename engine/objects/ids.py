"""Object ids `type:slug` and the names that lead to them.

The object types and relation labels are the domain's words (docs/spec.md section 1); the
schema's CHECK constraints (home/migrations.py m001) hold the same lists, frozen as m001 wrote
them, and tests/test_migrations.py checks that the two agree. An id is checked before it is
used anywhere: it becomes a vault file name's hash input and an argument of every command.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from enum import StrEnum
from typing import Any

from ..base.errors import InputError
from ..base.spaces import Spaces


class ObjectStatus(StrEnum):
    """An object's status (objects.status): a project is born a `candidate`."""

    CANDIDATE = "candidate"
    ACTIVE = "active"
    ARCHIVED = "archived"


OBJECT_TYPES = ("person", "task", "todo", "schedule", "knowledge", "project", "credential")
RELATION_LABELS = (
    "member_of", "related_to", "assigned_to", "depends_on", "about", "supersedes", "knows",
)
_SLUG_BAD = re.compile(r"[\s/\\:#|^\[\]%<>\"'*?`{}]")


def check_object_id(object_id: Any) -> tuple[str, str]:
    """Split and validate `type:slug`; a path, control char or unknown type is an InputError."""
    if not isinstance(object_id, str):
        raise InputError(f"object id must be a string like person:zhang-wei, got {object_id!r}")
    kind, sep, slug = object_id.partition(":")
    if not sep or kind not in OBJECT_TYPES:
        raise InputError(
            f"not an object id: {object_id!r} (expected type:slug with type one of "
            f"{', '.join(OBJECT_TYPES)})"
        )
    if not slug or len(slug) > 120:
        raise InputError(f"object id {object_id!r}: the slug must be 1–120 chars")
    if _SLUG_BAD.search(slug) or slug.startswith(".") or ".." in slug:
        raise InputError(
            f"object id {object_id!r}: the slug may not hold spaces, path separators or "
            "any of : # | ^ [ ] % < > \" ' * ? ` { } (nor start with '.' or hold '..')"
        )
    # A printable slug holds no control, format or unassigned char (all are unprintable).
    if not slug.isprintable() and any(unicodedata.category(ch).startswith("C") for ch in slug):
        raise InputError(f"object id {object_id!r}: the slug holds a control character")
    return kind, slug


def make_slug(name: str) -> str:
    """A readable slug from a name: lowercased, spaces to '-', CJK kept, unsafe chars dropped."""
    text = unicodedata.normalize("NFKC", name).strip().lower()
    text = re.sub(r"\s+", "-", text)
    text = _SLUG_BAD.sub("", text)
    text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("C"))
    text = re.sub(r"-{2,}", "-", text).strip("-.")
    return text[:80] or "unnamed"


def _name_key(text: str) -> str:
    """A name's normal form for matching what a person types: NFKC, case-folded, one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _index_terms(ref: str) -> set[str]:
    """Terms of the object_names index (migration m004) under which `ref` may be filed: its
    first two chars when CJK, else its first word lowered as SQLite's ASCII-only lower() does
    and as Python does."""
    text = unicodedata.normalize("NFKC", ref).strip()
    if not text:
        return set()
    if ord(text[0]) >= 11904:
        return {text[:2]}
    word = text.split()[0]
    return {word.lower(), "".join(ch.lower() if ch.isascii() else ch for ch in word)}


def objects_named(conn: sqlite3.Connection, ref: str,
                  spaces: Spaces) -> list[tuple[str, str]]:
    """(id, name) of every live (not merged) object `spaces` sees whose name or an alias is
    `ref`, case-folded and NFKC-normalised. Indexed lookup first; a full scan only on a miss."""
    want = _name_key(ref)
    if not want:
        return []
    seen, args = spaces.sql("space")
    sql = ("SELECT id, name, aliases FROM objects WHERE redirect_to IS NULL AND "
           + seen + "{} ORDER BY id")
    terms = sorted(_index_terms(ref))
    rows = conn.execute(sql.format(
        f" AND id IN (SELECT object_id FROM object_names WHERE term IN "
        f"({', '.join('?' * len(terms))}))"), (*args, *terms)).fetchall() if len(want) >= 2 else []
    matches = _matching(rows, want)
    if not matches:
        matches = _matching(conn.execute(sql.format(""), args).fetchall(), want)
    return matches


def _matching(rows: list[sqlite3.Row], want: str) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in rows
            if want in {_name_key(row[1]), *(_name_key(a) for a in json.loads(row[2] or "[]"))}]


def resolve_object_ref(conn: sqlite3.Connection, ref: Any,
                       spaces: Spaces) -> str:
    """An object id as given, or the id of the one live object `spaces` sees named `ref` (its
    name or an alias, case-folded; Chinese too). No match keeps the id error; several list
    the ids."""
    if isinstance(ref, str) and ref.partition(":")[0] not in OBJECT_TYPES:
        matches = objects_named(conn, ref, spaces)
        if len(matches) == 1:
            return matches[0][0]
        if len(matches) > 1:
            listing = "; ".join(f"{oid} ({name})" for oid, name in matches[:20])
            more = f" and {len(matches) - 20} more" if len(matches) > 20 else ""
            raise InputError(f"{ref!r} names {len(matches)} objects: {listing}{more}; "
                             "give one of these ids")
        try:
            check_object_id(ref)
        except InputError as exc:
            raise InputError(f"{exc}; no object has that name or alias either") from None
    check_object_id(ref)
    return ref
