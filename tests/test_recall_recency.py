"""Recency breaks near-ties: of two events within 5% of each other that both name the question's
entity, the later ranks first (a correction beats what it corrects); a clear score gap, or an
entity nearly every event names, leaves the order to the scores."""

from __future__ import annotations

from memvault import Memory
from memvault.recall.query import memory_find
from memvault.recall.recency import entity_terms
from memvault.recall.terms import parse_query
from memvault.timeline.events import NewEvent

FILLER = [f"We talked about lunch plans number {i} and the weather." for i in range(40)]


def _add(mem: Memory, texts: list[tuple[str, str]]) -> list[int]:
    events = [NewEvent(t, occurred_at="2026-01-01T09:00:00+00:00") for t in FILLER]
    events += [NewEvent(t, occurred_at=when) for t, when in texts]
    return mem.append_events(events)[len(FILLER):]


def test_a_later_statement_about_the_same_person_ranks_above_the_earlier(mem: Memory) -> None:
    later, earlier = _add(mem, [("Dana moved to Nantes last week.", "2026-03-01T09:00:00+00:00"),
                                ("Dana moved to Lyon last week.", "2026-02-01T09:00:00+00:00")])
    hits = memory_find(mem.conn, "Where did Dana move?", types=["event"])["hits"]
    assert [h["id"] for h in hits[:2]] == [later, earlier]


def test_a_clearly_better_match_keeps_its_place_whatever_its_date(mem: Memory) -> None:
    better, weaker = _add(mem, [
        ("Dana moved to Lyon; Dana loves Lyon.", "2026-02-01T09:00:00+00:00"),
        ("Dana said hello.", "2026-03-01T09:00:00+00:00")])
    hits = memory_find(mem.conn, "Dana Lyon", types=["event"])["hits"]
    assert hits[0]["id"] == better
    assert weaker in [h["id"] for h in hits]


def test_named_entities_are_capitalised_words_and_chinese_terms() -> None:
    assert entity_terms(parse_query("Where did Dana move in Paris?")) == ["dana", "paris"]
    assert "张伟" in entity_terms(parse_query("张伟搬到哪里了"))
    assert entity_terms(parse_query("where did she move")) == []
