"""Recall on any question: a long question keeps its most informative terms whatever their
position, and every term weighs by its informativeness, not by the punctuation around it."""

from __future__ import annotations

import pytest
from memvault import Memory
from memvault.recall import schema
from memvault.recall.query import memory_find
from memvault.recall.terms import (
    MAX_TERMS,
    keep_informative,
    parse_query,
    question_parts,
)
from memvault.timeline.events import NewEvent

SMALL_TALK = ("哇，今天天气真好，阳光明媚的，我刚从公园散步回来，心情特别愉快，顺便买了一杯咖啡。"
              "楼下新开了一家面包店，闻着特别香，我忍不住买了两个菠萝包。我实际想问的是：")


def add(mem: Memory, texts: list[str]) -> list[int]:
    """Events a day apart (no two are turns of one conversation), indexed."""
    return mem.append_events([NewEvent(t, occurred_at=f"2026-03-{i + 1:02d}T10:00:00+08:00")
                              for i, t in enumerate(texts)])


def test_a_question_after_small_talk_keeps_its_question(mem: Memory) -> None:
    talk = ["今天天气真好，我去公园散步了，心情特别愉快。", "楼下的面包店今天开张，菠萝包特别香。",
            "早上喝了一杯咖啡，阳光明媚。"]
    ids = add(mem, [*talk, *talk, "我哥的手机号是13800001111，记一下。", *talk])
    query = SMALL_TALK + "我哥的手机号是多少？"
    assert len(parse_query(query).terms) > MAX_TERMS
    answer = memory_find(mem.conn, query, types=["event"])
    assert ids[6] in [h["id"] for h in answer["hits"]]  # the first 48 terms: not found
    assert "手机" in answer["terms"] and "rarest" in answer["notice"]


def test_the_rarest_terms_are_kept_in_query_order() -> None:
    query = parse_query(" ".join(f"word{i:02d}" for i in range(MAX_TERMS + 5)))
    rare, absent = f"word{MAX_TERMS + 2}", f"word{MAX_TERMS - 1}"
    df = {t.text: 10.0 for t in query.terms} | {rare: 1.0, absent: 0.0}
    kept = keep_informative(query, df)
    texts = [t.text for t in kept.terms]
    assert len(texts) == MAX_TERMS and rare in texts and absent not in texts
    assert texts == sorted(texts)  # query order
    assert keep_informative(parse_query("a short question"), {}) == parse_query("a short question")


def test_a_question_after_small_talk_still_finds_its_answer(mem: Memory) -> None:
    ids = add(mem, ["The weather was lovely and I had coffee on the balcony this morning.",
                    "Dana moved to Lisbon last spring.",
                    "Coffee on the balcony is the best part of a lovely morning."])
    query = ("Good morning! The weather is lovely and I just had my coffee on the balcony. "
             "Where did Dana move?")
    answer = memory_find(mem.conn, query, types=["event"])
    assert ids[1] in [h["id"] for h in answer["hits"]][:3]


def test_the_content_of_a_statement_before_a_small_question_is_found(mem: Memory) -> None:
    # a dialogue's last turns: the content is in the statement, the question is small talk
    ids = add(mem, ["I tried bouldering at the climbing gym downtown and loved it.",
                    "Have you ever tried it? It is fun.",
                    "Do you think so? Really fun, right?"])
    query = ("Our chemistry class was so dull today, I nearly fell asleep at the climbing wall "
             "talk. Have you ever tried it?")
    answer = memory_find(mem.conn, query, types=["event"])
    assert answer["hits"][0]["id"] == ids[0]


def test_a_rare_term_outside_the_question_outweighs_a_common_one_inside(mem: Memory) -> None:
    # the request is a statement, the "?" a one-word aside: the request's rare terms lead
    ids = add(mem, ["The park was busy this morning.", "We walked in the park after lunch.",
                    "My brother's phone number is 13800001111.", "The park has a new pond."])
    answer = memory_find(mem.conn, "Really, the park? I need my brother's phone number.",
                         types=["event"])
    assert answer["hits"][0]["id"] == ids[2]


def test_a_lone_cjk_character_matches_inside_the_index_bigrams(mem: Memory) -> None:
    ids = add(mem, ["小王今年四十五岁了，身体还很好。", "今天吃了一碗牛肉面，味道不错。",
                    "我妈妈下个月就满六十岁啦。", "周末去图书馆借了两本书。"])
    query = "我认识的人里有几个超过40岁？"
    parsed = parse_query(query)
    assert ("岁", "cjk1") in {(t.text, t.kind) for t in parsed.terms}  # the query side
    tokens = {r[0] for r in mem.conn.execute("SELECT term FROM recall_vocab")}
    assert "岁了" in tokens and "岁啦" in tokens  # the index side: 岁 only inside bigrams
    found = [h["id"] for h in memory_find(mem.conn, query, types=["event"])["hits"]]
    assert set(found[:2]) == {ids[0], ids[2]}


@pytest.mark.parametrize(("text", "query"), [
    ("Η Αθήνα είναι η πόλη της Πόλης μας", "πολης"),  # Greek: tonos
    ("ΤΟ ΣΠΙΤΙ ΤΗΣ ΟΙΚΟΓΕΝΕΙΑΣ", "οικογένειας"),  # Greek: final sigma, capitals
    ("Мы купили ёлку в субботу", "елку"),  # Cyrillic: diaeresis
    ("Spotkanie w Łodzi z Zoë i François", "Zoe francois"),  # Latin diacritics
    ("Chúng tôi đi Hà Nội vào mùa xuân", "ha noi"),  # Vietnamese: stacked marks
])
def test_a_query_folds_letters_as_the_index_does(mem: Memory, text: str, query: str) -> None:
    ids = add(mem, [text, "Something else entirely, said on another day."])
    assert [h["id"] for h in memory_find(mem.conn, query, types=["event"])["hits"]] == [ids[0]]
    accented = memory_find(mem.conn, text.split()[-1], types=["event"])["hits"]
    assert [h["id"] for h in accented] == [ids[0]]


def test_m016_rebuilds_the_index_only_for_a_home_with_text_it_folds_anew(
        mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(schema, "rebuild_events_index", lambda conn, progress: calls.append(1))
    add(mem, ["Plain English and 中文 only, café included."])
    schema.m017_recall_fold_every_script(mem.conn)
    assert calls == []
    add(mem, ["Η Αθήνα"])
    schema.m017_recall_fold_every_script(mem.conn)
    assert calls == [1]


@pytest.mark.parametrize(("text", "parts"), [
    ("我哥的手机号是多少？另外，那个读书会在哪里办？",
     ["我哥的手机号是多少？", "另外，那个读书会在哪里办？"]),
    ("What is Dana's job, and when did Melanie paint a sunrise?",
     ["What is Dana's job", "and when did Melanie paint a sunrise?"]),
    ("Where did Dana move? Also, what is her dog called?",
     ["Where did Dana move?", "Also, what is her dog called?"]),
    ("When did Melanie paint a sunrise?", ["When did Melanie paint a sunrise?"]),
    ("Can I ask you something? I forgot. Where did Dana move?",  # the first part does not ask
     ["Can I ask you something? I forgot. Where did Dana move?"]),
    ("Salt and pepper, and also vinegar", ["Salt and pepper, and also vinegar"]),
])
def test_a_query_is_cut_into_the_questions_it_asks(text: str, parts: list[str]) -> None:
    assert question_parts(text) == parts


def test_each_question_of_a_query_gets_its_share_of_the_hits(mem: Memory) -> None:
    phone = ["我哥的手机号是多少来着？新的手机号是13800001111。", "我哥的手机号是多少，我也忘了。",
             "我哥的旧手机号是13900002222，多少人打过。", "问问我哥的手机号是多少。"]
    ids = add(mem, [*phone, "读书会办在图书馆。"])
    query = "我哥的手机号是多少？另外，那个读书会在哪里办？"
    answer = memory_find(mem.conn, query, types=["event"], limit=2)
    found = [h["id"] for h in answer["hits"]]
    assert ids[4] in found and found[0] in ids[:4]
    assert answer["parts"] == ["我哥的手机号是多少？", "另外，那个读书会在哪里办？"]
