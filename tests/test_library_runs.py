"""The library runs a job end to end: `Memory.organize(wait=True)` compacts first, runs every
batch, counts what changed and brings the vault up to date in runs of at most
vault.objects_per_run objects; `Memory.compact(wait=True)` runs a compaction. A program that
embeds `Memory` gets the typed report without the CLI. The built-in model, a ManualClock."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import write_config
from memvault import ManualClock, Memory
from memvault.home.runs import CompactionRun, JobRun, QuietRun, refresh_vault
from memvault.objects.corrections import Correction, ProfileEdit
from memvault.vault.bookkeeping import vault_status
from memvault.vault.paths import object_path
from memvault.vault.projector import render_vault

TURNS = ("I have a dentist appointment on 2026-11-05 at 10:00.",
         "Remind me to renew the passport before December.",
         "Mia Park is my sister; she teaches piano in Oslo.",
         "Qin Hao leads the storage rewrite project.")


@pytest.fixture
def small_runs(home: Path, clock: ManualClock) -> Memory:
    """A home whose projector renders two objects a run, with a vault already written."""
    write_config(home, "[vault]\nobjects_per_run = 2\n")
    memory = Memory.open(home, clock=clock)
    render_vault(memory.conn, memory.config.vault_path, all=True, config=memory.config,
                 now=clock.now())
    return memory


class Told(QuietRun):
    """An observer that keeps what a run told it."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def started(self, label: str, total: int, done: int) -> None:
        self.said.append(f"started {label}")

    def claimed(self, line: str) -> None:
        self.said.append(line)

    def waiting(self, note: str) -> None:
        self.said.append(f"waiting: {note}")

    def finished(self, total: int) -> None:
        self.said.append(f"finished {total}")


def test_organize_and_wait_compacts_organizes_and_renders_to_the_end(small_runs: Memory) -> None:
    mem = small_runs
    for turn in TURNS:
        mem.append_event(turn)
    told = Told()
    run = mem.organize(wait=True, observer=told)
    try:
        assert isinstance(run, JobRun) and run.state == "done"
        assert run.compaction is not None and run.compaction.state == "done"
        assert run.compaction.before.nodes > run.compaction.after.nodes
        made = sum(run.recognised.new_objects.values())
        assert made >= 2 and run.recognised.linked >= 2
        # Every change is on disk, in runs of at most two objects: more than one run.
        assert run.vault.refreshed and run.vault.remaining == 0 and run.vault.runs >= 2
        assert vault_status(mem.conn)["pending_objects"] == 0
        for row in mem.list_objects():
            assert (mem.config.vault_path / object_path(row["id"])).is_file(), row["id"]
        assert told.said[0] == "started compact" and "started organize" in told.said
        assert any(line.startswith("organize batch ") for line in told.said)
        compact_bar = told.said[:told.said.index("started organize")]
        assert not [line for line in compact_bar if line.startswith("organize batch")]
        batches = mem.conn.execute("SELECT COUNT(*) FROM batches WHERE job_id = ?",
                                   (run.receipt["job_id"],)).fetchone()[0]
        assert told.said[-1] == f"finished {batches}"  # every batch that ran
    finally:
        mem.close()


def test_a_home_without_a_vault_keeps_none(mem: Memory) -> None:
    mem.append_event(TURNS[1])
    run = mem.organize(wait=True)
    assert run.state == "done" and not run.vault.refreshed and not run.vault.busy
    assert not mem.config.vault_path.exists()


def test_compact_and_wait_reports_the_timeline_before_and_after(mem: Memory) -> None:
    for turn in TURNS:
        mem.append_event(turn)
    run = mem.compact(wait=True)
    assert isinstance(run, CompactionRun) and run.state == "done"
    assert (run.before.nodes, run.after.nodes) == (4, 1)
    assert mem.status()["events"]["pending"] == 4  # queued for organize


def test_without_wait_only_the_receipt_comes_back(mem: Memory) -> None:
    mem.append_event(TURNS[0])
    receipt = mem.organize()
    assert receipt["state"] == "queued" and receipt["compact_job_id"] is not None


def test_an_object_that_fails_every_run_ends_the_refresh(
        small_runs: Memory, clock: ManualClock) -> None:
    """An object whose file cannot be written stays pending and is reported; bringing the
    vault up to date stops when a run gets no closer, instead of looping."""
    mem = small_runs
    try:
        mem.append_event(TURNS[1])
        mem.organize(wait=True)
        [todo] = [row["id"] for row in mem.list_objects("todo")]
        target = mem.config.vault_path / object_path(todo)
        target.unlink()
        target.mkdir()  # a folder where the object's file goes: its rendering fails
        mem.correct(Correction("edit", [todo], ProfileEdit(summary="Renew the passport soon.")))
        refresh = refresh_vault(mem)
        assert refresh.refreshed and refresh.errors == 1 and refresh.remaining == 1
        assert refresh.runs <= 2
    finally:
        mem.close()
