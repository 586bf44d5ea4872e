"""Memory forms without anyone running `memvault compact` first: an organize request compacts
the raw fragments hot when it was made, then organizes what that queued (docs/spec.md section 2,
"Boundary"). Real SQLite, a ManualClock and the scripted model; nothing sleeps."""

from __future__ import annotations

from pathlib import Path

from helpers import count, write_config
from memvault import ManualClock, Memory
from memvault.jobs.records import get_job
from memvault.jobs.worker import Worker
from memvault.models.base import Message, ModelReply, ToolSpec
from modes_support import (
    Step,
    archive_only_step,
    cite_page,
    compact_step,
    make_worker,
    payload,
    queue_row,
    repeat,
    run_until_idle,
)
from scripted_provider import ScriptedProvider

TURNS = ("Qin Hao leads the storage rewrite; the deadline is Friday.",
         "Remind me to call the dentist on Monday morning.",
         "ok thanks")


def file_event() -> Step:
    """An organize step that files the event under an object of its own (citing its page)."""

    def step(messages: list[Message], tools: list[ToolSpec], max_out: int) -> ModelReply:
        event_id = payload(messages)["event"]["id"]
        return cite_page(f"knowledge:event-{event_id}", f"event {event_id}")(
            messages, tools, max_out)

    return step


def hot_raw(mem: Memory) -> int:
    return count(mem.conn, "hot_nodes", "active = 1 AND kind = 'raw'")


def test_an_organize_request_compacts_the_hot_turns_then_organizes_them(mem: Memory) -> None:
    ids = [mem.append_event(t) for t in TURNS]
    receipt = mem.organize()
    assert set(receipt) >= {"job_id", "compact_job_id", "state", "replayed"}
    assert receipt["compact_job_id"] is not None and receipt["state"] == "queued"
    seen: list[dict] = []
    worker, provider = make_worker(
        mem, [compact_step("Qin Hao's rewrite due Friday; dentist call Monday", seen=seen),
              *repeat(file_event(), 3)])
    results = run_until_idle(worker)
    assert [r.job_id for r in results if r.action == "committed"] == (
        [receipt["compact_job_id"]] + [receipt["job_id"]] * 3)
    assert [n["id"] for n in seen[0]["nodes"]] == ids  # the three raw fragments, one batch
    assert hot_raw(mem) == 0
    assert [queue_row(mem.conn, e)["state"] for e in ids] == ["linked"] * 3
    assert get_job(mem.conn, receipt["compact_job_id"]).state == "done"
    assert get_job(mem.conn, receipt["job_id"]).state == "done"
    assert count(mem.conn, "objects", "id LIKE 'knowledge:event-%'") == 3


def test_the_organize_job_waits_while_its_compaction_backs_off(
    mem: Memory, clock: ManualClock,
) -> None:
    (event,) = [mem.append_event(TURNS[0])]
    receipt = mem.organize()
    worker, _ = make_worker(mem, [RuntimeError("model down"), compact_step("rewrite by Fri"),
                                  archive_only_step()])
    failed = worker.tick()
    assert (failed.action, failed.job_id) == ("failed", receipt["compact_job_id"])
    # The compaction waits out its backoff; the organize job must not run ahead of it (it
    # would find nothing queued and end done with the turn still hot).
    assert worker.tick().action == "idle"
    assert get_job(mem.conn, receipt["job_id"]).state == "queued"
    clock.advance(seconds=mem.config["worker.backoff_s"])
    run_until_idle(worker)
    assert queue_row(mem.conn, event)["state"] == "archive_only"
    assert get_job(mem.conn, receipt["job_id"]).state == "done"


def test_turns_appended_after_the_request_stay_hot(mem: Memory) -> None:
    before = mem.append_event(TURNS[0])
    mem.organize()
    after = mem.append_event(TURNS[1])
    worker, _ = make_worker(mem, [compact_step("rewrite by Friday"), archive_only_step()])
    run_until_idle(worker)
    assert queue_row(mem.conn, before)["state"] == "archive_only"
    assert queue_row(mem.conn, after) == {}  # not queued: still on the hot timeline
    assert hot_raw(mem) == 1


def test_summary_heads_are_not_folded_again(mem: Memory) -> None:
    for text in TURNS[:2]:
        mem.append_event(text)
    mem.compact()
    worker, _ = make_worker(mem, [compact_step("rewrite Fri; dentist Mon")])
    run_until_idle(worker)
    head = mem.conn.execute("SELECT id FROM hot_nodes WHERE kind = 'head' AND active = 1"
                            ).fetchone()[0]
    mem.append_event(TURNS[0] + " Also: the review is on Thursday.")
    seen: list[dict] = []
    receipt = mem.organize()
    worker.provider.enqueue(compact_step("rewrite Fri, review Thu", seen=seen))
    worker.provider.enqueue(*repeat(archive_only_step(), 3))  # the two queued before, and it
    run_until_idle(worker)
    assert len(seen) == 1 and head not in [n["id"] for n in seen[0]["nodes"]]
    assert mem.conn.execute("SELECT active FROM hot_nodes WHERE id = ?", (head,)).fetchone()[0]
    assert get_job(mem.conn, receipt["job_id"]).state == "done"


def test_with_nothing_hot_the_request_queues_organize_only(mem: Memory) -> None:
    receipt = mem.organize()
    assert receipt["compact_job_id"] is None
    assert count(mem.conn, "jobs") == 1


def test_a_replayed_request_queues_no_second_compaction(mem: Memory) -> None:
    mem.append_event(TURNS[0])
    first = mem.organize(request_token="req-1")
    mem.append_event(TURNS[1])
    again = mem.organize(request_token="req-1")
    assert again["replayed"] and again["job_id"] == first["job_id"]
    assert again["compact_job_id"] == first["compact_job_id"]
    assert count(mem.conn, "jobs", "mode = 'compact'") == 1


def test_no_compact_organizes_only_what_was_queued(mem: Memory) -> None:
    mem.append_event(TURNS[0])
    receipt = mem.organize(compact_first=False)
    assert receipt["compact_job_id"] is None
    worker, provider = make_worker(mem, [])
    run_until_idle(worker)
    assert provider.history == [] and hot_raw(mem) == 1


def test_deep_requests_never_compact(mem: Memory) -> None:
    mem.append_event(TURNS[0])
    assert mem.organize("deep")["compact_job_id"] is None
    assert count(mem.conn, "jobs", "mode = 'compact'") == 0


def either_mode(summary: str = "ok") -> Step:
    """A step that compacts when offered commit_compaction and cites the page otherwise."""
    compact, cite = compact_step(summary), file_event()

    def step(messages: list[Message], tools: list[ToolSpec], max_out: int) -> ModelReply:
        chosen = compact if tools[-1].name == "commit_compaction" else cite
        return chosen(messages, tools, max_out)

    return step


def test_a_worker_dying_mid_compaction_loses_nothing(home: Path, clock: ManualClock) -> None:
    write_config(home, "[compact]\nnodes_per_batch = 2\n")
    mem = Memory.open(home, clock=clock)
    ids = [mem.append_event(t) for t in TURNS]
    receipt = mem.organize()
    worker, _ = make_worker(mem, [compact_step("rewrite Fri; dentist Mon")])
    assert worker.tick().action == "committed"
    dying = Worker(mem, ScriptedProvider([]), holder="dies", scheduler=False)
    assert dying._lease_and_claim(clock.now())  # claims the next batch, then is killed
    lease_s = dying.lease_s
    mem.close()

    clock.advance(seconds=lease_s + 1)
    again = Memory.open(home, clock=clock)
    worker, _ = make_worker(again, repeat(either_mode(), 10), holder="new")
    run_until_idle(worker)
    assert [queue_row(again.conn, e)["state"] for e in ids] == ["linked"] * 3
    assert get_job(again.conn, receipt["compact_job_id"]).state == "done"
    assert get_job(again.conn, receipt["job_id"]).state == "done"
    assert hot_raw(again) == 0
    again.close()


def test_a_compaction_that_goes_terminal_does_not_hold_the_organize_job_forever(
    mem: Memory, clock: ManualClock,
) -> None:
    event = mem.append_event(TURNS[0])
    receipt = mem.organize()
    worker, _ = make_worker(mem, [RuntimeError("down")] * 5)
    for _ in range(5):
        worker.tick()
        clock.advance(seconds=mem.config["worker.backoff_s"] * 16)
    run_until_idle(worker)
    # Its nodes stay hot; the organize job runs (finding nothing queued) and ends.
    assert get_job(mem.conn, receipt["compact_job_id"]).state == "partial"
    assert get_job(mem.conn, receipt["job_id"]).state == "done"
    assert queue_row(mem.conn, event) == {}


def test_an_agent_over_mcp_background_gets_objects_after_memory_organize(
    home: Path, tmp_path: Path,
) -> None:
    """The issue's scenario, end to end: `memvault mcp --background` (the README's host config),
    12 appended turns and memory_organize; objects appear while the agent goes on (bounded)."""
    import json
    import sys

    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from memvault.service.mcp_server import tool_payload

    write_config(home, "[worker]\npoll_s = 0.1\n")
    turns = [f"TODO: send invoice #{i} to the supplier by Friday" if i % 3 == 0
             else f"Remind me to call Ada about milestone {i} on Monday" if i % 3 == 1
             else f"ok, noted {i}" for i in range(12)]
    errlog = (tmp_path / "mcp-stderr.log").open("w+", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "import sys; from memvault.cli import main; sys.exit(main())",
              "--home", str(home), "mcp", "--background"],
        env={"MEMVAULT_HOME": str(home)})

    async def session() -> tuple[dict, dict]:
        with anyio.fail_after(120):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                for text in turns:
                    await client.call_tool("memory_append", {"text": text})
                receipt = tool_payload(await client.call_tool("memory_organize", {}))
                while True:  # bounded by fail_after; the worker polls every 0.1 s
                    status = tool_payload(await client.call_tool("memory_status", {}))
                    if status["jobs"].get("done", 0) >= 2:
                        return receipt, status
                    await anyio.sleep(0.2)

    receipt, status = anyio.run(session)
    errlog.close()
    assert set(receipt) >= {"job_id", "compact_job_id"} and receipt["compact_job_id"]
    assert status["events"]["hot"] == 0
    assert status["events"]["linked"] >= 8, json.dumps(status["events"])
    assert sum(sum(by.values()) for t, by in status["objects"].items() if t == "todo") >= 4


def test_a_lone_one_token_turn_is_left_hot_instead_of_failing_five_times(mem: Memory) -> None:
    first = mem.append_event(TURNS[0])
    mem.compact()
    ok = mem.append_event("ok")
    later = mem.append_event(TURNS[1])
    node = mem.conn.execute("SELECT id FROM hot_nodes WHERE event_id = ?", (later,)).fetchone()[0]
    mem.compact((node, node))
    worker, provider = make_worker(mem, [compact_step("rewrite by Fri"),
                                         compact_step("dentist Mon")])
    run_until_idle(worker)  # the timeline: head, "ok", head
    receipt = mem.organize()
    worker.provider.enqueue(*repeat(archive_only_step(), 2))
    results = run_until_idle(worker)
    # No summary of "ok" can be shorter: it is not claimed alone (five failures, 150 s of
    # backoff before the organize job); it stays hot, as a threshold job would leave it.
    assert [r.action for r in results] == ["committed", "committed", "idle"]
    assert get_job(mem.conn, receipt["compact_job_id"]).state == "done"
    assert [queue_row(mem.conn, e).get("state") for e in (first, ok, later)] == [
        "archive_only", None, "archive_only"]
    assert count(mem.conn, "batches", "state = 'terminal'") == 0
