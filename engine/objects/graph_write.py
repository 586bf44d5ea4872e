"""Validating and applying a graph write (objects, relations, evidence, core files, merges).

Shared by organize and deep. Every refusal is a FieldError naming the field, so the model can
correct it: overwriting an object the batch did not read, evidence outside the claimed range,
an unknown relation end, a new project that is not `candidate`, activating a project (only
approval does), a secret value in any text of the write (ids, names, aliases, cues, summaries,
bodies, relation ends, core files: the correction names the field and the kind, never the
value), SOUL.md from deep, sizes past the config limits.
Applying happens inside the commit's single transaction. An organize write is as of its
event: a value it would replace that was said later stays current, the write's older one kept
as history (objects/latest.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TypedDict

from ..base.config import Config
from ..base.errors import FieldError, InputError
from ..base.spaces import SHARED
from ..secrets.detector import check_no_secret, check_no_split_secret, scan_once
from .corefiles import write_core_file
from .ids import ObjectStatus, check_object_id
from .latest import BatchEvents, keep_latest
from .proposals import (
    CoreWrite,
    EvidenceWrite,
    LegacyArchive,
    Merge,
    ObjectWrite,
    RelationWrite,
)
from .records import (
    ObjectRecord,
    add_evidence_items,
    add_relation,
    add_relations,
    add_supersedes,
    archive_legacy_relation,
    copy_evidence,
    object_rows,
    redirect_targets,
    resolve_redirect,
    save_object,
    save_read_objects,
)
from .states import body_with_state, has_state, state_from_body, state_of, state_problem


@dataclass
class GraphWrite:
    objects: list[ObjectWrite] = field(default_factory=list)
    relations: list[RelationWrite] = field(default_factory=list)
    evidence: list[EvidenceWrite] = field(default_factory=list)
    core_files: list[CoreWrite] = field(default_factory=list)
    merges: list[Merge] = field(default_factory=list)
    archive_relations: list[LegacyArchive] = field(default_factory=list)


@dataclass(frozen=True)
class ValidatedWrite:
    """A write validate_write passed, with what it read to check it, for apply_write: each
    object row is read once a commit. Made and applied inside ONE write transaction (a
    commit's or a correction's), so nothing can change those rows in between; apply_write
    refuses it outside a transaction."""

    write: GraphWrite
    rows: dict[str, sqlite3.Row | None]  # `objects` row of every id the write names
    targets: dict[str, str]  # survivor of each relation end and evidence object


@dataclass
class WriteRules:
    read_ids: set[str]
    evidence_range: tuple[int, int, int] | None  # (event_id, start, end) the batch may cite
    origin: str  # "organize" | "deep" | "person" (a correction: its versions say so)
    batch_id: int | None = None
    # The space of the event an organize batch reads (memvault.base.spaces): the write may
    # create objects there, update and cite evidence into objects of it only, and (unless it
    # is shared) write no core file. None: no event's space binds the write (deep, a person).
    space: str | None = None
    # Which event each of some batches read (the jobs' records answer it): when an organize
    # write's stored values were said (objects.latest). None: no organize write.
    batch_events: BatchEvents | None = None

    @property
    def version_origin(self) -> str:
        """Who the object versions this write records were made by: "person" or "model"."""
        return "person" if self.origin == "person" else "model"


def _existing(conn: sqlite3.Connection, object_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM objects WHERE id = ?", (object_id,)).fetchone()


def _named_ids(write: GraphWrite) -> list[str]:
    """Every object id the write names (objects, relation ends, evidence, merge ends)."""
    return list(dict.fromkeys([*(o.id for o in write.objects),
                               *(x for r in write.relations for x in (r.src, r.dst)),
                               *(e.object_id for e in write.evidence),
                               *(x for m in write.merges for x in (m.loser, m.survivor))]))


def _read_rows(conn: sqlite3.Connection, ids: list[str]) -> dict[str, sqlite3.Row | None]:
    """The `objects` row of each id (None: no such object), in one query."""
    rows: dict[str, sqlite3.Row | None] = dict.fromkeys(ids)
    if ids:
        rows.update(object_rows(conn, ids))
    return rows


def _link_ends(write: GraphWrite) -> list[str]:
    return [*(x for r in write.relations for x in (r.src, r.dst)),
            *(e.object_id for e in write.evidence)]


def validate_write(conn: sqlite3.Connection, config: Config, write: GraphWrite,
                   rules: WriteRules, size: int) -> ValidatedWrite:
    """Raise FieldError for the first rule the write breaks; else the write with what was read
    to check it (inside the caller's write transaction, for apply_write in that same one)."""
    if size >= config.settings.graph.max_proposal_bytes:
        raise FieldError("proposal", f"{size:,} bytes; a proposal must stay under "
                                     f"{config.settings.graph.max_proposal_bytes:,}")
    graph = config.settings.graph
    for name, items, limit in (("objects", write.objects, graph.max_objects),
                               ("relations", [*write.relations, *write.archive_relations],
                                graph.max_relations),
                               ("core_files", write.core_files, graph.max_core_files)):
        if len(items) > limit:
            raise FieldError(name, f"{len(items)} given; at most {limit} in one write")
    # Before any rule that repeats a value back (an unknown id, a duplicate): a secret in an id
    # must be refused without ever being echoed.
    check_write_secrets(write)
    write = _separate_spaces(conn, write, rules)
    # Every row the checks need, read at once (and kept for apply_write).
    rows = _read_rows(conn, _named_ids(write))
    written = _check_objects(config, write.objects, rules, rows)
    known = written | {oid for oid, row in rows.items() if row is not None}
    targets = redirect_targets(conn, _link_ends(write), rows)
    checked = set(written)  # ids that passed _check_id: one named again is not re-checked
    for j, rel in enumerate(write.relations):
        for end in ("src", "dst"):
            target = getattr(rel, end)
            _check_id(target, f"relations.{j}.{end}", checked)
            if target not in known:
                raise FieldError(f"relations.{j}.{end}", f"no object {target} (create it first)")
        if targets[rel.src] == targets[rel.dst]:
            # A merged id stands for its survivor: a relation to it would be a self-relation.
            why = "" if rel.src == rel.dst else " (one end was merged into the other)"
            raise FieldError(f"relations.{j}", "a relation needs two different objects" + why)
    for k, ev in enumerate(write.evidence):
        _check_id(ev.object_id, f"evidence.{k}.object_id", checked)
        if ev.object_id not in known:
            raise FieldError(f"evidence.{k}.object_id", f"no object {ev.object_id}")
        allowed = rules.evidence_range
        if allowed is None or ev.event_id != allowed[0] or not (
            allowed[1] <= ev.start < ev.end <= allowed[2]
        ):
            where = (f"event {allowed[0]} chars [{allowed[1]}, {allowed[2]})" if allowed
                     else "nothing (this mode cites no evidence)")
            raise FieldError(f"evidence.{k}", f"[{ev.start}, {ev.end}) of event {ev.event_id} "
                                              f"is outside the claimed range: {where}")
    for c, core in enumerate(write.core_files):
        if rules.origin == "deep" and core.name == "SOUL.md":
            raise FieldError(f"core_files.{c}.name", "the nightly review never rewrites SOUL.md")
        if len(core.content.encode()) > config.settings.vault.core_file_max_bytes:
            raise FieldError(f"core_files.{c}.content", "larger than vault.core_file_max_bytes")
    _check_merges(write.merges, rules, rows)
    _check_archives(conn, write, rules)
    _check_spaces(write, rules, rows, targets)
    return ValidatedWrite(write, rows, targets)


def _separate_spaces(conn: sqlite3.Connection, write: GraphWrite,
                     rules: WriteRules) -> GraphWrite:
    """An object an organize write would change that belongs to another space is filed as a
    separate object of the event's space instead: its id takes the space as a suffix
    (`person:lee` -> `person:lee-home`) wherever the write names it. Trigger: two spaces'
    events name the same person, and the model (the builtin one derives ids from the text)
    gives both the same id; refusing it left the second event with no object at all."""
    if rules.space is None or not write.objects:
        return write
    rows = object_rows(conn, [o.id for o in write.objects])
    moved = {oid: f"{oid}-{rules.space}" for oid, row in rows.items()
             if row["space"] != rules.space}
    if not moved:
        return write

    def own(object_id: str) -> str:
        return moved.get(object_id, object_id)

    return replace(
        write,
        objects=[o.model_copy(update={"id": own(o.id)}) for o in write.objects],
        relations=[r.model_copy(update={"src": own(r.src), "dst": own(r.dst)})
                   for r in write.relations],
        evidence=[e.model_copy(update={"object_id": own(e.object_id)})
                  for e in write.evidence])


def _check_spaces(write: GraphWrite, rules: WriteRules, rows: dict[str, sqlite3.Row | None],
                  targets: dict[str, str]) -> None:
    """An event of one space never goes into an object of another (an object written is
    separated first: _separate_spaces; evidence cited into another space's object is refused,
    and the model told to file it under a new object), and an event of a space other than
    shared never into a core file. Merges keep to one space, whoever asks."""
    for m, merge in enumerate(write.merges):
        loser, survivor = rows[merge.loser], rows[merge.survivor]
        if loser is not None and survivor is not None and loser["space"] != survivor["space"]:
            raise FieldError(f"merges.{m}", f"{merge.loser} (space {loser['space']}) and "
                             f"{merge.survivor} (space {survivor['space']}) are of different "
                             "spaces: objects of different spaces are never merged")
    space = rules.space
    if space is None:
        return
    advice = f"; file what this event says under a new object id (it is of space {space})"
    for i, obj in enumerate(write.objects):
        row = rows[obj.id]
        if row is not None and row["space"] != space:
            raise FieldError(f"objects.{i}.id",
                             f"{obj.id} belongs to space {row['space']}{advice}")
    for k, ev in enumerate(write.evidence):
        row = rows.get(targets.get(ev.object_id, ev.object_id)) or rows.get(ev.object_id)
        if row is not None and row["space"] != space:
            raise FieldError(f"evidence.{k}.object_id",
                             f"{ev.object_id} belongs to space {row['space']}{advice}")
    if write.core_files and space != SHARED:
        raise FieldError("core_files", f"an event of space {space} never writes a core file "
                                       "(core files are shared)")


def write_texts(write: GraphWrite) -> Iterator[tuple[str, str]]:
    """Every text the write would store or name, with its field path (`objects.2.aliases.1`)."""
    for i, obj in enumerate(write.objects):
        yield f"objects.{i}.id", obj.id
        yield f"objects.{i}.name", obj.name
        yield from ((f"objects.{i}.aliases.{j}", a) for j, a in enumerate(obj.aliases))
        yield f"objects.{i}.summary", obj.summary
        yield f"objects.{i}.body", obj.body
        yield from ((f"objects.{i}.cues.{j}", c) for j, c in enumerate(obj.cues))
    for j, rel in enumerate(write.relations):
        yield f"relations.{j}.src", rel.src
        yield f"relations.{j}.dst", rel.dst
    for k, ev in enumerate(write.evidence):
        yield f"evidence.{k}.object_id", ev.object_id
    for c, core in enumerate(write.core_files):
        yield f"core_files.{c}.content", core.content
    for m, merge in enumerate(write.merges):
        yield f"merges.{m}.loser", merge.loser
        yield f"merges.{m}.survivor", merge.survivor
    for a, item in enumerate(write.archive_relations):
        # The legacy label is already stored text, only named back: it is never echoed.
        yield f"archive_relations.{a}.src", item.src
        yield f"archive_relations.{a}.dst", item.dst


def check_write_secrets(write: GraphWrite) -> None:
    """FieldError naming the first field that holds a secret-looking value (never the value).
    A text named by several fields (an id as a relation end and in evidence) is scanned once."""
    with scan_once():
        for where, text in write_texts(write):
            check_no_secret(where, text)
        for i, obj in enumerate(write.objects):  # each field clean: now read as one text
            check_no_split_secret(f"objects.{i}", [obj.name, *obj.aliases, obj.summary,
                                                   obj.body, *obj.cues])


def _check_id(object_id: str, where: str, checked: set[str] | None = None) -> None:
    if checked is not None and object_id in checked:
        return
    try:
        check_object_id(object_id)
    except InputError as exc:
        raise FieldError(where, str(exc)) from None
    if checked is not None:
        checked.add(object_id)


def _check_objects(config: Config, objects: list[ObjectWrite], rules: WriteRules,
                   rows: dict[str, sqlite3.Row | None]) -> set[str]:
    seen: set[str] = set()
    for i, obj in enumerate(objects):
        _check_id(obj.id, f"objects.{i}.id")
        if obj.id in seen:
            raise FieldError(f"objects.{i}.id", f"{obj.id} appears twice in this write")
        seen.add(obj.id)
        row = rows[obj.id]
        if row is not None and row["redirect_to"]:
            raise FieldError(f"objects.{i}.id",
                             f"{obj.id} was merged into {row['redirect_to']}; write that id")
        if row is not None and obj.id not in rules.read_ids:
            raise FieldError(f"objects.{i}.id", f"{obj.id} exists and this batch has not read "
                                                "it: call read_object first, then write it whole")
        if len(obj.summary) > config.settings.objects.summary_max_chars:
            raise FieldError(f"objects.{i}.summary",
                             f"at most {config.settings.objects.summary_max_chars} chars")
        if len(obj.body) > config.settings.objects.body_max_chars:
            limit = config.settings.objects.body_max_chars
            raise FieldError(f"objects.{i}.body", f"at most {limit} chars")
        _check_status(obj, row, i)
        if obj.state is not None and (problem := state_problem(obj.id.partition(":")[0],
                                                               obj.state)):
            raise FieldError(f"objects.{i}.state", problem)
    return seen


def _check_status(obj: ObjectWrite, row: sqlite3.Row | None, i: int) -> None:
    is_project = obj.id.startswith("project:")
    if row is None and is_project and obj.status not in (None, ObjectStatus.CANDIDATE):
        raise FieldError(f"objects.{i}.status", "a new project must be created as candidate; "
                                                "only the agent activates it after asking")
    if (row is not None and is_project and row["status"] == ObjectStatus.CANDIDATE
            and obj.status == ObjectStatus.ACTIVE):
        raise FieldError(f"objects.{i}.status", "only project approval activates a candidate "
                                                "project (memvault project approve)")


def _check_merges(merges: list[Merge], rules: WriteRules,
                  rows: dict[str, sqlite3.Row | None]) -> None:
    for m, merge in enumerate(merges):
        for end in ("loser", "survivor"):
            target = getattr(merge, end)
            _check_id(target, f"merges.{m}.{end}")
            row = rows[target]
            if row is None:
                raise FieldError(f"merges.{m}.{end}", f"no object {target}")
            if row["redirect_to"]:
                raise FieldError(f"merges.{m}.{end}", f"{target} is already merged")
            if target not in rules.read_ids:
                raise FieldError(f"merges.{m}.{end}", f"{target} was not read by this batch")
        if merge.loser == merge.survivor:
            raise FieldError(f"merges.{m}", "an object cannot be merged into itself")
        # Within one write a loser is merged once and never survives another merge, and a
        # survivor never loses one: otherwise the redirects could form a cycle (a -> b -> a)
        # that leaves no live object at all.
        earlier = merges[:m]
        if merge.loser in {x.loser for x in earlier} | {x.survivor for x in earlier}:
            raise FieldError(f"merges.{m}.loser", f"{merge.loser} is already in an earlier "
                                                  "merge of this write")
        if merge.survivor in {x.loser for x in earlier}:
            raise FieldError(f"merges.{m}.survivor", f"{merge.survivor} is merged away earlier "
                                                     "in this write")


def _check_archives(conn: sqlite3.Connection, write: GraphWrite, rules: WriteRules) -> None:
    """Each archived relation must be a live legacy row with an end the batch read; its
    standard replacement needs two different objects (after merges) and counts against
    graph.max_relations with the write's other relations."""
    if write.archive_relations and rules.origin != "deep":
        raise FieldError("archive_relations", "only the nightly review archives relations")
    for a, item in enumerate(write.archive_relations):
        where = f"archive_relations.{a}"
        _check_id(item.src, f"{where}.src")
        _check_id(item.dst, f"{where}.dst")
        row = conn.execute(
            "SELECT archived FROM relations WHERE src_id = ? AND label = ? AND dst_id = ?"
            " AND legacy = 1", (item.src, item.legacy_label, item.dst)).fetchone()
        if row is None:
            raise FieldError(where, f"no legacy relation from {item.src} to {item.dst} with "
                                    "that label (copy src, label and dst from the links)")
        if row["archived"]:
            raise FieldError(where, "that legacy relation is already archived")
        if item.src not in rules.read_ids and item.dst not in rules.read_ids:
            raise FieldError(where, f"neither {item.src} nor {item.dst} was read by this batch")
        merged = {m.loser: m.survivor for m in write.merges}  # ends after this write's merges
        ends = {merged.get(e, resolve_redirect(conn, e)) for e in (item.src, item.dst)}
        if len(ends) == 1:
            raise FieldError(f"{where}.label", "its ends were merged into one object: a standard "
                                               "relation needs two different objects")
        if write.archive_relations[:a].count(item):
            raise FieldError(where, "the same legacy relation appears twice in this write")


def archive_legacy(conn: sqlite3.Connection, item: LegacyArchive, now: datetime,
                   batch_id: int | None) -> bool:
    """Archive one legacy relation and write its standard one; True if the row changed."""
    changed = archive_legacy_relation(conn, item.src, item.legacy_label, item.dst)
    add_relation(conn, item.src, item.label, item.dst, now, batch_id)
    return changed


class WriteSummary(TypedDict):
    """What a graph write changed (a batch's receipt and a correction's carry it)."""

    objects_changed: int  # objects that got a new version
    objects_unchanged: int  # objects written exactly as they were
    relations_added: int
    evidence_added: int
    core_files: int  # core files that got a new version
    merged: list[str]  # the ids merged away
    relations_archived: int  # legacy relations replaced by their standard label


def apply_write(conn: sqlite3.Connection, reads: ValidatedWrite, rules: WriteRules,
                now: datetime) -> WriteSummary:
    """Apply a validated write inside the caller's transaction, the one that validated it (its
    rows are not read again); return what changed."""
    if not conn.in_transaction:
        raise RuntimeError("apply_write outside the transaction that validated the write")
    write = reads.write
    items = [(_record(obj, reads.rows[obj.id], rules.space), reads.rows[obj.id])
             for obj in write.objects]
    if rules.evidence_range is not None:  # organize: the write says what its event said
        if rules.batch_events is None:
            raise RuntimeError("an organize write needs WriteRules.batch_events")
        event_id, batch_events = rules.evidence_range[0], rules.batch_events
        items = [(keep_latest(conn, record, row, event_id, batch_events), row)
                 for record, row in items]
    saved = save_read_objects(conn, items, now, rules.batch_id, rules.version_origin)
    changed = sum(record.version != (row["version"] if row is not None else 0)
                  for record, (_, row) in zip(saved, items, strict=True))
    # The survivors found before the objects were written still hold: a written object is
    # never merged (validation refuses one) and merges come after the links.
    relations = add_relations(conn, [(r.src, r.label, r.dst) for r in write.relations], now,
                              rules.batch_id, reads.targets)
    evidence = add_evidence_items(
        conn, [(e.object_id, e.event_id, e.start, e.end) for e in write.evidence], now,
        rules.batch_id, reads.targets)
    cores = sum(write_core_file(conn, c.name, c.content, rules.origin, now, rules.batch_id)
                is not None for c in write.core_files)
    for merge in write.merges:
        merge_objects(conn, merge.loser, merge.survivor, now, rules.batch_id,
                      rules.version_origin)
    archived = sum(archive_legacy(conn, a, now, rules.batch_id) for a in write.archive_relations)
    return WriteSummary(objects_changed=changed, objects_unchanged=len(write.objects) - changed,
                        relations_added=relations, evidence_added=evidence, core_files=cores,
                        merged=[m.loser for m in write.merges], relations_archived=archived)


def _record(obj: ObjectWrite, row: sqlite3.Row | None, space: str | None) -> ObjectRecord:
    """The profile an ObjectWrite stores; no status given keeps the stored one (a new project
    is a candidate, anything else new is active). A new object is of `space` (the event's;
    shared when none), a stored one keeps its own. The body's state line says the state
    stored (states.body_with_state), whoever set it."""
    new = ObjectStatus.CANDIDATE if obj.id.startswith("project:") else ObjectStatus.ACTIVE
    status = obj.status or (row["status"] if row is not None else new)
    type_ = obj.id.split(":", 1)[0]
    state = _state(type_, obj, row)
    return ObjectRecord(id=obj.id, type=type_, name=obj.name,
                        aliases=list(dict.fromkeys(obj.aliases)), summary=obj.summary,
                        body=body_with_state(type_, obj.body, state),
                        cues=list(dict.fromkeys(obj.cues)), status=status, state=state,
                        space=space or SHARED)


def _state(type_: str, obj: ObjectWrite, row: sqlite3.Row | None) -> str | None:
    """The state an ObjectWrite stores: the one it gives; else a new object's is what its body
    says, and a stored one is kept unless the body's state line now says another (a model
    that rewrote the body but left the field out)."""
    if not has_state(type_):
        return None
    if obj.state is not None:
        return obj.state
    said = state_from_body(type_, obj.body)
    if row is None:
        return said
    stored = state_of(type_, row["state"], row["body"])
    return said if said != state_from_body(type_, row["body"]) else stored


def merge_objects(conn: sqlite3.Connection, loser: str, survivor: str, now: datetime,
                  batch_id: int | None, origin: str = "model") -> None:
    """Fold `loser` into `survivor`: supersedes relation, evidence copied, loser redirects."""
    add_supersedes(conn, survivor, loser, now, batch_id)
    copy_evidence(conn, loser, survivor, now, batch_id)
    row = _existing(conn, loser)
    assert row is not None
    record = ObjectRecord.from_row(row)
    record.redirect_to = survivor
    save_object(conn, record, now, batch_id, origin)
