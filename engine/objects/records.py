"""Long-term objects: profiles under stable ids `type:slug`, their versions, relations, evidence.

Invariants: every change of an object adds an object_versions row (history is never rewritten);
an object merged into another keeps its row, readable, with `redirect_to` naming the survivor;
relation labels are the short ones (legacy rows excepted); evidence points at event slices.
`forget_in_objects` is the one rewrite of history, asked for by the owner (`memvault forget`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, NamedTuple, TypedDict, cast

from ..base.clock import iso
from ..base.errors import InputError, NotFound
from ..base.forgetting import Forgetting
from ..base.spaces import SHARED, Spaces, check_space
from ..store.disk import table_bytes
from ..store.forget_rows import forget_in_rows
from .ids import OBJECT_TYPES, RELATION_LABELS, ObjectStatus, check_object_id
from .links import object_links
from .states import check_state, marked_summary, shown_state, state_of

READ_PAGE = 50


class ObjectProfile(TypedDict):
    """An object's profile as the API shows it (`ObjectRecord.to_dict`)."""

    id: str
    type: str
    name: str
    aliases: list[str]
    summary: str
    body: str
    cues: list[str]
    status: str  # an ObjectStatus
    state: str | None  # a schedule's or todo's (objects/states.py); None for other types
    version: int
    redirect_to: str | None  # the survivor it was merged into
    created_at: str
    updated_at: str
    space: str  # the space it belongs to (memvault.base.spaces)


@dataclass
class ObjectRecord:
    """An object's current profile."""

    id: str
    type: str
    name: str
    aliases: list[str] = field(default_factory=list)
    summary: str = ""
    body: str = ""
    cues: list[str] = field(default_factory=list)
    status: str = ObjectStatus.ACTIVE
    state: str | None = None  # objects/states.py: a schedule's or todo's, else None
    version: int = 1
    redirect_to: str | None = None
    created_at: str = ""
    updated_at: str = ""
    space: str = SHARED  # set when created; only `memvault space move` changes it

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ObjectRecord:
        return cls(
            id=row["id"], type=row["type"], name=row["name"], aliases=json.loads(row["aliases"]),
            summary=row["summary"], body=row["body"], cues=json.loads(row["cues"]),
            status=row["status"], state=state_of(row["type"], row["state"], row["body"]),
            version=row["version"], redirect_to=row["redirect_to"],
            created_at=row["created_at"], updated_at=row["updated_at"], space=row["space"],
        )

    def to_dict(self) -> ObjectProfile:
        # the fields are ObjectProfile's, in its order (tests/test_answer_types.py)
        return cast(ObjectProfile, dict(self.__dict__))


def get_object(conn: sqlite3.Connection, object_id: str) -> ObjectRecord:
    check_object_id(object_id)
    row = conn.execute("SELECT * FROM objects WHERE id = ?", (object_id,)).fetchone()
    if row is None:
        raise NotFound(f"no object {object_id}")
    return ObjectRecord.from_row(row)


def object_exists(conn: sqlite3.Connection, object_id: str) -> bool:
    """Whether an object row (live or merged) has this id."""
    return conn.execute("SELECT 1 FROM objects WHERE id = ?", (object_id,)).fetchone() is not None


def object_rows(conn: sqlite3.Connection, ids: list[str],
                live_only: bool = False) -> dict[str, sqlite3.Row]:
    """The `objects` rows of `ids` by id, in one query (an id with no object is left out;
    with `live_only`, one merged away too). Callers pass a bounded list."""
    live = " AND redirect_to IS NULL" if live_only else ""
    return {row["id"]: row for row in conn.execute(
        f"SELECT * FROM objects WHERE id IN (SELECT value FROM json_each(?)){live}",
        (json.dumps(ids, ensure_ascii=False),))}


def object_records(conn: sqlite3.Connection, ids: list[str],
                   live_only: bool = False) -> dict[str, ObjectRecord]:
    """The objects of `ids` by id, typed, in one query (an id with no object is left out; a
    merged one is kept, its redirect set, unless `live_only`). Callers pass a bounded list."""
    return {object_id: ObjectRecord.from_row(row)
            for object_id, row in object_rows(conn, ids, live_only).items()}


def object_spaces(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
    """The space of each of `ids` that names an object (live or merged), in one query."""
    return {row[0]: row[1] for row in conn.execute(
        "SELECT id, space FROM objects WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids), ensure_ascii=False),))}


def live_ids_by_space(conn: sqlite3.Connection, spaces: Spaces) -> list[str]:
    """The ids of the live objects `spaces` sees, by space, then type, then id (the order a
    nightly review takes them in, a batch of one space at a time)."""
    seen, args = spaces.sql("space")
    return [r[0] for r in conn.execute(
        f"SELECT id FROM objects WHERE redirect_to IS NULL AND {seen}"
        " ORDER BY space, type, id", args)]


@dataclass(frozen=True)
class ObjectNames:
    """What an object answers to: its id, name and aliases (the JSON list as stored), and its
    space."""

    id: str
    name: str
    aliases: str
    space: str


def live_names(conn: sqlite3.Connection, type_: str, spaces: Spaces) -> list[ObjectNames]:
    """The names of every live object of `type_` that `spaces` sees: only names are read, for a
    scan that runs over every object of the type."""
    seen, args = spaces.sql("space")
    return [ObjectNames(*r) for r in conn.execute(
        f"SELECT id, name, aliases, space FROM objects WHERE type = ? AND redirect_to IS NULL"
        f" AND {seen}", (type_, *args))]


def version_bytes(conn: sqlite3.Connection, spaces: Spaces) -> dict[str, int]:
    """Rows and UTF-8 bytes of the versions of the objects `spaces` sees (store/disk.py)."""
    seen, args = spaces.sql("space")
    of_seen = ("1" if spaces.bound is None
               else f"object_id IN (SELECT id FROM objects WHERE {seen})")
    return table_bytes(conn, "object_versions", of_seen, args)


def merged_ids(conn: sqlite3.Connection) -> list[str]:
    """The ids of every object merged into another (its `redirect_to` set)."""
    return [r[0] for r in conn.execute("SELECT id FROM objects WHERE redirect_to IS NOT NULL")]


def event_citers(conn: sqlite3.Connection, event_id: int) -> list[str]:
    """The objects whose evidence cites the event (its targets so far)."""
    return citers_of(conn, [event_id])


def citers_of(conn: sqlite3.Connection, event_ids: Sequence[int]) -> list[str]:
    """The objects whose evidence cites one of the events, by id, in one statement."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT object_id FROM evidence"
        " WHERE event_id IN (SELECT value FROM json_each(?)) ORDER BY object_id",
        (json.dumps(list(event_ids)),))]


def evidence_count(conn: sqlite3.Connection, event_id: int) -> int:
    """How many evidence links cite the event."""
    return int(conn.execute("SELECT COUNT(*) FROM evidence WHERE event_id = ?",
                            (event_id,)).fetchone()[0])


def resolve_redirect(conn: sqlite3.Connection, object_id: str) -> str:
    """Follow merge redirects to the surviving id (cycle-safe)."""
    seen = {object_id}
    current = object_id
    while True:
        row = conn.execute("SELECT redirect_to FROM objects WHERE id = ?", (current,)).fetchone()
        if row is None or row[0] is None or row[0] in seen:
            return current
        current = row[0]
        seen.add(current)


class ObjectHeading(NamedTuple):
    """What a directory of objects shows of one (merged ones included): its stored state
    (None for a type without one), not the state of a day."""

    id: str
    type: str
    name: str
    status: str
    state: str | None
    body: str
    summary: str
    redirect_to: str | None
    space: str


def object_headings(conn: sqlite3.Connection, spaces: Spaces) -> list[ObjectHeading]:
    """Every object `spaces` sees, live or merged, by id."""
    seen, args = spaces.sql("space")
    cur = conn.cursor()
    cur.row_factory = None
    return [ObjectHeading(*row) for row in cur.execute(
        "SELECT id, type, name, status, state, body, summary, redirect_to, space"
        f" FROM objects WHERE {seen} ORDER BY id", args)]


def ids_by_update(conn: sqlite3.Connection, spaces: Spaces) -> list[str]:
    """The ids of every object `spaces` sees, live or merged, least recently updated first."""
    seen, args = spaces.sql("space")
    return [row[0] for row in conn.execute(
        f"SELECT id FROM objects WHERE {seen} ORDER BY updated_at, id", args)]


def open_plans(conn: sqlite3.Connection, spaces: Spaces) -> list[ObjectHeading]:
    """The live schedules `spaces` sees that are still scheduled or moved as stored: those
    whose day may have gone since a page showed them."""
    seen, args = spaces.sql("space")
    cur = conn.cursor()
    cur.row_factory = None
    return [ObjectHeading(*row) for row in cur.execute(
        "SELECT id, type, name, status, state, body, summary, redirect_to, space"
        " FROM objects WHERE type = 'schedule' AND redirect_to IS NULL"
        f" AND (state IN ('scheduled', 'moved') OR state IS NULL) AND {seen} ORDER BY id",
        args)]


def list_objects(
    conn: sqlite3.Connection, type_: str | None = None, include_merged: bool = False,
    *, spaces: Spaces,
) -> list[ObjectRecord]:
    """Objects (of `type_`; merged ones only with `include_merged`) that `spaces` sees, by
    type and name."""
    if type_ is not None and type_ not in OBJECT_TYPES:
        raise InputError(f"unknown type {type_!r} (one of {', '.join(OBJECT_TYPES)})")
    seen, visible = spaces.sql("space")
    sql = f"SELECT * FROM objects WHERE {seen}"
    args: list[Any] = list(visible)
    if type_:
        sql += " AND type = ?"
        args.append(type_)
    if not include_merged:
        sql += " AND redirect_to IS NULL"
    rows = conn.execute(sql + " ORDER BY type, name, id", args).fetchall()
    return [ObjectRecord.from_row(r) for r in rows]


def save_object(
    conn: sqlite3.Connection, obj: ObjectRecord, now: datetime, batch_id: int | None = None,
    origin: str = "model",
) -> ObjectRecord:
    """Create or update an object and record the version, inside the caller's transaction.
    `origin` says who made the version: "model" or "person" (a correction)."""
    _check_record(obj)
    current = conn.execute("SELECT * FROM objects WHERE id = ?", (obj.id,)).fetchone()
    return _write_object(conn, obj, current, now, batch_id, origin=origin)


def save_read_objects(
    conn: sqlite3.Connection, items: Iterable[tuple[ObjectRecord, sqlite3.Row | None]],
    now: datetime, batch_id: int | None = None, origin: str = "model",
) -> list[ObjectRecord]:
    """save_object for each (object, row) whose row the caller has already read in this
    transaction (its `SELECT * FROM objects` row, None when the object does not exist), so no
    row is read a second time; their versions are recorded in one executemany. Each row must
    still be current: nothing may have written that object since it was read."""
    versions: list[tuple[Any, ...]] = []
    saved = []
    for obj, current in items:
        _check_record(obj)
        saved.append(_write_object(conn, obj, current, now, batch_id, versions, origin))
    conn.executemany(_VERSION_SQL, versions)
    return saved


def _check_record(obj: ObjectRecord) -> None:
    kind, _ = check_object_id(obj.id)
    if obj.type != kind:
        raise InputError(f"object {obj.id}: type {obj.type!r} does not match its id")
    if obj.state is not None:
        check_state(obj.type, obj.state)


_VERSION_SQL = (
    "INSERT INTO object_versions (object_id, version, name, aliases, summary, body, cues,"
    " status, state, redirect_to, changed_at, batch_id, origin)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)")


_PROFILE_COLUMNS = ("name", "aliases", "summary", "body", "cues", "status", "state",
                    "redirect_to")


def _write_object(
    conn: sqlite3.Connection, obj: ObjectRecord, current: sqlite3.Row | None, now: datetime,
    batch_id: int | None, versions: list[tuple[Any, ...]] | None = None,
    origin: str = "model",
) -> ObjectRecord:
    """Write the object unless unchanged; its version row goes to `versions` if given (the
    caller inserts them), else is inserted here."""
    stamp = iso(now)
    values = (
        obj.name, json.dumps(obj.aliases, ensure_ascii=False), obj.summary, obj.body,
        json.dumps(obj.cues, ensure_ascii=False), obj.status, obj.state, obj.redirect_to,
    )
    if current is None:
        version = 1
        conn.execute(
            "INSERT INTO objects (id, type, name, aliases, summary, body, cues, status, state,"
            " redirect_to, version, created_at, updated_at, space)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (obj.id, obj.type, *values, version, stamp, stamp, check_space(obj.space)),
        )
        obj.created_at = stamp
    else:
        old = (current["name"], current["aliases"], current["summary"], current["body"],
               current["cues"], current["status"], current["state"], current["redirect_to"])
        if old == values:
            return ObjectRecord.from_row(current)
        version = current["version"] + 1
        # Only the changed columns are set: an unchanged name and aliases then leave the name
        # index alone (its trigger fires on UPDATE OF name, aliases, whatever the values).
        changed = [(column, new) for column, new, was in zip(_PROFILE_COLUMNS, values, old,
                                                              strict=True) if new != was]
        conn.execute(
            f"UPDATE objects SET {''.join(f'{column}=?, ' for column, _ in changed)}"
            "version=?, updated_at=? WHERE id=?",
            (*(new for _, new in changed), version, stamp, obj.id),
        )
        obj.created_at, obj.space = current["created_at"], current["space"]
    version_row = (obj.id, version, *values, stamp, batch_id, origin)
    if versions is None:
        conn.execute(_VERSION_SQL, version_row)
    else:
        versions.append(version_row)
    obj.version, obj.updated_at = version, stamp
    return obj


def move_object(conn: sqlite3.Connection, object_id: str, space: str,
                now: datetime) -> list[str]:
    """Re-place an object, and the objects merged into it, into `space` by hand (`memvault
    space move`), inside the caller's transaction: each moved object gets a new version whose
    origin is `person`. Returns the ids moved (none when it was there already)."""
    target = resolve_redirect(conn, object_id)
    get_object(conn, target)
    ids = [target, *(i for i in merged_ids(conn) if i != target
                     and resolve_redirect(conn, i) == target)]
    moved = [i for i in ids if conn.execute(
        "SELECT space FROM objects WHERE id = ?", (i,)).fetchone()[0] != space]
    stamp = iso(now)
    for moved_id in moved:
        conn.execute("UPDATE objects SET space = ?, version = version + 1, updated_at = ?"
                     " WHERE id = ?", (space, stamp, moved_id))
        conn.execute(
            "INSERT INTO object_versions (object_id, version, name, aliases, summary, body, cues,"
            " status, state, redirect_to, changed_at, batch_id, origin) SELECT id, version,"
            " name, aliases, summary, body, cues, status, state, redirect_to, ?, NULL, 'person'"
            " FROM objects WHERE id = ?", (stamp, moved_id))
    return moved


def redirect_targets(
    conn: sqlite3.Connection, object_ids: Iterable[str],
    rows: Mapping[str, sqlite3.Row | None] | None = None,
) -> dict[str, str]:
    """The surviving id of each id, as resolve_redirect finds it (cycle-safe; an id with no
    object is its own), in one query per level of redirects instead of one per id and level.
    `rows`: `objects` rows already read in this transaction (None: no such object), not read
    again."""
    parent: dict[str, str | None] = {
        oid: (row["redirect_to"] if row is not None else None) for oid, row in (rows or {}).items()
    }
    wanted = list(dict.fromkeys(object_ids))
    missing = [oid for oid in wanted if oid not in parent]
    while missing:
        parent.update(dict.fromkeys(missing))
        found = conn.execute(
            "SELECT id, redirect_to FROM objects WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(missing),)).fetchall()
        parent.update({row[0]: row[1] for row in found})
        # Follow the next level only for redirects whose target was never looked at.
        missing = list(dict.fromkeys(row[1] for row in found
                                     if row[1] is not None and row[1] not in parent))
    targets: dict[str, str] = {}
    for oid in wanted:
        seen, current = {oid}, oid
        while (nxt := parent.get(current)) is not None and nxt not in seen:
            current = nxt
            seen.add(current)
        targets[oid] = current
    return targets


def add_relation(
    conn: sqlite3.Connection, src: str, label: str, dst: str, now: datetime,
    batch_id: int | None = None,
) -> bool:
    """Link two objects with a short label; True if the relation is new."""
    return add_relations(conn, [(src, label, dst)], now, batch_id) > 0


def add_relations(
    conn: sqlite3.Connection, items: Iterable[tuple[str, str, str]], now: datetime,
    batch_id: int | None = None, targets: Mapping[str, str] | None = None,
) -> int:
    """Add (src, label, dst) relations in order, each end followed to its survivor (one
    lookup for all ends), in one executemany; return how many are new (a relation already
    stored, or given twice, is not). `targets`: survivors from redirect_targets, if the
    caller has them already."""
    rows = list(items)
    for _, label, _ in rows:
        if label not in RELATION_LABELS:
            raise InputError(
                f"relation label {label!r} is not allowed (short labels only: "
                f"{', '.join(RELATION_LABELS)}); put details in the body"
            )
    if not rows:
        return 0
    ends = [end for src, _, dst in rows for end in (src, dst)]
    if targets is None or any(end not in targets for end in ends):
        targets = redirect_targets(conn, ends)
    stamp = iso(now)
    # executemany's rowcount sums the rows each INSERT added.
    cur = conn.executemany(
        "INSERT OR IGNORE INTO relations (src_id, label, dst_id, created_at, batch_id)"
        " VALUES (?, ?, ?, ?, ?)",
        [(targets[src], label, targets[dst], stamp, batch_id) for src, label, dst in rows],
    )
    return cur.rowcount


def add_evidence_items(
    conn: sqlite3.Connection, items: Iterable[tuple[str, int, int, int]], now: datetime,
    batch_id: int | None = None, targets: Mapping[str, str] | None = None,
) -> int:
    """Cite (object_id, event_id, start, end) slices in order, each object followed to its
    survivor, in one executemany; return how many are new. `targets` as in add_relations."""
    rows = list(items)
    if not rows:
        return 0
    if targets is None or any(row[0] not in targets for row in rows):
        targets = redirect_targets(conn, [row[0] for row in rows])
    stamp = iso(now)
    cur = conn.executemany(
        "INSERT OR IGNORE INTO evidence (object_id, event_id, start_char, end_char, created_at,"
        " batch_id) VALUES (?, ?, ?, ?, ?, ?)",
        [(targets[oid], event, start, end, stamp, batch_id) for oid, event, start, end in rows],
    )
    return cur.rowcount


def archive_legacy_relation(conn: sqlite3.Connection, src: str, legacy_label: str,
                            dst: str) -> bool:
    """Archive one live legacy relation (it stays readable); True if the row changed."""
    cur = conn.execute(
        "UPDATE relations SET archived = 1 WHERE src_id = ? AND label = ? AND dst_id = ?"
        " AND legacy = 1 AND archived = 0", (src, legacy_label, dst))
    return cur.rowcount > 0


def add_supersedes(conn: sqlite3.Connection, survivor: str, loser: str, now: datetime,
                   batch_id: int | None) -> None:
    """The `supersedes` relation of a merge, between the ids as given (the loser is not yet
    redirected, so no end is followed to a survivor)."""
    conn.execute(
        "INSERT OR IGNORE INTO relations (src_id, label, dst_id, created_at, batch_id)"
        " VALUES (?, 'supersedes', ?, ?, ?)", (survivor, loser, iso(now), batch_id))


def copy_evidence(conn: sqlite3.Connection, loser: str, survivor: str, now: datetime,
                  batch_id: int | None) -> None:
    """Cite for `survivor` every slice that cites `loser` (a merge keeps all evidence)."""
    conn.execute(
        "INSERT OR IGNORE INTO evidence (object_id, event_id, start_char, end_char, created_at,"
        " batch_id) SELECT ?, event_id, start_char, end_char, ?, ? FROM evidence"
        " WHERE object_id = ?", (survivor, iso(now), batch_id, loser))


class ObjectPage(TypedDict):
    """An object as read (`Memory.read_object`, memory_read): profile and one page of links."""

    object: ObjectProfile
    redirected_from: str | None  # the merged id asked for, when it was followed to `object`
    links: list[dict[str, Any]]  # relations ("kind": "relation"), then evidence ("evidence")
    total_links: int
    offset: int
    next_offset: int | None  # the next page's offset; None on the last page


def read_object(conn: sqlite3.Connection, object_id: str, offset: int,
                spaces: Spaces, today: date | None = None) -> ObjectPage:
    """Profile, relations and evidence of an object, links paged READ_PAGE at a time.

    A merged id is followed to its survivor; `redirected_from` says so. An object `spaces`
    does not see is NotFound, as one that does not exist (its existence is not told); so are
    the relations to such objects and the evidence in events it does not see. A schedule's or
    todo's state is the one shown on `today` (a one-off whose day has gone: `past`); without
    a day, the stored one (a model's browsing reads what it may write back).
    """
    check_object_id(object_id)
    target = resolve_redirect(conn, object_id)
    obj = get_object(conn, target)
    if not spaces.sees(obj.space):
        raise NotFound(f"no object {object_id}")
    obj.state = shown_state(obj.type, obj.state, obj.body, obj.summary, today)
    if offset < 0:
        raise InputError("offset must be >= 0")
    links = object_links(conn, target, spaces)
    page = links[offset : offset + READ_PAGE]
    end = offset + len(page)
    return ObjectPage(
        object=obj.to_dict(),
        redirected_from=object_id if target != object_id else None,
        links=page,
        total_links=len(links),
        offset=offset,
        next_offset=end if end < len(links) else None,
    )


class ObjectDirectory(TypedDict):
    """The bounded directory of live objects in the resident context."""

    # id, type, name, summary (cut at 160 chars; one of a plan no longer ahead marked
    # `[cancelled] …`), status, and a schedule's or todo's state as of today (`past` too)
    entries: list[dict[str, Any]]
    total: int  # live objects in all
    omitted: int  # live objects that did not fit
    bytes: int  # the entries' size as JSON


def object_directory(
    conn: sqlite3.Connection, max_entries: int, max_bytes: int, today: date | None = None,
    *, spaces: Spaces,
) -> ObjectDirectory:
    """A bounded directory of live objects (id, type, name, summary) that `spaces` sees, most
    recently updated first.

    Says how many objects were left out, so a bounded view is never mistaken for the whole. A
    schedule or todo says its state (as of `today`: a one-off whose day has gone is `past`), and
    the summary of one no longer ahead says so first, so it never reads as an upcoming plan.
    """
    seen, args = spaces.sql("space")
    total = conn.execute(
        f"SELECT COUNT(*) FROM objects WHERE redirect_to IS NULL AND status != 'archived'"
        f" AND {seen}", args,
    ).fetchone()[0]
    entries: list[dict[str, Any]] = []
    used = 0
    for row in conn.execute(
        "SELECT id, type, name, summary, status, state, body FROM objects"
        f" WHERE redirect_to IS NULL AND status != 'archived' AND {seen}"
        " ORDER BY updated_at DESC, id LIMIT ?",
        (*args, max_entries),
    ):
        entry = dict(row)
        body = entry.pop("body")
        state = shown_state(row["type"], row["state"], body, row["summary"], today)
        entry["summary"] = marked_summary(state, entry["summary"])[:160]
        if state is None:
            del entry["state"]
        else:
            entry["state"] = state
        cost = len(json.dumps(entry, ensure_ascii=False).encode("utf-8"))
        if used + cost > max_bytes:
            break
        entries.append(entry)
        used += cost
    return ObjectDirectory(entries=entries, total=total, omitted=total - len(entries), bytes=used)


_TEXT_FIELDS = ("name", "aliases", "summary", "body", "cues")


def forget_in_objects(conn: sqlite3.Connection, forgetting: Forgetting) -> list[str]:
    """Replace the forgotten text in objects, every version of them and legacy relation
    labels, in place (versions keep their numbers); inside the caller's write transaction.
    Ids are never rewritten: returns the ids that hold the text, which stay as they are.

    The objects triggers mark each changed object for the recall index and the vault.
    """
    forget_in_rows(conn, forgetting, "objects", _TEXT_FIELDS, key="id")
    forget_in_rows(conn, forgetting, "object_versions", _TEXT_FIELDS)
    forget_in_rows(conn, forgetting, "relations", ("label",), key="id")
    where, params = forgetting.sql_match("id")
    return [row[0] for row in conn.execute(f"SELECT id FROM objects WHERE {where}", params)]
