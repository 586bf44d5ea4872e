"""A person's corrections of the memory: edit an object's fields, merge two objects, archive one.

A correction is built as the graph write a model would propose (graph_write.GraphWrite) and
goes through the same rules: the proposal schema's field limits (proposals.ObjectWrite),
graph_write.validate_write (sizes, secrets refused, id rules, merge rules, project rules), and
apply_write. What differs from a model's commit is only who made it:

Invariants:
- one correction is ONE transaction (`with write(conn)`): the objects, their versions, the
  graph revision and the receipt commit together or not at all; a refusal changes nothing.
- every object version it records says `origin = 'person'` (migration m008_version_origin).
- the graph revision advances when anything changed, so a batch that claimed before the
  correction has its commit refused as stale and reads the corrected profile on its retry.
- the receipt is kept in `corrections` under the correction's token: the same token sent again
  returns the original receipt (`replayed: true`) and changes nothing.
- only objects that exist are corrected; `create` (`memvault add`) makes a new one, under an
  id made from its type and name, and is refused when a live object of that type already has
  the name (edit that one instead).
- an edit (or a create) never gives an object a name or alias another live object of its type
  answers to (names are how a person points at an object: one name, one object).
- a state of `past` the object already reads as (a vault page shows it) sets nothing: past is
  worked out from the day, never stored; one it does not read as is refused.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, NotRequired, cast

from pydantic import ValidationError

from ..base.clock import iso
from ..base.config import Config
from ..base.errors import FieldError, InputError, NotFound
from ..base.spaces import EVERY_SPACE, Spaces
from ..store.connection import bump_revision, graph_revision, write
from .graph_write import GraphWrite, WriteRules, WriteSummary, apply_write, validate_write
from .ids import (
    OBJECT_TYPES,
    ObjectStatus,
    check_object_id,
    make_slug,
    objects_named,
    resolve_object_ref,
)
from .proposals import Merge, ObjectWrite
from .records import ObjectRecord, get_object, object_exists
from .states import PAST, shown_state, state_problem
from .versions import changed_since, describe_changes

MAX_ALIASES = 32  # proposals.ObjectWrite.aliases: a merge adds the loser's names up to this


class StaleCorrection(InputError):
    """The object changed since the version the person corrected; nothing was written."""


@dataclass(frozen=True)
class ProfileEdit:
    """What a person changes in one object's profile. None / empty: that field is kept.

    `aliases` / `cues` replace the whole list; the add_/remove_ forms change it item by item
    (applied to the stored list inside the correction's transaction, so nothing is lost to a
    write that happened since the person looked)."""

    name: str | None = None
    summary: str | None = None
    body: str | None = None
    aliases: tuple[str, ...] | None = None
    add_aliases: tuple[str, ...] = ()
    remove_aliases: tuple[str, ...] = ()
    cues: tuple[str, ...] | None = None
    add_cues: tuple[str, ...] = ()
    remove_cues: tuple[str, ...] = ()
    state: str | None = None  # a schedule's or todo's (objects/states.py)

    def is_empty(self) -> bool:
        return (self.name is None and self.summary is None and self.body is None
                and self.aliases is None and self.cues is None and self.state is None
                and not (self.add_aliases or self.remove_aliases or self.add_cues
                         or self.remove_cues))

    def applied_to(self, obj: ObjectRecord) -> dict[str, Any]:
        """The whole profile (ObjectWrite's fields) after this edit of `obj`; no state given
        leaves the stored one to the write's rule (graph_write: kept, unless the edited body's
        state line says another)."""
        problem = None if self.state is None else state_problem(obj.type, self.state)
        if problem:
            raise InputError(f"refused, nothing changed: state: {problem}")
        state = {} if self.state is None else {"state": self.state}
        return {**state,
            "id": obj.id,
            "name": obj.name if self.name is None else self.name,
            "summary": obj.summary if self.summary is None else self.summary,
            "body": obj.body if self.body is None else self.body,
            "aliases": _edit_list("aliases", obj.aliases if self.aliases is None
                                  else list(self.aliases), self.add_aliases,
                                  self.remove_aliases),
            "cues": _edit_list("cues", obj.cues if self.cues is None else list(self.cues),
                               self.add_cues, self.remove_cues),
        }


def _edit_list(what: str, items: list[str], add: Sequence[str],
               remove: Sequence[str]) -> list[str]:
    """`items` less `remove`, plus `add` (once each, in order); removing what is not there is
    refused, so a typo is not taken for a done removal."""
    missing = [item for item in remove if item not in items]
    if missing:
        have = ", ".join(repr(i) for i in items) or "none"
        raise InputError(f"{missing[0]!r} is not among the {what} ({have}); nothing changed")
    kept = [item for item in items if item not in remove]
    return list(dict.fromkeys([*kept, *add]))


@dataclass
class Correction:
    """One correction as a person asked for it; `kind` is edit | accept_edit | merge | archive |
    create.

    `refs` are what the person typed (ids, or unique names/aliases), resolved inside the
    transaction: edit/accept_edit/archive name one object, merge names [loser, survivor],
    create names [type, name] of the object to make (its other fields in `edit`)."""

    kind: str
    refs: list[str]
    edit: ProfileEdit = field(default_factory=ProfileEdit)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    # The version of refs[0] the person saw (a hand-edited file's front matter): when the
    # object has changed since, the correction is refused naming what changed. None: no check.
    base_version: int | None = None


class CorrectionReceipt(WriteSummary):
    """A correction's receipt (`Memory.correct`, `memvault edit|merge|archive|accept-edit`);
    kept under its token, so asking again answers the same receipt, `replayed`."""

    token: str
    kind: str  # edit | accept_edit | merge | archive | create
    objects: list[str]  # the ids the refs named (create: the new object's)
    origin: str  # "person"
    changed: bool
    revision: int  # the graph revision after it (bumped only when something changed)
    versions: dict[str, int]  # each object's version after it
    correction_id: int
    replayed: NotRequired[bool]  # True when the token's receipt was answered again


def correct(conn: sqlite3.Connection, config: Config, correction: Correction,
            now: datetime, spaces: Spaces = EVERY_SPACE) -> CorrectionReceipt:
    """Validate and commit a correction in one transaction; return its receipt.

    InputError / NotFound (nothing changed) when a ref names no object or several, the object
    was merged away, the edit is empty, or the write breaks a graph-write rule (the message
    names the field, never a secret value). Bound to a space (`spaces`), a correction sees
    only that space's and shared objects (another's is answered as missing) and what it
    creates is of its space."""
    if not isinstance(correction.token, str) or not 1 <= len(correction.token) <= 200:
        raise InputError("a correction token must be text of 1-200 chars")
    with write(conn):
        replay = conn.execute("SELECT receipt FROM corrections WHERE token = ?",
                              (correction.token,)).fetchone()
        if replay is not None:
            return cast(CorrectionReceipt, {**json.loads(replay[0]), "replayed": True})
        ids = ([_new_id(conn, correction.refs, spaces)] if correction.kind == "create" else
               [_live_id(conn, ref, spaces) for ref in correction.refs])
        if correction.base_version is not None:
            _check_unchanged(conn, ids[0], correction.base_version)
        graph = _graph_write(conn, correction, ids, now.date())
        rules = WriteRules(read_ids=set(ids) if correction.kind != "create" else set(),
                           evidence_range=None, origin="person",
                           # what a bound client creates is of its space; what it edits (its
                           # own or a shared object) stays where it is
                           space=spaces.bound if correction.kind == "create" else None)
        size = len(json.dumps([o.model_dump() for o in graph.objects], ensure_ascii=False)
                   .encode("utf-8"))
        try:
            validated = validate_write(conn, config, graph, rules, size)
        except FieldError as exc:
            raise InputError(f"refused, nothing changed: {_plain(exc)}") from None
        if correction.kind in ("edit", "accept_edit", "create"):  # after the secret check
            _check_names_free(conn, ids[0], graph.objects[0], spaces)
        body = apply_write(conn, validated, rules, now)
        changed = body["objects_changed"] > 0 or bool(body["merged"])
        revision = bump_revision(conn) if changed else graph_revision(conn)
        receipt = CorrectionReceipt(
            token=correction.token, kind=correction.kind, objects=ids, origin="person",
            changed=changed, revision=revision, versions=_versions(conn, ids),
            **body, correction_id=_next_correction_id(conn))
        _save_receipt(conn, correction, receipt, now)
    return receipt


def _next_correction_id(conn: sqlite3.Connection) -> int:
    """The next correction's id. Taken inside the write transaction, which holds the write
    lock: no other writer can take it."""
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM corrections").fetchone()[0])


def _save_receipt(conn: sqlite3.Connection, correction: Correction,
                  receipt: CorrectionReceipt, now: datetime) -> None:
    """Keep the receipt under the correction's token."""
    conn.execute(
        "INSERT INTO corrections (id, token, kind, objects, revision, receipt, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (receipt["correction_id"], correction.token, correction.kind,
         json.dumps(receipt["objects"], ensure_ascii=False), receipt["revision"],
         json.dumps(receipt, ensure_ascii=False), iso(now)))


def _live_id(conn: sqlite3.Connection, ref: str, spaces: Spaces) -> str:
    """The id `ref` names (an id, or a unique name or alias) among the objects `spaces` sees;
    NotFound when no such object, InputError when it was merged into another (correct the
    survivor)."""
    object_id = resolve_object_ref(conn, ref, spaces)
    obj = get_object(conn, object_id)  # NotFound: a correction never creates an object
    if not spaces.sees(obj.space):
        raise NotFound(f"no object {ref}")
    if obj.redirect_to:
        raise InputError(f"{object_id} was merged into {obj.redirect_to}: correct that one "
                         "(`memvault object` shows it); nothing changed")
    return object_id


def _new_id(conn: sqlite3.Connection, refs: Sequence[str], spaces: Spaces) -> str:
    """The id of the object `create` makes from [type, name]: `type:slug-of-name`, suffixed with
    the space when one `spaces` cannot see holds that id (`person:lee-work`, as organize
    separates them). Refused when a live object of that type it sees already has the name or
    an alias like it, or holds that id."""
    if len(refs) != 2 or not all(isinstance(r, str) for r in refs):
        raise InputError("create needs a type and a name")
    type_, name = refs[0], refs[1].strip()
    if type_ not in OBJECT_TYPES:
        raise InputError(f"unknown type {type_!r}: one of {', '.join(OBJECT_TYPES)}")
    if not name:
        raise InputError("the name is empty")
    same = [oid for oid, _ in objects_named(conn, name, spaces) if oid.startswith(type_ + ":")]
    object_id = f"{type_}:{make_slug(name)}"
    if spaces.bound is not None and object_exists(conn, object_id) and not spaces.sees(
            get_object(conn, object_id).space):
        object_id = f"{object_id}-{spaces.bound}"
    if same or object_exists(conn, object_id):
        held = same[0] if same else object_id
        raise InputError(f"{held} already exists with that name: change it with `memvault edit "
                         f"{held}`; nothing was created")
    check_object_id(object_id)
    return object_id


def _check_unchanged(conn: sqlite3.Connection, object_id: str, seen: int) -> None:
    """Refuse a correction made on version `seen` of an object that has changed since."""
    newer = changed_since(conn, object_id, seen)
    if newer:
        raise StaleCorrection(
            f"{object_id} changed since version {seen}, which your copy shows: "
            f"{describe_changes(newer)}; nothing changed (look at `memvault object "
            f"{object_id} --versions`, then redo the edit on the current file, or pass "
            "--force to apply your changed fields over the current version)")


def _graph_write(conn: sqlite3.Connection, correction: Correction,
                 ids: list[str], today: date) -> GraphWrite:
    """The graph write a model would propose for this correction (made on `today`)."""
    if correction.kind == "create":
        edit = correction.edit
        return GraphWrite(objects=[_object_write({
            "id": ids[0], "name": correction.refs[1].strip(),
            "aliases": [*(edit.aliases or ()), *edit.add_aliases],
            "summary": edit.summary or "", "body": edit.body or "",
            "cues": [*(edit.cues or ()), *edit.add_cues],
        })])
    objects = {oid: get_object(conn, oid) for oid in ids}
    if correction.kind in ("edit", "accept_edit"):
        if correction.edit.is_empty():
            raise InputError("nothing to change: give at least one field (see --help)")
        obj = objects[ids[0]]
        edit = correction.edit
        if edit.state == PAST and shown_state(obj.type, obj.state, obj.body, obj.summary,
                                              today) == PAST:
            edit = replace(edit, state=None)  # as the person saw it: nothing to set
        return GraphWrite(objects=[_object_write(edit.applied_to(obj))])
    if correction.kind == "archive":
        obj = objects[ids[0]]
        if obj.status == ObjectStatus.ARCHIVED:
            raise InputError(f"{obj.id} is already archived; nothing changed")
        profile = ProfileEdit().applied_to(obj)
        return GraphWrite(objects=[_object_write({**profile, "status": ObjectStatus.ARCHIVED})])
    if correction.kind == "merge":
        loser, survivor = objects[ids[0]], objects[ids[1]]
        if loser.id == survivor.id:
            raise InputError(f"{loser.id} cannot be merged into itself")
        # The survivor answers to the loser's names from now on (find by name, aliases).
        names = [n for n in [loser.name, *loser.aliases]
                 if n != survivor.name and n not in survivor.aliases]
        aliases = [*survivor.aliases, *names][:max(MAX_ALIASES, len(survivor.aliases))]
        profile = {**ProfileEdit().applied_to(survivor), "aliases": aliases}
        return GraphWrite(objects=[_object_write(profile)],
                          merges=[Merge(loser=loser.id, survivor=survivor.id)])
    raise InputError(f"unknown correction kind {correction.kind!r}")


def _check_names_free(conn: sqlite3.Connection, object_id: str, edited: ObjectWrite,
                      spaces: Spaces) -> None:
    """Refuse a name or alias the edit gives `object_id` that another live object of its type
    `spaces` sees already answers to: every command that takes a name would then stop with
    "names 2 objects" (objects of spaces it cannot see never reach its commands). A name the
    object already answered to is not checked again (the edit did not make that clash)."""
    kind = object_id.partition(":")[0]
    for where, name in [("name", edited.name), *(("aliases", a) for a in edited.aliases)]:
        holders = objects_named(conn, name, spaces)
        if any(oid == object_id for oid, _ in holders):
            continue
        others = [(oid, held) for oid, held in holders if oid.partition(":")[0] == kind]
        if others:
            oid, held = others[0]
            raise InputError(
                f"refused, nothing changed: {where}: {name!r} already names {oid} ({held}); "
                f"two {kind} objects answering to one name leave it naming neither "
                f"(if they are one, `memvault merge {oid} {object_id}`)")


def _object_write(profile: dict[str, Any]) -> ObjectWrite:
    """ObjectWrite.model_validate, its refusal as one InputError naming the field."""
    try:
        return ObjectWrite.model_validate(profile)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"])
        raise InputError(f"refused, nothing changed: {path}: {first['msg']}") from None


def _plain(exc: FieldError) -> str:
    """A graph-write refusal in a person's words: the field path without the write's indexes
    (`objects.0.summary` -> `summary`)."""
    text = str(exc)
    for prefix in ("objects.0.", "merges.0."):
        text = text.replace(prefix, "", 1) if text.startswith(prefix) else text
    return text


def _versions(conn: sqlite3.Connection, ids: list[str]) -> dict[str, int]:
    return {oid: conn.execute("SELECT version FROM objects WHERE id = ?", (oid,)).fetchone()[0]
            for oid in ids}
