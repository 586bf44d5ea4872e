"""deep for the builtin model: confirm a batch of objects, merge exact duplicates, archive stale
done todos; leave everything else alone.

Rules, and nothing more:
- reviewed = every id of the batch, always;
- two objects of the same type are duplicates when their normalised names are equal or one's
  name equals one of the other's aliases; both must be in `review` or `related`; the survivor is
  the older one (created_at), else the one with the longer body, else the smaller id; the
  survivor's profile is rewritten with the loser's name, aliases, cues and body lines folded in;
- a todo whose body state is done and that was last updated more than 30 days before the newest
  updated_at in the batch is written back whole with status archived;
- an unchanged object is not rewritten; core files (SOUL.md above all) are never written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ..payloads import DeepPayload
from . import profiles as pf

STALE_AFTER = timedelta(days=30)
MAX_MERGES, MAX_OBJECTS = 4, 32
PROFILE_KEYS = ("name", "aliases", "summary", "body", "cues", "status")


def _type_of(obj: Mapping[str, Any]) -> str:
    return str(obj.get("type") or str(obj.get("id", "")).partition(":")[0])


def _when(value: Any) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else None


def _duplicates(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if _type_of(a) != _type_of(b) or a.get("redirect_to") or b.get("redirect_to"):
        return False
    name_a, name_b = pf.norm(str(a.get("name") or "")), pf.norm(str(b.get("name") or ""))
    if not name_a or not name_b:
        return False
    aliases_a = {pf.norm(str(x)) for x in a.get("aliases") or []}
    aliases_b = {pf.norm(str(x)) for x in b.get("aliases") or []}
    return name_a == name_b or name_a in aliases_b or name_b in aliases_a


def _shared_alias(a: Mapping[str, Any], b: Mapping[str, Any],
                  pool: Mapping[str, Mapping[str, Any]]) -> bool:
    """Is the pair found only through an alias that another object of the type holds too? A
    "Marcus" is then no duplicate of "Marcus Lee" (alias Marcus) with "Marcus Chen" also there."""
    for one, two in ((a, b), (b, a)):
        name = pf.norm(str(one.get("name") or ""))
        if name == pf.norm(str(two.get("name") or "")):
            continue
        holders = [o for o in pool.values() if _type_of(o) == _type_of(one) and o is not one
                   and name in {pf.norm(str(x)) for x in o.get("aliases") or []}]
        if len(holders) > 1:
            return True
    return False


def _survivor_first(a: Mapping[str, Any], b: Mapping[str, Any]
                    ) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(survivor, loser): older, else longer body, else smaller id."""
    made_a, made_b = _when(a.get("created_at")), _when(b.get("created_at"))
    if made_a and made_b and made_a != made_b:
        return (a, b) if made_a < made_b else (b, a)
    len_a, len_b = len(str(a.get("body") or "")), len(str(b.get("body") or ""))
    if len_a != len_b:
        return (a, b) if len_a > len_b else (b, a)
    return (a, b) if str(a["id"]) < str(b["id"]) else (b, a)


def _fold(survivor: Mapping[str, Any], loser: Mapping[str, Any]) -> dict[str, Any]:
    """The survivor's whole profile with the loser's names, cues and body lines added."""
    name = str(survivor["name"])
    aliases = pf.merge_unique(list(survivor.get("aliases") or []), [str(loser["name"])],
                              [str(x) for x in loser.get("aliases") or []], exclude=name)
    body = str(survivor.get("body") or "")
    have = {pf.norm(line) for line in body.splitlines()}
    extra = [line for line in str(loser.get("body") or "").splitlines()
             if line.strip() and pf.norm(line) not in have]
    if extra:
        body = (body + "\n" if body else "") + f"- merged from {loser['id']}:\n" + "\n".join(extra)
    summary = str(survivor.get("summary") or "") or str(loser.get("summary") or "")
    cues = pf.merge_unique(list(survivor.get("cues") or []), list(loser.get("cues") or []))
    return _profile(survivor, name=name, aliases=aliases, body=body[:16_000],
                    summary=summary[:400], cues=cues)


def _profile(obj: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": str(obj["id"])}
    for key in PROFILE_KEYS:
        value = changes.get(key, obj.get(key))
        if key == "status" and value not in ("candidate", "active", "archived"):
            continue
        out[key] = list(value or []) if key in ("aliases", "cues") else (
            value if key == "status" else str(value or ""))
    return out


def _unchanged(new: dict[str, Any], old: Mapping[str, Any]) -> bool:
    return all(new.get(k) == (list(old.get(k) or []) if k in ("aliases", "cues") else old.get(k))
               for k in PROFILE_KEYS if k in new)


def build(payload: DeepPayload) -> dict[str, Any]:
    """commit_review arguments for one deep payload."""
    review = [o for o in payload.get("review") or [] if o.get("id")]
    related = [o for o in payload.get("related") or [] if o.get("id")]
    pool = {str(o["id"]): o for o in [*related, *review]}
    stamps = [s for o in pool.values() if (s := _when(o.get("updated_at")))]
    newest = max(stamps) if stamps else None

    merges: list[dict[str, str]] = []
    writes: dict[str, dict[str, Any]] = {}
    involved: set[str] = set()
    for obj in review:
        for other in pool.values():
            if len(merges) >= MAX_MERGES:
                break
            if other["id"] == obj["id"] or {obj["id"], other["id"]} & involved:
                continue
            if not _duplicates(obj, other) or _shared_alias(obj, other, pool):
                continue
            survivor, loser = _survivor_first(obj, other)
            merges.append({"loser": str(loser["id"]), "survivor": str(survivor["id"])})
            involved |= {str(obj["id"]), str(other["id"])}
            folded = _fold(survivor, loser)
            if not _unchanged(folded, survivor):
                writes[str(survivor["id"])] = folded

    for obj in review:
        object_id = str(obj["id"])
        if object_id in involved or _type_of(obj) != "todo" or obj.get("status") == "archived":
            continue
        updated = _when(obj.get("updated_at"))
        if newest and updated and newest - updated > STALE_AFTER and pf.is_done(
                str(obj.get("body") or "")):
            writes[object_id] = _profile(obj, status="archived")

    return {"reviewed": [str(o["id"]) for o in review][:4],
            "objects": list(writes.values())[:MAX_OBJECTS], "relations": [],
            "merges": merges, "core_files": []}


def correct(payload: DeepPayload, previous: dict[str, Any], field_path: str) -> dict[str, Any]:
    """Drop what the correction names (a merge or an object) and resubmit; else only confirm."""
    fixed = {k: list(previous.get(k) or []) for k in ("objects", "relations", "merges")}
    match = re.match(r"(objects|relations|merges)\.(\d+)", field_path)
    if match and int(match.group(2)) < len(fixed[match.group(1)]):
        gone = fixed[match.group(1)].pop(int(match.group(2)))
        if match.group(1) == "merges":
            fixed["objects"] = [o for o in fixed["objects"] if o["id"] != gone.get("survivor")]
    else:
        fixed = {"objects": [], "relations": [], "merges": []}
    reviewed = [str(o["id"]) for o in payload.get("review") or [] if o.get("id")][:4]
    return {"reviewed": reviewed, **fixed, "core_files": []}
