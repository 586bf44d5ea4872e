"""Reading objects: stable ids that can never name a path, versions, redirects, and relation /
evidence lists paged with next_offset to the end and back."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import T0, add_evidence, count
from memvault import ManualClock, Memory
from memvault.base.clock import iso
from memvault.base.config import load_config
from memvault.base.errors import InputError, NotFound
from memvault.base.spaces import EVERY_SPACE
from memvault.home.migrations import open_home_db
from memvault.objects.ids import check_object_id, make_slug
from memvault.objects.links import object_links
from memvault.objects.records import (
    READ_PAGE,
    ObjectRecord,
    add_relation,
    get_object,
    list_objects,
    object_rows,
    save_object,
)
from memvault.store.connection import write


def person(slug: str, name: str, **fields: object) -> ObjectRecord:
    return ObjectRecord(id=f"person:{slug}", type="person", name=name, **fields)  # type: ignore[arg-type]


@pytest.fixture
def hub(mem: Memory, clock: ManualClock) -> dict[str, object]:
    """person:qhy with 40 outgoing, 20 incoming relations and 45 evidence links (105 in all)."""
    texts = [f"证据 {i}: 浩宇说了第 {i} 件事。" for i in range(15)]
    event_ids = [mem.append_event(t, occurred_at=f"2026-10-05T09:{i:02d}:00+08:00")
                 for i, t in enumerate(texts)]
    with write(mem.conn):
        save_object(mem.conn, person("qhy", "秦浩宇", aliases=["浩宇", "Haoyu", "qhy"],
                                     summary="用户本人", body="身份：用户。", cues=["谁是浩宇"]),
                    clock.now())
        for i in range(40):
            save_object(mem.conn, ObjectRecord(id=f"todo:t{i:02d}", type="todo",
                                               name=f"待办 {i}"), clock.now())
            add_relation(mem.conn, "person:qhy", "assigned_to" if i % 2 else "related_to",
                         f"todo:t{i:02d}", clock.now())
        for i in range(20):
            save_object(mem.conn, person(f"p{i:02d}", f"同事 {i}"), clock.now())
            add_relation(mem.conn, f"person:p{i:02d}", "knows", "person:qhy", clock.now())
        for i, event_id in enumerate(event_ids):
            for start in (0, 2, 5):
                add_evidence(mem.conn, "person:qhy", event_id, start, start + 3 + i % 2,
                             clock.now())
    return {"events": event_ids}


def test_object_links_page_with_next_offset_to_the_end_and_back(
    mem: Memory, hub: dict[str, object]
) -> None:
    pages, offset = [], 0
    while offset is not None:
        page = mem.read_object("person:qhy", offset)
        assert page["offset"] == offset
        assert page["total_links"] == 105
        assert len(page["links"]) <= READ_PAGE == 50
        pages.append(page)
        offset = page["next_offset"]
    assert [len(p["links"]) for p in pages] == [50, 50, 5]
    assert [p["next_offset"] for p in pages] == [50, 100, None]
    links = [link for p in pages for link in p["links"]]
    assert links == object_links(mem.conn, "person:qhy", EVERY_SPACE)
    keys = [tuple(sorted((k, str(v)) for k, v in link.items())) for link in links]
    assert len(set(keys)) == 105  # no duplicates, and with the total: no gaps
    relations = [link for link in links if link["kind"] == "relation"]
    evidence = [link for link in links if link["kind"] == "evidence"]
    assert links == relations + evidence  # relations first, then evidence
    assert [r["direction"] for r in relations] == ["out"] * 40 + ["in"] * 20
    assert {r["label"] for r in relations if r["direction"] == "in"} == {"knows"}
    assert relations[-1]["name"].startswith("同事")
    times = [e["occurred_at"] for e in evidence]
    assert times == sorted(times) and len(evidence) == 45
    again = mem.read_object("person:qhy", 0)  # and back
    assert again["links"] == pages[0]["links"]
    tail = mem.read_object("person:qhy", 104)
    assert len(tail["links"]) == 1 and tail["next_offset"] is None
    past = mem.read_object("person:qhy", 500)
    assert past["links"] == [] and past["next_offset"] is None
    with pytest.raises(InputError, match="offset"):
        mem.read_object("person:qhy", -1)


def test_the_profile_comes_back_whole(mem: Memory, hub: dict[str, object]) -> None:
    obj = mem.read_object("person:qhy")["object"]
    assert obj["name"] == "秦浩宇" and obj["aliases"] == ["浩宇", "Haoyu", "qhy"]
    assert obj["summary"] == "用户本人" and obj["body"] == "身份：用户。"
    assert obj["cues"] == ["谁是浩宇"] and obj["status"] == "active" and obj["version"] == 1
    assert mem.read_object("person:qhy")["redirected_from"] is None


def test_a_small_object_has_one_page(mem: Memory, clock: ManualClock) -> None:
    with write(mem.conn):
        save_object(mem.conn, person("solo", "Solo"), clock.now())
    page = mem.read_object("person:solo")
    assert page["links"] == [] and page["total_links"] == 0 and page["next_offset"] is None


@pytest.mark.parametrize(
    "bad",
    ["person:../x", "../etc", "person:a/b", "person:a\\b", "person:..", "person:.hidden",
     "person:", "person", ":qhy", "alien:x", "Person:x", "person:a b", "person:a:b",
     "person:x\x00", "person:x\n", "person:\u200bx", "person:" + "a" * 121, "person:50%",
     "person:a?b", "person:a#b", 42, None],
)
def test_ids_that_could_name_a_path_or_nothing_are_refused(mem: Memory, bad: object) -> None:
    with pytest.raises(InputError):
        check_object_id(bad)
    with pytest.raises(InputError):
        mem.read_object(bad)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        with write(mem.conn):
            save_object(mem.conn, ObjectRecord(id=bad, type="person", name="x"),  # type: ignore[arg-type]
                        mem.clock.now())
    assert [r[0] for r in mem.conn.execute("SELECT id FROM objects")] == ["project:daily"]


@pytest.mark.parametrize("good", ["person:qhy", "person:秦浩宇", "project:daily",
                                  "knowledge:tea-over-coffee", "person:" + "a" * 120,
                                  "credential:github.token", "task:q4_report"])
def test_good_ids(good: str) -> None:
    kind, slug = check_object_id(good)
    assert f"{kind}:{slug}" == good


def test_a_missing_object_is_not_found(mem: Memory) -> None:
    with pytest.raises(NotFound, match="no object person:nobody"):
        mem.read_object("person:nobody")


def test_saving_identical_content_adds_no_version(mem: Memory, clock: ManualClock) -> None:
    with write(mem.conn):
        save_object(mem.conn, person("a", "A", summary="one"), clock.now())
    clock.advance(minutes=1)
    with write(mem.conn):
        same = save_object(mem.conn, person("a", "A", summary="one"), clock.now())
    assert same.version == 1
    with write(mem.conn):
        changed = save_object(mem.conn, person("a", "A", summary="two"), clock.now())
    assert changed.version == 2
    versions = mem.conn.execute(
        "SELECT version, summary FROM object_versions WHERE object_id = 'person:a' ORDER BY version"
    ).fetchall()
    assert [tuple(v) for v in versions] == [(1, "one"), (2, "two")]
    obj = get_object(mem.conn, "person:a")
    assert obj.created_at == "2026-10-13T12:00:00+08:00"
    assert obj.updated_at == "2026-10-13T12:01:00+08:00"


def test_a_type_that_does_not_match_the_id_is_refused(mem: Memory) -> None:
    with pytest.raises(InputError, match="does not match"):
        with write(mem.conn):
            save_object(mem.conn, ObjectRecord(id="person:x", type="todo", name="x"),
                        mem.clock.now())


def test_a_merged_object_redirects_to_its_survivor(mem: Memory, clock: ManualClock) -> None:
    with write(mem.conn):
        save_object(mem.conn, person("qhy", "秦浩宇"), clock.now())
        save_object(mem.conn, person("haoyu", "Haoyu", redirect_to="person:qhy"), clock.now())
        add_relation(mem.conn, "person:haoyu", "related_to", "person:qhy", clock.now())
    page = mem.read_object("person:haoyu")
    assert page["object"]["id"] == "person:qhy"
    assert page["redirected_from"] == "person:haoyu"
    assert get_object(mem.conn, "person:haoyu").redirect_to == "person:qhy"  # row kept
    assert [o["id"] for o in mem.list_objects("person")] == ["person:qhy"]
    assert len(list_objects(mem.conn, "person", include_merged=True, spaces=EVERY_SPACE)) == 2


def test_object_rows_reads_the_rows_that_exist_and_live_only_leaves_out_the_merged(
    mem: Memory, clock: ManualClock,
) -> None:
    with write(mem.conn):
        save_object(mem.conn, person("qhy", "秦浩宇"), clock.now())
        save_object(mem.conn, person("haoyu", "Haoyu", redirect_to="person:qhy"), clock.now())
    ids = ["person:haoyu", "person:nobody", "person:qhy"]
    rows = object_rows(mem.conn, ids)
    assert sorted(rows) == ["person:haoyu", "person:qhy"]
    assert rows["person:qhy"]["name"] == "秦浩宇"
    assert list(object_rows(mem.conn, ids, live_only=True)) == ["person:qhy"]
    assert object_rows(mem.conn, []) == {}


def test_the_browse_evidence_tool_pages_an_objects_slices_oldest_first(
    mem: Memory, hub: dict[str, object],
) -> None:
    from memvault.base.spaces import EVERY_SPACE
    from memvault.jobs.modes.browse import evidence_text

    links = [link for link in object_links(mem.conn, "person:qhy", EVERY_SPACE)
             if link["kind"] == "evidence"]
    seen, offset = [], 0
    while offset is not None:
        page = evidence_text(mem.conn, "person:qhy", offset, EVERY_SPACE)
        assert page["id"] == "person:qhy" and len(page["evidence"]) <= 20
        seen += page["evidence"]
        offset = page["next_offset"]
    assert [(s["event_id"], s["start_char"]) for s in seen] == [
        (link["event_id"], link["start_char"]) for link in links]
    first = seen[0]
    text = mem.read_event(first["event_id"])["text"]
    assert first["text"] == text[first["start_char"]:first["end_char"]]


def test_relation_labels_are_the_short_ones(mem: Memory, clock: ManualClock) -> None:
    with write(mem.conn):
        save_object(mem.conn, person("a", "A"), clock.now())
        save_object(mem.conn, person("b", "B"), clock.now())
        assert add_relation(mem.conn, "person:a", "knows", "person:b", clock.now()) is True
        assert add_relation(mem.conn, "person:a", "knows", "person:b", clock.now()) is False
    with pytest.raises(InputError, match="short labels only"):
        with write(mem.conn):
            add_relation(mem.conn, "person:a", "is the manager of", "person:b", clock.now())
    assert count(mem.conn, "relations") == 1


def test_listing_objects_by_type(mem: Memory, clock: ManualClock) -> None:
    with write(mem.conn):
        save_object(mem.conn, person("b", "Bob"), clock.now())
        save_object(mem.conn, person("a", "Alice"), clock.now())
        save_object(mem.conn, ObjectRecord(id="todo:x", type="todo", name="x"), clock.now())
    assert [o["name"] for o in mem.list_objects("person")] == ["Alice", "Bob"]
    assert [o["id"] for o in mem.list_objects()] == ["person:a", "person:b", "project:daily",
                                                     "todo:x"]  # project:daily is built in
    with pytest.raises(InputError, match="unknown type"):
        mem.list_objects("people")


def test_project_daily_is_built_in_once_and_never_by_a_read_only_open(
    home: Path, clock: ManualClock,
) -> None:
    # A database made without Memory.open has no objects; a read-only open must not add one.
    conn = open_home_db(load_config(home, create=True).db_path)
    conn.close()
    with Memory.open(home, clock=clock, readonly=True) as ro:
        assert ro.list_objects() == []
        with pytest.raises(NotFound):
            ro.read_object("project:daily")

    with Memory.open(home, clock=clock) as mem:
        daily = mem.read_object("project:daily")["object"]
        assert (daily["type"], daily["status"], daily["name"]) == ("project", "active",
                                                                   "日常 Daily")
        assert daily["aliases"] == ["daily", "日常"] and daily["version"] == 1
        row = mem.conn.execute("SELECT created_at, updated_at FROM objects"
                               " WHERE id = 'project:daily'").fetchone()
        assert tuple(row) == (iso(T0), iso(T0))  # stamped with the Memory's clock
    clock.advance(hours=1)
    with Memory.open(home, clock=clock) as again:  # re-opening adds no version, no copy
        assert again.read_object("project:daily")["object"]["version"] == 1
        assert count(again.conn, "objects") == 1
        assert count(again.conn, "object_versions", "object_id = 'project:daily'") == 1
        assert again.conn.execute("SELECT updated_at FROM objects WHERE id = 'project:daily'"
                                  ).fetchone()[0] == iso(T0)
    with Memory.open(home, clock=clock, readonly=True) as ro:
        assert [o["id"] for o in ro.list_objects("project")] == ["project:daily"]


def test_make_slug() -> None:
    assert make_slug("Qin Haoyu") == "qin-haoyu"
    assert make_slug("秦浩宇") == "秦浩宇"
    assert make_slug("../etc/passwd") == "etcpasswd"
    assert make_slug("  ") == "unnamed"
    assert make_slug("Ｑ４ report!") == "q4-report!"
    for name in ["../x", "a/b", "what? *now*", "\x00\x01", "..", "Tea over coffee."]:
        check_object_id("knowledge:" + make_slug(name))
