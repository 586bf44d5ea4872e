"""The builtin model and the memory's own output quoted back: a repeated turn never blocks.

When a turn repeats an earlier turn's sentence verbatim (40 chars or more), the engine marks that
sentence as memory output (stored text quoted back) in the claim's `memory_output` and refuses
evidence citing it. The builtin reads those spans: it finds nothing in them and cites nothing
in them, so the event ends `archive_only` (or `linked` by the words around the quote) on the
first proposal. A builtin that did not see the spans still recovers within the same batch: the
correction names the range, and the next proposal drops every citation of it and the objects
and relations left without one. Every test runs the real flow: append, compact, organize.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memvault import Memory
from memvault.models.base import Message, ModelReply, ToolSpec
from memvault.models.builtin import BuiltinProvider, organize
from memvault.timeline.events import NewEvent
from modes_support import compact_then_organize

TODO = "TODO: send Lighthouse the invoice #1 and confirm the garden plan by Friday."
# Makes the candidate project Lighthouse after the TODO: a repeat of the TODO then proposes it
# member_of the project, a write the first TODO did not make.
PROJECT = "Remind me to call Carol Diaz about project Lighthouse, milestone 7."
TODO_ZH = "TODO: send 陈静 the invoice #123 and confirm the garden plan by Friday."


class Watched(BuiltinProvider):
    """The builtin, keeping every organize call's messages and answer (what it proposed)."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Message], ModelReply]] = []

    def complete(self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int,
                 deadline_s: float | None = None) -> ModelReply:
        reply = super().complete(messages, tools, max_output_tokens, deadline_s)
        if any(t.name == "commit_organize" for t in tools):
            self.calls.append((list(messages), reply))
        return reply

    def corrections(self, event_id: int) -> list[str]:
        return [json.loads(str(m["content"]))["error"] for messages, _ in self.calls
                if json.loads(str(messages[1]["content"]))["event"]["id"] == event_id
                for m in messages[-1:] if m.get("role") == "tool"]


class Unseeing(Watched):
    """The builtin on a payload with its `memory_output` taken away: a model that missed it,
    so only the engine's refusal tells it."""

    def complete(self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int,
                 deadline_s: float | None = None) -> ModelReply:
        first = json.loads(str(messages[1]["content"]))
        first.pop("memory_output", None)
        shown = [*messages[:1], {**messages[1], "content": json.dumps(first)}, *messages[2:]]
        return super().complete(shown, tools, max_output_tokens, deadline_s)


def organize_turns(mem: Memory, turns: list[str], provider: BuiltinProvider) -> list[int]:
    """Append the turns as the user's (one minute apart), compact, organize; the event ids."""
    ids = mem.append_events([NewEvent(text, f"2026-12-04T09:{i:02d}:00Z", "user", "message")
                             for i, text in enumerate(turns)])
    compact_then_organize(mem, provider)
    return ids


def queue(conn: sqlite3.Connection, event_id: int) -> dict[str, Any]:
    return dict(conn.execute("SELECT state, reason FROM archive_queue WHERE event_id = ?",
                             (event_id,)).fetchone())


def batches_of(conn: sqlite3.Connection, event_id: int) -> list[tuple[str, int]]:
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT state, failures FROM batches WHERE json_extract(claim, '$.event_id') = ?",
        (event_id,))]


def cited(conn: sqlite3.Connection, event_id: int) -> list[tuple[str, int, int]]:
    return [(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT object_id, start_char, end_char FROM evidence WHERE event_id = ?"
        " ORDER BY start_char", (event_id,))]


def test_a_todo_said_again_with_a_tag_ends_archive_only_on_the_first_proposal(
        mem: Memory) -> None:
    provider = Watched()
    first, _, again = organize_turns(mem, [TODO, PROJECT, f"{TODO} [cli-1-1 a8e4a8231b46]"],
                                     provider)
    conn = mem.conn
    assert queue(conn, first)["state"] == "linked"
    assert queue(conn, again)["state"] == "archive_only"
    assert "memory output" in queue(conn, again)["reason"]
    assert batches_of(conn, again) == [("committed", 0)]
    assert provider.corrections(again) == []  # the first proposal was the right one
    assert cited(conn, again) == []
    assert conn.execute("SELECT COUNT(*) FROM archive_queue WHERE state = 'blocked'"
                        ).fetchone()[0] == 0


def test_a_todo_naming_a_chinese_name_said_again_is_not_blocked(mem: Memory) -> None:
    provider = Watched()
    first, again = organize_turns(
        mem, [f"{TODO_ZH} [mcp-0-123 40a79706e9f4]", f"{TODO_ZH} [mcp-6-123 ea913c5a4976]"],
        provider)
    conn = mem.conn
    assert queue(conn, first)["state"] == "linked"
    assert queue(conn, again)["state"] == "archive_only"
    assert provider.corrections(again) == []
    assert batches_of(conn, again) == [("committed", 0)]


def test_the_words_around_a_repeated_sentence_still_count_and_are_cited_outside_it(
        mem: Memory) -> None:
    provider = Watched()
    new = "Remind me to call Carol Diaz about the garden budget."
    first, again = organize_turns(mem, [TODO, f"{TODO} {new}"], provider)
    conn = mem.conn
    assert queue(conn, again)["state"] == "linked"
    assert provider.corrections(again) == []
    citations = cited(conn, again)
    assert citations and all(start >= len(TODO) for _, start, _ in citations)
    assert any(object_id.startswith("todo:remind-me-to-call-carol-diaz")
               or object_id.startswith("todo:call-carol-diaz") for object_id, _, _ in citations)
    # the repeated TODO is not made a second time
    assert conn.execute("SELECT COUNT(*) FROM objects WHERE name LIKE '%invoice #1 %'"
                        ).fetchone()[0] == 1


def test_a_sentence_that_runs_into_a_repeated_one_is_not_cited_nor_written(mem: Memory) -> None:
    provider = Watched()
    first, again = organize_turns(mem, [TODO, f"Remember that {TODO} Thanks"], provider)
    conn = mem.conn
    assert queue(conn, again)["state"] == "archive_only"
    assert provider.corrections(again) == []
    assert cited(conn, again) == []
    assert conn.execute("SELECT COUNT(*) FROM objects WHERE type = 'knowledge'").fetchone()[0] == 0


def test_a_model_that_missed_the_memory_output_recovers_in_the_same_batch(
        mem: Memory) -> None:
    provider = Unseeing()
    first, _, again = organize_turns(mem, [TODO, PROJECT, f"{TODO} [cli-1-1 a8e4a8231b46]"],
                                     provider)
    conn = mem.conn
    # the TODO came before the project: its member_of is new in the repeat's proposal
    assert conn.execute("SELECT COUNT(*) FROM relations WHERE src_id = ?",
                        (cited(conn, first)[0][0],)).fetchone()[0] == 0
    assert queue(conn, again)["state"] == "archive_only"
    errors = provider.corrections(again)
    # one correction, then accepted: the citation and the relation of its object both gone
    assert len(errors) == 1 and "memory output" in errors[0]
    assert batches_of(conn, again) == [("committed", 0)]
    assert cited(conn, again) == []


def test_a_model_that_missed_the_memory_output_keeps_what_it_cited_outside_it(
        mem: Memory) -> None:
    provider = Unseeing()
    new = "Remind me to call Carol Diaz about the garden budget."
    first, again = organize_turns(mem, [TODO, f"{TODO} {new}"], provider)
    conn = mem.conn
    assert queue(conn, again)["state"] == "linked"
    assert len(provider.corrections(again)) == 1
    citations = cited(conn, again)
    assert citations and all(start >= len(TODO) for _, start, _ in citations)


def test_archive_only_refused_for_uncited_writes_is_resubmitted_without_them() -> None:
    # The second line of defence on its own: an archive_only the engine refused because the
    # proposal still wrote a relation gets a proposal with no write at all.
    payload = {"event": {"id": 52}, "page": {"start": 0, "end": 98, "last": True},
               "targets": []}
    previous = {"objects": [], "relations": [{"src": "todo:a", "label": "member_of",
                                              "dst": "project:b"}],
                "evidence": [], "core_files": [],
                "events": [{"event_id": 52, "outcome": "archive_only", "reason": "nothing"}]}
    error = ("events.0.outcome: event 52 already has object targets (evidence, objects, "
             "relations or core files written for it); it cannot be archive_only (cite it and "
             "use linked)")
    fixed = organize.correct(payload, previous, "events.0.outcome", error)
    assert fixed["relations"] == [] and fixed["objects"] == [] and fixed["evidence"] == []
    assert fixed["events"][0]["outcome"] == "archive_only"
    # with targets the event already has, the same correction ends it linked
    fixed = organize.correct({**payload, "targets": ["todo:a"]}, previous, "events.0.outcome",
                             error)
    assert fixed["events"][0]["outcome"] == "linked"
