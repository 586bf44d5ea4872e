"""A model call is bounded whatever the server does: one overall deadline per call (a server that
trickles its reply byte by byte cannot hold a batch forever), and usage figures a server makes
up (10**30, negative) mark the ledger's row as bad instead of crashing the worker, and usage
counts bad rows apart instead of adding them into its sums."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import meetings_memory
from memvault import ManualClock, Memory
from memvault.base.clock import iso
from memvault.cli import main
from memvault.jobs.ledger import MAX_TOKENS, CallRecord, insert_call
from memvault.models.base import ModelReply, ProviderError, ToolCall, Usage
from memvault.models.openai_compat import OpenAICompatProvider
from memvault.store.connection import write
from scripted_provider import ScriptedProvider

from tests.fake_openai import FakeOpenAI, completion, tool_call


class TricklingServer:
    """Answers the first `trickle` requests with headers at once and then one byte of body every
    50 ms, forever (until stopped): each byte restarts a per-read timeout. Later requests get
    `then` (a chat.completion body) at once."""

    def __init__(self, trickle: int = 1_000_000, then: dict[str, Any] | None = None) -> None:
        self.stop = threading.Event()
        stop = self.stop
        left = [trickle]

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.endswith("/chat/completions"):  # a probe: no such endpoint
                    self.send_error(404)
                    return
                left[0] -= 1
                if left[0] < 0 and then is not None:
                    data = json.dumps(then).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100000000")
                self.end_headers()
                try:
                    while not stop.wait(0.05):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except OSError:  # the client hung up: what a deadline should make it do
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> TricklingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def trickle() -> Iterator[TricklingServer]:
    with TricklingServer() as server:
        yield server


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    memory = meetings_memory(tmp_path / "home")
    yield memory
    memory.close()


def states(mem: Memory) -> tuple[list[str], list[str]]:
    jobs = [r[0] for r in mem.conn.execute("SELECT state FROM jobs ORDER BY id")]
    batches = [r[0] for r in mem.conn.execute("SELECT state FROM batches ORDER BY id")]
    return jobs, batches


def failure(mem: Memory, needle: str = "") -> tuple[int, bool, str]:
    """The one batch's failed claims, whether a retry is scheduled (a failure recorded, not a
    claim left hanging), and `needle` when its stored error holds it."""
    failures, retry_at, error = mem.conn.execute(
        "SELECT failures, next_attempt_at, error FROM batches").fetchone()
    return failures, retry_at is not None, needle if needle in (error or "") else error


# -- one deadline per call --------------------------------------------------------------------

def test_a_trickling_reply_is_cut_at_the_calls_deadline(trickle: TricklingServer) -> None:
    prov = OpenAICompatProvider(model="m", base_url=trickle.base_url, timeout_s=0.5)
    began = time.monotonic()
    with pytest.raises(ProviderError, match=r"no complete answer within 0\.5 s"):
        prov.complete([{"role": "user", "content": "hi"}], [], 100)
    # The bound is generous (a loaded machine): without a deadline this never returns.
    assert time.monotonic() - began < 20
    # The abandoned request does not linger: closing its client ends its connection.
    for thread in threading.enumerate():
        if thread.name == "memvault-model-call":
            thread.join(timeout=10)
            assert not thread.is_alive()


def test_a_deadline_sooner_than_the_timeout_caps_the_call(trickle: TricklingServer) -> None:
    """The worker passes the time left on its lease: the call gives up by then, not at the
    provider's own (later) timeout, and says which limit cut it."""
    prov = OpenAICompatProvider(model="m", base_url=trickle.base_url, timeout_s=300)
    began = time.monotonic()
    with pytest.raises(ProviderError, match=r"no complete answer within 0\.5 s \(the time "
                                            r"left on the worker's lease\)"):
        prov.complete([{"role": "user", "content": "hi"}], [], 100, deadline_s=0.5)
    assert time.monotonic() - began < 20  # not 300 s (a loaded machine: a generous bound)


def test_a_deadline_later_than_the_timeout_leaves_the_timeout(trickle: TricklingServer) -> None:
    prov = OpenAICompatProvider(model="m", base_url=trickle.base_url, timeout_s=0.5)
    with pytest.raises(ProviderError, match=r"within 0\.5 s \(batch\.timeout_s\)"):
        prov.complete([{"role": "user", "content": "hi"}], [], 100, deadline_s=355)


def test_a_trickling_reply_fails_the_batch_and_frees_it(mem: Memory,
                                                        trickle: TricklingServer) -> None:
    prov = OpenAICompatProvider(model="m", base_url=trickle.base_url, timeout_s=0.5)
    mem.compact()
    result = mem.worker(prov, scheduler=False).tick()
    assert result.action == "failed"
    assert "no complete answer within 0.5 s" in (result.error or "")
    assert failure(mem, "no complete answer") == (1, True, "no complete answer")
    assert mem.status()["timeline"]["nodes"] == 3  # nothing compacted
    assert mem.usage()["per_day"][0]["failed"] == 1


def test_the_next_call_after_a_deadline_works() -> None:
    with TricklingServer(trickle=1, then=completion(content="hello")) as server:
        prov = OpenAICompatProvider(model="m", base_url=server.base_url, timeout_s=0.5)
        with pytest.raises(ProviderError):
            prov.complete([{"role": "user", "content": "hi"}], [], 100)
        # The same provider, on a fresh connection: the abandoned one is not reused.
        assert prov.complete([{"role": "user", "content": "hi"}], [], 100).text == "hello"


# -- absurd usage figures ---------------------------------------------------------------------

def commit_reply(usage: Usage) -> Any:
    """A scripted step that compacts the nodes it is given, reporting `usage`."""

    def answer(messages, tools, max_output_tokens) -> ModelReply:
        payload = json.loads(messages[1]["content"])
        ids = [n["id"] for n in payload["nodes"]]
        return ModelReply(tool_calls=[ToolCall("c1", "commit_compaction", json.dumps(
            {"node_ids": ids, "summary": "Aurora beta Friday"}))],
            finish_reason="tool_calls", usage=usage)
    return answer


@pytest.mark.parametrize("figures", [(10**30, 5), (-7, 10**30), (-(10**40), -1)])
def test_absurd_usage_figures_are_clamped_and_the_batch_commits(mem: Memory,
                                                                 figures: tuple[int, int]) -> None:
    prov = ScriptedProvider([commit_reply(Usage(*figures))])
    mem.compact()
    result = mem.worker(prov, scheduler=False).tick()
    assert result.action == "committed", result.error
    row = mem.conn.execute("SELECT input_tokens, output_tokens FROM model_calls").fetchone()
    assert tuple(row) == tuple(v if 0 <= v < MAX_TOKENS else MAX_TOKENS for v in figures)
    jobs, batches = states(mem)
    assert batches == ["committed"]
    total = mem.usage()["total"]
    assert (total["calls"], total["bad_calls"]) == (1, 1)
    assert total["input_tokens"] == total["output_tokens"] == 0  # a bad row's are left out


def test_absurd_usage_on_a_failed_call_is_recorded_with_the_real_cause(mem: Memory) -> None:
    absurd = ModelReply(text="thinking", finish_reason="length", usage=Usage(10**30, 10**30))
    prov = ScriptedProvider([absurd] * 12, max_output_tokens=256)
    mem.compact()
    result = mem.worker(prov, scheduler=False).tick()
    assert result.action == "failed"
    assert "truncated" in (result.error or "")
    assert "Python int too large" not in (result.error or "")
    assert failure(mem, "truncated") == (1, True, "truncated")
    totals = mem.usage()["total"]
    assert totals["calls"] >= totals["bad_calls"] >= 1
    assert totals["input_tokens"] == totals["output_tokens"] == 0


def test_a_ledger_write_that_fails_records_its_cause_and_frees_the_batch(
        mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from memvault.jobs import worker as worker_module

    def broken(conn, call, now):
        raise OverflowError("Python int too large to convert to SQLite INTEGER")

    monkeypatch.setattr(worker_module, "insert_call", broken)
    prov = ScriptedProvider([ModelReply(text="no tool", usage=Usage(1, 1))])
    mem.compact()
    result = mem.worker(prov, scheduler=False).tick()
    assert result.action == "failed"
    assert "usage ledger" in (result.error or "")
    assert failure(mem, "usage ledger") == (1, True, "usage ledger")


def test_a_usage_dict_from_a_server_with_absurd_numbers_commits(mem: Memory) -> None:
    with FakeOpenAI() as fake:
        def answer(body: dict) -> dict:
            payload = json.loads(body["messages"][1]["content"])
            ids = [n["id"] for n in payload["nodes"]]
            return completion(tool_calls=[tool_call("commit_compaction", {
                "node_ids": ids, "summary": "Aurora beta Friday"})], finish_reason="tool_calls",
                usage={"prompt_tokens": 10**30, "completion_tokens": -5})
        fake.queue(answer)
        prov = OpenAICompatProvider(model="m", base_url=fake.base_url, timeout_s=5)
        mem.compact()
        result = mem.worker(prov, scheduler=False).tick()
    assert result.action == "committed", result.error
    row = mem.conn.execute("SELECT input_tokens, output_tokens FROM model_calls").fetchone()
    assert tuple(row) == (MAX_TOKENS, MAX_TOKENS)


def test_absurd_rows_never_add_into_the_usage_totals_and_usage_shows_them_as_bad(
        home: Path, runner: CliRunner) -> None:
    now = datetime(2026, 10, 13, 12, 0, tzinfo=UTC)
    with Memory.open(home, clock=ManualClock(now)) as mem:
        with write(mem.conn):
            for figures in [(10**30, 5)] * 47 + [(-7, 3), (MAX_TOKENS, 1), (100, 20)]:
                insert_call(mem.conn, CallRecord(None, None, "compact", "openai", "m", *figures,
                                                 estimated=False, latency_ms=5, outcome="ok"),
                            now)
            # A row an older memvault stored for an absurd figure (clamped to 2**40 then).
            mem.conn.execute(
                "INSERT INTO model_calls (mode, provider, model, input_tokens, output_tokens,"
                " estimated, latency_ms, outcome, created_at) VALUES ('compact', 'openai',"
                " 'm', ?, 9, 0, 5, 'ok', ?)", (2**40, iso(now)))
        stored = mem.conn.execute("SELECT MAX(input_tokens) FROM model_calls WHERE id <= 50")
        assert stored.fetchone()[0] == MAX_TOKENS  # the row itself is clamped
        total = mem.usage()["total"]
        assert (total["calls"], total["bad_calls"]) == (51, 50)
        assert (total["input_tokens"], total["output_tokens"]) == (100, 20)
        assert mem.usage()["per_day"][0]["bad"] == 50
    result = runner.invoke(main, ["usage"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "51 (50 bad)" in result.output and "total: 51 calls, 100 in, 20 out" in result.output
    assert "50 bad: the provider reported token counts no call can have" in result.output
    assert "000,000,000" not in result.output
