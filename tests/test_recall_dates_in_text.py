"""Dates written inside an event's text are indexed as dates: a question naming that date, in
ISO, English or Chinese form, finds the turn that mentions it, whatever day the turn was said;
a year-less mention is read in the year the event was written; existing homes are re-indexed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memvault import Memory
from memvault.home.migrations import apply_migrations, open_home_db
from memvault.recall import context
from memvault.recall import schema as recall_tables
from memvault.recall.dates import mention_tokens
from memvault.recall.index import get_stat, sync_index
from memvault.recall.query import memory_find
from memvault.recall.schema import rebuild_events_index
from memvault.store.connection import write
from memvault.timeline.events import NewEvent, insert_events, validate_event

FILLER = [f"We talked about lunch plans number {i} and the weather." for i in range(30)]


def _fill(mem: Memory, texts: list[str], when: str = "2026-03-01T10:00:00+00:00") -> list[int]:
    return mem.append_events([NewEvent(t, occurred_at=when) for t in [*FILLER, *texts]])[30:]


@pytest.mark.parametrize("query", ["December 16", "12月16日", "2026-12-16", "Dec 16, 2026",
                                   "2026年12月16日", "what happens on December 16?"])
def test_a_date_named_in_any_form_finds_the_turn_that_mentions_it(mem: Memory, query: str) -> None:
    [moved] = _fill(mem, ["The launch moved to 2026-12-16."])
    answer = memory_find(mem.conn, query, types=["event"], limit=5)
    assert answer["hits"] and answer["hits"][0]["id"] == moved
    assert any("mentions" in why for why in answer["hits"][0]["why"])


@pytest.mark.parametrize("text", ["我们12月16日搬家", "See you on Dec 16", "due 16 December"])
def test_a_mention_in_chinese_or_english_is_found_by_an_iso_date(mem: Memory, text: str) -> None:
    [said] = _fill(mem, [text])
    hits = memory_find(mem.conn, "2026-12-16", types=["event"], limit=5)["hits"]
    assert [h["id"] for h in hits][:1] == [said]


def test_a_year_less_mention_is_read_in_the_year_the_event_was_written(mem: Memory) -> None:
    [said] = _fill(mem, ["The party is on Dec 16"], when="2025-11-20T10:00:00+00:00")
    assert memory_find(mem.conn, "December 16, 2025", types=["event"])["hits"][0]["id"] == said
    assert not [h for h in memory_find(mem.conn, "December 16, 2026", types=["event"])["hits"]
                if h["id"] == said and h["score"] >= 0.4]
    assert "mvdateday20251216" in mention_tokens("The party is on Dec 16", 2025)


def test_an_unindexed_event_is_found_by_the_date_it_mentions(mem: Memory) -> None:
    _fill(mem, [])
    now = datetime(2026, 3, 1, tzinfo=UTC)
    row = validate_event(NewEvent("搬家定在12月16日", occurred_at=now.isoformat()), now, None)
    with write(mem.conn):  # no sync_index: past the watermark, read from the table
        [new] = insert_events(mem.conn, [row], now)
    assert new > get_stat(mem.conn, "events_indexed_to")
    assert memory_find(mem.conn, "December 16", types=["event"])["hits"][0]["id"] == new


@pytest.mark.parametrize(("written", "asked"), [
    ("The launch is on 10.01.2024.", "what happens on 10 January 2024"),  # dotted: day first
    ("The launch is on 2024.01.10.", "January 10th, 2024"),  # four digits first: the year
    ("The launch is on 2024/1/10.", "2024-01-10"),
    ("The launch is on 10/01/2024 at the earliest", "Jan 10 2024"),  # not read: see below
    ("The launch is on 25/12/2024.", "December 25, 2024"),  # 25 cannot be a month: day first
    ("The launch is on 12/25/2024.", "the 25th of December 2024"),  # month first
    ("发布定在十二月二十五号", "2024年12月25日"),
    ("Dec 25th is the launch", "on 25.12.2024"),
])
def test_a_date_written_with_dots_slashes_or_numerals_is_read_on_both_sides(
        mem: Memory, written: str, asked: str) -> None:
    [said] = _fill(mem, [written], when="2024-01-02T10:00:00+00:00")
    hits = [h["id"] for h in memory_find(mem.conn, asked, types=["event"], limit=5)["hits"]]
    if "10/01/2024" in written:  # 10 and 01 can both be months: not a date, no mention
        assert mention_tokens(written, 2024) == []
    else:
        assert hits[:1] == [said]


def test_a_month_named_alone_in_a_turn_is_indexed_in_the_year_it_was_said(mem: Memory) -> None:
    lisbon, hangzhou = _fill(mem, ["We fly to Lisbon in May, I think.", "五月去杭州看看"],
                             when="2024-02-10T10:00:00+00:00")
    assert mention_tokens("We fly to Lisbon in May, I think.", 2024) == ["mvdatemon202405"]
    assert mention_tokens("I may fly to Lisbon", 2024) == []  # the verb is no month
    for query, said in (("trip in May 2024", lisbon), ("2024年5月", hangzhou)):
        hits = memory_find(mem.conn, query, types=["event"], limit=5)["hits"]
        assert said in [h["id"] for h in hits], query


def test_text_without_a_date_gets_no_date_token() -> None:
    assert mention_tokens("I ran 16 miles in 42 minutes", 2026) == []
    assert mention_tokens("no digits at all", 2026) == []
    for text in ("192.168.1.1", "pi is 3.14", "5/6/2023 or 6/5", "一个月后", "看月亮"):
        assert mention_tokens(text, 2026) == [], text


def test_rebuilding_the_index_keeps_what_find_finds(mem: Memory) -> None:
    [moved] = _fill(mem, ["The launch moved to 2026-12-16."])
    before = memory_find(mem.conn, "launch weather", types=["event"])["hits"]
    docs = get_stat(mem.conn, "events_docs")
    seen: list[tuple[int, int]] = []
    with write(mem.conn):
        done = rebuild_events_index(mem.conn, lambda d, t: seen.append((d, t)))
        sync_index(mem.conn)
    assert done == docs == get_stat(mem.conn, "events_docs")
    assert seen[-1] == (docs, docs)
    assert memory_find(mem.conn, "launch weather", types=["event"])["hits"] == before
    assert memory_find(mem.conn, "12月16日", types=["event"])["hits"][0]["id"] == moved


def test_an_existing_home_is_reindexed_by_the_migration_with_progress(tmp_path: Path) -> None:
    """A home whose index predates date tokens: m010 rebuilds it, reporting progress."""
    conn = open_home_db(tmp_path / "memory.db")
    now = datetime(2026, 3, 1, tzinfo=UTC)
    row = validate_event(NewEvent("The launch moved to 2026-12-16.", occurred_at=now.isoformat()),
                         now, None)
    with write(conn):
        [moved] = insert_events(conn, [row], now)
        conn.execute("INSERT INTO recall_events_fts (recall_events_fts) VALUES ('delete-all')")
        conn.execute("DELETE FROM recall_vocab")
        conn.execute("DELETE FROM recall_state")  # as if indexed before: watermark, counts
        conn.execute("DELETE FROM _migrations WHERE name = 'm010_recall_date_mentions'")
        sync_index(conn)
    with write(conn):  # the old analysis had no date token: drop it from this row
        conn.execute("INSERT INTO recall_events_fts (recall_events_fts) VALUES ('delete-all')")
        conn.execute("INSERT INTO recall_events_fts (rowid, text) VALUES (?, ?)",
                     (moved, "The launch moved to 2026-12-16."))
        conn.execute("DELETE FROM recall_vocab WHERE term LIKE 'mvdate%'")
    assert not memory_find(conn, "December 16th", types=["event"])["hits"]
    seen: list[tuple[int, int]] = []
    recall_tables.REBUILD_PROGRESS = lambda done, total: seen.append((done, total))
    try:
        assert apply_migrations(conn) == ["m010_recall_date_mentions"]
    finally:
        recall_tables.REBUILD_PROGRESS = None
    assert seen == [(1, 1)]
    assert memory_find(conn, "December 16th", types=["event"])["hits"][0]["id"] == moved
    conn.close()


def test_a_date_mentioned_too_often_to_read_from_the_index_gives_the_same_reasons(
    mem: Memory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fill(mem, ["The launch moved to 2026-12-16.", "Dec 16 is the launch day",
                "launch party on 2026-12-17"])
    from_index = memory_find(mem.conn, "launch on December 16", types=["event"])
    monkeypatch.setattr(context, "MENTIONS_READ_MAX", 1)  # every token too common: parse texts
    from_text = memory_find(mem.conn, "launch on December 16", types=["event"])
    assert from_text == from_index
    reasons = [why for hit in from_index["hits"] for why in hit["why"]]
    assert reasons.count("mentions --12-16") == 2


# -- the quick test before the patterns -------------------------------------------------------

_PIECES = ["2026", "12", "3", "-", ".", "/", " ", ",", "May", "may", "Sept", "ſep", "of ", "in ",
           "月", "日", "号", "年", "五", "十二", "th", "#", "Dec", "DECEMBER", "x", "\u0663",
           "during ", "Jan.", "decide", "Mayfair", "1-", "\u3000", "_", "3rd "]


def _read_by_every_pattern(text: str) -> list:
    from memvault.recall.dates import _MENTION_RULES, first_readings

    return first_readings(text, _MENTION_RULES)


@pytest.mark.parametrize("text", [
    "#12", "3 people came", "10.5% more", "2026-12-16", "25/12/2023", "2024.01.10", "May 3",
    "in March", "五月", "十二月二十五号", "12月16日", "the 3rd of may, 2024", "ſep 3, 2024",
    "\u0663/\u0664/2024", "nothing at all", "2026年5月3日 and May 4, 2026 and 2026-05-05",
    "1-2024-05-03", "12/2024/05/03", "the 3rd of May. 2024", "in May.x", "Mayfair 3", "may3 2024",
    "2024-05-03-04", "3 May 2024 May 2025",
])
def test_only_the_patterns_a_turn_can_match_run_and_it_reads_the_same(text: str) -> None:
    from memvault.recall.dates import mention_readings

    assert mention_readings(text) == _read_by_every_pattern(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_the_patterns_left_out_never_change_what_generated_text_reads(text: str) -> None:
    from memvault.recall.dates import mention_readings

    assert mention_readings(text) == _read_by_every_pattern(text)


def test_a_month_matched_case_insensitively_is_read_not_a_crash() -> None:
    # "ſ" (a long s) matches "s" under re.I; the month lookup lower()ed it and raised
    # StopIteration out of ingest's indexing and out of find.
    from memvault.recall.dates import date_windows

    assert mention_tokens("meet ſep 3, 2024", 2026) == mention_tokens("meet Sep 3, 2024", 2026)
    assert date_windows("ſep 3, 2024") == date_windows("Sep 3, 2024") != []
