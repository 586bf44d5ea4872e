"""A job runs on the provider it was queued with, whoever runs the worker.

A command's `--model` applies only to the jobs that command queues (the compaction an organize
request chains first included); automatic jobs record the configured provider; a job whose
recorded provider cannot be built fails naming the cause and never runs on another model.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli, write_config
from memvault import ManualClock, Memory
from memvault.jobs.records import create_job, get_job
from memvault.jobs.scheduler import Scheduler
from memvault.models.spec import ProviderSpec
from memvault.store.connection import write

from tests.fake_openai import FakeOpenAI

KEY = "sk-proj-" + "Zq7" * 16  # a key-shaped value: it must never reach a job row


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def jsonl(*texts: str) -> str:
    return "".join(json.dumps({"text": t}) + "\n" for t in texts)


def read(home: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(home / "memory.db") as db:
        return db.execute(sql, args).fetchall()


def test_a_queued_job_keeps_its_provider_when_another_command_names_a_model(
    runner: CliRunner, home: Path, server: FakeOpenAI
) -> None:
    """The issue's scenario: an organize job queued for openai, then `compact --model builtin`
    runs the worker; the organize job goes to the openai server, not to builtin (whose answer,
    archive_only, would have been final)."""
    write_config(home, f'[model]\nbase_url = "{server.base_url}"\n')
    run_cli(runner, "ingest", "-", input=jsonl("We ship the Aurora beta on Friday.",
                                               "Lina owns the release checklist."))
    run_cli(runner, "compact", "--model", "builtin")  # both events now wait in the queue
    queued = json.loads(run_cli(runner, "organize", "--no-wait", "--no-compact", "--model",
                                "openai:fake-model", "--json").stdout)
    run_cli(runner, "ingest", "-", input=jsonl("The demo moved to Monday."))
    run_cli(runner, "compact", "--model", "builtin")  # the fake server answers 500: fails

    assert server.requests and {r["model"] for r in server.requests} == {"fake-model"}
    calls = read(home, "SELECT DISTINCT provider FROM model_calls WHERE job_id = ?",
                 queued["job_id"])
    assert calls == [("openai",)]
    assert read(home, "SELECT DISTINCT state FROM archive_queue") == [("pending",)]
    assert read(home, "SELECT state FROM jobs WHERE id = ?", queued["job_id"]) == [("running",)]


def test_an_organize_request_records_its_model_on_the_compaction_it_chains(
    mem: Memory
) -> None:
    mem.append_event("We ship the Aurora beta on Friday.")
    receipt = mem.organize("organize", model="openai:fake-model")
    organize = get_job(mem.conn, receipt["job_id"])
    compaction = get_job(mem.conn, receipt["compact_job_id"])
    assert organize.provider == compaction.provider == {
        "name": "openai", "model": "fake-model", "base_url": "", "api_key_env": "OPENAI_API_KEY"}
    later = get_job(mem.conn, mem.organize("deep")["job_id"])
    assert later.provider == ProviderSpec("builtin").record()  # the configured one


def test_a_bad_model_is_refused_before_anything_is_queued(mem: Memory) -> None:
    from memvault.models import ProviderError

    with pytest.raises(ProviderError, match="unknown provider 'nope'"):
        mem.organize("organize", model="nope:x")
    with pytest.raises(ProviderError, match="needs a model name"):
        mem.compact(model="openai")
    assert mem.conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 0


def test_automatic_jobs_record_the_configured_provider_or_the_workers_model(
    home: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_config(home, '[model]\nprovider = "openai"\nname = "gpt-test"\n')
    mem = Memory.open(home, clock=clock)
    try:
        mem.append_event("We ship the Aurora beta on Friday.")
        mem.conn.execute("PRAGMA foreign_keys = ON")
        with write(mem.conn):  # one event waiting in the queue: the hourly check files it
            mem.conn.execute("INSERT INTO archive_queue (event_id, state, enqueued_at, updated_at)"
                             " VALUES (1, 'pending', '2026-01-01', '2026-01-01')")
        hourly = Scheduler(mem.conn, mem.config, mem.tz).check(clock.now())
        assert [j.origin for j in hourly] == ["hourly"]
        assert hourly[0].provider == {"name": "openai", "model": "gpt-test", "base_url": "",
                                      "api_key_env": "OPENAI_API_KEY"}
        with write(mem.conn):
            mem.conn.execute("UPDATE jobs SET state = 'done'")
        clock.advance(hours=2)
        mine = Scheduler(mem.conn, mem.config, mem.tz, ProviderSpec("builtin")).check(clock.now())
        assert "hourly" in [j.origin for j in mine]
        assert {json.dumps(j.provider) for j in mine} == {json.dumps(
            {"name": "builtin", "model": "", "base_url": "", "api_key_env": ""})}
        rows = mem.conn.execute("SELECT group_concat(provider) FROM jobs").fetchone()[0]
        assert KEY not in rows  # the spec names the key's variable, never its value
    finally:
        mem.close()


def test_a_base_url_carrying_a_password_is_not_recorded(home: Path) -> None:
    write_config(home, '[model]\nprovider = "openai"\nname = "m"\n'
                       'base_url = "https://bob:hunter2secret@llm.example/v1"\n')
    mem = Memory.open(home)
    try:
        job = get_job(mem.conn, mem.compact()["job_id"])
        assert job.provider is not None and job.provider["base_url"] is None
        assert "hunter2" not in mem.conn.execute("SELECT provider FROM jobs").fetchone()[0]
    finally:
        mem.close()


def test_a_job_whose_provider_cannot_be_built_fails_naming_it_and_calls_no_model(
    mem: Memory
) -> None:
    mem.append_event("We ship the Aurora beta on Friday.")
    with write(mem.conn):
        job = create_job(mem.conn, "compact", "explicit", mem.clock.now(),
                         params={"min_seq": 0, "max_seq": 10, "max_node_id": 10},
                         provider={"name": "nope"})
    result = mem.worker(scheduler=False).tick()  # the configured builtin must not stand in
    assert result.action == "failed" and result.job_id == job.id
    assert "unknown provider 'nope'" in (result.error or "")
    assert mem.conn.execute("SELECT COUNT(*) FROM model_calls").fetchone()[0] == 0
    retrying = mem.status()["batches"]["retrying"]
    assert "unknown provider 'nope'" in retrying[0]["error"]
    assert mem.conn.execute("SELECT COUNT(*) FROM hot_nodes WHERE kind = 'head'"
                            ).fetchone()[0] == 0


def test_a_job_queued_before_providers_were_recorded_runs_on_the_workers_provider(
    home: Path, clock: ManualClock, server: FakeOpenAI
) -> None:
    """Jobs of an older home have no provider (NULL after m011_job_provider): the worker's
    default runs them."""
    write_config(home, f'[model]\nbase_url = "{server.base_url}"\n')
    mem = Memory.open(home, clock=clock)
    try:
        mem.append_event("We ship the Aurora beta on Friday. " * 4)
        mem.append_event("Lina owns the release checklist. " * 4)
        job_id = mem.compact()["job_id"]  # on the configured builtin
        with write(mem.conn):
            mem.conn.execute("UPDATE jobs SET provider = NULL")
        assert get_job(mem.conn, job_id).provider is None
        mem.worker("openai", "fake-model", scheduler=False).tick()  # the server answers 500
        assert [r["model"] for r in server.requests] == ["fake-model"]
        assert [tuple(r) for r in mem.conn.execute(
            "SELECT DISTINCT job_id, provider FROM model_calls")] == [(job_id, "openai")]
    finally:
        mem.close()
