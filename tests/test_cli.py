"""Every `memvault` command through click's CliRunner: happy paths, --json, paging, and each kind
of bad input giving a one-line error (never a traceback) with nothing lost."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from helpers import T0, add_evidence, run_cli, write_config
from memvault import ManualClock, Memory
from memvault.cli import main
from memvault.objects.records import ObjectRecord, add_relation, save_object
from memvault.store.connection import write
from memvault.timeline.events import NewEvent

run = run_cli


def run_json(runner: CliRunner, *args: str, code: int = 0, input: bytes | None = None):
    return json.loads(run(runner, *args, "--json", code=code, input=input).stdout)


def jsonl(*events: dict) -> bytes:
    return b"".join(json.dumps(e, ensure_ascii=False).encode() + b"\n" for e in events)


def write_jsonl(path: Path, *events: dict) -> str:
    path.write_bytes(jsonl(*events))
    return str(path)


EVENTS = [
    {"text": "早上好！我是秦浩宇（qhy）。", "occurred_at": "2026-10-05T09:43:11+08:00",
     "source": "user",
     "meta": {"msg_id": "m-0002", "channel": "desktop", "嵌套": {"a": [1, None]}}},
    {"text": "Remember that Haoyu prefers tea over coffee.", "occurred_at":
     "2026-10-05T09:47:18+08:00", "source": "user", "kind": "message"},
    {"text": "Got it — tea over coffee.", "occurred_at": "2026-10-05T09:48:32+08:00",
     "source": "agent", "meta": {}},
]


@pytest.fixture
def ingested(runner: CliRunner, tmp_path: Path) -> list[int]:
    return run_json(runner, "ingest", write_jsonl(tmp_path / "in.jsonl", *EVENTS))["stored"]


# -- help ---------------------------------------------------------------------------------------


def walk(command: click.Command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, click.Group):  # lazy: list_commands/get_command, not .commands
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from walk(sub, (*path, name))


def test_every_command_and_subcommand_has_help_text(runner: CliRunner) -> None:
    commands = list(walk(main))
    names = {" ".join(p) for p, _ in commands}
    assert {"core", "core show", "core set", "core history", "demo", "event", "events", "expand",
            "ingest", "list", "object", "status", "timeline"} <= names
    for path, command in commands:
        label = " ".join(path) or "memvault"
        assert (command.help or "").strip(), f"{label} has no help text"
        assert command.get_short_help_str().strip(), f"{label} has no short help"
        result = run(runner, *path, "--help")
        assert "Usage:" in result.output


def test_every_option_has_help_text() -> None:
    missing = [
        f"{' '.join(path) or 'memvault'} {'/'.join(param.opts)}"
        for path, command in walk(main)
        for param in command.params
        if isinstance(param, click.Option) and not (param.help or "").strip()
    ]
    assert missing == []


def test_version(runner: CliRunner) -> None:
    assert "version" in run(runner, "--version").output


# -- ingest -------------------------------------------------------------------------------------


def test_ingest_a_file_lists_ids_as_json(runner: CliRunner, tmp_path: Path, home: Path) -> None:
    data = run_json(runner, "ingest", write_jsonl(tmp_path / "a.jsonl", *EVENTS))
    assert data == {"stored": [1, 2, 3], "skipped": []}
    more = run(runner, "ingest", write_jsonl(tmp_path / "b.jsonl", {"text": "four"}))
    assert more.stdout.strip() == "stored 1 event(s): ids 4–4"
    assert (home / "memory.db").is_file()


def test_ingest_from_stdin(runner: CliRunner) -> None:
    result = run(runner, "ingest", "-", input=jsonl(*EVENTS))
    assert result.stdout.strip() == "stored 3 event(s): ids 1–3"
    assert run(runner, "ingest", "-", input=b"").output.strip() == "stored 0 event(s)"


BAD_JSONL = [
    (b'{"text": "broken', "line 3: broken JSON"),
    (b'{"text": "\xff\xfe"}', "line 3: not valid UTF-8"),
    (b'{"text": "\\ud83d"}', "line 3: text has a lone surrogate"),
    (b'{"text": "x", "meta": [1]}', "line 3: meta must be a JSON object"),
    (b'{"text": "x", "who": "me"}', "line 3: unknown field(s) who"),
    (b'{"text": ""}', "line 3: text is empty"),
    (b'{"text": "x", "occurred_at": "soon"}', "line 3: occurred_at: not an ISO 8601 time"),
    (json.dumps({"text": "y" * 32_001}).encode(), "line 3: text is 32,001 chars"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_JSONL)
def test_ingest_stops_at_a_bad_line_and_keeps_the_lines_before(
    runner: CliRunner, tmp_path: Path, bad: bytes, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl(*EVENTS[:2]) + bad + b"\n" + jsonl(EVENTS[2]))
    result = run(runner, "ingest", str(path), code=1)
    assert result.output.startswith("Error: ")
    assert message in result.output
    assert "the 2 event(s) before it are stored" in result.output
    data = run_json(runner, "ingest", str(path), code=1)
    assert data["line"] == 3 and data["stored"] == [3, 4] and message in data["error"]
    status = run_json(runner, "status")
    assert status["events"]["total"] == 4


def test_ingest_of_a_missing_file_is_a_usage_error_and_creates_nothing(
    runner: CliRunner, tmp_path: Path, home: Path
) -> None:
    result = run(runner, "ingest", str(tmp_path / "nope.jsonl"), code=2)
    assert "does not exist" in result.output
    assert not home.exists()
    result = run(runner, "ingest", str(tmp_path), code=2)  # a directory
    assert "is a directory" in result.output


# -- read-only commands on a missing memory -------------------------------------------------------


READ_ONLY = [
    ("status",), ("list", "person"), ("object", "person:qhy"),
    ("events", "2026-10-05T00:00:00+08:00", "2026-10-06T00:00:00+08:00"), ("event", "1"),
    ("timeline",), ("expand", "1"), ("core", "show", "AGENTS.md"),
    ("core", "history", "AGENTS.md"),
]


@pytest.mark.parametrize("args", READ_ONLY)
def test_read_only_commands_on_a_missing_memory_say_so_and_create_nothing(
    runner: CliRunner, home: Path, args: tuple[str, ...]
) -> None:
    result = run(runner, *args, code=1)
    assert result.output.startswith("Error: no memory at ")
    assert "memory.db" in result.output
    assert not home.exists()


@pytest.mark.parametrize("args", READ_ONLY)
def test_read_only_commands_on_a_garbage_file_say_so(
    runner: CliRunner, home: Path, args: tuple[str, ...]
) -> None:
    home.mkdir()
    (home / "memory.db").write_bytes(b"not sqlite " * 200)
    result = run(runner, *args, code=1)
    assert "not a readable SQLite database" in result.output


@pytest.mark.parametrize("args", [*READ_ONLY, ("ingest", "-"), ("demo",)])
def test_a_bad_config_value_is_a_clear_error_for_every_command(
    runner: CliRunner, home: Path, args: tuple[str, ...]
) -> None:
    write_config(home, "[organize]\nclaim_budget_bytes = 500\n")
    result = run(runner, *args, code=1, input=jsonl(EVENTS[0]))
    assert "organize.claim_budget_bytes = 500: allowed range 24000–200000" in result.output
    assert not (home / "memory.db").exists()


def test_an_unknown_config_key_is_a_clear_error(runner: CliRunner, home: Path) -> None:
    write_config(home, "[compact]\nnode_per_batch = 4\n")
    result = run(runner, "ingest", "-", code=1, input=jsonl(EVENTS[0]))
    assert "compact.node_per_batch: unknown setting" in result.output


def test_home_option_overrides_the_environment(runner: CliRunner, tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    run(runner, "--home", str(other), "ingest", "-", input=jsonl(EVENTS[0]))
    assert (other / "memory.db").is_file()
    assert run_json(runner, "--home", str(other), "status")["events"]["total"] == 1
    run(runner, "status", code=1)  # $MEMVAULT_HOME is still empty


# -- status -------------------------------------------------------------------------------------


def test_status_shows_counts_per_state_and_quick_check(
    runner: CliRunner, ingested: list[int], home: Path
) -> None:
    data = run_json(runner, "status")
    assert data["events"] == {"total": 3, "hot": 3, "pending": 0, "continue": 0, "linked": 0,
                              "archive_only": 0, "blocked": 0}
    assert data["quick_check"] == "ok"
    assert data["timeline"]["nodes"] == 3
    assert data["home"] == str(home.resolve())
    text = run(runner, "status").output
    assert "quick_check: ok" in text
    for state in ("hot", "pending", "continue", "linked", "archive_only", "blocked"):
        assert state in text
    assert "hot timeline: 3 nodes" in text


# -- event / events -----------------------------------------------------------------------------


def test_event_shows_text_and_meta_verbatim(runner: CliRunner, ingested: list[int]) -> None:
    data = run_json(runner, "event", "1")
    assert data["text"] == EVENTS[0]["text"]
    assert data["meta"] == EVENTS[0]["meta"]
    assert data["occurred_at"] == "2026-10-05T09:43:11+08:00"
    assert data["next_offset"] is None and data["state"] == "hot"
    assert run_json(runner, "event", "event:3")["meta"] == {}
    assert run_json(runner, "event", "2")["meta"] is None
    text = run(runner, "event", "1").output
    assert EVENTS[0]["text"] in text
    assert 'meta: {"msg_id": "m-0002", "channel": "desktop", "嵌套": {"a": [1, null]}}' in text
    assert "next_offset: None" in text


def test_event_pages_with_next_offset_to_the_end_and_back(runner: CliRunner) -> None:
    text = "".join(f"[{i:04d}] 第{i}句。" for i in range(3_000))[:20_500]
    run(runner, "ingest", "-", input=jsonl({"text": text}))
    pieces, offset = [], 0
    while offset is not None:
        page = run_json(runner, "event", "1", str(offset))
        pieces.append(page["text"])
        offset = page["next_offset"]
    assert [len(p) for p in pieces] == [8_000, 8_000, 4_500]
    assert "".join(pieces) == text
    assert run_json(runner, "event", "1", "0")["text"] == pieces[0]
    human = run(runner, "event", "1", "8000").output
    assert "next_offset: 16000" in human and pieces[1] in human


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [(("event", "99"), 1, "no event 99"), (("event", "abc"), 1, "not an event id: 'abc'"),
     (("event", "person:qhy"), 1, "not an event id"), (("event", "1", "-5"), 2, "-5"),
     (("event", "1", "999"), 1, "offset 999 is outside event 1"),
     (("expand", "999"), 1, "no hot node 999"), (("expand", "x"), 2, "'x' is not a valid integer"),
     (("object", "person:nobody"), 1, "no object person:nobody"),
     (("list", "people"), 2, "Invalid value"),
     (("events", "yesterday", "2026-10-06T00:00:00Z"), 1, "FROM: not an ISO 8601 time"),
     (("events", "2026-10-06T00:00:00Z", "2026-10-05T00:00:00Z"), 1, "TO must be later"),
     (("events", "2026-10-05T00:00:00Z", "2026-10-06T00:00:00Z", "bad-cursor"), 1,
      "not a cursor"),
     (("events", "2026-10-05T00:00:00Z", "2026-10-06T00:00:00Z", "--limit", "0"), 2,
      "--limit"),
     (("core", "show", "README.md"), 2, "Invalid value"),
     (("timeline", "--max-bytes", "0"), 2, "--max-bytes")],
)
def test_bad_arguments_are_clear_errors(
    runner: CliRunner, ingested: list[int], args: tuple[str, ...], code: int, message: str
) -> None:
    result = run(runner, *args, code=code)
    assert message in result.output


@pytest.mark.parametrize("bad_id", ["person:../x", "../etc", "person:a/b", "../../memory.db"])
def test_object_ids_holding_a_path_are_refused(
    runner: CliRunner, ingested: list[int], bad_id: str
) -> None:
    result = run(runner, "object", bad_id, code=1)
    assert result.output.startswith("Error: ")
    assert "object id" in result.output


def test_events_listing_pages_with_the_cursor_to_the_end(runner: CliRunner) -> None:
    lines = [
        {"text": f"消息 {i}", "occurred_at": f"2026-10-05T09:{i // 2:02d}:00+08:00",
         "meta": {"i": i}}
        for i in range(57)
    ]
    run(runner, "ingest", "-", input=jsonl(*lines))
    args = ("events", "2026-10-05T00:00:00+08:00", "2026-10-06T00:00:00+08:00")
    seen, cursor = [], None
    while True:
        page = run_json(runner, *args, *([cursor] if cursor else []), "--limit", "10")
        seen += page["events"]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert [e["id"] for e in seen] == list(range(1, 58))
    assert [e["meta"] for e in seen] == [{"i": i} for i in range(57)]
    human = run(runner, *args, "--limit", "5").output
    assert "消息 0" in human and "消息 4" in human and "消息 5" not in human
    assert "cursor: " in human and "cursor: None" not in human


# -- timeline / expand --------------------------------------------------------------------------


def test_timeline_shows_the_view_and_says_what_it_cut(runner: CliRunner) -> None:
    run(runner, "ingest", "-", input=jsonl(*({"text": f"{i:02d} " + "m" * 97} for i in range(10))))
    view = run_json(runner, "timeline")
    assert view["total_nodes"] == 10 and view["cut"] is None
    cut = run_json(runner, "timeline", "--max-bytes", "500")
    assert cut["shown_nodes"] == 3 and cut["cut"]["count"] == 7
    human = run(runner, "timeline", "--max-bytes", "500").output
    assert "3 of 10 nodes shown" in human
    assert "showing 3 of 10 hot nodes: the oldest 7" in human


def test_expand_shows_a_heads_children(runner: CliRunner, home: Path) -> None:
    run(runner, "ingest", "-", input=jsonl(*({"text": f"raw {i}"} for i in range(3))))
    with Memory.open(home, clock=ManualClock(T0)) as mem, write(mem.conn):
        head = mem.conn.execute(
            "INSERT INTO hot_nodes (kind, level, seq, summary, chars, est_tokens, first_at,"
            " last_at, created_at) SELECT 'head', 1, MIN(seq), 'raw 0-1 summary', 15, 4,"
            " MIN(first_at), MAX(last_at), 'now' FROM hot_nodes WHERE id IN (1, 2)"
        ).lastrowid
        mem.conn.execute("UPDATE hot_nodes SET parent_id = ?, active = 0 WHERE id IN (1, 2)",
                         (head,))
    children = run_json(runner, "expand", str(head))
    assert [c["text"] for c in children] == ["raw 0", "raw 1"]
    assert [n["kind"] for n in run_json(runner, "timeline")["nodes"]] == ["head", "raw"]
    human = run(runner, "expand", str(head)).output
    assert "[1 raw L0] raw 0" in human and "[2 raw L0] raw 1" in human
    assert "has no children" in run(runner, "expand", "3").output


# -- objects ------------------------------------------------------------------------------------


@pytest.fixture
def objects(runner: CliRunner, home: Path) -> None:
    run(runner, "ingest", "-", input=jsonl(*({"text": f"证据 {i} evidence"} for i in range(30))))
    clock = ManualClock(T0)
    with Memory.open(home, clock=clock) as mem, write(mem.conn):
        save_object(mem.conn, ObjectRecord(
            id="person:qhy", type="person", name="秦浩宇", aliases=["浩宇", "qhy"],
            summary="用户本人 [not markup]", body="身份：用户。", cues=["谁是浩宇"]), clock.now())
        save_object(mem.conn, ObjectRecord(id="person:haoyu", type="person", name="Haoyu",
                                           redirect_to="person:qhy"), clock.now())
        for i in range(40):
            save_object(mem.conn, ObjectRecord(id=f"todo:t{i:02d}", type="todo",
                                               name=f"待办 {i}"), clock.now())
            add_relation(mem.conn, "person:qhy", "assigned_to", f"todo:t{i:02d}", clock.now())
        for event_id in range(1, 31):
            add_evidence(mem.conn, "person:qhy", event_id, 0, 2, clock.now())


def test_list_shows_objects_of_a_type(runner: CliRunner, objects: None) -> None:
    rows = run_json(runner, "list", "person")
    assert [r["id"] for r in rows] == ["person:qhy"]
    assert len(run_json(runner, "list", "todo")) == 40
    assert run_json(runner, "list", "credential") == []
    human = run(runner, "list", "person").output
    assert "person:qhy" in human and "秦浩宇" in human and "[not markup]" in human


def test_list_without_a_type_lists_every_type_that_has_objects(
        runner: CliRunner, objects: None) -> None:
    rows = run_json(runner, "list")
    assert {r["type"] for r in rows} == {"person", "todo", "project"}  # project:daily too
    assert len(rows) == 42
    lines = run(runner, "list").output.splitlines()
    assert [line for line in lines if line.endswith(")") and " (" in line
            and not line.startswith(" ")] == ["person (1)", "todo (40)", "project (1)"]


def test_list_reads_well_at_80_columns_and_piped(
        runner: CliRunner, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped (as under the test runner) at 80 columns: each object's id whole on a line of its
    own, its summary whole and indented below it, no line over the width."""
    monkeypatch.setenv("COLUMNS", "80")
    summary = ("Todo: book the hotel for the Beijing trip (by Wednesday), the one near the "
               "conference centre with the late check-in")
    with Memory.open(home, clock=ManualClock(T0)) as mem, write(mem.conn):
        save_object(mem.conn, ObjectRecord(
            id="todo:book-the-hotel-for-the-beijing-trip", type="todo",
            name="book the hotel for the Beijing trip", summary=summary), T0)
        save_object(mem.conn, ObjectRecord(id="todo:call-the-bank", type="todo",
                                           name="Call the bank", summary="On Monday"), T0)
    lines = run(runner, "list", "todo").output.splitlines()
    assert lines[0] == "todo (2)"
    hotel = lines.index("todo:book-the-hotel-for-the-beijing-trip  active, open")
    assert " ".join(line.strip() for line in lines[hotel + 1:hotel + 3]) == summary
    bank = lines.index("todo:call-the-bank  active, open  Call the bank")  # the summary lacks it
    assert lines[bank + 1] == "    On Monday"
    assert all(len(line) <= 80 for line in lines)


def test_find_reads_well_at_80_columns_and_piped(
        runner: CliRunner, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped at 80 columns, each hit is a line with its rank, id, score and name (an event's
    time), then its snippet and why it matched, indented; no column squeezed, no line over."""
    monkeypatch.setenv("COLUMNS", "80")
    with Memory.open(home, clock=ManualClock(T0)) as mem:
        (event,) = mem.append_events([NewEvent(
            "The dentist appointment moved to Friday because the clinic is closed on Thursday "
            "for a training day, so I will go after work.", "2026-12-01T09:00:00+00:00")])
        with write(mem.conn):
            save_object(mem.conn, ObjectRecord(
                id="schedule:dentist-appointment", type="schedule", name="Dentist appointment",
                summary="Dentist appointment — Friday after work"), T0)
    lines = run(runner, "find", "dentist").output.splitlines()
    assert lines[0] == "find 'dentist': 2 hits"
    assert lines[1].startswith("1. schedule:dentist-appointment  ")
    assert lines[1].endswith("  Dentist appointment")
    at = next(i for i, line in enumerate(lines) if line.startswith(f"2. event {event}  "))
    assert lines[at].endswith("2026-12-01T09:00:00+00:00")
    assert lines[at + 1].startswith("    The dentist appointment moved to Friday")
    assert lines[-1].startswith("    why: ") and "dentist" in lines[-1]
    assert all(len(line) <= 80 for line in lines)


def test_object_pages_links_with_next_offset(runner: CliRunner, objects: None) -> None:
    links, offset = [], 0
    while offset is not None:
        page = run_json(runner, "object", "person:qhy", str(offset))
        assert page["total_links"] == 70
        links += page["links"]
        offset = page["next_offset"]
    assert len(links) == 70
    assert sum(1 for link in links if link["kind"] == "relation") == 40
    assert [link["event_id"] for link in links if link["kind"] == "evidence"] == list(range(1, 31))
    first = run_json(runner, "object", "person:qhy")
    assert first["next_offset"] == 50 and first["object"]["aliases"] == ["浩宇", "qhy"]
    human = run(runner, "object", "person:qhy").output
    assert "秦浩宇" in human and "aliases: 浩宇, qhy" in human and "next_offset: 50" in human
    assert "summary: 用户本人 [not markup]" in human
    assert "-> assigned_to todo:t00 (待办 0)" in human
    merged = run(runner, "object", "person:haoyu").output
    assert "person:haoyu was merged into person:qhy" in merged


# -- core files ---------------------------------------------------------------------------------


def test_core_set_show_history(runner: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "AGENTS.md"
    source.write_text("# 规则\n- 回答用中文。\n", encoding="utf-8")
    assert run(runner, "core", "set", "AGENTS.md", str(source)).stdout.strip() == \
        "AGENTS.md: version 1"
    assert run(runner, "core", "set", "AGENTS.md", str(source)).output.strip() == \
        "AGENTS.md: unchanged"
    assert run(runner, "core", "set", "AGENTS.md", "-", input="v2\n").stdout.strip() == \
        "AGENTS.md: version 2"
    assert run(runner, "core", "show", "AGENTS.md").output == "v2\n"
    shown = run_json(runner, "core", "show", "AGENTS.md")
    assert shown["version"] == 2 and shown["content"] == "v2\n"
    history = run_json(runner, "core", "history", "AGENTS.md")
    assert [h["version"] for h in history] == [1, 2]
    assert "v1" in run(runner, "core", "history", "AGENTS.md").output
    assert run(runner, "core", "show", "SOUL.md").output.strip() == "SOUL.md has never been written"
    assert run_json(runner, "core", "show", "USER.md") is None


def test_core_set_refuses_bad_input_and_keeps_the_file(runner: CliRunner, tmp_path: Path) -> None:
    run(runner, "core", "set", "USER.md", "-", input="浩宇\n")
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"caf\xc3 \xff")
    result = run(runner, "core", "set", "USER.md", str(bad), code=1)
    assert "not valid UTF-8" in result.output and "USER.md left unchanged" in result.output
    result = run(runner, "core", "set", "USER.md", str(tmp_path / "missing.md"), code=2)
    assert "does not exist" in result.output
    run(runner, "core", "set", "README.md", "-", code=2, input="x")
    assert run_json(runner, "core", "show", "USER.md")["content"] == "浩宇\n"
    assert len(run_json(runner, "core", "history", "USER.md")) == 1


# -- demo ---------------------------------------------------------------------------------------


def test_demo_ingests_the_sample_once(runner: CliRunner) -> None:
    sample = (resources.files("memvault") / "data" / "sample_events.jsonl").read_bytes()
    expected = sum(1 for ln in sample.splitlines() if ln.strip())
    run(runner, "demo")
    assert run_json(runner, "status")["events"]["total"] == expected
    run(runner, "demo")
    status = run_json(runner, "status")
    assert status["events"]["total"] == expected  # not ingested twice
    assert status["quick_check"] == "ok"


# -- output safety ------------------------------------------------------------------------------


def test_user_text_is_printed_as_written_not_as_markup(runner: CliRunner) -> None:
    tricky = "see [/] and [bold]x[/bold] :thumbs_up: [/x]"
    run(runner, "ingest", "-", input=jsonl({"text": tricky, "source": "[red]me",
                                            "meta": {"k": "[/x]"}}))
    assert tricky in run(runner, "event", "1").output
    assert '"k": "[/x]"' in run(runner, "event", "1").output
    assert tricky in run(runner, "events", "2000-01-01T00:00:00Z", "2100-01-01T00:00:00Z").output
    assert tricky in run(runner, "timeline").output
    status = run(runner, "status").output
    assert "quick_check: ok" in status
