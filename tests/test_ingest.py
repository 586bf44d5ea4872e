"""JSONL ingestion: a bad line stops the import with its number; every line before it stays
stored and the message says so; the import can be resumed after the line is fixed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import count
from memvault import Memory
from memvault.base.errors import IngestError
from memvault.timeline.ingest import CHUNK, parse_line


def line(text: str = "hello", **fields: object) -> bytes:
    return json.dumps({"text": text, **fields}, ensure_ascii=False).encode("utf-8")


def good_lines(n: int, start: int = 0) -> list[bytes]:
    return [
        line(f"第 {i} 条 message {i}", occurred_at=f"2026-10-05T09:{i % 60:02d}:00+08:00",
             source="user", kind="message", meta={"msg_id": f"m-{i}"})
        for i in range(start, start + n)
    ]


def test_good_lines_are_stored_in_order(mem: Memory) -> None:
    ids = mem.ingest(good_lines(5)).new
    assert ids == [1, 2, 3, 4, 5]
    assert mem.read_event(3)["text"] == "第 2 条 message 2"
    assert mem.read_event(3)["meta"] == {"msg_id": "m-2"}


def test_str_lines_crlf_and_blank_lines_are_accepted(mem: Memory) -> None:
    lines = [line("a") + b"\r\n", b"\n", b"   \r\n", line("b").decode() + "\n", ""]
    assert mem.ingest(lines).new == [1, 2]


def test_only_text_is_required(mem: Memory) -> None:
    (event_id,) = mem.ingest([b'{"text": "just text"}']).new
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
        mem.ingest(lines)
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
        mem.ingest([b"{oops"] + good_lines(3))
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
        mem.ingest(lines)
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
        mem.ingest(lines)
    done = len(info.value.stored)
    lines[1_199] = line("fixed")
    ids = mem.ingest(lines[done:]).new
    assert len(ids) == 1_500 - done
    assert count(mem.conn, "events") == 1_500
    assert mem.read_event(1_200)["text"] == "fixed"


def test_chunk_size_is_1000() -> None:
    assert CHUNK == 1_000


def test_parse_line_of_a_blank_line_is_none() -> None:
    assert parse_line(b"  \r\n", 3) is None
    assert parse_line("", 4) is None


def test_a_byte_order_mark_on_the_first_line_is_ignored(mem: Memory) -> None:
    ids = mem.ingest([b"\xef\xbb\xbf" + line("first"), line("second")]).new
    assert [mem.read_event(i)["text"] for i in ids] == ["first", "second"]
    with pytest.raises(IngestError) as info:  # anywhere else it is still broken JSON
        mem.ingest([line("ok"), b"\xef\xbb\xbf" + line("late")])
    assert info.value.line == 2


class EndlessLine:
    """A binary stream: one good line, then bytes without a newline for ever. It refuses a
    readline without a limit (that would hold the whole line) and counts what was read."""

    def __init__(self) -> None:
        self.first, self.read = True, 0

    def readline(self, limit: int = -1) -> bytes:
        assert 0 < limit <= 512 * 1024, "a line must be read with a bound"
        if self.first:
            self.first = False
            return line("before the long one")
        self.read += limit
        return b"x" * limit


def test_a_line_over_256_kib_is_refused_by_number_with_bounded_reads(mem: Memory) -> None:
    stream = EndlessLine()
    with pytest.raises(IngestError, match=r"line 2: longer than 262,144 bytes") as caught:
        mem.ingest(stream)
    assert caught.value.stored == [1] and stream.read <= 256 * 1024 + 1
    assert count(mem.conn, "events") == 1


def test_the_longest_good_line_fits_under_the_limit(mem: Memory) -> None:
    """32,000 CJK chars as JSON escapes (6 bytes each) with a full 16 KiB meta: still read."""
    import io

    longest = json.dumps({"text": "中" * 32_000, "meta": {"pad": "z" * 16_000}}).encode()
    assert 200_000 < len(longest) <= 256 * 1024
    assert mem.ingest(io.BytesIO(longest)).new == [1]


def test_a_long_line_given_as_text_is_refused_too() -> None:
    from memvault.base.errors import InputError

    with pytest.raises(InputError, match="line 7: longer than"):
        parse_line("x" * (256 * 1024 + 1), 7)


def test_an_ingest_indexes_what_it_stored_once(mem: Memory,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Stored in chunks of a thousand, indexed for recall in one pass at the end: the last
    line is found at once, and the index was synced once, not once a chunk."""
    from memvault.recall import index

    calls: list[int | None] = []
    real = index.sync_index

    def counted(conn: Any, max_events: int | None = None, **kwargs: Any) -> Any:
        calls.append(max_events)
        return real(conn, max_events=max_events, **kwargs)

    monkeypatch.setattr(index, "sync_index", counted)
    lines = good_lines(2_400) + [line("the zebra crossing on Elm Street")]
    report = mem.ingest(lines)
    assert len(report.new) == 2_401 and report.index_deferred is None
    assert calls == [2_401]
    [hit] = mem.find("zebra crossing")["hits"]
    assert hit["id"] == report.new[-1]


def test_a_line_nesting_past_64_levels_is_refused_by_number_before_it_is_parsed(
    mem: Memory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import memvault.timeline.ingest as ingest

    deep = b'{"text": "x", "meta": {"a": ' + b"[" * 20_000 + b"]" * 20_000 + b"}}"
    parsed: list[int] = []
    loads = ingest.json.loads
    monkeypatch.setattr(ingest.json, "loads", lambda raw: parsed.append(len(raw)) or loads(raw))
    with pytest.raises(IngestError, match="line 2: JSON nested more than 64 levels") as caught:
        mem.ingest([line("before it"), deep, line("after it")])
    assert caught.value.stored == [1] and count(mem.conn, "events") == 1
    assert len(deep) not in parsed  # refused before the parser read it
    # brackets inside strings are text, not nesting
    assert parse_line(line("[" * 500, meta={"k": "{" * 500}), 1) is not None
