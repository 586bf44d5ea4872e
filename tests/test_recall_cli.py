"""`memvault find | read | evidence`: tables for people, --json for machines, read-only, and a
one-line error (never a traceback) for a bad query or id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import add_evidence
from memvault import ManualClock, Memory
from memvault.cli import main
from memvault.objects.records import ObjectRecord, save_object
from memvault.recall.index import sync_index
from memvault.store.connection import write
from memvault.timeline.events import NewEvent


def run(runner: CliRunner, *args: str, code: int = 0) -> Result:
    result = runner.invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"memvault {' '.join(args)} raised") from result.exception
    assert result.exit_code == code, (args, result.exit_code, result.output)
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def home_with_memory(home: Path, clock: ManualClock) -> list[int]:
    """A memory with two events (one left unindexed) and one person citing the first."""
    with Memory.open(home, clock=clock) as mem:
        first = mem.append_events([NewEvent("我和张伟去了绿禾公园 [bold]not markup[/bold]",
                                            occurred_at="2026-10-05T09:00:00+08:00",
                                            meta={"msg_id": "m-1"})])[0]
        with write(mem.conn):
            save_object(mem.conn, ObjectRecord(id="person:zhang-wei", type="person", name="张伟",
                                               aliases=["Zhang Wei"], summary="同事"),
                        clock.now())
            add_evidence(mem.conn, "person:zhang-wei", first, 0, 6, clock.now())
            sync_index(mem.conn)
        second = mem.append_events([NewEvent("张伟 called about the roadmap")], index=False)[0]
    return [first, second]


def test_find_json_hits_carry_kind_id_score_snippet_time_and_meta(
    runner: CliRunner, home_with_memory: list[int]
) -> None:
    data = json.loads(run(runner, "find", "张伟", "--json").stdout)
    kinds = [(h["kind"], h["id"]) for h in data["hits"]]
    assert kinds[0] == ("object", "person:zhang-wei")
    assert {("event", i) for i in home_with_memory} <= set(kinds)
    event = next(h for h in data["hits"] if h["id"] == home_with_memory[0])
    assert event["occurred_at"] == "2026-10-05T09:00:00+08:00"
    assert event["meta"] == {"msg_id": "m-1"}
    assert isinstance(event["score"], float) and "张伟" in event["snippet"]
    assert data["unindexed_events"] == 1  # the read-only CLI scanned it


def test_find_table_shows_hits_and_prints_user_text_verbatim(
    runner: CliRunner, home_with_memory: list[int]
) -> None:
    out = run(runner, "find", "绿禾", "公园").stdout
    assert "[bold]not markup[/bold]" in out
    assert "1 events are not indexed yet" in out
    assert json.loads(run(runner, "reindex", "--json").stdout) == {"events": 1, "objects": 0}
    assert "not indexed" not in run(runner, "find", "绿禾", "公园").stdout
    assert "indexed 0 events and 0 objects" in run(runner, "reindex").stdout
    only_people = json.loads(run(runner, "find", "zhang", "--type", "person", "--json").stdout)
    assert [h["id"] for h in only_people["hits"]] == ["person:zhang-wei"]


def test_read_and_evidence_json_and_tables(runner: CliRunner, home_with_memory: list[int]) -> None:
    read = json.loads(run(runner, "read", "person:zhang-wei", "--json").stdout)
    assert read["kind"] == "object" and read["object"]["name"] == "张伟"
    assert read["links"][0]["event_id"] == home_with_memory[0]
    assert "evidence event" in run(runner, "read", "person:zhang-wei").stdout
    ev = json.loads(run(runner, "evidence", "person:zhang-wei", "--json").stdout)
    assert [i["text"] for i in ev["items"]] == ["我和张伟去了"] and ev["next_offset"] is None
    assert "我和张伟去了" in run(runner, "evidence", "person:zhang-wei").stdout
    event = json.loads(run(runner, "evidence", f"event:{home_with_memory[0]}", "--json").stdout)
    assert event["cited_by"][0]["object_id"] == "person:zhang-wei"
    assert "我和张伟去了绿禾公园" in run(runner, "read", str(home_with_memory[0])).stdout
    assert "cited by person:zhang-wei" in run(runner, "evidence", str(home_with_memory[0])).stdout


@pytest.mark.parametrize("args, message", [
    (("find", "x" * 1001), "at most 1,000"),
    (("find", "张伟", "--project", "person:zhang-wei"), "project id"),
    (("read", "person:nobody"), "no object"),
    (("evidence", "not an id"), "not an object id"),
])
def test_bad_input_is_one_clear_line(runner: CliRunner, home_with_memory: list[int],
                                     args: tuple[str, ...], message: str) -> None:
    result = run(runner, *args, code=1)
    assert message in result.output


def test_punctuation_only_is_an_empty_answer(runner: CliRunner,
                                             home_with_memory: list[int]) -> None:
    data = json.loads(run(runner, "find", "。！？", "--json").stdout)
    assert data["hits"] == [] and data["notice"]
