"""Every read shows a plan's state the same way, and the body never contradicts it.

A one-off schedule still scheduled (or moved) whose day is before today reads `past` in `list`,
`object`, memory_read, memory_find, memory_context, its vault file and the vault's index
(objects/README.md); the vault file is rendered again once the day passes, with nothing else
changed. A state set by hand (`memvault edit --state`, a vault page's front matter) rewrites
the body's state line, in Chinese under a Chinese label, keeping that a schedule repeats.

Rule guards (each mutation made in engine/objects/states.py, the existing tests run and seen to
pass, these seen to fail, the code restored):
- `day < today` changed to `day <= today` in `shown_state`
  -> test_a_one_off_reads_as_scheduled_on_its_own_day_and_past_the_day_after (now that the
  vault renders `past`, test_vault_sample.py catches it too: the demo has a plan on its day);
- `state in ("scheduled", "moved")` changed to `state in ("scheduled",)`
  -> test_a_moved_plan_reads_past_once_its_new_day_has_gone;
- in `state_from_text`, the todo mapping `{"cancelled": "dropped", …}` left out
  -> test_a_todo_said_cancelled_reads_dropped;
- in `one_off_day`, the state line's `_RECURRING` check left out
  -> test_a_schedule_whose_state_line_says_it_repeats_never_reads_past.
And in vault/projector.py, `[*first, *owners]` changed to `[*owners, *first]`, and separately
`first` left out -> test_a_corrections_objects_are_rendered_first_whatever_the_limit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import frontmatter
from click.testing import CliRunner
from helpers import T0, run_cli
from memvault import ManualClock, Memory
from memvault.objects.corrections import Correction, ProfileEdit
from memvault.objects.records import get_object
from memvault.objects.states import state_from_text
from memvault.objects.versions import object_history
from memvault.vault.paths import DIRECTORY_PATH, object_path
from memvault.vault.projector import project_vault
from modes_support import put_object
from vault_support import project

GONE = "2020-03-01"  # a day gone whatever today is (the command line reads the real clock)


def plan(mem: Memory, slug: str, day: str, state: str = "scheduled",
         line: str = "scheduled (one-off)") -> str:
    object_id = f"schedule:{slug}"
    put_object(mem, object_id, f"{slug} {day}", body=f"- time rule: {day}\n- item: {slug}\n"
               f"- state: {line}", summary=f"{slug} — {day}", state=state)
    return object_id


def vault_state(mem: Memory, object_id: str) -> tuple[str, str]:
    """The state a vault file's front matter says, and the one its index line marks ("" for a
    plan still ahead, which the index marks with none)."""
    vault = mem.config.vault_path
    page = frontmatter.loads((vault / object_path(object_id)).read_text("utf-8"))
    index = (vault / DIRECTORY_PATH).read_text("utf-8").splitlines()
    line = next(x for x in index if f"`{object_id}`" in x)
    mark = re.search(r"#memvault/space/\S+ — (cancelled|done|dropped|past) — ", line)
    return str(page["state"]), mark.group(1) if mark else ""


def shown(mem: Memory, object_id: str) -> dict[str, str]:
    """The state each read but the vault shows for the object."""
    listed = {o["id"]: o["state"] for o in mem.list_objects("schedule")}
    hits = {h["id"]: h.get("state") for h in mem.find("dentist")["hits"] if "id" in h}
    entries = {e["id"]: e.get("state") for e in mem.resident_context()["directory"]["entries"]}
    return {"list": listed[object_id], "read": mem.read(object_id)["object"]["state"],
            "read_object": mem.read_object(object_id)["object"]["state"],
            "find": str(hits[object_id]), "context": str(entries[object_id])}


def test_every_read_shows_a_one_off_whose_day_has_gone_as_past(home: Path) -> None:
    clock = ManualClock(T0)  # 2026-10-13
    with Memory.open(home, clock=clock) as mem:
        dentist = plan(mem, "dentist", "2026-10-20")
        project(mem)
        assert set(shown(mem, dentist).values()) == {"scheduled"}
        assert vault_state(mem, dentist) == ("scheduled", "")
        clock.advance(days=8)  # 2026-10-21: its day has gone
        assert set(shown(mem, dentist).values()) == {"past"}
        project(mem, all=False)  # the next run of the day, whatever else changed: nothing
        assert vault_state(mem, dentist) == ("past", "past")
        text = (mem.config.vault_path / object_path(dentist)).read_text("utf-8")
        assert "> [!note] Past" in text and " · past · version 1 · " in text
        assert get_object(mem.conn, dentist).state == "scheduled"  # never stored


def test_the_vault_renders_again_only_the_plans_whose_day_went_once_a_day(home: Path) -> None:
    clock = ManualClock(T0)
    with Memory.open(home, clock=clock) as mem:
        gone = plan(mem, "dentist", "2026-10-14")
        ahead = plan(mem, "checkup", "2026-12-01")
        put_object(mem, "person:ana", "Ana")
        project(mem)
        clock.advance(days=2)  # 2026-10-15
        first = project(mem, all=False)
        assert sorted(first.written) == sorted([object_path(gone), DIRECTORY_PATH])
        assert vault_state(mem, ahead)[0] == "scheduled"
        assert project(mem, all=False).written == []  # the same day again: nothing to do
        clock.set(T0)  # a clock set back: the plan reads scheduled again, and so does its file
        project(mem, all=False)
        assert vault_state(mem, gone)[0] == "scheduled"


def test_memvault_object_shows_past_as_list_does(runner: CliRunner, home: Path) -> None:
    with Memory.open(home) as mem:
        plan(mem, "dentist", GONE)
    data = json.loads(run_cli(runner, "object", "schedule:dentist", "--json").stdout)
    assert data["object"]["state"] == "past"
    listed = json.loads(run_cli(runner, "list", "schedule", "--json").stdout)
    assert [row["state"] for row in listed] == ["past"]
    human = run_cli(runner, "object", "schedule:dentist").output
    assert "(active, past, v1)" in human and f"summary: [past] dentist — {GONE}" in human


def test_a_one_off_reads_as_scheduled_on_its_own_day_and_past_the_day_after(
        home: Path) -> None:
    clock = ManualClock(T0)  # 2026-10-13
    with Memory.open(home, clock=clock) as mem:
        today = plan(mem, "dentist", "2026-10-13")
        assert set(shown(mem, today).values()) == {"scheduled"}
        clock.advance(days=1)
        assert set(shown(mem, today).values()) == {"past"}


def test_a_moved_plan_reads_past_once_its_new_day_has_gone(home: Path) -> None:
    clock = ManualClock(T0)
    with Memory.open(home, clock=clock) as mem:
        moved = plan(mem, "dentist", "2026-10-20", state="moved",
                     line="moved (was 2026-10-15)")
        clock.advance(days=5)  # 2026-10-18: the old day has gone, the new one not
        assert set(shown(mem, moved).values()) == {"moved"}
        clock.advance(days=3)  # 2026-10-21
        assert set(shown(mem, moved).values()) == {"past"}


def test_a_schedule_whose_state_line_says_it_repeats_never_reads_past(home: Path) -> None:
    clock = ManualClock(T0)
    with Memory.open(home, clock=clock) as mem:
        weekly = plan(mem, "dentist", "2026-10-05 10:00", line="recurring (weekly)")
        assert set(shown(mem, weekly).values()) == {"scheduled"}
        # a state set by hand keeps the line saying it repeats: still never past
        mem.correct(Correction("edit", [weekly], ProfileEdit(state="moved")))
        assert get_object(mem.conn, weekly).body.splitlines()[-1] == "- state: moved (recurring)"
        assert set(shown(mem, weekly).values()) == {"moved"}


def test_a_todo_said_cancelled_reads_dropped(mem: Memory) -> None:
    assert state_from_text("todo", "cancelled on 2026-10-20") == "dropped"
    mem.correct(Correction("create", ["todo", "buy a lamp"],
                           ProfileEdit(body="- item: buy a lamp\n- state: cancelled")))
    assert get_object(mem.conn, "todo:buy-a-lamp").state == "dropped"
    assert mem.list_objects("todo", current=True) == []


def test_edit_state_rewrites_a_chinese_state_line_in_chinese(mem: Memory) -> None:
    put_object(mem, "schedule:体检", "体检", body="- 时间规则：2099-05-09\n- 事项：体检\n"
                                                 "- 状态：已安排（一次）", state="scheduled")
    mem.correct(Correction("edit", ["schedule:体检"], ProfileEdit(state="cancelled")))
    assert get_object(mem.conn, "schedule:体检").body.splitlines()[-1] == "- 状态：已取消"
    mem.correct(Correction("edit", ["schedule:体检"], ProfileEdit(state="done")))
    assert get_object(mem.conn, "schedule:体检").body.splitlines()[-1] == "- 状态：已完成"


def test_accept_edit_of_a_page_that_reads_past_takes_the_edit_and_sets_no_state(
        runner: CliRunner, home: Path) -> None:
    with Memory.open(home) as mem:
        dentist = plan(mem, "dentist", GONE)
    run_cli(runner, "project-vault")
    path = home / "vault" / object_path(dentist)
    text = path.read_text("utf-8")
    assert "state: past\n" in text
    path.write_text(text.replace("- item: dentist", "- item: dentist, Dr Lee"), "utf-8")
    run_cli(runner, "accept-edit", str(path))
    with Memory.open(home) as mem:
        obj = get_object(mem.conn, dentist)
        assert "- item: dentist, Dr Lee" in obj.body and obj.state == "scheduled"
    unchanged = run_cli(runner, "edit", dentist, "--state", "past").output
    assert "unchanged: memory already says that" in unchanged  # it reads past: nothing to set


def test_a_corrections_objects_are_rendered_first_whatever_the_limit(mem: Memory) -> None:
    for i in range(4):
        put_object(mem, f"task:t{i}", f"Task {i}")
    project(mem)
    for i in range(4):  # four dirty objects, older than the corrected one
        put_object(mem, f"task:t{i}", f"Task {i}", summary="changed")
    mem.clock.advance(minutes=1)
    put_object(mem, "person:ana", "Ana")
    result = project_vault(mem.conn, mem.config.vault_path, limit=1, first=["person:ana"],
                           now=mem.clock.now())
    assert result.written[0] == object_path("person:ana")


def test_a_space_move_keeps_the_state_in_the_version_it_records(mem: Memory) -> None:
    dentist = plan(mem, "dentist", "2099-01-01", state="cancelled", line="cancelled")
    mem.move_space(dentist, "home")
    history = object_history(mem.conn, dentist)
    assert [v["state"] for v in history] == ["cancelled", "cancelled"]
    assert "state" not in history[-1]["changed"]
