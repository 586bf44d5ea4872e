"""Recall in Chinese: every content character of a longer run is a query term too (beside the
run's bigrams), weighed by its idf, so a turn that shares only characters with the query is
found; English queries rank exactly as before."""

from __future__ import annotations

import pytest
from memvault import Memory
from memvault.recall import rank, terms
from memvault.recall.query import memory_find
from memvault.recall.rank import Stats, char_docs
from memvault.recall.terms import parse_query, rarest_chars, without_run_chars
from memvault.timeline.events import NewEvent


def add(mem: Memory, texts: list[str]) -> list[int]:
    """Events a day apart (no two are turns of one conversation), indexed."""
    return mem.append_events([NewEvent(t, occurred_at=f"2026-03-{i + 1:02d}T10:00:00+08:00")
                              for i, t in enumerate(texts)])


OTHERS = ["今天吃了一碗牛肉面，味道不错。", "周末去图书馆借了两本书。",
          "下午和同事开会讨论新项目。", "晚上看了一部电影，挺好看的。"]


def test_a_query_sharing_only_characters_finds_its_event(
        mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = add(mem, [*OTHERS, "我的腿有点疼，跑步的时候特别明显。"])
    query = "腿疼怎么办"  # bigrams 腿疼 疼怎 么办: none is in the turn; 腿 and 疼 are
    parsed = parse_query(query)
    assert {"腿", "疼"} <= {t.text for t in parsed.terms if t.kind == "cjk1" and t.in_run}
    assert "怎" not in {t.text for t in parsed.terms}  # a function character is no term
    hits = memory_find(mem.conn, query, types=["event"])["hits"]
    assert hits and hits[0]["id"] == ids[4]
    assert {"腿", "疼"} <= set(hits[0]["why"])
    monkeypatch.setattr(terms, "CJK_CHAR_TERMS", False)  # before: bigrams only, nothing found
    assert memory_find(mem.conn, query, types=["event"])["hits"] == []


def test_a_turn_with_the_bigram_still_ranks_above_one_with_its_characters(mem: Memory) -> None:
    ids = add(mem, [*OTHERS, "我的腿有点疼。", "跑完步腿疼得厉害。"])
    hits = memory_find(mem.conn, "腿疼怎么办", types=["event"])["hits"]
    assert [h["id"] for h in hits[:2]] == [ids[5], ids[4]]


def test_english_ranking_and_ties_are_unchanged(mem: Memory,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    add(mem, ["Dana moved to Lisbon last spring.", "Dana loves Lisbon in the spring.",
              "Lisbon is where Dana lives now.", "We talked about Porto and Dana.",
              "The weather in Lisbon was lovely."])
    queries = ["Where did Dana move?", "Lisbon", "Dana Lisbon spring", "Dana in Lisbon?"]
    on = [memory_find(mem.conn, q)["hits"] for q in queries]
    monkeypatch.setattr(terms, "CJK_CHAR_TERMS", False)
    off = [memory_find(mem.conn, q)["hits"] for q in queries]
    assert [[(h["id"], h["score"]) for h in hits] for hits in on] == [
        [(h["id"], h["score"]) for h in hits] for hits in off]
    assert not any(t.in_run for t in parse_query("Dana moved to Lisbon 我").terms)


def test_char_docs_counts_as_a_lone_character_lookup_does(mem: Memory) -> None:
    add(mem, [*OTHERS, "我的腿有点疼。", "跑完步腿疼得厉害。", "腿"])
    counted = char_docs(mem.conn, ["腿", "疼", "鲸"])
    for char in ("腿", "疼", "鲸"):
        term = parse_query(char).terms[0]  # a lone character: the per-term vocab lookup
        _, df, _ = rank._lookup_vocab(mem.conn, "recall_events_fts", term, Stats(100, 10.0))
        assert counted[char] == df
    assert counted == {"腿": 3.0, "疼": 2.0, "鲸": 0.0}


def test_a_query_keeps_its_rarest_run_characters_in_query_order() -> None:
    query = parse_query("甲乙丙丁戊己庚辛")
    df = {c: float(i + 1) for i, c in enumerate("甲乙丙丁戊己庚辛")} | {"乙": 0.0, "辛": 0.5}
    kept = rarest_chars(query, df, keep=3)
    assert [t.text for t in kept.terms if t.in_run] == ["甲", "丙", "辛"]  # 乙 is not held
    assert [t for t in kept.terms if not t.in_run] == [t for t in query.terms if not t.in_run]
    assert rarest_chars(query, df, keep=100) == query


def test_objects_are_searched_without_run_characters() -> None:
    query = parse_query("腿疼怎么办 岁")
    objects = without_run_chars(query)
    assert not any(t.in_run for t in objects.terms)
    assert ("岁", "cjk1") in {(t.text, t.kind) for t in objects.terms}  # a lone one stays
    assert without_run_chars(parse_query("Dana")) == parse_query("Dana")
