"""The owner's status says which hook calls failed lately and why (`capture`, read from the
home's capture.log): bounded to the log's tail, never through a symlink or from a file that
is not regular, secrets redacted; a client bound to a space does not see the home's log."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.base.spaces import Spaces
from memvault.home import capture, status
from memvault.home.capture import run_hook

SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"


def _entry(what: str, detail: str, at: str = "2026-10-13T04:00:00+00:00") -> str:
    return json.dumps({"at": at, "host": "codex", "what": what, "session": "s1",
                       "detail": detail}) + "\n"


def test_the_status_names_the_newest_failed_hook_calls_and_why(
        mem: Memory, home: Path, runner: CliRunner) -> None:
    assert mem.status()["capture"] == {"last_at": None, "recent": []}
    for raw in (b"not json", b"[1, 2]", b'{"session_id": "abc", "transcript_path": "/nope"}'):
        assert run_hook(home, "claude-code", raw, time.monotonic()) is None
    report = mem.status()["capture"]
    assert [r["what"] for r in report["recent"]] == ["error"] * 3
    newest, _, oldest = report["recent"]
    assert "not JSON" in oldest["detail"] and newest["session"] == "abc"
    assert report["last_at"] == newest["at"] and newest["host"] == "claude-code"
    shown = run_cli(runner, "status").stdout
    assert "capture: hook calls that failed" in shown and "the hook input is not JSON" in shown
    assert not any(line.startswith("capture:") and "{" in line for line in shown.splitlines())
    assert json.loads(run_cli(runner, "status", "--json").stdout)["capture"] == report


def test_only_the_newest_five_failures_are_shown_and_other_lines_are_passed_over(
        mem: Memory, home: Path) -> None:
    lines = [_entry("error", f"failure {i}", f"2026-10-13T04:00:{i:02d}+00:00")
             for i in range(8)]
    lines[5:5] = ["not a json line\n", json.dumps({"what": "error", "at": 3}) + "\n",
                  _entry("stored", "not a failure")]
    (home / status.CAPTURE_LOG).write_text("".join(lines), encoding="utf-8")
    report = mem.status()["capture"]
    assert [r["detail"] for r in report["recent"]] == [f"failure {i}" for i in (7, 6, 5, 4, 3)]
    assert report["last_at"] == "2026-10-13T04:00:07+00:00"


def test_the_log_is_read_from_its_tail_only(mem: Memory, home: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry before the log's last CAPTURE_TAIL_BYTES is never read, however the file
    grew (a hand-made log of 4 MB here: capture.py rotates its own at 1 MB)."""
    filler = _entry("error", "x" * 900) * (4 * 1024 * 1024 // 1000)
    (home / status.CAPTURE_LOG).write_text(
        _entry("error", "the first, far back") + filler + _entry("skipped", "the newest"),
        encoding="utf-8")
    read: list[int] = []
    real_pread = os.pread

    def pread(fd: int, size: int, offset: int) -> bytes:
        read.append(size)
        return real_pread(fd, size, offset)

    monkeypatch.setattr(status.os, "pread", pread)
    report = mem.status()["capture"]
    assert report["recent"][0]["detail"] == "the newest"
    assert all("far back" not in r["detail"] for r in report["recent"])
    assert sum(read) <= status.CAPTURE_TAIL_BYTES


def test_a_symlinked_or_special_log_is_not_read(mem: Memory, home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.log"
    elsewhere.write_text(_entry("error", "read through a link"), encoding="utf-8")
    log = home / status.CAPTURE_LOG
    log.symlink_to(elsewhere)
    assert mem.status()["capture"]["recent"] == []
    log.unlink()
    os.mkfifo(log)  # opened without blocking, then passed over as no regular file
    assert mem.status()["capture"]["recent"] == []


def test_a_secret_in_a_logged_detail_is_redacted(mem: Memory, home: Path,
                                                 runner: CliRunner) -> None:
    (home / status.CAPTURE_LOG).write_text(_entry("error", f"bad key {SECRET}"),
                                           encoding="utf-8")
    assert SECRET not in json.dumps(mem.status()["capture"])
    assert SECRET not in run_cli(runner, "status").stdout


def test_a_bound_status_has_no_capture_section(mem: Memory, home: Path,
                                               runner: CliRunner) -> None:
    run_hook(home, "claude-code", b"not json", time.monotonic(), space="work")
    assert mem.status()["capture"]["recent"]
    work = Memory(mem.config, mem.conn, mem.clock, Spaces("work"))
    assert "capture" not in work.status()
    assert "capture" in work.status()["bound"]["left_out"]
    assert "hook calls" not in run_cli(runner, "status", "--space", "work").stdout


def test_status_reads_the_log_capture_writes() -> None:
    assert status.CAPTURE_LOG == capture.LOG_NAME
