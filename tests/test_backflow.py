"""Source anti-backflow. The memory's own output appended back as events (a
memory_find / memory_read / memory_evidence result, a vault file, a status dump, a failure
notice, the resident context) is kept but never becomes evidence nor strengthens an object:
evidence citing it is refused naming `evidence.N`, an event that is wholly memory output ends
archive_only by the engine's decision, and the agent's own words around a recalled passage still
count. Before the fix, four such events grew an object's evidence from 1 event to 5."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import ManualClock, Memory
from memvault.jobs.modes import backflow
from memvault.jobs.modes import organize as organize_module
from memvault.models.builtin import BuiltinProvider
from memvault.vault.paths import object_path
from memvault.vault.projector import project_vault
from modes_support import (
    add_archived,
    archive,
    commit_organize,
    errors_seen,
    make_worker,
    obj,
    organize_step,
    put_object,
    queue_row,
    run_until_idle,
)

TOM = "person:tom-becker"


def builtin_pass(mem: Memory) -> None:
    """Compact everything, then organize it, with the builtin offline model."""
    worker = mem.worker(BuiltinProvider())
    mem.compact()
    run_until_idle(worker)
    mem.organize()
    run_until_idle(worker)


def cited_events(mem: Memory, object_id: str) -> list[int]:
    return sorted({r[0] for r in mem.conn.execute(
        "SELECT event_id FROM evidence WHERE object_id = ?", (object_id,))})


def vault_text(mem: Memory, home: Path, object_id: str) -> str:
    project_vault(mem.conn, home / "vault", limit=None)
    return (home / "vault" / object_path(object_id)).read_text(encoding="utf-8")


def test_memory_output_appended_back_never_becomes_evidence(
    mem: Memory, home: Path, clock: ManualClock,
) -> None:
    mem.append_event("Tom Becker is our DevOps lead. He runs the deploys on Fridays.")
    builtin_pass(mem)
    assert cited_events(mem, TOM) == [1]
    version = mem.read(TOM)["object"]["version"]
    echoes = {
        "memory_read": json.dumps(mem.read(TOM), ensure_ascii=False, indent=2),
        "vault file": vault_text(mem, home, TOM),
        "status (JSON)": json.dumps(mem.status(), ensure_ascii=False),
        "status (text)": run_cli(CliRunner(), "status").output,
        "memory_find": json.dumps(mem.find("Tom Becker"), ensure_ascii=False),
        "memory_evidence": json.dumps(mem.evidence(TOM), ensure_ascii=False),
        "resident context": json.dumps(mem.resident_context(), ensure_ascii=False),
    }
    ids = {name: mem.append_event(text, source="agent") for name, text in echoes.items()}
    ids["failure notice"] = mem.append_event(
        "organize job 2 ended partial: event 1 is blocked (provider down)",
        source="memvault", kind="memory_notice")
    calls_before = mem.conn.execute("SELECT COUNT(*) FROM model_calls WHERE mode = 'organize'"
                                    ).fetchone()[0]
    clock.advance(seconds=60)
    builtin_pass(mem)
    # Before the fix: evidence from events [1, 3, 6, 7] (and more with other models).
    assert cited_events(mem, TOM) == [1]
    assert mem.read(TOM)["object"]["version"] == version  # not rewritten either
    for name, event_id in ids.items():
        row = queue_row(mem.conn, event_id)
        assert row["state"] == "archive_only", name
        assert row["reason"].startswith("memory output:"), (name, row["reason"])
        assert "decided by the engine" in row["reason"]
        assert mem.read_event(event_id)["text"]  # kept, nothing deleted
    # The engine decided: no organize call was spent on any of them.
    assert mem.conn.execute("SELECT COUNT(*) FROM model_calls WHERE mode = 'organize'"
                            ).fetchone()[0] == calls_before


def mixed_event(mem: Memory) -> tuple[int, str, int]:
    """The agent's own words, then a memory_read answer it pasted: (event, text, json start)."""
    put_object(mem, TOM, "Tom Becker", body="- identity: Tom Becker is our DevOps lead")
    pasted = json.dumps(mem.read(TOM), ensure_ascii=False)
    own = "Tom Becker moved to the Berlin office today. For reference, memory says: "
    (event,) = add_archived(mem, own + pasted)
    mem.organize()
    return event, own + pasted, len(own)


def test_evidence_citing_a_recalled_passage_is_refused_naming_the_field(mem: Memory) -> None:
    event, text, cut = mixed_event(mem)
    seen: list[dict[str, Any]] = []

    def cite(start: int, end: int) -> Any:
        return organize_step(lambda d: {
            "outcome": "linked",
            "objects": [obj(TOM, "Tom Becker", body="- identity: DevOps lead, Berlin office")],
            "evidence": [{"object_id": TOM, "event_id": event, "start": 0, "end": 10},
                         {"object_id": TOM, "event_id": event, "start": start, "end": end}]},
            seen)

    worker, provider = make_worker(mem, [cite(cut + 5, cut + 40), cite(0, cut - 1)])
    result = worker.tick()
    assert result.action == "committed", (result, provider.history[-1]["messages"][-1])
    (error,) = errors_seen(provider)
    assert error["field"] == "evidence.1" and "memory output" in error["error"]
    assert "a memory_read result" in error["error"]
    # The claim told the model which chars are memory output.
    assert seen[0]["memory_output"] == [{"start": cut, "end": len(text),
                                         "what": "a memory_read result"}]
    # The agent's own words around the passage still count.
    assert cited_events(mem, TOM) == [event]
    assert queue_row(mem.conn, event)["state"] == "linked"


@pytest.mark.parametrize("pasted", [
    "---\nid: person:tom-becker\ntype: person\ntags:\n- memvault/person\n---",
    "- member_of → [[8ae72ae8c8d9fed5|Lighthouse]]",
    "- 2026-10-09T14:14:18+08:00 · event 55 · chars 47–103",
], ids=["front-matter", "relation-link", "source-line"])
def test_vault_pieces_in_the_agents_text_are_memory_output(pasted: str) -> None:
    from memvault.objects.provenance import is_wholly_memory, memory_spans

    own = "Tom said he will take over the Lighthouse deploys next week. From the vault:\n"
    spans = memory_spans(own + pasted + "\nThanks!")
    assert [(s.start, s.end) for s in spans] == [(len(own), len(own) + len(pasted))]
    assert not is_wholly_memory(own + pasted, spans)  # the agent's sentence is its own


def test_a_profile_quoted_at_length_is_memory_output(mem: Memory) -> None:
    line = "Runs the Friday deploys and owns the rollback checklist for every service"
    put_object(mem, TOM, "Tom Becker", body=f"- role: DevOps lead\n{line}")
    own = "Asked Tom Becker about the outage; "
    (event,) = add_archived(mem, own + line + ". He said the checklist was skipped.")
    mem.organize()
    end = len(own) + len(line)
    worker, provider = make_worker(mem, [
        commit_organize(event, "linked", evidence=[
            {"object_id": TOM, "event_id": event, "start": len(own), "end": end}]),
        commit_organize(event, "linked", evidence=[
            {"object_id": TOM, "event_id": event, "start": end, "end": end + 30}])])
    assert worker.tick().action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "evidence.0" and "stored memory text" in error["error"]
    assert cited_events(mem, TOM) == [event]  # only the new words are cited


def test_a_short_restatement_is_the_users_own_words(mem: Memory) -> None:
    put_object(mem, TOM, "Tom Becker", summary="Tom Becker — DevOps lead",
               body="- identity: Tom Becker is our DevOps lead")
    from memvault.objects.provenance import memory_spans

    text = "Tom Becker — DevOps lead, and now also on call for payments."
    assert memory_spans(text, ["Tom Becker — DevOps lead"]) == []  # under 40 chars


def test_a_notice_marked_by_kind_is_never_shown_to_the_model(mem: Memory) -> None:
    event = mem.append_event("Tom Becker: job 4 partial, see status", kind="memory_notice")
    archive(mem, [event])
    mem.organize()
    worker, provider = make_worker(mem, [])
    run_until_idle(worker)
    assert provider.history == []
    assert queue_row(mem.conn, event)["state"] == "archive_only"


# -- one span computation shared by claim and prompt ---------------------------------------------


def count_event_spans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the event of every memory-output span computation (claim, prompt, commit)."""
    calls: list[int] = []
    real = backflow.event_spans

    def counted(conn: Any, event_id: int, **known: Any) -> Any:
        calls.append(event_id)
        return real(conn, event_id, **known)

    monkeypatch.setattr(backflow, "event_spans", counted)
    monkeypatch.setattr(organize_module, "event_spans", counted)
    return calls


def cite_own_words(event: int, seen: list[dict[str, Any]]) -> Any:
    def build(data: dict[str, Any]) -> dict[str, Any]:
        last = data["page"]["last"]
        return {"outcome": "linked" if last else "continue",
                **({} if last else {"progress": "read the first page"}),
                "objects": [obj(TOM, "Tom Becker", body="- identity: DevOps lead")],
                "evidence": [{"object_id": TOM, "event_id": event, "start": 0, "end": 10}]}

    return organize_step(build, seen)


def test_claim_and_prompt_share_one_span_computation(
    mem: Memory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    event, text, cut = mixed_event(mem)
    calls = count_event_spans(monkeypatch)
    seen: list[dict[str, Any]] = []
    worker, _ = make_worker(mem, [cite_own_words(event, seen)])
    assert worker.tick().action == "committed"
    # Before the fix: three (claim, prompt, commit). The commit keeps its own check.
    assert calls == [event, event]
    assert seen[0]["memory_output"] == [{"start": cut, "end": len(text),
                                         "what": "a memory_read result"}]


def test_a_retried_claim_computes_its_spans_again(
    mem: Memory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch,
) -> None:
    event, text, cut = mixed_event(mem)
    seen: list[dict[str, Any]] = []
    worker, _ = make_worker(mem, [RuntimeError("model down"), cite_own_words(event, seen)])
    assert worker.tick().action == "failed"
    calls = count_event_spans(monkeypatch)
    clock.advance(seconds=200)
    result = worker.tick()
    assert result.action == "committed", result.error
    # The retry has no claim of its own in this tick: its prompt computes the spans itself
    # (for its shrunk page).
    assert calls == [event, event]
    end = seen[0]["page"]["end"]
    assert cut < end < len(text)
    assert seen[0]["memory_output"] == [{"start": cut, "end": end,
                                         "what": "a memory_read result"}]


def test_a_prompt_that_failed_to_build_leaves_no_spans_for_the_retry(
    mem: Memory, clock: ManualClock, monkeypatch: pytest.MonkeyPatch,
) -> None:
    event, _text, _cut = mixed_event(mem)
    seen: list[dict[str, Any]] = []
    real_related = organize_module.related_objects
    failures = [RuntimeError("related objects unreadable")]

    def related_once_broken(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return real_related(*args, **kwargs)

    monkeypatch.setattr(organize_module, "related_objects", related_once_broken)
    worker, _ = make_worker(mem, [cite_own_words(event, seen)])
    assert worker.tick().action == "failed"  # the claim computed spans; its prompt crashed
    calls = count_event_spans(monkeypatch)
    clock.advance(seconds=200)
    assert worker.tick().action == "committed"
    # the retry's prompt computed its own (for its shrunk page), then the commit its check
    assert calls == [event, event]
