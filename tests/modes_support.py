"""Shared helpers for the worker/mode tests (compact, organize, deep, scheduler, batch loop).

Everything runs on a real SQLite home in tmp_path with a ManualClock and the scripted provider;
nothing sleeps and nothing touches the network. Scripted steps are either fixed replies
(`call(...)`) or callables of (messages, tools, max_output_tokens) that read the batch's JSON
payload from messages[1]["content"].
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from helpers import count, write_config
from memvault import ManualClock, Memory
from memvault.jobs.worker import TickResult, Worker
from memvault.models.base import Message, ModelReply, Provider, ToolSpec
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write
from memvault.timeline.queue import enqueue_departed
from scripted_provider import ScriptedProvider, call

Step = Callable[[list[Message], list[ToolSpec], int], ModelReply]


def open_memory(home: Path, clock: ManualClock, toml: str = "") -> Memory:
    """Open a home, writing memvault.toml first when `toml` is given."""
    if toml:
        write_config(home, toml)
    return Memory.open(home, clock=clock)


def make_worker(mem: Memory, steps: Iterable[Any] = (), holder: str = "worker-a",
                scheduler: bool = False, **kwargs: Any) -> tuple[Worker, ScriptedProvider]:
    provider = ScriptedProvider(list(steps))
    return Worker(mem, provider, holder=holder, scheduler=scheduler, **kwargs), provider


def one_batch(mem: Memory, *steps: Any) -> tuple[TickResult, ScriptedProvider]:
    """Run one worker tick with the given model steps; return (result, provider)."""
    worker, provider = make_worker(mem, steps)
    return worker.tick(), provider


def payload(messages: list[Message]) -> dict[str, Any]:
    """The batch's JSON payload (the first user message)."""
    return json.loads(messages[1]["content"])


def tool_results(messages: list[Message]) -> list[dict[str, Any]]:
    """Every tool result sent back to the model so far, parsed."""
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


def errors_seen(provider: ScriptedProvider) -> list[dict[str, Any]]:
    """The corrections (tool results with an error) the model was shown, in order."""
    if not provider.history:
        return []
    return [r for r in tool_results(provider.history[-1]["messages"])
            if isinstance(r, dict) and "error" in r]


def run_until_idle(worker: Worker, limit: int = 1_000) -> list[TickResult]:
    """Tick until the worker reports idle/busy/waiting; return every result."""
    results = []
    for _ in range(limit):
        result = worker.tick()
        results.append(result)
        if result.action in ("idle", "busy", "waiting"):
            return results
    raise AssertionError(f"worker still busy after {limit} ticks")


def compact_then_organize(mem: Memory, provider: Provider, *extra: Callable[[], object],
                          limit: int = 200) -> None:
    """Request a compaction, then an organize (then each of `extra`), one worker running each
    until it goes idle: what an agent's organize request does, step by step."""
    worker = mem.worker(provider, scheduler=False)
    for request in (mem.compact, mem.organize, *extra):
        request()
        run_until_idle(worker, limit)


# -- events and the archive queue --------------------------------------------------------------


def archive(mem: Memory, event_ids: Iterable[int]) -> list[int]:
    """Take the events' fragments off the hot timeline and queue them (as compaction would)."""
    ids = sorted(event_ids)
    with write(mem.conn):
        marks = ",".join("?" * len(ids))
        mem.conn.execute(f"UPDATE hot_nodes SET active = 0 WHERE event_id IN ({marks})", ids)
        return enqueue_departed(mem.conn, set(ids), None, mem.clock.now())


def add_archived(mem: Memory, *texts: str) -> list[int]:
    """Append events and queue them for organize at once."""
    ids = [mem.append_event(t) for t in texts]
    archive(mem, ids)
    return ids


def queue_row(conn: sqlite3.Connection, event_id: int) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM archive_queue WHERE event_id = ?", (event_id,)).fetchone()
    return dict(row) if row else {}


def put_object(mem: Memory, object_id: str, name: str | None = None, body: str = "",
               status: str = "active", **fields: Any) -> ObjectRecord:
    """Save an object directly (as a migration or an earlier batch would have)."""
    record = ObjectRecord(id=object_id, type=object_id.split(":", 1)[0],
                          name=name or object_id.split(":", 1)[1], body=body, status=status,
                          **fields)
    with write(mem.conn):
        return save_object(mem.conn, record, mem.clock.now())


def obj(object_id: str, name: str | None = None, **fields: Any) -> dict[str, Any]:
    """An ObjectWrite as the model sends it."""
    return {"id": object_id, "name": name or object_id.split(":", 1)[1], **fields}


# -- store snapshots ---------------------------------------------------------------------------

TABLES = ("objects", "object_versions", "relations", "evidence", "core_files", "receipts",
          "deep_snapshot")


def counts(conn: sqlite3.Connection) -> dict[str, Any]:
    """Row counts of the graph tables plus the queue states and the active timeline."""
    data: dict[str, Any] = {t: count(conn, t) for t in TABLES}
    data["queue"] = dict(conn.execute(
        "SELECT state, COUNT(*) FROM archive_queue GROUP BY state").fetchall())
    data["active_nodes"] = count(conn, "hot_nodes", "active = 1")
    data["events"] = count(conn, "events")
    return data


def batch_row(conn: sqlite3.Connection, batch_id: int) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM batches WHERE id = ?", (batch_id,)).fetchone()
    data = dict(row)
    data["claim"] = json.loads(data["claim"])
    return data


def job_state(conn: sqlite3.Connection, job_id: int) -> str:
    return conn.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]


# -- scripted steps ----------------------------------------------------------------------------


def commit_organize(event_id: int, outcome: str, **fields: Any) -> ModelReply:
    """A commit_organize call with one disposition (progress/reason go into the disposition)."""
    disposition = {"event_id": event_id, "outcome": outcome}
    for key in ("progress", "reason"):
        if key in fields:
            disposition[key] = fields.pop(key)
    return call("commit_organize", {**fields, "events": [disposition]})


def organize_step(build: Callable[[dict[str, Any]], dict[str, Any]],
                  seen: list[dict[str, Any]] | None = None) -> Step:
    """A step that reads the page it was given and commits what `build(payload)` returns
    (a dict of commit_organize arguments; `outcome`/`progress`/`reason` become the
    disposition for the claimed event)."""

    def step(messages: list[Message], tools: list[ToolSpec], max_out: int) -> ModelReply:
        data = payload(messages)
        if seen is not None:
            seen.append(data)
        args = dict(build(data))
        outcome = args.pop("outcome")
        return commit_organize(data["event"]["id"], outcome, **args)

    return step


def cite_page(object_id: str = "knowledge:notes", name: str = "notes",
              body: str = "what the event says") -> Step:
    """Write one object citing the first chars of the page: linked on the last page, else
    continue with progress."""

    def build(data: dict[str, Any]) -> dict[str, Any]:
        page = data["page"]
        end = min(page["end"], page["start"] + 10)
        args: dict[str, Any] = {
            "objects": [obj(object_id, name, body=body)],
            "evidence": [{"object_id": object_id, "event_id": data["event"]["id"],
                          "start": page["start"], "end": end}],
        }
        if object_id in {o["id"] for o in data["related"]}:
            args["objects"] = []  # already written by an earlier page: cite only
        if page["last"]:
            args["outcome"] = "linked"
        else:
            args["outcome"] = "continue"
            args["progress"] = f"read up to char {page['end']}"
        return args

    return organize_step(build)


def archive_only_step(reason: str = "small talk, nothing durable") -> Step:
    def build(data: dict[str, Any]) -> dict[str, Any]:
        if not data["page"]["last"]:
            return {"outcome": "continue", "progress": f"read to {data['page']['end']}"}
        return {"outcome": "archive_only", "reason": reason}

    return organize_step(build)


def compact_step(summary: str = "summary", seen: list[dict[str, Any]] | None = None) -> Step:
    """A step that compacts exactly the nodes it was given into a short summary."""

    def step(messages: list[Message], tools: list[ToolSpec], max_out: int) -> ModelReply:
        data = payload(messages)
        if seen is not None:
            seen.append(data)
        return call("commit_compaction",
                    {"node_ids": [n["id"] for n in data["nodes"]], "summary": summary})

    return step


def review_step(build: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                seen: list[dict[str, Any]] | None = None) -> Step:
    """A deep step that confirms every reviewed id (plus whatever `build(payload)` adds)."""

    def step(messages: list[Message], tools: list[ToolSpec], max_out: int) -> ModelReply:
        data = payload(messages)
        if seen is not None:
            seen.append(data)
        args = {"reviewed": [o["id"] for o in data["review"]]}
        if build is not None:
            args.update(build(data))
        return call("commit_review", args)

    return step


def repeat(step: Any, times: int) -> list[Any]:
    return [step] * times
