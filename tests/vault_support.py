"""Helpers shared by the vault tests (no tests here): a memory on a manual clock, objects,
a link checker for the vault, and a real watchfiles watcher running in a thread."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memvault import ManualClock, Memory
from memvault.objects.records import ObjectRecord, add_relation, save_object
from memvault.store.connection import write
from memvault.vault.watcher import VaultWatcher, WatchOutcome

TZ = timezone(timedelta(hours=8))
START = datetime(2026, 10, 5, 9, 0, tzinfo=TZ)
WAIT_S = 15.0  # upper bound for a watcher reaction; the tests wait on a condition, not a sleep

_LINK = re.compile(r"\[\[([^\]|]*)(?:\|[^\]]*)?\]\]")


def open_memory(home: Path, start: datetime = START) -> Memory:
    """A memory home whose clock only moves when a test moves it."""
    return Memory.open(home, clock=ManualClock(start))


def tick(mem: Memory, seconds: float = 1) -> datetime:
    clock = mem.clock
    assert isinstance(clock, ManualClock)
    return clock.advance(seconds=seconds)


def put_object(mem: Memory, object_id: str, name: str | None = None, **fields: Any) -> None:
    """Create or update an object (one transaction), one clock second later than the last."""
    now = tick(mem)
    kind = object_id.partition(":")[0]
    with write(mem.conn):
        row = mem.conn.execute("SELECT * FROM objects WHERE id = ?", (object_id,)).fetchone()
        obj = ObjectRecord.from_row(row) if row else ObjectRecord(
            id=object_id, type=kind, name=name or object_id)
        if name is not None:
            obj.name = name
        for key, value in fields.items():
            setattr(obj, key, value)
        save_object(mem.conn, obj, now)


def relate(mem: Memory, src: str, label: str, dst: str) -> None:
    with write(mem.conn):
        add_relation(mem.conn, src, label, dst, tick(mem))


def vault_files(vault: Path) -> dict[str, bytes]:
    """Every file of a vault as {relative posix path: bytes} (the lock file is outside)."""
    return {
        p.relative_to(vault).as_posix(): p.read_bytes()
        for p in sorted(vault.rglob("*")) if p.is_file()
    }


def broken_links(vault: Path) -> list[str]:
    """Wikilinks in the vault's Markdown that Obsidian could not resolve to a file or heading.

    A target resolves like Obsidian does: a vault-relative path without `.md`, or a base name
    that exactly one file carries; `[[#heading]]` must name a heading of the same file.
    """
    files = [p for p in vault.rglob("*.md")]
    by_stem: dict[str, list[Path]] = {}
    for p in files:
        by_stem.setdefault(p.stem, []).append(p)
    problems = []
    for p in files:
        text = p.read_text(encoding="utf-8")
        headings = {line.lstrip("#").strip() for line in text.splitlines()
                    if line.startswith("#")}
        for target in _LINK.findall(text):
            name, _, heading = target.partition("#")
            if not name:
                if heading not in headings:
                    problems.append(f"{p.relative_to(vault)}: no heading {heading!r}")
                continue
            if (vault / f"{name}.md").is_file():
                continue
            matches = by_stem.get(name, [])
            if len(matches) != 1:
                problems.append(f"{p.relative_to(vault)}: [[{target}]] -> {len(matches)} files")
    return problems


class Collector:
    """Gathers watcher outcomes; tests wait on a condition with a timeout."""

    def __init__(self) -> None:
        self.outcomes: list[WatchOutcome] = []
        self._cond = threading.Condition()
        self.ready = threading.Event()

    def add(self, batch: list[WatchOutcome]) -> None:
        with self._cond:
            self.outcomes.extend(batch)
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[list[WatchOutcome]], bool],
                 timeout: float = WAIT_S) -> list[WatchOutcome]:
        with self._cond:
            if not self._cond.wait_for(lambda: predicate(self.outcomes), timeout=timeout):
                raise AssertionError(f"watcher did not react in {timeout}s: {self.outcomes}")
            return list(self.outcomes)

    def wait_path(self, path: str, *actions: str, timeout: float = WAIT_S) -> WatchOutcome:
        """The first outcome for `path` (with one of `actions`, if given)."""
        def found(outcomes: list[WatchOutcome]) -> bool:
            return any(o.path == path and (not actions or o.action in actions)
                       for o in outcomes)

        self.wait_for(found, timeout)
        return next(o for o in self.outcomes
                    if o.path == path and (not actions or o.action in actions))


@contextmanager
def running_watcher(mem: Memory, **options: Any) -> Iterator[Collector]:
    """A real watchfiles watcher on the memory's vault, in a thread, until the block ends."""
    collector = Collector()
    options.setdefault("debounce_ms", 400)
    options.setdefault("step_ms", 60)
    options.setdefault("heartbeat_s", 0.1)
    watcher = VaultWatcher.for_config(
        mem.config, clock=mem.clock, on_batch=collector.add, on_ready=collector.ready.set,
        **options,
    )
    stop = threading.Event()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            watcher.run(stop)
        except BaseException as exc:  # surfaced in the test thread below
            errors.append(exc)
            collector.ready.set()

    thread = threading.Thread(target=target, name="vault-watcher", daemon=True)
    thread.start()
    try:
        assert collector.ready.wait(WAIT_S), "watcher did not start"
        assert not errors, errors
        yield collector
    finally:
        stop.set()
        thread.join(WAIT_S)
    assert not thread.is_alive(), "watcher did not stop"
    assert not errors, errors


def project(mem: Memory, all: bool = True, **options: Any) -> Any:
    """One projection run of the memory's vault with its config, stamped by its clock."""
    from memvault.vault.projector import render_vault

    options.setdefault("now", mem.clock.now())
    return render_vault(mem.conn, mem.config.vault_path, all=all, config=mem.config, **options)
