"""JSONL ingestion: a bad line stops the import with its number; every line before it stays
stored and the message says so; the import can be resumed after the line is fixed."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from helpers import count
from memvault import Memory
from memvault.base.errors import IngestError
from memvault.timeline.ingest import CHUNK, MAX_LINE_BYTES, bounded_lines, parse_line


def line(text: str = "hello", **fields: object) -> bytes:
    return json.dumps({"text": text, **fields}, ensure_ascii=False).encode("utf-8")


def good_lines(n: int, start: int = 0) -> list[bytes]:
    return [
        line(f"第 {i} 条 message {i}", occurred_at=f"2026-10-05T09:{i % 60:02d}:00+08:00",
             source="user", kind="message", meta={"msg_id": f"m-{i}"})
        for i in range(start, start + n)
    ]


def test_good_lines_are_stored_in_order(mem: Memory) -> None:
    ids = mem.ingest_jsonl(good_lines(5))
    assert ids == [1, 2, 3, 4, 5]
    assert mem.read_event(3)["text"] == "第 2 条 message 2"
    assert mem.read_event(3)["meta"] == {"msg_id": "m-2"}


def test_str_lines_crlf_and_blank_lines_are_accepted(mem: Memory) -> None:
    lines = [line("a") + b"\r\n", b"\n", b"   \r\n", line("b").decode() + "\n", ""]
    assert mem.ingest_jsonl(lines) == [1, 2]


def test_only_text_is_required(mem: Memory) -> None:
    (event_id,) = mem.ingest_jsonl([b'{"text": "just text"}'])
    page = mem.read_event(event_id)
    assert (page["source"], page["kind"], page["meta"]) == ("user", "message", None)
    assert page["occurred_at"] == "2026-10-13T12:00:00+08:00"  # the clock's time


BAD_LINES = [
    (b'{"text": "broken", ', "broken JSON"),
    (b"not json at all", "broken JSON"),
    (b'{"text": "bad utf-8 \xff\xfe here"}', "not valid UTF-8 (byte 20)"),
    (b'{"text": "caf\xc3"}', "not valid UTF-8"),
    (b'{"text": "lone \\ud83d surrogate"}', "lone surrogate"),
    (b'{"text": "ok", "meta": "\\udc00"}', "meta must be a JSON object"),
    (b'{"text": "ok", "meta": {"k": "\\ud83d"}}', "meta holds a lone surrogate"),
    (b'{"text": "ok", "meta": [1, 2]}', "meta must be a JSON object, got list"),
    (b'{"text": "ok", "meta": "note"}', "meta must be a JSON object, got str"),
    (b'{"text": "ok", "meta": 3}', "meta must be a JSON object, got int"),
    (b'{"text": "ok", "speaker": "qhy"}', "unknown field(s) speaker"),
    (b'{"text": "ok", "id": 1, "tags": []}', "unknown field(s) id, tags"),
    (b'{"text": ""}', "text is empty"),
    (b'{"text": "   "}', "text is empty"),
    (b'{"text": null}', "text must be a string"),
    (b'{"text": 12}', "text must be a string"),
    (b'{"meta": {}}', "missing field 'text'"),
    (b'["text", "in a list"]', "expected a JSON object, got list"),
    (b'"just a string"', "expected a JSON object, got str"),
    (b'{"text": "ok", "occurred_at": "last tuesday"}', "occurred_at: not an ISO 8601 time"),
    (b'{"text": "ok", "occurred_at": 1760000000}', "occurred_at must be an ISO 8601 string"),
    (b'{"text": "ok", "occurred_at": "2026-02-30T10:00:00+08:00"}', "occurred_at"),
    (b'{"text": "ok", "source": ""}', "source must be a non-empty string"),
    (b'{"text": "nul \\u0000 char"}', "NUL character"),
    (json.dumps({"text": "x" * 32_001}).encode(), "32,001 chars"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_a_bad_line_names_its_number_and_keeps_the_lines_before(
    mem: Memory, bad: bytes, message: str
) -> None:
    lines = good_lines(3) + [b""] + [bad] + good_lines(2, start=3)
    with pytest.raises(IngestError) as info:
        mem.ingest_jsonl(lines)
    error = info.value
    assert error.line == 5
    assert str(error).startswith("line 5: ")
    assert message in str(error)
    assert "the 3 event(s) before it are stored" in str(error)
    assert error.stored == [1, 2, 3]
    assert count(mem.conn, "events") == 3
    assert [mem.read_event(i)["text"] for i in error.stored] == [
        f"第 {i} 条 message {i}" for i in range(3)
    ]


def test_a_bad_first_line_says_nothing_was_stored(mem: Memory) -> None:
    with pytest.raises(IngestError) as info:
        mem.ingest_jsonl([b"{oops"] + good_lines(3))
    assert info.value.line == 1
    assert info.value.stored == []
    assert "nothing was stored" in str(info.value)
    assert count(mem.conn, "events") == 0


@pytest.mark.parametrize("bad_at", [1, 999, 1_000, 1_001, 1_700, 2_000, 2_001, 2_500])
@pytest.mark.parametrize("kind", ["parse", "validate"])
def test_a_bad_line_anywhere_across_chunks_loses_nothing(
    mem: Memory, bad_at: int, kind: str
) -> None:
    lines = good_lines(2_500)
    lines[bad_at - 1] = b"{broken" if kind == "parse" else b'{"text": ""}'
    with pytest.raises(IngestError) as info:
        mem.ingest_jsonl(lines)
    assert info.value.line == bad_at
    assert f"line {bad_at}:" in str(info.value)
    assert info.value.stored == list(range(1, bad_at))
    assert count(mem.conn, "events") == bad_at - 1
    texts = [r[0] for r in mem.conn.execute("SELECT text FROM events ORDER BY id")]
    assert texts == [f"第 {i} 条 message {i}" for i in range(bad_at - 1)]


def test_an_import_resumes_after_the_bad_line_is_fixed(mem: Memory) -> None:
    lines = good_lines(1_500)
    lines[1_199] = b'{"text": "fine", "oops": 1}'
    with pytest.raises(IngestError) as info:
        mem.ingest_jsonl(lines)
    done = len(info.value.stored)
    lines[1_199] = line("fixed")
    ids = mem.ingest_jsonl(lines[done:])
    assert len(ids) == 1_500 - done
    assert count(mem.conn, "events") == 1_500
    assert mem.read_event(1_200)["text"] == "fixed"


def test_chunk_size_is_1000() -> None:
    assert CHUNK == 1_000


def test_parse_line_of_a_blank_line_is_none() -> None:
    assert parse_line(b"  \r\n", 3) is None
    assert parse_line("", 4) is None


def test_a_byte_order_mark_on_the_first_line_is_ignored(mem: Memory) -> None:
    ids = mem.ingest_jsonl([b"\xef\xbb\xbf" + line("first"), line("second")])
    assert [mem.read_event(i)["text"] for i in ids] == ["first", "second"]
    with pytest.raises(IngestError) as info:  # anywhere else it is still broken JSON
        mem.ingest_jsonl([line("ok"), b"\xef\xbb\xbf" + line("late")])
    assert info.value.line == 2


class _EndlessLine(io.RawIOBase):
    """A stream of `size` bytes of one JSON string with no newline, counting what is read."""

    def __init__(self, size: int, head: bytes = b"") -> None:
        self.head, self.left, self.read_total = head, size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n], self.head = self.head[:n], self.head[n:]
        else:
            n = min(len(buffer), self.left)
            buffer[:n] = b"x" * n
            self.left -= n
        self.read_total += n
        return n


def test_a_line_over_256_kib_is_refused_by_number_without_reading_it_whole(
    mem: Memory,
) -> None:
    head = b"\n".join(good_lines(2)) + b'\n{"text": "'
    raw = _EndlessLine(16 * 1024 * 1024, head)
    with pytest.raises(IngestError) as caught:
        mem.ingest_jsonl(io.BufferedReader(raw))
    assert "line 3" in str(caught.value) and "256 KiB" in str(caught.value)
    assert caught.value.line == 3 and len(caught.value.stored) == 2
    assert raw.read_total < MAX_LINE_BYTES + 64 * 1024  # bounded: never the 16 MiB line
    assert count(mem.conn, "events") == 2


def test_a_line_of_exactly_256_kib_passes_the_size_check_and_one_byte_more_does_not(
    mem: Memory,
) -> None:
    fits = line("x" * (MAX_LINE_BYTES - len(line(""))))
    assert len(fits) == MAX_LINE_BYTES
    # The line that fits reaches the event's own rules (its text is too long for one event).
    for end in (b"\n", b"\r\n", b""):
        with pytest.raises(IngestError, match="line 1: text is"):
            mem.ingest_jsonl(io.BytesIO(fits + end))
    over = line("x" * (MAX_LINE_BYTES + 1 - len(line(""))))
    for end in (b"\n", b"\r\n", b""):
        with pytest.raises(IngestError, match="line 1: longer than 256 KiB"):
            mem.ingest_jsonl(io.BytesIO(over + end))
    with pytest.raises(IngestError, match="line 1: longer than 256 KiB"):
        mem.ingest_jsonl([line("é" * (MAX_LINE_BYTES // 2))])  # counted in UTF-8 bytes
    assert count(mem.conn, "events") == 0


def test_lines_after_a_too_long_line_are_read_past_in_bounded_pieces() -> None:
    stream = io.BytesIO(b"a\n" + b"x" * (MAX_LINE_BYTES * 3) + b"\nb\n")
    assert list(bounded_lines(stream)) == [b"a\n", None, b"b\n"]
