"""Reliability: online backup, `memvault check` on clean and deliberately damaged memories, and
disk usage figures."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import T0, add_evidence
from memvault import ManualClock, Memory
from memvault.base.errors import StoreError
from memvault.cli import main
from memvault.home.check import check_memory
from memvault.home.disk import disk_usage
from memvault.home.migrations import open_home_db
from memvault.jobs.modes.compact import fold_nodes
from memvault.objects.records import ObjectRecord, add_relation, save_object
from memvault.store.backup import backup_database
from memvault.store.connection import write
from memvault.timeline.events import NewEvent


def raw_nodes(conn: sqlite3.Connection, event_id: int) -> list[int]:
    return [r[0] for r in conn.execute(
        "SELECT id FROM hot_nodes WHERE event_id = ? AND active = 1 ORDER BY seq", (event_id,))]


def person(oid: str, name: str) -> ObjectRecord:
    return ObjectRecord(id=oid, type="person", name=name, aliases=[], summary=name, body="",
                        cues=[], status="active")


@pytest.fixture
def built(mem: Memory, clock: ManualClock) -> dict[str, int]:
    """A small memory the engine could have produced: two events folded and organized (one
    linked with evidence, one archive_only), one still hot, two objects with a relation."""
    linked = mem.append_event("记住：浩宇对花生过敏，晚饭不要点花生酱。" * 3)
    archived = mem.append_event("今天天气不错，随便聊聊。" * 3)
    hot = mem.append_event("still hot")
    conn, now = mem.conn, clock.now()
    with write(conn):
        fold_nodes(conn, raw_nodes(conn, linked) + raw_nodes(conn, archived), "两条：过敏；闲聊",
                   None, now)
        save_object(conn, person("person:haoyu", "浩宇"), now)
        save_object(conn, person("person:mei", "梅"), now)
        add_relation(conn, "person:haoyu", "knows", "person:mei", now)
        add_evidence(conn, "person:haoyu", linked, 0, 10, now)
        chars = dict(conn.execute("SELECT id, chars FROM events").fetchall())
        conn.execute("UPDATE archive_queue SET state = 'linked', page_cursor = ?"
                     " WHERE event_id = ?", (chars[linked], linked))
        conn.execute("UPDATE archive_queue SET state = 'archive_only', page_cursor = ?,"
                     " reason = 'small talk' WHERE event_id = ?", (chars[archived], archived))
    return {"linked": linked, "archived": archived, "hot": hot}


def kinds(report: dict) -> dict[str, list]:
    return {p["kind"]: p["ids"] for p in report["problems"]}


# -- backup ---------------------------------------------------------------------------------------

def test_backup_while_another_thread_keeps_appending(home: Path, mem: Memory,
                                                     clock: ManualClock, tmp_path: Path) -> None:
    mem.append_events([NewEvent(f"seed {i} " + "x" * 2_000) for i in range(1_500)])
    stop, started = threading.Event(), threading.Event()
    written: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with Memory.open(home, clock=ManualClock(T0)) as other:
                while not stop.is_set() or len(written) < 20:
                    written.append(other.append_event(f"concurrent {len(written)}"))
                    started.set()
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)
            started.set()

    reader = open_home_db(mem.config.db_path, readonly=True)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert started.wait(30)
        before = reader.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        report = backup_database(reader, tmp_path / "copy.db")
        after = reader.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    finally:
        stop.set()
        thread.join(60)
        reader.close()
    assert not errors
    assert report["integrity_check"] == "ok"
    assert before <= report["events"] <= after
    copy = sqlite3.connect(tmp_path / "copy.db")
    try:
        assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert copy.execute("SELECT COUNT(*) FROM events").fetchone()[0] == report["events"]
        # Each event came with its fragment in one transaction: the copy never splits them.
        assert copy.execute("SELECT COUNT(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM"
                            " hot_nodes n WHERE n.event_id = e.id)").fetchone()[0] == 0
    finally:
        copy.close()
    assert report["bytes"] == (tmp_path / "copy.db").stat().st_size
    assert not list(tmp_path.glob(".copy.db.*"))  # no temporary file left behind


def test_backup_refuses_to_overwrite_unless_forced(built: dict, home: Path,
                                                   tmp_path: Path, runner: CliRunner) -> None:
    dest = tmp_path / "b.db"
    dest.write_bytes(b"precious")
    result = runner.invoke(main, ["backup", str(dest)])
    assert result.exit_code == 1
    assert "already exists" in result.output and "--force" in result.output
    assert dest.read_bytes() == b"precious"
    result = runner.invoke(main, ["backup", str(dest), "--force", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["events"] == 3 and data["objects"] == 3  # + the built-in project:daily
    assert data["path"] == str(dest) and data["bytes"] == dest.stat().st_size


def test_backup_into_a_directory_names_the_file_by_utc_time(built: dict, mem: Memory,
                                                            tmp_path: Path,
                                                            runner: CliRunner) -> None:
    out = tmp_path / "backups"
    out.mkdir()
    report = backup_database(mem.conn, out, now=T0)
    assert Path(report["path"]) == out / "memory-20261013T040000Z.db"
    with pytest.raises(StoreError, match="already exists"):
        backup_database(mem.conn, out, now=T0)
    with pytest.raises(StoreError, match="live database"):
        backup_database(mem.conn, mem.config.db_path, force=True)
    result = runner.invoke(main, ["backup", str(out)])
    assert result.exit_code == 0, result.output
    assert "integrity_check ok" in result.output and "3 events" in result.output
    assert len(list(out.glob("memory-*.db"))) == 2


# -- check ----------------------------------------------------------------------------------------

def test_check_on_a_clean_memory(built: dict, mem: Memory, clock: ManualClock,
                                 runner: CliRunner) -> None:
    report = check_memory(mem.conn, now=clock.now())
    assert report["ok"] and report["problems"] == []
    assert [w["kind"] for w in report["warnings"]] == ["projection_lag"]  # never projected
    result = runner.invoke(main, ["check"])
    assert result.exit_code == 0, result.output
    assert "no problems found" in result.output
    result = runner.invoke(main, ["check", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["problems"] == []


def test_check_finds_each_kind_of_damage(built: dict, mem: Memory, clock: ManualClock,
                                         runner: CliRunner) -> None:
    now = clock.now()
    late = mem.append_event("lost one")
    hot_linked = mem.append_event("linked but nothing cites it")
    conn = sqlite3.connect(mem.config.db_path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = OFF")
    stamp = now.isoformat()
    ancient = (now - timedelta(hours=2)).isoformat()
    with conn:
        # orphan links (also foreign-key violations)
        ev = conn.execute("INSERT INTO evidence (object_id, event_id, start_char, end_char,"
                          " created_at) VALUES ('person:ghost', ?, 0, 3, ?)",
                          (built["hot"], stamp)).lastrowid
        rel = conn.execute("INSERT INTO relations (src_id, label, dst_id, created_at)"
                           " VALUES ('person:haoyu', 'knows', 'person:nobody', ?)",
                           (stamp,)).lastrowid
        conn.execute("UPDATE objects SET redirect_to = 'person:gone' WHERE id = 'person:mei'")
        for oid in ("person:a", "person:b"):
            conn.execute("INSERT INTO objects (id, type, name, created_at, updated_at)"
                         " VALUES (?, 'person', ?, ?, ?)", (oid, oid, stamp, stamp))
        for oid, target in (("person:a", "person:b"), ("person:b", "person:a")):
            conn.execute("UPDATE objects SET redirect_to = ? WHERE id = ?", (target, oid))
        # queue states that disagree with events
        conn.execute("INSERT INTO archive_queue (event_id, state, enqueued_at, updated_at)"
                     " VALUES (?, 'pending', ?, ?)", (built["hot"], stamp, stamp))
        conn.execute("UPDATE hot_nodes SET active = 0 WHERE event_id = ?", (late,))
        conn.execute("UPDATE hot_nodes SET active = 0 WHERE event_id = ?", (hot_linked,))
        conn.execute("INSERT INTO archive_queue (event_id, state, enqueued_at, updated_at)"
                     " VALUES (?, 'linked', ?, ?)", (hot_linked, stamp, stamp))
        conn.execute("INSERT INTO evidence (object_id, event_id, start_char, end_char,"
                     " created_at) VALUES ('person:haoyu', ?, 0, 4, ?)",
                     (built["archived"], stamp))
        conn.execute("UPDATE archive_queue SET page_cursor = 10000 WHERE event_id = ?",
                     (built["linked"],))
        # an abandoned claim, a live one and one waiting for its retry
        job = conn.execute("INSERT INTO jobs (mode, origin, state, created_at) VALUES"
                           " ('organize', 'explicit', 'running', ?)", (stamp,)).lastrowid
        batches = [conn.execute(
            "INSERT INTO batches (job_id, state, claim, base_revision, claimed_at,"
            " next_attempt_at) VALUES (?, 'claimed', '{}', 0, ?, ?)",
            (job, at, retry)).lastrowid
            for at, retry in ((ancient, None), (stamp, None), (ancient, stamp))]
        conn.execute("INSERT INTO projection_errors (object_id, path, error, created_at)"
                     " VALUES ('person:haoyu', 'objects/person/x.md', 'disk full', ?)", (stamp,))
    conn.close()

    found = kinds(check_memory(mem.conn, now=now))
    assert f"evidence:{ev}" in found["foreign_key"] and f"relations:{rel}" in found["foreign_key"]
    assert found["orphan_evidence"] == [ev]
    assert found["orphan_relation"] == [rel]
    assert found["orphan_redirect"] == ["person:mei"]
    assert found["redirect_cycle"] == ["person:a", "person:b"]
    assert found["queued_while_hot"] == [built["hot"]]
    assert found["lost_event"] == [late]
    assert found["linked_without_target"] == [hot_linked]
    assert found["archive_only_with_evidence"] == [built["archived"]]
    assert found["cursor_beyond_event"] == [built["linked"]]
    assert found["stale_claim"] == [batches[0]]
    assert found["projection_error"] == ["person:haoyu"]
    assert "integrity" not in found

    # A valid worker lease means a live worker will re-claim it: not reported then.
    with write(mem.conn):
        mem.conn.execute("INSERT INTO leases (name, holder, acquired_at, expires_us)"
                         " VALUES ('worker', 'w1', ?, ?)",
                         (stamp, int((now + timedelta(seconds=60)).timestamp() * 1e6)))
    assert "stale_claim" not in kinds(check_memory(mem.conn, now=now))
    # ... unless that lease's holder is a process on this host that is gone: the next worker
    # takes its lease at once, so nothing is finishing the claim.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with write(mem.conn):
        mem.conn.execute("UPDATE leases SET holder = ?",
                         (f"{socket.gethostname()}:{gone.pid}:-:worker",))
    assert kinds(check_memory(mem.conn, now=now))["stale_claim"] == [batches[0]]

    result = runner.invoke(main, ["check", "--json"])
    assert result.exit_code == 1
    assert {"orphan_evidence", "lost_event"} <= {p["kind"] for p in
                                                 json.loads(result.output)["problems"]}
    result = runner.invoke(main, ["check"])
    assert result.exit_code == 1 and "redirect_cycle" in result.output


def test_check_reports_a_damaged_index(built: dict, mem: Memory, clock: ManualClock,
                                       runner: CliRunner) -> None:
    conn = sqlite3.connect(mem.config.db_path, isolation_level=None)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_schema SET sql = 'CREATE INDEX hot_nodes_active ON hot_nodes"
                 " (seq DESC) WHERE active = 1' WHERE name = 'hot_nodes_active'")
    conn.close()
    damaged = open_home_db(mem.config.db_path, readonly=True)
    try:
        found = kinds(check_memory(damaged, now=clock.now()))
    finally:
        damaged.close()
    assert "integrity" in found
    result = runner.invoke(main, ["check"])
    assert result.exit_code == 1 and "integrity" in result.output


# -- disk usage -----------------------------------------------------------------------------------

def test_disk_usage_on_a_known_dataset(mem: Memory, clock: ManualClock) -> None:
    plan = [(40, "a" * 100), (20, "b" * 200), (20, "猫" * 10), (3, "c" * 70), (0, "d" * 7)]
    for days_ago, text in plan:
        clock.set(T0 - timedelta(days=days_ago))
        mem.append_event(text)
    clock.set(T0)
    with write(mem.conn):
        mem.conn.execute("INSERT INTO jobs (mode, origin, state, created_at)"
                         " VALUES ('compact', 'explicit', 'done', 'now')")
    usage = disk_usage(mem.conn, now=T0, detailed=True)
    assert usage["raw_text"] == {"events": 5, "chars": 100 + 200 + 10 + 70 + 7,
                                 "bytes": 100 + 200 + 30 + 70 + 7}
    assert usage["growth"]["last_7d"] == {"events": 2, "bytes": 77, "bytes_per_day": 11.0}
    assert usage["growth"]["last_30d"] == {"events": 4, "bytes": 307,
                                           "bytes_per_day": round(307 / 30, 1)}
    versions = usage["object_versions"]
    assert versions["rows"] == 1 and versions["bytes"] > 0  # the built-in project:daily
    assert usage["audit"]["batches"] == {"rows": 0, "bytes": 0}
    assert usage["audit"]["total_bytes"] == 0
    assert usage["db_file_bytes"] > 0 and usage["pages"] > 0
    assert usage["on_disk_bytes"]["events"] >= 4096
    assert "on_disk_bytes" not in disk_usage(mem.conn, now=T0)
