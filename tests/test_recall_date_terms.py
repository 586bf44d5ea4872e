"""The words of a date a query names are answered by the date, not matched as words: "On May
3rd" does not also search the verb "may" (nor "3rd"), "12月16日" not its bigrams; a word that
only looks like a month stays a term; a query that is only a date still finds its day's turns."""

from __future__ import annotations

import pytest
from memvault import Memory
from memvault.objects.records import ObjectRecord, save_object
from memvault.recall.dates import date_mentions
from memvault.recall.index import sync_index
from memvault.recall.query import memory_find
from memvault.recall.terms import parse_query
from memvault.store.connection import write
from memvault.timeline.events import NewEvent

FILLER = [f"We talked about lunch plans number {i} and the weather." for i in range(30)]
MAY_3 = "2026-05-03T10:00:00+00:00"


def _fill(mem: Memory, dated: list[str], when: str = MAY_3) -> list[int]:
    """Filler on another day, then `dated` turns said on `when`; the ids of the dated turns."""
    mem.append_events([NewEvent(t, occurred_at="2026-03-01T10:00:00+00:00") for t in FILLER])
    return mem.append_events([NewEvent(t, occurred_at=when) for t in dated])


def _save_indexed(mem: Memory, record: ObjectRecord) -> None:
    """Store an object and bring the recall index up to it."""
    with write(mem.conn):
        save_object(mem.conn, record, mem.clock.now())
        sync_index(mem.conn)


def _terms(query: str) -> list[str]:
    return [t.text for t in parse_query(query).terms]


def test_the_purchase_outranks_another_turn_that_day_saying_may(mem: Memory) -> None:
    may, bought = _fill(mem, ["You may want to rest and you may call later, may I say.",
                              "I had to buy a blue umbrella at the market."])
    hits = memory_find(mem.conn, "On May 3rd, what did I buy?", types=["event"])["hits"]
    assert hits[0]["id"] == bought
    assert hits[0]["score"] > next(h["score"] for h in hits if h["id"] == may)


def test_the_words_of_a_date_are_no_terms_but_the_rest_are() -> None:
    assert _terms("On May 3rd, what did you recommend?") == ["recommend"]
    assert _terms("what did we eat on 2026-05-03") == ["eat"]
    assert _terms("in March 2023 the trip") == ["trip"]


def test_a_chinese_date_leaves_no_bigram_across_its_edges() -> None:
    assert _terms("我12月16日买了什么") == ["买了"]
    assert parse_query("我12月16日买了什么").windows[0].day == 16


@pytest.mark.parametrize(("query", "term"), [("I may go", "may"),
                                             ("March of the penguins", "march"),
                                             ("the 3rd book", "3rd")])
def test_a_word_outside_a_recognised_date_stays_a_term(query: str, term: str) -> None:
    assert term in _terms(query)
    assert not parse_query(query).windows


def test_may_as_a_verb_still_finds_the_turn_saying_it(mem: Memory) -> None:
    [may] = _fill(mem, ["You may go to the concert."], when="2026-03-02T10:00:00+00:00")
    assert memory_find(mem.conn, "I may go", types=["event"])["hits"][0]["id"] == may


@pytest.mark.parametrize("query", ["May 3rd", "5月3日", "2026-05-03"])
def test_a_query_that_is_only_a_date_finds_the_turns_of_that_day(mem: Memory,
                                                                 query: str) -> None:
    said = _fill(mem, ["I bought a blue umbrella.", "The rain stopped."])
    answer = memory_find(mem.conn, query, types=["event"])
    assert answer["terms"] == []
    assert {h["id"] for h in answer["hits"]} == set(said)
    assert all(any("May 3" in w or "05-03" in w or "date" in w for w in h["why"])
               for h in answer["hits"])


def test_a_query_that_is_only_a_date_finds_a_turn_mentioning_it(mem: Memory) -> None:
    [moved] = _fill(mem, ["The launch moved to 2026-12-16."], when="2026-03-02T10:00:00+00:00")
    hits = memory_find(mem.conn, "December 16th", types=["event"])["hits"]
    assert [h["id"] for h in hits] == [moved]


def test_punctuation_alone_is_still_an_empty_answer(mem: Memory) -> None:
    _fill(mem, ["anything"])
    answer = memory_find(mem.conn, "?!", types=["event"])
    assert answer["hits"] == [] and "no searchable words" in answer["notice"]


def test_the_parser_reports_where_each_date_was_read() -> None:
    text = "On May 3rd and 12月16日, or 2023-05-03"
    found = date_mentions(text)
    assert [text[a:b] for a, b in found.spans] == ["May 3rd", "12月16日", "2023-05-03"]
    assert len(found.windows) == 3


def test_a_date_the_object_does_not_write_lowers_its_score(mem: Memory) -> None:
    _fill(mem, ["I had to buy a blue umbrella at the market."])
    _save_indexed(mem, ObjectRecord(id="knowledge:umbrella", type="knowledge", name="umbrella",
                                    summary="a blue umbrella"))

    def score(query: str) -> float:
        hits = memory_find(mem.conn, query, types=["knowledge"])["hits"]
        return next(h["score"] for h in hits if h["id"] == "knowledge:umbrella")

    assert 0 < score("On May 3rd, which umbrella?") < score("which umbrella?")


@pytest.mark.parametrize("query", ["2027-01-21", "January 21", "what is on 2027-01-21?"])
def test_a_date_still_finds_the_object_that_writes_it(mem: Memory, query: str) -> None:
    # Objects have no date index: the date's words are how a schedule saying it is found.
    _fill(mem, ["The office move is postponed to 2027-01-21."])
    _save_indexed(mem, ObjectRecord(id="schedule:office-move", type="schedule",
                                    name="office move", summary="office move — 2027-01-21"))
    hits = memory_find(mem.conn, query)["hits"]
    assert "schedule:office-move" in [h["id"] for h in hits]
