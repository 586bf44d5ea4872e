"""service/host.py in-process: JSON-lines logs, socket binding, task supervision, a clean stop."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from memvault.base.errors import InputError
from memvault.service import host as service_mod
from memvault.service.host import (
    BackgroundTask,
    JsonLinesFormatter,
    Listen,
    Service,
    _Runner,
    bind_tcp,
    bind_unix,
    check_loopback,
    log_event,
)
from memvault.service.mcp_server import open_client, tool_payload
from memvault.service.switch import switch_interval


def wait_for(predicate: Any, timeout: float = 10.0, step: float = 0.02) -> Any:
    """Poll `predicate` until it returns something truthy, or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short directory for Unix sockets (sun_path holds ~104 bytes; tmp_path may not fit)."""
    path = Path(tempfile.mkdtemp(prefix="mv", dir="/tmp"))
    try:
        yield path
    finally:
        for child in path.iterdir():
            child.unlink()
        path.rmdir()


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLinesFormatter())
    logger = logging.getLogger("memvault")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def events(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


# -- logs ---------------------------------------------------------------------------------------
def test_log_lines_are_one_json_object_each(captured: io.StringIO) -> None:
    logger = logging.getLogger("memvault.test")
    log_event(logger, "batch_committed", job_id=3, note="两行\n文字", event="clash")
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        log_event(logger, "task_crashed", logging.ERROR, exc_info=True, task="watcher")
    lines = captured.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["event"] == "batch_committed" and first["job_id"] == 3
    assert first["note"] == "两行\n文字" and first["field_event"] == "clash"
    assert first["level"] == "info" and first["logger"] == "memvault.test"
    assert first["ts"].endswith("+00:00")
    assert second["level"] == "error" and "ValueError: bad" in second["traceback"]


# -- listening ------------------------------------------------------------------------------------
def test_bind_unix_is_private_and_replaces_a_stale_socket(short_dir: Path) -> None:
    path = short_dir / "s.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody accepts: what a killed service leaves
    sock = bind_unix(path)
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with pytest.raises(InputError, match="another service is listening"):
            bind_unix(path)
    finally:
        sock.close()
        path.unlink()


def test_bind_unix_refuses_other_files_and_long_paths(short_dir: Path) -> None:
    plain = short_dir / "not-a-socket"
    plain.write_text("keep me")
    with pytest.raises(InputError, match="not a socket"):
        bind_unix(plain)
    assert plain.read_text() == "keep me"
    with pytest.raises(InputError, match="pass a shorter --socket"):
        bind_unix(short_dir / ("x" * 120))


def test_tcp_connections_send_without_nagle_delay() -> None:
    """Every accepted loopback connection has TCP_NODELAY: asyncio sets it only on sockets
    that say IPPROTO_TCP, and without it each answer waited ~40 ms for a delayed ACK."""
    listener = bind_tcp("127.0.0.1", 0)
    client = socket.create_connection(listener.getsockname()[:2], timeout=10)
    try:
        listener.setblocking(True)
        listener.settimeout(10)
        accepted, _ = listener.accept()
        with accepted:
            assert accepted.proto == socket.IPPROTO_TCP
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        client.close()
        listener.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"])
def test_loopback_hosts_are_allowed(host: str) -> None:
    assert check_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.2", "example.com", "::"])
def test_other_hosts_are_refused(host: str) -> None:
    with pytest.raises(InputError, match="loopback"):
        check_loopback(host)


# -- supervision ----------------------------------------------------------------------------------
def test_a_crashed_task_is_restarted_with_backoff(
        monkeypatch: pytest.MonkeyPatch, captured: io.StringIO) -> None:
    monkeypatch.setattr(service_mod, "RESTART_MIN_S", 0.01)
    stop = threading.Event()
    runs: list[float] = []

    def flaky(stop_event: threading.Event) -> None:
        runs.append(time.monotonic())
        if len(runs) < 3:
            raise RuntimeError("watcher died")
        stop_event.wait()

    runner = _Runner(BackgroundTask("flaky", flaky), stop)
    runner.start()
    wait_for(lambda: len(runs) >= 3)
    stop.set()
    runner.join(5)
    assert not runner.is_alive()
    names = [e["event"] for e in events(captured)]
    assert names.count("task_crashed") == 2 and names.count("task_restarting") == 2
    delays = [e["delay_s"] for e in events(captured) if e["event"] == "task_restarting"]
    assert delays == [0.01, 0.02]


def test_a_task_without_restart_stays_down(captured: io.StringIO) -> None:
    stop = threading.Event()
    runs: list[int] = []

    def once(stop_event: threading.Event) -> None:
        runs.append(1)
        raise RuntimeError("no")

    runner = _Runner(BackgroundTask("once", once, restart=False), stop)
    runner.start()
    runner.join(5)
    assert runs == [1] and not runner.is_alive()


# -- the service, in a thread ---------------------------------------------------------------------
def test_service_serves_and_stops_cleanly(home: Path, short_dir: Path,
                                          captured: io.StringIO) -> None:
    path = short_dir / "api.sock"
    beats: list[float] = []

    def heartbeat(stop: threading.Event) -> None:
        while not stop.wait(0.01):
            beats.append(time.monotonic())

    service = Service(home, Listen(socket=path), tasks=[BackgroundTask("beat", heartbeat)],
                      shutdown_grace_s=5)
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(service.run()))
    thread.start()
    try:
        wait_for(lambda: any(e["event"] == "service_ready" for e in events(captured)))

        async def talk() -> dict[str, Any]:
            async with open_client(socket_path=path) as client:
                await client.call_tool("memory_append", {"text": "hello"})
                return tool_payload(await client.call_tool("memory_status", {}))

        assert anyio.run(talk)["events"]["total"] == 1
        wait_for(lambda: beats)
    finally:
        service.stop("test")
        thread.join(15)
    assert status == [0]
    assert not path.exists()
    names = [e["event"] for e in events(captured)]
    assert names.index("service_ready") < names.index("task_started")  # API first
    assert "task_stopped" in names and names[-1] == "service_stopped"


def test_service_refuses_a_socket_in_use(home: Path, short_dir: Path) -> None:
    path = short_dir / "busy.sock"
    holder = bind_unix(path)
    try:
        with pytest.raises(InputError, match="another service"):
            Service(home, Listen(socket=path)).run()
    finally:
        holder.close()
        path.unlink()


def run_in_thread(service: Service) -> tuple[threading.Thread, list[int]]:
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(service.run()))
    thread.start()
    return thread, status


def test_the_service_runs_the_worker(home: Path, short_dir: Path,
                                     captured: io.StringIO) -> None:
    from memvault import Memory
    from memvault.cli.work import make_worker

    with Memory.open(home) as mem:
        for i in range(12):
            mem.append_event(f"Note {i}: Alice prefers tea; TODO: send Bob invoice #{i}.")
        mem.compact()  # an explicit request: the service's worker runs it
    service = Service(home, Listen(socket=short_dir / "w.sock"),
                      worker=lambda mem, on_tick: make_worker(mem, "builtin", on_tick=on_tick))
    thread, status = run_in_thread(service)
    try:
        wait_for(lambda: any(e["event"] == "batch_committed" for e in events(captured)), 60)
    finally:
        service.stop("test")
        thread.join(30)
    assert status == [0]
    committed = [e for e in events(captured) if e["event"] == "batch_committed"]
    assert committed[0]["receipt"]["mode"] == "compact"
    names = [e["event"] for e in events(captured)]
    assert "worker_started" in names and "worker_stopped" in names


def test_shutdown_waits_for_a_task_within_the_grace(home: Path, short_dir: Path,
                                                    captured: io.StringIO) -> None:
    """A batch in flight finishes when it can; past the grace it is left to its lease."""
    finished: list[str] = []

    def slow_batch(name: str, seconds: float) -> BackgroundTask:
        def run(stop: threading.Event) -> None:
            stop.wait()
            time.sleep(seconds)  # the tick in flight, which does not look at `stop`
            finished.append(name)

        return BackgroundTask(name, run)

    service = Service(home, Listen(socket=short_dir / "g.sock"),
                      tasks=[slow_batch("quick", 0.2), slow_batch("stuck", 30)],
                      shutdown_grace_s=1.0)
    thread, status = run_in_thread(service)
    wait_for(lambda: sum(e["event"] == "task_started" for e in events(captured)) == 2)
    started = time.monotonic()
    service.stop("test")
    thread.join(20)
    assert status == [0] and time.monotonic() - started < 10
    assert finished == ["quick"]
    by_task = {e["task"]: e["event"] for e in events(captured)
               if e["event"] in ("task_stopped", "task_abandoned")}
    assert by_task == {"quick": "task_stopped", "stuck": "task_abandoned"}


def test_serving_lowers_the_gil_switch_interval_and_restores_it(home: Path,
                                                                 short_dir: Path) -> None:
    """A busy worker thread must not hold the API's thread hops for 5 ms each: the
    service lowers the switch interval while it runs and puts the caller's value back."""
    seen: list[float] = []

    def probe(stop: threading.Event) -> None:
        seen.append(sys.getswitchinterval())
        stop.wait()

    before = sys.getswitchinterval()
    service = Service(home, Listen(socket=short_dir / "s.sock"),
                      tasks=[BackgroundTask("probe", probe)], shutdown_grace_s=5)
    thread, status = run_in_thread(service)
    try:
        wait_for(lambda: seen)
    finally:
        service.stop("test")
        thread.join(15)
    assert status == [0]
    assert seen == [service_mod.SERVE_SWITCH_INTERVAL_S] and before > seen[0]
    assert sys.getswitchinterval() == before


def test_overlapping_services_restore_the_process_switch_interval() -> None:
    """Two Services in threads whose runs overlap (the first stops while the second serves):
    the interval stays lowered until the last one stops, then the process's own comes back."""
    original = sys.getswitchinterval()
    first, second = switch_interval(0.0005), switch_interval(0.0005)
    try:
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        during = sys.getswitchinterval()
        second.__exit__(None, None, None)
        assert during == 0.0005 and sys.getswitchinterval() == original
    finally:
        sys.setswitchinterval(original)
