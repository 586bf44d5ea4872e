"""Core files: every version kept, identical content adds none; and the resident context the agent
carries every turn (core files, a bounded object directory, the timeline view)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import T0, count, write_config
from memvault import ManualClock, Memory
from memvault.base.errors import InputError
from memvault.objects.corefiles import core_file_history, write_core_file
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write

AGENTS = "# AGENTS.md\n\n- 回答用中文。\n- Be brief.\n"


def test_writing_a_core_file_adds_versions(mem: Memory, clock: ManualClock) -> None:
    assert mem.read_core_file("AGENTS.md") is None
    assert mem.write_core_file("AGENTS.md", AGENTS) == 1
    clock.advance(minutes=1)
    assert mem.write_core_file("AGENTS.md", AGENTS + "- New rule.\n", origin="hand") == 2
    current = mem.read_core_file("AGENTS.md")
    assert current["version"] == 2 and current["content"] == AGENTS + "- New rule.\n"
    assert current["origin"] == "hand"
    assert current["created_at"] == "2026-10-13T12:01:00+08:00"
    history = core_file_history(mem.conn, "AGENTS.md")
    assert [(h["version"], h["origin"], h["chars"]) for h in history] == [
        (1, "api", len(AGENTS)), (2, "hand", len(AGENTS) + 12)
    ]
    assert history[0]["sha256"] != history[1]["sha256"]


def test_identical_content_adds_no_version(mem: Memory) -> None:
    assert mem.write_core_file("USER.md", "浩宇对花生过敏。") == 1
    assert mem.write_core_file("USER.md", "浩宇对花生过敏。") is None
    assert mem.write_core_file("USER.md", "浩宇对花生过敏。", origin="hand") is None
    assert count(mem.conn, "core_files") == 1
    assert mem.write_core_file("USER.md", "浩宇对花生过敏。\n") == 2
    assert mem.write_core_file("USER.md", "浩宇对花生过敏。") == 3  # going back is a change too
    assert [h["version"] for h in core_file_history(mem.conn, "USER.md")] == [1, 2, 3]


def test_an_empty_core_file_is_a_real_version(mem: Memory) -> None:
    assert mem.write_core_file("SOUL.md", "") == 1
    assert mem.read_core_file("SOUL.md")["content"] == ""
    assert mem.write_core_file("SOUL.md", "") is None


def test_files_are_versioned_independently(mem: Memory) -> None:
    mem.write_core_file("AGENTS.md", "a")
    mem.write_core_file("SOUL.md", "s")
    mem.write_core_file("AGENTS.md", "a2")
    assert mem.read_core_file("SOUL.md")["version"] == 1
    assert mem.read_core_file("AGENTS.md")["version"] == 2


@pytest.mark.parametrize("name", ["README.md", "agents.md", "../AGENTS.md", "AGENTS", ""])
def test_only_the_three_core_files_exist(mem: Memory, name: str) -> None:
    with pytest.raises(InputError, match="not a core file"):
        mem.write_core_file(name, "x")
    with pytest.raises(InputError, match="not a core file"):
        mem.read_core_file(name)
    with pytest.raises(InputError, match="not a core file"):
        core_file_history(mem.conn, name)


@pytest.mark.parametrize(
    ("content", "message"),
    [("bad \ud83d", "not valid Unicode"), (b"bytes", "must be text"), (None, "must be text")],
)
def test_bad_content_is_refused_and_nothing_changes(
    mem: Memory, content: object, message: str
) -> None:
    mem.write_core_file("AGENTS.md", AGENTS)
    with pytest.raises(InputError, match=message):
        with write(mem.conn):
            write_core_file(mem.conn, "AGENTS.md", content, "api", T0)  # type: ignore[arg-type]
    assert mem.read_core_file("AGENTS.md")["content"] == AGENTS
    assert count(mem.conn, "core_files") == 1


# -- resident context ----------------------------------------------------------------------------


def add_objects(mem: Memory, clock: ManualClock, n: int, **fields: object) -> list[str]:
    ids = []
    with write(mem.conn):
        for i in range(n):
            clock.advance(seconds=1)
            obj = ObjectRecord(id=f"knowledge:k{i:03d}", type="knowledge", name=f"知识 {i}",
                               summary=f"summary {i} " + "s" * 300, **fields)  # type: ignore[arg-type]
            save_object(mem.conn, obj, clock.now())
            ids.append(obj.id)
    return ids


def test_resident_context_holds_core_files_directory_and_timeline(
    mem: Memory, clock: ManualClock
) -> None:
    mem.write_core_file("AGENTS.md", AGENTS)
    ids = add_objects(mem, clock, 3)
    mem.append_event("今天的第一条消息")
    context = mem.resident_context()
    assert context["core_files"] == {"AGENTS.md": AGENTS, "SOUL.md": "", "USER.md": ""}
    directory = context["directory"]
    # Most recently updated first; project:daily (built in) was created when the memory opened.
    assert [e["id"] for e in directory["entries"]] == [*ids[::-1], "project:daily"]
    assert directory["total"] == 4 and directory["omitted"] == 0
    assert all(len(e["summary"]) <= 160 for e in directory["entries"])
    assert set(directory["entries"][0]) == {"id", "type", "name", "summary", "status"}
    timeline = context["timeline"]
    assert [n["text"] for n in timeline["nodes"]] == ["今天的第一条消息"]
    assert timeline["cut"] is None


def test_the_directory_is_bounded_by_entries_and_bytes_and_says_so(
    home: Path, clock: ManualClock
) -> None:
    write_config(home, "[context]\ndirectory_max_entries = 5\ndirectory_max_bytes = 1000\n"
                       "[timeline]\nview_max_bytes = 1000\n")
    with Memory.open(home, clock=clock) as mem:
        add_objects(mem, clock, 12)
        for i in range(20):
            mem.append_event(f"message {i} " + "m" * 100)
        context = mem.resident_context()
        directory = context["directory"]
        assert 0 < len(directory["entries"]) <= 5
        assert directory["bytes"] <= 1_000
        assert directory["total"] == 13  # the 12 objects plus the built-in project:daily
        assert directory["omitted"] == 13 - len(directory["entries"])
        assert context["timeline"]["max_bytes"] == 1_000
        assert context["timeline"]["cut"]["count"] > 0
        assert context["timeline"]["notice"]


def test_the_directory_leaves_out_archived_and_merged_objects(
    mem: Memory, clock: ManualClock
) -> None:
    add_objects(mem, clock, 2)
    with write(mem.conn):
        save_object(mem.conn, ObjectRecord(id="todo:old", type="todo", name="old",
                                           status="archived"), clock.now())
        save_object(mem.conn, ObjectRecord(id="knowledge:dup", type="knowledge", name="dup",
                                           redirect_to="knowledge:k000"), clock.now())
    directory = mem.resident_context()["directory"]
    assert {e["id"] for e in directory["entries"]} == {"knowledge:k000", "knowledge:k001",
                                                       "project:daily"}
    assert directory["total"] == 3


def test_the_directory_can_be_switched_off(home: Path, clock: ManualClock) -> None:
    write_config(home, "[context]\ndirectory_max_entries = 0\n")
    with Memory.open(home, clock=clock) as mem:
        add_objects(mem, clock, 2)
        directory = mem.resident_context()["directory"]
        assert directory["entries"] == [] and directory["omitted"] == 3  # 2 + project:daily


def test_the_api_refuses_a_core_file_over_the_size_limit(mem: Memory) -> None:
    limit = mem.config["vault.core_file_max_bytes"]
    with pytest.raises(InputError, match="vault.core_file_max_bytes"):
        mem.write_core_file("USER.md", "好" * (limit // 3 + 1))
    assert mem.read_core_file("USER.md") is None
    assert mem.write_core_file("USER.md", "好" * (limit // 3)) == 1
