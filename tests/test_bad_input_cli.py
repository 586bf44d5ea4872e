"""Bad input on the command line and in the memory home: one line saying what is wrong and
what is allowed (exit status 1, or 2 for a usage error), never a traceback, nothing lost.

The table in tests/README.md lists every case with its message; the cases already covered by
test_cli.py, test_recall_cli.py and test_config.py are not repeated here.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import run_cli, write_config

EVENTS = [
    {"text": "旧事 0", "occurred_at": "1960-01-01T00:00:00+00:00"},
    {"text": "旧事 1", "occurred_at": "1960-01-01T00:00:01+00:00"},
    {"text": "旧事 2", "occurred_at": "1960-01-01T00:00:02+00:00"},
    {"text": "早上好", "occurred_at": "2026-10-05T09:00:00+08:00"},
]


run = run_cli


def error_line(result: Result) -> str:
    """The last line of the output: click's `Error: ...`."""
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: "), result.output
    return line


def jsonl(*events: dict) -> bytes:
    return b"".join(json.dumps(e, ensure_ascii=False).encode() + b"\n" for e in events)


def total_events(runner: CliRunner) -> int:
    return json.loads(run(runner, "status", "--json").stdout)["events"]["total"]


@pytest.fixture
def ingested(runner: CliRunner) -> None:
    run(runner, "ingest", "-", input=jsonl(*EVENTS))


# -- arguments --------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (("event", "1", "-5"), "Invalid value for '[OFFSET]': -5 is not in the range x>=0"),
    (("event", "1", "abc"), "'abc' is not a valid integer range"),
    (("object", "person:qhy", "-1"), "-1 is not in the range x>=0"),
    (("read", "1", "-3"), "-3 is not in the range x>=0"),
    (("evidence", "1", "-3"), "-3 is not in the range x>=0"),
    (("expand", "-1"), "Invalid value for 'NODE': -1 is not in the range 1<="),
    (("expand", "99999999999999999999999"), "is not in the range 1<=x<=9223372036854775807"),
    (("event", "1", "--jsn"), "No such option '--jsn'"),
    (("events", "2026-10-05T00:00:00Z", "2026-10-06T00:00:00Z", "--limt", "2"),
     "No such option '--limt'"),
])
def test_a_negative_or_garbage_number_names_the_argument_and_its_range(
    runner: CliRunner, ingested: None, args: tuple[str, ...], message: str
) -> None:
    assert message in error_line(run(runner, *args, code=2))


def test_a_negative_event_id_is_not_an_event_id(runner: CliRunner, ingested: None) -> None:
    assert "not an event id: '-1'" in error_line(run(runner, "event", "-1", code=1))


def test_the_cursor_of_a_listing_before_1970_can_be_passed_back(
    runner: CliRunner, ingested: None
) -> None:
    args = ("events", "1950-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "--limit", "1", "--json")
    seen, cursor = [], None
    while True:
        page = json.loads(run(runner, *args, *([cursor] if cursor else [])).stdout)
        seen += [e["id"] for e in page["events"]]
        cursor = page["cursor"]
        if cursor is None:
            break
        assert cursor.startswith("-")  # microseconds before 1970
    assert seen == [1, 2, 3]


@pytest.mark.parametrize(("args", "message"), [
    (("event", "99999999999999999999999"),
     "no event 99999999999999999999999: an event id is at most 9223372036854775807"),
    (("read", "99999999999999999999999"), "no event 99999999999999999999999"),
    (("evidence", "event:99999999999999999999999"), "no event 99999999999999999999999"),
    (("events", "2026-10-05T00:00:00Z", "2026-10-06T00:00:00Z", "99999999999999999999999:1"),
     "not a cursor from a previous listing: '99999999999999999999999:1'"),
])
def test_a_number_too_large_for_sqlite_is_one_line(
    runner: CliRunner, ingested: None, args: tuple[str, ...], message: str
) -> None:
    line = error_line(run(runner, *args, code=1))
    assert message in line
    assert "Python int" not in line  # SQLite's own words name no argument


@pytest.mark.parametrize(("args", "message"), [
    (("read", "person:../../etc"), "the slug may not hold spaces, path separators"),
    (("evidence", "person:a/b"), "the slug may not hold spaces, path separators"),
    (("read", "../../memory.db"), "not an object id: '../../memory.db'"),
    (("find", "x", "--project", "project:../x"), "the slug may not hold"),
])
def test_a_path_in_an_id_is_refused_by_recall_too(
    runner: CliRunner, ingested: None, args: tuple[str, ...], message: str
) -> None:
    assert message in error_line(run(runner, *args, code=1))


@pytest.mark.parametrize(("args", "message"), [
    (("find", "\udcff"), "query has a lone surrogate at char 0"),
    (("event", "\udcff"), "not an event id"),
    (("events", "\udcff", "2026-10-06T00:00:00Z"), "FROM: not an ISO 8601 time"),
    (("object", "person:\udcff"), "object id"),
])
def test_bytes_that_are_not_utf8_in_an_argument_are_refused(
    runner: CliRunner, ingested: None, args: tuple[str, ...], message: str
) -> None:
    """On Linux, argv bytes that are not UTF-8 arrive as lone surrogates (surrogateescape)."""
    assert message in error_line(run(runner, *args, code=1))


def test_events_without_an_offset_are_taken_in_the_configured_zone(
    runner: CliRunner, home: Path
) -> None:
    """Not an error: a time without offset (or a bare date) means time.timezone's local time."""
    write_config(home, '[time]\ntimezone = "Asia/Shanghai"\n')
    run(runner, "ingest", "-", input=jsonl(*EVENTS))
    naive = json.loads(run(runner, "events", "2026-10-05T09:00:00", "2026-10-05T09:00:01",
                           "--json").stdout)
    assert [e["id"] for e in naive["events"]] == [4]  # 09:00 in Shanghai, not in UTC
    dates = json.loads(run(runner, "events", "2026-10-05", "2026-10-06", "--json").stdout)
    assert [e["id"] for e in dates["events"]] == [4]


def test_an_unknown_model_provider_is_one_line(runner: CliRunner, ingested: None) -> None:
    line = error_line(run(runner, "organize", "--wait", "--model", "nope:x", code=1))
    assert "model provider: unknown provider 'nope' (builtin, openai)" in line
    line = error_line(run(runner, "organize", "--wait", "--model", "scripted", code=1))
    assert "model provider: unknown provider 'scripted' (builtin, openai)" in line
    assert total_events(runner) == len(EVENTS)


@pytest.mark.parametrize(("failure", "message"), [
    (PermissionError(13, "Permission denied", "/x/memory.db"), "/x/memory.db: Permission denied"),
    (sqlite3.OperationalError("database is locked"), "the database refused: database is locked"),
    (OverflowError("date value out of range"), "a number is out of range: date value out"),
])
def test_an_os_or_database_failure_is_one_line(
    runner: CliRunner, ingested: None, monkeypatch: pytest.MonkeyPatch, failure: Exception,
    message: str
) -> None:
    """What the OS or SQLite refuses (a file's permissions, a lock held too long) is no bug:
    one line naming it, exit status 1."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise failure

    monkeypatch.setattr("memvault.home.memory.Memory.status", refuse)
    assert message in error_line(run(runner, "status", code=1))


# -- the memory home --------------------------------------------------------------------------


def test_a_home_that_is_a_file_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "not-a-folder"
    path.write_text("mine\n", encoding="utf-8")
    line = error_line(run(runner, "--home", str(path), "status", code=2))
    assert "Invalid value for '--home'" in line and "is a file" in line
    assert path.read_text(encoding="utf-8") == "mine\n"


def test_a_home_under_a_file_cannot_be_created(runner: CliRunner, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("mine\n", encoding="utf-8")
    result = run(runner, "--home", str(blocker / "home"), "ingest", "-", code=1,
                 input=jsonl(EVENTS[0]))
    assert f"cannot create the memory home {blocker / 'home'}: Not a directory" in \
        error_line(result)
    assert blocker.read_text(encoding="utf-8") == "mine\n"


def test_an_empty_home_is_refused_not_taken_as_the_current_folder(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(runner, "--home", "", "ingest", "-", code=1, input=jsonl(EVENTS[0]))
    assert "the memory home is an empty path" in error_line(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("name", "what"), [("memory.db", "the database"),
                                            ("memvault.toml", "the settings file")])
def test_a_folder_where_the_database_or_settings_belong_is_refused(
    runner: CliRunner, home: Path, name: str, what: str
) -> None:
    (home / name).mkdir(parents=True)
    (home / name / "keep.txt").write_text("mine\n", encoding="utf-8")
    for args in (("status",), ("ingest", "-")):
        line = error_line(run(runner, *args, code=1, input=jsonl(EVENTS[0])))
        assert f"{home / name} is a folder where {what} belongs: move it away" in line
    assert (home / name / "keep.txt").read_text(encoding="utf-8") == "mine\n"


def test_a_database_from_a_newer_version_refuses_writes_and_keeps_its_data(
    runner: CliRunner, home: Path
) -> None:
    run(runner, "ingest", "-", input=jsonl(*EVENTS))
    db = home / "memory.db"
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO _migrations (name, applied_at) VALUES ('m999_future', 'now')")
    conn.close()
    result = run(runner, "ingest", "-", code=1, input=jsonl({"text": "more"}))
    assert "it was written by a newer version" in error_line(result)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == len(EVENTS)
    conn.close()
