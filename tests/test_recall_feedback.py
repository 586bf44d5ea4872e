"""Pseudo-relevance feedback around memory_find (bench/recall_feedback.py: measured, not adopted,
so the product does not hold it): switched on, a question's best event hits lend it their words,
which find the turns that share none of the question's; feedback never strays to what the hits
have only in common with every turn, never feeds back a secret, works on Chinese bigrams, leaves
name lookups alone and ranks a turn the same before and after the index catches up."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from memvault import Memory
from memvault.recall.index import sync_index
from memvault.recall.query import memory_find
from memvault.store.connection import write
from memvault.timeline.events import NewEvent


def _load_feedback() -> Any:
    path = Path(__file__).resolve().parent.parent / "bench" / "recall_feedback.py"
    spec = importlib.util.spec_from_file_location("bench_recall_feedback", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_recall_feedback", module)
    spec.loader.exec_module(module)
    return module


feedback = _load_feedback()

# Turns on other topics, each its own conversation (hours apart): they set the statistics and
# hold none of the feedback terms the tests expect.
TOPICS = [
    "The weather was grey and windy all afternoon.",
    "We ordered noodles for dinner and watched a film.",
    "My sister called to talk about her new apartment.",
    "The train was late again this morning.",
    "I finished reading the novel about the lighthouse keeper.",
    "The garden needs water before the heat comes back.",
    "Our landlord fixed the boiler at last.",
    "The museum had a new exhibit on ancient maps.",
    "I lost my umbrella on the bus yesterday.",
    "The bakery on the corner sells rye bread now.",
    "We painted the fence green over the weekend.",
    "The dentist moved my appointment to Thursday.",
]
CN_TOPICS = [
    "今天下雨了，路上很堵。", "周末去超市买了水果和牛奶。", "妈妈打电话说家里一切都好。",
    "公司楼下新开了一家面馆。", "昨天看了一部关于宇宙的纪录片。", "邻居家的猫又跑到阳台上了。",
    "这周的会议改到星期四下午。", "图书馆借的书下周要还。", "地铁站修好了新的电梯。",
    "晚饭做了番茄炒蛋和米饭。", "朋友推荐了一家咖啡店。", "下午去公园散步拍了照片。",
]


@pytest.fixture
def on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Feedback switched on around memory_find (the product has none)."""
    for target, name, value in feedback.ON:
        monkeypatch.setattr(target, name, value)


def far_from(mem: Memory, texts: list[str], sync: bool = True) -> list[int]:
    """`texts` added after three unrelated turns, so no hit reads them as its neighbours."""
    add_apart(mem, TOPICS[:3], day=6)
    return add_apart(mem, texts, day=7, sync=sync)


def add_apart(mem: Memory, texts: list[str], day: int = 1, sync: bool = True) -> list[int]:
    """Each text its own conversation: two hours apart on 2026-03-`day`, from midnight."""
    events = [NewEvent(t, occurred_at=f"2026-03-{day:02d}T{2 * i:02d}:00:00+08:00")
              for i, t in enumerate(texts)]
    ids = mem.append_events(events, index=sync)
    if sync:
        with write(mem.conn):
            sync_index(mem.conn)
    return ids


def background(mem: Memory, topics: list[str]) -> None:
    """Enough unrelated turns that a term two events hold is rare."""
    for day in range(1, 4):
        add_apart(mem, topics, day=day)


def ids_of(answer: dict) -> list[object]:
    return [h["id"] for h in answer["hits"]]


CELLO = [
    "Jon: I practise the cello every evening, mostly scales and bowing drills.",
    "Jon: Practise makes the evening go fast; the cello scales first.",
]
CELLO_ONLY = "Teacher: Your bowing drills and scales on the cello are much steadier."
QUESTION = "What does Jon practise every evening?"


def test_a_turn_sharing_no_word_with_the_question_is_found_by_the_top_hits_words(
    mem: Memory, on: None,
) -> None:
    background(mem, TOPICS)
    hits = add_apart(mem, CELLO, day=5)
    target = far_from(mem, [CELLO_ONLY])[0]
    answer = memory_find(mem.conn, QUESTION, types=["event"])
    found = {h["id"]: h for h in answer["hits"]}
    assert set(ids_of(answer)[:2]) == set(hits) and target in found
    assert any(w.startswith("feedback: ") for w in found[target]["why"])
    assert "cello" in " ".join(found[target]["why"])


def test_as_shipped_find_gives_no_feedback_and_that_turn_is_out_of_reach(mem: Memory) -> None:
    background(mem, TOPICS)
    add_apart(mem, CELLO, day=5)
    target = far_from(mem, [CELLO_ONLY])[0]
    answer = memory_find(mem.conn, QUESTION, types=["event"])
    assert answer["hits"] and target not in ids_of(answer)
    assert not any(w.startswith("feedback: ") for h in answer["hits"] for w in h["why"])


def test_re_ranking_only_what_was_read_does_not_reach_that_turn(
    mem: Memory, on: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the turn is no neighbour of a hit either (those are read, so re-ranked, anyway)
    target = add_apart(mem, [CELLO_ONLY], day=1)[0]
    background(mem, TOPICS)
    hits = add_apart(mem, CELLO, day=5)
    monkeypatch.setattr(feedback, "SECOND_PASS", False)
    answer = memory_find(mem.conn, QUESTION, types=["event"])
    assert set(ids_of(answer)[:2]) == set(hits) and target not in ids_of(answer)


def test_feedback_does_not_drift_to_what_every_turn_shares(mem: Memory, on: None) -> None:
    # Mira speaks in a third of the turns: her name is in every top hit, yet it says nothing
    # of the cello, so her other turns are not lifted and "mira" is never a feedback term.
    background(mem, TOPICS)
    mira = add_apart(mem, [f"Mira: {t}" for t in TOPICS], day=4)
    hits = add_apart(mem, [t.replace("Jon:", "Mira:") for t in CELLO], day=5)
    answer = memory_find(mem.conn, "What is practised every evening?", types=["event"])
    assert set(ids_of(answer)[:2]) == set(hits)
    assert not set(mira) & set(ids_of(answer))
    reasons = [w for h in answer["hits"] for w in h["why"]]
    assert not any(w in ("feedback: mira", "feedback: every", "feedback: evening")
                   for w in reasons)


def test_a_name_or_keyword_lookup_gets_no_feedback(mem: Memory, on: None) -> None:
    background(mem, TOPICS)
    add_apart(mem, CELLO, day=5)
    target = far_from(mem, [CELLO_ONLY])[0]
    answer = memory_find(mem.conn, "Jon practise", types=["event"])
    assert target not in ids_of(answer)
    assert not any(w.startswith("feedback: ") for h in answer["hits"] for w in h["why"])


SECRET = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def test_a_secret_in_the_top_hits_is_never_a_feedback_term(mem: Memory, on: None) -> None:
    background(mem, TOPICS)
    add_apart(mem, [f"Jon: I practise every evening; the studio door token is {SECRET}",
                    f"Jon: Practise every evening, the door token {SECRET} still works"],
              day=5)
    elsewhere = far_from(mem, [f"Note: {SECRET}"])[0]
    answer = memory_find(mem.conn, QUESTION, types=["event"])
    assert answer["hits"] and elsewhere not in ids_of(answer)
    shown = json.dumps(answer, ensure_ascii=False).lower()
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in shown
    assert not any("secret" in w or "ghp" in w for h in answer["hits"] for w in h["why"])


def test_chinese_feedback_terms_are_the_index_bigrams(mem: Memory, on: None) -> None:
    background(mem, CN_TOPICS)
    hits = add_apart(mem, ["小明：我每天晚上练习大提琴，先拉音阶。",
                           "小明：晚上练习大提琴的时候，音阶总是最难。"], day=5)
    add_apart(mem, CN_TOPICS[:3], day=6)
    target = add_apart(mem, ["老师：你的大提琴音阶进步很大。"], day=7)[0]
    answer = memory_find(mem.conn, "小明每天晚上练习什么乐器", types=["event"])
    found = {h["id"]: h for h in answer["hits"]}
    assert set(ids_of(answer)[:2]) == set(hits)
    assert target in found
    assert {w for w in found[target]["why"] if w.startswith("feedback: ")} <= {
        "feedback: 大提", "feedback: 提琴", "feedback: 音阶"}


def test_a_turn_found_by_feedback_ranks_the_same_before_and_after_indexing(
    mem: Memory, on: None,
) -> None:
    background(mem, TOPICS)
    add_apart(mem, CELLO, day=5)
    target = far_from(mem, [CELLO_ONLY], sync=False)[0]
    before = memory_find(mem.conn, QUESTION, types=["event"])
    assert before["unindexed_events"] == 1 and target in ids_of(before)
    with write(mem.conn):
        sync_index(mem.conn)
    after = memory_find(mem.conn, QUESTION, types=["event"])
    assert ids_of(after) == ids_of(before) and "unindexed_events" not in after
    assert [h["score"] for h in after["hits"]] == [h["score"] for h in before["hits"]]
