"""deep: a durable snapshot of every object id at first claim, ≤4 objects a batch,
each reviewed id confirmed, a failed batch never advancing the list, unchanged objects not
rewritten, merges that keep the loser readable and redirect, no SOUL.md, no timeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import count
from memvault import ManualClock, Memory, NewEvent
from memvault.base.spaces import Spaces
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write
from modes_support import (
    add_archived,
    batch_row,
    commit_organize,
    errors_seen,
    job_state,
    make_worker,
    obj,
    payload,
    put_object,
    review_step,
    run_until_idle,
    tool_results,
)
from scripted_provider import call


def deep_job(mem: Memory) -> int:
    return mem.organize(mode="deep")["job_id"]


def snapshot_ids(mem: Memory, job_id: int) -> list[str]:
    return [r[0] for r in mem.conn.execute(
        "SELECT object_id FROM deep_snapshot WHERE job_id = ? ORDER BY position", (job_id,))]


def test_deep_over_a_thousand_objects_resumes_after_a_failed_batch(
    mem: Memory, clock: ManualClock,
) -> None:
    now = clock.now()
    with write(mem.conn):
        for i in range(1_000):
            save_object(mem.conn, ObjectRecord(
                id=f"knowledge:k{i:04d}", type="knowledge", name=f"fact {i}",
                summary=f"fact number {i}", status="archived" if i % 100 == 7 else "active"),
                now)
    job_id = deep_job(mem)
    reviewed: list[list[str]] = []
    late: list[str] = []

    def step(messages, tools, max_out):
        ids = [o["id"] for o in payload(messages)["review"]]
        reviewed.append(ids)
        if len(reviewed) == 3 and not late:  # an object created after the snapshot
            put_object(mem, "knowledge:late", "late fact")
            late.append("knowledge:late")
        return call("commit_review", {"reviewed": ids})

    def wrong(messages, tools, max_out):
        ids = [o["id"] for o in payload(messages)["review"]]
        return call("commit_review", {"reviewed": ids[:-1]})  # forgets one id

    steps: list[Any] = [step] * 300
    steps.insert(5, wrong)  # batch 6: a correction, then the right confirmation
    steps.insert(20, RuntimeError("model down"))  # batch ~20 fails once
    worker, provider = make_worker(mem, steps)

    results = []
    while True:
        result = worker.tick()
        results.append(result)
        if result.action == "failed":
            failed_batch = batch_row(mem.conn, result.batch_id)
            clock.advance(seconds=11)
        elif result.action == "idle":
            break
    assert job_state(mem.conn, job_id) == "done"

    snap = snapshot_ids(mem, job_id)
    # ALL object ids: the 1,000 facts plus the built-in project:daily.
    assert len(snap) == 1_001 and len(set(snap)) == 1_001 and "project:daily" in snap
    assert "knowledge:late" not in snap
    assert count(mem.conn, "deep_snapshot", f"job_id = {job_id} AND reviewed_at IS NULL") == 0
    archived = {r[0] for r in mem.conn.execute("SELECT id FROM objects WHERE status='archived'")}
    assert len(archived) == 10 and archived <= set(snap)  # archived objects are reviewed too

    flat = [i for ids in reviewed for i in ids]
    assert flat == snap  # every id once, in snapshot order: the failure skipped nothing
    assert all(len(ids) <= 4 for ids in reviewed)
    # The failed batch was re-claimed (shrunk) with the same first positions.
    assert [r.action for r in results].count("failed") == 1
    failed_ids = failed_batch["claim"]["object_ids"]
    assert len(failed_ids) == 4
    retried = next(ids for ids in reviewed if ids[0] == failed_ids[0])
    assert retried == failed_ids[:2]
    corrections = [r for h in provider.history for r in tool_results(h["messages"])
                   if isinstance(r, dict) and r.get("field") == "reviewed"]
    assert corrections  # the batch that forgot an id was told so, then confirmed them all
    committed = [r for r in results if r.action == "committed"]
    # 19 batches of 4, the retry of 2, then 923 ids in 231 batches (230 of 4, one of 3).
    assert len(committed) == 251
    # An unchanged review writes nothing: every object is still at version 1.
    assert count(mem.conn, "objects", "version != 1") == 0
    assert count(mem.conn, "object_versions") == 1_002  # 1,000 facts, late, project:daily


def test_a_wrong_reviewed_list_gets_a_correction(mem: Memory) -> None:
    for name in ("a", "b", "c"):
        put_object(mem, f"knowledge:{name}", name)
    deep_job(mem)
    worker, provider = make_worker(mem, [
        call("commit_review", {"reviewed": ["knowledge:a", "knowledge:b"]}),
        call("commit_review", {"reviewed": ["knowledge:a", "knowledge:b", "knowledge:zzz"]}),
        review_step(),
    ])
    assert worker.tick().action == "committed"
    assert [e["field"] for e in errors_seen(provider)] == ["reviewed", "reviewed"]


def test_snapshot_is_taken_at_first_claim_and_is_durable(mem: Memory, home: Path,
                                                         clock: ManualClock) -> None:
    for i in range(6):
        put_object(mem, f"todo:t{i}", f"todo {i}")
    put_object(mem, "person:old", "old", status="archived")
    job_id = deep_job(mem)
    put_object(mem, "todo:before-claim", "created before the first claim")
    worker, _ = make_worker(mem, [review_step()])
    assert worker.tick().action == "committed"
    snap = snapshot_ids(mem, job_id)
    assert "todo:before-claim" in snap and "person:old" in snap and "project:daily" in snap
    assert len(snap) == 9  # 6 todos, person:old, todo:before-claim, built-in project:daily
    put_object(mem, "todo:after", "created after the snapshot")
    mem.close()
    # Another process continues the same job with the same snapshot.
    again = Memory.open(home, clock=clock)
    seen: list[dict] = []
    worker, _ = make_worker(again, [review_step(seen=seen)] * 3)
    while worker.tick().action != "idle":
        pass
    assert "todo:after" not in [o["id"] for d in seen for o in d["review"]]
    assert snapshot_ids(again, job_id) == snap
    assert job_state(again.conn, job_id) == "done"
    again.close()


def test_deep_never_writes_soul_md(mem: Memory) -> None:
    put_object(mem, "person:qhy", "浩宇")
    mem.write_core_file("SOUL.md", "I am a careful assistant.")
    deep_job(mem)
    worker, provider = make_worker(mem, [
        review_step(lambda d: {"core_files": [{"name": "SOUL.md", "content": "new persona"}]}),
        review_step(lambda d: {"core_files": [{"name": "USER.md", "content": "浩宇 is the user"}]}),
    ])
    assert worker.tick().action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "core_files.0.name" and "SOUL.md" in error["error"]
    assert mem.read_core_file("SOUL.md")["content"] == "I am a careful assistant."
    assert mem.read_core_file("USER.md")["content"] == "浩宇 is the user"


def test_deep_never_touches_the_hot_timeline(mem: Memory) -> None:
    mem.append_event("a conversation that is still hot")
    put_object(mem, "knowledge:x", "x")
    before = [tuple(r) for r in mem.conn.execute("SELECT * FROM hot_nodes")]
    deep_job(mem)
    seen: list[dict] = []
    worker, provider = make_worker(mem, [review_step(seen=seen)])
    assert worker.tick().action == "committed"
    assert "commit_compaction" not in provider.history[0]["tools"]
    assert provider.history[0]["tools"][-1] == "commit_review"
    assert "timeline" not in seen[0] and "nodes" not in seen[0]
    assert [tuple(r) for r in mem.conn.execute("SELECT * FROM hot_nodes")] == before
    assert count(mem.conn, "archive_queue") == 0


def test_unchanged_objects_are_not_rewritten(mem: Memory) -> None:
    put_object(mem, "person:ann", "Ann", body="designer", summary="designs things")
    put_object(mem, "person:ben", "Ben", body="engineer")
    versions = count(mem.conn, "object_versions")
    deep_job(mem)

    def same_and_changed(data: dict) -> dict:
        ann = next(o for o in data["review"] if o["id"] == "person:ann")
        same = {k: ann[k] for k in ("id", "name", "aliases", "summary", "body", "cues", "status")}
        return {"objects": [same, obj("person:ben", "Ben", body="staff engineer")]}

    worker, _ = make_worker(mem, [review_step(same_and_changed)])
    result = worker.tick()
    assert result.receipt["objects_changed"] == 1 and result.receipt["objects_unchanged"] == 1
    assert mem.read_object("person:ann")["object"]["version"] == 1
    assert mem.read_object("person:ben")["object"]["version"] == 2
    assert count(mem.conn, "object_versions") == versions + 1


def test_a_merge_redirects_reads_and_links_of_the_old_id(mem: Memory, clock: ManualClock) -> None:
    put_object(mem, "person:qhy", "浩宇", body="the user; allergic to peanuts")
    put_object(mem, "person:haoyu", "Haoyu", aliases=["浩宇"], body="likes hiking")
    put_object(mem, "project:home", "Home")
    (early,) = add_archived(mem, "浩宇 went hiking last weekend.")
    with write(mem.conn):
        mem.conn.execute("INSERT INTO evidence (object_id, event_id, start_char, end_char,"
                         " created_at) VALUES ('person:haoyu', ?, 0, 5, 'x')", (early,))
    mem.conn.execute("UPDATE archive_queue SET state = 'linked' WHERE event_id = ?", (early,))
    deep_job(mem)
    seen: list[dict] = []

    def merge(data: dict) -> dict:
        return {"merges": [{"loser": "person:haoyu", "survivor": "person:qhy"}],
                "objects": [obj("person:qhy", "浩宇", aliases=["Haoyu"],
                                body="the user; allergic to peanuts; likes hiking")]}

    worker, _ = make_worker(mem, [review_step(merge, seen)])
    result = worker.tick()
    assert result.action == "committed" and result.receipt["merged"] == ["person:haoyu"]
    assert {o["id"] for o in seen[0]["review"]} == {"person:haoyu", "person:qhy",
                                                    "project:home", "project:daily"}

    read = mem.read_object("person:haoyu")
    assert read["object"]["id"] == "person:qhy" and read["redirected_from"] == "person:haoyu"
    assert "likes hiking" in read["object"]["body"]
    links = read["links"]
    assert {"kind": "relation", "label": "supersedes", "other": "person:haoyu"}.items() <= next(
        link for link in links if link["kind"] == "relation").items()
    assert any(link["kind"] == "evidence" and link["event_id"] == early for link in links)

    loser = mem.conn.execute("SELECT * FROM objects WHERE id = 'person:haoyu'").fetchone()
    assert loser["redirect_to"] == "person:qhy" and loser["body"] == "likes hiking"
    history = mem.conn.execute(
        "SELECT version, redirect_to FROM object_versions WHERE object_id = 'person:haoyu'"
        " ORDER BY version").fetchall()
    assert [tuple(r) for r in history] == [(1, None), (2, "person:qhy")]
    assert "person:haoyu" not in [o["id"] for o in mem.list_objects("person")]

    # Later, an organize batch links to the old id: the relation and evidence land on the
    # survivor; rewriting the old id is refused with a pointer to the survivor.
    (later,) = add_archived(mem, "Haoyu joined the home renovation project.")
    mem.organize()
    relation = {"src": "person:haoyu", "label": "member_of", "dst": "project:home"}
    cite = [{"object_id": "person:haoyu", "event_id": later, "start": 0, "end": 5}]
    worker.provider.enqueue(
        commit_organize(later, "linked", objects=[obj("person:haoyu", "Haoyu")],
                        relations=[relation], evidence=cite),
        commit_organize(later, "linked", relations=[relation], evidence=cite))
    clock.advance(seconds=1)
    while True:
        result = worker.tick()
        if result.action == "idle":
            break
    errors = errors_seen(worker.provider)
    assert errors[0]["field"] == "objects.0.id" and "person:qhy" in errors[0]["error"]
    rel = mem.conn.execute("SELECT src_id, label, dst_id FROM relations WHERE label = 'member_of'"
                           ).fetchone()
    assert tuple(rel) == ("person:qhy", "member_of", "project:home")
    assert mem.conn.execute("SELECT object_id FROM evidence WHERE event_id = ?",
                            (later,)).fetchone()[0] == "person:qhy"


def test_deep_may_archive_and_relate_across_projects(mem: Memory) -> None:
    put_object(mem, "project:alpha", "Alpha")
    put_object(mem, "project:beta", "Beta")
    put_object(mem, "knowledge:retry-policy", "retry policy", body="retry 3 times")
    deep_job(mem)
    worker, _ = make_worker(mem, [review_step(lambda d: {
        "objects": [obj("project:beta", "Beta", status="archived")],
        "relations": [{"src": "knowledge:retry-policy", "label": "about", "dst": "project:alpha"},
                      {"src": "knowledge:retry-policy", "label": "about",
                       "dst": "project:beta"}]})])
    result = worker.tick()
    assert result.receipt["relations_added"] == 2
    assert mem.read_object("project:beta")["object"]["status"] == "archived"


def test_a_terminal_deep_batch_ends_the_job_partial(mem: Memory, clock: ManualClock) -> None:
    for i in range(5):
        put_object(mem, f"todo:t{i}", f"todo {i}")
    job_id = deep_job(mem)
    worker, provider = make_worker(mem, [RuntimeError("down")] * 5 + [review_step()] * 5)
    actions = []
    for _ in range(40):
        result = worker.tick()
        actions.append(result.action)
        if job_state(mem.conn, job_id) != "running":
            break
        clock.advance(seconds=200)
    assert actions.count("terminal") == 1
    assert job_state(mem.conn, job_id) == "partial"
    unreviewed = count(mem.conn, "deep_snapshot", f"job_id = {job_id} AND reviewed_at IS NULL")
    assert unreviewed == 1  # the terminal batch's (shrunk) claim


def test_merges_in_one_write_cannot_form_a_cycle(mem: Memory) -> None:
    put_object(mem, "person:a", "Li Lei")
    put_object(mem, "person:b", "li-lei")
    put_object(mem, "person:c", "Lilei")
    deep_job(mem)
    cycle = [{"loser": "person:a", "survivor": "person:b"},
             {"loser": "person:b", "survivor": "person:a"}]
    twice = [{"loser": "person:a", "survivor": "person:b"},
             {"loser": "person:a", "survivor": "person:c"}]
    lost = [{"loser": "person:a", "survivor": "person:b"},
            {"loser": "person:c", "survivor": "person:a"}]
    good = [{"loser": "person:a", "survivor": "person:b"},
            {"loser": "person:c", "survivor": "person:b"}]
    worker, provider = make_worker(mem, [review_step(lambda d, m=m: {"merges": m})
                                         for m in (cycle, twice, lost, good)])
    assert worker.tick().action == "committed"
    assert [e["field"] for e in errors_seen(provider)] == [
        "merges.1.loser", "merges.1.loser", "merges.1.survivor"]
    live = [o["id"] for o in mem.list_objects("person")]
    assert live == ["person:b"]
    assert mem.read_object("person:a")["object"]["id"] == "person:b"
    assert mem.read_object("person:c")["object"]["id"] == "person:b"


def _three_spaces(mem: Memory) -> None:
    """The same person, by name, in work, home and shared; and a second work person."""
    put_object(mem, "person:lee", "Lee", body="work: leads the payments team", space="work")
    put_object(mem, "person:lee-home", "Lee", body="home: my neighbour", space="home")
    put_object(mem, "person:lee-shared", "Lee", body="shared: everyone knows Lee")
    put_object(mem, "person:kim", "Kim", body="work: payments analyst", space="work")


def _space_of(mem: Memory, object_id: str) -> str:
    return str(mem.conn.execute("SELECT space FROM objects WHERE id = ?",
                                (object_id,)).fetchone()[0])


def test_each_review_batch_holds_the_objects_of_one_space(mem: Memory) -> None:
    _three_spaces(mem)
    deep_job(mem)
    seen: list[dict[str, Any]] = []
    worker, _ = make_worker(mem, [review_step(seen=seen)] * 3)
    run_until_idle(worker)
    batches = [[o["id"] for o in data["review"]] for data in seen]
    assert sorted(i for ids in batches for i in ids) == sorted(
        ["person:lee", "person:lee-home", "person:lee-shared", "person:kim", "project:daily"])
    assert all(len({_space_of(mem, i) for i in ids}) == 1 for ids in batches), batches


def test_a_review_is_shown_and_merges_duplicates_of_its_own_space_only(mem: Memory) -> None:
    _three_spaces(mem)
    deep_job(mem)
    seen: list[dict[str, Any]] = []
    worker, _ = make_worker(mem, [review_step(seen=seen)] * 3)
    run_until_idle(worker)
    for data in seen:
        space = _space_of(mem, data["review"][0]["id"])
        assert {_space_of(mem, o["id"]) for o in data["related"]} <= {space}, data["related"]


def test_a_review_cannot_read_or_search_another_spaces_objects_or_events(mem: Memory) -> None:
    _three_spaces(mem)
    [home_event] = Memory(mem.config, mem.conn, mem.clock, Spaces("home")).append_events(
        [NewEvent("Lee from next door borrowed the ladder")])
    deep_job(mem)

    def browse(messages: Any, tools: Any, max_out: int) -> Any:
        data = payload(messages)
        if _space_of(mem, data["review"][0]["id"]) != "work":
            return call("commit_review", {"reviewed": [o["id"] for o in data["review"]]})
        return call("read_object", {"id": "person:lee-home"})

    answers: list[Any] = []

    def then_search(messages: Any, tools: Any, max_out: int) -> Any:
        answers.append(tool_results(messages)[-1])
        return call("search_objects", {"query": "Lee"})

    def then_evidence(messages: Any, tools: Any, max_out: int) -> Any:
        answers.append(tool_results(messages)[-1])
        return call("read_evidence", {"id_or_event": f"event:{home_event}"})

    def then_commit(messages: Any, tools: Any, max_out: int) -> Any:
        answers.append(tool_results(messages)[-1])
        reviewed = [o["id"] for o in payload(messages)["review"]]
        return call("commit_review", {"reviewed": reviewed})

    # batches by space name: home, shared, then work, whose review browses
    worker, _ = make_worker(mem, [browse, browse, browse, then_search, then_evidence,
                                  then_commit])
    run_until_idle(worker)
    read, found, evidence = answers
    assert "no object person:lee-home" in read["error"]
    assert {h["id"] for h in found} == {"person:lee", "person:lee-shared"}
    assert f"no event {home_event}" in evidence["error"]


def test_what_a_review_of_one_space_creates_stays_in_that_space(mem: Memory) -> None:
    _three_spaces(mem)
    deep_job(mem)

    def add_for_home(data: dict[str, Any]) -> dict[str, Any]:
        if _space_of(mem, data["review"][0]["id"]) != "home":
            return {}
        return {"objects": [obj("knowledge:ladder", "Ladder", summary="Lee has the ladder")]}

    worker, _ = make_worker(mem, [review_step(add_for_home)] * 3)
    run_until_idle(worker)
    assert _space_of(mem, "knowledge:ladder") == "home"


def test_a_review_of_a_space_other_than_shared_writes_no_core_file(mem: Memory) -> None:
    put_object(mem, "person:lee", "Lee", body="work: leads the payments team", space="work")
    deep_job(mem)

    def core_from_work(data: dict[str, Any]) -> dict[str, Any]:
        if _space_of(mem, data["review"][0]["id"]) != "work":
            return {}
        return {"core_files": [{"name": "USER.md", "content": "Lee, payments"}]}

    worker, provider = make_worker(mem, [review_step(core_from_work), review_step(core_from_work),
                                         review_step()])
    run_until_idle(worker)
    assert any(e["field"] == "core_files" and "never writes a core file" in e["error"]
               for e in errors_seen(provider))
    assert mem.read_core_file("USER.md") is None  # every space reads it: nothing leaked
