"""organize: every outcome and every rejection of a proposal, one transaction per
batch, earlier batches never undone, a long event read page by page with checkpoints and a
crash between pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import count
from memvault import ManualClock, Memory
from memvault.jobs.batch_loop import FieldError
from memvault.jobs.leases import acquire_lease
from memvault.jobs.modes import organize as organize_module
from memvault.jobs.records import get_job
from memvault.jobs.scheduler import Scheduler
from memvault.store.connection import write
from modes_support import (
    add_archived,
    batch_row,
    cite_page,
    commit_organize,
    counts,
    errors_seen,
    make_worker,
    obj,
    one_batch,
    open_memory,
    organize_step,
    payload,
    put_object,
    queue_row,
)
from scripted_provider import call

TEN_K = ("Ursula keeps the release calendar and signs off every launch. " * 170)[:10_000]


def fields(provider: Any) -> list[str]:
    return [e["field"] for e in errors_seen(provider)]


def evidence(object_id: str, event_id: int, start: int = 0, end: int = 5) -> dict[str, Any]:
    return {"object_id": object_id, "event_id": event_id, "start": start, "end": end}


@pytest.fixture
def event(mem: Memory) -> int:
    """One short queued event and an explicit organize job."""
    (event_id,) = add_archived(mem, "Victor is the new on-call lead for payments.")
    mem.organize()
    return event_id


@pytest.fixture
def two_pages(mem: Memory) -> int:
    (event_id,) = add_archived(mem, TEN_K)
    mem.organize()
    return event_id


# -- outcomes -----------------------------------------------------------------------------------


def test_continue_saves_progress_and_the_next_batch_reads_it(mem: Memory, two_pages: int) -> None:
    seen: list[dict] = []
    step = organize_step(lambda d: {"outcome": "continue", "progress": "page 1: Ursula found"},
                         seen)
    result, _ = one_batch(mem, step)
    assert result.action == "committed"
    assert result.receipt["outcome"] == "continue" and result.receipt["page"] == [0, 8_000]
    row = queue_row(mem.conn, two_pages)
    assert (row["state"], row["page_cursor"], row["progress"]) == (
        "continue", 8_000, "page 1: Ursula found")
    assert seen[0]["page"]["last"] is False and seen[0]["progress"] is None

    result, _ = one_batch(mem, cite_page("person:ursula", "Ursula"))
    assert result.receipt["outcome"] == "linked"
    assert queue_row(mem.conn, two_pages)["page_cursor"] == 10_000


def test_continue_needs_progress(mem: Memory, two_pages: int) -> None:
    result, provider = one_batch(
        mem, commit_organize(two_pages, "continue"),
        commit_organize(two_pages, "continue", progress="   "),
        commit_organize(two_pages, "continue", progress="read page one"))
    assert result.action == "committed"
    assert fields(provider) == ["events.0.progress", "events.0.progress"]


def test_continue_on_the_last_page_must_change_something(mem: Memory, event: int) -> None:
    result, provider = one_batch(
        mem, commit_organize(event, "continue", progress="thinking about it"),
        commit_organize(event, "continue", progress="wrote Victor, more to do",
                        objects=[obj("person:victor", "Victor", body="on-call lead")],
                        evidence=[evidence("person:victor", event)]))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "events.0.outcome" and "empty spinning" in error["error"]
    row = queue_row(mem.conn, event)
    assert (row["state"], row["page_cursor"]) == ("continue", mem.read_event(event)["chars"])
    # The next batch gets the (empty) rest of the event and may finish it.
    seen: list[dict] = []
    result, _ = one_batch(mem, organize_step(lambda d: {"outcome": "linked"}, seen))
    assert result.receipt["outcome"] == "linked"
    assert seen[0]["page"]["last"] is True and seen[0]["targets"] == ["person:victor"]
    assert seen[0]["progress"] == "wrote Victor, more to do"


def test_linked_needs_at_least_one_target(mem: Memory, event: int) -> None:
    result, provider = one_batch(
        mem, commit_organize(event, "linked", objects=[obj("person:victor", "Victor")]),
        commit_organize(event, "linked", objects=[obj("person:victor", "Victor")],
                        evidence=[evidence("person:victor", event)]))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "events.0.outcome" and "at least one target" in error["error"]
    assert queue_row(mem.conn, event)["state"] == "linked"
    assert mem.read_object("person:victor")["links"][0]["kind"] == "evidence"


def test_a_core_file_counts_as_a_target(mem: Memory, event: int) -> None:
    result, _ = one_batch(mem, commit_organize(
        event, "linked", core_files=[{"name": "USER.md", "content": "Victor: on-call lead."}]))
    assert result.action == "committed" and result.receipt["core_files"] == 1
    assert mem.read_core_file("USER.md")["content"] == "Victor: on-call lead."


def test_archive_only_needs_a_reason(mem: Memory, event: int) -> None:
    result, provider = one_batch(mem, commit_organize(event, "archive_only"),
                                 commit_organize(event, "archive_only", reason="greeting only"))
    assert result.action == "committed"
    assert fields(provider) == ["events.0.reason"]
    row = queue_row(mem.conn, event)
    assert (row["state"], row["reason"]) == ("archive_only", "greeting only")


def test_archive_only_is_refused_once_the_event_has_targets(mem: Memory, two_pages: int) -> None:
    one_batch(mem, cite_page("person:ursula", "Ursula"))  # page 1 cites the event
    result, provider = one_batch(
        mem, commit_organize(two_pages, "archive_only", reason="nothing more"),
        commit_organize(two_pages, "linked"))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert "already has object targets" in error["error"]
    assert queue_row(mem.conn, two_pages)["state"] == "linked"


def test_linked_and_archived_events_leave_the_hourly_scan(mem: Memory, clock: ManualClock,
                                                          event: int) -> None:
    one_batch(mem, commit_organize(event, "archive_only", reason="nothing durable"))
    sch = Scheduler(mem.conn, mem.config, mem.tz)
    jobs = sch.check(clock.advance(hours=2))
    assert [j for j in jobs if j.mode == "organize"] == []


# -- rejections ---------------------------------------------------------------------------------


def test_overwriting_an_object_the_batch_did_not_read_is_refused(mem: Memory, event: int) -> None:
    put_object(mem, "person:wanda", "Wanda", body="old body")  # not named in the event
    write = obj("person:wanda", "Wanda", body="new body")
    cite = [evidence("person:wanda", event)]
    result, provider = one_batch(
        mem, commit_organize(event, "linked", objects=[write], evidence=cite),
        call("read_object", {"id": "person:wanda"}),
        commit_organize(event, "linked", objects=[write], evidence=cite))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "objects.0.id" and "read_object" in error["error"]
    current = mem.read_object("person:wanda")["object"]
    assert (current["body"], current["version"]) == ("new body", 2)


def test_an_object_sent_with_the_claim_counts_as_read(mem: Memory, event: int) -> None:
    put_object(mem, "person:victor", "Victor", body="engineer")  # named in the event
    seen: list[dict] = []
    result, provider = one_batch(mem, organize_step(lambda d: {
        "outcome": "linked",
        "objects": [obj("person:victor", "Victor", body="engineer; on-call lead for payments")],
        "evidence": [evidence("person:victor", d["event"]["id"])]}, seen))
    assert result.action == "committed" and errors_seen(provider) == []
    assert [o["id"] for o in seen[0]["related"]] == ["person:victor"]
    assert mem.read_object("person:victor")["object"]["version"] == 2


def test_evidence_outside_the_claimed_page_is_refused(mem: Memory, two_pages: int) -> None:
    (other,) = add_archived(mem, "another event entirely")
    write = [obj("person:ursula", "Ursula")]
    result, provider = one_batch(
        mem,
        commit_organize(two_pages, "continue", progress="p1", objects=write,
                        evidence=[evidence("person:ursula", two_pages, 7_990, 8_010)]),
        commit_organize(two_pages, "continue", progress="p1", objects=write,
                        evidence=[evidence("person:ursula", other, 0, 5)]),
        commit_organize(two_pages, "continue", progress="p1", objects=write,
                        evidence=[evidence("person:ursula", two_pages, 7_990, 8_000)]))
    assert result.action == "committed"
    assert fields(provider) == ["evidence.0", "evidence.0"]
    assert "outside the claimed range" in errors_seen(provider)[0]["error"]
    assert count(mem.conn, "evidence") == 1


def test_a_missing_disposition_is_refused(mem: Memory, event: int) -> None:
    result, provider = one_batch(
        mem, call("commit_organize", {"objects": [obj("person:victor", "Victor")]}),
        commit_organize(event + 1, "archive_only", reason="wrong event"),
        commit_organize(event, "archive_only", reason="ok"))
    assert result.action == "committed"
    assert fields(provider) == ["events", "events"]
    assert "missing disposition" in errors_seen(provider)[0]["error"]
    assert count(mem.conn, "objects", "id != 'project:daily'") == 0  # only the built-in one


@pytest.mark.parametrize("outcome", ["linked", "archive_only"])
def test_finishing_on_a_page_that_is_not_the_last_is_refused(
    mem: Memory, two_pages: int, outcome: str,
) -> None:
    extra = ({"objects": [obj("person:ursula", "Ursula")],
              "evidence": [evidence("person:ursula", two_pages)]}
             if outcome == "linked" else {"reason": "nothing"})
    result, provider = one_batch(
        mem, commit_organize(two_pages, outcome, **extra),
        commit_organize(two_pages, "continue", progress="page 1 read"))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "events.0.outcome" and "skipping an unread page" in error["error"]
    assert count(mem.conn, "objects", "id != 'project:daily'") == 0  # only the built-in one


def test_an_unknown_relation_label_is_refused(mem: Memory, event: int) -> None:
    objects = [obj("person:victor", "Victor"), obj("project:payments", "Payments")]
    rel = {"src": "person:victor", "label": "works closely with", "dst": "project:payments"}
    good = {**rel, "label": "member_of"}
    cite = [evidence("person:victor", event)]
    result, provider = one_batch(
        mem, commit_organize(event, "linked", objects=objects, relations=[rel], evidence=cite),
        commit_organize(event, "linked", objects=objects, relations=[good], evidence=cite))
    assert result.action == "committed"
    assert fields(provider) == ["relations.0.label"]
    row = mem.conn.execute("SELECT src_id, label, dst_id FROM relations").fetchone()
    assert tuple(row) == ("person:victor", "member_of", "project:payments")


@pytest.mark.parametrize(("field", "value", "name"), [
    ("body", "x" * 16_001, "objects.0.body"),
    ("summary", "y" * 401, "objects.0.summary"),
])
def test_body_and_summary_limits(mem: Memory, event: int, field: str, value: str,
                                 name: str) -> None:
    cite = [evidence("person:victor", event)]
    result, provider = one_batch(
        mem, commit_organize(event, "linked", objects=[obj("person:victor", **{field: value})],
                             evidence=cite),
        commit_organize(event, "linked", objects=[obj("person:victor", **{field: value[:-1]})],
                        evidence=cite))
    assert result.action == "committed"
    assert fields(provider) == [name]
    assert len(mem.read_object("person:victor")["object"][field]) == len(value) - 1


def test_a_new_project_must_be_a_candidate(mem: Memory, event: int) -> None:
    cite = [evidence("project:payments", event)]
    result, provider = one_batch(
        mem, commit_organize(event, "linked", evidence=cite, objects=[
            obj("project:payments", "Payments", status="active")]),
        commit_organize(event, "linked", evidence=cite, objects=[
            obj("project:payments", "Payments")]))
    assert result.action == "committed"
    assert fields(provider) == ["objects.0.status"]
    assert mem.read_object("project:payments")["object"]["status"] == "candidate"


def test_only_approval_activates_a_candidate_project(mem: Memory, event: int) -> None:
    put_object(mem, "project:payments", "Payments", status="candidate")  # named: sent as read
    cite = [evidence("project:payments", event)]
    activate = commit_organize(event, "linked", evidence=cite, objects=[
        obj("project:payments", "Payments", status="active")])
    result, provider = one_batch(mem, activate, commit_organize(event, "linked", evidence=cite))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "objects.0.status" and "project approve" in error["error"]
    assert mem.read_object("project:payments")["object"]["status"] == "candidate"

    approved = mem.approve_project("project:payments")
    assert approved["changed"] is True
    assert mem.read_object("project:payments")["object"]["status"] == "active"
    assert mem.approve_project("project:payments")["changed"] is False


SECRETS = [
    "api key: sk-proj-abcdefghijklmnopqrstuvwxyz123456",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "password: hunter2xyz9",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_a_secret_value_in_a_credential_is_refused(mem: Memory, event: int, secret: str) -> None:
    cite = [evidence("credential:deploy-key", event)]
    safe = "Deploy key for payments; the deploy key lives in 1Password (vault Ops)."
    result, provider = one_batch(
        mem, commit_organize(event, "linked", evidence=cite, objects=[
            obj("credential:deploy-key", "deploy key", body=f"Deploy key. {secret}")]),
        commit_organize(event, "linked", evidence=cite, objects=[
            obj("credential:deploy-key", "deploy key", body=safe)]))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "objects.0.body" and "never it" in error["error"]
    assert mem.read_object("credential:deploy-key")["object"]["body"] == safe
    assert secret not in str(counts(mem.conn))
    stored = mem.conn.execute("SELECT group_concat(body) FROM object_versions").fetchone()[0]
    assert "hunter2xyz9" not in stored and "PRIVATE KEY" not in stored and "sk-proj" not in stored


def test_too_many_objects_or_relations_in_one_write_are_refused(mem: Memory, event: int) -> None:
    many = [obj(f"knowledge:k{i}", f"k{i}") for i in range(33)]
    pair = [obj("person:victor", "Victor"), obj("project:payments", "Payments")]
    labels = ["member_of", "related_to", "assigned_to", "depends_on", "about", "supersedes",
              "knows"]
    nodes = [obj(f"knowledge:n{i}", f"n{i}") for i in range(10)]
    rels = [{"src": a["id"], "label": label, "dst": b["id"]}
            for a in nodes for b in nodes if a is not b for label in labels][:65]
    cite = [evidence("person:victor", event)]
    result, provider = one_batch(
        mem, commit_organize(event, "linked", objects=many, evidence=cite),
        commit_organize(event, "linked", objects=nodes + pair, relations=rels, evidence=cite),
        commit_organize(event, "linked", objects=nodes + pair, relations=rels[:64],
                        evidence=cite))
    assert result.action == "committed"
    assert fields(provider) == ["objects", "relations"]
    assert count(mem.conn, "relations") == 64
    assert count(mem.conn, "objects", "id != 'project:daily'") == 12  # nodes + pair


# -- transactions -------------------------------------------------------------------------------


def test_a_refused_proposal_leaves_the_store_unchanged(mem: Memory, event: int) -> None:
    put_object(mem, "person:victor", "Victor")
    before = counts(mem.conn)
    during: list[dict] = []

    def check_then_commit(messages, tools, max_out):
        during.append(counts(mem.conn))
        return commit_organize(event, "archive_only", reason="nothing")

    bad = commit_organize(
        event, "linked",
        objects=[obj("person:victor", "Victor", body="on-call"), obj("knowledge:x", "x"),
                 obj("credential:y", "y", body="token = abcd1234efgh5678")],
        relations=[{"src": "person:victor", "label": "knows", "dst": "knowledge:x"}],
        evidence=[evidence("person:victor", event)])
    result, provider = one_batch(mem, bad, check_then_commit)
    assert fields(provider) == ["objects.2.body"]
    assert during == [before]
    assert result.action == "committed"


def test_a_failure_after_writing_rolls_the_whole_batch_back(
    mem: Memory, event: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    put_object(mem, "person:victor", "Victor")
    before = counts(mem.conn)
    real = organize_module.apply_write
    calls: list[int] = []

    def apply_then_refuse(*args, **kwargs):
        changes = real(*args, **kwargs)  # objects, relations, evidence, core files written
        calls.append(1)
        if len(calls) == 1:
            raise FieldError("events.0", "refused after the writes (test)")
        return changes

    monkeypatch.setattr(organize_module, "apply_write", apply_then_refuse)
    during: list[dict] = []
    proposal = dict(
        objects=[obj("person:victor", "Victor", body="on-call"), obj("knowledge:x", "x")],
        relations=[{"src": "person:victor", "label": "knows", "dst": "knowledge:x"}],
        evidence=[evidence("person:victor", event)],
        core_files=[{"name": "USER.md", "content": "Victor is on call"}])

    def look(messages, tools, max_out):
        during.append(counts(mem.conn))
        return commit_organize(event, "linked", **proposal)

    result, provider = one_batch(mem, commit_organize(event, "linked", **proposal), look)
    assert during == [before]
    assert result.action == "committed"
    after = counts(mem.conn)
    assert {r[0] for r in mem.conn.execute("SELECT id FROM objects")} == {
        "person:victor", "knowledge:x", "project:daily"}  # project:daily is built in
    assert (after["objects"], after["relations"], after["evidence"], after["core_files"]) == (
        before["objects"] + 1, 1, 1, 1)
    assert after["object_versions"] == before["object_versions"] + 2
    assert queue_row(mem.conn, event)["state"] == "linked"


def test_a_later_failure_never_undoes_an_earlier_batch(mem: Memory, clock: ManualClock,
                                                       two_pages: int) -> None:
    worker, _ = make_worker(mem, [cite_page("person:ursula", "Ursula"),
                                  *[RuntimeError("model down")] * 5])
    assert worker.tick().action == "committed"
    saved = counts(mem.conn)
    result = worker.tick()
    while result.action != "terminal":
        clock.advance(seconds=200)
        result = worker.tick()
    after = counts(mem.conn)
    for table in ("objects", "object_versions", "evidence", "receipts"):
        assert after[table] == saved[table]
    assert mem.read_object("person:ursula")["total_links"] == 1
    row = queue_row(mem.conn, two_pages)
    assert (row["state"], row["page_cursor"], row["progress"]) == (
        "blocked", 8_000, "read up to char 8000")


# -- a long event, page by page -----------------------------------------------------------------


class Killed(BaseException):
    """Simulates the worker process dying in the middle of a batch."""


def long_text() -> str:
    sentence = "Xavier documents the data-center move, rack by rack, with dates and owners. "
    return (sentence * 500)[:32_000]


def test_a_32000_char_event_is_read_in_four_pages_with_checkpoints(mem: Memory) -> None:
    (event_id,) = add_archived(mem, long_text())
    mem.organize()
    seen: list[dict] = []

    def step(messages, tools, max_out):
        data = payload(messages)
        seen.append(data)
        page = data["page"]
        return commit_organize(
            event_id, "linked" if page["last"] else "continue",
            progress=None if page["last"] else f"pages to {page['end']} read",
            objects=[] if seen[:-1] else [obj("knowledge:dc-move", "data-center move")],
            evidence=[evidence("knowledge:dc-move", event_id, page["start"],
                               page["start"] + 20)])

    worker, provider = make_worker(mem, [step] * 4)
    actions = [worker.tick().action for _ in range(5)]
    assert actions == ["committed"] * 4 + ["idle"]
    assert [(d["page"]["start"], d["page"]["end"]) for d in seen] == [
        (0, 8_000), (8_000, 16_000), (16_000, 24_000), (24_000, 32_000)]
    assert [d["progress"] for d in seen] == [None, "pages to 8000 read", "pages to 16000 read",
                                            "pages to 24000 read"]
    assert [d["page"]["last"] for d in seen] == [False, False, False, True]
    assert "".join(d["page"]["text"] for d in seen) == long_text()
    assert queue_row(mem.conn, event_id)["state"] == "linked"
    assert count(mem.conn, "evidence", f"event_id = {event_id}") == 4


def test_a_crash_between_pages_resumes_from_the_saved_checkpoint(
    mem: Memory, home: Path, clock: ManualClock,
) -> None:
    (event_id,) = add_archived(mem, long_text())
    mem.organize()
    seen: list[dict] = []

    def page_step(messages, tools, max_out):
        data = payload(messages)
        seen.append(data)
        page = data["page"]
        if page["last"]:
            return commit_organize(event_id, "archive_only", reason="a log, nothing durable")
        return commit_organize(event_id, "continue", progress=f"pages to {page['end']} read")

    def die(messages, tools, max_out):
        raise Killed()

    worker, _ = make_worker(mem, [page_step, page_step, die], holder="dead-worker")
    assert worker.tick().action == "committed"
    assert worker.tick().action == "committed"
    with pytest.raises(Killed):
        worker.tick()
    # A killed process never releases its lease: put it back as the dead worker left it.
    acquire_lease(mem.conn, "dead-worker", clock.now(), 360)
    checkpoint = queue_row(mem.conn, event_id)
    assert (checkpoint["state"], checkpoint["page_cursor"], checkpoint["progress"]) == (
        "continue", 16_000, "pages to 16000 read")
    mem.close()

    fresh_mem = Memory.open(home, clock=clock)
    fresh, _ = make_worker(fresh_mem, [page_step] * 4, holder="fresh-worker")
    assert fresh.tick().action == "waiting"
    clock.advance(seconds=361)
    results = [fresh.tick() for _ in range(4)]
    assert [r.action for r in results] == ["committed"] * 3 + ["idle"]
    resumed = seen[2:]
    assert resumed[0]["page"]["start"] == 16_000
    assert resumed[0]["progress"] == "pages to 16000 read"
    pages = [(d["page"]["start"], d["page"]["end"]) for d in seen]
    assert pages[0][0] == 0 and pages[-1][1] == 32_000
    assert all(a[1] == b[0] for a, b in zip(pages, pages[1:], strict=False))  # no gap, no overlap
    assert batch_row(fresh_mem.conn, results[0].batch_id)["claim"]["page_chars"] == 4_000
    assert queue_row(fresh_mem.conn, event_id)["state"] == "archive_only"
    assert count(fresh_mem.conn, "receipts") == 5
    assert count(fresh_mem.conn, "events") == 1
    fresh_mem.close()


def test_configured_progress_and_reason_limits_apply(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, "[organize]\nprogress_max_chars = 20\nreason_max_chars = 10\n")
    (event_id,) = add_archived(mem, TEN_K)
    (short,) = add_archived(mem, "ok then")
    mem.organize()
    result, provider = one_batch(
        mem, commit_organize(event_id, "continue", progress="p" * 21),
        commit_organize(event_id, "continue", progress="p" * 20))
    assert result.action == "committed" and fields(provider) == ["events.0.progress"]
    clock.advance(seconds=1)
    one_batch(mem, cite_page("knowledge:cal", "calendar"))
    result, provider = one_batch(
        mem, commit_organize(short, "archive_only", reason="r" * 11),
        commit_organize(short, "archive_only", reason="r" * 10))
    assert result.action == "committed" and fields(provider) == ["events.0.reason"]
    mem.close()


def test_the_related_objects_of_a_claim_are_read_in_one_statement(mem: Memory) -> None:
    """A page naming many objects reads them together, not one query each, and the
    payload keeps their order (objects citing the event first, then the named ones)."""
    names = ["Ada", "Grace", "Alan", "Edsger", "Barbara"]
    for name in names:
        put_object(mem, f"person:{name.lower()}", name, body=f"{name} is a colleague")
    (event_id,) = add_archived(mem, "Ada, Grace, Alan, Edsger and Barbara met today.")
    mem.organize()
    seen: list[dict[str, Any]] = []
    statements: list[str] = []
    mem.conn.set_trace_callback(statements.append)
    result, _ = one_batch(mem, organize_step(
        lambda data: {"outcome": "archive_only", "reason": "a meeting, nothing durable"}, seen))
    mem.conn.set_trace_callback(None)
    assert result.action == "committed"
    assert {o["id"] for o in seen[0]["related"]} == {f"person:{n.lower()}" for n in names}
    assert len([s for s in statements if s.startswith("SELECT * FROM objects WHERE id")]) == 1


# -- the rest of the tick (claim, prompt, validation) reads once --------------------------------


def tick_statements(mem: Memory, build: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """The SQL statements of one organize tick whose model commits what `build` returns."""
    seen: list[dict[str, Any]] = []
    statements: list[str] = []
    mem.conn.set_trace_callback(statements.append)
    try:
        result, _ = one_batch(mem, organize_step(build, seen))
    finally:
        mem.conn.set_trace_callback(None)
    assert result.action == "committed", result.error
    return statements, seen


def test_a_fresh_claim_and_its_prompt_read_the_event_and_its_names_once(mem: Memory) -> None:
    """The prompt of a claim made in the same tick reuses what the claim read of the event (its
    row, progress, citing objects, and the objects its whole text names): only the commit,
    which is the check, reads them again."""
    put_object(mem, "person:ada", "Ada", body="Ada keeps the build green")
    (event_id,) = add_archived(mem, "Ada said the build is green again.")
    mem.organize()
    statements, seen = tick_statements(mem, lambda data: {
        "outcome": "linked", "evidence": [evidence("person:ada", data["event"]["id"], 0, 3)]})

    def counted(prefix: str) -> int:
        return len([s for s in statements if s.startswith(prefix)])

    # Before: 5 event reads (claim 3, prompt 1, commit 1), 3 name lookups and 3 citer reads
    # (claim, prompt, commit), and the progress read again by the prompt.
    # Now: the claim's read and the commit's (its check), both through the timeline's owner.
    assert counted("SELECT") and counted("SELECT * FROM events WHERE id") == 2
    assert len([s for s in statements if " FROM events WHERE id = " in s]) == 2
    assert len([s for s in statements if "FROM object_names" in s]) == 2
    assert counted("SELECT DISTINCT object_id FROM evidence WHERE event_id") == 1
    assert counted("SELECT progress FROM archive_queue") == 0
    assert [o["id"] for o in seen[0]["related"]] == ["person:ada"]
    assert seen[0]["event"]["id"] == event_id and seen[0]["targets"] == []


def test_a_prompt_built_from_the_claim_equals_one_read_afresh(
    mem: Memory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every prompt the worker builds is the same as a mode with nothing kept from the claim
    builds for that batch: a single page naming objects, both pages of a long event (the
    second has targets and progress) and a page holding the memory's own output."""
    real = organize_module.OrganizeMode.prompt
    compared: list[int] = []
    sent: list[dict[str, Any]] = []

    def checked(self: Any, ctx: Any, reads: Any = None) -> Any:
        assert reads is not None  # each batch here is claimed in its own tick
        built = real(self, ctx, reads)
        afresh = real(self, ctx, None)
        assert afresh == built
        compared.append(ctx.batch.claim.event_id)
        sent.append(payload(built.messages))
        return built

    monkeypatch.setattr(organize_module.OrganizeMode, "prompt", checked)
    put_object(mem, "person:ursula", "Ursula", body="Ursula keeps the release calendar")
    put_object(mem, "person:ada", "Ada", body="- role: keeps the build green, every day of it")
    long_id, short_id = add_archived(mem, TEN_K, "Ada and Ursula shipped the release.")
    # quotes Ada's stored body (memory output), around words of its own
    (mixed_id,) = add_archived(mem, "Ada wrote back; memory says: - role: keeps the build "
                                    "green, every day of it. Then we went out for lunch.")
    mem.organize()
    first = {"outcome": "continue", "progress": "page one read",
             "objects": [obj("knowledge:cal", "calendar", body="release calendar")],
             "evidence": [evidence("knowledge:cal", long_id)]}
    result, _ = one_batch(mem, organize_step(lambda data: first))
    assert result.action == "committed", result.error
    clock.advance(seconds=1)
    for _ in range(3):
        result, _ = one_batch(mem, organize_step(lambda data: {
            "outcome": "linked", "evidence": [evidence(
                "person:ada", data["event"]["id"], data["page"]["start"],
                data["page"]["start"] + 3)]}))
        assert result.action == "committed", result.error
        clock.advance(seconds=1)
    assert compared == [long_id, long_id, short_id, mixed_id]
    assert sent[1]["progress"] == "page one read" and sent[1]["targets"] == ["knowledge:cal"]
    assert {o["id"] for o in sent[2]["related"]} == {"person:ursula", "person:ada"}
    assert "memory_output" in sent[3] and "memory_output" not in sent[2]


def test_a_proposal_checks_only_undeclared_field_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Field names the schema declares are fixed text with no secret: validating a proposal
    scans none of them (before: every key of every item was checked twice), and an undeclared
    name is still refused, a surrogate or secret in it first."""
    from memvault.objects import proposals

    scanned: list[str] = []
    real = proposals.find_lone_surrogate
    monkeypatch.setattr(proposals, "find_lone_surrogate",
                        lambda text: scanned.append(text) or real(text))
    proposal = {"objects": [obj("person:ada", "Ada", summary="engineer", body="keeps builds")],
                "relations": [{"src": "person:ada", "label": "knows", "dst": "person:bob"}],
                "evidence": [evidence("person:ada", 1)],
                "events": [{"event_id": 1, "outcome": "linked"}]}
    proposals.OrganizeProposal.model_validate(proposal)
    declared = {name for model in (proposals.OrganizeProposal, proposals.ObjectWrite,
                                   proposals.RelationWrite, proposals.EvidenceWrite,
                                   proposals.Disposition) for name in model.model_fields}
    assert scanned and not declared & set(scanned)
    for key, message in (("note\ud800", "lone UTF-16 surrogate"),
                         ("sk-" + "a1B2c3D4" * 6, "looks like"), ("colour", "Extra inputs")):
        with pytest.raises(ValueError, match=message):
            proposals.OrganizeProposal.model_validate({**proposal, key: 1})


def test_the_claim_takes_the_oldest_waiting_event_without_sorting_the_backlog(
    mem: Memory, clock: ManualClock,
) -> None:
    """Claim order is enqueued_at, then event id, across pending and continue events, skipping
    held and finished ones; the claim reads the waiting events along their index, never
    sorting every waiting row to find the first (before: a temp B-tree per claim)."""
    ids = add_archived(mem, *[f"note {i}" for i in range(6)])  # all enqueued at one instant
    stamps = {ids[0]: 3, ids[1]: 1, ids[2]: 1, ids[3]: 2, ids[4]: 0, ids[5]: 1}
    states = {ids[0]: "continue", ids[1]: "pending", ids[2]: "continue", ids[3]: "pending",
              ids[4]: "linked", ids[5]: "pending"}
    with write(mem.conn):
        for event_id in ids:
            mem.conn.execute(
                "UPDATE archive_queue SET state = ?, enqueued_at = ? WHERE event_id = ?",
                (states[event_id], f"2026-01-0{stamps[event_id] + 1}T00:00:00+00:00", event_id))
    mode = organize_module.OrganizeMode()
    job = get_job(mem.conn, mem.organize()["job_id"])
    order: list[int] = []
    statements: list[str] = []
    mem.conn.set_trace_callback(statements.append)
    with write(mem.conn):
        while (claimed := mode.next_claim(mem.conn, job, mem.config, clock.now())) is not None:
            claim = claimed.fields
            order.append(claim.event_id)
            # held by an open batch from now on, as the worker's claim would record it
            mem.conn.execute("INSERT INTO batches (job_id, state, claim, base_revision,"
                             " claimed_at) VALUES (?, 'claimed', ?, 0, ?)",
                             (job.id, json.dumps(claim.to_json()), clock.now().isoformat()))
        mem.conn.execute("DELETE FROM batches")
    mem.conn.set_trace_callback(None)
    assert order == [ids[1], ids[2], ids[5], ids[3], ids[0]]
    (waiting,) = {s for s in statements if s.startswith("SELECT") and "FROM archive_queue" in s}
    plan = " ".join(r[3] for r in mem.conn.execute("EXPLAIN QUERY PLAN " + waiting))
    assert "TEMP B-TREE" not in plan, plan


@pytest.mark.parametrize("outcome", ["linked", "archive_only"])
def test_a_terminal_failure_or_the_engines_verdict_never_overwrites_a_settled_event(
    mem: Memory, outcome: str,
) -> None:
    # Issue 35's audit: `AND state IN ('pending', 'continue')` dropped from block_event or from
    # settle_archive_only (engine/timeline/queue.py) survived every test.
    from memvault.timeline.queue import block_event, record_outcome, settle_archive_only

    (event_id,) = add_archived(mem, "Nora moved to Lisbon in May.")
    now = mem.clock.now()
    with write(mem.conn):
        record_outcome(mem.conn, event_id, outcome, 28, None, "settled by organize", now)
    settled = queue_row(mem.conn, event_id)
    with write(mem.conn):
        block_event(mem.conn, event_id, 99, now)  # a stale batch of the event ends terminal
        settle_archive_only(mem.conn, event_id, 28, "wholly memory output", now)
    assert queue_row(mem.conn, event_id) == settled
    assert settled["state"] == outcome and settled["blocked_batch"] is None
