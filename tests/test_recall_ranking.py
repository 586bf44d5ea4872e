"""What memory_find ranks beyond plain word matches: the turns near a matching turn in the
same conversation, long turns that hold a rare word, dates the question names against
occurred_at, 2-letter terms, words absent from the vocabulary, English inflections, and events
not indexed yet ranked like indexed ones."""

from __future__ import annotations

import pytest
from memvault import Memory
from memvault.recall.dates import DateWindow, date_windows
from memvault.recall.index import sync_index
from memvault.recall.query import memory_find
from memvault.recall.stem import stem
from memvault.store.connection import write
from memvault.timeline.events import NewEvent

FILLER = [
    "The weather was grey and windy all afternoon.",
    "We ordered noodles for dinner and watched a film.",
    "My sister called to talk about her new apartment.",
    "The train was late again this morning.",
    "I finished reading the novel about the lighthouse keeper.",
]


def add(mem: Memory, texts: list[str], start: str = "2026-03-01T10:00", step_min: int = 1,
        sync: bool = True) -> list[int]:
    """Events `step_min` minutes apart from `start` (+08:00), indexed unless `sync` is False."""
    hour, minute = int(start[11:13]), int(start[14:16])
    events = []
    for i, text in enumerate(texts):
        total = hour * 60 + minute + i * step_min
        when = f"{start[:10]}T{total // 60 % 24:02d}:{total % 60:02d}:00+08:00"
        events.append(NewEvent(text, occurred_at=when))
    ids = mem.append_events(events, index=sync)
    if sync:
        with write(mem.conn):
            sync_index(mem.conn)
    return ids


def ids_of(answer: dict) -> list[object]:
    return [h["id"] for h in answer["hits"]]


# -- conversational neighbours ----------------------------------------------------------------

def test_the_turn_after_a_matching_question_is_found_with_its_context(mem: Memory) -> None:
    add(mem, FILLER, start="2026-03-01T08:00")
    question, answer = add(mem, ["Melanie: How long have you been doing yoga, Caroline?",
                                 "Caroline: Been at it for three years now."],
                           start="2026-03-02T09:00")
    add(mem, FILLER, start="2026-03-03T08:00")
    found = memory_find(mem.conn, "How long has Caroline been doing yoga?", types=["event"])
    hits = {h["id"]: h for h in found["hits"]}
    assert answer in hits and hits[answer]["context"] == [question]
    assert ids_of(found).index(question) < ids_of(found).index(answer)


def test_a_neighbour_in_another_conversation_is_not_context(mem: Memory) -> None:
    question = add(mem, ["How long have you been doing yoga?"], start="2026-03-02T09:00")[0]
    later = add(mem, ["Been at it for three years now."], start="2026-03-02T15:00")[0]
    found = memory_find(mem.conn, "How long have you been doing yoga?", types=["event"])
    assert ids_of(found) == [question] and later not in ids_of(found)


def test_a_statement_half_an_hour_after_a_hit_is_not_its_context(mem: Memory) -> None:
    # a user's statements among unrelated talk, each a while after the one before
    hit, aside = add(mem, ["My sister's new apartment is in Lisbon.",
                           "The train was late again this morning."],
                     start="2026-03-02T09:00", step_min=28)
    found = memory_find(mem.conn, "Where is my sister's new apartment?", types=["event"])
    assert ids_of(found) == [hit] and aside not in ids_of(found)


def test_a_reply_within_minutes_is_context(mem: Memory) -> None:
    question, answer = add(mem, ["Melanie: How long have you been doing yoga, Caroline?",
                                 "Caroline: Been at it for three years now."],
                           start="2026-03-02T09:00", step_min=4)
    found = memory_find(mem.conn, "How long has Caroline been doing yoga?", types=["event"])
    assert answer in ids_of(found)


def test_a_name_lookup_finds_only_events_that_mention_it(mem: Memory) -> None:
    mention, after = add(mem, ["I met Haoyu at the station.", "Then we took a taxi home."])
    assert ids_of(memory_find(mem.conn, "Haoyu", types=["event"])) == [mention]



def test_a_turn_two_after_a_matching_one_in_the_same_exchange_is_context(mem: Memory) -> None:
    add(mem, FILLER, start="2026-03-01T08:00")
    said, aside, answer = add(mem, [
        "Caroline: I've been thinking about my career a lot lately.",
        "Melanie: Oh? Tell me more!",
        "Caroline: I'm keen on counseling and working in mental health."],
        start="2026-03-02T09:00")
    # shorter turns that name Caroline too, newer (ties go to the newest), in other talks
    others = add(mem, ["Caroline: Bus was late.", "Caroline: See you soon!"],
                 start="2026-03-04T09:00", step_min=120)
    found = memory_find(mem.conn, "What career would Caroline pursue?", types=["event"])
    hits = {h["id"]: h for h in found["hits"]}
    assert hits[answer]["context"] == [said] and aside in hits
    assert all(ids_of(found).index(answer) < ids_of(found).index(o) for o in others)


def test_a_long_turn_with_the_rarest_word_outranks_short_turns_with_a_common_one(
    mem: Memory
) -> None:
    add(mem, FILLER * 12, start="2026-02-01T08:00", step_min=60)
    add(mem, ["Tim: We should visit the lake some weekend.", "Tim: Did you visit your aunt?",
              "Tim: Visit soon!"], start="2026-03-05T08:00", step_min=60)
    short = add(mem, ["Let us visit grandma.", "Visit the dentist.", "We visit often."],
                start="2026-03-06T08:00", step_min=60)
    long = add(mem, [
        "Tim: Last Friday I finally took the early train into the city with my cousin, we "
        "walked along the river for an hour, had coffee in a tiny place near the old bridge, "
        "and then spent the whole afternoon at the maritime museum looking at ship models and "
        "old maps until they closed the doors at six."], start="2026-03-07T08:00")[0]
    # an event is a turn: its length is what it says, not repetition, and is discounted less
    ranked = ids_of(memory_find(mem.conn, "Which museum did Tim visit?", types=["event"]))
    assert all(ranked.index(long) < ranked.index(s) for s in short[1:])

def test_a_chinese_name_said_whole_outranks_its_characters_said_apart(mem: Memory) -> None:
    # both events hold the bigrams 张小 and 小明 once; only the older and longer one says the
    # name (bigrams alone would rank the shorter, newer one first)
    whole = add(mem, ["昨天张小明来找我聊天，聊了很久"], start="2026-03-01T08:00")[0]
    apart = add(mem, ["张小红和李小明去了公园"], start="2026-03-02T08:00")[0]
    add(mem, FILLER, start="2026-03-03T08:00")
    hits = ids_of(memory_find(mem.conn, "张小明", types=["event"]))
    assert hits[:2] == [whole, apart]


# -- dates in the question ----------------------------------------------------------------

def test_a_chinese_date_phrase_ranks_the_event_of_that_day_first(mem: Memory) -> None:
    may1 = add(mem, ["我今天买了一件蓝色的连衣裙"], start="2026-05-01T20:00")[0]
    may2 = add(mem, ["我今天买了一件红色的连衣裙"], start="2026-05-02T20:00")[0]
    add(mem, ["我今天买了一件白色的连衣裙"], start="2026-05-03T20:00")
    assert ids_of(memory_find(mem.conn, "在5月2号我买了一件连衣裙，它的颜色是？"))[0] == may2
    assert ids_of(memory_find(mem.conn, "5月1日买的连衣裙是什么颜色"))[0] == may1


def test_an_english_date_finds_the_event_in_that_window_without_a_matching_word(
    mem: Memory
) -> None:
    add(mem, FILLER, start="2026-03-01T08:00")
    that_day = add(mem, ["Long day at the harbour, painted the boat blue."],
                   start="2026-04-10T18:00")[0]
    add(mem, FILLER, start="2026-04-12T08:00")
    answer = memory_find(mem.conn, "What did I do on April 10, 2026?", types=["event"])
    assert ids_of(answer) == [that_day]
    assert "on 2026-04-10" in answer["hits"][0]["why"]


@pytest.mark.parametrize("text, window", [
    ("在5月6号，我和你分享了一些书籍", DateWindow(None, 5, 6)),
    ("2023年3月我们去了哪里", DateWindow(2023, 3, None)),
    ("What did Gina find on 1 February, 2023?", DateWindow(2023, 2, 1)),
    ("What painting did she show on October 13, 2023?", DateWindow(2023, 10, 13)),
    ("What did John attend in March 2023?", DateWindow(2023, 3, None)),
    ("When did Melanie go camping in June?", DateWindow(None, 6, None)),
    ("notes from 2024-07-09", DateWindow(2024, 7, 9)),
])
def test_date_phrases_read_as_windows(text: str, window: DateWindow) -> None:
    assert date_windows(text) == [window]


@pytest.mark.parametrize("text", ["I may come later", "2月30号", "in 2023", "13月1号"])
def test_no_window_from_words_that_are_not_dates(text: str) -> None:
    assert date_windows(text) == []


# -- candidates ---------------------------------------------------------------------------

def test_a_two_letter_term_counts_beside_other_terms(mem: Memory) -> None:
    add(mem, FILLER)
    er = add(mem, ["We spent the whole night in the ER with dad."])[0]
    add(mem, ["Remember to pay the visit fee."])
    assert er in ids_of(memory_find(mem.conn, "ER visit", types=["event"]))


def test_a_word_absent_from_the_vocabulary_finds_longer_words_it_starts(mem: Memory) -> None:
    add(mem, FILLER)
    customized = add(mem, ["I customized the dashboard colours yesterday."])[0]
    answer = memory_find(mem.conn, "could you help me customize something for the team please",
                         types=["event"])
    assert ids_of(answer)[0] == customized


def test_inflections_of_an_english_word_match(mem: Memory) -> None:
    add(mem, FILLER)
    country, meeting = add(mem, ["The country we liked most was Portugal.",
                                 "The meetings with the landlord went fine."], step_min=60)
    answer = memory_find(mem.conn, "tell me all the countries from that long trip",
                         types=["event"])
    assert ids_of(answer)[0] == country and "countries* (country)" in answer["hits"][0]["why"]
    answer = memory_find(mem.conn, "how did that meeting go, tell me everything",
                         types=["event"])
    assert ids_of(answer)[0] == meeting
    assert stem("countries") == stem("country") and stem("painters") != stem("paint")



def test_a_short_word_is_no_inflection_of_a_longer_one(mem: Memory) -> None:
    add(mem, FILLER)
    tim, time = add(mem, ["Tim: see you at the lake.", "What a time we had at the lake."],
                    step_min=60)
    # "time" and "times" share the key "tim", which the name "Tim" must not join
    assert ids_of(memory_find(mem.conn, "time", types=["event"])) == [time]

# -- the unindexed tail -------------------------------------------------------------------

def test_a_just_ingested_event_ranks_as_it_will_once_indexed(mem: Memory) -> None:
    add(mem, FILLER)
    fresh = add(mem, ["Remember: the countries on the list are Peru and Chile.",
                      "And the train tickets are booked for June."], sync=False)
    query = "which country is on the list for the train trip"
    before = memory_find(mem.conn, query, types=["event"])
    assert before["unindexed_events"] == 2 and fresh[0] in ids_of(before)
    with write(mem.conn):
        sync_index(mem.conn)
    after = memory_find(mem.conn, query, types=["event"])
    assert ids_of(after) == ids_of(before) and "unindexed_events" not in after
