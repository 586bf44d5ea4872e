"""Schema migrations: from an empty file, idempotent, atomic, safe when two openers race, and
refusing databases that are missing, unmigrated, newer or not SQLite at all."""

from __future__ import annotations

import gzip
import sqlite3
import threading
from pathlib import Path

import pytest
from memvault.base.errors import StoreError
from memvault.home import migrations
from memvault.home.migrations import apply_migrations, open_home_db, pending_migrations
from memvault.store.connection import get_state, graph_revision
from sqlite_utils import Database

EXPECTED_TABLES = {
    "_migrations", "events", "jobs", "batches", "hot_nodes", "archive_queue", "objects",
    "object_versions", "relations", "evidence", "core_files", "deep_snapshot", "leases",
    "receipts", "model_calls", "projection", "projection_errors", "state",
}


def test_migrations_from_empty_create_every_table(tmp_path: Path) -> None:
    db_path = tmp_path / "fresh" / "memory.db"
    conn = open_home_db(db_path)
    try:
        tables = set(Database(conn).table_names())
        assert EXPECTED_TABLES <= tables, EXPECTED_TABLES - tables
        names = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert names == [m.__name__ for m in migrations.MIGRATIONS]  # applied in list order
        assert pending_migrations(conn) == []
        assert graph_revision(conn) == 0
        assert get_state(conn, "graph_revision") == "0"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        triggers = {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
        assert {"events_no_update", "events_no_delete"} <= triggers
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_migrations_are_idempotent(tmp_path: Path) -> None:
    db_path = tmp_path / "memory.db"
    open_home_db(db_path).close()
    conn = open_home_db(db_path)
    try:
        assert apply_migrations(conn) == []
        assert conn.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0] == len(
            migrations.MIGRATIONS
        )
    finally:
        conn.close()


def test_a_failing_migration_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def m999_broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    db_path = tmp_path / "memory.db"
    open_home_db(db_path).close()
    real = [m.__name__ for m in migrations.MIGRATIONS]
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, m999_broken])
    with pytest.raises(RuntimeError, match="boom"):
        open_home_db(db_path)
    conn = sqlite3.connect(db_path)
    try:
        tables = set(Database(conn).table_names())
        assert "half_done" not in tables
        done = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert done == real
    finally:
        conn.close()


def test_two_openers_racing_on_a_fresh_database_both_succeed(tmp_path: Path) -> None:
    """B reads the applied list, then waits for the write lock while A migrates: B must notice."""
    db_path = tmp_path / "memory.db"
    a = sqlite3.connect(db_path, isolation_level=None)
    a.execute("PRAGMA journal_mode = WAL")
    a.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    a.execute("BEGIN IMMEDIATE")

    b_waiting = threading.Event()

    class SignallingConnection(sqlite3.Connection):
        def execute(self, sql: str, *args):  # type: ignore[override]
            if sql == "BEGIN IMMEDIATE":
                b_waiting.set()
            return super().execute(sql, *args)

    outcome: dict[str, object] = {}

    def b_opens() -> None:
        b = sqlite3.connect(db_path, isolation_level=None, factory=SignallingConnection,
                            timeout=30, check_same_thread=False)
        try:
            outcome["applied"] = apply_migrations(b)
        except BaseException as exc:  # noqa: BLE001 - reported through the assertion below
            outcome["error"] = exc
        finally:
            b.close()

    thread = threading.Thread(target=b_opens)
    thread.start()
    assert b_waiting.wait(30), "B never asked for the write lock"
    for migration in migrations.MIGRATIONS:
        migration(a)
        a.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, 'now')",
                  (migration.__name__,))
    a.execute("COMMIT")
    thread.join(30)
    a.close()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["applied"] == []


def test_readonly_open_of_a_missing_database_is_a_clear_error(tmp_path: Path) -> None:
    db_path = tmp_path / "nowhere" / "memory.db"
    with pytest.raises(StoreError, match="no memory at"):
        open_home_db(db_path, readonly=True)
    assert not db_path.exists()
    assert not db_path.parent.exists()


def test_readonly_open_of_an_unmigrated_database_is_refused(tmp_path: Path) -> None:
    db_path = tmp_path / "memory.db"
    sqlite3.connect(db_path).close()  # an empty SQLite file
    with pytest.raises(StoreError, match="needs migrations m001_initial"):
        open_home_db(db_path, readonly=True)


def test_readonly_connection_cannot_write(tmp_path: Path) -> None:
    db_path = tmp_path / "memory.db"
    open_home_db(db_path).close()
    conn = open_home_db(db_path, readonly=True)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("INSERT INTO state (key, value) VALUES ('x', 'y')")
    finally:
        conn.close()


def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    db_path = tmp_path / "memory.db"
    conn = open_home_db(db_path)
    conn.execute("INSERT INTO _migrations (name, applied_at) VALUES ('m999_future', 'now')")
    conn.close()
    with pytest.raises(StoreError, match="newer version"):
        open_home_db(db_path)
    with pytest.raises(StoreError, match="newer version"):  # read-only commands refuse too
        open_home_db(db_path, readonly=True)


@pytest.mark.parametrize("readonly", [False, True])
def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path: Path, readonly: bool) -> None:
    db_path = tmp_path / "memory.db"
    garbage = b"this is not a database, just some bytes " * 100
    db_path.write_bytes(garbage)
    with pytest.raises(StoreError, match="not a readable SQLite database"):
        open_home_db(db_path, readonly=readonly)
    assert db_path.read_bytes() == garbage


def test_schema_refuses_rows_that_break_invariants(tmp_path: Path) -> None:
    conn = open_home_db(tmp_path / "memory.db")
    try:
        now = "2026-10-13T12:00:00+08:00"
        with pytest.raises(sqlite3.IntegrityError):  # id must start with its type
            conn.execute(
                "INSERT INTO objects (id, type, name, created_at, updated_at)"
                " VALUES ('task:x', 'person', 'x', ?, ?)", (now, now),
            )
        conn.execute(
            "INSERT INTO objects (id, type, name, created_at, updated_at)"
            " VALUES ('person:a', 'person', 'a', ?, ?)", (now, now),
        )
        with pytest.raises(sqlite3.IntegrityError):  # long relation labels are legacy only
            conn.execute(
                "INSERT INTO relations (src_id, label, dst_id, created_at)"
                " VALUES ('person:a', 'is the manager of', 'person:a', ?)", (now,),
            )
        with pytest.raises(sqlite3.IntegrityError):  # summary <= 400
            conn.execute("UPDATE objects SET summary = ? WHERE id = 'person:a'", ("x" * 401,))
        with pytest.raises(sqlite3.IntegrityError):  # foreign keys are enforced
            conn.execute(
                "INSERT INTO evidence (object_id, event_id, start_char, end_char, created_at)"
                " VALUES ('person:a', 12345, 0, 1, ?)", (now,),
            )
    finally:
        conn.close()


def test_connections_opening_a_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    """The switch to WAL races on a new file; the loser used to get 'database is locked'."""
    failures: list[BaseException] = []
    for attempt in range(30):
        db_path = tmp_path / f"memory-{attempt}.db"
        barrier = threading.Barrier(3)

        def open_once(path: Path = db_path, gate: threading.Barrier = barrier) -> None:
            gate.wait()
            try:
                open_home_db(path).close()
            except BaseException as exc:  # surfaced below
                failures.append(exc)

        threads = [threading.Thread(target=open_once) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert failures == []


def test_the_domain_vocabulary_is_what_the_schema_checks(tmp_path: Path) -> None:
    """The object types, relation labels, core file names and queue states live with the
    domain; the schema's CHECK lists (m001's text, kept beside them in each feature's schema
    module as history) must say the same."""
    from memvault.objects.corefiles import CORE_FILES
    from memvault.objects.ids import OBJECT_TYPES, RELATION_LABELS
    from memvault.timeline.queue import EVENT_STATES

    conn = open_home_db(tmp_path / "memory.db")
    try:
        schema = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    finally:
        conn.close()

    def listed(values: tuple[str, ...]) -> str:
        return "(" + ", ".join(f"'{v}'" for v in values) + ")"

    assert f"type IN {listed(OBJECT_TYPES)}" in schema["objects"]
    assert f"label IN {listed(RELATION_LABELS)}" in schema["relations"]
    assert f"name IN {listed(CORE_FILES)}" in schema["core_files"]
    assert f"state IN {listed(EVENT_STATES)}" in schema["archive_queue"]


def _schema(conn: sqlite3.Connection) -> dict[tuple[str, str], str | None]:
    return {(kind, name): sql for kind, name, sql in conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}


def test_a_home_made_before_features_owned_their_schema_opens_as_it_was(tmp_path: Path) -> None:
    """tests/data/home-before-features.db.gz is a home made by memvault c33d67e, when every
    migration lived in store/: twelve sample events ingested, organized, deep-reviewed and
    rendered. It opens with nothing left to apply, its schema is exactly a fresh home's (every
    table, index, trigger and view, by its SQL), and its memory reads and grows as before."""
    from memvault import Memory

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    packed = Path(__file__).parent / "data" / "home-before-features.db.gz"
    (home / "memory.db").write_bytes(gzip.decompress(packed.read_bytes()))
    (home / "memory.db").chmod(0o600)
    fresh = open_home_db(tmp_path / "fresh.db")
    try:
        expected = _schema(fresh)
    finally:
        fresh.close()
    with Memory.open(home) as mem:
        assert pending_migrations(mem.conn) == []
        assert _schema(mem.conn) == expected
        counts = {table: mem.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                  for table in ("events", "objects", "evidence", "projection")}
        assert counts == {"events": 12, "objects": 7, "evidence": 9, "projection": 11}
        hits = mem.find("passport")["hits"]
        assert any(hit["id"] == "todo:renew-the-passport" for hit in hits)
        mem.append_event("Renewed the passport today.", "2026-11-03T09:00:00+00:00")
        assert mem.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 13
