"""Trust in the home: private permissions, committed events acknowledged, bounded meta, reads on
a read-only home, one clear error for a deeply nested memvault.toml, and check severities."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import T0, count, run_cli, write_config
from memvault import ManualClock, Memory
from memvault.base.errors import IngestError, InputError, StoreError
from memvault.home.check import check_memory
from memvault.store import connection
from memvault.store.connection import write
from memvault.timeline import ingest as ingest_module
from memvault.timeline.events import META_MAX_BYTES, META_MAX_DEPTH, NewEvent
from memvault.timeline.keys import Appended


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """The common 022 umask, under which plain creation gives 0755 folders and 0644 files."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# -- 3. permissions ---------------------------------------------------------------------------

def test_a_new_home_and_every_file_in_it_are_private(home: Path, loose_umask: None) -> None:
    with Memory.open(home) as mem:
        mem.append_event("my API key is sk-test-123")
        assert (home / "memory.db-wal").exists()  # open, so the WAL and its index exist
        assert {p.name: mode(p) for p in home.iterdir()} == {
            "memory.db": 0o600, "memory.db-wal": 0o600, "memory.db-shm": 0o600,
            "memvault.toml": 0o600}
        assert mode(home) == 0o700
        assert mem.notices == []  # created private: nothing to tighten


def nested(depth: int) -> dict:
    """A meta object nested `depth` levels deep (the object itself is level 1)."""
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_an_older_home_is_tightened_once_and_links_are_not_followed(
        home: Path, runner: CliRunner, tmp_path: Path, loose_umask: None) -> None:
    run_cli(runner, "ingest", "-", input='{"text": "hello"}\n')
    outside = tmp_path / "outside.txt"
    outside.write_text("not the home's")
    outside.chmod(0o644)
    (home / "link").symlink_to(outside)
    (home / "vault").mkdir()
    for path, loose in ((home, 0o755), (home / "vault", 0o755), (home / "memory.db", 0o644),
                        (home / "memvault.toml", 0o644)):
        path.chmod(loose)

    result = run_cli(runner, "ingest", "--json", "-", input='{"text": "again"}\n')
    assert json.loads(result.stdout) == {"stored": [2], "skipped": []}  # notice off stdout
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"tightened permissions of {home}: was 0755, now 0700")
    assert "memory.db: was 0644, now 0600" in result.stderr
    assert "vault: was 0755, now 0700" in result.stderr
    assert mode(home) == 0o700 and mode(home / "vault") == 0o700
    assert mode(home / "memory.db") == mode(home / "memvault.toml") == 0o600
    assert mode(outside) == 0o644  # the symlink's target is left alone

    result = run_cli(runner, "ingest", "-", input='{"text": "third"}\n')
    assert result.stderr == ""  # said once: nothing left to tighten


def test_check_reports_a_home_others_can_read(home: Path, runner: CliRunner) -> None:
    run_cli(runner, "ingest", "-", input='{"text": "hello"}\n')
    home.chmod(0o755)
    (home / "memory.db").chmod(0o644)
    report = json.loads(run_cli(runner, "check", "--json", code=1).stdout)
    [finding] = [p for p in report["problems"] if p["kind"] == "permissions"]
    assert finding["severity"] == "error"
    # the read connection made the -wal/-shm with the database file's mode: listed as well
    assert finding["ids"][:2] == [str(home), str(home / "memory.db")]
    assert set(finding["ids"][2:]) <= {str(home / "memory.db-shm"), str(home / "memory.db-wal")}
    assert "0755" in finding["detail"] and "0644" in finding["detail"]
    assert mode(home) == 0o755  # check only reads: it changes nothing

    run_cli(runner, "ingest", "-", input='{"text": "tightens"}\n')
    run_cli(runner, "check")


# -- 6. a stale claim is a warning ------------------------------------------------------------

def test_a_stale_claim_is_a_warning_and_check_exits_0(mem: Memory, clock: ManualClock,
                                                      runner: CliRunner) -> None:
    stamp = (clock.now() - timedelta(hours=1)).isoformat()
    with write(mem.conn):
        job = mem.conn.execute("INSERT INTO jobs (mode, origin, state, created_at) VALUES"
                               " ('organize', 'explicit', 'running', ?)", (stamp,)).lastrowid
        batch = mem.conn.execute(
            "INSERT INTO batches (job_id, state, claim, base_revision, claimed_at)"
            " VALUES (?, 'claimed', '{}', 0, ?)", (job, stamp)).lastrowid
    report = check_memory(mem.conn, now=clock.now())
    assert report["ok"] and report["errors"] == 0
    [finding] = report["problems"]
    assert (finding["kind"], finding["severity"], finding["ids"]) == (
        "stale_claim", "warning", [batch])

    report = json.loads(run_cli(runner, "check", "--json").stdout)
    assert [(p["kind"], p["severity"]) for p in report["problems"]] == [
        ("stale_claim", "warning")]
    assert "all warnings" in run_cli(runner, "check").output


# -- 5. a full disk after the commit ----------------------------------------------------------

@pytest.mark.parametrize("as_json", [False, True])
def test_an_index_failure_after_the_commit_acknowledges_the_events(
        home: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, as_json: bool) -> None:
    from memvault.recall import index

    def full(*args: object, **kwargs: object) -> dict:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(index, "sync_index", full)
    args = ["ingest", *(["--json"] if as_json else []), "-"]
    result = run_cli(runner, *args, input='{"text": "a"}\n{"text": "b"}\n')
    if as_json:
        assert json.loads(result.stdout) == {"stored": [1, 2], "skipped": [],
                                             "index_deferred": "database or disk is full"}
    else:
        assert result.stdout == "stored 2 event(s): ids 1–2\n"
    assert "deferred (database or disk is full)" in result.stderr
    with Memory.open(home, readonly=True) as mem:
        assert count(mem.conn, "events") == 2


def test_a_chunk_the_database_refuses_names_what_was_stored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_module, "CHUNK", 2)
    calls: list[int] = []

    def store(conn: object, events: list[NewEvent], now: object, tz: object,
              space: str = "shared") -> Appended:
        if calls:
            raise sqlite3.OperationalError("database or disk is full")
        calls.extend(range(1, len(events) + 1))
        return Appended(list(calls), list(calls), [])

    monkeypatch.setattr(ingest_module, "append_events", store)
    lines = [json.dumps({"text": f"e{i}"}) for i in range(5)]
    with pytest.raises(IngestError) as caught:
        ingest_module.ingest_lines(None, lines, T0, None)  # type: ignore[arg-type]
    assert caught.value.stored == [1, 2] and caught.value.line == 3
    assert str(caught.value) == ("line 3: the database refused: database or disk is full. "
                                 "Stopped there; the 2 event(s) before it are stored.")


# -- 9. meta bounds ---------------------------------------------------------------------------

def test_meta_over_16_kib_is_refused_on_every_surface(mem: Memory, runner: CliRunner) -> None:
    big = {"blob": "x" * META_MAX_BYTES}
    with pytest.raises(InputError, match=r"meta is 16,395 bytes of JSON; .* at most 16,384"):
        mem.append_event("hi", meta=big)
    mem.append_event("fits", meta={"blob": "x" * (META_MAX_BYTES - 11)})  # exactly 16 KiB
    # the slow encoder (an int key orjson refuses) is bounded too
    with pytest.raises(InputError, match="at most 16,384"):
        mem.append_event("hi", meta={1: "é" * META_MAX_BYTES})
    result = run_cli(runner, "ingest", "-", code=1,
                     input=json.dumps({"text": "hi", "meta": big}) + "\n")
    assert "line 1: meta is 16,395 bytes" in result.output
    answer = call_tool(mem, "memory_append", text="hi", meta=big)
    assert answer.is_error and "meta is 16,395 bytes" in answer.content[0].text
    assert count(mem.conn, "events") == 1


def call_tool(mem: Memory, name: str, **args: object) -> Any:
    """Call one MCP tool through an in-process client session."""
    import anyio
    from mcp.client import Client
    from memvault.service.mcp_server import build_server

    async def go() -> Any:
        async with Client(build_server(mem)) as client:
            return await client.call_tool(name, args)

    return anyio.run(go)


def test_meta_nested_too_deeply_is_one_clear_error(mem: Memory, runner: CliRunner) -> None:
    mem.append_event("deep enough", meta=nested(META_MAX_DEPTH))
    for depth in (META_MAX_DEPTH + 1, 300, 5_000):  # 5,000 would overflow the json module
        with pytest.raises(InputError, match="nested more than 32 levels"):
            mem.append_event("too deep", meta=nested(depth))
    with pytest.raises(InputError, match="nested more than 32 levels"):
        mem.append_event("a list too", meta={"a": _deep_list(40)})
    result = run_cli(runner, "ingest", "-", code=1,
                     input='{"text": "x", "meta": ' + '{"a": ' * 40 + "1" + "}" * 41 + "\n")
    assert "line 1: meta is nested more than 32 levels deep" in result.output
    # past 64 levels the line is refused before it is parsed (memvault.base.json_depth)
    result = run_cli(runner, "ingest", "-", code=1,
                     input='{"text": "x", "meta": ' + '{"a": ' * 500 + "1" + "}" * 501 + "\n")
    assert "line 1: JSON nested more than 64 levels deep" in result.output
    assert "an event's meta holds at most 32 levels" in result.output
    assert count(mem.conn, "events") == 1


def _deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


# -- 10. a read-only home, a deep memvault.toml, doubled words --------------------------------

def test_a_read_connection_falls_back_to_immutable_where_the_wal_cannot_be_made(
        home: Path, mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    mem.append_event("readable")
    mem.close()
    real = sqlite3.connect
    uris: list[str] = []

    def refusing(database: str, *args: object, **kwargs: object) -> sqlite3.Connection:
        uris.append(database)
        if "immutable=1" not in database:
            raise sqlite3.OperationalError("unable to open database file")
        return real(database, *args, **kwargs)

    monkeypatch.setattr(connection.sqlite3, "connect", refusing)
    monkeypatch.setattr(connection, "readonly_reason", lambda path: "the filesystem is read-only")
    with Memory.open(home, readonly=True) as ro:
        assert ro.read_event(1)["text"] == "readable"
    assert uris[-1].endswith("?mode=ro&immutable=1")

    # Commits still in the -wal would be skipped by immutable=1: refused, not misreported.
    (home / "memory.db-wal").write_bytes(b"x" * 32)
    with pytest.raises(StoreError, match="memory.db-wal holds the latest writes"):
        Memory.open(home, readonly=True)
    (home / "memory.db-wal").unlink()

    # A writable folder: the refusal is a real error, never hidden behind immutable=1.
    monkeypatch.setattr(connection, "readonly_reason", lambda path: None)
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        Memory.open(home, readonly=True)


def test_a_write_on_a_read_only_home_says_so(home: Path, mem: Memory,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    mem.close()
    monkeypatch.setattr(connection.os, "access", lambda path, how: how != os.W_OK)
    assert connection.readonly_reason(home / "memory.db") == "the memory home is not writable"

    def refusing(*args: object, **kwargs: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(connection.sqlite3, "connect", refusing)
    with pytest.raises(StoreError, match="memory home is not writable; read commands"):
        Memory.open(home)


def _nobody() -> tuple[int, int] | None:
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


@pytest.mark.skipif(os.geteuid() != 0 or _nobody() is None or not hasattr(os, "fork"),
                    reason="needs root (to become `nobody`) and fork")
def test_reads_work_on_a_home_the_user_cannot_write(runner: CliRunner,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """As `nobody`, a home it owns but may not write (0500, files 0400): what a read-only
    filesystem does to SQLite (no -shm can be created). A forked child drops to `nobody`; the
    interpreter's own files may be out of its reach, so everything is imported first."""
    uid, gid = _nobody()  # type: ignore[misc]
    base = Path(tempfile.mkdtemp(prefix="memvault-ro-"))
    try:
        base.chmod(0o755)
        ro_home = base / "home"
        monkeypatch.setenv("MEMVAULT_HOME", str(ro_home))
        run_cli(runner, "ingest", "-", input='{"text": "written before"}\n')
        commands = (["status", "--json"], ["timeline", "--json"], ["find", "written"],
                    ["ingest", "-"])
        for args in commands[:-1]:  # warm every lazy import up while the files are readable
            run_cli(runner, *args)
        for path in ro_home.iterdir():
            os.chown(path, uid, gid)
            path.chmod(0o400)
        os.chown(ro_home, uid, gid)
        ro_home.chmod(0o500)
        results = _run_as(uid, gid, runner, commands)
    finally:
        for path in (base, *base.rglob("*")):
            path.chmod(0o700)
        shutil.rmtree(base)
    for args, (code, output) in zip(commands[:-1], results[:-1], strict=True):
        assert code == 0, (args, output)
    assert "written before" in results[1][1]  # the timeline, read through immutable=1
    code, output = results[-1]
    assert code == 1 and "the memory home is not writable" in output, output
    assert "Traceback" not in output


def _run_as(uid: int, gid: int, runner: CliRunner, commands: tuple) -> list:
    """Run CLI commands in a child that became uid/gid; their (exit code, output)."""
    from memvault.cli import main

    read, written = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            out = []
            for args in commands:
                result = runner.invoke(main, list(args), input='{"text": "refused"}\n')
                out.append((result.exit_code, result.output))
            os.write(written, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(written)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


def test_a_deeply_nested_config_is_one_clear_error(home: Path, runner: CliRunner) -> None:
    write_config(home, "a = " + "[" * 500 + "]" * 500 + "\n")
    result = run_cli(runner, "status", code=1)
    assert result.output.strip().splitlines() == [
        f"Error: {home / 'memvault.toml'}: not valid TOML: nested too deeply"]


def test_ingest_errors_read_without_doubled_words(runner: CliRunner) -> None:
    result = run_cli(runner, "ingest", "-", code=1, input='{"text": "a\tb"}\n')
    assert "Invalid control character at column 12." in result.output
    assert "at at" not in result.output
    result = run_cli(runner, "ingest", "-", code=1,
                     input='{"text": "ok"}\n' + json.dumps({"text": "x" * 32_001}) + "\n")
    line = result.output.strip()
    assert ".." not in line and "Nothing was stored" not in line
    assert line.endswith("(split it into several events). Stopped there; the 1 event(s) "
                         "before it are stored.")


def test_many_first_opens_of_a_new_home_at_once_all_succeed(tmp_path: Path) -> None:
    """Threads (or a pool's connections) opening a home that does not exist yet: each gets a
    working memory; none reads a half-written memvault.toml or trips on another's create."""
    import threading

    home = tmp_path / "fresh"
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def first_open() -> None:
        try:
            barrier.wait(timeout=30)
            with Memory.open(home) as mem:
                mem.append_event("hello from a thread")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=first_open) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    with Memory.open(home) as mem:
        assert mem.status()["events"]["total"] == 8
        assert mem.conn.execute("SELECT COUNT(*) FROM objects WHERE id = 'project:daily'"
                                ).fetchone()[0] == 1
    assert not [p.name for p in home.iterdir() if p.name.endswith(".tmp")]
