"""A schedule's or todo's state is a field of its own, and every surface shows it: the
migration derives it from old bodies, the builtin model sets it, a person edits it, `list
--current`, the vault, memory_context and memory_find show it (a cancelled or past plan below a
current one), and `past` is worked out from the clock, never stored."""

from __future__ import annotations

import json
import sqlite3
import typing
from datetime import date
from pathlib import Path

import frontmatter
import pytest
from click.testing import CliRunner
from helpers import T0, run_cli
from memvault import ManualClock, Memory
from memvault.base.errors import InputError
from memvault.home import migrations
from memvault.home.migrations import apply_migrations, open_home_db
from memvault.models.builtin import BuiltinProvider
from memvault.objects import proposals, schema
from memvault.objects.corrections import Correction, ProfileEdit
from memvault.objects.records import get_object
from memvault.objects.states import ALL_STATES, shown_state, state_from_body
from memvault.objects.versions import object_history
from memvault.recall.query import memory_find
from memvault.store.connection import write
from memvault.timeline.events import NewEvent
from memvault.vault.paths import DIRECTORY_PATH, object_path
from modes_support import compact_then_organize, put_object
from vault_support import project

FUTURE, GONE = "2099-03-01", "2020-03-01"  # a day ahead and one gone, whatever today is


def schedule(mem: Memory, slug: str, day: str, state: str | None = None,
             item: str = "Dentist appointment") -> None:
    body = f"- time rule: {day}\n- item: {item}\n- state: {state or 'scheduled (one-off)'}"
    put_object(mem, f"schedule:{slug}", f"{item} {day}", body=body,
               summary=f"{item} — {day}", state=state)


def listed(runner: CliRunner, *args: str) -> list[dict]:
    return json.loads(run_cli(runner, "list", *args, "--json").stdout)


# -- the field and its migration ---------------------------------------------------------------


def test_the_state_lists_are_the_ones_the_schema_and_the_proposal_schema_allow() -> None:
    assert set(schema.M018_STATES) == set(ALL_STATES)
    assert set(typing.get_args(proposals.State)) == set(ALL_STATES)


def test_the_migration_gives_old_schedules_and_todos_the_state_their_body_says(
        tmp_path: Path) -> None:
    db_path = tmp_path / "old.db"
    conn = sqlite3.connect(db_path, isolation_level=None)
    names = [m.__name__ for m in migrations.MIGRATIONS]
    for migration in migrations.MIGRATIONS[:names.index("m018_object_state")]:
        with write(conn):
            migration(conn)
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY,"
                         " applied_at TEXT NOT NULL)")
            conn.execute("INSERT INTO _migrations VALUES (?, 'then')", (migration.__name__,))
    bodies = {
        "schedule:dentist": "- time rule: 2027-01-14\n- item: dentist\n- state: cancelled\n"
                            "- history: cancelled on 2026-12-04 (was scheduled (one-off))",
        "schedule:offsite": "- time rule: 2027-02-17\n- state: moved (was 2027-02-10)",
        "schedule:评审会": "- 时间规则：2027-01-21\n- 状态：改期（原定 2027-01-14）",
        "schedule:standup": "- time rule: every Monday 10:00\n- state: recurring",
        "todo:printer": "- item: order the printer\n- state: done",
        "todo:会议室": "- 事项：订会议室\n- 状态：未完成",
        "todo:lamp": "- item: buy a lamp\n- state: dropped",
        "todo:plain": "Buy milk.",
        "person:ana": "- state: cancelled",  # no type but schedule and todo has a state
    }
    with write(conn):
        for object_id, body in bodies.items():
            kind = object_id.partition(":")[0]
            conn.execute("INSERT INTO objects (id, type, name, body, created_at, updated_at)"
                         " VALUES (?, ?, ?, ?, 't', 't')", (object_id, kind, object_id, body))
            conn.execute("INSERT INTO object_versions (object_id, version, name, aliases,"
                         " summary, body, cues, status, changed_at) VALUES (?, 1, ?, '[]', '',"
                         " ?, '[]', 'active', 't')", (object_id, object_id, body))
    conn.close()
    upgraded = open_home_db(db_path)
    try:
        assert apply_migrations(upgraded) == []
        stored = dict(upgraded.execute("SELECT id, state FROM objects").fetchall())
        assert stored == {
            "schedule:dentist": "cancelled", "schedule:offsite": "moved",
            "schedule:评审会": "moved", "schedule:standup": "scheduled",
            "todo:printer": "done", "todo:会议室": "open", "todo:lamp": "dropped",
            "todo:plain": "open", "person:ana": None}
        versions = dict(upgraded.execute("SELECT object_id, state FROM object_versions"))
        assert versions == stored
        with pytest.raises(sqlite3.IntegrityError):  # a word that is no state at all
            upgraded.execute("UPDATE objects SET state = 'maybe' WHERE id = 'todo:plain'")
    finally:
        upgraded.close()


# -- the builtin model sets it -----------------------------------------------------------------


def test_the_builtin_model_sets_cancelled_moved_done_and_dropped(mem: Memory) -> None:
    turns = ["The dentist appointment is on 2027-01-14.", "I need to renew the gym membership.",
             "Team offsite is scheduled for 2027-02-10.", "I need to buy a new lamp.",
             "The dentist appointment is cancelled.",
             "The team offsite is postponed to 2027-02-17.",
             "Done: I renewed the gym membership.", "Buying the new lamp is called off."]
    mem.append_events([NewEvent(text, f"2026-12-04T09:{i:02d}:00Z", "user", "message", None)
                       for i, text in enumerate(turns)])
    compact_then_organize(mem, BuiltinProvider())
    states = dict(mem.conn.execute(
        "SELECT id, state FROM objects WHERE type IN ('schedule', 'todo')").fetchall())
    assert states == {"schedule:dentist-appointment": "cancelled",
                      "schedule:team-offsite": "moved",
                      "todo:renew-the-gym-membership": "done", "todo:buy-a-new-lamp": "dropped"}
    history = object_history(mem.conn, "schedule:dentist-appointment")
    assert [v["state"] for v in history] == ["scheduled", "cancelled"]
    assert "state" in history[-1]["changed"]


def test_the_builtin_model_sets_the_chinese_cancellation_too(mem: Memory) -> None:
    turns = ["林晓梅下周三来上海。", "林晓梅来上海的行程取消了。"]
    mem.append_events([NewEvent(text, f"2026-12-04T09:{i:02d}:00Z", "user", "message", None)
                       for i, text in enumerate(turns)])
    compact_then_organize(mem, BuiltinProvider())
    assert get_object(mem.conn, "schedule:林晓梅来上海").state == "cancelled"


# -- a person sets it --------------------------------------------------------------------------


def test_edit_state_sets_it_as_a_version_made_by_a_person_and_the_body_says_it_too(
        runner: CliRunner, home: Path) -> None:
    with Memory.open(home) as mem:
        schedule(mem, "dentist", FUTURE)
    out = run_cli(runner, "edit", "schedule:dentist", "--state", "cancelled").output
    assert "corrected by you" in out
    with Memory.open(home) as mem:
        obj = get_object(mem.conn, "schedule:dentist")
        assert obj.state == "cancelled"
        # the page does not contradict itself: its state line follows the state
        assert obj.body.splitlines()[-1] == "- state: cancelled"
        last = object_history(mem.conn, "schedule:dentist")[-1]
        assert (last["origin"], last["state"], last["changed"]) == (
            "person", "cancelled", ["body", "state"])


@pytest.mark.parametrize(("ref", "state", "says"), [
    ("schedule:dentist", "open", "'open' is not a schedule state (one of scheduled, moved, "
                                 "cancelled, done)"),
    ("todo:lamp", "cancelled", "'cancelled' is not a todo state (one of open, done, dropped)"),
    ("person:ana", "done", "a person has no state"),
    ("schedule:dentist", "past", "past is worked out"),
])
def test_edit_refuses_a_state_its_type_does_not_have(
        runner: CliRunner, home: Path, ref: str, state: str, says: str) -> None:
    with Memory.open(home) as mem:
        schedule(mem, "dentist", FUTURE)
        put_object(mem, "todo:lamp", "buy a lamp", body="- state: open")
        put_object(mem, "person:ana", "Ana")
        before = mem.conn.execute("SELECT id, version, state FROM objects").fetchall()
    result = run_cli(runner, "edit", ref, "--state", state, code=1)
    assert says in result.output and "nothing changed" in result.output
    assert "Traceback" not in result.output
    with Memory.open(home) as mem:
        assert mem.conn.execute("SELECT id, version, state FROM objects").fetchall() == before


def test_a_write_without_a_state_keeps_the_stored_one_unless_the_body_says_another(
        mem: Memory) -> None:
    schedule(mem, "dentist", FUTURE)
    mem.correct(Correction("edit", ["schedule:dentist"], ProfileEdit(state="done")))
    mem.correct(Correction("edit", ["schedule:dentist"], ProfileEdit(summary="Dentist")))
    assert get_object(mem.conn, "schedule:dentist").state == "done"  # a summary edit keeps it
    body = get_object(mem.conn, "schedule:dentist").body.replace(
        "- state: done", "- state: cancelled")
    mem.correct(Correction("edit", ["schedule:dentist"], ProfileEdit(body=body)))
    assert get_object(mem.conn, "schedule:dentist").state == "cancelled"  # its body said so
    with pytest.raises(InputError, match="a knowledge has no state"):
        put_object(mem, "knowledge:x", "x", state="done")


# -- past: worked out when read, from the clock ------------------------------------------------


def test_past_is_derived_from_the_day_and_the_injected_clock(home: Path) -> None:
    clock = ManualClock(T0)  # 2026-10-13
    with Memory.open(home, clock=clock) as mem:
        schedule(mem, "dentist", "2026-10-20")
        schedule(mem, "standup", "every Monday", item="Standup")
        assert [r["state"] for r in mem.list_objects("schedule")] == ["scheduled", "scheduled"]
        clock.advance(days=8)  # 2026-10-21: the dentist's day has gone
        shown = {r["id"]: r["state"] for r in mem.list_objects("schedule")}
        assert shown == {"schedule:dentist": "past", "schedule:standup": "scheduled"}
        assert [r["id"] for r in mem.list_objects("schedule", current=True)] == [
            "schedule:standup"]
        # never stored: the row still says scheduled
        assert get_object(mem.conn, "schedule:dentist").state == "scheduled"
    body = "- time rule: 2026-10-20\n- state: cancelled"
    assert shown_state("schedule", None, body, "", date(2026, 10, 21)) == "cancelled"
    assert shown_state("schedule", "done", body, "", date(2026, 10, 21)) == "done"
    assert shown_state("todo", "open", body, "", date(2030, 1, 1)) == "open"
    assert shown_state("schedule", "scheduled", body, "", None) == "scheduled"
    assert state_from_body("person", body) is None


def test_list_current_shows_only_what_is_still_ahead_or_open(
        runner: CliRunner, home: Path) -> None:
    with Memory.open(home) as mem:
        schedule(mem, "ahead", FUTURE)
        schedule(mem, "gone", GONE)
        schedule(mem, "off", FUTURE, state="cancelled")
        put_object(mem, "todo:open", "open one", body="- state: open")
        put_object(mem, "todo:done", "done one", body="- state: done", state="done")
    rows = {r["id"]: r["state"] for r in listed(runner, "schedule")}
    assert rows == {"schedule:ahead": "scheduled", "schedule:gone": "past",
                    "schedule:off": "cancelled"}
    current = listed(runner, "schedule", "--current")
    assert [r["id"] for r in current] == ["schedule:ahead"]
    todos = listed(runner, "todo", "--current")
    assert [r["id"] for r in todos] == ["todo:open"]
    human = run_cli(runner, "list", "schedule").output
    assert "active, cancelled" in human and f"[cancelled] Dentist appointment — {FUTURE}" in human


# -- the vault, memory_context, memory_find ----------------------------------------------------


def test_the_vault_shows_the_state_in_front_matter_and_the_index(mem: Memory) -> None:
    schedule(mem, "off", FUTURE, state="cancelled")
    schedule(mem, "ahead", "2099-04-01")
    put_object(mem, "person:ana", "Ana")
    project(mem)
    vault = mem.config.vault_path
    page = frontmatter.loads((vault / object_path("schedule:off")).read_text("utf-8"))
    assert page["status"] == "active" and page["state"] == "cancelled"
    assert "[!note] Cancelled" in page.content
    assert frontmatter.loads(
        (vault / object_path("schedule:ahead")).read_text("utf-8"))["state"] == "scheduled"
    assert "state" not in frontmatter.loads(
        (vault / object_path("person:ana")).read_text("utf-8")).metadata
    index = (vault / DIRECTORY_PATH).read_text("utf-8").splitlines()
    off = next(line for line in index if "`schedule:off`" in line)
    assert off.endswith(f"`schedule:off` · #memvault/space/shared — cancelled — "
                        f"Dentist appointment — {FUTURE}")
    ahead = next(line for line in index if "`schedule:ahead`" in line)
    assert "cancelled" not in ahead and "scheduled" not in ahead


def test_accept_edit_takes_a_state_changed_in_the_front_matter(
        runner: CliRunner, home: Path) -> None:
    with Memory.open(home) as mem:
        schedule(mem, "off", FUTURE)
        project(mem)
    path = home / "vault" / object_path("schedule:off")
    text = path.read_text("utf-8")
    path.write_text(text.replace("state: scheduled\n", "state: cancelled\n", 1), "utf-8")
    run_cli(runner, "accept-edit", str(path))
    with Memory.open(home) as mem:
        assert get_object(mem.conn, "schedule:off").state == "cancelled"
    text = path.read_text("utf-8")
    assert "state: cancelled\n" in text  # rendered again from memory
    path.write_text(text.replace("state: cancelled\n", "state: open\n", 1), "utf-8")
    refused = run_cli(runner, "accept-edit", str(path), code=1).output
    assert "'open' is not a schedule state" in refused and "nothing changed" in refused


def test_memory_context_says_each_plans_state_and_marks_one_no_longer_ahead(
        home: Path) -> None:
    clock = ManualClock(T0)
    with Memory.open(home, clock=clock) as mem:
        schedule(mem, "off", "2026-11-01", state="cancelled")
        schedule(mem, "ahead", "2026-11-02")
        schedule(mem, "gone", "2026-10-01")
        put_object(mem, "person:ana", "Ana")
        entries = {e["id"]: e for e in mem.resident_context()["directory"]["entries"]}
    assert entries["schedule:off"]["state"] == "cancelled"
    assert entries["schedule:off"]["summary"] == "[cancelled] Dentist appointment — 2026-11-01"
    assert entries["schedule:gone"]["state"] == "past"
    assert entries["schedule:gone"]["summary"].startswith("[past] ")
    assert entries["schedule:ahead"]["state"] == "scheduled"
    assert entries["schedule:ahead"]["summary"] == "Dentist appointment — 2026-11-02"
    assert "state" not in entries["person:ana"]


def test_find_labels_a_cancelled_or_past_plan_and_ranks_it_below_a_current_one(
        home: Path) -> None:
    clock = ManualClock(T0)
    with Memory.open(home, clock=clock) as mem:
        # Alike but for the day; ids in this order, so a tie would put the cancelled one first.
        schedule(mem, "a-dentist", "2026-11-01", state="cancelled")
        schedule(mem, "b-dentist", "2026-11-08")
        hits = mem.find("dentist appointment", types=["schedule"])["hits"]
        assert [(h["id"], h["state"]) for h in hits] == [
            ("schedule:b-dentist", "scheduled"), ("schedule:a-dentist", "cancelled")]
        assert hits[1]["snippet"].startswith("[cancelled] ")
        assert hits[1]["score"] < hits[0]["score"]
        clock.advance(days=30)  # 2026-11-12: the current one's day has gone too
        hits = mem.find("dentist appointment", types=["schedule"])["hits"]
        assert {h["id"]: h["state"] for h in hits} == {
            "schedule:a-dentist": "cancelled", "schedule:b-dentist": "past"}
    with Memory.open(home) as mem:  # no clock given to recall: nothing is past
        no_day = memory_find(mem.conn, "dentist appointment", include_events=False)["hits"]
    assert {h["id"]: h["state"] for h in no_day}["schedule:b-dentist"] == "scheduled"


def test_find_on_the_command_line_names_the_state(runner: CliRunner, home: Path) -> None:
    with Memory.open(home) as mem:
        schedule(mem, "off", FUTURE, state="cancelled")
    out = run_cli(runner, "find", "dentist").output
    assert "(cancelled)" in out
