"""Ids are shown whole and names stand for ids: `list` and `find` never cut an id, and
`object`, `read`, `evidence`, `project approve` take a unique name or alias (case-folded,
Chinese too), listing the candidates when a name fits several objects."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.base.errors import InputError
from memvault.base.spaces import EVERY_SPACE
from memvault.objects.ids import objects_named, resolve_object_ref
from modes_support import put_object

LONG_ID = "todo:write-the-migration-runbook-for-the-payments-database-before-the-freeze"


@pytest.fixture
def people(mem: Memory) -> Memory:
    put_object(mem, "person:chen-jing", "陈静", aliases=["Jing Chen", "小陈"])
    put_object(mem, "person:zhang-wei", "Zhang Wei", aliases=["老张"])
    put_object(mem, "person:zhang-wei-2", "Zhang Wei")  # a namesake
    put_object(mem, "project:apollo", "Apollo", status="candidate")
    put_object(mem, LONG_ID, "Write the migration runbook")
    return mem


@pytest.mark.parametrize("columns", ["80", "120"])
def test_list_and_find_never_cut_an_id(
    people: Memory, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, columns: str,
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert LONG_ID in run_cli(runner, "list", "todo").output
    assert LONG_ID in run_cli(runner, "find", "migration", "runbook").output


@pytest.mark.parametrize("name", ["陈静", "小陈", "jing chen", "JING  CHEN", "ｊｉｎｇ ｃｈｅｎ"])
def test_a_unique_name_or_alias_stands_for_its_id(
    people: Memory, runner: CliRunner, name: str,
) -> None:
    shown = run_cli(runner, "object", name, "--json").output
    assert json.loads(shown)["object"]["id"] == "person:chen-jing"
    assert json.loads(run_cli(runner, "read", name, "--json").output)["object"]["id"] == (
        "person:chen-jing")
    assert json.loads(run_cli(runner, "evidence", name, "--json").output)["id"] == (
        "person:chen-jing")


def test_an_ambiguous_name_lists_the_candidates(people: Memory, runner: CliRunner) -> None:
    out = run_cli(runner, "object", "zhang wei", code=1).output
    assert "names 2 objects" in out
    assert "person:zhang-wei (Zhang Wei)" in out and "person:zhang-wei-2 (Zhang Wei)" in out
    # An alias only one of them has is unique again.
    assert json.loads(run_cli(runner, "read", "老张", "--json").output)["object"]["id"] == (
        "person:zhang-wei")


def test_project_approve_takes_a_name(people: Memory, runner: CliRunner) -> None:
    run_cli(runner, "project", "approve", "apollo")
    data = json.loads(run_cli(runner, "object", "project:apollo", "--json").output)
    assert data["object"]["status"] == "active"


def test_an_unknown_name_keeps_the_id_error(people: Memory, runner: CliRunner) -> None:
    out = run_cli(runner, "object", "nobody here", code=1).output
    assert "not an object id: 'nobody here'" in out and "no object has that name" in out
    assert "not an object id: '../etc'" in run_cli(runner, "read", "../etc", code=1).output


def test_the_resolver_prefers_ids_and_skips_merged_objects(people: Memory) -> None:
    conn = people.conn
    assert resolve_object_ref(conn, "person:zhang-wei", EVERY_SPACE) == "person:zhang-wei"
    with pytest.raises(InputError, match="names 2 objects"):
        resolve_object_ref(conn, "Zhang Wei", EVERY_SPACE)
    conn.execute("UPDATE objects SET redirect_to = 'person:zhang-wei' "
                 "WHERE id = 'person:zhang-wei-2'")
    assert resolve_object_ref(conn, "zhang wei", EVERY_SPACE) == "person:zhang-wei"
    # A one-char name is not in the name index: the full scan still finds it.
    put_object(people, "person:x", "X")
    assert objects_named(conn, "x", EVERY_SPACE) == [("person:x", "X")]
