"""`memvault migrate` from a database of the original design (docs/spec.md section 7).

The fixture (tests/legacy_fixture.py) is the older shape with every case the spec names: events
already compacted but never queued, objects with sources, running snapshots of the old protocol,
failed batches. Counts are checked before and after; nothing may be deleted, failed never turns
into done, and the upgrade refuses while a worker holds a lease.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import count
from legacy_fixture import EXPECTED, build_legacy_db, event_id, event_text
from memvault import ManualClock, Memory
from memvault.base.clock import parse_time, to_micros
from memvault.base.errors import StoreError
from memvault.cli import main
from memvault.home.check import check_memory
from memvault.home.migrations import apply_migrations
from memvault.jobs.worker import Worker
from memvault.legacy.plan import LegacyDataError
from memvault.legacy.upgrade import LEGACY_LEASE_FOREVER_MS, MigrationRefused
from memvault.models.builtin import BuiltinProvider
from modes_support import run_until_idle

NOW = "2026-12-01T09:00:00+08:00"
OLD_TABLES = ("timeline", "hot_timeline", "memory_objects", "memory_object_versions",
              "memory_relations", "core_documents", "memory_receipts")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def table_rows(conn: sqlite3.Connection, table: str) -> list[tuple]:
    return [tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY rowid")]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(parse_time(NOW))


@pytest.fixture
def old_home(tmp_path: Path) -> Path:
    """A home whose memory.db is the old-shape database (the in-place upgrade)."""
    home = tmp_path / "home"
    home.mkdir()
    build_legacy_db(home / "memory.db")
    return home


def test_migration_counts_before_and_after(old_home: Path, clock: ManualClock) -> None:
    db = old_home / "memory.db"
    with sqlite3.connect(db) as conn:
        old = {t: table_rows(conn, t) for t in OLD_TABLES}
    report = Memory.migrate(old_home, clock=clock)
    assert report["legacy"] is True
    before, after, kept = report["before"], report["after"], report["after_old_tables"]
    assert before == {**kept, "snapshots_running": 2, "snapshots_released": 0}
    assert (kept["snapshots_running"], kept["snapshots_released"]) == (0, EXPECTED["released"])
    assert kept["snapshots_failed"] == before["snapshots_failed"] == 2
    for key in ("events", "hot_nodes", "active_nodes", "objects", "object_versions",
                "relations", "legacy_relations", "evidence", "core_files", "pending",
                "blocked", "done"):
        assert after[key] == EXPECTED[key], key
    assert before["events"] == after["events"] and before["nodes"] == after["hot_nodes"]
    assert len(report["changes"]["dangling_sources"]) == EXPECTED["dangling_sources"]
    assert len(report["changes"]["dangling_relations"]) == EXPECTED["dangling_relations"]
    assert report["changes"]["trimmed"] == ["knowledge:long-notes.body"]
    with sqlite3.connect(db) as conn:  # deletes nothing: every old row is still there
        assert {t: table_rows(conn, t) for t in OLD_TABLES} == old
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_events_and_timeline_carry_over_exactly(old_home: Path, clock: ManualClock) -> None:
    Memory.migrate(old_home, clock=clock)
    with Memory.open(old_home, clock=clock) as mem:
        conn = mem.conn
        for row in conn.execute("SELECT id, text, meta, occurred_at, ingested_at FROM events"):
            legacy_id = json.loads(row["meta"])["legacy_id"]
            assert row["text"] == event_text(int(legacy_id[4:]))
        seven = conn.execute("SELECT occurred_at, ingested_at FROM events WHERE id = 7").fetchone()
        assert seven["occurred_at"] == seven["ingested_at"]  # no time given: the ingest time
        # raw fragments slice the event text exactly as the old nodes held it
        slices = sorted(r[0] for r in conn.execute(
            "SELECT substr(e.text, n.start_char + 1, n.end_char - n.start_char) FROM hot_nodes n"
            " JOIN events e ON e.id = n.event_id WHERE n.kind = 'raw'"))
        assert slices == sorted(r[0] for r in conn.execute(
            "SELECT text FROM hot_timeline WHERE kind = 'raw'"))
        view = mem.timeline_view()
        assert view["shown_nodes"] == view["total_nodes"] == EXPECTED["active_nodes"]
        head = conn.execute("SELECT id FROM hot_nodes WHERE kind = 'head' AND level = 2").fetchone()
        children = mem.expand(head["id"])
        assert [c["kind"] for c in children] == ["head", "head"]
        assert count(conn, "hot_nodes", f"parent_id IN ({children[0]['id']},"
                     f" {children[1]['id']})") == 14


def test_failed_stays_failed_and_running_is_released(old_home: Path, clock: ManualClock) -> None:
    Memory.migrate(old_home, clock=clock)
    with Memory.open(old_home, clock=clock) as mem:
        blocked = [json.loads(r[0])["legacy_id"] for r in mem.conn.execute(
            "SELECT e.meta FROM archive_queue q JOIN events e ON e.id = q.event_id"
            " WHERE q.state = 'blocked' ORDER BY e.id")]
        assert blocked == [event_id(3), event_id(9)]
        reasons = [r[0] for r in mem.conn.execute(
            "SELECT reason FROM archive_queue WHERE state = 'blocked'")]
        assert all(r.startswith("old-protocol batch 4 failed: model timeout") for r in reasons)
        # event 20 was in a failed batch too, but is still hot: not queued, not done
        assert mem.read_event(20)["state"] == "hot"
        snapshots = dict(mem.conn.execute("SELECT id, status FROM memory_snapshots"))
        assert snapshots == {1: "done", 2: "done", 3: "done", 4: "failed", 5: "failed",
                             6: "released", 7: "released"}
        lease = mem.conn.execute("SELECT holder, expires_at FROM memory_lease").fetchone()
        assert lease[1] == LEGACY_LEASE_FOREVER_MS  # an old worker can never run beside us
        report = check_memory(mem.conn, now=clock.now())
        assert report["ok"], report["problems"]


def test_objects_sources_and_relations(old_home: Path, clock: ManualClock) -> None:
    Memory.migrate(old_home, clock=clock)
    with Memory.open(old_home, clock=clock) as mem:
        qhy = mem.read_object("person:qhy")["object"]
        assert qhy["version"] == 3
        assert [v["version"] for v in mem.conn.execute(
            "SELECT version FROM object_versions WHERE object_id = 'person:qhy'")] == [1, 2, 3]
        assert {e["event_id"] for e in mem.conn.execute(
            "SELECT event_id FROM evidence WHERE object_id = 'person:qhy'")} == {2, 4, 20}
        legacy = mem.conn.execute("SELECT label FROM relations WHERE legacy = 1").fetchone()
        assert legacy["label"].startswith("是林梅的同事")
        assert mem.read_object("knowledge:old-rule")["object"]["status"] == "archived"
        assert len(mem.read_object("knowledge:long-notes")["object"]["body"]) == 16_000
        assert mem.find("秦浩宇")["hits"][0]["id"] == "person:qhy"


def test_from_copies_and_leaves_the_source_untouched(tmp_path: Path) -> None:
    source = build_legacy_db(tmp_path / "old.db")
    before = digest(source)
    result = CliRunner().invoke(main, ["--home", str(tmp_path / "home"), "migrate", "--from",
                                       str(source), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["after"]["pending"] == EXPECTED["pending"]
    assert digest(source) == before
    again = CliRunner().invoke(main, ["--home", str(tmp_path / "home"), "migrate", "--from",
                                      str(source)])
    assert again.exit_code == 1 and "already exists" in again.output


def test_rerun_changes_nothing(old_home: Path, clock: ManualClock) -> None:
    first = Memory.migrate(old_home, clock=clock)
    second = Memory.migrate(old_home, clock=clock)
    assert second["legacy"] is False and second["schema_migrations"] == []
    assert second["earlier_upgrade"]["after"] == first["after"]
    with Memory.open(old_home, clock=clock) as mem:
        assert count(mem.conn, "events") == EXPECTED["events"]


def test_refuses_while_an_old_worker_holds_the_lease(tmp_path: Path, clock: ManualClock) -> None:
    home = tmp_path / "home"
    home.mkdir()
    future_ms = to_micros(clock.now()) // 1000 + 60_000
    db = build_legacy_db(home / "memory.db", lease_expires_ms=future_ms)
    before = digest(db)
    with pytest.raises(MigrationRefused, match="old-protocol worker .*deskpaw-agent"):
        Memory.migrate(home, clock=clock)
    assert digest(db) == before


def test_refuses_while_a_memvault_worker_holds_the_lease(
    old_home: Path, clock: ManualClock,
) -> None:
    db = old_home / "memory.db"
    with sqlite3.connect(db, isolation_level=None) as conn:  # an earlier, interrupted upgrade
        apply_migrations(conn)
        # valid for years: the CLI runs on the real clock
        conn.execute("INSERT INTO leases VALUES ('worker', 'w1', NULL, ?, ?)",
                     (NOW, to_micros(parse_time("2999-01-01T00:00:00+00:00"))))
    result = CliRunner().invoke(main, ["--home", str(old_home), "migrate"])
    assert result.exit_code == 1 and "memvault worker (w1) holds the lease" in result.output
    with sqlite3.connect(db) as conn:
        assert count(conn, "events") == 0 and count(conn, "memory_snapshots",
                                                     "status = 'running'") == 2


def test_other_commands_refuse_an_unmigrated_database(old_home: Path) -> None:
    for args in (["status"], ["list", "person"], ["compact"]):
        result = CliRunner().invoke(main, ["--home", str(old_home), *args])
        assert result.exit_code == 1, args
        assert "original (pre-memvault) design" in result.output
        assert "memvault migrate" in result.output
    with pytest.raises(StoreError, match="original"):
        Memory.open(old_home)


def test_bad_old_data_is_refused_before_anything_changes(old_home: Path) -> None:
    db = old_home / "memory.db"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE hot_timeline SET text = 'tampered' WHERE id = 'raw_5'")
    before = digest(db)
    with pytest.raises(LegacyDataError, match="raw_5.*does not match"):
        Memory.migrate(old_home)
    assert digest(db) == before


def test_work_resumes_after_the_upgrade(old_home: Path, clock: ManualClock) -> None:
    """The builtin model organizes every pending event; blocked ones wait for retry_blocked."""
    Memory.migrate(old_home, clock=clock)
    with Memory.open(old_home, clock=clock) as mem:
        mem.organize(compact_first=False)  # the events the upgrade queued, no more
        worker = Worker(mem, BuiltinProvider(), holder="w", scheduler=False)
        run_until_idle(worker)
        states = dict(mem.conn.execute(
            "SELECT state, COUNT(*) FROM archive_queue GROUP BY state").fetchall())
        assert states.get("pending", 0) == 0 and states.get("continue", 0) == 0
        assert states["blocked"] == 2
        assert states.get("linked", 0) + states.get("archive_only", 0) == EXPECTED["pending"]
        mem.organize(retry_blocked=True)
        run_until_idle(worker)
        assert count(mem.conn, "archive_queue", "state = 'blocked'") == 0
        assert check_memory(mem.conn, now=clock.now())["ok"]


def test_in_place_copy_of_a_backup(tmp_path: Path, clock: ManualClock) -> None:
    """The spec's path: migrate a backup copy, never the only copy."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(build_legacy_db(tmp_path / "old.db"), home / "memory.db")
    assert Memory.migrate(home, clock=clock)["after"]["events"] == EXPECTED["events"]


def test_a_core_document_memvault_cannot_hold_is_reported_and_kept(
    old_home: Path, clock: ManualClock,
) -> None:
    with sqlite3.connect(old_home / "memory.db") as conn:
        conn.execute("INSERT INTO core_documents VALUES ('USER.md', ?, ?)", ("a\x00b", NOW))
    report = Memory.migrate(old_home, clock=clock)
    assert report["changes"]["core_skipped"] == ["USER.md: holds a NUL character"]
    assert report["changes"]["core_imported"] == ["AGENTS.md"]
    with sqlite3.connect(old_home / "memory.db") as conn:
        assert conn.execute("SELECT content FROM core_documents WHERE name = 'USER.md'"
                            ).fetchone()[0] == "a\x00b"
