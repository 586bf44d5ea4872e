"""The projector: renders SQLite into the vault, a bounded batch at a time.

    from memvault.vault.projector import render_vault
    result = render_vault(conn, Path("~/.memvault/vault").expanduser(), all=False)

A run, under a lock so runs never overlap: (1) the core files are synced (a hand edit is
imported first, see `core_sync`); (2) the oldest dirty objects (by `objects.updated_at`; owners
that failed last time go last) are rendered, at most `limit` of them; (3) the directory
`objects/README.md` is rendered if anything changed or its file is not what was written.

Invariants:
- SQLite is authoritative and is only written for bookkeeping (projection rows, marks, errors,
  reports) and for core-file imports; object files never flow back.
- a file whose bytes already equal the rendering is not rewritten (its mtime stays).
- a file whose bytes differ from what the projector last wrote there (a hand edit, or a file it
  never wrote) is kept as a `.conflict` copy before being replaced; nothing typed is lost.
- every write is atomic (temp file + rename); a failure of one owner is recorded in
  `projection_errors` (shown by status) and leaves its dirty mark, so the next run retries it;
  other owners go on.
- rendered files depend on stored data and on the day of `now` only (a one-off schedule whose
  day has gone shows `past`, as every read shows it), never on the wall clock otherwise; `now`
  also stamps the bookkeeping rows. When a run's day is not the last run's, the schedules whose
  shown state differs between the two days (a one-off, scheduled or moved, whose day lies
  between them) are marked dirty first, and so is the directory: a vault rendered yesterday is
  right again after the first run of today, whoever runs it (the service's projector runs
  every `service.projector_interval_s`).
- nothing is written outside the vault's real folder: a vault root that is a symlink is
  refused outright, and each write first checks every folder from the root down is a real
  folder (`files.vault_file`); a linked folder, a FIFO or a device where a file belongs is
  refused and recorded as the owner's error (status shows it). A symlink where a file belongs
  is never followed: the link itself is moved aside as the `.conflict` copy.
- a projected file deleted by hand comes back on the next run even with no watcher running:
  an --all run checks every projected file exists, a batch run the next `MISSING_CHECK` of them
  (round robin), and marks the owners of missing files dirty.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from ..base.clock import iso
from ..base.config import Config
from ..base.settings import VaultSettings
from ..base.spaces import EVERY_SPACE
from ..objects.corefiles import CORE_FILES
from ..objects.records import ids_by_update, open_plans
from ..objects.states import one_off_day
from ..store.connection import get_state, set_state, write
from .bookkeeping import (
    PENDING_SQL,
    clear_dirty_many,
    clear_errors,
    clear_errors_many,
    clear_intents_many,
    dirty_marks,
    drop_vanished_marks,
    mark_citers_dirty,
    mark_dirty,
    open_report_paths,
    owners_with_pages,
    record_error,
    record_intents,
    record_owners,
    record_pages,
    recorded_files_many,
    resolve_reports,
)
from .core_sync import sync_core_file
from .file_writes import OwnerJob, intents, write_failure, write_owner_files
from .files import (
    ProjectionBusy,  # noqa: F401 - callers import it from here, where it is raised
    ensure_folder,
    read_file,
    remove_leftover_temps,
    sha256,
    vault_file,
    vault_lock,
)
from .render import Renderer
from .schema import DIRECTORY_KEY

CHUNK = 100  # owners rendered per read snapshot / recorded per write transaction
MISSING_CHECK = 200  # projected files a batch run checks for existence (one lstat each)
CHECK_CURSOR = "vault.missing_check_after"  # state key: the last path a batch run checked
RENDERED_DAY = "vault.rendered_day"  # state key: the day the last run showed states as of
Progress = Callable[[int, int], None]


@dataclass
class ProjectionResult:
    """What one run did. `written` and `conflicts` are vault-relative paths."""

    objects: int = 0
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    core: list[dict[str, Any]] = field(default_factory=list)
    remaining: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> dict[str, Any]:
        """The short form kept in `state` as vault.last_run."""
        return {
            "objects": self.objects, "written": len(self.written), "unchanged": self.unchanged,
            "removed": len(self.removed), "conflicts": len(self.conflicts),
            "errors": len(self.errors), "remaining": self.remaining,
        }


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """A read transaction: everything read inside sees one state of the store."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def pending_owners(conn: sqlite3.Connection, limit: int | None = None) -> list[str]:
    """Owners to render next: oldest-dirty first (by updated_at), owners that failed last."""
    sql = (
        "SELECT x.id FROM (" + PENDING_SQL + ") x LEFT JOIN objects o ON o.id = x.id"
        " ORDER BY EXISTS (SELECT 1 FROM projection_errors e WHERE e.object_id = x.id),"
        " COALESCE(o.updated_at, ''), x.id"
    )
    return [r[0] for r in conn.execute(sql + " LIMIT ?", (-1 if limit is None else limit,))]


def count_pending(conn: sqlite3.Connection) -> int:
    return conn.execute(f"SELECT COUNT(*) FROM ({PENDING_SQL})").fetchone()[0]


def all_owners(conn: sqlite3.Connection) -> list[str]:
    """Every object and every deleted object that has a file, for a rebuild."""
    gone = conn.execute(
        "SELECT p.object_id FROM projection p WHERE instr(p.object_id, ':') > 0"
        " AND NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = p.object_id) ORDER BY 1"
    ).fetchall()
    return [r[0] for r in gone] + ids_by_update(conn, EVERY_SPACE)  # the vault: every space


def project_vault(
    conn: sqlite3.Connection,
    vault: Path,
    *,
    limit: int | None = 10,
    max_links: int = 50,
    core_max_bytes: int = 262_144,
    rebuild: bool = False,
    first: Sequence[str] = (),
    durable: bool = False,
    now: datetime | None = None,
    progress: Progress | None = None,
) -> ProjectionResult:
    """One projection run. `limit=None` renders every owner pending at the start.

    `rebuild` renders every object, pending or not (files already right are still not
    rewritten): it restores deleted or hand-edited files the watcher did not report.
    `first`: owners rendered before the batch, whatever the limit (a correction's objects).
    """
    now = now or datetime.now(UTC)
    vault = Path(vault)
    result = ProjectionResult()
    ensure_folder(vault)
    with vault_lock(vault):
        if rebuild or limit is None:  # a walk of the vault (~15 ms a 10,000 files): not per batch
            remove_leftover_temps(vault)  # a killed writer's; its pid is checked to be gone
        _forget_vanished(conn)
        _mark_days_gone(conn, now.date())
        if not rebuild:  # a rebuild renders every owner anyway
            _mark_missing(conn, vault, None if limit is None else MISSING_CHECK)
        failed = {row[0] for row in conn.execute(  # one read for the three core files
            "SELECT object_id FROM projection_errors WHERE object_id IN (SELECT value FROM"
            " json_each(?))", (json.dumps(CORE_FILES),))}
        for name in CORE_FILES:
            _sync_core(conn, vault, name, core_max_bytes, now, result, name in failed)
        owners = all_owners(conn) if rebuild else pending_owners(conn, limit)
        if rebuild and limit is not None:
            owners = owners[:limit]
        owners = list(dict.fromkeys([*first, *owners]))
        renderer = Renderer(conn, max_links, today=now.date())
        done = 0
        for start in range(0, len(owners), CHUNK):
            jobs = _render_chunk(conn, renderer, owners[start:start + CHUNK])
            _announce(conn, jobs, now)  # committed before any rename: a kill fakes no edit
            for job in jobs:
                if job.error is None:
                    write_owner_files(vault, job, durable)
            _record_chunk(conn, jobs, now)  # only once the chunk's files are on disk
            for job in jobs:
                _tally(result, job)
            done += len(jobs)
            if progress:
                progress(done, len(owners))
        _project_directory(conn, renderer, vault, result, durable, now,
                           force=bool(owners) or rebuild)
        result.remaining = count_pending(conn)
        with write(conn):
            set_state(conn, "vault.last_run", json.dumps(
                {"at": iso(now), **result.summary()}, ensure_ascii=False))
    return result


def render_vault(
    conn: sqlite3.Connection,
    vault_path: Path,
    all: bool = True,  # the name the CLI's --all mirrors
    *,
    config: Config | None = None,
    **options: Any,
) -> ProjectionResult:
    """Render the vault: every pending object (`all`), or one batch of `vault.objects_per_run`.

    Limits come from `config` (a memory home's memvault.toml) when given, else the defaults;
    `options` are passed on to `project_vault` (rebuild, durable, now, progress, ...).
    """
    limits = config.settings.vault if config is not None else VaultSettings()
    options.setdefault("max_links", limits.max_links_per_file)
    options.setdefault("core_max_bytes", limits.core_file_max_bytes)
    limit = None if all else limits.objects_per_run
    return project_vault(conn, Path(vault_path), limit=limit, **options)


def rerender_objects_citing(
    conn: sqlite3.Connection,
    vault_path: Path,
    event_ids: Sequence[int],
    *,
    config: Config | None = None,
    **options: Any,
) -> ProjectionResult:
    """Render again, now, every object file that shows a span of the events `event_ids`: for
    `memvault forget`, once it has changed their text (its own transaction committed).

    The objects are marked dirty first, in one transaction, so if this run cannot finish (a
    projection already running raises ProjectionBusy; a failed write is recorded) the next
    projection still renders them. Then every pending owner is rendered, as `render_vault`
    with `all=True` does; `options` are passed on to `project_vault`. When no object citing
    them has a file, nothing shows the spans: no run, and no vault is created.
    """
    bad = [e for e in event_ids if type(e) is not int]  # bool is an int subclass: refused too
    if bad:
        raise ValueError(f"event ids must be integers, got {bad[0]!r}")
    with write(conn):
        marked = mark_citers_dirty(conn, list(event_ids))
    if not marked:
        return ProjectionResult(remaining=count_pending(conn))
    return render_vault(conn, vault_path, all=True, config=config, **options)


def _sync_core(
    conn: sqlite3.Connection, vault: Path, name: str, max_bytes: int, now: datetime,
    result: ProjectionResult, failed_before: bool,
) -> None:
    try:
        outcome = sync_core_file(conn, vault, name, max_bytes, now)
    except OSError as exc:
        error = write_failure(exc)
        with write(conn):
            record_error(conn, name, name, error, now)
        result.errors.append({"object_id": name, "path": name, "error": error})
        return
    if failed_before:
        with write(conn):
            clear_errors(conn, name)
    result.core.append(asdict(outcome))
    if outcome.action == "written":
        result.written.append(name)


def _forget_vanished(conn: sqlite3.Connection) -> None:
    """Drop marks of objects that are gone and never had a file (nothing to say about them)."""
    with write(conn):
        drop_vanished_marks(conn)


def _mark_days_gone(conn: sqlite3.Connection, today: date) -> None:
    """Mark dirty the schedules that read `past` on one of `today` and the day the last run
    rendered as of, and not on the other: a one-off, scheduled or moved, whose day lies
    between the two (every one whose day has gone when no run recorded its day)."""
    rendered = get_state(conn, RENDERED_DAY)
    if rendered == today.isoformat():  # one read a run, the rows only once a day
        return
    rows = open_plans(conn, EVERY_SPACE)  # the vault shows every space
    if not rows:  # no plan that can turn
        return
    try:
        since: date | None = date.fromisoformat(rendered or "")
    except ValueError:
        since = None
    low, high = (since, today) if since is None or since <= today else (today, since)
    turned = [row.id for row in rows if (day := one_off_day(row.body, row.summary))
              is not None and (low is None or low <= day) and day < high]
    with write(conn):
        for object_id in turned:
            mark_dirty(conn, object_id, "day")
        set_state(conn, RENDERED_DAY, today.isoformat())


_PROJECTED_FILES = (
    "SELECT object_id, path FROM projection WHERE instr(object_id, ':') > 0"
    " UNION ALL SELECT object_id, path FROM projection_pages"
)


def _mark_missing(conn: sqlite3.Connection, vault: Path, bound: int | None) -> None:
    """Mark dirty the owners of projected object files (and pages) that are gone from disk.

    `bound=None` checks every file; else the next `bound` paths after the state's cursor,
    wrapping round, so successive batch runs cover the whole vault at a bounded cost per run.
    """
    if bound is None:
        rows = conn.execute(_PROJECTED_FILES).fetchall()
        cursor = None
    else:
        after = get_state(conn, CHECK_CURSOR, "") or ""
        sql = f"SELECT object_id, path FROM ({_PROJECTED_FILES}) WHERE path > ? ORDER BY path" \
              " LIMIT ?"
        rows = conn.execute(sql, (after, bound)).fetchall()
        if len(rows) < bound:  # wrap round to the start
            rows += conn.execute(sql, ("", bound - len(rows))).fetchall()
        cursor = rows[-1][1] if rows else ""
    # lexists: a dangling symlink is not missing (the write moves it aside). Plain strings, not
    # a Path per file: an --all run checks every file, and a Path cost more than the lstat.
    root = os.fspath(vault)
    missing = {owner for owner, path in rows
               if not os.path.lexists(os.path.join(root, *path.split("/")))}
    if not missing and cursor is None:
        return
    with write(conn):
        for owner in sorted(missing):
            mark_dirty(conn, owner, "hand_edit")  # deleted by hand, maybe with no watcher
        if cursor is not None:
            set_state(conn, CHECK_CURSOR, cursor)


def _render_chunk(
    conn: sqlite3.Connection, renderer: Renderer, owners: list[str],
) -> list[OwnerJob]:
    """Render a chunk of owners in one read snapshot; the reads are batched for the chunk
    (a handful of queries, not ~11 an owner), the rendering stays one owner at a time so a
    failure is recorded against its owner only."""
    jobs = []
    with _snapshot(conn):
        marks = dirty_marks(conn, owners)
        intended: dict[str, dict[str, set[str]]] = {}
        recorded = recorded_files_many(conn, owners, intended)
        renderer.preload(owners)
        try:
            for owner in owners:
                job = OwnerJob(owner, marks.get(owner), recorded[owner],
                               intended.get(owner, {}))
                try:
                    job.rendered = renderer.render_owner(owner)
                except Exception as exc:  # recorded, shown by status, retried
                    job.error = f"render failed: {type(exc).__name__}: {exc}"
                jobs.append(job)
        finally:
            renderer.preload([])
    return jobs


def _announce(conn: sqlite3.Connection, jobs: list[OwnerJob], now: datetime) -> None:
    """Commit the write intents of a chunk's files that may be rewritten (one transaction, none
    when every file is already right), before the first of them is renamed into place."""
    rows = [row for job in jobs if job.error is None for row in intents(job)]
    if rows:
        with write(conn):
            record_intents(conn, rows, now)


def _record_chunk(conn: sqlite3.Connection, jobs: list[OwnerJob], now: datetime) -> None:
    """Record a chunk's outcome in one write transaction, in a few batched statements."""
    done: list[OwnerJob] = []
    with write(conn):
        for job in jobs:
            for rel_path, conflict in job.conflicts.items():
                resolve_reports(conn, rel_path, now, conflict, job.owner)
            if job.error is not None:
                record_error(conn, job.owner, job.error_path, job.error, now)
            else:
                done.append(job)
        clear_errors_many(conn, [job.owner for job in done])
        clear_intents_many(conn, [job.owner for job in done])  # recorded below, same commit
        rendered_jobs = [job for job in done if job.rendered is not None]
        record_owners(conn, [
            (job.owner, job.rendered.main_path, sha256(job.rendered.files[job.rendered.main_path]),
             job.rendered.version) for job in rendered_jobs if job.rendered is not None
        ], now)
        with_pages = owners_with_pages(conn, [job.owner for job in rendered_jobs])
        for job in rendered_jobs:
            assert job.rendered is not None
            if job.rendered.pages or job.owner in with_pages:
                record_pages(conn, job.owner, {
                    path: (number, sha256(job.rendered.files[path]))
                    for path, number in job.rendered.pages.items()
                }, now)
        # Only paths with an open report need resolving (an UPDATE of none is a no-op).
        touched = [
            rel_path for job in rendered_jobs
            for rel_path in (*job.rendered.files, *job.removed)  # type: ignore[union-attr]
            if rel_path not in job.conflicts
        ]
        for rel_path in sorted(open_report_paths(conn, touched)):
            resolve_reports(conn, rel_path, now)
        clear_dirty_many(conn, [(job.owner, job.mark) for job in done if job.mark is not None])


def _tally(result: ProjectionResult, job: OwnerJob, is_object: bool = True) -> None:
    result.objects += is_object
    result.written.extend(job.written)
    result.unchanged += job.unchanged
    result.removed.extend(job.removed)
    result.conflicts.extend(job.conflicts.values())
    if job.error is not None:
        result.errors.append({"object_id": job.owner, "path": job.error_path,
                              "error": job.error})


def _project_directory(
    conn: sqlite3.Connection, renderer: Renderer, vault: Path, result: ProjectionResult,
    durable: bool, now: datetime, force: bool,
) -> None:
    """Render objects/README.md when something changed or its file is not what was written."""
    # One read: what was recorded, whether its last write failed (retried, so the error clears
    # once the cause is fixed) and the digests of writes announced but not recorded.
    row = conn.execute(
        "SELECT (SELECT path FROM projection WHERE object_id = ?1) AS path,"
        " (SELECT sha256 FROM projection WHERE object_id = ?1) AS sha256,"
        " EXISTS (SELECT 1 FROM projection_errors WHERE object_id = ?1) AS failed,"
        " (SELECT json_group_array(sha256) FROM projection_intents WHERE object_id = ?1)"
        " AS intended", (DIRECTORY_KEY,),
    ).fetchone()
    if not force and row["path"] is not None and not row["failed"]:
        try:
            disk = read_file(vault_file(vault, row["path"]))
        except OSError:  # not a file it can read: render, and let the write say why
            disk = None
        if disk is not None and sha256(disk) == row["sha256"]:
            return
    recorded = {row["path"]: row["sha256"]} if row["path"] is not None else {}
    job = OwnerJob(DIRECTORY_KEY, None, recorded,
                   {DIRECTORY_KEY: set(json.loads(row["intended"]))})
    try:
        with _snapshot(conn):
            job.rendered = renderer.render_directory()
    except Exception as exc:  # recorded, shown by status, retried
        job.error = f"render failed: {type(exc).__name__}: {exc}"
    _announce(conn, [job], now)
    if job.error is None:
        write_owner_files(vault, job, durable)
    _record_chunk(conn, [job], now)
    _tally(result, job, is_object=False)
