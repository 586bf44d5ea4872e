"""`memvault import FORMAT FILE`: a chat export's history stored once, off the hot timeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import count, run_cli, write_config
from memvault import ManualClock, Memory

FIXTURES = Path(__file__).parent / "fixtures"
CHATGPT = FIXTURES / "chatgpt_conversations.json"
CLAUDE = FIXTURES / "claude_conversations.json"


def imported(runner: CliRunner, fmt: str, path: Path, *extra: str, code: int = 0) -> dict:
    result = run_cli(runner, "import", fmt, str(path), "--json", *extra, code=code)
    return json.loads(result.stdout)


def stored_events(home: Path) -> list[dict]:
    with Memory.open(home) as mem:
        rows = mem.conn.execute("SELECT * FROM events ORDER BY id").fetchall()
        return [{**dict(r), "meta": json.loads(r["meta"] or "null")} for r in rows]


def test_chatgpt_export_keeps_the_current_branch_and_counts_what_it_left_out(
    home: Path, runner: CliRunner,
) -> None:
    report = imported(runner, "chatgpt", CHATGPT)
    assert report["events"] == 4 and report["conversations"] == 2
    assert report["dropped_branch"] == 1  # the first, regenerated answer
    assert report["skipped_roles"] == 2  # a hidden system message and a browser tool result
    assert report["skipped_empty"] == 1  # the image-only message
    events = stored_events(home)
    texts = [e["text"] for e in events]
    assert texts[0] == "记住：浩宇对花生过敏，周五的晚饭不要有花生。"
    assert "The first answer, later regenerated." not in texts
    assert texts[1] == "好的，我记住了：浩宇对花生过敏。"
    assert [e["source"] for e in events] == ["user", "assistant", "user", "assistant"]
    first = events[0]
    assert first["key"] == "chatgpt:c1-regenerated:m2"
    assert first["meta"]["conversation"] == {"id": "c1-regenerated",
                                             "title": "花生过敏 and the dinner plan"}
    assert first["occurred_at"].startswith("2023-11-14T22:15:00")
    # A message without its own time takes its conversation's and says so.
    no_time = next(e for e in events if e["key"] == "chatgpt:c2-no-times:q1")
    assert no_time["meta"]["time_from"] == "conversation"
    assert no_time["occurred_at"].startswith("2023-11-16T02:00:00")
    assert first["meta"]["time_from"] == "message"


def test_tool_calls_and_thoughts_are_scaffolding_not_turns(
    home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    def message(node_id: str, parent: str | None, **fields: object) -> dict:
        body = {"id": node_id, "author": {"role": "assistant"}, "create_time": 1700000000.0,
                "content": {"content_type": "text", "parts": ["print(1)"]}, **fields}
        return {"id": node_id, "parent": parent, "children": [], "message": body}

    mapping = {
        "a": message("a", None, recipient="python",
                     content={"content_type": "code", "text": "print(1)"}),
        "b": message("b", "a", content={"content_type": "thoughts", "thoughts": []}),
        "c": message("c", "b", content={"content_type": "text", "parts": ["答案是 1。"]}),
    }
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"id": "t", "title": "tools", "mapping": mapping,
                                 "current_node": "c"}]), "utf-8")
    report = imported(runner, "chatgpt", path)
    assert report["events"] == 1 and report["skipped_roles"] == 2
    assert [e["text"] for e in stored_events(home)] == ["答案是 1。"]


def test_imported_history_skips_the_hot_timeline_and_waits_for_organize(
    home: Path, runner: CliRunner,
) -> None:
    imported(runner, "chatgpt", CHATGPT)
    with Memory.open(home) as mem:
        assert count(mem.conn, "hot_nodes") == 0
        assert count(mem.conn, "archive_queue", "state = 'pending'") == 4
        assert mem.timeline_view()["nodes"] == []
        assert mem.find("花生")["hits"]  # indexed for recall at once
    run_cli(runner, "check")
    run_cli(runner, "organize", "--no-compact")
    with Memory.open(home) as mem:
        assert count(mem.conn, "archive_queue", "state IN ('pending', 'continue')") == 0
    run_cli(runner, "check")


def test_a_second_import_of_the_same_or_a_newer_export_stores_only_what_is_new(
    home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    imported(runner, "chatgpt", CHATGPT)
    again = imported(runner, "chatgpt", CHATGPT)
    assert again["events"] == 0 and again["already_stored"] == 4
    export = json.loads(CHATGPT.read_text("utf-8"))
    mapping = export[1]["mapping"]
    mapping["p3"]["children"] = ["p4"]
    mapping["p4"] = {"id": "p4", "parent": "p3", "children": [], "message": {
        "id": "q4", "author": {"role": "user"}, "create_time": 1700100100.0,
        "content": {"content_type": "text", "parts": ["谢谢！"]}}}
    export[1]["current_node"] = "p4"
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(export, ensure_ascii=False), "utf-8")
    report = imported(runner, "chatgpt", newer)
    assert report["events"] == 1 and report["already_stored"] == 4
    assert [e["text"] for e in stored_events(home)][-1] == "谢谢！"


def test_claude_export_reads_text_or_content_and_skips_attachment_only_messages(
    home: Path, runner: CliRunner,
) -> None:
    report = imported(runner, "claude", CLAUDE)
    assert report["events"] == 3 and report["skipped_empty"] == 1
    events = stored_events(home)
    assert [e["text"] for e in events] == [
        "帮我写项目周报：本周完成了数据迁移。", "本周进展：数据迁移已完成。",
        "And one in English, please."]
    assert [e["source"] for e in events] == ["user", "assistant", "user"]
    assert events[0]["key"] == "claude:k1:k1-m1"
    assert events[0]["meta"]["conversation"]["title"] == "项目周报"
    assert events[2]["meta"]["time_from"] == "conversation"
    assert events[2]["occurred_at"].startswith("2024-03-01T09:00:00")


def test_a_message_with_no_time_anywhere_is_stored_at_import_time_and_says_so(
    home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"uuid": "k9", "name": "", "chat_messages": [
        {"uuid": "m", "sender": "human", "text": "no time at all"}]}]), "utf-8")
    report = imported(runner, "claude", path)
    assert report["no_time"] == 1
    assert stored_events(home)[0]["meta"]["time_from"] == "import"


def test_a_broken_export_stops_naming_the_conversation_and_a_rerun_continues(
    home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    text = CHATGPT.read_text("utf-8")
    broken = tmp_path / "conversations.json"
    cut = text.index('"id": "c2-no-times"')
    broken.write_text(text[:cut] + '"id": "c2-no-times", "mapping": {"p1": [', "utf-8")
    result = run_cli(runner, "import", "chatgpt", str(broken), code=1)
    assert str(broken) in result.output and "conversation 2" in result.output
    assert "2 new event(s) of the 1 conversation(s) before it are stored" in result.output
    assert len(stored_events(home)) == 2
    report = imported(runner, "chatgpt", CHATGPT)  # the whole file, fixed
    assert report["events"] == 2 and report["already_stored"] == 2
    run_cli(runner, "check")


def test_a_conversation_of_the_wrong_shape_is_refused_with_its_id(
    home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"uuid": "k1", "chat_messages": "not a list"}]), "utf-8")
    result = run_cli(runner, "import", "claude", str(path), code=1)
    assert "conversation 1 (k1)" in result.output and "nothing new was stored" in result.output
    not_json = tmp_path / "x.json"
    not_json.write_text("{ this is not json", "utf-8")
    assert "broken JSON" in run_cli(runner, "import", "chatgpt", str(not_json), code=1).output


def test_a_message_longer_than_an_event_is_split_into_keyed_parts(
    home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    path = tmp_path / "long.json"
    path.write_text(json.dumps([{"uuid": "k1", "name": "long", "created_at":
                                 "2024-01-01T00:00:00Z", "chat_messages": [
        {"uuid": "m", "sender": "assistant", "text": "长" * 40_000}]}]), "utf-8")
    assert imported(runner, "claude", path)["events"] == 2
    events = stored_events(home)
    assert [e["key"] for e in events] == ["claude:k1:m", "claude:k1:m#2"]
    assert [e["meta"]["part"] for e in events] == [[1, 2], [2, 2]]
    assert sum(e["chars"] for e in events) == 40_000


def test_jsonl_import_keys_lines_so_a_rerun_stores_nothing(
    home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"text": "第一行", "occurred_at": "2025-01-01T10:00:00+08:00"}\n'
                    '{"text": "second", "key": "mine-2"}\n', "utf-8")
    assert imported(runner, "jsonl", path)["events"] == 2
    assert imported(runner, "jsonl", path)["already_stored"] == 2
    keys = [e["key"] for e in stored_events(home)]
    assert keys[0].startswith("jsonl:") and keys[1] == "mine-2"


def test_with_a_paid_provider_the_import_estimates_the_work_and_asks_first(
    home: Path, runner: CliRunner,
) -> None:
    write_config(home, '[model]\nprovider = "openai"\nname = "gpt-test"\n')
    refused = run_cli(runner, "import", "chatgpt", str(CHATGPT), input="n\n", code=1)
    assert "4 event(s) of 2 conversation(s)" in refused.output and "tokens" in refused.output
    assert "nothing was stored" in refused.output
    with Memory.open(home) as mem:
        assert count(mem.conn, "events") == 0
    done = run_cli(runner, "import", "chatgpt", str(CHATGPT), "--yes")
    assert "imported 4 event(s) from 2 conversation(s)" in done.output
    assert "memvault organize" in done.output  # what happens next


def test_the_hourly_check_organizes_imported_history_without_compacting(
    home: Path, clock: ManualClock,
) -> None:
    from memvault.home.chat_import import import_export
    from memvault.jobs.scheduler import Scheduler

    with Memory.open(home, clock=clock) as mem:
        with CHATGPT.open("rb") as stream:
            assert import_export(mem, "chatgpt", stream, str(CHATGPT)).events == 4
        scheduler = Scheduler(mem.conn, mem.config, mem.tz)
        jobs = scheduler.check(clock.now())  # the first hourly check is due at once
        assert [(j.mode, j.origin) for j in jobs if j.mode != "deep"] == [
            ("organize", "hourly")]
        assert count(mem.conn, "jobs", "mode = 'compact'") == 0


def test_a_jsonl_import_refuses_a_line_over_256_kib_by_number(tmp_path) -> None:
    """`import jsonl` reads lines as `ingest` does: each with a bound, a too-long line named
    by its number without being read whole (the stream refuses an unbounded read)."""
    from memvault.timeline.chat_exports import ExportError, read_conversations

    class EndlessLine:
        def __init__(self) -> None:
            self.first = True

        def readline(self, limit: int = -1) -> bytes:
            assert 0 < limit <= 512 * 1024, "a line must be read with a bound"
            if self.first:
                self.first = False
                return b'{"text": "ok"}\n'
            return b"x" * limit

    with pytest.raises(ExportError, match="line 2: longer than"):
        list(read_conversations("jsonl", EndlessLine()))  # type: ignore[arg-type]


# -- hostile files --------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["chatgpt", "claude"])
def test_deep_nesting_is_refused_early_in_constant_memory(
    home: Path, runner: CliRunner, tmp_path: Path, fmt: str,
) -> None:
    """80 KB of nested brackets took 3.9 GB (ijson holds each level's path): refused past 64
    levels before ijson reads them, inside the first conversation."""
    import io
    import tracemalloc

    from memvault.timeline.chat_exports import ExportError, read_conversations

    depth = 40_000
    nested = b"[" + b'{"id": "c1", "mapping": ' + b"[" * depth + b"]" * depth + b"}]"
    tracemalloc.start()
    try:
        with pytest.raises(ExportError, match="nested more than 64 levels"):
            list(read_conversations(fmt, io.BytesIO(nested)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"{peak:,} bytes"  # about two read blocks, whatever the depth
    path = tmp_path / "deep.json"
    path.write_bytes(nested)
    result = run_cli(runner, "import", fmt, str(path), code=1)
    assert "nested more than 64 levels" in result.output and "Traceback" not in result.output
    assert stored_events(home) == []


def _long_export(fmt: str, messages: int, unkept: str) -> bytes:
    """One conversation of `messages` short messages, each with `unkept` beside it (metadata,
    an attachment's extracted text) that no event keeps."""
    if fmt == "claude":
        return json.dumps([{"uuid": "long", "name": "long", "chat_messages": [
            {"uuid": f"m{i}", "sender": "human", "text": f"message {i}",
             "attachments": [{"extracted_content": unkept}]} for i in range(messages)]}]).encode()
    mapping: dict[str, dict] = {"root": {"parent": None, "children": ["n0"], "message": None}}
    for i in range(messages):
        mapping[f"n{i}"] = {"parent": f"n{i - 1}" if i else "root", "children": [f"n{i + 1}"],
                            "message": {"id": f"m{i}", "author": {"role": "user"},
                                        "create_time": 1700000000 + i,
                                        "content": {"content_type": "text",
                                                    "parts": [f"message {i}"]},
                                        "metadata": {"unkept": unkept}}}
    return json.dumps([{"id": "long", "title": "long", "mapping": mapping,
                        "current_node": f"n{messages - 1}"}]).encode()


@pytest.mark.parametrize("fmt", ["chatgpt", "claude"])
def test_a_long_conversation_is_read_a_message_at_a_time_never_held_whole(fmt: str) -> None:
    """A conversation's mapping (or message list) is walked node by node, each reduced to
    what its events need: 16 MB of what no event keeps never sits in memory at once (read
    whole, as before, the parse peaked at 22 MB; now about 2)."""
    import io
    import tracemalloc

    from memvault.timeline.chat_exports import read_conversations

    data = _long_export(fmt, 2_000, "x" * 8_000)
    tracemalloc.start()
    try:
        (parsed,) = read_conversations(fmt, io.BytesIO(data))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [e.text for e in parsed.events[:2]] == ["message 0", "message 1"]
    assert len(parsed.events) == 2_000 and parsed.events[-1].key == f"{fmt}:long:m1999"
    assert peak < len(data) / 4, f"{peak:,} bytes held reading {len(data):,}"


def test_nesting_within_the_limit_and_brackets_inside_strings_are_fine(tmp_path: Path) -> None:
    import io

    from memvault.timeline.chat_exports import read_conversations

    conversation = json.loads(CLAUDE.read_text("utf-8"))[0]
    conversation["extra"] = json.loads("[" * 50 + "]" * 50)
    conversation["chat_messages"][0]["text"] = "[[[{{{" * 100 + ' \\" ' + "]]]" * 100
    data = json.dumps([conversation]).encode()
    (parsed,) = read_conversations("claude", io.BytesIO(data))
    assert parsed.events[0].text.startswith("[[[{{{")


@pytest.mark.parametrize("content", ['{"not": "a list"}', '"conversations"', "42"])
def test_a_file_that_is_not_an_export_is_refused_not_imported_as_nothing(
    home: Path, runner: CliRunner, tmp_path: Path, content: str,
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(content, "utf-8")
    for fmt in ("chatgpt", "claude"):
        result = run_cli(runner, "import", fmt, str(path), code=1)
        assert f"not a {fmt} export" in result.output and "JSON array" in result.output
        assert "conversation 1" not in result.output
    assert stored_events(home) == []
    empty = tmp_path / "empty.json"
    empty.write_text("[]", "utf-8")  # an export with no conversation is one
    assert imported(runner, "chatgpt", empty)["events"] == 0


def test_a_fifo_or_a_symlink_is_refused_without_waiting(
    home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    import os

    fifo = tmp_path / "conversations.json"
    os.mkfifo(fifo)  # nobody writes to it: opening it to read would wait forever
    result = run_cli(runner, "import", "chatgpt", str(fifo), code=1)
    assert "FIFO" in result.output and "not a regular file" in result.output
    link = tmp_path / "link.json"
    link.symlink_to(CHATGPT)
    result = run_cli(runner, "import", "chatgpt", str(link), code=1)
    assert "symbolic link" in result.output
    assert stored_events(home) == []
