"""Events: stored once, immutable, meta kept verbatim, bad input refused whole, paged reads and
time listings that page to the end with no duplicates or gaps."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import T0, count, write_config
from hypothesis import given
from hypothesis import strategies as st
from memvault import ManualClock, Memory, NewEvent
from memvault.base.clock import parse_time, to_micros
from memvault.base.errors import InputError, NotFound
from memvault.base.tokens import estimate_tokens
from memvault.timeline.events import PAGE_CHARS, _occurred, is_canonical_time, parse_event_id

META = {
    "msg_id": "m-0002", "channel": "desktop", "nested": {"list": [1, 2.5, None, True, "二"]},
    "emoji": "😀", "zh": "浩宇", "empty": {}, "z_last": 0, "a_after_z": "order kept",
}


def fragments_of(conn: sqlite3.Connection, event_id: int) -> list[str]:
    rows = conn.execute(
        "SELECT substr(e.text, n.start_char + 1, n.end_char - n.start_char) FROM hot_nodes n"
        " JOIN events e ON e.id = n.event_id WHERE n.event_id = ? ORDER BY n.fragment_index",
        (event_id,),
    ).fetchall()
    return [r[0] for r in rows]


def assert_nothing_stored(conn: sqlite3.Connection) -> None:
    assert count(conn, "events") == 0
    assert count(conn, "hot_nodes") == 0


# -- storing ------------------------------------------------------------------------------------


def test_an_event_is_stored_with_its_fields(mem: Memory) -> None:
    event_id = mem.append_event(
        "记住：浩宇对花生过敏。", occurred_at="2026-10-05T09:49:31+08:00", source="user",
        kind="message", meta=META,
    )
    page = mem.read_event(event_id)
    assert page["text"] == "记住：浩宇对花生过敏。"
    assert page["occurred_at"] == "2026-10-05T09:49:31+08:00"
    assert page["ingested_at"] == "2026-10-13T12:00:00+08:00"
    assert (page["source"], page["kind"]) == ("user", "message")
    assert page["chars"] == 11
    assert page["est_tokens"] == estimate_tokens("记住：浩宇对花生过敏。") == 11
    assert page["state"] == "hot"
    assert page["next_offset"] is None


def test_meta_is_returned_verbatim_in_event_and_listing(mem: Memory) -> None:
    event_id = mem.append_event("hello", occurred_at="2026-10-05T09:00:00+08:00", meta=META)
    no_meta = mem.append_event("no meta", occurred_at="2026-10-05T09:01:00+08:00")
    empty = mem.append_event("empty meta", occurred_at="2026-10-05T09:02:00+08:00", meta={})
    page = mem.read_event(event_id)
    assert page["meta"] == META
    assert list(page["meta"]) == list(META)  # key order kept
    listing = mem.list_events("2026-10-05T00:00:00+08:00", "2026-10-06T00:00:00+08:00")
    by_id = {e["id"]: e for e in listing["events"]}
    assert by_id[event_id]["meta"] == META
    assert list(by_id[event_id]["meta"]) == list(META)
    assert by_id[no_meta]["meta"] is None and mem.read_event(no_meta)["meta"] is None
    assert by_id[empty]["meta"] == {} and mem.read_event(empty)["meta"] == {}
    stored = mem.conn.execute("SELECT meta FROM events WHERE id = ?", (event_id,)).fetchone()[0]
    assert json.loads(stored) == META
    assert "浩宇" in stored  # stored as readable UTF-8, not \\u escapes


def test_occurred_at_defaults_to_the_clock_and_keeps_its_offset(
    mem: Memory, clock: ManualClock
) -> None:
    first = mem.append_event("now")
    clock.advance(minutes=5)
    second = mem.append_event("utc", occurred_at="2026-10-13T04:00:00Z")
    third = mem.append_event("aware dt", occurred_at=datetime(2026, 1, 2, 3, 4, 5, 600_000,
                                                               tzinfo=UTC))
    assert mem.read_event(first)["occurred_at"] == "2026-10-13T12:00:00+08:00"
    assert mem.read_event(second)["occurred_at"] == "2026-10-13T04:00:00+00:00"
    assert mem.read_event(second)["ingested_at"] == "2026-10-13T12:05:00+08:00"
    assert mem.read_event(third)["occurred_at"] == "2026-01-02T03:04:05.600000+00:00"


def test_a_naive_occurred_at_is_taken_in_the_configured_zone(home: Path) -> None:
    write_config(home, '[time]\ntimezone = "Asia/Shanghai"\n')
    with Memory.open(home, clock=ManualClock(T0)) as mem:
        event_id = mem.append_event("naive", occurred_at="2026-10-05T09:00:00")
        naive_dt = mem.append_event("naive dt", occurred_at=datetime(2026, 10, 5, 10, 0))
        assert mem.read_event(event_id)["occurred_at"] == "2026-10-05T09:00:00+08:00"
        assert mem.read_event(naive_dt)["occurred_at"] == "2026-10-05T10:00:00+08:00"


def test_fragments_are_slices_that_concatenate_back_to_the_text(mem: Memory) -> None:
    text = ("第一段：今天和浩宇讨论了项目。\n\nSecond paragraph, in English. " * 400)[:9_000]
    event_id = mem.append_event(text)
    pieces = fragments_of(mem.conn, event_id)
    assert len(pieces) == 5
    assert "".join(pieces) == text
    assert all(0 < len(p) <= 2_000 for p in pieces)
    rows = mem.conn.execute(
        "SELECT fragment_index, fragment_count, chars, est_tokens, kind, level, active"
        " FROM hot_nodes WHERE event_id = ? ORDER BY fragment_index", (event_id,)
    ).fetchall()
    assert [r["fragment_index"] for r in rows] == list(range(5))
    assert {r["fragment_count"] for r in rows} == {5}
    assert [r["chars"] for r in rows] == [len(p) for p in pieces]
    assert [r["est_tokens"] for r in rows] == [estimate_tokens(p) for p in pieces]
    assert {(r["kind"], r["level"], r["active"]) for r in rows} == {("raw", 0, 1)}


def test_a_32000_char_event_makes_exactly_16_fragments(mem: Memory) -> None:
    text = ("浩宇说：明天上午十点开会，记得带电脑。Remember the laptop! " * 1_000)[:32_000]
    assert len(text) == 32_000
    event_id = mem.append_event(text)
    pieces = fragments_of(mem.conn, event_id)
    assert len(pieces) == 16
    assert "".join(pieces) == text
    stored = mem.conn.execute("SELECT text FROM events WHERE id = ?", (event_id,)).fetchone()[0]
    assert stored == text


def test_a_32001_char_event_is_refused_and_nothing_is_stored(mem: Memory) -> None:
    with pytest.raises(InputError, match=r"32,001 chars.*at most 32,000.*Nothing was stored"):
        mem.append_event("x" * 32_001)
    assert_nothing_stored(mem.conn)


def test_a_batch_is_all_or_nothing(mem: Memory) -> None:
    batch = [NewEvent("ok one"), NewEvent("ok two"), NewEvent("x" * 32_001), NewEvent("ok four")]
    with pytest.raises(InputError):
        mem.append_events(batch)
    assert_nothing_stored(mem.conn)
    ids = mem.append_events(batch[:2])
    assert ids == [1, 2]


BAD_EVENTS = [
    (NewEvent(""), "text is empty"),
    (NewEvent(" \n\t "), "text is empty"),
    (NewEvent(None), "text must be a string"),
    (NewEvent(42), "text must be a string"),
    (NewEvent(b"bytes"), "text must be a string"),
    (NewEvent("bad \ud83d surrogate"), "lone surrogate at char 4"),
    (NewEvent("\udc00"), "lone surrogate"),
    (NewEvent("nul \x00 inside"), "NUL character"),
    (NewEvent("\x00 leading nul"), "NUL character"),
    (NewEvent("x", meta=["not", "an", "object"]), "meta must be a JSON object, got list"),
    (NewEvent("x", meta="a string"), "meta must be a JSON object, got str"),
    (NewEvent("x", meta=42), "meta must be a JSON object"),
    (NewEvent("x", meta={"when": datetime(2026, 1, 1)}), "meta is not JSON-serialisable"),
    (NewEvent("x", meta={"s": "\ud83d"}), "meta holds a lone surrogate"),
    (NewEvent("x", meta={"v": float("nan")}), "NaN and Infinity are not JSON"),
    (NewEvent("x", meta={"deep": [1, {"v": float("-inf")}]}), "NaN and Infinity are not JSON"),
    (NewEvent("x", meta={"big": 10**30, "v": float("inf")}), "meta is not JSON-serialisable"),
    (NewEvent("x", occurred_at="yesterday"), "occurred_at: not an ISO 8601 time: 'yesterday'"),
    (NewEvent("x", occurred_at="2026-13-45T00:00:00+08:00"), "occurred_at: not an ISO 8601"),
    (NewEvent("x", occurred_at=""), "occurred_at"),
    (NewEvent("x", occurred_at=1_700_000_000), "occurred_at must be an ISO 8601 string"),
    (NewEvent("x", occurred_at="0001-01-01T00:00:00+08:00"), "out of range"),
    (NewEvent("x", occurred_at="9999-12-31T23:59:59-08:00"), "out of range"),
    (NewEvent("x", occurred_at=datetime.min.replace(tzinfo=timezone(timedelta(hours=8)))),
     "out of range"),
    (NewEvent("x", source=""), "source must be a non-empty string"),
    (NewEvent("x", source="s" * 65), "source must be a non-empty string of at most 64"),
    (NewEvent("x", source=None), "source"),
    (NewEvent("x", source="u\ud83d"), "source is not valid Unicode"),
    (NewEvent("x", kind="  "), "kind must be a non-empty string"),
    (NewEvent("x", kind="k\udc00"), "kind is not valid Unicode"),
]


@pytest.mark.parametrize(("event", "message"), BAD_EVENTS)
def test_bad_input_is_a_clear_error_and_nothing_is_stored(
    mem: Memory, event: NewEvent, message: str
) -> None:
    with pytest.raises(InputError) as info:
        mem.append_events([NewEvent("a good event before it"), event])
    assert message in str(info.value)
    assert_nothing_stored(mem.conn)


def test_meta_the_fast_encoder_refuses_still_goes_in_as_json_would_write_it(mem: Memory) -> None:
    """Int keys, ints over 64 bits and nulls: stored as the json module stores them."""
    meta = {1: "int key", "big": 10**30, "none": None, "tuple": (1, 2), "zh": "浩宇"}
    event_id = mem.append_event("x", meta=meta)
    assert mem.read_event(event_id)["meta"] == {"1": "int key", "big": 10**30, "none": None,
                                                 "tuple": [1, 2], "zh": "浩宇"}


@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1),
                    timezones=st.sampled_from([UTC, timezone(timedelta(hours=8)),
                                               timezone(timedelta(hours=-5, minutes=-30)),
                                               timezone(timedelta(hours=14))])))
def test_a_canonical_time_string_is_stored_as_iso_renders_it(when: datetime) -> None:
    text = when.isoformat()
    occurred, micros = _occurred(text, when, None)
    assert occurred == text and micros == to_micros(when)
    assert is_canonical_time(text) == (when.microsecond == 0)


@given(st.text(alphabet="0123456789-+:TZ. ", min_size=19, max_size=32))
def test_only_strings_iso_renders_back_unchanged_are_called_canonical(text: str) -> None:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return
    if is_canonical_time(text) and when.tzinfo is not None:
        assert when.isoformat() == text


@pytest.mark.parametrize("given", ["2026-10-13T12:30:00-00:00", "2026-10-13 12:30:00+08:00",
                                   "2026-10-13T12:30:00.5+08:00", "2026-10-13T12:30Z",
                                   " 2026-10-13T12:30:00+08:00 "])
def test_other_spellings_of_a_time_are_stored_in_one_form(mem: Memory, given: str) -> None:
    event_id = mem.append_event("x", occurred_at=given)
    stored = mem.read_event(event_id)["occurred_at"]
    assert stored == datetime.fromisoformat(stored).isoformat()
    assert parse_time(stored) == parse_time(given)


def test_a_text_of_exactly_one_char_and_of_only_emoji_is_fine(mem: Memory) -> None:
    assert mem.read_event(mem.append_event("好"))["text"] == "好"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert mem.read_event(mem.append_event(family))["text"] == family


# -- immutability -------------------------------------------------------------------------------


def test_events_cannot_be_updated_or_deleted(mem: Memory) -> None:
    event_id = mem.append_event("原文不可改", meta={"k": "v"})
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        mem.conn.execute("UPDATE events SET text = 'rewritten' WHERE id = ?", (event_id,))
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        mem.conn.execute("UPDATE events SET meta = NULL WHERE id = ?", (event_id,))
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        mem.conn.execute("DELETE FROM events WHERE id = ?", (event_id,))
    page = mem.read_event(event_id)
    assert (page["text"], page["meta"]) == ("原文不可改", {"k": "v"})


def test_raw_nodes_hold_slices_not_copies(mem: Memory) -> None:
    mem.append_event("x" * 5_000)
    columns = {r[1] for r in mem.conn.execute("PRAGMA table_info(hot_nodes)")}
    assert "text" not in columns
    row = mem.conn.execute(
        "SELECT COUNT(*) FROM hot_nodes WHERE kind = 'raw' AND summary IS NOT NULL"
    ).fetchone()
    assert row[0] == 0


# -- reading one event in pages -----------------------------------------------------------------


def test_an_event_pages_to_the_end_and_back(mem: Memory) -> None:
    text = "".join(f"{i:05d}行内容。" for i in range(2_500))[:20_000]
    event_id = mem.append_event(text)
    pages, offset = [], 0
    while offset is not None:
        page = mem.read_event(event_id, offset)
        assert page["offset"] == offset
        assert len(page["text"]) <= PAGE_CHARS
        pages.append(page["text"])
        offset = page["next_offset"]
    assert [len(p) for p in pages] == [8_000, 8_000, 4_000]
    assert "".join(pages) == text
    again = mem.read_event(event_id, 0)
    assert again["text"] == pages[0] and again["next_offset"] == 8_000
    middle = mem.read_event(f"event:{event_id}", 12_345)
    assert middle["text"] == text[12_345:20_000] and middle["next_offset"] is None
    end = mem.read_event(str(event_id), 20_000)
    assert end["text"] == "" and end["next_offset"] is None
    with pytest.raises(InputError, match="outside event"):
        mem.read_event(event_id, 20_001)
    with pytest.raises(InputError, match="outside event"):
        mem.read_event(event_id, -1)


def test_event_ids_are_parsed_strictly(mem: Memory) -> None:
    assert parse_event_id(7) == 7
    assert parse_event_id("7") == 7
    assert parse_event_id(" event:7 ") == 7
    for bad in ("", "abc", "-1", "7.0", "event:", "event:x", "１２", "person:qhy", True):
        with pytest.raises(InputError, match="not an event id"):
            parse_event_id(bad)
    with pytest.raises(NotFound, match="no event 99"):
        mem.read_event(99)


# -- time listings ------------------------------------------------------------------------------


def seed_listing(mem: Memory, n: int = 137) -> list[int]:
    """n events, several sharing a timestamp, in mixed offsets, appended out of time order."""
    base = datetime(2026, 10, 5, 8, 0, tzinfo=UTC)
    batch = []
    for i in range(n):
        when = base + timedelta(minutes=(i * 7919) % 50)  # ties and out-of-order arrival
        zone = timezone(timedelta(hours=(i % 3) * 4 - 4))
        batch.append(NewEvent(f"事件 {i} event", occurred_at=when.astimezone(zone),
                              meta={"i": i}))
    return mem.append_events(batch)


def expected_order(mem: Memory, start: str, end: str) -> list[int]:
    lo, hi = parse_time(start), parse_time(end)
    rows = mem.conn.execute(
        "SELECT id FROM events WHERE occurred_us >= ? AND occurred_us < ?"
        " ORDER BY occurred_us, id", (to_micros(lo), to_micros(hi)),
    ).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("limit", [1, 7, 10, 50, 136, 137, 500])
def test_the_cursor_pages_through_to_the_end_with_no_duplicates_or_gaps(
    mem: Memory, limit: int
) -> None:
    seed_listing(mem)
    start, end = "2026-10-05T08:00:00Z", "2026-10-05T09:00:00Z"
    seen, cursor, pages = [], None, 0
    while True:
        page = mem.list_events(start, end, cursor, limit=limit)
        assert len(page["events"]) <= limit
        seen += [e["id"] for e in page["events"]]
        pages += 1
        cursor = page["cursor"]
        if cursor is None:
            break
        assert pages < 1_000
    assert len(seen) == len(set(seen)) == 137
    assert seen == expected_order(mem, start, end)
    times = [mem.read_event(i)["occurred_at"] for i in seen]
    utc = [datetime.fromisoformat(t).astimezone(UTC) for t in times]
    assert utc == sorted(utc)
    again = mem.list_events(start, end, None, limit=limit)  # and back to the start
    assert [e["id"] for e in again["events"]] == seen[:limit]


def test_listing_bounds_are_start_inclusive_end_exclusive(mem: Memory) -> None:
    a = mem.append_event("at start", occurred_at="2026-10-05T08:00:00+00:00")
    b = mem.append_event("just before end", occurred_at="2026-10-05T08:59:59.999999+00:00")
    mem.append_event("at end", occurred_at="2026-10-05T09:00:00+00:00")
    mem.append_event("before start", occurred_at="2026-10-05T07:59:59+00:00")
    page = mem.list_events("2026-10-05T16:00:00+08:00", "2026-10-05T09:00:00Z")
    assert [e["id"] for e in page["events"]] == [a, b]
    assert page["cursor"] is None
    first = page["events"][0]
    assert first["preview"] == "at start" and first["chars"] == 8
    assert first["meta"] is None


def test_a_cursor_never_reaches_back_before_from(mem: Memory) -> None:
    mem.append_event("old", occurred_at="2020-01-01T00:00:00Z")
    new = mem.append_event("new", occurred_at="2026-10-05T08:00:00Z")
    page = mem.list_events("2026-10-01T00:00:00Z", "2026-10-06T00:00:00Z", cursor="0:0")
    assert [e["id"] for e in page["events"]] == [new]


def test_listing_preview_is_bounded(mem: Memory) -> None:
    mem.append_event("长" * 5_000, occurred_at="2026-10-05T08:00:00Z")
    page = mem.list_events("2026-10-05T00:00:00Z", "2026-10-06T00:00:00Z")
    assert page["events"][0]["preview"] == "长" * 120
    assert page["events"][0]["chars"] == 5_000


@pytest.mark.parametrize(
    ("start", "end", "cursor", "limit", "message"),
    [
        ("2026-10-06T00:00:00Z", "2026-10-05T00:00:00Z", None, 50, "TO must be later than FROM"),
        ("2026-10-05T00:00:00Z", "2026-10-05T00:00:00Z", None, 50, "TO must be later than FROM"),
        ("yesterday", "2026-10-05T00:00:00Z", None, 50, "FROM: not an ISO 8601 time"),
        ("2026-10-05T00:00:00Z", "soon", None, 50, "TO: not an ISO 8601 time"),
        ("0001-01-01T00:00:00+08:00", "2026-10-05T00:00:00Z", None, 50, "FROM: time out of range"),
        ("2026-10-04T00:00:00Z", "2026-10-05T00:00:00Z", "garbage", 50, "not a cursor"),
        ("2026-10-04T00:00:00Z", "2026-10-05T00:00:00Z", "12:", 50, "not a cursor"),
        ("2026-10-04T00:00:00Z", "2026-10-05T00:00:00Z", None, 0, "limit must be at least 1"),
    ],
)
def test_bad_listing_arguments_are_clear_errors(
    mem: Memory, start: str, end: str, cursor: str | None, limit: int, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        mem.list_events(start, end, cursor, limit=limit)


def test_ingested_at_keeps_the_clocks_own_offset(home: Path) -> None:
    """Equal instants in different zones are different texts: no cache may mix them up."""
    cst = ManualClock(datetime(2026, 10, 13, 12, 0, tzinfo=timezone(timedelta(hours=8))))
    utc = ManualClock(datetime(2026, 10, 13, 4, 0, tzinfo=UTC))
    with Memory.open(home, clock=cst) as a:
        first = a.append_event("in CST")
    with Memory.open(home, clock=utc) as b:
        second = b.append_event("in UTC")
        assert b.read_event(first)["ingested_at"] == "2026-10-13T12:00:00+08:00"
        assert b.read_event(second)["ingested_at"] == "2026-10-13T04:00:00+00:00"
