"""What `Memory` answers matches the TypedDict it is declared as: every required key there, no
key the type does not name, and each value of the declared kind (nested TypedDicts checked
too). Recall builds its answers as plain dicts (engine/recall/query.py) and `Memory` hands them
on typed, so this is what keeps those types true."""

from __future__ import annotations

import types
from dataclasses import asdict
from pathlib import Path
from typing import (
    Any,
    Literal,
    NotRequired,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

import pytest
from helpers import add_evidence
from legacy_fixture import build_legacy_db
from memvault import ManualClock, Memory, NewEvent
from memvault.base.clock import parse_time
from memvault.base.spaces import EVERY_SPACE
from memvault.jobs.requests import JobReceipt
from memvault.legacy.upgrade import MigrationReport
from memvault.objects.corrections import Correction, CorrectionReceipt, ProfileEdit
from memvault.objects.records import ObjectDirectory, ObjectPage, ObjectProfile, add_relation
from memvault.recall.answers import (
    EventEvidence,
    EventHit,
    EventRead,
    FindAnswer,
    ObjectEvidence,
    ObjectHit,
    ObjectRead,
)
from memvault.store.connection import write
from memvault.timeline.events import EventPage
from memvault.timeline.hot import NodeView, active_nodes
from modes_support import put_object


def fits(value: Any, hint: Any, where: str = "answer") -> None:
    """Fail naming `where` when `value` is not of the type `hint` (TypedDicts checked key by
    key; a union of TypedDicts must fit one of them)."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return
    if is_typeddict(hint):
        assert isinstance(value, dict), f"{where}: {value!r} is not a dict"
        hints = get_type_hints(hint)
        # read from the annotations: __required_keys__ misses a NotRequired under
        # `from __future__ import annotations` before Python 3.12
        optional = {key for key, h in get_type_hints(hint, include_extras=True).items()
                    if get_origin(h) is NotRequired}
        missing = hints.keys() - optional - value.keys()
        extra = value.keys() - hints.keys()
        assert not missing and not extra, f"{where}: missing {missing}, undeclared {extra}"
        for key, item in value.items():
            fits(item, hints[key], f"{where}.{key}")
    elif origin is Literal:
        assert value in args, f"{where}: {value!r} not in {args}"
    elif origin in (Union, types.UnionType):
        failures = []
        for option in args:
            try:
                fits(value, option, where)
                return
            except AssertionError as exc:
                failures.append(str(exc))
        raise AssertionError(f"{where}: fits none of {args}: {failures}")
    elif origin is list:
        assert isinstance(value, list), f"{where}: {value!r} is not a list"
        for i, item in enumerate(value):
            fits(item, args[0], f"{where}[{i}]")
    elif origin is dict:
        assert isinstance(value, dict), f"{where}: {value!r} is not a dict"
        for key, item in value.items():
            fits(key, args[0], f"{where} key")
            fits(item, args[1], f"{where}[{key!r}]")
    elif hint is type(None):
        assert value is None, f"{where}: {value!r} is not None"
    elif hint is float:
        assert isinstance(value, int | float) and not isinstance(value, bool), where
    elif hint is int:
        assert isinstance(value, int) and not isinstance(value, bool), f"{where}: {value!r}"
    else:
        assert isinstance(value, hint), f"{where}: {value!r} is not {hint}"


@pytest.fixture
def filled(mem: Memory, clock: ManualClock) -> dict[str, int]:
    """Two people (one merged into the other, both cited), a relation, events not yet
    indexed."""
    first = mem.append_event("Tom Becker is the DevOps lead; Tom is on call on Mondays.")
    second = mem.append_events([NewEvent("Tommy asked about the runner fleet.")], index=False)[0]
    put_object(mem, "person:tom", "Tom Becker", summary="DevOps lead", aliases=["Tom"])
    put_object(mem, "person:tommy", "Tommy")
    put_object(mem, "project:fleet", "Runner fleet")
    with write(mem.conn):
        add_relation(mem.conn, "person:tom", "member_of", "project:fleet", clock.now())
        add_evidence(mem.conn, "person:tom", first, 0, 10, clock.now())
        add_evidence(mem.conn, "person:tommy", second, 0, 5, clock.now())
    mem.correct(Correction("merge", ["person:tommy", "person:tom"]))
    return {"first": first, "second": second}


def test_find_answers_carry_the_declared_keys(mem: Memory, filled: dict[str, int]) -> None:
    answer = mem.find("Tom")
    fits(answer, FindAnswer)
    kinds = {hit["kind"] for hit in answer["hits"]}
    assert kinds == {"object", "event"}
    for hit in answer["hits"]:
        fits(hit, ObjectHit if hit["kind"] == "object" else EventHit, "hit")
    assert "unindexed_events" in mem.find("runner fleet")  # one event was stored unindexed
    fits(mem.find("Tommy"), FindAnswer)  # found through the merged id
    fits(mem.find("!!!"), FindAnswer)  # no searchable words: the notice says so


def test_read_answers_carry_the_declared_keys(mem: Memory, filled: dict[str, int]) -> None:
    answer = mem.read("person:tommy")
    fits(answer, ObjectRead)
    assert answer["merged"] == ["person:tommy"]
    fits(mem.read(str(filled["first"])), EventRead)
    fits(mem.read_object("person:tom"), ObjectPage)


def test_event_pages_and_expanded_nodes_carry_the_declared_keys(
        mem: Memory, filled: dict[str, int]) -> None:
    page = mem.read_event(filled["first"])
    fits(page, EventPage)
    assert page["text"].startswith("Tom Becker")
    nodes = active_nodes(mem.conn, EVERY_SPACE)
    assert nodes
    for node in nodes:
        fits(node.to_dict(), NodeView, "node")
        assert list(node.to_dict()) == list(asdict(node))  # same keys, same order as before
    fits(mem.expand(nodes[0].id), list[NodeView], "expand")


def test_evidence_answers_carry_the_declared_keys(mem: Memory, filled: dict[str, int]) -> None:
    answer = mem.evidence("person:tom")
    fits(answer, ObjectEvidence)
    assert {item["object_id"] for item in answer["items"]} == {"person:tom", "person:tommy"}
    event = mem.evidence(f"event:{filled['first']}")
    fits(event, EventEvidence)
    assert event["cited_by"]


def test_job_receipts_carry_the_declared_keys(mem: Memory, filled: dict[str, int]) -> None:
    fits(mem.compact(), JobReceipt)
    organize = mem.organize(request_token="t1")
    fits(organize, JobReceipt)
    assert "compact_job_id" in organize
    fits(mem.organize(request_token="t1"), JobReceipt)  # replayed
    fits(mem.organize("deep", compact_first=False), JobReceipt)


def test_correction_receipts_carry_the_declared_keys(mem: Memory,
                                                     filled: dict[str, int]) -> None:
    correction = Correction("edit", ["Tom"], ProfileEdit(summary="DevOps lead, on call Mondays"))
    receipt = mem.correct(correction)
    fits(receipt, CorrectionReceipt)
    again = mem.correct(correction)
    fits(again, CorrectionReceipt)
    assert again["replayed"] is True


def test_object_profiles_carry_the_declared_keys_in_their_order(
    mem: Memory, filled: dict[str, int],
) -> None:
    profiles = mem.list_objects()
    assert profiles
    for profile in profiles:
        fits(profile, ObjectProfile, "profile")
        assert list(profile) == list(get_type_hints(ObjectProfile))  # the JSON's key order


def test_context_directory_carries_the_declared_keys(mem: Memory,
                                                     filled: dict[str, int]) -> None:
    fits(mem.resident_context()["directory"], ObjectDirectory)


def test_migration_reports_carry_the_declared_keys(tmp_path: Path) -> None:
    clock = ManualClock(parse_time("2026-03-01T12:00:00+00:00"))
    old = tmp_path / "old"
    old.mkdir()
    build_legacy_db(old / "memory.db")
    fits(Memory.migrate(old, clock=clock), MigrationReport)
    fits(Memory.migrate(old, clock=clock), MigrationReport)  # nothing left: the earlier report


def test_the_checker_refuses_a_missing_or_undeclared_key() -> None:
    with pytest.raises(AssertionError, match="missing"):
        fits({"legacy": True}, MigrationReport)
    with pytest.raises(AssertionError, match="undeclared"):
        fits({"legacy": True, "schema_migrations": [], "surprise": 1}, MigrationReport)
    with pytest.raises(AssertionError, match="is not"):
        fits({"legacy": True, "schema_migrations": "m001"}, MigrationReport)

