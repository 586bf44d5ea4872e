"""The vault recovers by itself: a projection that failed is retried once its cause is fixed,
and a projection killed between writing a file and recording it never fakes a hand edit."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.vault.bookkeeping import vault_status
from memvault.vault.paths import object_path
from vault_support import open_memory, put_object

needs_symlink = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")
PEOPLE = [f"person:p{i:02d}" for i in range(12)]


def errors_and_pending(home: Path) -> tuple[int, int]:
    with open_memory(home) as mem:
        status = vault_status(mem.conn)
        return status["error_total"], status["pending_objects"]


@needs_symlink
def test_objects_that_failed_behind_a_linked_folder_are_retried_once_it_is_fixed(
    runner: CliRunner, home: Path, tmp_path: Path
) -> None:
    """A --rebuild while `objects/person` is a symlink fails for every person, also those with
    no change to render; once the folder is back, plain batch runs write them and `check`
    goes green, with no second --rebuild."""
    with open_memory(home) as mem:
        for object_id in PEOPLE:
            put_object(mem, object_id, object_id.upper())
        vault = mem.config.vault_path
    run_cli(runner, "project-vault", "--all", "--quiet")
    folder, outside = vault / "objects" / "person", tmp_path / "outside"
    folder.rename(outside)
    folder.symlink_to(outside, target_is_directory=True)
    with open_memory(home) as mem:
        put_object(mem, PEOPLE[0], summary="changed while the folder was a link")

    run_cli(runner, "project-vault", "--rebuild", "--quiet", code=1)
    assert errors_and_pending(home)[0] == len(PEOPLE)
    run_cli(runner, "check", code=1)

    folder.unlink()
    outside.rename(folder)  # fixed: the real folder is back
    run_cli(runner, "project-vault", "--quiet")  # one batch of 10 (failed owners go last)
    run_cli(runner, "project-vault", "--quiet")
    assert errors_and_pending(home) == (0, 0)
    assert "changed while the folder was a link" in (vault / object_path(PEOPLE[0])).read_text()
    report = json.loads(run_cli(runner, "check", "--json").stdout)
    assert report["ok"] and not report["problems"]


def test_a_failed_directory_write_is_retried_with_nothing_else_to_render(
    tmp_path: Path
) -> None:
    """objects/README.md whose last write failed is rendered again by the next batch run even
    when no object is pending and its file is as recorded, so its error clears."""
    from memvault.store.connection import write
    from memvault.vault.bookkeeping import record_error
    from memvault.vault.schema import DIRECTORY_KEY
    from vault_support import project

    with open_memory(tmp_path / "home") as mem:
        put_object(mem, "person:qhy", "秦浩宇")
        project(mem)
        with write(mem.conn):
            record_error(mem.conn, DIRECTORY_KEY, DIRECTORY_KEY, "write failed: disk full",
                         mem.clock.now())
        assert vault_status(mem.conn)["error_total"] == 1
        project(mem, all=False)
        assert vault_status(mem.conn)["error_total"] == 0


# -- a kill between a file's rename and its record -------------------------------------------
class Killed(BaseException):
    """Stands for SIGKILL: nothing after the raise runs, no handler catches it."""


def kill_before_record(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> None:
    """The next call of `module.name` dies first: files already renamed stay, unrecorded."""
    def die(*args: object, **kwargs: object) -> None:
        monkeypatch.undo()
        raise Killed

    monkeypatch.setattr(module, name, die)


def conflict_copies(vault: Path) -> list[Path]:
    return sorted(p for p in vault.rglob("*") if ".conflict" in p.name)


def project_v2_then_kill(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """person:qhy projected at v1, then a projection of v2 killed between the rename of its
    file and the record of it; the file's path."""
    from memvault.vault import projector
    from vault_support import project

    put_object(mem, "person:qhy", "秦浩宇", summary="v1")
    project(mem)
    put_object(mem, "person:qhy", summary="v2")
    kill_before_record(monkeypatch, projector, "_record_chunk")
    with pytest.raises(Killed):
        project(mem)  # v2's file is renamed into place; its record never happens
    return mem.config.vault_path / object_path("person:qhy")


def test_an_object_file_written_before_a_kill_is_not_taken_for_a_hand_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.vault.watcher import VaultWatcher
    from vault_support import project

    with open_memory(tmp_path / "home") as mem:
        vault = mem.config.vault_path
        assert "v2" in project_v2_then_kill(mem, monkeypatch).read_text()
        put_object(mem, "person:qhy", summary="v3")  # the store moves on before the next run

        watcher = VaultWatcher.for_config(mem.config, clock=mem.clock)
        assert [o.action for o in watcher.handle(mem.conn, [object_path("person:qhy")])] == [
            "own_write"]
        result = project(mem)
        assert not result.conflicts and not result.errors
        assert "v3" in (vault / object_path("person:qhy")).read_text()
        assert conflict_copies(vault) == []
        status = vault_status(mem.conn)
        assert status["hand_edits"] == [] and status["conflicts"] == []
        assert mem.conn.execute("SELECT COUNT(*) FROM projection_intents").fetchone()[0] == 0


def test_a_core_file_written_before_a_kill_is_not_imported_as_a_hand_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.objects.corefiles import core_file_history, read_core_file
    from memvault.vault import core_sync
    from memvault.vault.watcher import VaultWatcher
    from vault_support import project

    with open_memory(tmp_path / "home") as mem:
        vault = mem.config.vault_path
        mem.write_core_file("AGENTS.md", "# Agents\n\nv1\n")
        project(mem)
        mem.write_core_file("AGENTS.md", "# Agents\n\nv2\n")
        kill_before_record(monkeypatch, core_sync, "record_owner")
        with pytest.raises(Killed):
            project(mem)
        assert (vault / "AGENTS.md").read_text() == "# Agents\n\nv2\n"
        mem.write_core_file("AGENTS.md", "# Agents\n\nv3\n")

        watcher = VaultWatcher.for_config(mem.config, clock=mem.clock)
        assert [o.action for o in watcher.handle(mem.conn, ["AGENTS.md"])] == ["own_write"]
        project(mem)
        assert [v["origin"] for v in core_file_history(mem.conn, "AGENTS.md")] == ["api"] * 3
        assert read_core_file(mem.conn, "AGENTS.md")["content"] == "# Agents\n\nv3\n"
        assert (vault / "AGENTS.md").read_text() == "# Agents\n\nv3\n"


def test_a_hand_edit_after_a_killed_write_is_still_kept_as_a_conflict_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The intent covers the projector's bytes only: what a person types is still kept."""
    from vault_support import project

    with open_memory(tmp_path / "home") as mem:
        vault = mem.config.vault_path
        path = project_v2_then_kill(mem, monkeypatch)
        path.write_text(path.read_text() + "\ntyped by hand\n", encoding="utf-8")
        put_object(mem, "person:qhy", summary="v3")
        result = project(mem)
        [copy] = conflict_copies(vault)
        assert result.conflicts and "typed by hand" in copy.read_text()


@pytest.mark.timeout(300)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the loop forks its children")
def test_sigkills_during_projection_fake_no_hand_edit(tmp_path: Path) -> None:
    """tests/vault_kill_loop.py: 30 children changing objects and projecting, each SIGKILLed
    at a seeded random moment (on the old code 50 kills left 11 conflict copies and reports)."""
    from vault_kill_loop import run

    counts = run(tmp_path / "home", kills=int(os.environ.get("MEMVAULT_VAULT_KILLS", "30")))
    assert counts["killed"] >= 1
    assert counts["false reports"] == counts["conflict copies"] == 0
    assert counts["vault_reports rows"] == counts["final conflicts"] == 0
    assert counts["check problems"] == counts["core versions imported as hand edits"] == 0
