"""`Memory`: the engine as a library, one object per memory home.

    from memvault import Memory
    with Memory.open("~/.memvault") as mem:
        mem.append_event("记住：浩宇对花生过敏", source="user")
        print(mem.timeline_view()["notice"])

Every method is synchronous; writes are one transaction each.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, overload

from ..base.clock import Clock, SystemClock, parse_time
from ..base.config import Config, load_config, tighten_home
from ..base.errors import IngestError, InputError
from ..base.home_trust import clear_bad_lock
from ..base.spaces import EVERY_SPACE, Spaces
from ..objects import records as objects
from ..objects.ids import ObjectStatus
from ..store.connection import BUSY_TIMEOUT_MS, write
from ..timeline import events
from ..timeline import hot as timeline
from ..timeline.append import append_events
from ..timeline.hot import TimelineView
from ..timeline.ingest import ingest_lines
from ..timeline.keys import Appended
from .migrations import open_home_db
from .reveals import RevealArg, as_reveal, record_reveal

if TYPE_CHECKING:
    from ..jobs.ledger import UsageSummary
    from ..jobs.requests import JobReceipt
    from ..jobs.worker import Worker
    from ..legacy.upgrade import MigrationReport
    from ..models.base import Provider
    from ..models.spec import ProviderSpec
    from ..objects.corefiles import CoreFile
    from ..objects.corrections import Correction, CorrectionReceipt
    from ..objects.projects import ProjectApproval
    from ..recall.answers import EvidenceAnswer, FindAnswer, ReadAnswer
    from ..vault.hand_edit import HandEdit
    from ..vault.projector import ProjectionResult
    from .forget import ForgetReport
    from .runs import CompactionRun, JobRun, RunObserver
    from .status import StatusReport

Answer = TypeVar("Answer")


class ResidentContext(TypedDict):
    """memory_context's answer: what the agent always carries."""

    core_files: dict[str, str]  # AGENTS.md, SOUL.md, USER.md -> content ('' if never written)
    directory: objects.ObjectDirectory  # a bounded directory of live objects
    timeline: TimelineView  # the hot timeline view, with what it cut


class ObjectVersions(TypedDict):
    """`Memory.object_versions`: an object's id and its versions, oldest first."""

    id: str
    versions: list[dict[str, Any]]  # version, changed_at, origin, batch_id, status, changed


CoreFileVersion = dict[str, Any]  # name, version, sha256, origin, created_at, chars


class SpaceMove(TypedDict):
    """What `Memory.move_space` did: the item, its space before and now, the ids moved (empty
    when it was there already)."""

    kind: str  # event | object
    id: str
    space: str
    was: str
    moved: list[str]


@dataclass
class Ingested(Appended):
    """What `Memory.ingest` did: the events stored and skipped, and why indexing them for
    recall was deferred, if it was (`memvault reindex` or the worker's poll does it later)."""

    index_deferred: str | None = None


class Memory:
    """One memory home: its config, its database connection, its clock and the spaces it is
    bound to (memvault.base.spaces): every read filters by them, every write is stamped with
    the bound space. Unbound (the owner's command line), it sees every space and writes
    `shared`."""

    def __init__(self, config: Config, conn: sqlite3.Connection, clock: Clock,
                 spaces: Spaces = EVERY_SPACE) -> None:
        self.config = config
        self.conn = conn
        self.clock = clock
        self.spaces = spaces
        # What opening did that the person should hear about once (e.g. tightened permissions).
        self.notices: list[str] = []

    @classmethod
    def open(
        cls, home: str | Path | None = None, clock: Clock | None = None, readonly: bool = False,
        allow_other_owner: bool | None = None, space: str | None = None,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> Memory:
        """Open a home (creating it, its config and database unless `readonly`).

        A writing open refuses a home another user owns (ConfigError naming the owner; see
        memvault.base.home_trust) unless `allow_other_owner` (default: the environment
        variable MEMVAULT_ALLOW_OTHER_OWNER). It also makes an older home private (0700, files
        0600; see memvault.base.config) and records what it changed in `notices`. A read-only
        open changes nothing: `memvault check` reports a home others can read or own.

        `space` binds it to that space (checked: a bad name is an InputError before anything
        opens); None sees every space. `busy_timeout_ms`: how long a statement waits for a
        lock another connection holds (a capture hook waits only what is left of its step).
        """
        spaces = Spaces.of(space)
        config = load_config(home, create=not readonly, allow_other_owner=allow_other_owner)
        tz = cls._zone(config)
        # Before SQLite opens the file: it gives a new -wal/-shm the database file's mode.
        notes = [] if readonly else [tighten_home(config.home), clear_bad_lock(config.home)]
        conn = open_home_db(config.db_path, readonly=readonly, busy_timeout_ms=busy_timeout_ms)
        memory = cls(config, conn, clock or SystemClock(tz), spaces)
        memory.notices += [note for note in notes if note]
        if not readonly:
            memory._ensure_builtin_objects()
        return memory

    @classmethod
    def migrate(
        cls, home: str | Path | None = None, source: str | Path | None = None,
        clock: Clock | None = None,
    ) -> MigrationReport:
        """Upgrade the home's database from the original design (engine/legacy/upgrade.py);
        report it.

        With `source`, an older database file is first copied into this empty home (the
        source is only read). A memvault database just gets pending schema migrations.
        """
        from ..legacy.upgrade import migrate_database
        from .migrations import MIGRATIONS

        config = load_config(home, create=True)
        tz = cls._zone(config)
        now = (clock or SystemClock(tz)).now()
        report = migrate_database(config.db_path, now, tz,
                                  Path(source).expanduser() if source else None,
                                  registry=MIGRATIONS)
        if report["legacy"]:
            with cls.open(home, clock=clock) as memory:
                report["recall_index"] = memory.sync_recall_index(max_events=None)
        return report

    def _ensure_builtin_objects(self) -> None:
        """`project:daily` is built in (docs/spec.md section 1.5): everyday life's project."""
        if objects.object_exists(self.conn, "project:daily"):
            return
        daily = objects.ObjectRecord(
            id="project:daily", type="project", name="日常 Daily", aliases=["daily", "日常"],
            summary="Built-in project for everyday life; anything without a clearer project.",
            body="范围 Scope: everyday life, errands, family, health.\n目标 Goal: unknown.\n"
                 "现状 State: always open.",
            cues=["daily life", "日常琐事"], status=ObjectStatus.ACTIVE)
        with write(self.conn):
            if not objects.object_exists(self.conn, "project:daily"):
                objects.save_object(self.conn, daily, self.clock.now())

    @staticmethod
    def _zone(config: Config) -> tzinfo | None:
        name = config.settings.time.timezone
        if not name:
            return None
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)

    @property
    def tz(self) -> tzinfo | None:
        return self._zone(self.config)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- events -------------------------------------------------------------------------------
    def append_event(
        self, text: str, occurred_at: str | datetime | None = None, source: str = "user",
        kind: str = "message", meta: dict[str, Any] | None = None, key: str | None = None,
    ) -> int:
        """Store one event and its hot fragments; return its id (with `key` already stored
        with the same text: that event's id, and nothing is stored; memvault.timeline.keys)."""
        return self.append([events.NewEvent(text, occurred_at, source, kind, meta, key)]).ids[0]

    def append_events(self, batch: Iterable[events.NewEvent], index: bool = True) -> list[int]:
        """`append`, answering only the ids (one per event handed in, in order)."""
        return self.append(batch, index).ids

    def append(self, batch: Iterable[events.NewEvent], index: bool = True) -> Appended:
        """Store many events in one transaction (all or none), saying which were new and which
        were skipped because their key was already stored with the same text (a key with other
        text is refused whole; memvault.timeline.append).

        Then, in a second transaction, index as many events for recall as were stored, so a
        find right after an append runs at indexed speed. `index=False` leaves that to the
        worker's next poll (or `memvault reindex`): for bulk loads that index once at the end.
        """
        appended = append_events(self.conn, list(batch), self.clock.now(), self.tz,
                                 self.spaces.writes)
        if index and appended.new:
            self._index_appended(len(appended.new))
        return appended

    def ingest(self, lines: Iterable[bytes | str]) -> Ingested:
        """Ingest JSONL lines (one event a line, memvault.timeline.ingest), then index what
        was stored for recall, once. A bad line raises IngestError after the lines before it
        are stored (and indexed)."""
        try:
            appended = ingest_lines(self.conn, lines, self.clock.now(), self.tz,
                                    self.spaces.writes)
        except IngestError as exc:
            self._index_appended(len(exc.stored))
            raise
        deferred = self._index_appended(len(appended.new)) if appended.new else None
        return Ingested(appended.ids, appended.new, appended.skipped, deferred)

    def _index_appended(self, count: int) -> str | None:
        """Index up to `count` more events after an append's commit; why not, if it failed.
        The events are stored already: a failure here (a full disk, a busy database, a damaged
        index) must not turn into an error that makes the caller store them twice. Recall
        scans what is left; the worker's poll indexes it."""
        from ..recall.index import sync_index

        try:
            with write(self.conn):
                sync_index(self.conn, max_events=count, objects=False)
        except sqlite3.Error as exc:  # a full disk, a busy or a damaged index: never the events
            import logging  # only here: logging costs every process ~2.5 ms to import

            logging.getLogger(__name__).warning(
                "events stored; indexing them for recall is deferred (%s)", exc)
            return str(exc)
        return None

    # -- masking: one policy for every read ---------------------------------------------------
    def _masked_read(self, command: str, reveal: RevealArg,
                     read: Callable[[bool], Answer],
                     records: Callable[[Answer, Answer], list[str]]) -> Answer:
        """`read(False)`: the answer with secret-looking values masked, what every read returns
        unless the caller asked to reveal; then `read(True)`, the stored text, is returned and
        the reveal logged (reveals.py) when it shows anything the masked answer hides.
        `records(shown, masked)` names what it revealed."""
        ask = as_reveal(reveal, command)
        masked = read(False)
        if ask is None:
            return masked
        shown = read(True)
        if shown != masked:
            record_reveal(self.config.home, self.clock.now(), ask, records(shown, masked))
        return shown

    def read_event(self, event_id: str | int, offset: int = 0,
                   reveal: RevealArg = False) -> events.EventPage:
        """One page of an event's raw text (masked unless `reveal`)."""
        from ..recall.masking import mask_event_page

        number = events.parse_event_id(event_id)

        def page(show: bool) -> events.EventPage:
            raw = events.read_event_page(self.conn, number, offset, spaces=self.spaces)
            return raw if show else mask_event_page(self.conn, raw)

        return self._masked_read("event", reveal, page, lambda _s, _m: [f"event:{number}"])

    def list_events(
        self, start: str | datetime, end: str | datetime, cursor: str | None = None,
        limit: int = 50, reveal: RevealArg = False,
    ) -> events.EventListing:
        """Events with start <= occurred_at < end, a page each (previews masked unless
        `reveal`)."""
        from ..recall.masking import mask_previews

        lo, hi = (self._time(t, name) for t, name in ((start, "FROM"), (end, "TO")))
        if hi <= lo:
            raise InputError("TO must be later than FROM")

        def listing(show: bool) -> events.EventListing:
            raw = events.list_events(self.conn, lo, hi, cursor, limit, self.spaces)
            if not show:
                raw["events"] = mask_previews(self.conn, raw["events"])
            return raw

        return self._masked_read("events", reveal, listing, lambda shown, masked: _differing(
            shown["events"], masked["events"], lambda row: f"event:{row['id']}"))

    def _time(self, value: str | datetime, name: str) -> datetime:
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=self.tz)
        try:
            return parse_time(value, self.tz)
        except ValueError as exc:
            raise InputError(f"{name}: {exc}") from None

    # -- hot timeline -------------------------------------------------------------------------
    def timeline_view(self, max_bytes: int | None = None,
                      reveal: RevealArg = False) -> TimelineView:
        """The hot timeline as the agent sees it, with an account of any cut (each fragment
        masked by the secrets of its whole event unless `reveal`)."""
        return self._masked_read(
            "timeline", reveal, lambda show: self._timeline(max_bytes, show),
            lambda shown, masked: _differing(shown["nodes"], masked["nodes"],
                                             lambda node: f"node:{node['id']}"))

    def _timeline(self, max_bytes: int | None, show: bool) -> TimelineView:
        from ..recall.masking import mask_fragments, mask_tree

        limit = max_bytes if max_bytes is not None else self.config.settings.timeline.view_max_bytes
        view = timeline.timeline_view(self.conn, limit, self.spaces)
        if not show:
            view["nodes"] = mask_tree(mask_fragments(self.conn, view["nodes"]))
        return view

    def expand(self, node_id: int, reveal: RevealArg = False) -> list[timeline.NodeView]:
        """The children a summary head replaced (masked unless `reveal`)."""
        from ..recall.masking import mask_fragments, mask_tree

        def children(show: bool) -> list[timeline.NodeView]:
            raw = [n.to_dict() for n in timeline.expand(self.conn, node_id, self.spaces)]
            return raw if show else mask_tree(mask_fragments(self.conn, raw))

        return self._masked_read("expand", reveal, children, lambda _s, _m: [f"node:{node_id}"])

    # -- core files and context ---------------------------------------------------------------
    def read_core_file(self, name: str, reveal: RevealArg = False) -> CoreFile | None:
        """The current version of a core file (AGENTS.md, SOUL.md, USER.md), None if never
        written; a secret-looking value in it masked unless `reveal` (a person may keep a
        password in USER.md: theirs to keep, not to print by accident)."""
        from ..objects import corefiles
        from ..recall.masking import mask_tree

        def current(show: bool) -> CoreFile | None:
            raw = corefiles.read_core_file(self.conn, name)
            return raw if show or raw is None else mask_tree(raw)

        return self._masked_read("core show", reveal, current, lambda _s, _m: [name])

    def core_file_history(self, name: str) -> list[CoreFileVersion]:
        """Every saved version of a core file, newest first: when, from where, its size and
        digest; never its content."""
        from ..objects.corefiles import core_file_history

        return core_file_history(self.conn, name)

    def write_core_file(self, name: str, content: str, origin: str = "api") -> int | None:
        """Save a new version of a core file; None when the content is unchanged."""
        from ..objects import corefiles

        limit = self.config.settings.vault.core_file_max_bytes
        if isinstance(content, str) and len(content.encode("utf-8", "surrogatepass")) > limit:
            raise InputError(f"{name}: over the limit vault.core_file_max_bytes = {limit:,} "
                             "bytes; nothing was saved")
        with write(self.conn):
            return corefiles.write_core_file(self.conn, name, content, origin, self.clock.now())

    def resident_context(self, reveal: RevealArg = False) -> ResidentContext:
        """What the agent always carries: core files, a bounded directory, the timeline view
        (masked unless `reveal`)."""
        from ..objects import corefiles
        from ..recall.masking import mask_tree

        def context(show: bool) -> ResidentContext:
            core: dict[str, str] = {}
            for name in corefiles.CORE_FILES:
                current = corefiles.read_core_file(self.conn, name)
                core[name] = current["content"] if current else ""
            directory = objects.object_directory(
                self.conn, self.config.settings.context.directory_max_entries,
                self.config.settings.context.directory_max_bytes, today=self.clock.now().date(),
                spaces=self.spaces)
            if not show:
                core, directory = mask_tree(core), mask_tree(directory)
            return ResidentContext(core_files=core, directory=directory,
                                   timeline=self._timeline(None, show))

        return self._masked_read("context", reveal, context, lambda _s, _m: ["context"])

    # -- objects ------------------------------------------------------------------------------
    def list_objects(self, type_: str | None = None, current: bool = False,
                     reveal: RevealArg = False) -> list[objects.ObjectProfile]:
        """The live objects (of one type) this memory's space sees, each schedule's and
        todo's `state` as of today (a one-off whose day has gone reads `past`); `current`: only
        those still ahead or open (not cancelled, done, dropped or past). Masked unless
        `reveal`."""
        from ..objects.states import is_current, shown_state
        from ..recall.masking import mask_tree

        today = self.clock.now().date()

        def listing(show: bool) -> list[objects.ObjectProfile]:
            rows = []
            for obj in objects.list_objects(self.conn, type_, spaces=self.spaces):
                obj.state = shown_state(obj.type, obj.state, obj.body, obj.summary, today)
                if not current or is_current(obj.state):
                    rows.append(obj.to_dict())
            return rows if show else mask_tree(rows)

        return self._masked_read("list", reveal, listing, lambda shown, masked: _differing(
            shown, masked, lambda row: str(row["id"])))

    def read_object(self, object_id: str, offset: int = 0,
                    reveal: RevealArg = False) -> objects.ObjectPage:
        """An object's profile and one page of links (its state as of today; masked unless
        `reveal`)."""
        from ..recall.masking import mask_tree

        def page(show: bool) -> objects.ObjectPage:
            raw = objects.read_object(self.conn, object_id, offset, self.spaces,
                                      self.clock.now().date())
            return raw if show else mask_tree(raw)

        return self._masked_read("object", reveal, page, lambda _s, _m: [object_id])

    def object_versions(self, ref: str) -> ObjectVersions:
        """Every version of an object (by id, name or alias), oldest first: when, made by whom
        (model or person), which fields changed; never a field's value."""
        from ..objects.ids import resolve_object_ref
        from ..objects.versions import object_history

        object_id = resolve_object_ref(self.conn, ref, self.spaces)
        # an id given as such is not checked by the resolver: the space must see the object
        objects.read_object(self.conn, object_id, 0, self.spaces, self.clock.now().date())
        return ObjectVersions(id=object_id, versions=object_history(self.conn, object_id))

    # -- recall -------------------------------------------------------------------------------
    def find(self, query: str, types: Sequence[str] | None = None, project: str | None = None,
             limit: int = 20, reveal: RevealArg = False) -> FindAnswer:
        """memory_find: ranked lexical hits over objects and raw events (Chinese and English);
        secret-looking values masked unless `reveal` (logged: reveals.py)."""
        from ..recall.query import memory_find

        def answer(show: bool) -> FindAnswer:
            return memory_find(self.conn, query, types=types, project=project, limit=limit,
                               reveal=show, today=self.clock.now().date(), spaces=self.spaces)

        return self._masked_read("find", reveal, answer, lambda shown, masked: _differing(
            shown["hits"], masked["hits"], _record_of) or [_record_of(h) for h in shown["hits"]])

    def read(self, object_id: str, offset: int = 0, reveal: RevealArg = False) -> ReadAnswer:
        """memory_read: an object's profile, relations and evidence list, paged (masked
        unless `reveal`); a schedule's or todo's state as of today, as list and find show it."""
        from ..recall.query import memory_read

        def answer(show: bool) -> ReadAnswer:
            return memory_read(self.conn, object_id, offset, show, self.spaces,
                               today=self.clock.now().date())

        return self._masked_read("read", reveal, answer,
                                 lambda shown, _m: [_record_of(shown)])

    def evidence(self, id_or_event: str, offset: int = 0, reveal: RevealArg = False,
                 ) -> EvidenceAnswer:
        """memory_evidence: the raw text behind an object's evidence (or an event), paged
        (masked unless `reveal`)."""
        from ..recall.query import memory_evidence

        def answer(show: bool) -> EvidenceAnswer:
            return memory_evidence(self.conn, id_or_event, offset, show, self.spaces)

        return self._masked_read("evidence", reveal, answer,
                                 lambda shown, _m: [_record_of(shown)])

    def sync_recall_index(self, max_events: int | None = 5_000) -> dict[str, int]:
        """Index new events and changed objects for recall (one bounded write transaction).

        append_events indexes what it stored; this catches up the rest (a bulk load with
        `index=False`, an index write that failed, events from an older version). Recall
        scans events not yet indexed, so results never depend on when this ran.
        """
        from ..recall.index import sync_index
        from ..recall.masking import MARK_STEP, mark_objects

        with write(self.conn):
            done = sync_index(self.conn, max_events)
            # and what a find need not scan for secrets again (recall/masking.py: marks)
            mark_objects(self.conn, None if max_events is None else MARK_STEP)
            return done

    def reindex(self, chunk: int = 5_000) -> dict[str, int]:
        """Bring the recall index up to date in bounded transactions of `chunk` events (each
        one `sync_recall_index`); what was indexed in all."""
        done = {"events": 0, "objects": 0}
        while True:
            step = self.sync_recall_index(max_events=chunk)
            done = {key: done[key] + step[key] for key in done}
            if step["events"] < chunk:
                return done

    # -- vault, maintenance, forget -----------------------------------------------------------
    def render_vault(self, all: bool = False, rebuild: bool = False,
                     progress: Callable[[int, int], None] | None = None) -> ProjectionResult:
        """Project the memory into its vault: what changed since the last projection, every
        object with `all`, or the whole vault rewritten with `rebuild` (vault/projector.py);
        ProjectionBusy when another projection holds the vault."""
        from ..vault.projector import render_vault

        return render_vault(self.conn, self.config.vault_path, all=all or rebuild,
                            config=self.config, rebuild=rebuild, now=self.clock.now(),
                            progress=progress)

    def read_hand_edit(self, path: str | Path) -> HandEdit:
        """A hand-edited object file of the vault read as the correction it asks for (refused
        with one line when it is not one: vault/hand_edit.py)."""
        from ..vault.files import check_root
        from ..vault.hand_edit import read_hand_edit

        check_root(self.config.vault_path)
        settings = self.config.settings
        return read_hand_edit(self.conn, self.config.vault_path, path,
                              max_links=settings.vault.max_links_per_file,
                              max_bytes=settings.graph.max_proposal_bytes)

    def adopt_vault_file(self, hand: HandEdit) -> None:
        """The accepted object file is in memory now: let the projector replace it without
        keeping it as a conflict copy (bytes that differ from these are still kept)."""
        from ..vault.bookkeeping import record_owner

        with write(self.conn):
            record_owner(self.conn, hand.object_id, hand.rel_path, hand.digest, hand.version,
                         self.clock.now())

    def backup(self, dest: str | Path, force: bool = False) -> dict[str, Any]:
        """Copy memory.db to `dest` (a file, or a folder for memory-<UTC time>.db) with SQLite's
        online backup, verified by PRAGMA integrity_check (store/backup.py)."""
        from ..store.backup import backup_database

        return backup_database(self.conn, dest, force=force, now=self.clock.now())

    def check(self) -> dict[str, Any]:
        """Integrity, foreign keys, orphan links, queue states, stale claims, projection
        failures and a home others can read (home/check.py); `ok` False on an error."""
        from .check import check_memory

        return check_memory(self.conn, now=self.clock.now(), lease_s=self.config.settings.lease_s,
                            home=self.config.home)

    def forget_dry_run(self, text: str) -> ForgetReport:
        """Where every stored copy of `text` is (rows, files), changing nothing."""
        from .forget import count_copies, scrub_files

        report = count_copies(self.conn, text)
        scrub_files(self.config.home, text, report, apply=False)
        return report

    def forget(self, text: str) -> ForgetReport:
        """Replace every stored copy of `text` (home/forget.py), then re-render what it
        marked in the vault."""
        from .forget import forget_everywhere

        return forget_everywhere(self, text, self._render_after_forget)

    def _render_after_forget(self) -> str:
        from ..vault.projector import ProjectionBusy

        try:
            summary = self.render_vault(all=True).summary()
        except ProjectionBusy as exc:
            return f"{exc}: run `memvault project-vault --all`, then forget again for its files"
        return f"{summary['objects']} objects re-rendered, {summary['written']} files written"

    def worker_holder(self) -> str | None:
        """The live worker that holds the lease now ("host:pid"), or None."""
        from ..jobs.leases import live_lease, parse_holder

        lease = live_lease(self.conn, self.clock.now())
        if lease is None:
            return None
        holder = parse_holder(lease["holder"])
        return holder.describe() if holder else str(lease["holder"])

    # -- status -------------------------------------------------------------------------------
    def status(self) -> StatusReport:
        """memory_status of the spaces this memory sees, with the home's path; the owner's
        (unbound) also says which hook calls failed lately (capture.log, which names no
        space: a bound client's status leaves it out)."""
        from ..recall.masking import mask_tree
        from .status import capture_failures, memory_status  # the progress bars, quick_check

        report = memory_status(self.conn, spaces=self.spaces)
        report["home"] = str(self.config.home)
        if self.spaces.bound is None:
            report["capture"] = capture_failures(self.config.home)
        # names, paths and causes it quotes may hold what a person typed: masked as every read
        return mask_tree(report)

    # -- jobs ---------------------------------------------------------------------------------
    @overload
    def compact(self, node_range: tuple[int, int] | None = None,
                request_token: str | None = None, model: str | None = None, *,
                wait: Literal[False] = False, observer: None = None) -> JobReceipt: ...

    @overload
    def compact(self, node_range: tuple[int, int] | None = None,
                request_token: str | None = None, model: str | None = None, *,
                wait: Literal[True], observer: RunObserver | None = None) -> CompactionRun: ...

    def compact(self, node_range: tuple[int, int] | None = None,
                request_token: str | None = None, model: str | None = None, *,
                wait: bool = False, observer: RunObserver | None = None,
                ) -> JobReceipt | CompactionRun:
        """Queue an explicit compaction of every active node in `node_range` (inclusive node
        seq numbers; default: the whole timeline as it is now), to run on `model` (a `--model`
        value; None: the configured provider). Returns the enqueue receipt; with `wait`, runs
        it here to its end (telling `observer` how it goes) and returns what it did."""
        receipt = self._request_compaction(node_range, request_token, model)
        if not wait:
            return receipt
        from ..jobs.worker import Worker
        from .runs import run_compaction

        # Each job on the provider it was queued with.
        return run_compaction(self, Worker(self, scheduler=False), receipt["job_id"], observer)

    def _request_compaction(self, node_range: tuple[int, int] | None,
                            request_token: str | None, model: str | None) -> JobReceipt:
        # A raw node's seq is its id and a head takes its first child's: MAX(id) bounds every
        # seq, and nodes made after this moment (new events, other jobs' heads) are not covered.
        from ..jobs.kinds import JobMode
        from ..jobs.requests import request_job
        from ..timeline.hot import newest_node_id

        newest = newest_node_id(self.conn, EVERY_SPACE)
        lo, hi = node_range or (0, None)
        if hi is None:
            hi = newest
        if lo < 0 or hi < lo:
            raise InputError(f"bad node range {lo}:{hi}")
        return request_job(self.conn, JobMode.COMPACT, self.clock.now(), scope=f"nodes {lo}:{hi}",
                           request_token=request_token,
                           params={"min_seq": lo, "max_seq": hi, "max_node_id": newest},
                           provider=self._provider_record(model))

    @overload
    def organize(self, mode: str = "organize", scope: str | None = None,
                 retry_blocked: bool = False, request_token: str | None = None,
                 compact_first: bool = True, model: str | None = None, *,
                 wait: Literal[False] = False, observer: None = None) -> JobReceipt: ...

    @overload
    def organize(self, mode: str = "organize", scope: str | None = None,
                 retry_blocked: bool = False, request_token: str | None = None,
                 compact_first: bool = True, model: str | None = None, *,
                 wait: Literal[True], observer: RunObserver | None = None) -> JobRun: ...

    def organize(self, mode: str = "organize", scope: str | None = None,
                 retry_blocked: bool = False, request_token: str | None = None,
                 compact_first: bool = True, model: str | None = None, *,
                 wait: bool = False, observer: RunObserver | None = None) -> JobReceipt | JobRun:
        """memory_organize: queue an organize or deep job on `model` (a `--model` value; None:
        the configured provider); returns the enqueue receipt.

        An organize job first has the raw fragments hot now compacted (`compact_first`), so
        the latest conversation reaches the organize queue; deep never touches the timeline.
        With `wait`, the jobs run here to their end (telling `observer` how they go) and the
        vault, when the home has one, is brought up to date in runs of at most
        vault.objects_per_run objects; returns what they changed."""
        from ..jobs.kinds import JobMode
        from ..jobs.requests import request_job

        if mode not in (JobMode.ORGANIZE, JobMode.DEEP):
            raise InputError(f"mode must be organize or deep, got {mode!r}")
        if scope is not None and (not isinstance(scope, str) or len(scope) > 2_000):
            raise InputError("scope must be text of at most 2,000 chars")
        job_mode = JobMode(mode)
        receipt = request_job(self.conn, job_mode, self.clock.now(), scope, retry_blocked,
                              request_token,
                              compact_first=compact_first and job_mode is JobMode.ORGANIZE,
                              provider=self._provider_record(model))
        if not wait:
            from ..recall.masking import mask_tree

            # the receipt echoes the scope, the caller's own text: masked as every answer
            return mask_tree(receipt)
        from .runs import run_job

        return run_job(self, receipt, observer)

    def _provider_record(self, model: str | None) -> dict[str, Any]:
        """The provider spec a requested job records: `model` checked (an unknown name is
        refused before anything is queued), else the configured one as it is, once its name
        is known to be registered (a memvault.toml naming none is refused the same way)."""
        from ..models.registry import check_provider_name
        from ..models.spec import ProviderSpec

        if model:
            return ProviderSpec.parse(self.config, model).record()  # parse checks the name
        spec = ProviderSpec.configured(self.config)
        check_provider_name(spec.name)
        return spec.record()

    def set_busy(self, busy: bool) -> None:
        """memory_busy: while busy, the worker claims no new batch."""
        from ..jobs.worker import set_busy

        set_busy(self, busy)

    def usage(self, days: int = 30) -> UsageSummary:
        """Model usage per day and mode, from the ledger."""
        from ..jobs.ledger import usage_summary

        return usage_summary(self.conn, days)

    def worker(self, provider: Provider | ProviderSpec | str | None = None,
               model: str | None = None, **kwargs: Any) -> Worker:
        """A Worker on this home. `provider` a Provider object: every job runs on it; a name
        (with `model`): the provider of jobs that record none and of the jobs its scheduler
        creates; None: memvault.toml's. Otherwise each job runs on the provider it was queued
        with."""
        from ..jobs.worker import Worker
        from ..models.spec import ProviderSpec

        if isinstance(provider, str):
            provider = ProviderSpec.choose(self.config, provider, model)
        return Worker(self, provider, **kwargs)

    def correct(self, correction: Correction) -> CorrectionReceipt:
        """A person's correction (objects.corrections.Correction: edit, merge, archive,
        accept_edit), committed in one transaction with a receipt; versions say `person`."""
        from ..objects.corrections import correct

        return correct(self.conn, self.config, correction, self.clock.now(), self.spaces)

    def move_space(self, ref: str | int, space: str) -> SpaceMove:
        """`memvault space move`: re-place an event (42, event:42) or an object (an id, or a
        unique name or alias; the objects merged into it go with it) into `space`, by hand, in
        one transaction. An object's move is a new version whose origin is `person` and moves
        the graph revision (a batch that read it before is refused as stale). Only the owner,
        bound to no space, moves anything."""
        from ..base.spaces import check_space
        from ..objects.ids import resolve_object_ref
        from ..store.connection import bump_revision

        if self.spaces.bound is not None:
            raise InputError("a client bound to a space cannot move anything between spaces")
        check_space(space)
        with write(self.conn):
            if isinstance(ref, int) or str(ref).isdigit() or str(ref).startswith("event:"):
                event_id = events.parse_event_id(ref)
                was = events.move_event(self.conn, event_id, space, self.clock.now())
                return SpaceMove(kind="event", id=str(event_id), space=space, was=was,
                                 moved=[str(event_id)] if was != space else [])
            object_id = objects.resolve_redirect(
                self.conn, resolve_object_ref(self.conn, str(ref), self.spaces))
            was = objects.get_object(self.conn, object_id).space
            moved = objects.move_object(self.conn, object_id, space, self.clock.now())
            if moved:
                bump_revision(self.conn)
            return SpaceMove(kind="object", id=object_id, space=space, was=was, moved=moved)

    def event_moves(self, event_id: int) -> list[events.EventMove]:
        """An event's moves between spaces, oldest first: the owner's history of where it was
        (a client bound to a space is refused: the spaces it came from are not its to see)."""
        if self.spaces.bound is not None:
            raise InputError("a client bound to a space cannot read where an event was moved")
        return events.event_moves(self.conn, event_id)

    def approve_project(self, project_id: str) -> ProjectApproval:
        """memory_project_approve: activate a candidate project (nothing else does). A project
        of a space this Memory does not see is not found, as one that does not exist."""
        from ..objects.projects import approve_project

        return approve_project(self.conn, project_id, self.clock.now(), self.spaces)


def _record_of(data: Mapping[str, Any]) -> str:
    """The record an answer (or a hit) shows, for the reveal log: event:ID or the object id."""
    if data.get("kind") == "event":
        return f"event:{data['id']}"
    inner = data.get("object")
    return str(data.get("id") or (inner or {}).get("id") or "?")


def _differing(shown: Sequence[Any], masked: Sequence[Any],
               name: Callable[[Any], str]) -> list[str]:
    """The names of the entries a revealed answer shows otherwise than its masked twin (the
    same rows in the same order: masking changes values, never which rows)."""
    return [name(row) for row, hidden in zip(shown, masked, strict=False) if row != hidden]
