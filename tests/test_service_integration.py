"""The service for real: `memvault serve` on a temporary Unix socket and a separate
`memvault worker`, driven through an MCP client.

The agent appends events (the hot timeline passes its threshold: the worker compacts on its
own), an explicit compaction covers the rest, `memory_organize` queues the archive, and reads
answer synchronously while batches run. The worker is SIGKILLed in the middle of an organize
batch (a slowed model marks the window), restarted as a plain `memvault worker`, re-claims the
batch once its lease expires, and finishes. Then: every event is there, byte for byte, each has
exactly one disposition, every committed batch has exactly one receipt and one graph revision,
the killed batch committed once. Finally SIGTERM stops `serve` cleanly.

Everything runs on a Unix socket in a private temporary folder; every wait polls with a
deadline. Model: the offline `builtin` provider (worker lease shortened to its minimum, 15 s).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from memvault.service.mcp_server import open_client, tool_payload

TESTS = Path(__file__).parent
CLI = [sys.executable, "-c", "import sys; from memvault.cli import main; sys.exit(main())"]
PEOPLE = ["张伟", "李娜", "王芳", "Alice Chen", "Bob Smith"]


def conversation() -> list[str]:
    """34 turns (~1,060 estimated tokens), Chinese and English; the builtin rules turn some
    into objects."""
    turns = []
    for i in range(34):
        who = PEOPLE[i % len(PEOPLE)]
        if i % 4 == 0:
            turns.append(f"记住：{who}负责第{i}版设计稿，周三下午三点前交给我们。")
        elif i % 4 == 1:
            turns.append(f"TODO: send {who} the invoice #{i} and confirm the garden plan by "
                         "Friday; the supplier wants a written answer before the weekend.")
        elif i % 4 == 2:
            turns.append(f"Remind me to call {who} about project Lighthouse, milestone {i}: "
                         "the beta review moved and the slides need the new numbers.")
        else:
            turns.append(f"Note {i}: {who} prefers tea over coffee, works late on Thursdays "
                         "and answers email faster than chat; keep meetings under 30 minutes.")
    return turns


def wait_for(predicate: Callable[[], Any], timeout: float, what: str,
             step: float = 0.05) -> Any:
    """Poll until `predicate()` is truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(step)


class Stack:
    """The processes of one test: started by it, stopped by it (by pid, bounded waits)."""

    def __init__(self, home: Path, run_dir: Path) -> None:
        self.home = home
        self.run_dir = run_dir
        self.socket = run_dir / "api.sock"
        self.marker = run_dir / "model-calls.jsonl"
        self.ticks = run_dir / "worker-ticks.jsonl"
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, args: list[str], log_name: str, env: dict[str, str] | None = None,
              program: list[str] | None = None) -> subprocess.Popen[bytes]:
        """Start `memvault --home H ARGS` (or `program`), output to run_dir/log_name."""
        with (self.run_dir / log_name).open("ab") as log:
            proc = subprocess.Popen([*(program or CLI), "--home", str(self.home), *args],
                                    stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    def log_lines(self, name: str) -> list[str]:
        path = self.run_dir / name
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def marks(self) -> list[dict[str, Any]]:
        if not self.marker.exists():
            return []
        return [json.loads(line) for line in self.marker.read_text().splitlines() if line]

    def tick_actions(self) -> list[str]:
        """What each finished tick of slow_worker.py's worker did, in order."""
        if not self.ticks.exists():
            return []
        lines = self.ticks.read_text().splitlines()
        return [json.loads(line)["action"] for line in lines if line.endswith("}")]


class Agent:
    """One MCP client session over the Unix socket, driven from sync test code."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.latencies: dict[str, list[float]] = {}

    def calls(self, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
        async def go() -> list[dict[str, Any]]:
            out = []
            async with open_client(socket_path=self.socket_path, timeout_s=20) as client:
                for name, args in calls:
                    started = time.monotonic()
                    out.append(tool_payload(await client.call_tool(name, args)))
                    self.latencies.setdefault(name, []).append(time.monotonic() - started)
            return out

        return anyio.run(go)

    def call(self, name: str, **args: Any) -> dict[str, Any]:
        return self.calls((name, args))[0]

    def reachable(self) -> bool:
        try:
            self.call("memory_status")
        except Exception:
            return False
        return True


def db(home: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{home / 'memory.db'}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    return conn


def scalar(home: Path, sql: str, *params: Any) -> Any:
    conn = db(home)
    try:
        return conn.execute(sql, params).fetchone()[0]
    finally:
        conn.close()


@pytest.fixture
def stack(home: Path) -> Iterator[Stack]:
    run_dir = Path(tempfile.mkdtemp(prefix="mv", dir="/tmp"))  # short: sun_path limit
    os.chmod(run_dir, 0o700)
    home.mkdir(parents=True, exist_ok=True)
    far = (datetime.now() + timedelta(hours=12)).strftime("%H:%M")
    (home / "memvault.toml").write_text(
        "[compact]\nthreshold_tokens = 1000\n"
        "[batch]\ntimeout_s = 5\n"
        "[worker]\nlease_extra_s = 10\npoll_s = 0.1\nbackoff_s = 0.0\nhourly_s = 86400\n"
        f'[deep]\nnightly_at = "{far}"\nquiet_minutes = 240\n'
        "[vault]\nobjects_per_run = 10\n",
        encoding="utf-8",
    )
    stack = Stack(home, run_dir)
    try:
        yield stack
    finally:
        stack.stop_all()
        for child in run_dir.iterdir():
            child.unlink()
        run_dir.rmdir()


def test_serve_and_worker_survive_a_killed_batch(stack: Stack, home: Path) -> None:
    # serve's logs go to stderr (JSON lines), captured in serve.log; its stdout stays empty.
    serve = stack.start(["serve", "--socket", str(stack.socket), "--no-worker"], "serve.log")
    agent = Agent(stack.socket)
    wait_for(agent.reachable, 30, "memvault serve to answer on its socket")
    assert stat_mode(stack.socket) == 0o600

    # -- the agent talks, busy: the worker must not claim anything yet ------------------------
    assert agent.call("memory_busy", busy=True) == {"busy": True}
    turns = conversation()
    ids = [r["event_id"] for r in agent.calls(*(
        ("memory_append", {"text": t, "source": "user" if i % 2 else "assistant"})
        for i, t in enumerate(turns)))]
    assert ids == list(range(1, len(turns) + 1))
    context = agent.call("memory_context")
    assert context["timeline"]["total_nodes"] == len(turns)
    assert context["timeline"]["total_est_tokens"] > 1000  # over the threshold

    slow_env = {"MEMVAULT_TEST_MARKER": str(stack.marker), "MEMVAULT_TEST_DELAY": "1.5",
                "MEMVAULT_TEST_SLOW_TOOL": "commit_organize",
                "MEMVAULT_TEST_TICKS": str(stack.ticks)}
    slow = [sys.executable, str(TESTS / "slow_worker.py")]
    worker = stack.start(["worker", "--model", "builtin"], "worker1.out", slow_env, slow)
    # Its scheduler creates the threshold job on its first tick, busy or not...
    wait_for(lambda: scalar(home, "SELECT COUNT(*) FROM jobs WHERE origin = 'threshold'"), 30,
             "the worker's scheduler to create the threshold compaction")
    # ...then three more of its polls, each reporting the agent busy: still no batch.
    seen = len(stack.tick_actions())
    wait_for(lambda: len(stack.tick_actions()) >= seen + 3, 30,
             "three more worker polls while the agent is busy")
    assert set(stack.tick_actions()) == {"busy"}
    assert stack.marks() == []
    assert scalar(home, "SELECT COUNT(*) FROM batches") == 0
    agent.call("memory_busy", busy=False)

    # -- compaction: the threshold job by itself, then an explicit one (the CLI) --------------
    wait_for(lambda: any("commit_compaction" in m["tools"] for m in stack.marks()), 30,
             "the threshold compaction to start")
    receipt = json.loads(subprocess.run(
        [*CLI, "--home", str(home), "compact", "--no-wait", "--json"], check=True,
        capture_output=True, timeout=60).stdout)
    assert receipt["mode"] == "compact" and receipt["state"] == "queued"
    wait_for(lambda: scalar(home, "SELECT COUNT(*) FROM archive_queue") == len(turns), 60,
             "every event to leave the hot timeline")
    wait_for(lambda: not scalar(home, "SELECT COUNT(*) FROM jobs WHERE mode = 'compact' AND"
                                      " state IN ('queued', 'running')"), 60,
             "the compact jobs to finish")

    # -- organize; reads answer while a batch is in flight; then SIGKILL mid-batch -----------
    organize = agent.call("memory_organize", mode="organize", scope="people and todos")
    assert organize["state"] == "queued" and organize["mode"] == "organize"
    wait_for(lambda: any("commit_organize" in m["tools"] for m in stack.marks()), 30,
             "an organize batch to be in flight")
    reads = agent.calls(("memory_context", {}), ("memory_status", {}))
    assert reads[1]["events"]["pending"] + reads[1]["events"]["continue"] == len(turns)
    assert "hits" in agent.call("memory_find", query="张伟")
    worker.send_signal(signal.SIGKILL)
    worker.wait(10)
    killed = claimed_batches(home)
    assert len(killed) == 1, "the worker died with its batch claimed and uncommitted"
    killed_id, killed_at = killed[0]["id"], killed[0]["claimed_at"]
    assert json.loads(killed[0]["claim"])["event_id"] in ids

    # The API does not care: reads and writes go on while no worker runs.
    assert agent.call("memory_status")["events"]["total"] == len(turns)
    late_text = "记住：会议改到周四上午十点。"
    ids.append(agent.call("memory_append", text=late_text)["event_id"])
    turns.append(late_text)

    # -- restart: a plain `memvault worker` waits out the dead worker's lease, re-claims -----
    stack.start(["worker", "--model", "builtin"], "worker2.out")
    wait_for(lambda: finished(home, organize["job_id"]), 90,
             "the organize job to finish after the restart")
    final = agent.call("memory_status")

    # -- nothing lost ------------------------------------------------------------------------
    conn = db(home)
    try:
        stored = dict(conn.execute("SELECT id, text FROM events").fetchall())
        assert stored == dict(zip(ids, turns, strict=True))  # every event, byte for byte
        for row in conn.execute("SELECT id, chars FROM events"):
            count, expected, first, last = conn.execute(
                "SELECT COUNT(*), MIN(fragment_count), MIN(start_char), MAX(end_char)"
                " FROM hot_nodes WHERE kind = 'raw' AND event_id = ?", (row["id"],)).fetchone()
            assert (count, first, last) == (expected, 0, row["chars"])  # fragments intact
        queue = dict(conn.execute("SELECT event_id, state FROM archive_queue").fetchall())
        assert sorted(queue) == ids[:-1]  # the late event is still hot, not queued
        assert set(queue.values()) <= {"linked", "archive_only"}
        for event_id, state in queue.items():
            if state == "archive_only":
                assert not conn.execute("SELECT COUNT(*) FROM evidence WHERE event_id = ?",
                                        (event_id,)).fetchone()[0]

        # -- nothing committed twice ---------------------------------------------------------
        committed = conn.execute(
            "SELECT COUNT(*) FROM batches WHERE state = 'committed'").fetchone()[0]
        receipts, distinct = conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT batch_id) FROM receipts").fetchone()
        assert receipts == distinct == committed
        revision = int(conn.execute(
            "SELECT value FROM state WHERE key = 'graph_revision'").fetchone()[0])
        assert revision == committed  # one graph revision per commit: none applied twice
        heads = conn.execute("SELECT COUNT(*) FROM hot_nodes WHERE kind = 'head'").fetchone()[0]
        assert heads == conn.execute(
            "SELECT COUNT(*) FROM receipts WHERE json_extract(receipt, '$.mode') = 'compact'"
        ).fetchone()[0]
        disposed = conn.execute(
            "SELECT json_extract(receipt, '$.event_id') FROM receipts"
            " WHERE json_extract(receipt, '$.mode') = 'organize'"
            " AND json_extract(receipt, '$.outcome') IN ('linked', 'archive_only')").fetchall()
        assert sorted(r[0] for r in disposed) == sorted(queue)  # one disposition per event
        batch = conn.execute("SELECT * FROM batches WHERE id = ?", (killed_id,)).fetchone()
        assert batch["state"] == "committed" and batch["claimed_at"] > killed_at  # re-claimed
        assert conn.execute("SELECT COUNT(*) FROM receipts WHERE batch_id = ?",
                            (killed_id,)).fetchone()[0] == 1
        some_object = conn.execute("SELECT id FROM objects LIMIT 1").fetchone()
    finally:
        conn.close()
    assert final["events"]["blocked"] == 0 and final["quick_check"] == "ok"
    assert final["events"]["linked"] + final["events"]["archive_only"] == len(queue)
    assert "hits" in agent.call("memory_find", query="Lighthouse")
    if some_object is not None:
        assert agent.call("memory_read", id=some_object[0])["kind"] == "object"
    assert agent.call("memory_evidence", id=ids[0])["text"] == turns[0]
    assert max(agent.latencies["memory_status"]) < 5  # reads never waited on a batch

    # -- a clean stop of serve ----------------------------------------------------------------
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(30) == 0
    assert not stack.socket.exists()
    records = [json.loads(line) for line in stack.log_lines("serve.log")]  # all JSON lines
    names = [r["event"] for r in records]
    assert "service_ready" in names and names[-1] == "service_stopped"
    assert all({"ts", "level", "logger", "event"} <= set(r) for r in records)


def stat_mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777


def claimed_batches(home: Path) -> list[sqlite3.Row]:
    conn = db(home)
    try:
        return conn.execute("SELECT * FROM batches WHERE state = 'claimed'").fetchall()
    finally:
        conn.close()


def finished(home: Path, job_id: int) -> bool:
    return scalar(home, "SELECT state FROM jobs WHERE id = ?", job_id) in ("done", "partial")


def test_mcp_over_stdio(home: Path, tmp_path: Path) -> None:
    """`memvault mcp` as an agent host starts it: protocol on stdout, JSON logs on stderr."""
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    errlog = (tmp_path / "mcp-stderr.log").open("w+", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable, args=[*CLI[1:], "--home", str(home), "mcp"],
        env={"MEMVAULT_HOME": str(home)})

    async def session() -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        with anyio.fail_after(120):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                appended = tool_payload(await client.call_tool(
                    "memory_append", {"text": "记住：浩宇对花生过敏"}))
                status = tool_payload(await client.call_tool("memory_status", {}))
                return names, appended, status

    names, appended, status = anyio.run(session)
    assert len(names) == 9 and "memory_busy" in names
    assert appended == {"event_id": 1}
    assert status["events"]["total"] == 1
    errlog.seek(0)
    lines = [json.loads(line) for line in errlog.read().splitlines() if line.startswith("{")]
    errlog.close()
    assert any(r["event"] == "service_ready" and r["transport"] == "stdio" for r in lines)
    assert lines[-1]["event"] == "service_stopped"  # stdin closed by the host: a clean end
