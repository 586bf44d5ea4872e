"""Agent hosts' transcripts read as events (memvault.timeline.transcripts): what is kept and
left out of a Claude Code session and a Codex rollout (fixtures in tests/data/transcripts/, in
the hosts' own formats), the keys, and reading on from an offset a bounded step at a time."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from memvault.base.errors import InputError
from memvault.timeline import transcripts
from memvault.timeline.transcripts import (
    Bounds,
    Progress,
    TranscriptPart,
    read_transcript,
    session_from_path,
    storable,
)

DATA = Path(__file__).parent / "data" / "transcripts"
SESSION = "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b"
THREAD = "019dd8e4-15dd-7143-95e8-219014341717"
CLAUDE = DATA / "claude-code" / "-home-ana-projects-move" / f"{SESSION}.jsonl"
ROLLOUT = (DATA / "codex" / "sessions" / "2026" / "05" / "04"
           / f"rollout-2026-05-04T10-00-00-{THREAD}.jsonl")
# What memvault's own tools answered in the fixtures: it must never come back as a turn.
MEMORY_OUTPUT = ('"hits"', '"snippet"', "person:mia-park", "person:sam", "Sam is in Berlin")


def read(host: str, data: bytes | Path, progress: Progress | None = None,
         bounds: Bounds | None = None, **options: object) -> TranscriptPart:
    raw = data.read_bytes() if isinstance(data, Path) else data
    progress = progress or Progress()
    stream = io.BytesIO(raw)
    stream.seek(progress.offset)
    return read_transcript(host, stream, progress, bounds, **options)  # type: ignore[arg-type]


def line(**entry: object) -> bytes:
    return json.dumps(entry).encode() + b"\n"


def claude_user(uuid: str, content: object, **extra: object) -> bytes:
    entry = {"type": "user", "uuid": uuid, "sessionId": SESSION,
             "timestamp": "2026-05-04T09:00:00Z", "message": {"role": "user", "content": content}}
    return line(**{**entry, **extra})


# -- Claude Code ---------------------------------------------------------------------------------
def test_a_claude_code_session_keeps_the_persons_and_the_assistants_text_only() -> None:
    part = read("claude-code", CLAUDE)
    assert part.finished and part.unreadable == 0 and part.too_long == 0
    assert [(e.source, e.text) for e in part.events] == [
        ("user", "My sister Mia Park teaches piano in Bergen. Can you draft a note to her about "
                 "my move to Oslo in May?"),
        ("assistant", 'Here is a draft for Mia: "Hi Mia, I\'m moving to Oslo in May, closer '
                      'to Bergen than ever."'),
        ("assistant", "I saved the draft next to your earlier letter to Mia."),
        ("user", "Thanks! Also: Kim will take over the payroll run from me."),  # no reminder
        ("user", "周四的会改到下周二。"),
        ("assistant", "好的，我记下了：周四的会改到下周二。"),
    ]
    # left out: the meta caveat, /model and its output, thinking, two tool calls and their two
    # results, the interruption, the sub-agent's prompt, the synthetic reply, the compaction
    # summary (the summary, snapshot and system lines are bookkeeping, not counted)
    assert part.left_out == 12
    first = part.events[0]
    assert first.key == f"claude-code:{SESSION}:a0000000-0000-4000-8000-000000000004"
    assert first.occurred_at == "2026-05-04T09:01:10.120+00:00"  # the turn's own time
    assert first.meta == {"host": "claude-code", "session": SESSION,
                          "message_id": "a0000000-0000-4000-8000-000000000004",
                          "cwd": "/home/ana/projects/move"}


def test_no_tool_call_or_result_of_any_tool_is_captured_memvaults_own_included() -> None:
    for host, path in (("claude-code", CLAUDE), ("codex", ROLLOUT)):
        texts = " ".join(e.text for e in read(host, path).events)
        for trace in (*MEMORY_OUTPUT, "memory_find", "ls ~/letters", "mia-2025.txt",
                      "cat team.md", "*** Begin Patch", "Process exited"):
            assert trace not in texts, (host, trace)


def test_a_line_keeps_its_own_session_id_so_a_copied_history_is_keyed_as_the_original() -> None:
    copied = claude_user("u-1", "from the first session", sessionId="first-session")
    part = read("claude-code", copied, session="second-session")
    assert part.events[0].key == "claude-code:first-session:u-1"
    without = json.loads(copied)
    del without["sessionId"]
    assert read("claude-code", line(**without), session="second-session").events[0].key == \
        "claude-code:second-session:u-1"


def test_host_commands_and_their_output_are_not_turns() -> None:
    data = b"".join([
        claude_user("u-1", "<bash-input>git status</bash-input>"),
        claude_user("u-2", "<bash-stdout>On branch main</bash-stdout><bash-stderr></bash-stderr>"),
        claude_user("u-3", "<local-command-stderr>error</local-command-stderr>"),
        claude_user("u-4", "[Request interrupted by user for tool use]"),
        claude_user("u-5", [{"type": "image", "source": {"type": "base64", "data": "AA=="}}]),
        claude_user("u-6", "   "),
    ])
    part = read("claude-code", data)
    assert part.events == [] and part.left_out == 5 and part.empty == 1


# -- Codex CLI -----------------------------------------------------------------------------------
def test_a_codex_rollout_keeps_what_the_person_typed_and_what_the_agent_said() -> None:
    part = read("codex", ROLLOUT)
    assert [(e.source, e.text) for e in part.events] == [
        ("user", "Sam is relocating to the Oslo office in May; update the team page."),
        ("assistant", "I'll look at team.md first."),
        ("assistant", "Updated team.md: Sam moves to the Oslo office in May."),
        ("user", "我现在更喜欢上午开会。"),
        ("assistant", "好的，以后把会安排在上午。"),
    ]
    texts = " ".join(e.text for e in part.events)
    assert "AGENTS.md" not in texts and "environment_context" not in texts
    assert part.left_out == 6  # 3 tool calls, 3 outputs; reasoning is no message at all
    first = part.events[0]
    assert first.key == f"codex:{THREAD}:8"  # the rollout's line: it is only appended to
    assert first.occurred_at == "2026-05-04T10:00:05.003+00:00"
    assert first.meta == {"host": "codex", "session": THREAD, "line": 8, "cwd": "/home/sam/payroll",
                          "turn": "019dd8e4-2a00-7e01-b2f9-f92834530001"}
    assert part.progress.session == THREAD


def test_a_codex_read_from_an_offset_keeps_the_thread_and_the_line_count() -> None:
    whole = read("codex", ROLLOUT)
    first = read("codex", ROLLOUT, bounds=Bounds(max_events=1))
    rest = read("codex", ROLLOUT, progress=first.progress)
    assert [e.key for e in first.events + rest.events] == [e.key for e in whole.events]
    assert [e.meta for e in first.events + rest.events] == [e.meta for e in whole.events]


def test_context_an_older_codex_marked_as_a_user_message_of_another_kind_is_left_out() -> None:
    meta = line(timestamp="2026-05-04T10:00:00Z", type="session_meta", payload={"id": "t-1"})
    injected = line(timestamp="2026-05-04T10:00:01Z", type="event_msg", payload={
        "type": "user_message", "message": "<user_instructions>be brief</user_instructions>",
        "kind": "user_instructions"})
    said = line(timestamp="2026-05-04T10:00:02Z", type="event_msg", payload={
        "type": "user_message", "message": "ship it", "kind": "plain"})
    part = read("codex", meta + injected + said)
    assert [e.text for e in part.events] == ["ship it"] and part.left_out == 1


def test_the_session_comes_from_the_file_name_when_the_file_does_not_say() -> None:
    assert session_from_path(ROLLOUT) == THREAD
    assert session_from_path(CLAUDE) == SESSION
    said = line(timestamp="2026-05-04T10:00:02Z", type="event_msg",
                payload={"type": "agent_message", "message": "done"})
    assert read("codex", said, session="t-9").events[0].key == "codex:t-9:1"


# -- reading on ----------------------------------------------------------------------------------
@pytest.mark.parametrize("host,path", [("claude-code", CLAUDE), ("codex", ROLLOUT)])
def test_reads_bounded_by_events_or_bytes_add_up_to_one_whole_read(host: str, path: Path) -> None:
    whole = read(host, path)
    for bounds in (Bounds(max_events=1), Bounds(max_bytes=1), Bounds(max_bytes=2_000)):
        progress, keys, reads = Progress(), [], 0
        while True:
            part = read(host, path, progress, bounds)
            keys += [e.key for e in part.events]
            progress, reads = part.progress, reads + 1
            if part.finished:
                break
        assert keys == [e.key for e in whole.events]
        assert progress.offset == path.stat().st_size and reads > 1


def test_a_read_stops_at_its_deadline_after_at_least_one_line() -> None:
    ticks = iter(range(100))
    bounds = Bounds(deadline=3, clock=lambda: next(ticks))
    part = read("claude-code", CLAUDE, bounds=bounds)
    assert not part.finished and part.progress.line == 4  # the clock read 0, 1, 2, 3
    late = read("claude-code", CLAUDE, bounds=Bounds(deadline=0, clock=lambda: 1))
    assert late.progress.line == 1 and not late.finished  # a backlog always moves


def test_a_line_the_host_is_still_writing_is_left_for_the_next_read() -> None:
    done = claude_user("u-1", "first turn")
    half = claude_user("u-2", "second turn")[:40]
    part = read("claude-code", done + half)
    assert [e.text for e in part.events] == ["first turn"] and part.finished
    assert part.progress.offset == len(done) and part.unreadable == 0
    later = read("claude-code", done + claude_user("u-2", "second turn"), part.progress)
    assert [e.text for e in later.events] == ["second turn"]
    # A whole JSON line without its newline yet is taken; its newline, when it comes, is blank.
    whole = claude_user("u-3", "third turn").rstrip(b"\n")
    assert [e.text for e in read("claude-code", whole).events] == ["third turn"]


def test_a_finished_file_s_torn_last_line_is_counted_not_stored() -> None:
    data = claude_user("u-1", "first turn") + claude_user("u-2", "second")[:30]
    part = read("claude-code", data, final=True)
    assert [e.text for e in part.events] == ["first turn"] and part.unreadable == 1
    assert part.progress.offset == len(data)


def test_a_broken_line_is_skipped_by_a_hook_and_stops_an_import_naming_it() -> None:
    data = claude_user("u-1", "one") + b"{not json\n" + claude_user("u-2", "two")
    part = read("claude-code", data)
    assert [e.text for e in part.events] == ["one", "two"] and part.unreadable == 1
    with pytest.raises(InputError, match="line 2: not a JSON object"):
        read("claude-code", data, final=True, strict=True)


def test_an_overlong_line_is_skipped_without_being_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "MAX_LINE_BYTES", 200)
    long = claude_user("u-1", "x" * 1_000)
    data = long + claude_user("u-2", "short")
    part = read("claude-code", data)
    assert [e.text for e in part.events] == ["short"] and part.too_long == 1
    # still being written (no newline yet): skipped as far as it goes, counted when it ends
    begun = read("claude-code", long[:-1])
    assert begun.progress.skipping and begun.progress.offset == len(long) - 1
    assert begun.too_long == 0 and begun.progress.line == 0 and begun.finished
    ended = read("claude-code", data, begun.progress)
    assert [e.text for e in ended.events] == ["short"] and ended.too_long == 1
    assert ended.progress.line == 2 and not ended.progress.skipping


def test_an_overlong_line_is_skipped_a_bounded_step_a_read(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.setattr(transcripts, "MAX_LINE_BYTES", 200)
    monkeypatch.setattr(transcripts, "_SKIP_CHUNK", 100)
    meta = line(timestamp="2026-05-04T10:00:00Z", type="session_meta", payload={"id": "t-1"})
    said = line(timestamp="2026-05-04T10:00:02Z", type="event_msg",
                payload={"type": "agent_message", "message": "after the long line"})
    data = meta + b"y" * 5_000 + b"\n" + said
    progress, keys, moves = Progress(), [], []
    while True:
        part = read("codex", data, progress, Bounds(max_bytes=250))
        moves.append(part.progress.offset - progress.offset)
        keys += [e.key for e in part.events]
        progress = part.progress
        if part.finished:
            break
    assert keys == ["codex:t-1:3"]  # the line after the long one keeps its number
    assert max(moves) <= 250 + 201 and len(moves) > 10  # a read takes its bytes, one line more
    # with no bound it is skipped at once, as an import reads it
    assert [e.key for e in read("codex", data).events] == keys


def test_a_message_of_more_events_than_a_read_may_take_is_taken_part_by_part() -> None:
    long = claude_user("u-1", "y" * 70_000)  # three parts
    data = long + claude_user("u-2", "next")
    first = read("claude-code", data, bounds=Bounds(max_events=2))
    assert [e.key for e in first.events] == [f"claude-code:{SESSION}:u-1",
                                             f"claude-code:{SESSION}:u-1#2"]
    assert first.progress.offset == 0 and first.progress.part == 2 and not first.finished
    rest = read("claude-code", data, first.progress, Bounds(max_events=2))
    assert [e.key for e in rest.events] == [f"claude-code:{SESSION}:u-1#3",
                                            f"claude-code:{SESSION}:u-2"]
    assert rest.progress.offset == len(data) and rest.progress.part == 0
    one = read("claude-code", data, bounds=Bounds(max_events=0))  # a read always moves
    assert len(one.events) == 1 and one.progress.part == 1


def test_a_late_read_still_goes_on_to_its_first_message() -> None:
    late = Bounds(deadline=0, clock=lambda: 1, sure_steps=1_000)
    part = read("claude-code", CLAUDE, bounds=late)
    assert len(part.events) == 1 and not part.finished
    assert part.events[0].text.startswith("My sister Mia Park")
    bounded = read("claude-code", CLAUDE, bounds=Bounds(deadline=0, clock=lambda: 1,
                                                        sure_steps=2))
    assert bounded.events == [] and bounded.progress.line == 2  # ... or its sure steps


def test_the_ide_s_context_in_a_message_is_left_out_and_the_persons_words_kept() -> None:
    opened = ("<ide_opened_file>The user opened the file /home/ana/plan.md in the IDE. This may "
              "or may not be related to the current task.</ide_opened_file>")
    selected = ("<ide_selection>The user selected lines 3 to 9 from /home/ana/plan.md"
                "</ide_selection>")
    data = b"".join([
        claude_user("u-1", [{"type": "text", "text": opened},
                            {"type": "text", "text": "Is this plan sound?"}]),
        claude_user("u-2", f"{selected}\nFix line 4, please."),
        claude_user("u-3", "<ide_diagnostics>[{\"severity\": \"error\"}]</ide_diagnostics>"),
    ])
    part = read("claude-code", data)
    assert [e.text for e in part.events] == ["Is this plan sound?", "Fix line 4, please."]
    assert part.left_out == 1 and part.empty == 0  # only what the IDE added: not a turn


def test_text_is_kept_as_written_only_made_storable() -> None:
    raw = b'{"type": "user", "uuid": "u-1", "sessionId": "s", "message": {"role": "user", ' \
          b'"content": "a\\u0000b \\ud800 c\\n  indented"}}\n'
    assert read("claude-code", raw).events[0].text == "a\ufffdb \ufffd c\n  indented"
    assert storable("plain") == "plain"


def test_a_message_longer_than_an_event_becomes_keyed_parts() -> None:
    part = read("claude-code", claude_user("u-1", "y" * 70_000))
    assert [e.key for e in part.events] == [f"claude-code:{SESSION}:u-1",
                                            f"claude-code:{SESSION}:u-1#2",
                                            f"claude-code:{SESSION}:u-1#3"]
    assert "".join(e.text for e in part.events) == "y" * 70_000
    assert part.events[2].meta["part"] == [3, 3] and part.messages == 1


def test_a_very_long_session_id_is_hashed_into_the_key_limit() -> None:
    key = read("claude-code", claude_user("u-1", "hi", sessionId="s" * 300)).events[0].key
    assert key.startswith("claude-code:sha256:") and len(key) <= 200


def test_a_time_that_is_not_one_is_left_to_the_store() -> None:
    data = claude_user("u-1", "hi", timestamp="yesterday-ish")
    assert read("claude-code", data).events[0].occurred_at is None


def test_an_unknown_host_is_refused() -> None:
    with pytest.raises(InputError, match="unknown host"):
        read("cursor", b"")
