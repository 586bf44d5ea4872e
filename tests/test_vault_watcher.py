"""The watcher, with a real watchfiles watcher on tmp_path in a thread: core files flow back,
object files do not (reported, restored later with a .conflict copy), own writes are ignored."""

from __future__ import annotations

import os
import threading

import pytest
from memvault.objects.corefiles import core_file_history, read_core_file
from memvault.objects.records import get_object
from memvault.store.connection import get_state
from memvault.vault.bookkeeping import vault_status
from memvault.vault.paths import object_path
from memvault.vault.watcher import VaultGone, VaultWatcher
from vault_support import open_memory, project, put_object, running_watcher


@pytest.fixture
def mem(tmp_path):
    with open_memory(tmp_path / "home") as memory:
        memory.write_core_file("AGENTS.md", "# Agents\n\nv1\n")
        put_object(memory, "person:qhy", "秦浩宇", summary="the user")
        project(memory)
        yield memory


def origins(mem, name: str) -> list[str]:
    return [h["origin"] for h in core_file_history(mem.conn, name)]


def test_a_hand_edit_of_a_core_file_is_imported(mem) -> None:
    agents = mem.config.vault_path / "AGENTS.md"
    with running_watcher(mem) as seen:
        agents.write_text("# Agents\n\nedited in Obsidian\n", encoding="utf-8")
        outcome = seen.wait_path("AGENTS.md", "imported")
    assert outcome.message == "AGENTS.md: imported hand edit as version 2"
    current = read_core_file(mem.conn, "AGENTS.md")
    assert current["content"] == "# Agents\n\nedited in Obsidian\n"
    assert origins(mem, "AGENTS.md") == ["api", "hand"]
    assert agents.read_text(encoding="utf-8") == current["content"]  # no front matter added
    assert project(mem).written == []  # the import is not written back


def test_a_burst_of_saves_is_one_import(mem) -> None:
    user = mem.config.vault_path / "USER.md"
    with running_watcher(mem, debounce_ms=1_000, step_ms=300) as seen:
        for n in range(5):
            user.write_text(f"draft {n}\n", encoding="utf-8")
        seen.wait_path("USER.md", "imported")
    assert origins(mem, "USER.md") == ["hand"]
    assert read_core_file(mem.conn, "USER.md")["content"] == "draft 4\n"


def test_an_editor_save_by_rename_counts(mem) -> None:
    soul = mem.config.vault_path / "SOUL.md"
    with running_watcher(mem) as seen:
        tmp = soul.with_name("SOUL.md.tmp~")
        tmp.write_text("persona: calm\n", encoding="utf-8")
        os.replace(tmp, soul)
        seen.wait_path("SOUL.md", "imported")
    assert read_core_file(mem.conn, "SOUL.md")["content"] == "persona: calm\n"


def test_the_projections_own_writes_are_not_reimported(mem) -> None:
    mem.write_core_file("AGENTS.md", "# Agents\n\nv2 from the agent\n")
    put_object(mem, "person:qhy", body="new body")
    with running_watcher(mem) as seen:
        result = project(mem)
        assert set(result.written) == {"AGENTS.md", object_path("person:qhy")}
        for path in result.written:
            seen.wait_path(path)
    mine = [o for o in seen.outcomes if o.path in result.written]
    assert {o.action for o in mine} <= {"own_write", "unchanged"}
    assert origins(mem, "AGENTS.md") == ["api", "api"]
    status = vault_status(mem.conn)
    assert status["hand_edits"] == [] and status["conflicts"] == []


def test_an_invalid_core_file_is_refused_and_left_alone(mem) -> None:
    agents = mem.config.vault_path / "AGENTS.md"
    with running_watcher(mem) as seen:
        agents.write_bytes(b"# Agents\n\xff\xfe broken\n")
        refused = seen.wait_path("AGENTS.md", "refused")
        assert "not valid UTF-8" in refused.message
        assert "memory keeps version 1" in refused.message
        assert agents.read_bytes() == b"# Agents\n\xff\xfe broken\n"
        assert read_core_file(mem.conn, "AGENTS.md")["content"] == "# Agents\n\nv1\n"
        report = vault_status(mem.conn)["hand_edits"]
        assert [(r["path"], r["kind"]) for r in report] == [("AGENTS.md", "core_refused")]

        agents.write_text("# Agents\n\nfixed\n", encoding="utf-8")
        seen.wait_path("AGENTS.md", "imported")
    assert vault_status(mem.conn)["hand_edits"] == []
    assert read_core_file(mem.conn, "AGENTS.md")["content"] == "# Agents\n\nfixed\n"


def test_a_core_file_over_the_size_limit_is_refused(mem) -> None:
    user = mem.config.vault_path / "USER.md"
    big = ("a" * 1_999 + "\n").encode()
    with running_watcher(mem, core_max_bytes=1_024) as seen:
        user.write_bytes(big)
        refused = seen.wait_path("USER.md", "refused")
    assert "over the limit vault.core_file_max_bytes = 1,024" in refused.message
    assert user.read_bytes() == big
    assert read_core_file(mem.conn, "USER.md") is None
    assert project(mem, core_max_bytes=1_024).written == []  # the projector leaves it too


def test_an_object_file_edit_is_reported_then_restored_with_a_conflict_copy(mem) -> None:
    rel = object_path("person:qhy")
    path = mem.config.vault_path / rel
    original = path.read_text(encoding="utf-8")
    typed = original.replace("the user", "the user, who likes tea")
    with running_watcher(mem) as seen:
        path.write_text(typed, encoding="utf-8")
        outcome = seen.wait_path(rel, "hand_edit")
    assert outcome.object_id == "person:qhy"
    assert get_object(mem.conn, "person:qhy").summary == "the user"  # not imported
    [report] = vault_status(mem.conn)["hand_edits"]
    assert (report["path"], report["object_id"], report["kind"]) == (
        rel, "person:qhy", "hand_edit")

    result = project(mem, all=False)
    assert rel in result.written
    assert path.read_text(encoding="utf-8") == original
    conflict = path.with_name(path.stem + ".conflict-1.md")
    assert conflict.read_text(encoding="utf-8") == typed
    status = vault_status(mem.conn)
    assert status["hand_edits"] == []
    assert status["conflicts"][0]["conflict_path"] == rel.replace(".md", ".conflict-1.md")


def test_a_deleted_object_file_is_reported_and_written_back(mem) -> None:
    rel = object_path("person:qhy")
    path = mem.config.vault_path / rel
    original = path.read_bytes()
    with running_watcher(mem) as seen:
        path.unlink()
        outcome = seen.wait_path(rel, "deleted")
    assert outcome.object_id == "person:qhy"
    project(mem, all=False)
    assert path.read_bytes() == original
    assert vault_status(mem.conn)["hand_edits"] == []


def test_edits_made_while_no_watcher_ran_are_imported_at_start(mem) -> None:
    (mem.config.vault_path / "USER.md").write_text("written offline\n", encoding="utf-8")
    with running_watcher(mem) as seen:
        seen.wait_path("USER.md", "imported")
        assert get_state(mem.conn, "vault.watcher_heartbeat") is not None
    assert vault_status(mem.conn)["watcher_heartbeat_age_s"] is not None


def test_a_replaced_vault_folder_stops_the_watcher_loudly(mem) -> None:
    ready, stop, failures = threading.Event(), threading.Event(), []
    watcher = VaultWatcher.for_config(mem.config, heartbeat_s=0.05, on_ready=ready.set)

    def target() -> None:
        try:
            watcher.run(stop)
        except VaultGone as exc:
            failures.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    assert ready.wait(15)
    vault = mem.config.vault_path
    vault.rename(vault.with_name("vault-old"))
    vault.mkdir()
    thread.join(15)
    stop.set()
    assert not thread.is_alive()
    assert failures and "removed or replaced" in str(failures[0])
