"""Client message keys: the same message ingested twice is stored once.

A key already stored with the same text returns the stored event's id and stores nothing
(skipped); the same key with other text is refused naming the key, and nothing is replaced.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from helpers import count, run_cli
from mcp.client import Client
from memvault import Memory, NewEvent
from memvault.base.errors import IngestError, InputError
from memvault.home import migrations
from memvault.service.mcp_server import build_server
from memvault.timeline.keys import KEY_MAX_CHARS, KeyConflict


def line(text: str, **fields: Any) -> bytes:
    return json.dumps({"text": text, **fields}, ensure_ascii=False).encode() + b"\n"


# -- Memory -----------------------------------------------------------------------------------
def test_a_key_stored_with_the_same_text_returns_its_id_and_stores_nothing(mem: Memory) -> None:
    first = mem.append_event("浩宇对花生过敏", key="msg-1")
    done = mem.append([NewEvent("浩宇对花生过敏", key="msg-1", source="agent")])
    assert done.ids == [first] and done.skipped == [first] and done.new == []
    assert count(mem.conn, "events") == 1 and count(mem.conn, "hot_nodes") == 1
    assert mem.read_event(first)["source"] == "user"  # the stored event keeps its own fields


def test_the_same_key_with_other_text_is_refused_naming_the_key(mem: Memory) -> None:
    first = mem.append_event("tea over coffee", key="msg-7")
    with pytest.raises(KeyConflict, match="key 'msg-7' is already stored as event 1"):
        mem.append_events([NewEvent("a new one"), NewEvent("coffee over tea", key="msg-7")])
    assert count(mem.conn, "events") == 1  # the batch is all or none: nothing replaced or added
    assert mem.read_event(first)["text"] == "tea over coffee"


def test_a_key_repeated_in_one_batch_follows_the_same_rules(mem: Memory) -> None:
    done = mem.append([NewEvent("one", key="k"), NewEvent("two"), NewEvent("one", key="k")])
    assert done.ids == [1, 2, 1] and done.new == [1, 2] and done.skipped == [1]
    with pytest.raises(KeyConflict, match="key 'j' comes twice in one batch"):
        mem.append_events([NewEvent("x", key="j"), NewEvent("y", key="j")])
    assert count(mem.conn, "events") == 2


def test_events_without_a_key_are_never_compared(mem: Memory) -> None:
    assert mem.append_events([NewEvent("same"), NewEvent("same")]) == [1, 2]


@pytest.mark.parametrize(("key", "message"), [
    (42, "key must be a string"),
    (["a"], "key must be a string"),
    ("", "key is empty"),
    ("   ", "key is empty"),
    ("k" * (KEY_MAX_CHARS + 1), "at most 200"),
    ("bad\x00key", "not valid Unicode"),
])
def test_a_bad_key_is_refused_and_nothing_is_stored(mem: Memory, key: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        mem.append_events([NewEvent("kept back"), NewEvent("x", key=key)])
    assert count(mem.conn, "events") == 0


def test_the_schema_refuses_two_events_with_one_key(mem: Memory) -> None:
    mem.append_event("first", key="dup")
    with pytest.raises(sqlite3.IntegrityError):
        mem.conn.execute(
            "INSERT INTO events (occurred_at, occurred_us, ingested_at, source, kind, text,"
            " chars, est_tokens, key) SELECT occurred_at, occurred_us, ingested_at, source,"
            " kind, 'other', 5, 1, key FROM events")


def test_an_existing_home_gains_keys_and_keeps_its_events(home: Path, clock: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    keyed = {"m007_event_keys", "m022_event_keys_per_space"}  # the key column and its index
    before = [m for m in migrations.MIGRATIONS if m.__name__ not in keyed]
    monkeypatch.setattr(migrations, "MIGRATIONS", before)
    with Memory.open(home, clock=clock) as old:
        old.append_event("from before keys")
    monkeypatch.undo()
    with Memory.open(home, clock=clock) as mem:
        assert mem.read_event(1)["key"] is None
        assert mem.append_event("from before keys", key="k") == 2  # a keyless twin: new event
        assert mem.append_event("from before keys", key="k") == 2


# -- JSONL ingest ---------------------------------------------------------------------------------
def test_running_a_fixed_file_again_stores_nothing_twice(mem: Memory) -> None:
    lines = [line(f"turn {i}", key=f"m-{i}") for i in range(3)]
    broken = [*lines, b'{"text": "turn 3", "key": "m-3"\n', line("turn 4", key="m-4")]
    with pytest.raises(IngestError, match="line 4: broken JSON") as caught:
        mem.ingest(broken)
    assert caught.value.stored == [1, 2, 3]
    fixed = [*lines, line("turn 3", key="m-3"), line("turn 4", key="m-4")]
    report = mem.ingest(fixed)
    assert report.new == [4, 5] and report.skipped == [1, 2, 3]
    assert count(mem.conn, "events") == 5


def test_a_key_conflict_in_jsonl_is_a_bad_line(mem: Memory) -> None:
    lines = [line("a", key="m-1"), line("b", key="m-2"), line("B!", key="m-2"), line("c")]
    with pytest.raises(IngestError, match="line 3: key 'm-2' is already stored as event 2 with "
                                          "different text; nothing was replaced. Stopped there;"
                                          " the 2 event"):
        mem.ingest(lines)
    assert count(mem.conn, "events") == 2
    assert mem.read_event(2)["text"] == "b"


def test_a_bad_key_in_jsonl_names_the_line(mem: Memory) -> None:
    with pytest.raises(IngestError, match="line 2: key must be a string"):
        mem.ingest([line("a"), line("b", key=7)])
    assert count(mem.conn, "events") == 1


def test_ingest_says_how_many_were_skipped(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_bytes(line("hello", key="m-1") + line("bye", key="m-2"))
    run_cli(runner, "ingest", str(path))
    again = run_cli(runner, "ingest", str(path))
    assert "stored 0 event(s)" in again.stdout
    assert "skipped 2 already stored" in again.stdout
    data = json.loads(run_cli(runner, "ingest", str(path), "--json").stdout)
    assert data == {"stored": [], "skipped": [1, 2]}


def test_ingest_json_reports_skipped_lines_before_a_conflict(runner: CliRunner,
                                                             tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_bytes(line("hello", key="m-1"))
    run_cli(runner, "ingest", str(path))
    path.write_bytes(line("hello", key="m-1") + line("new") + line("other", key="m-1"))
    data = json.loads(run_cli(runner, "ingest", str(path), "--json", code=1).stdout)
    assert data["stored"] == [2] and data["skipped"] == [1] and data["line"] == 3
    assert "key 'm-1'" in data["error"]


def test_event_shows_its_key(runner: CliRunner, home: Path) -> None:
    with Memory.open(home) as mem:
        mem.append_event("hello", key="client-42")
    assert "key: client-42" in run_cli(runner, "event", "1").stdout
    assert json.loads(run_cli(runner, "event", "1", "--json").stdout)["key"] == "client-42"


# -- MCP ------------------------------------------------------------------------------------------
def test_memory_append_with_a_key_over_mcp(mem: Memory) -> None:
    async def go() -> list[Any]:
        async with Client(build_server(mem)) as client:
            return [await client.call_tool("memory_append", args) for args in (
                {"text": "hello", "key": "m-1"}, {"text": "hello", "key": "m-1"},
                {"text": "changed", "key": "m-1"}, {"text": "x", "key": "k" * 201})]

    first, again, conflict, too_long = anyio.run(go)
    assert first.structured_content == {"event_id": 1}
    assert again.structured_content == {"event_id": 1, "skipped": True}
    assert conflict.is_error and "key 'm-1' is already stored" in conflict.content[0].text
    assert too_long.is_error and "key:" in too_long.content[0].text
    assert count(mem.conn, "events") == 1
