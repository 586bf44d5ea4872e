"""The value said latest is current, whatever order events are organized in (objects/latest.py).

`memvault import` brings old history in any order, so a statement said earlier can be
organized after one said later. A person's role, a schedule's day and state and a todo's state
are then what was said LAST (by the events' occurred_at): an organize write whose event is older
than the one that set the current value keeps that value, and its own older one becomes a
`- history:` line, so a person still sees both, in the body and in the object's versions. This
holds for any model's write (a scripted one below), a person's edit included.

Rule guard: in engine/objects/latest.py `keep_latest`, `older = []` (the check skipped) left
every other test passing and fails these; `said.micros < current.micros` changed to `>` fails
these (and builtin tests of changes in order). In engine/models/builtin/organize.py, the role
change's `event.get("source") in ("user", None)` left out, and separately the role changes read
from the page text before the memory's output is blanked, left every other test passing and
fail test_the_builtin_applies_a_role_change_only_from_the_users_own_words. Each mutation was
run and the code restored.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from io import BytesIO
from typing import Any

from memvault import Memory
from memvault.home.chat_import import import_export
from memvault.models.builtin import BuiltinProvider
from memvault.models.builtin import organize as builtin_organize
from memvault.objects.corrections import Correction, ProfileEdit
from memvault.objects.records import get_object
from memvault.objects.versions import object_history
from memvault.timeline.events import NewEvent
from modes_support import (
    archive,
    compact_then_organize,
    make_worker,
    organize_step,
    put_object,
    run_until_idle,
)
from test_builtin_changes import obj


def organize_said(mem: Memory, turns: list[tuple[str, str]]) -> list[int]:
    """Append (text, occurred_at) turns in the order given (the order they are organized in),
    compact and organize them with the builtin model; the event ids."""
    ids = mem.append_events([NewEvent(text, at, "user", "message", None) for text, at in turns])
    compact_then_organize(mem, BuiltinProvider())
    return ids


def bodies(conn: sqlite3.Connection, object_id: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT body FROM object_versions WHERE object_id = ? ORDER BY version", (object_id,))]


MANAGER = ("Tom Baker has been promoted to engineering manager.", "2026-03-05T09:00:00Z")
SENIOR = ("Tom Baker has been promoted to senior engineer.", "2025-06-05T09:00:00Z")


def test_a_role_said_earlier_but_organized_later_is_kept_as_history(mem: Memory) -> None:
    organize_said(mem, [MANAGER, SENIOR])
    tom = obj(mem.conn, "person:tom-baker")
    lines = tom["body"].splitlines()
    assert "- role: engineering manager" in lines
    assert tom["summary"] == "Tom Baker — engineering manager"
    history = [line for line in lines if line.startswith("- history:")]
    assert history == ["- history: role senior engineer was said on 2025-06-05, before the "
                       "current one (said on 2026-03-05)"]
    # both are readable in the versions; no version ever had the older role as current
    versions = bodies(mem.conn, "person:tom-baker")
    assert len(versions) == 2 and all("- role: engineering manager" in b for b in versions)
    assert "senior engineer" in versions[1]


def test_the_same_roles_organized_in_the_order_said_make_the_later_one_current(
        mem: Memory) -> None:
    organize_said(mem, [SENIOR, MANAGER])
    tom = obj(mem.conn, "person:tom-baker")
    assert "- role: engineering manager" in tom["body"].splitlines()
    assert "- history: until 2026-03-05: role was senior engineer" in tom["body"]
    assert any("- role: senior engineer" in b for b in bodies(mem.conn, "person:tom-baker"))


def test_a_cancellation_organized_before_its_plan_keeps_the_plan_cancelled(
        mem: Memory) -> None:
    organize_said(mem, [("The dentist appointment is cancelled.", "2026-10-20T09:00:00Z"),
                        ("The dentist appointment is on 2026-10-28.", "2026-10-01T09:00:00Z")])
    mem.clock.advance(days=30)  # 2026-11-12: its day has gone, and it still reads cancelled
    [plan] = [o for o in mem.list_objects("schedule")]
    assert (plan["id"], plan["state"]) == ("schedule:dentist-appointment", "cancelled")
    lines = plan["body"].splitlines()
    assert "- time rule: 2026-10-28" in lines and "- state: cancelled" in lines
    assert "- history: state scheduled (one-off) was said on 2026-10-01, before the current one" \
           " (said on 2026-10-20)" in lines
    assert [v["state"] for v in object_history(mem.conn, plan["id"])] == ["cancelled"] * 2


def _dentist(state: str, line: str) -> dict[str, Any]:
    return {"id": "schedule:dentist", "name": "Dentist", "summary": "Dentist — 2026-10-28",
            "state": state, "body": f"- time rule: 2026-10-28\n- item: dentist\n- state: {line}"}


def _real_model_write(payload: dict[str, Any]) -> dict[str, Any]:
    """What a real model might write for each event: the state the event says, whole."""
    event = payload["event"]
    cancelled = "cancelled" in payload["page"]["text"]
    write = _dentist("cancelled", "cancelled") if cancelled else _dentist(
        "scheduled", "scheduled (one-off)")
    return {"objects": [write], "outcome": "linked", "evidence": [
        {"object_id": "schedule:dentist", "event_id": event["id"], "start": 0, "end": 10}]}


def test_any_models_older_write_does_not_replace_the_state_said_later(mem: Memory) -> None:
    ids = mem.append_events([
        NewEvent("Dentist is cancelled.", "2026-10-20T09:00:00Z", "user", "message", None),
        NewEvent("Dentist on 2026-10-28.", "2026-10-01T09:00:00Z", "user", "message", None)])
    archive(mem, ids)
    mem.organize()
    worker, _ = make_worker(mem, [organize_step(_real_model_write)] * 2)
    run_until_idle(worker)
    dentist = get_object(mem.conn, "schedule:dentist")
    assert dentist.state == "cancelled"
    assert dentist.body.splitlines()[2] == "- state: cancelled"
    assert dentist.body.splitlines()[-1].startswith(
        "- history: state scheduled (one-off) was said on 2026-10-01")
    assert [v["origin"] for v in object_history(mem.conn, "schedule:dentist")] == ["model"] * 2


def test_a_persons_edit_stands_against_older_history_and_yields_to_newer(mem: Memory) -> None:
    put_object(mem, "schedule:dentist-appointment", "dentist appointment",
               body="- time rule: 2026-10-28\n- item: dentist appointment\n"
                    "- state: scheduled (one-off)", state="scheduled")
    mem.correct(Correction("edit", ["schedule:dentist-appointment"],
                           ProfileEdit(state="cancelled")))  # made now: 2026-10-13
    organize_said(mem, [("The dentist appointment is on 2026-10-28.",
                         "2026-10-05T09:00:00Z")])  # said before the edit
    assert get_object(mem.conn, "schedule:dentist-appointment").state == "cancelled"
    organize_said(mem, [("So the dentist appointment is on 2026-10-28 after all.",
                         "2026-10-14T09:00:00Z")])  # said after it: current again
    assert get_object(mem.conn, "schedule:dentist-appointment").state == "scheduled"


def test_the_builtin_applies_a_role_change_only_from_the_users_own_words() -> None:
    """Not from the assistant's echo, nor from the memory's own output quoted back (the
    quote's sentence is blank to the rules even when the page names him again after it)."""
    said = "Tom Baker has been promoted to engineering manager."
    text = said + " Tom Baker said he is in Leeds this week."
    related = [{"id": "person:tom-baker", "type": "person", "name": "Tom Baker", "aliases": [],
                "summary": "Tom Baker — senior engineer", "cues": [], "status": "active",
                "version": 1, "body": "- identity: unknown\n- role: senior engineer"}]

    def role(source: str, quoted: bool) -> str:
        payload = {"mode": "organize", "event": {
            "id": 7, "occurred_at": "2026-03-05T09:00:00Z", "source": source,
            "kind": "message", "meta": {}, "chars": len(text)},
            "page": {"start": 0, "end": len(text), "last": True, "text": text},
            "progress": None, "targets": [], "related": related,
            "memory_output": [{"start": 0, "end": len(said), "what": "memory_find"}]
            if quoted else []}
        proposal, _ = builtin_organize.build(payload)
        written = {o["id"]: o for o in proposal["objects"]}
        body = written.get("person:tom-baker", related[0])["body"]
        return next(line for line in body.splitlines() if line.startswith("- role:"))

    assert role("user", quoted=False) == "- role: engineering manager"
    assert role("assistant", quoted=False) == "- role: senior engineer"
    assert role("user", quoted=True) == "- role: senior engineer"




def _conversation(cid: str, at: str, texts: list[str]) -> dict[str, Any]:
    """One ChatGPT conversation of user turns, a minute apart from `at`."""
    stamp = datetime.fromisoformat(at).timestamp()
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None,
                                        "children": []}}
    parent = "root"
    for i, text in enumerate(texts):
        node = f"{cid}-{i}"
        mapping[parent]["children"].append(node)
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": "user"}, "create_time": stamp + 60 * i,
            "content": {"content_type": "text", "parts": [text]}}}
        parent = node
    return {"id": cid, "title": cid, "create_time": stamp, "mapping": mapping,
            "current_node": parent}


def test_imported_history_listed_newest_first_ends_with_what_was_said_last(
        mem: Memory) -> None:
    """A ChatGPT export lists the newest conversation first: organized in that order, the
    older statements still end up as history."""
    export = [_conversation("late", "2026-03-05T09:00:00+00:00", [
                  MANAGER[0], "The dentist appointment is cancelled."]),
              _conversation("early", "2025-06-05T09:00:00+00:00", [
                  SENIOR[0], "The dentist appointment is on 2025-06-20."])]
    import_export(mem, "chatgpt", BytesIO(json.dumps(export).encode()), "conversations.json")
    mem.organize(wait=True)
    states = {o["id"]: o["state"] for o in mem.list_objects("schedule")}
    assert states == {"schedule:dentist-appointment": "cancelled"}
    assert "- role: engineering manager" in get_object(mem.conn, "person:tom-baker").body
