"""memory_status: counts per state, the oldest unfinished records, the timeline and health."""

from __future__ import annotations

import sqlite3

from helpers import T0
from memvault import ManualClock, Memory
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write


def enqueue(conn: sqlite3.Connection, event_id: int, state: str, at: str) -> None:
    with write(conn):
        conn.execute(
            "INSERT INTO archive_queue (event_id, state, enqueued_at, updated_at)"
            " VALUES (?, ?, ?, ?)", (event_id, state, at, at),
        )


def test_status_of_an_empty_memory(mem: Memory) -> None:
    report = mem.status()
    assert report["events"] == {"total": 0, "hot": 0, "pending": 0, "continue": 0, "linked": 0,
                                "archive_only": 0, "blocked": 0}
    assert report["quick_check"] == "ok"
    assert report["timeline"] == {"nodes": 0, "est_tokens": 0}
    assert report["objects"] == {"project": {"active": 1}}  # only the built-in project:daily
    assert report["jobs"] == {}
    assert report["oldest_unfinished"] == []
    assert report["core_files_chars"] == {"AGENTS.md": None, "SOUL.md": None, "USER.md": None}
    assert report["graph_revision"] == 0
    assert report["home"] == str(mem.config.home)


def test_status_counts_events_per_state(mem: Memory, clock: ManualClock) -> None:
    ids = [mem.append_event(f"事件 {i}") for i in range(30)]
    states = ["pending"] * 15 + ["continue"] * 3 + ["linked"] * 4 + ["archive_only"] * 2 + [
        "blocked"] * 5
    for i, (event_id, state) in enumerate(zip(ids, states, strict=False)):
        enqueue(mem.conn, event_id, state, f"2026-10-13T{10 + i // 60:02d}:{59 - i:02d}:00+08:00")
    report = mem.status()
    assert report["events"] == {"total": 30, "hot": 1, "pending": 15, "continue": 3,
                                "linked": 4, "archive_only": 2, "blocked": 5}
    unfinished = report["oldest_unfinished"]
    assert len(unfinished) == 20  # the 20 oldest of 23 unfinished (pending+continue+blocked)
    assert {u["state"] for u in unfinished} <= {"pending", "continue", "blocked"}
    times = [u["enqueued_at"] for u in unfinished]
    assert times == sorted(times)
    assert unfinished[0]["event_id"] == ids[28]  # enqueued last in the loop, earliest time
    assert unfinished[0]["preview"] == "事件 28"
    assert ids[0] not in {u["event_id"] for u in unfinished}  # the newest three are left out
    assert mem.read_event(ids[0])["state"] == "pending"
    assert mem.read_event(ids[29])["state"] == "hot"


def test_status_counts_objects_core_files_and_the_timeline(
    mem: Memory, clock: ManualClock
) -> None:
    mem.append_event("x" * 4_001)
    mem.write_core_file("AGENTS.md", "规则")
    with write(mem.conn):
        for slug, status in [("a", "active"), ("b", "candidate"), ("c", "archived")]:
            save_object(mem.conn, ObjectRecord(id=f"project:{slug}", type="project", name=slug,
                                               status=status), clock.now())
        save_object(mem.conn, ObjectRecord(id="project:d", type="project", name="d",
                                           redirect_to="project:a"), clock.now())
    report = mem.status()
    # project:a and the built-in project:daily are active.
    assert report["objects"] == {"project": {"active": 2, "candidate": 1, "archived": 1,
                                             "merged": 1}}
    assert report["timeline"]["nodes"] == 3
    assert report["timeline"]["est_tokens"] > 1_000
    assert report["core_files_chars"]["AGENTS.md"] == 2


def test_status_works_on_a_read_only_connection(home, clock: ManualClock) -> None:
    with Memory.open(home, clock=ManualClock(T0)) as mem:
        mem.append_event("one")
    with Memory.open(home, readonly=True) as ro:
        report = ro.status()
        assert report["events"]["total"] == 1 and report["quick_check"] == "ok"
