"""Source anti-backflow's share: an event is "wholly memory output" when at least 90% of its
letters and digits lie in memory-output spans. Then the engine ends it archive_only with no
model call; under 90% the agent's own words count and the event goes to the model.

What breaks this test (each mutation made in engine/objects/provenance.py, the test run and
seen to fail, the code restored):
- `WHOLLY_SHARE = 0.9` changed to 0.5, and separately to 0.95 ->
  test_an_event_is_wholly_memory_output_from_ninety_percent_of_its_words;
- `covered >= WHOLLY_SHARE * words` changed to `>` -> test_exactly_ninety_percent_is_wholly_memory.
"""

from __future__ import annotations

import json

from memvault import Memory
from memvault.objects.provenance import Span, is_wholly_memory, memory_spans
from modes_support import add_archived, archive_only_step, make_worker, payload, queue_row

# A memory_find result pasted back by the agent: 80 letters and digits, all memory output.
FOUND = json.dumps({"query": "Tom Becker", "hits": [{
    "id": "person:tom-becker", "snippet": "Tom Becker is our DevOps lead", "why": "name",
    "score": 3.2}]}, ensure_ascii=False)
MOSTLY_ECHO = "Tom wrote: " + FOUND  # 8 own letters of 88: 91% memory output
OWN_WORDS_COUNT = "Tom wrote back: " + FOUND  # 12 own letters of 92: 87% memory output


def share(text: str) -> float:
    """The share of `text`'s letters and digits inside its memory-output spans."""
    words = sum(ch.isalnum() for ch in text)
    covered = sum(ch.isalnum() for s in memory_spans(text) for ch in text[s.start:s.end])
    return covered / words


def test_the_two_events_lie_either_side_of_ninety_percent() -> None:
    assert 0.9 < share(MOSTLY_ECHO) < 0.92
    assert 0.86 < share(OWN_WORDS_COUNT) < 0.88


def test_an_event_is_wholly_memory_output_from_ninety_percent_of_its_words(mem: Memory) -> None:
    echo, own = add_archived(mem, MOSTLY_ECHO, OWN_WORDS_COUNT)
    mem.organize()
    worker, provider = make_worker(mem, [archive_only_step("a pasted answer")])
    assert worker.tick().action == "committed"
    # The 91% event was ended by the engine; the model was shown only the 87% one.
    (only_call,) = provider.history
    assert payload(only_call["messages"])["event"]["id"] == own
    assert queue_row(mem.conn, echo)["state"] == "archive_only"
    assert queue_row(mem.conn, echo)["reason"].startswith("memory output")
    assert queue_row(mem.conn, own)["reason"] == "a pasted answer"


def test_exactly_ninety_percent_is_wholly_memory() -> None:
    assert is_wholly_memory("a" * 9 + "b", [Span(0, 9, "a memory_find result")])
    assert not is_wholly_memory("a" * 8 + "bb", [Span(0, 8, "a memory_find result")])
