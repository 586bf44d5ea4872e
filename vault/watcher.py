"""The watcher: hand edits of the vault, noticed as they happen (`memvault watch`).

It reacts to the current state of a changed path, never to the kind of event, so an editor's
save-by-rename (write a temp file, rename it over the original) counts like any save, and a
burst of saves is one change (watchfiles groups changes until `step_ms` pass quietly, at most
`debounce_ms`).

- AGENTS.md, SOUL.md, USER.md at the vault root: imported into SQLite as a new version
  (origin 'hand'); refused with a message, the file left alone, when not UTF-8 or too large.
- a projected object file (or page, or objects/README.md): NOT imported. The edit or deletion is
  reported (`vault_reports`, listed by status with the file and the object) and the object is
  marked dirty, so the next projection restores the file and keeps the edit beside it as a
  conflict copy `<name>.conflict-1.md`, which `memvault accept-edit` can take as a correction.
  A conflict copy itself is a person's file: never reported, never imported.

Invariants:
- the projection's own writes are never taken for hand edits: temp files are filtered out by
  name, and a file whose bytes are what the projector recorded, announced (a write intent, also
  left by a projector killed before its record) or would render now from the store, is the
  projection's.
- nothing here writes an object file; SQLite is written only for core imports, reports, dirty
  marks and the heartbeat (`state['vault.watcher_heartbeat']`, every `heartbeat_s`).
- a watcher never goes stale silently: if the vault folder is removed or replaced it stops with
  VaultGone (the heartbeat then ages in status), and it never restarts itself in a loop.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import watchfiles

from ..base.clock import Clock, iso
from ..base.config import Config
from ..base.errors import MemvaultError
from ..objects.corefiles import CORE_FILES, read_core_file
from ..store.connection import open_db, set_state, write
from .bookkeeping import is_intended, mark_dirty, open_report, owner_of, record_owner
from .core_sync import import_core_bytes, read_core_disk, refuse_unsafe
from .files import UnsafeFile, ensure_folder, read_file, sha256, vault_file
from .paths import is_core_file, is_object_file, is_temp_name, relative
from .render import Renderer

log = logging.getLogger(__name__)


@dataclass
class WatchOutcome:
    """What the watcher made of one changed path."""

    path: str  # vault-relative
    action: str  # imported|refused|unchanged|own_write|hand_edit|deleted|missing|error
    object_id: str | None = None
    message: str = ""


class VaultGone(MemvaultError):
    """The watched vault folder was removed or replaced: this watcher would see nothing more."""


class VaultFilter(watchfiles.BaseFilter):
    """Markdown files only; no dot files, temp files, editor swap files or dot folders."""

    ignore_dirs = (".obsidian", ".trash", ".git", "__pycache__")
    ignore_entity_patterns = (r"^\.", r"\.memvault-tmp$", r"~$", r"\.sw[a-p]$", r"^\d+$")

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        return path.endswith(".md") and super().__call__(change, path)


class VaultWatcher:
    """Watches one vault and applies the rules above; `run` blocks until `stop_event` is set."""

    def __init__(
        self,
        db_path: Path,
        vault: Path,
        *,
        core_max_bytes: int = 262_144,
        max_links: int = 50,
        debounce_ms: int = 1_000,
        step_ms: int = 200,
        heartbeat_s: float = 30.0,
        clock: Clock | None = None,
        on_batch: Callable[[list[WatchOutcome]], None] | None = None,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.db_path = Path(db_path)
        self.vault = Path(vault)
        self.core_max_bytes = core_max_bytes
        self.max_links = max_links
        self.debounce_ms = debounce_ms
        self.step_ms = min(step_ms, debounce_ms)
        self.heartbeat_s = heartbeat_s
        self.clock = clock
        self.on_batch = on_batch
        self.on_ready = on_ready

    @classmethod
    def for_config(cls, config: Config, **options: Any) -> VaultWatcher:
        """A watcher of a memory home's vault with the home's limits."""
        options.setdefault("core_max_bytes", config.settings.vault.core_file_max_bytes)
        options.setdefault("max_links", config.settings.vault.max_links_per_file)
        return cls(config.db_path, config.vault_path, **options)

    def _now(self) -> datetime:
        return self.clock.now() if self.clock else datetime.now(UTC)

    # -- the loop -----------------------------------------------------------------------------
    def run(self, stop_event: threading.Event | None = None) -> None:
        """Watch until `stop_event` is set (or Ctrl-C). Core edits made while no watcher ran are
        imported first."""
        ensure_folder(self.vault)
        stop_event = stop_event or threading.Event()
        identity = self._identity()
        # the home was opened (and migrated) through Memory by the command running this
        conn = open_db(self.db_path, migrations=None)
        try:
            ready = False
            last_beat = float("-inf")
            changes_iter = watchfiles.watch(
                self.vault, watch_filter=VaultFilter(), debounce=self.debounce_ms,
                step=self.step_ms, stop_event=stop_event,
                rust_timeout=max(1, int(min(self.heartbeat_s, 1.0) * 1000)), yield_on_timeout=True,
                raise_interrupt=False,
            )
            for changes in changes_iter:
                if time.monotonic() - last_beat >= self.heartbeat_s:
                    if self._identity() != identity:
                        raise VaultGone(
                            f"the vault folder {self.vault} was removed or replaced; this "
                            "watcher stops (restart `memvault watch`)")
                    self._beat(conn)
                    last_beat = time.monotonic()
                if not ready:  # watching from here on: catch up on what changed before
                    ready = True
                    startup = self.handle(conn, CORE_FILES)
                    if self.on_ready:
                        self.on_ready()
                    self._report(startup, quiet=True)
                if changes:
                    self._report(self.handle(conn, sorted({p for _, p in changes})))
        finally:
            conn.close()

    def _identity(self) -> tuple[int, int] | None:
        """(device, inode) of the vault folder: a new folder at the same path is not watched."""
        try:
            st = os.stat(self.vault)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _beat(self, conn: sqlite3.Connection) -> None:
        try:
            with write(conn):
                set_state(conn, "vault.watcher_heartbeat", iso(self._now()))
        except sqlite3.Error as exc:  # a busy store must not kill the watcher
            log.warning("watcher heartbeat not written: %s", exc)

    def _report(self, outcomes: list[WatchOutcome], quiet: bool = False) -> None:
        shown = [o for o in outcomes if not quiet or o.action in ("imported", "refused")]
        if shown and self.on_batch:
            self.on_batch(shown)

    # -- one batch of changed paths -----------------------------------------------------------
    def handle(self, conn: sqlite3.Connection, paths: Iterable[str | Path]) -> list[WatchOutcome]:
        """Apply the rules to each path as it is on disk now (absolute or vault-relative)."""
        outcomes = []
        rels = []
        for raw in paths:
            rel = raw if isinstance(raw, str) and not Path(raw).is_absolute() else relative(
                self.vault, raw)
            if rel is None or is_temp_name(rel.rsplit("/", 1)[-1]):
                continue
            rels.append(rel)
        rels.sort(key=lambda r: (not is_core_file(r), r))  # core files first
        for rel in rels:
            outcome: WatchOutcome | None
            try:
                if is_core_file(rel):
                    outcome = self._core(conn, rel)
                elif rel.startswith("objects/"):
                    outcome = self._projected(conn, rel)
                else:
                    outcome = None
            except (sqlite3.Error, OSError) as exc:
                outcome = WatchOutcome(rel, "error", None, f"{rel}: {exc}")
                log.warning("watcher: %s", outcome.message)
            if outcome is not None:
                outcomes.append(outcome)
        return outcomes

    def _core(self, conn: sqlite3.Connection, name: str) -> WatchOutcome:
        current = read_core_file(conn, name)
        stored = current["content"].encode("utf-8") if current else b""
        try:
            data = read_core_disk(self.vault, name, self.core_max_bytes, stored)
        except UnsafeFile as exc:  # a symlink, FIFO or device: never read, never imported
            outcome = refuse_unsafe(conn, name, exc, self._now())
            return WatchOutcome(name, outcome.action, name, outcome.message)
        if data is None:
            kept = f"version {current['version']}" if current else "no version"
            return WatchOutcome(name, "missing", name, f"{name} is not in the vault; memory "
                                f"keeps {kept} and the next projection writes it back")
        digest = sha256(data)
        row = conn.execute(
            "SELECT sha256, version FROM projection WHERE object_id = ?", (name,)
        ).fetchone()
        if (row is not None and row["sha256"] == digest) or is_intended(conn, name, digest):
            return WatchOutcome(name, "own_write", name)  # recorded, or announced before a kill
        if (current and current["sha256"] == digest) or (current is None and data == b""):
            with write(conn):
                record_owner(conn, name, name, digest, current["version"] if current else 0,
                             self._now())
            return WatchOutcome(name, "unchanged", name, f"{name}: already in memory")
        outcome = import_core_bytes(conn, name, data, self.core_max_bytes, self._now())
        return WatchOutcome(name, outcome.action, name, outcome.message)

    def _projected(self, conn: sqlite3.Connection, rel: str) -> WatchOutcome | None:
        found = owner_of(conn, rel)
        if found is None:
            return None  # not a file the projection wrote: a person's own note, left alone
        owner, last = found
        try:
            data = read_file(vault_file(self.vault, rel))
        except UnsafeFile as exc:
            return self._unsafe_projected(conn, rel, owner, exc)
        if data is not None and (sha256(data) == last or is_intended(conn, rel, sha256(data))):
            return WatchOutcome(rel, "own_write", owner)  # recorded, or announced before a kill
        conn.execute("BEGIN")
        try:
            rendered = Renderer(conn, self.max_links).render_owner(owner)
        finally:
            conn.execute("COMMIT")
        expected = rendered.files.get(rel) if rendered else None
        if data == expected:
            return WatchOutcome(rel, "own_write", owner)
        label = owner if ":" in owner else "the object directory"
        if data is None:
            kind, action = "deleted", "deleted"
            detail = (f"{rel} ({label}) was deleted by hand; the next projection writes it back")
        else:
            kind, action = "hand_edit", "hand_edit"
            detail = (f"{rel} ({label}) was edited by hand: not imported (object files are a "
                      "projection of SQLite); the next projection restores it and keeps the "
                      "edit beside it as a conflict copy (<name>.conflict-1.md); "
                      "`memvault accept-edit FILE` takes it as your correction")
        with write(conn):
            open_report(conn, rel, owner if ":" in owner else None, kind, detail,
                        sha256(data) if data is not None else None, self._now())
            if ":" in owner and is_object_file(rel):
                mark_dirty(conn, owner, "hand_edit")
        return WatchOutcome(rel, action, owner if ":" in owner else None, detail)

    def _unsafe_projected(
        self, conn: sqlite3.Connection, rel: str, owner: str, error: UnsafeFile,
    ) -> WatchOutcome:
        """A projected file that became a symlink or special file (or sits under a linked
        folder): reported, never read; the next projection deals with it (a link at the file
        is moved aside as a .conflict copy, anything else is refused and shown as an error)."""
        label = owner if ":" in owner else "the object directory"
        then = ("the next projection moves the link aside as a .conflict copy and writes the "
                "file" if error.kind == "symlink" else
                "the projector will not write there until it is fixed")
        detail = f"{rel} ({label}): {error}; not followed, {then}"
        with write(conn):
            open_report(conn, rel, owner if ":" in owner else None, "hand_edit", detail, None,
                        self._now())
            if ":" in owner and is_object_file(rel):
                mark_dirty(conn, owner, "hand_edit")
        return WatchOutcome(rel, "hand_edit", owner if ":" in owner else None, detail)
