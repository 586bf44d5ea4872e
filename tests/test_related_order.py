"""The order of an organize claim's related objects: objects citing the event, then the objects
the page names, the most specific match first (the name the fewest named objects share, then the
longer name, then the id), so an alias many todos share never crowds a named person out of the
200 objects a claim considers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from helpers import add_evidence
from memvault import Memory
from memvault.jobs.modes.organize import RELATED_MAX, related_objects
from memvault.jobs.worker import TickResult
from memvault.models.builtin import BuiltinProvider
from memvault.objects.names import by_specificity, named_objects
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write
from memvault.timeline.events import NewEvent
from modes_support import run_until_idle

T0 = datetime(2026, 10, 13, tzinfo=UTC)
SHARED = 250  # todos sharing one alias: more than a claim considers


def put_all(mem: Memory, *objects: tuple[str, str, list[str]]) -> None:
    """Save (id, name, aliases) objects in one transaction."""
    with write(mem.conn):
        for object_id, name, aliases in objects:
            save_object(mem.conn, ObjectRecord(id=object_id, type=object_id.split(":")[0],
                                               name=name, aliases=aliases), T0)


def todos_sharing(alias: str) -> list[tuple[str, str, list[str]]]:
    return [(f"todo:seed-tray-{i:03d}", f"Seed tray {i:03d}", [alias]) for i in range(SHARED)]


def related_ids(mem: Memory, event_id: int, text: str, budget: int = 96_000) -> list[str]:
    return [o["id"] for o in related_objects(mem.conn, event_id, text, budget)]


def test_a_person_named_next_to_an_alias_250_todos_share_is_related_first(mem: Memory) -> None:
    put_all(mem, *todos_sharing("garden plan"), ("person:marcus-lee", "Marcus Lee", ["Marcus"]))
    text = "Marcus Lee walked me through the garden plan this morning."
    event = mem.append_event(text)
    related = related_ids(mem, event, text)
    assert related[0] == "person:marcus-lee"
    assert len(related) == RELATED_MAX  # the rest are todos the alias names, as many as fit
    assert all(i.startswith("todo:seed-tray-") for i in related[1:])


def test_a_chinese_name_next_to_a_chinese_alias_250_todos_share_is_related_first(
        mem: Memory) -> None:
    put_all(mem, *todos_sharing("花园计划"), ("person:chen-jing", "陈静", ["静姐"]))
    text = "今天静姐把花园计划发给我了，陈静说周五前定。"
    event = mem.append_event(text)
    related = related_ids(mem, event, text)
    assert related[0] == "person:chen-jing"
    assert len(related) == RELATED_MAX


def test_the_person_fits_a_small_budget_the_shared_alias_fills(mem: Memory) -> None:
    put_all(mem, *todos_sharing("garden plan"), ("person:marcus-lee", "Marcus Lee", []))
    text = "Marcus Lee has the garden plan."
    event = mem.append_event(text)
    related = related_ids(mem, event, text, budget=2_000)
    assert related[0] == "person:marcus-lee" and 1 < len(related) < 10


def test_objects_citing_the_event_stay_ahead_of_the_most_specific_name(mem: Memory) -> None:
    put_all(mem, ("person:marcus-lee", "Marcus Lee", []), ("todo:water", "Water the beds", []))
    text = "Marcus Lee asked me to water the beds."
    event = mem.append_event(text)
    with write(mem.conn):
        add_evidence(mem.conn, "todo:water", event, 0, 10, T0)
    assert related_ids(mem, event, text) == ["todo:water", "person:marcus-lee"]


def test_equally_shared_names_go_longer_first_then_by_id(mem: Memory) -> None:
    put_all(mem, ("todo:b-plan", "Plan", []), ("todo:a-plan", "plan", []),
            ("project:garden", "Garden plan", []), ("person:x", "Xu Ming", ["Xu"]))
    text = "Xu Ming owns the garden plan."
    # 'garden plan' (1 object) before 'xu ming' (1, shorter); 'plan' (2) last, by id.
    assert named_objects(mem.conn, text) == ["project:garden", "person:x", "todo:a-plan",
                                             "todo:b-plan"]


def test_an_object_ranks_by_its_most_specific_matched_name() -> None:
    matched = {"todo:1": {"garden plan"}, "todo:2": {"garden plan"},
               "person:m": {"garden plan", "marcus"}}
    assert by_specificity(matched) == ["person:m", "todo:1", "todo:2"]
    assert by_specificity({}) == []


# -- the whole flow ---------------------------------------------------------------------------


def organize_all(mem: Memory, provider: BuiltinProvider) -> list[TickResult]:
    """Compact, then organize until idle: every tick's result."""
    worker = mem.worker(provider, scheduler=False)
    results: list[TickResult] = []
    for request in (mem.compact, mem.organize):
        request()
        results += run_until_idle(worker)
    return results


def test_the_builtin_updates_the_named_person_without_a_correction(mem: Memory) -> None:
    put_all(mem, *todos_sharing("garden plan"), ("person:marcus-lee", "Marcus Lee", ["Marcus"]))
    (event,) = mem.append_events([NewEvent(
        "Marcus Lee prefers email over calls; he sent me the garden plan.",
        "2026-12-04T09:00:00Z", "user", "message")])
    results = organize_all(mem, BuiltinProvider())
    committed: list[dict[str, Any]] = [vars(r) for r in results if r.action == "committed"]
    assert committed and all(r["corrections"] == 0 for r in committed)
    assert not [r for r in results if r.action == "failed"]
    conn = mem.conn
    people = [r[0] for r in conn.execute("SELECT id FROM objects WHERE type = 'person'")]
    assert people == ["person:marcus-lee"]  # no near-duplicate
    cited = {r[0] for r in conn.execute("SELECT object_id FROM evidence WHERE event_id = ?",
                                        (event,))}
    assert "person:marcus-lee" in cited
