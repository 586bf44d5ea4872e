"""A model failure's cause is visible at once: in `memvault organize` while it waits, in
`memvault status` and in `memory_status`; a slow model shows which batch it is on. The model
server is a 127.0.0.1 port nothing listens on (connection refused at once: no wait to bound)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from click.testing import CliRunner
from helpers import run_cli, write_config
from memvault import ManualClock, Memory
from memvault.home.runs import QuietRun, run_to_end
from memvault.models.openai_compat import OpenAICompatProvider
from modes_support import add_archived, make_worker
from scripted_provider import ScriptedProvider

OPENAI_KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unreachable_model(home: Path, port: int, extra: str = "") -> None:
    write_config(home, "[model]\nprovider = \"openai\"\nname = \"m\"\n"
                       f"base_url = \"http://127.0.0.1:{port}/v1\"\n{extra}")


def test_status_names_the_cause_of_a_failing_batch_after_one_call(
    home: Path, clock: ManualClock,
) -> None:
    port = closed_port()
    mem = Memory.open(home, clock=clock)
    add_archived(mem, "Paul's phone number changed.")
    mem.organize()
    provider = OpenAICompatProvider("m", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=5)
    worker = mem.worker(provider, holder="w", scheduler=False)
    assert worker.tick().action == "failed"
    report = mem.status()["batches"]
    (failing,) = report["retrying"]
    assert failing["mode"] == "organize" and failing["failures"] == 1
    assert failing["covers"].startswith("event 1 chars 0–")
    assert "APIConnectionError" in failing["error"]
    assert "Connection refused" in failing["error"]
    assert f"http://127.0.0.1:{port}/v1" in failing["error"]
    assert failing["retry_at"] is not None and report["in_flight"] is None
    mem.close()


def test_memvault_status_prints_the_cause_in_one_line(
    home: Path, clock: ManualClock, runner: CliRunner,
) -> None:
    mem = Memory.open(home, clock=clock)
    add_archived(mem, "Paul's phone number changed.")
    mem.organize()
    worker, _ = make_worker(mem, [ConnectionError("connection refused to http://10.0.0.9/v1")])
    worker.tick()
    mem.close()
    out = run_cli(runner, "status").stdout
    line = next(x for x in out.splitlines() if x.startswith("model failing:"))
    assert "organize batch 1 (event 1 chars 0–" in line
    assert "failed 1 time(s): provider scripted failed: connection refused to " in line
    assert "next try at" in line


def test_a_failure_quoting_a_key_is_shown_redacted(home: Path, clock: ManualClock) -> None:
    mem = Memory.open(home, clock=clock)
    add_archived(mem, "Paul's phone number changed.")
    mem.organize()
    worker, _ = make_worker(mem, [RuntimeError(f"401: bad key {OPENAI_KEY}")])
    worker.tick()
    shown = json.dumps(mem.status()["batches"], ensure_ascii=False)
    assert OPENAI_KEY not in shown and "[redacted" in shown and "401: bad key" in shown
    mem.close()


def test_terminal_batches_stay_visible_after_the_retries(home: Path, clock: ManualClock) -> None:
    write_config(home, "[worker]\nmax_failed_claims = 2\nbackoff_s = 0.0\n")
    mem = Memory.open(home, clock=clock)
    add_archived(mem, "Paul's phone number changed.")
    mem.organize()
    worker, _ = make_worker(mem, [RuntimeError("down"), RuntimeError("still down")])
    assert [worker.tick().action for _ in range(2)] == ["failed", "terminal"]
    report = mem.status()["batches"]
    assert report["retrying"] == [] and report["terminal"] == 1
    assert report["last_terminal"]["error"] == "provider scripted failed: still down"
    mem.close()


def test_organize_ends_at_a_failure_waiting_cannot_heal_and_leaves_the_job_queued(
    home: Path, runner: CliRunner,
) -> None:
    """A refused connection will not heal by waiting: the foreground command ends at the first
    failure, exit 1, naming the cause and saying the job stays queued (no retry schedule)."""
    port = closed_port()
    unreachable_model(home, port, "[worker]\nmax_failed_claims = 5\n")
    run_cli(runner, "ingest", "-", input=json.dumps({"text": "TODO: call the bank"}) + "\n")
    result = run_cli(runner, "organize", code=1)
    failures = [x for x in result.stderr.splitlines() if " failed " in x]
    assert len(failures) == 1, result.stderr
    assert failures[0].startswith("compact batch 1 (node 1) failed 1 of 5 time(s): provider "
                                  "openai failed: APIConnectionError: Connection error. (")
    assert f"Connection refused) calling http://127.0.0.1:{port}/v1" in failures[0]
    assert "compact job 1 stopped: provider openai failed" in result.stderr
    assert "the job stays queued" in result.stderr
    with Memory.open(home) as mem:
        jobs = {row["id"]: row["state"] for row in mem.conn.execute("SELECT id, state FROM jobs")}
        assert jobs == {1: "queued", 2: "queued"}  # never left `running` with nothing running
        [batch] = mem.conn.execute("SELECT state, failures FROM batches").fetchall()
        assert tuple(batch) == ("claimed", 1)  # claimed again by the next worker's tick


def test_a_failure_waiting_may_heal_keeps_the_retry_schedule() -> None:
    """Which failures of the OpenAI client end a foreground run at once, and which wait."""
    import openai
    from memvault.models.openai_compat import lasting_failure

    def made(cls: type[openai.OpenAIError], cause: BaseException | None = None) -> Exception:
        # As the client raises them, without the HTTP objects its constructors want (their
        # library changes between versions; the classification reads only class and cause).
        error = cls.__new__(cls)
        Exception.__init__(error, "no")
        error.__cause__ = cause
        return error

    lasting = [made(openai.AuthenticationError), made(openai.PermissionDeniedError),
               made(openai.NotFoundError),
               made(openai.APIConnectionError, ConnectionRefusedError(111, "no")),
               made(openai.APIConnectionError, socket.gaierror(-2, "Name or service not known"))]
    healing = [made(openai.RateLimitError), made(openai.InternalServerError),
               made(openai.APITimeoutError), made(openai.APIConnectionError, TimeoutError("slow"))]
    assert [lasting_failure(e) for e in lasting] == [True] * len(lasting)
    assert [lasting_failure(e) for e in healing] == [False] * len(healing)


def test_organize_waiting_out_a_backoff_names_the_cause(
    home: Path, clock: ManualClock, runner: CliRunner,
) -> None:
    mem = Memory.open(home, clock=clock)
    add_archived(mem, "Paul's phone number changed.")
    receipt = mem.organize()
    worker, _ = make_worker(mem, [ConnectionError("refused"), ConnectionError("refused"),
                                  ConnectionError("refused"), ConnectionError("refused"),
                                  ConnectionError("refused")])
    notes: list[str] = []

    class Said(QuietRun):
        def failed(self, line: str) -> None:
            notes.append(line)

        def waiting(self, note: str) -> None:
            notes.append(note)

    assert run_to_end(mem, worker, receipt["job_id"], 1, "organize", Said()) == "partial"
    failed = [n for n in notes if " failed " in n]
    assert len(failed) == 5
    assert all("provider scripted failed: refused" in n for n in failed)
    # The wait after each failure says when the retry comes, without repeating the cause.
    waits = [n for n in notes if n.startswith("waiting: ")]
    assert len(waits) == 4 and all(n.startswith("waiting: organize batch 1 is tried again at ")
                                   for n in waits)
    assert not any("has no batch due now" in n for n in notes)


def test_a_wait_for_a_batch_failed_elsewhere_names_the_cause(
    home: Path, clock: ManualClock,
) -> None:
    from memvault.home.runs import wait_note
    from memvault.jobs.worker import TickResult

    mem = Memory.open(home, clock=clock)
    add_archived(mem, "Paul's phone number changed.")
    receipt = mem.organize()
    worker, _ = make_worker(mem, [ConnectionError("refused by 10.0.0.9")])
    worker.tick()  # the `memvault serve` worker, say
    note = wait_note(mem, TickResult("idle"), receipt["job_id"])
    assert note is not None and note.startswith("waiting: organize batch 1 (event 1 chars 0–")
    assert "failed 1 of 5 time(s): provider scripted failed: refused by 10.0.0.9" in note
    mem.close()
    mem.close()


def test_each_batch_is_named_before_the_model_answers(runner: CliRunner) -> None:
    lines = "".join(json.dumps({"text": t}) + "\n" for t in ("TODO: call the bank",
                                                             "TODO: water the plants"))
    run_cli(runner, "ingest", "-", input=lines)
    err = run_cli(runner, "organize").stderr.splitlines()
    assert "compact batch 1: nodes 1–2" in err
    assert [x for x in err if x.startswith("organize batch ")] == [
        "organize batch 2: event 1 chars 0–19 of 19",
        "organize batch 3: event 2 chars 0–22 of 22"]


def test_a_worker_names_its_batch_before_calling_the_model(mem: Memory) -> None:
    add_archived(mem, "Paul's phone number changed.")
    mem.organize()
    order: list[str] = []
    provider = ScriptedProvider([lambda m, t, o: order.append("model") or (_ for _ in ()).throw(
        RuntimeError("x"))])
    worker = mem.worker(provider, holder="w", scheduler=False,
                        on_claim=lambda job, batch: order.append(f"{job.mode} {batch.id}"))
    worker.tick()
    assert order == ["organize 1", "model"]
