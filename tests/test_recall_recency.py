"""Recency breaks near-ties: of two events within 5% of each other that both name the question's
entity, the later ranks first (a correction beats what it corrects); a clear score gap, or an
entity nearly every event names, leaves the order to the scores."""

from __future__ import annotations

from memvault import Memory
from memvault.recall.query import memory_find
from memvault.recall.recency import entity_terms
from memvault.recall.terms import parse_query
from memvault.store.connection import write
from memvault.timeline.events import NewEvent
from modes_support import put_object

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


def _cite(mem: Memory, object_id: str, event_id: int) -> None:
    with write(mem.conn):
        mem.conn.execute("INSERT INTO evidence (object_id, event_id, start_char, end_char,"
                         " created_at) VALUES (?, ?, 0, 5, 'x')", (object_id, event_id))


def test_of_two_tied_objects_naming_the_entity_the_one_said_of_later_ranks_first(
        mem: Memory) -> None:
    older, newer = _add(mem, [("Dana likes calls after lunch.", "2026-02-01T09:00:00+00:00"),
                              ("Dana now likes calls in the morning.",
                               "2026-03-01T09:00:00+00:00")])
    # the newer object sorts after the older by id, so only its time can lift it
    put_object(mem, "knowledge:a-dana-calls", "Dana: calls", body="Dana likes calls, mornings")
    put_object(mem, "knowledge:b-dana-calls", "Dana: calls", body="Dana likes calls, afternoons")
    _cite(mem, "knowledge:a-dana-calls", older)
    _cite(mem, "knowledge:b-dana-calls", newer)
    hits = memory_find(mem.conn, "When does Dana like calls?", types=["knowledge"])["hits"]
    assert [h["id"] for h in hits[:2]] == ["knowledge:b-dana-calls", "knowledge:a-dana-calls"]


def test_objects_of_different_types_keep_their_score_order(mem: Memory) -> None:
    older, newer = _add(mem, [("Dana likes calls.", "2026-02-01T09:00:00+00:00"),
                              ("Dana calls on Fridays.", "2026-03-01T09:00:00+00:00")])
    put_object(mem, "knowledge:dana-calls", "Dana: calls", body="Dana likes calls")
    put_object(mem, "schedule:dana-calls", "Dana: calls", body="Dana likes calls")
    _cite(mem, "knowledge:dana-calls", older)
    _cite(mem, "schedule:dana-calls", newer)
    plain = memory_find(mem.conn, "Dana calls", types=["knowledge", "schedule"])["hits"]
    assert [h["id"] for h in plain[:2]] == ["knowledge:dana-calls", "schedule:dana-calls"]
