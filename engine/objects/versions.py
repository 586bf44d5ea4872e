"""An object's history: its versions, who made each, and what changed between two of them.

Reads only. Every change of an object adds an `object_versions` row (objects/records.py); its
`origin` says who made it: `model` (organize, deep, or any version older than migration
m008_version_origin) or `person` (a correction, objects/corrections.py).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..base.errors import NotFound
from .records import ObjectRecord

# The profile fields a version holds, in the order a person reads them.
PROFILE_FIELDS = ("name", "aliases", "summary", "body", "cues", "status", "state",
                  "redirect_to")
_JSON_FIELDS = ("aliases", "cues")


def _profile(row: sqlite3.Row) -> dict[str, Any]:
    return {name: json.loads(row[name]) if name in _JSON_FIELDS else row[name]
            for name in PROFILE_FIELDS}


def object_history(conn: sqlite3.Connection, object_id: str) -> list[dict[str, Any]]:
    """Every version of an object, oldest first: number, time, who made it (`origin`), the
    batch (a model's) and which profile fields it changed from the version before."""
    rows = conn.execute(
        "SELECT * FROM object_versions WHERE object_id = ? ORDER BY version", (object_id,)
    ).fetchall()
    if not rows:
        raise NotFound(f"no object {object_id}")
    history: list[dict[str, Any]] = []
    before: dict[str, Any] | None = None
    for row in rows:
        profile = _profile(row)
        # A first version sets every field it has: a type without states has no state.
        changed = ([name for name in PROFILE_FIELDS[:-1]
                    if name != "state" or profile["state"] is not None] if before is None else
                   [name for name in PROFILE_FIELDS if profile[name] != before[name]])
        history.append({"version": row["version"], "changed_at": row["changed_at"],
                        "origin": row["origin"], "batch_id": row["batch_id"],
                        "status": row["status"], "state": row["state"],
                        "redirect_to": row["redirect_to"],
                        "changed": changed})
        before = profile
    return history


def changed_since(conn: sqlite3.Connection, object_id: str, version: int) -> list[dict[str, Any]]:
    """The versions after `version` with the fields each changed and who made it (empty when
    `version` is the current one): what a person's stale copy of the object does not show."""
    return [entry for entry in object_history(conn, object_id) if entry["version"] > version]


def describe_changes(entries: list[dict[str, Any]]) -> str:
    """`changed_since` in one line: `version 4 (model, 2026-…): summary, body; version 5 …`."""
    return "; ".join(
        f"version {e['version']} ({e['origin']}, {e['changed_at']}): "
        f"{', '.join(e['changed']) or 'no profile field'}" for e in entries)


def record_at(conn: sqlite3.Connection, object_id: str, version: int) -> ObjectRecord:
    """The object's profile as it was at `version` (NotFound when it never had that one)."""
    row = conn.execute("SELECT * FROM object_versions WHERE object_id = ? AND version = ?",
                       (object_id, version)).fetchone()
    if row is None:
        raise NotFound(f"{object_id} has no version {version}")
    profile = _profile(row)
    return ObjectRecord(id=object_id, type=object_id.partition(":")[0], version=version,
                        created_at=row["changed_at"], updated_at=row["changed_at"], **profile)
