"""Capture from an agent host's hooks (memvault.home.capture, `memvault hook`): turns go onto
the hot timeline with their own times, each is stored once however often a hook runs, a call
does a bounded step, and a hook never fails its host (exit 0, nothing on stdout, errors in
capture.log without a turn's text). Fixtures: tests/data/transcripts/ in the hosts' formats."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.cli.serve import stdio_command
from memvault.home import capture
from memvault.home.capture import Captured, capture_file, find_rollout, run_hook
from memvault.store import connection
from memvault.store.migrations import Migration
from memvault.timeline import transcripts
from memvault.timeline.transcripts import Bounds

DATA = Path(__file__).parent / "data" / "transcripts"
SESSION = "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b"
THREAD = "019dd8e4-15dd-7143-95e8-219014341717"
CLAUDE = DATA / "claude-code" / "-home-ana-projects-move" / f"{SESSION}.jsonl"
CODEX_HOME = DATA / "codex"
ROLLOUT = (CODEX_HOME / "sessions" / "2026" / "05" / "04"
           / f"rollout-2026-05-04T10-00-00-{THREAD}.jsonl")
CLAUDE_TURNS, CODEX_TURNS = 6, 5
CLI = [sys.executable, "-c", "import sys; from memvault.cli import main; sys.exit(main())"]
WAIT_S = 60.0


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """A copy of the Claude Code fixture the test may append to, named as Claude Code names it."""
    path = tmp_path / "projects" / f"{SESSION}.jsonl"
    path.parent.mkdir()
    shutil.copy(CLAUDE, path)
    return path


def hook_input(path: Path, event: str = "Stop", **extra: Any) -> bytes:
    """What Claude Code writes on a hook's stdin (the hooks reference's common fields)."""
    return json.dumps({"session_id": SESSION, "transcript_path": str(path), "cwd": "/home/ana",
                       "permission_mode": "default", "hook_event_name": event,
                       **extra}).encode()


def notify(thread: str = THREAD, **extra: Any) -> str:
    """Codex's notify JSON, passed as the program's last argument."""
    return json.dumps({"type": "agent-turn-complete", "thread-id": thread,
                       "turn-id": "019dd8e5-0b10-7e01-b2f9-f92834530002",
                       "cwd": "/home/sam/payroll", "client": "codex-tui",
                       "input-messages": ["我现在更喜欢上午开会。"],
                       "last-assistant-message": "好的，以后把会安排在上午。", **extra})


def hook(home: Path, raw: bytes | str | None, host: str = "claude-code",
         space: str | None = None) -> Captured | None:
    """A hook call whose step keeps all its time (its clock stands still): what it stores
    does not depend on how loaded the machine is."""
    started = time.monotonic()
    return run_hook(home, host, raw, started, codex_home=CODEX_HOME, space=space,
                    clock=lambda: started)


def saved_progress(home: Path) -> dict[str, Any]:
    """The one capture progress record of the home."""
    with Memory.open(home, readonly=True) as mem:
        (value,) = [row[0] for row in mem.conn.execute(
            "SELECT value FROM state WHERE key LIKE 'capture:%'")]
    return dict(json.loads(value))


def events(home: Path) -> list[dict[str, Any]]:
    with Memory.open(home, readonly=True) as mem:
        rows = mem.conn.execute("SELECT id, key, source, text, occurred_at FROM events "
                                "ORDER BY id").fetchall()
    return [dict(row) for row in rows]


def hot(home: Path) -> int:
    with Memory.open(home, readonly=True) as mem:
        return mem.status()["events"]["hot"]


def until_captured(home: Path, turns: int, call: Callable[[], tuple[int, bytes | str]]) -> None:
    """Make real hook calls (`call`: one, answering its exit status and stdout) until `turns`
    events are stored. A real call runs on the real clock: on a loaded machine its half
    second may be over once it has stored its first message (a call always stores one), so
    it takes at most `turns` calls."""
    calls = 0
    while not (home / "memory.db").exists() or len(events(home)) < turns:
        assert calls < turns
        assert call() in ((0, b""), (0, ""))
        calls += 1
    assert len(events(home)) == turns


def log_lines(home: Path) -> list[dict[str, Any]]:
    path = home / capture.LOG_NAME
    return [json.loads(x) for x in path.read_text("utf-8").splitlines()] if path.exists() else []


def append_turn(path: Path, uuid: str, text: str, role: str = "user") -> None:
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"type": role, "uuid": uuid, "sessionId": SESSION,
                              "timestamp": "2026-05-04T09:30:00.000Z",
                              "message": {"role": role, "content": content}}) + "\n")


# -- what a hook stores --------------------------------------------------------------------------
def test_a_claude_code_hook_puts_the_new_turns_on_the_hot_timeline_at_their_own_times(
        home: Path, transcript: Path) -> None:
    report = hook(home, hook_input(transcript))
    assert report is not None and report.stored == CLAUDE_TURNS and not report.more
    stored = events(home)
    assert [e["source"] for e in stored] == ["user", "assistant", "assistant", "user", "user",
                                             "assistant"]
    assert stored[0]["occurred_at"].startswith("2026-05-04T09:01:10.120")
    assert hot(home) == CLAUDE_TURNS  # on the hot timeline, as appended turns are
    assert log_lines(home) == []


def test_each_turn_is_stored_once_however_often_the_hooks_run(home: Path,
                                                              transcript: Path) -> None:
    for event in ("Stop", "PreCompact", "SessionEnd", "Stop"):
        hook(home, hook_input(transcript, event))
    assert len(events(home)) == CLAUDE_TURNS
    append_turn(transcript, "b-1", "Paid the rent.")
    append_turn(transcript, "b-2", "Noted: the rent is paid.", "assistant")
    report = hook(home, hook_input(transcript))
    assert report is not None and report.stored == 2 and report.already == 0
    assert [e["text"] for e in events(home)][-2:] == ["Paid the rent.",
                                                      "Noted: the rent is paid."]


def test_a_lost_or_stale_offset_stores_nothing_twice(home: Path, transcript: Path) -> None:
    hook(home, hook_input(transcript))
    with sqlite3.connect(home / "memory.db") as db:  # as if the call died before saving it
        db.execute("DELETE FROM state WHERE key LIKE 'capture:%'")
    report = hook(home, hook_input(transcript))
    assert report is not None and report.stored == 0 and report.already == CLAUDE_TURNS
    assert len(events(home)) == CLAUDE_TURNS


def test_a_replaced_transcript_is_read_again_from_its_start(home: Path, transcript: Path) -> None:
    hook(home, hook_input(transcript))
    transcript.unlink()
    append_turn(transcript, "c-1", "A new file under the old name.")
    report = hook(home, hook_input(transcript))
    assert report is not None and report.stored == 1
    assert events(home)[-1]["text"] == "A new file under the old name."


def test_a_turn_sent_with_memory_append_under_its_key_is_stored_once(home: Path,
                                                                     transcript: Path) -> None:
    key = f"claude-code:{SESSION}:a0000000-0000-4000-8000-000000000004"
    text = ("My sister Mia Park teaches piano in Bergen. Can you draft a note to her about my "
            "move to Oslo in May?")
    with Memory.open(home) as mem:
        mem.append_event(text, source="user", key=key)
    report = hook(home, hook_input(transcript))
    assert report is not None and report.already == 1 and report.stored == CLAUDE_TURNS - 1
    assert [e["key"] for e in events(home)].count(key) == 1


def test_a_key_stored_with_other_text_is_left_as_stored_and_the_capture_goes_on(
        home: Path, transcript: Path) -> None:
    key = f"claude-code:{SESSION}:a0000000-0000-4000-8000-000000000004"
    with Memory.open(home) as mem:
        mem.append_event("the agent's own words for this turn", key=key)
    report = hook(home, hook_input(transcript))
    assert report is not None and report.conflicts == 1 and report.stored == CLAUDE_TURNS - 1
    assert events(home)[0]["text"] == "the agent's own words for this turn"
    logged = log_lines(home)
    assert [x["what"] for x in logged] == ["skipped"] and "1 key(s)" in logged[0]["detail"]
    assert "Mia" not in json.dumps(logged)  # counts, never a turn's text


def test_a_message_the_store_refuses_never_holds_up_the_rest(home: Path,
                                                             transcript: Path) -> None:
    with transcript.open("a", encoding="utf-8") as out:  # a message id no key can hold
        out.write(json.dumps({"type": "user", "uuid": "bad-\ud800", "sessionId": SESSION,
                              "message": {"role": "user", "content": "refused"}}) + "\n")
        out.write(json.dumps({"type": "user", "uuid": "e-0", "sessionId": SESSION,
                              "timestamp": "0001-01-01T00:00:00+14:00",  # before year 1 in UTC
                              "message": {"role": "user", "content": "out of range"}}) + "\n")
    append_turn(transcript, "e-1", "after the refused ones")
    report = hook(home, hook_input(transcript))
    assert report is not None and report.refused == 2 and report.stored == CLAUDE_TURNS + 1
    assert events(home)[-1]["text"] == "after the refused ones"
    assert "2 message(s) the store refused" in log_lines(home)[-1]["detail"]
    again = hook(home, hook_input(transcript))
    assert again is not None and again.refused == 0 and again.stored == 0


def test_a_big_backlog_is_captured_a_bounded_step_per_call(home: Path, transcript: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setattr(capture, "STEP_EVENTS", 2)
    calls = []
    while not calls or calls[-1].more:
        report = hook(home, hook_input(transcript))
        assert report is not None and report.stored <= 2
        calls.append(report)
    # the last call reads the lines after the last turn (a system line, the compaction summary)
    assert [c.stored for c in calls] == [2, 2, 2, 0]
    assert len(events(home)) == CLAUDE_TURNS


def test_a_call_stops_at_its_deadline_and_the_next_goes_on(home: Path, transcript: Path) -> None:
    ticks = iter(range(1_000))
    with Memory.open(home) as mem:
        first = capture_file(mem, "claude-code", transcript,
                             bounds=Bounds(deadline=7, clock=lambda: next(ticks)))
        assert first.more and 0 < first.stored < CLAUDE_TURNS
        rest = capture_file(mem, "claude-code", transcript, bounds=Bounds())
    assert first.stored + rest.stored == CLAUDE_TURNS and not rest.more


def test_a_locked_database_ends_the_hook_quickly_and_the_next_call_catches_up(
        home: Path, transcript: Path) -> None:
    Memory.open(home).close()
    blocker = sqlite3.connect(home / "memory.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # a long write elsewhere
    try:
        began = time.monotonic()
        assert hook(home, hook_input(transcript)) is None
        assert time.monotonic() - began < 10  # not the 30 s busy timeout of other commands
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert "locked" in log_lines(home)[-1]["detail"]
    report = hook(home, hook_input(transcript))
    assert report is not None and report.stored == CLAUDE_TURNS


def test_a_database_under_an_exclusive_lock_is_waited_for_only_within_the_step(
        home: Path, transcript: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Memory.open(home).close()
    waits: list[int] = []
    prepare = connection._prepare

    def spy(conn: sqlite3.Connection, db_path: Path, readonly: bool,
            migrations: Sequence[Migration] | None) -> sqlite3.Connection:
        waits.append(conn.execute("PRAGMA busy_timeout").fetchone()[0])
        return prepare(conn, db_path, readonly, migrations)

    monkeypatch.setattr(connection, "_prepare", spy)
    blocker = sqlite3.connect(home / "memory.db", isolation_level=None)
    blocker.execute("PRAGMA locking_mode = EXCLUSIVE")  # no other connection even reads
    blocker.execute("BEGIN EXCLUSIVE")
    blocker.execute("UPDATE state SET value = value WHERE key = 'graph_revision'")
    try:
        assert run_hook(home, "claude-code", hook_input(transcript), time.monotonic()) is None
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    # the open itself waits what is left of the half second, not the 30 s of other commands
    assert waits and max(waits) <= capture.STEP_SECONDS * 1000
    assert "locked" in log_lines(home)[-1]["detail"]


def test_compact_and_organize_run_on_captured_turns(home: Path, transcript: Path) -> None:
    hook(home, hook_input(transcript))
    with Memory.open(home) as mem:
        mem.organize(wait=True)
        counts = mem.status()["events"]
    assert counts["hot"] == 0 and counts["pending"] == 0 and counts["continue"] == 0
    assert counts["linked"] + counts["archive_only"] == CLAUDE_TURNS


# -- never failing the host ----------------------------------------------------------------------
@pytest.mark.parametrize("raw,why", [
    (b"", "no hook input"),
    (b"{not json", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (json.dumps({"session_id": SESSION}).encode(), "no transcript_path"),
    (json.dumps({"session_id": SESSION, "transcript_path": "/nowhere/x.jsonl"}).encode(),
     "cannot read the transcript /nowhere/x.jsonl"),
])
def test_a_hook_that_cannot_capture_exits_0_silently_and_logs_why(
        runner: CliRunner, home: Path, raw: bytes, why: str) -> None:
    result = runner.invoke(main_cli(), ["hook", "claude-code"], input=raw)
    assert result.exit_code == 0 and result.stdout == ""
    assert why in log_lines(home)[-1]["detail"]


def test_a_transcript_that_is_no_regular_file_is_never_read(home: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)  # reading it would block the host's turn
    assert hook(home, hook_input(fifo)) is None
    assert "not a regular file" in log_lines(home)[-1]["detail"]


def test_a_transcript_path_that_is_a_symlink_is_never_followed(home: Path,
                                                               transcript: Path) -> None:
    link = transcript.parent / "link.jsonl"
    link.symlink_to(transcript)  # a host writes its transcript itself, never a link
    assert hook(home, hook_input(link)) is None
    assert "symlink" in log_lines(home)[-1]["detail"]
    assert events(home) == []


def test_the_log_holds_no_secret(home: Path) -> None:
    token = "sk-proj-" + "Q7rT2xLm9KpZ4vWn8YsB3cHd6FgJ1aEu"
    hook(home, json.dumps({"session_id": SESSION,
                           "transcript_path": f"/tmp/{token}/x.jsonl"}).encode())
    text = (home / capture.LOG_NAME).read_text("utf-8")
    assert token not in text and "cannot read the transcript" in text
    assert oct((home / capture.LOG_NAME).stat().st_mode & 0o777) == "0o600"


def test_a_home_that_cannot_be_written_is_said_on_stderr_and_exits_0(
        runner: CliRunner, tmp_path: Path, transcript: Path) -> None:
    result = runner.invoke(main_cli(), ["--home", "", "hook", "claude-code"],
                           input=hook_input(transcript))
    assert result.exit_code == 0 and result.stdout == ""
    assert "empty path" in result.stderr


def test_a_host_that_leaves_stdin_open_does_not_hold_the_hook(home: Path,
                                                              transcript: Path) -> None:
    proc = subprocess.Popen([*CLI, "--home", str(home), "hook", "claude-code"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(hook_input(transcript))
        proc.stdin.flush()  # and never closed, as a host may do
        assert proc.wait(WAIT_S) == 0
        assert proc.stdout.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT_S)
        proc.stdin.close()
    assert events(home)  # a real call stores a message at least, however loaded the machine


# -- the printed configs run -----------------------------------------------------------------------
def test_the_printed_claude_code_config_captures_without_a_path(runner: CliRunner, home: Path,
                                                                transcript: Path) -> None:
    config = json.loads(run_cli(runner, "hook", "claude-code", "--print-config").stdout)
    assert set(config["hooks"]) == {"Stop", "PreCompact", "SessionEnd"}
    entry = config["hooks"]["Stop"][0]["hooks"][0]
    assert entry["type"] == "command" and entry["timeout"] == 10
    argv = shlex.split(entry["command"])
    assert Path(argv[0]).is_absolute() and argv[-4:] == ["--home", str(home.absolute()), "hook",
                                                         "claude-code"]
    env = {k: v for k, v in os.environ.items() if k not in ("PATH", "MEMVAULT_HOME")}

    def call() -> tuple[int, bytes]:
        done = subprocess.run(argv, input=hook_input(transcript), capture_output=True, env=env,
                              timeout=WAIT_S, check=False)
        return done.returncode, done.stdout

    until_captured(home, CLAUDE_TURNS, call)


def test_the_printed_codex_notify_line_captures_the_rollout(runner: CliRunner,
                                                            home: Path) -> None:
    printed = run_cli(runner, "hook", "codex", "--print-config").stdout
    argv = tomllib.loads(printed)["notify"]
    assert Path(argv[0]).is_absolute() and argv[-4:] == ["--home", str(home.absolute()), "hook",
                                                         "codex"]
    env = {**{k: v for k, v in os.environ.items() if k not in ("PATH", "MEMVAULT_HOME")},
           "CODEX_HOME": str(CODEX_HOME)}

    def call() -> tuple[int, bytes]:
        done = subprocess.run([*argv, notify()], stdin=subprocess.DEVNULL, capture_output=True,
                              env=env, timeout=WAIT_S, check=False)
        return done.returncode, done.stdout

    until_captured(home, CODEX_TURNS, call)
    assert [e["key"] for e in events(home)][0] == f"codex:{THREAD}:8"
    hooks_json = json.loads(run_cli(runner, "hook", "codex", "--print-hooks-config").stdout)
    assert shlex.split(hooks_json["hooks"]["Stop"][0]["hooks"][0]["command"]) == argv


# -- transcripts that would hold a call ------------------------------------------------------
def test_an_overlong_line_that_never_ends_costs_each_call_one_bounded_step(
        home: Path, tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    with path.open("wb") as out:
        out.truncate(2 * 1024**3)  # 2 GB of one line and no newline, sparse: no disk
    offsets = []
    for _ in range(3):
        report = hook(home, hook_input(path))
        assert report is not None and report.stored == 0 and report.more
        saved = saved_progress(home)
        assert saved["skipping"]
        offsets.append(saved["offset"])
    # the first call holds the line's first MAX_LINE_BYTES + 1 bytes; each next one skips on
    # a step's bytes from where the last one stopped
    assert offsets[0] == transcripts.MAX_LINE_BYTES + 1
    assert [after - before for before, after in zip(offsets, offsets[1:], strict=False)] == [
        capture.STEP_BYTES] * 2


def test_the_turns_after_an_overlong_line_are_stored_once_the_skip_reaches_them(
        home: Path, tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    with path.open("wb") as out:
        out.truncate(transcripts.MAX_LINE_BYTES + 2 * capture.STEP_BYTES)
        out.seek(0, os.SEEK_END)
        out.write(b"\n")
    append_turn(path, "f-1", "after the long line")
    calls = []
    while not calls or calls[-1].more:
        report = hook(home, hook_input(path))
        assert report is not None and len(calls) < 10
        calls.append(report)
    assert [e["text"] for e in events(home)] == ["after the long line"]
    assert sum(c.unreadable for c in calls) == 1  # the long line, counted once it ended


def test_a_message_of_more_than_200_parts_is_stored_200_a_call(home: Path,
                                                               tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    text = "".join(f"{n:07d}" for n in range(1_000_000))  # 7 M chars: 219 parts
    append_turn(path, "g-1", text)
    stored = []
    for _ in range(3):
        report = hook(home, hook_input(path))
        assert report is not None
        stored.append(report.stored)
    assert stored == [200, 19, 0]
    rows = events(home)
    assert "".join(e["text"] for e in rows) == text
    assert len({e["key"] for e in rows}) == 219


def test_a_transcript_rewritten_in_place_is_read_again_from_its_start(
        home: Path, transcript: Path, tmp_path: Path) -> None:
    hook(home, hook_input(transcript))
    read_to, inode = saved_progress(home)["offset"], transcript.stat().st_ino
    other = tmp_path / "other.jsonl"
    for n in range(60):
        append_turn(other, f"h-{n}", f"turn {n} of another session, in the same file")
    shutil.copyfile(other, transcript)  # as `cp other.jsonl it` does: the same inode
    assert transcript.stat().st_ino == inode and transcript.stat().st_size > read_to
    report = hook(home, hook_input(transcript))
    assert report is not None and report.stored == 60
    assert events(home)[CLAUDE_TURNS]["text"] == "turn 0 of another session, in the same file"



def test_a_rewritten_transcript_is_read_on_from_where_its_new_reading_stopped(
        home: Path, transcript: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook(home, hook_input(transcript))
    other = tmp_path / "other.jsonl"
    for n in range(60):
        append_turn(other, f"h-{n}", f"turn {n} of another session, in the same file")
    shutil.copyfile(other, transcript)
    monkeypatch.setattr(capture, "STEP_EVENTS", 25)
    # the old record (further on) is replaced by the new reading's position, behind it
    stored = [report.stored for report in (hook(home, hook_input(transcript))
                                           for _ in range(4)) if report is not None]
    assert stored == [25, 25, 10, 0]

# -- spaces ---------------------------------------------------------------------------------------
def space_counts(home: Path) -> dict[str, int]:
    with Memory.open(home, readonly=True) as mem:
        rows = mem.conn.execute("SELECT space, COUNT(*) FROM events GROUP BY space")
        return {space: count for space, count in rows}


def test_hooks_bound_to_two_spaces_each_capture_the_whole_transcript(home: Path,
                                                                     transcript: Path) -> None:
    # Claude Code merges user and project settings: an unbound global hook beside a project's
    # hook bound to `work` both run on every turn
    for _ in range(2):
        hook(home, hook_input(transcript))
        hook(home, hook_input(transcript), space="work")
    assert space_counts(home) == {"shared": CLAUDE_TURNS, "work": CLAUDE_TURNS}
    append_turn(transcript, "w-1", "one more turn")
    for space in (None, "work"):
        report = hook(home, hook_input(transcript), space=space)
        assert report is not None and report.stored == 1


def test_the_shared_capture_reads_on_from_progress_saved_before_spaces_had_their_own(
        home: Path, transcript: Path) -> None:
    Memory.open(home).close()
    digest = hashlib.sha256(str(transcript.absolute()).encode()).hexdigest()[:32]
    before = {"offset": transcript.stat().st_size, "line": 21, "session": None, "turn": None,
              "cwd": None, "ino": transcript.stat().st_ino}  # as the versions before saved it
    with sqlite3.connect(home / "memory.db") as db:
        db.execute("INSERT INTO state (key, value) VALUES (?, ?)",
                   (f"capture:claude-code:{digest}", json.dumps(before)))
    report = hook(home, hook_input(transcript))
    assert report is not None and report.stored == 0 and report.already == 0  # nothing reread
    bound = hook(home, hook_input(transcript), space="work")
    assert bound is not None and bound.stored == CLAUDE_TURNS  # a space's own progress


# -- a hook's command line -------------------------------------------------------------------------
@pytest.mark.parametrize("args,env_home,said", [
    (["--home", "{file}", "hook", "claude-code"], None, "Invalid value for '--home'"),
    (["hook", "claude-code"], "{file}", "Invalid value for '--home'"),
    (["hook", "claude-code", "--home", "{file}"], None, "Invalid value for '--home'"),
    (["--home", "{home}", "hook", "claude-code", "--space", "Not/A/Space"], None,
     "Invalid value for '--space'"),
    (["--home", "{home}", "hook", "claude-code", "extra"], None, "unexpected extra argument"),
    (["--home", "{home}", "hook", "codex", "{{}}", "extra"], None,
     "unexpected extra argument"),
])
def test_a_hook_command_line_click_refuses_exits_0_and_says_why_once(
        home: Path, tmp_path: Path, transcript: Path, args: list[str], env_home: str | None,
        said: str) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    names = {"file": str(a_file), "home": str(home)}
    env = {k: v for k, v in os.environ.items() if k != "MEMVAULT_HOME"}
    if env_home:
        env["MEMVAULT_HOME"] = env_home.format(**names)
    done = subprocess.run([*stdio_command(), *(a.format(**names) for a in args)],
                          input=hook_input(transcript), capture_output=True, env=env,
                          timeout=WAIT_S, check=False)
    assert done.returncode == 0 and done.stdout == b""  # 2 would be a blocking error
    if "{file}" in args or env_home:  # no home can take it: one line on stderr
        lines = done.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("memvault hook claude-code: command line")
        assert said in lines[0]
    else:
        assert done.stderr == b""
        logged = log_lines(home)
        assert len(logged) == 1 and logged[0]["detail"].startswith("command line: ")
        assert said in logged[0]["detail"]


def test_printing_a_config_with_a_bad_command_line_still_fails_loudly(home: Path) -> None:
    done = subprocess.run([*stdio_command(), "--home", str(home), "hook", "claude-code",
                           "--print-config", "--space", "Not/A/Space"],
                          capture_output=True, timeout=WAIT_S, check=False)
    assert done.returncode == 2 and b"Invalid value for '--space'" in done.stderr


# -- Codex CLI -----------------------------------------------------------------------------------
def test_codex_notify_reads_the_sessions_rollout_once(home: Path) -> None:
    for _ in range(2):
        report = hook(home, notify(), "codex")
    assert report is not None and report.path == str(ROLLOUT) and report.stored == 0
    assert [e["source"] for e in events(home)] == ["user", "assistant", "assistant", "user",
                                                   "assistant"]
    assert hot(home) == CODEX_TURNS


def test_codex_stop_hook_input_on_stdin_is_read_as_well(runner: CliRunner, home: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(CODEX_HOME))
    stop = {"session_id": THREAD, "turn_id": "t-2", "transcript_path": None, "cwd": "/w",
            "hook_event_name": "Stop", "model": "gpt-5.5", "permission_mode": "default",
            "stop_hook_active": False, "last_assistant_message": "好的，以后把会安排在上午。"}

    def call() -> tuple[int, str]:
        result = runner.invoke(main_cli(), ["hook", "codex"], input=json.dumps(stop))
        return result.exit_code, result.stdout

    until_captured(home, CODEX_TURNS, call)  # found by its thread id: the keys notify gives
    hook(home, notify(), "codex")
    assert len(events(home)) == CODEX_TURNS


def test_a_codex_session_without_a_rollout_keeps_the_turn_the_notify_carries(home: Path) -> None:
    ephemeral = "019dd8e4-0000-7000-8000-000000000000"
    for _ in range(2):
        hook(home, notify(ephemeral), "codex")
    stored = events(home)
    assert [(e["source"], e["text"]) for e in stored] == [
        ("user", "我现在更喜欢上午开会。"), ("assistant", "好的，以后把会安排在上午。")]
    assert stored[0]["key"] == f"codex:{ephemeral}:019dd8e5-0b10-7e01-b2f9-f92834530002:in1"


def test_other_codex_notifications_are_ignored(home: Path) -> None:
    report = hook(home, json.dumps({"type": "approval-requested", "thread-id": THREAD}),
                  "codex")
    assert report is not None and report.stored == 0 and log_lines(home) == []


def test_a_rollout_is_found_by_its_thread_id(tmp_path: Path) -> None:
    assert find_rollout(CODEX_HOME, THREAD) == ROLLOUT
    assert find_rollout(CODEX_HOME, "019dd8e4-0000-7000-8000-000000000000") is None
    assert find_rollout(CODEX_HOME, "../../etc/passwd") is None
    # a thread id that is no UUIDv7 (no time in it) is looked for on every day
    other = tmp_path / "sessions" / "2025" / "01" / "02" / "rollout-2025-01-02T00-00-00-abc.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text("")
    assert find_rollout(tmp_path, "abc") == other
    archived = tmp_path / "archived_sessions" / "rollout-2024-01-01T00-00-00-old.jsonl"
    archived.parent.mkdir()
    archived.write_text("")
    assert find_rollout(tmp_path, "old") == archived


# -- import and capture agree --------------------------------------------------------------------
def test_an_imported_session_is_history_and_its_hook_then_stores_nothing_twice(
        runner: CliRunner, home: Path) -> None:
    data = json.loads(run_cli(runner, "import", "codex", str(CODEX_HOME / "sessions"),
                              "--json").stdout)
    assert data["events"] == CODEX_TURNS and data["skipped_roles"] == 6
    assert hot(home) == 0  # history goes to the organize queue, not the hot timeline
    report = hook(home, notify(), "codex")
    assert report is not None and report.stored == 0 and report.already == CODEX_TURNS


def test_a_captured_session_imported_again_stores_nothing(runner: CliRunner, home: Path,
                                                          transcript: Path) -> None:
    hook(home, hook_input(transcript))
    data = json.loads(run_cli(runner, "import", "claude-code", str(transcript.parent),
                              "--json").stdout)
    assert data["events"] == 0 and data["already_stored"] == CLAUDE_TURNS


def test_an_import_stops_at_a_broken_line_naming_it(runner: CliRunner, home: Path,
                                                    transcript: Path) -> None:
    with transcript.open("a") as out:
        out.write("{broken\n")
    append_turn(transcript, "d-1", "after the broken line")
    result = run_cli(runner, "import", "claude-code", str(transcript), code=1)
    assert "not a JSON object" in result.output and "line 22" in result.output
    assert events(home) == []



def test_a_folder_import_reads_every_transcript_and_names_each_entry_it_does_not_read(
        runner: CliRunner, home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    (folder / "p").mkdir(parents=True)
    shutil.copy(CLAUDE, folder / "p" / "0-first.jsonl")
    (folder / "p" / "1-link.jsonl").symlink_to(CLAUDE)  # never followed
    os.mkfifo(folder / "p" / "2-fifo.jsonl")  # reading it would wait for a writer
    (folder / "p" / "3-folder.jsonl").mkdir()
    (folder / "linked-project").symlink_to(CLAUDE.parent, target_is_directory=True)
    append_turn(folder / "p" / "4-last.jsonl", "l-1", "the file after them all")
    result = run_cli(runner, "import", "claude-code", str(folder))
    assert f"imported {CLAUDE_TURNS + 1} event(s)" in result.stdout
    for name, why in (("p/1-link.jsonl", "a symbolic link (never followed)"),
                      ("p/2-fifo.jsonl", "a FIFO"), ("p/3-folder.jsonl", "a folder"),
                      ("linked-project", "a symbolic link (never followed)")):
        assert f"not read: {folder / name}: {why}" in result.stdout
    data = json.loads(run_cli(runner, "import", "claude-code", str(folder), "--json").stdout)
    assert data["already_stored"] == CLAUDE_TURNS + 1
    assert [Path(e["path"]).name for e in data["skipped_files"]] == [
        "linked-project", "1-link.jsonl", "2-fifo.jsonl", "3-folder.jsonl"]

def test_only_transcripts_are_imported_from_a_folder(runner: CliRunner) -> None:
    result = run_cli(runner, "import", "chatgpt", str(DATA), code=2)
    assert "only claude-code and codex read a folder" in result.output


def main_cli() -> Any:
    from memvault.cli import main

    return main
