"""A person's corrections (edit, merge, archive): the graph-write rules a model's proposal meets,
one transaction with a receipt, object versions that say a person made them, and bad input
refused with nothing changed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import count
from memvault import ManualClock, Memory
from memvault.base.errors import InputError, NotFound
from memvault.base.spaces import EVERY_SPACE
from memvault.home import migrations
from memvault.home.migrations import apply_migrations, open_home_db
from memvault.objects.corrections import Correction, ProfileEdit, StaleCorrection
from memvault.objects.records import get_object, read_object
from memvault.objects.versions import changed_since, object_history, record_at
from memvault.store.connection import graph_revision, write
from modes_support import (
    add_archived,
    cite_page,
    commit_organize,
    counts,
    make_worker,
    obj,
    payload,
    put_object,
    queue_row,
)

SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"


def snapshot(mem: Memory) -> tuple:
    """What a refused correction must leave as it was."""
    return (counts(mem.conn), graph_revision(mem.conn), count(mem.conn, "corrections"),
            [tuple(r) for r in mem.conn.execute("SELECT * FROM objects ORDER BY id")])


@pytest.fixture
def people(mem: Memory) -> Memory:
    put_object(mem, "person:tom", "Tom Becker", summary="DevOps lead", aliases=["Tom"])
    put_object(mem, "person:tb", "T. Becker", aliases=["TB"])
    return mem


def edit(mem: Memory, ref: str, **fields) -> dict:
    return mem.correct(Correction("edit", [ref], ProfileEdit(**fields)))


# -- what a correction writes ----------------------------------------------------------------


def test_an_edit_writes_a_version_made_by_a_person_and_advances_the_revision(
    people: Memory,
) -> None:
    before = graph_revision(people.conn)
    receipt = edit(people, "Tom", summary="DevOps lead, on call Mondays",
                   add_aliases=("Tommy",))
    assert receipt["changed"] and receipt["origin"] == "person"
    assert receipt["revision"] == graph_revision(people.conn) == before + 1
    assert receipt["versions"] == {"person:tom": 2}
    tom = get_object(people.conn, "person:tom")
    assert tom.summary == "DevOps lead, on call Mondays" and tom.aliases == ["Tom", "Tommy"]
    assert tom.name == "Tom Becker"  # fields not given are kept
    history = object_history(people.conn, "person:tom")
    assert [(v["version"], v["origin"]) for v in history] == [(1, "model"), (2, "person")]
    assert history[1]["changed"] == ["aliases", "summary"]
    assert count(people.conn, "corrections") == 1


def test_the_same_token_returns_the_first_receipt_and_changes_nothing(people: Memory) -> None:
    first = people.correct(Correction("edit", ["person:tom"], ProfileEdit(body="v1"),
                                      token="fix-1"))
    state = snapshot(people)
    again = people.correct(Correction("edit", ["person:tom"], ProfileEdit(body="other"),
                                      token="fix-1"))
    assert again == {**first, "replayed": True}
    assert snapshot(people) == state
    assert get_object(people.conn, "person:tom").body == "v1"


def test_an_edit_that_changes_nothing_writes_no_version_and_keeps_the_revision(
    people: Memory,
) -> None:
    before = graph_revision(people.conn)
    receipt = edit(people, "person:tom", summary="DevOps lead")
    assert not receipt["changed"] and receipt["revision"] == before
    assert get_object(people.conn, "person:tom").version == 1


def test_a_merge_redirects_the_loser_and_gives_its_names_to_the_survivor(
    people: Memory,
) -> None:
    receipt = people.correct(Correction("merge", ["TB", "Tom Becker"]))
    assert receipt["merged"] == ["person:tb"] and receipt["objects"] == ["person:tb",
                                                                          "person:tom"]
    assert get_object(people.conn, "person:tb").redirect_to == "person:tom"
    assert get_object(people.conn, "person:tom").aliases == ["Tom", "T. Becker", "TB"]
    assert read_object(people.conn, "person:tb", 0, EVERY_SPACE)["redirected_from"] == "person:tb"
    assert people.conn.execute("SELECT 1 FROM relations WHERE src_id = 'person:tom' AND"
                               " label = 'supersedes' AND dst_id = 'person:tb'").fetchone()
    assert {v["origin"] for v in changed_since(people.conn, "person:tb", 1)} == {"person"}
    with pytest.raises(InputError, match="was merged into person:tom"):
        edit(people, "person:tb", summary="x")


def test_archive_keeps_the_object_readable_and_says_archived(people: Memory) -> None:
    people.correct(Correction("archive", ["Tom"]))
    tom = get_object(people.conn, "person:tom")
    assert (tom.status, tom.summary) == ("archived", "DevOps lead")
    with pytest.raises(InputError, match="already archived"):
        people.correct(Correction("archive", ["person:tom"]))


def test_a_person_cannot_activate_a_candidate_project_by_editing_it(mem: Memory) -> None:
    put_object(mem, "project:atlas", "Atlas", status="candidate")
    edit(mem, "project:atlas", summary="the Atlas migration")
    assert get_object(mem.conn, "project:atlas").status == "candidate"


# -- bad input: a clear error, nothing changed -----------------------------------------------


@pytest.mark.parametrize(("correction", "error", "message"), [
    (Correction("edit", ["nobody"], ProfileEdit(summary="x")), InputError,
     "no object has that name or alias"),
    (Correction("edit", ["person:nobody"], ProfileEdit(summary="x")), NotFound,
     "no object person:nobody"),
    (Correction("edit", ["person:tom"], ProfileEdit(summary=f"key {SECRET}")), InputError,
     "summary: holds what looks like"),
    (Correction("edit", ["person:tom"], ProfileEdit(add_aliases=(SECRET,))), InputError,
     "aliases.1: holds what looks like"),
    (Correction("edit", ["person:tom"], ProfileEdit(summary="x" * 401)), InputError,
     "summary: String should have at most 400 characters"),
    (Correction("edit", ["person:tom"], ProfileEdit(body="a\x00b")), InputError,
     "body: Value error, holds a NUL character"),
    (Correction("edit", ["person:tom"], ProfileEdit(name="")), InputError, "name:"),
    (Correction("edit", ["person:tom"]), InputError, "nothing to change"),
    (Correction("edit", ["person:tom"], ProfileEdit(remove_aliases=("Thomas",))), InputError,
     "'Thomas' is not among the aliases ('Tom')"),
    (Correction("merge", ["person:tom", "Tom"]), InputError, "cannot be merged into itself"),
    (Correction("edit", ["person:tom"], ProfileEdit(summary="x"), token=""), InputError,
     "token must be text"),
])
def test_bad_corrections_are_refused_and_change_nothing(
    people: Memory, correction: Correction, error: type, message: str,
) -> None:
    state = snapshot(people)
    with pytest.raises(error) as info:
        people.correct(correction)
    assert message in str(info.value)
    assert SECRET not in str(info.value)
    assert snapshot(people) == state


def test_an_ambiguous_name_lists_the_ids_and_changes_nothing(people: Memory) -> None:
    put_object(people, "person:tom-2", "Tom Becker")
    state = snapshot(people)
    with pytest.raises(InputError, match="names 2 objects: person:tom .*person:tom-2"):
        edit(people, "Tom Becker", summary="x")
    assert snapshot(people) == state


def test_a_correction_on_a_stale_version_is_refused_naming_what_changed(
    people: Memory,
) -> None:
    edit(people, "person:tom", body="changed by someone else")
    state = snapshot(people)
    with pytest.raises(StaleCorrection, match=r"changed since version 1.*version 2 \(person"
                                              r".*\): body"):
        people.correct(Correction("accept_edit", ["person:tom"], ProfileEdit(summary="mine"),
                                  base_version=1))
    assert snapshot(people) == state
    assert record_at(people.conn, "person:tom", 1).body == ""


@pytest.mark.parametrize(("fields", "message"), [
    ({"name": "T. Becker"}, "name: 'T. Becker' already names person:tb (T. Becker)"),
    ({"name": "t.  becker"}, "name: 't.  becker' already names person:tb"),
    ({"name": "TB"}, "name: 'TB' already names person:tb (T. Becker)"),
    ({"add_aliases": ("tb",)}, "aliases: 'tb' already names person:tb"),
    ({"aliases": ("Tom", "T. Becker")}, "aliases: 'T. Becker' already names person:tb"),
])
def test_an_edit_giving_another_objects_name_or_alias_is_refused_and_changes_nothing(
    people: Memory, fields: dict, message: str,
) -> None:
    state = snapshot(people)
    with pytest.raises(InputError) as info:
        edit(people, "person:tom", **fields)
    assert message in str(info.value) and "nothing changed" in str(info.value)
    assert snapshot(people) == state
    # Names still point at one object each.
    assert people.correct(Correction("archive", ["T. Becker"]))["objects"] == ["person:tb"]


def test_an_object_made_by_hand_cannot_take_an_alias_another_object_answers_to(
    people: Memory,
) -> None:
    state = snapshot(people)
    with pytest.raises(InputError, match="aliases: 'tb' already names person:tb"):
        people.correct(Correction("create", ["person", "Theo Brandt"],
                                  ProfileEdit(add_aliases=("tb",))))
    assert snapshot(people) == state


def test_an_edit_may_keep_its_own_names_and_share_a_name_with_another_type(
    people: Memory,
) -> None:
    put_object(people, "knowledge:tbk", "Becker", summary="a beer")
    put_object(people, "person:tom-2", "Tom Becker")  # already shared before this edit
    receipt = edit(people, "person:tom", name="Tom", aliases=("Tom Becker", "Becker"))
    assert receipt["changed"]
    tom = get_object(people.conn, "person:tom")
    assert (tom.name, tom.aliases) == ("Tom", ["Tom Becker", "Becker"])


# -- a correction and the model's batches ----------------------------------------------------


def test_a_correction_makes_a_claimed_batch_commit_stale_and_the_retry_sees_it(
    mem: Memory, clock: ManualClock,
) -> None:
    put_object(mem, "person:dana", "Dana")
    (event_id,) = add_archived(mem, "Dana joined the Atlas effort.")
    mem.organize()

    def correct_meanwhile(messages, tools, max_out):
        edit(mem, "Dana", summary="corrected by a person while the batch ran")
        before.update(counts(mem.conn))
        return commit_organize(event_id, "linked",
                               objects=[obj("person:dana", "Dana", body="model's body")],
                               evidence=[{"object_id": "person:dana", "event_id": event_id,
                                          "start": 0, "end": 4}])

    retry = cite_page("person:dana", "Dana")
    shown: list[dict] = []

    def retry_sees_the_correction(messages, tools, max_out):
        shown.extend(payload(messages)["related"])
        return retry(messages, tools, max_out)

    before: dict = {}
    worker, _ = make_worker(mem, [correct_meanwhile, retry_sees_the_correction])
    first = worker.tick()
    assert first.action == "failed" and "stale graph revision" in first.error
    assert counts(mem.conn) == before
    assert get_object(mem.conn, "person:dana").summary.startswith("corrected by a person")
    clock.advance(seconds=11)
    assert worker.tick().action == "committed"
    assert queue_row(mem.conn, event_id)["state"] == "linked"
    [dana] = [o for o in shown if o["id"] == "person:dana"]
    assert "corrected by a person" in str(dana)
    assert [v["origin"] for v in object_history(mem.conn, "person:dana")] == ["model", "person"]


# -- the migration -----------------------------------------------------------------------------


def test_an_existing_home_upgrades_and_its_versions_say_model(tmp_path: Path) -> None:
    db_path = tmp_path / "old.db"
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    # A home migrated before m008 existed: the migrations before it, in their order.
    names = [m.__name__ for m in migrations.MIGRATIONS]
    before = migrations.MIGRATIONS[:names.index("m008_version_origin")]
    for migration in before:
        with write(conn):
            migration(conn)
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY,"
                         " applied_at TEXT NOT NULL)")
            conn.execute("INSERT INTO _migrations VALUES (?, 'then')", (migration.__name__,))
    with write(conn):
        conn.execute("INSERT INTO objects (id, type, name, created_at, updated_at) VALUES"
                     " ('person:old', 'person', 'Old', 't', 't')")
        conn.execute("INSERT INTO object_versions (object_id, version, name, aliases, summary,"
                     " body, cues, status, changed_at) VALUES ('person:old', 1, 'Old', '[]',"
                     " '', '', '[]', 'active', 't')")
    conn.close()
    upgraded = open_home_db(db_path)
    try:
        assert apply_migrations(upgraded) == []
        assert [v["origin"] for v in object_history(upgraded, "person:old")] == ["model"]
        assert count(upgraded, "corrections") == 0
    finally:
        upgraded.close()


# -- merges the audit of issue 35 found untested ----------------------------------------------


def test_a_merge_that_changes_no_field_still_reports_a_change_and_bumps_the_revision(
    people: Memory,
) -> None:
    # `changed = ... or bool(body["merged"])` reduced to the objects' count survived the tests.
    put_object(people, "person:tom", "Tom Becker", aliases=["Tom", "T. Becker", "TB"])
    before = graph_revision(people.conn)
    receipt = people.correct(Correction("merge", ["person:tb", "person:tom"]))
    assert receipt["objects_changed"] == 0  # the survivor already answers to every name
    assert receipt["changed"] and receipt["merged"] == ["person:tb"]
    assert receipt["revision"] == before + 1 == graph_revision(people.conn)


def test_a_merge_never_gives_the_survivor_its_own_name_or_an_alias_twice(mem: Memory) -> None:
    # Dropping `n != survivor.name` or `n not in survivor.aliases` from the merge's names
    # survived the tests: a duplicate takes a place under the 32-alias cap.
    held = [f"alias {i}" for i in range(30)] + ["Becker"]
    put_object(mem, "person:tom", "Tom Becker", aliases=held)
    put_object(mem, "person:tb", "Becker", aliases=["Tom Becker", "Tommy"])
    mem.correct(Correction("merge", ["person:tb", "person:tom"]))
    tom = get_object(mem.conn, "person:tom")
    assert tom.name == "Tom Becker" and "Tom Becker" not in tom.aliases
    assert tom.aliases == [*held, "Tommy"]  # 32: the new name is not crowded out
