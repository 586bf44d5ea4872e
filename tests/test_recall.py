"""memory_find / memory_read / memory_evidence: Chinese names of 2-4 characters and phrases inside
sentences, English words and prefixes without stemming, aliases, cues, project scope, merged
objects, paging to the end, hostile queries, and an index that may lag the tables."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import add_evidence
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memvault import ManualClock, Memory
from memvault.base.errors import InputError, NotFound
from memvault.home.migrations import MIGRATIONS, apply_migrations, open_home_db
from memvault.objects.records import ObjectRecord, add_relation, save_object
from memvault.recall.index import sync_index
from memvault.recall.query import EVIDENCE_PAGE_CHARS, memory_evidence, memory_find, memory_read
from memvault.recall.terms import MAX_QUERY_CHARS, parse_query
from memvault.store.connection import write
from memvault.timeline.events import NewEvent

EVENTS = [
    "早上好！我是秦浩宇（大家叫我浩宇，英文名 Haoyu，同事们常叫我 qhy）。",
    "Remember that Haoyu prefers tea over coffee. 尤其是下午，别再给我推荐咖啡店了。",
    "我和张伟昨天去了绿禾公园，看到了一朵开得特别美的樱花，还有一只松鼠",
    "明天下午三点和张伟开会，讨论欧阳娜娜的报告",
    "I painted a sunrise last year; painting relaxes me.",
    "The concatenate function joins strings.",
    "We talked about the category of cats.",
    "司马相如的文章写得很好",
    "Search syntax: \"AND\" OR NOT * col:value NEAR(a b) -x ^y",
    "Meeting notes for the Q3 roadmap: ship recall first.",
]


def obj(object_id: str, name: str, **fields: object) -> ObjectRecord:
    return ObjectRecord(id=object_id, type=object_id.split(":")[0], name=name, **fields)  # type: ignore[arg-type]


@pytest.fixture
def filled(mem: Memory, clock: ManualClock) -> dict[str, int]:
    """Events and objects, indexed; returns event ids by their position in EVENTS."""
    ids = mem.append_events([NewEvent(t, occurred_at=f"2026-10-05T09:{i:02d}:00+08:00",
                                      meta={"n": i}) for i, t in enumerate(EVENTS)])
    with write(mem.conn):
        save_object(mem.conn, obj("person:qhy", "秦浩宇", aliases=["浩宇", "Haoyu", "qhy"],
                                  summary="用户本人，喜欢喝茶", cues=["饮品偏好", "who drinks tea"],
                                  body="身份：用户。偏好：茶，不喝咖啡。"), clock.now())
        save_object(mem.conn, obj("person:zhang-wei", "张伟", summary="同事，负责 roadmap"),
                    clock.now())
        save_object(mem.conn, obj("person:ouyang", "欧阳娜娜", summary="设计师"), clock.now())
        save_object(mem.conn, obj("person:sima", "司马相如", summary="作家"), clock.now())
        save_object(mem.conn, obj("project:memvault", "memvault", aliases=["记忆库"],
                                  summary="本地对象记忆"), clock.now())
        save_object(mem.conn, obj("knowledge:tea", "喝茶的时间", summary="下午喝茶最好",
                                  body="Long body. " * 300 + "Oolong 乌龙茶 is the favourite."),
                    clock.now())
        add_relation(mem.conn, "person:zhang-wei", "member_of", "project:memvault", clock.now())
        add_evidence(mem.conn, "person:zhang-wei", ids[3], 0, 9, clock.now())
        sync_index(mem.conn)
    return {str(i): event_id for i, event_id in enumerate(ids)}


def ids_of(answer: dict) -> list[object]:
    return [h["id"] for h in answer["hits"]]


# -- Chinese --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, object_id", [
    ("张伟", "person:zhang-wei"), ("秦浩宇", "person:qhy"), ("欧阳娜娜", "person:ouyang"),
    ("司马相如", "person:sima"),
])
def test_chinese_names_of_two_to_four_characters_find_the_person_first(
    mem: Memory, filled: dict[str, int], name: str, object_id: str
) -> None:
    answer = memory_find(mem.conn, name)
    assert answer["hits"][0]["id"] == object_id
    assert answer["hits"][0]["kind"] == "object"
    assert any(w.startswith("name:") for w in answer["hits"][0]["why"])


def test_a_two_character_name_finds_every_event_that_mentions_it(
    mem: Memory, filled: dict[str, int]
) -> None:
    hits = memory_find(mem.conn, "张伟", types=["event"])["hits"]
    assert {h["id"] for h in hits} == {filled["2"], filled["3"]}
    assert all(h["kind"] == "event" and "张伟" in h["snippet"] for h in hits)


@pytest.mark.parametrize("phrase, event", [
    ("绿禾公园", "2"), ("樱花", "2"), ("推荐咖啡店", "1"), ("欧阳娜娜的报告", "3"), ("松鼠", "2"),
])
def test_a_chinese_phrase_inside_a_longer_sentence_is_found_first(
    mem: Memory, filled: dict[str, int], phrase: str, event: str
) -> None:
    assert memory_find(mem.conn, phrase, types=["event"])["hits"][0]["id"] == filled[event]


def test_a_chinese_question_ranks_the_sentence_that_answers_it_first(
    mem: Memory, filled: dict[str, int]
) -> None:
    answer = memory_find(mem.conn, "我在绿禾公园看到了什么景色？", types=["event"])
    assert answer["hits"][0]["id"] == filled["2"]


def test_a_single_chinese_character_is_a_query(mem: Memory, filled: dict[str, int]) -> None:
    assert filled["7"] in ids_of(memory_find(mem.conn, "司", types=["event"]))


def test_mixed_chinese_and_english_match_both_parts(mem: Memory, filled: dict[str, int]) -> None:
    answer = memory_find(mem.conn, "Haoyu 咖啡店", types=["event"])
    assert answer["hits"][0]["id"] == filled["1"]  # the one event holding both
    assert set(answer["hits"][0]["why"]) >= {"haoyu", "咖啡", "啡店"}
    assert memory_find(mem.conn, "roadmap张伟")["hits"][0]["id"] == "person:zhang-wei"


def test_fullwidth_and_case_variants_match(mem: Memory, filled: dict[str, int]) -> None:
    assert memory_find(mem.conn, "ＨＡＯＹＵ")["hits"][0]["id"] == "person:qhy"
    assert memory_find(mem.conn, "QHY")["hits"][0]["id"] == "person:qhy"


# -- English ----------------------------------------------------------------------------------

def test_english_matches_words_and_prefixes_not_substrings(
    mem: Memory, filled: dict[str, int]
) -> None:
    assert ids_of(memory_find(mem.conn, "cat", types=["event"])) == [filled["6"]]  # cats
    assert filled["5"] not in ids_of(memory_find(mem.conn, "cat"))  # not con-cat-enate
    hao = memory_find(mem.conn, "Hao")
    assert hao["hits"][0]["id"] == "person:qhy"
    assert any("haoyu" in w for w in hao["hits"][0]["why"])


def test_no_stemming_but_a_longer_word_counts_less(mem: Memory, filled: dict[str, int]) -> None:
    answer = memory_find(mem.conn, "what did I paint last year", types=["event"])
    assert answer["hits"][0]["id"] == filled["4"]
    assert any(w.startswith("paint*") for w in answer["hits"][0]["why"])
    assert memory_find(mem.conn, "painters", types=["event"])["hits"] == []  # not stemmed


def test_aliases_and_cues_find_the_object(mem: Memory, filled: dict[str, int]) -> None:
    alias = memory_find(mem.conn, "qhy")["hits"][0]
    assert alias["id"] == "person:qhy" and "alias: qhy" in alias["why"]
    cue = memory_find(mem.conn, "饮品偏好")["hits"][0]
    assert cue["id"] == "person:qhy" and any(w.startswith("cue:") for w in cue["why"])
    assert memory_find(mem.conn, "who drinks tea")["hits"][0]["id"] == "person:qhy"


def test_a_term_deep_in_a_long_body_is_found_and_shown(mem: Memory, filled: dict[str, int]) -> None:
    hit = memory_find(mem.conn, "乌龙茶")["hits"][0]
    assert hit["id"] == "knowledge:tea"
    assert "乌龙茶" in hit["snippet"] and len(hit["snippet"]) <= 162


# -- hits, scope, types ---------------------------------------------------------------------

def test_event_hits_carry_time_meta_and_a_score(mem: Memory, filled: dict[str, int]) -> None:
    hit = memory_find(mem.conn, "松鼠")["hits"][0]
    assert hit["kind"] == "event" and hit["id"] == filled["2"]
    assert hit["occurred_at"] == "2026-10-05T09:02:00+08:00"
    assert hit["meta"] == {"n": 2}
    assert hit["source"] == "user" and hit["event_kind"] == "message"
    assert 0 < hit["score"] <= 1.5


def test_types_narrow_and_event_is_a_type(mem: Memory, filled: dict[str, int]) -> None:
    assert {h["kind"] for h in memory_find(mem.conn, "张伟", types=["person"])["hits"]} == {
        "object"}
    assert {h["kind"] for h in memory_find(mem.conn, "张伟", types=["event"])["hits"]} == {"event"}
    assert memory_find(mem.conn, "张伟", types=["knowledge"])["hits"] == []
    assert ids_of(memory_find(mem.conn, "张伟", include_events=False)) == ["person:zhang-wei"]
    with pytest.raises(InputError):
        memory_find(mem.conn, "张伟", types=["people"])
    with pytest.raises(InputError):
        memory_find(mem.conn, "张伟", limit=0)


def test_a_matching_project_brings_its_direct_members(mem: Memory, filled: dict[str, int]) -> None:
    answer = memory_find(mem.conn, "记忆库")
    assert ids_of(answer)[:2] == ["project:memvault", "person:zhang-wei"]
    assert "member of project:memvault" in answer["hits"][1]["why"]


def test_project_filter_keeps_the_project_its_members_and_their_evidence(
    mem: Memory, filled: dict[str, int]
) -> None:
    assert ids_of(memory_find(mem.conn, "张伟", project="project:memvault")) == [
        "person:zhang-wei", filled["3"]]
    assert memory_find(mem.conn, "浩宇", project="project:memvault")["hits"] == []
    with pytest.raises(InputError):
        memory_find(mem.conn, "张伟", project="person:qhy")
    with pytest.raises(NotFound):
        memory_find(mem.conn, "张伟", project="project:nothing")


# -- merged objects -------------------------------------------------------------------------

@pytest.fixture
def merged(mem: Memory, clock: ManualClock, filled: dict[str, int]) -> None:
    """person:haoyu-old (alias 小宇) merged into person:qhy, with evidence of its own."""
    with write(mem.conn):
        save_object(mem.conn, obj("person:haoyu-old", "浩宇旧档", aliases=["小宇"]), clock.now())
        add_evidence(mem.conn, "person:haoyu-old", filled["0"], 0, 5, clock.now())
        save_object(mem.conn, obj("person:haoyu-old", "浩宇旧档", aliases=["小宇"],
                                  redirect_to="person:qhy", status="archived"), clock.now())


def test_a_merged_object_is_found_as_its_survivor(mem: Memory, merged: None) -> None:
    for query in ("小宇", "浩宇旧档"):
        hit = memory_find(mem.conn, query)["hits"][0]
        assert hit["id"] == "person:qhy"
        assert hit["merged"] == ["person:haoyu-old"]
        assert any(w.startswith("via merged person:haoyu-old") for w in hit["why"])
    assert "person:haoyu-old" not in ids_of(memory_find(mem.conn, "浩宇"))


def test_read_and_evidence_follow_the_redirect(mem: Memory, merged: None) -> None:
    data = memory_read(mem.conn, "person:haoyu-old")
    assert data["object"]["id"] == "person:qhy"
    assert data["redirected_from"] == "person:haoyu-old"
    assert memory_read(mem.conn, "person:qhy")["merged"] == ["person:haoyu-old"]
    ev = memory_evidence(mem.conn, "person:haoyu-old")
    assert ev["id"] == "person:qhy" and ev["merged"] == ["person:haoyu-old"]
    assert [i["text"] for i in ev["items"]] == ["早上好！我"]


# -- paging -----------------------------------------------------------------------------------

def test_read_pages_links_to_the_end(mem: Memory, clock: ManualClock) -> None:
    event = mem.append_event("一条证据")
    with write(mem.conn):
        save_object(mem.conn, obj("person:hub", "中心"), clock.now())
        for i in range(70):
            save_object(mem.conn, obj(f"person:p{i:02d}", f"人{i}"), clock.now())
            add_relation(mem.conn, f"person:p{i:02d}", "knows", "person:hub", clock.now())
        add_evidence(mem.conn, "person:hub", event, 0, 2, clock.now())
    seen, offset = [], 0
    while offset is not None:
        page = memory_read(mem.conn, "person:hub", offset)
        seen += page["links"]
        offset = page["next_offset"]
    assert len(seen) == 71 and seen[-1]["kind"] == "evidence"
    with pytest.raises(InputError):
        memory_read(mem.conn, "person:hub", -1)


def test_evidence_pages_raw_text_to_the_end_in_bounded_pages(
    mem: Memory, clock: ManualClock
) -> None:
    texts = [("证" * 3000) + f"-{i}" for i in range(6)]
    ids = mem.append_events([NewEvent(t) for t in texts])
    with write(mem.conn):
        save_object(mem.conn, obj("knowledge:big", "大证据"), clock.now())
        for event_id, text in zip(ids, texts, strict=True):
            add_evidence(mem.conn, "knowledge:big", event_id, 0, len(text), clock.now())
    pages, offset, text = 0, 0, ""
    while offset is not None:
        page = memory_evidence(mem.conn, "knowledge:big", offset)
        assert sum(len(i["text"]) for i in page["items"]) <= EVIDENCE_PAGE_CHARS
        text += "".join(i["text"] for i in page["items"])
        offset, pages = page["next_offset"], pages + 1
    assert text == "".join(texts) and pages == 3
    assert page["total_chars"] == len(text)
    with pytest.raises(InputError):
        memory_evidence(mem.conn, "knowledge:big", len(text) + 1)


def test_evidence_of_an_event_is_its_text_and_who_cites_it(
    mem: Memory, filled: dict[str, int]
) -> None:
    for ref in (filled["3"], f"event:{filled['3']}", str(filled["3"])):
        data = memory_evidence(mem.conn, ref)
        assert data["kind"] == "event" and data["text"] == EVENTS[3]
        assert data["cited_by"] == [{"object_id": "person:zhang-wei", "start_char": 0,
                                     "end_char": 9}]
    assert memory_read(mem.conn, filled["3"])["text"] == EVENTS[3]
    with pytest.raises(NotFound):
        memory_evidence(mem.conn, "event:99999")


# -- hostile and odd queries ------------------------------------------------------------------

@pytest.mark.parametrize("query", ["。。！！", "...", "?!@#$%^&*()", "——", "🙂🙂"])
def test_a_query_of_only_punctuation_is_an_empty_answer(mem: Memory, filled: dict[str, int],
                                                        query: str) -> None:
    answer = memory_find(mem.conn, query)
    assert answer["hits"] == [] and "no searchable words" in answer["notice"]


@pytest.mark.parametrize("query", ["", "   ", "x" * (MAX_QUERY_CHARS + 1), "张" * 10_000, None, 42,
                                   "张伟\ud800"])
def test_an_empty_or_overlong_query_is_a_clear_input_error(mem: Memory, query: object) -> None:
    with pytest.raises(InputError):
        memory_find(mem.conn, query)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", [
    '"AND"', "AND", "OR NOT", "*", "col:value", "NEAR(a b)", '"unbalanced', "a AND b OR c",
    "(((", "-x ^y", "text:张伟", "{text}: 张伟", "haoyu*", "NOT 张伟",
])
def test_fts_syntax_in_a_query_is_plain_text(mem: Memory, filled: dict[str, int],
                                            query: str) -> None:
    answer = memory_find(mem.conn, query)
    assert isinstance(answer["hits"], list)


def test_fts_operators_are_searched_as_words(mem: Memory, filled: dict[str, int]) -> None:
    assert memory_find(mem.conn, '"AND" OR', types=["event"])["hits"][0]["id"] == filled["8"]
    assert memory_find(mem.conn, "col:value NEAR", types=["event"])["hits"][0]["id"] == filled["8"]
    assert filled["2"] in ids_of(memory_find(mem.conn, "NOT 张伟"))


def test_a_query_at_the_length_limit_answers(mem: Memory, filled: dict[str, int]) -> None:
    answer = memory_find(mem.conn, ("喝茶 coffee " * 200)[:MAX_QUERY_CHARS])
    assert answer["hits"]
    long_cjk = memory_find(mem.conn, "的" * 400 + "绿禾公园" + "的" * 400)
    assert filled["2"] in ids_of(long_cjk)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=60) | st.text(alphabet="张伟 AND*:\"()^-{}浩宇。", max_size=30))
def test_any_text_is_an_answer_or_an_input_error(mem: Memory, query: str) -> None:
    try:
        answer = memory_find(mem.conn, query)
    except InputError:
        assert not query.strip()
        return
    assert isinstance(answer["hits"], list)


def test_parse_quotes_every_term() -> None:
    terms = parse_query('a"b AND 张伟 c*').terms
    assert all(t.fts.startswith('"') for t in terms)
    # stopwords a, and dropped; three terms: the run's characters are terms too
    assert [t.text for t in terms] == ["b", "c", "张伟", "张", "伟"]


# -- an index that lags, a migration over existing rows -----------------------------------

def test_events_not_yet_indexed_are_found_and_counted(mem: Memory, filled: dict[str, int]) -> None:
    new = mem.append_events([NewEvent("刚刚说到：张伟的新电话是 12345")], index=False)[0]
    answer = memory_find(mem.conn, "张伟", types=["event"])
    assert new in ids_of(answer) and answer["unindexed_events"] == 1
    with write(mem.conn):
        assert sync_index(mem.conn)["events"] == 1
        assert sync_index(mem.conn) == {"events": 0, "objects": 0}
    after = memory_find(mem.conn, "张伟", types=["event"])
    assert set(ids_of(after)) == set(ids_of(answer)) and "unindexed_events" not in after
    count = mem.conn.execute(
        "SELECT count(*) FROM recall_events_fts WHERE recall_events_fts MATCH '\"张伟\"'"
    ).fetchone()[0]
    assert count == 3  # each event indexed once


def test_a_long_unindexed_tail_is_cut_with_a_notice(
    mem: Memory, filled: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memvault.recall.query.TAIL_SCAN_MAX", 2)
    new = mem.append_events([NewEvent(f"第{i}条：张伟") for i in range(3)], index=False)
    answer = memory_find(mem.conn, "张伟", types=["event"])
    assert answer["unindexed_events"] == 3 and "newest 2" in answer["notice"]
    assert new[0] not in ids_of(answer) and set(new[1:]) <= set(ids_of(answer))


def test_changed_objects_are_scored_from_the_table_before_the_index_catches_up(
    mem: Memory, clock: ManualClock, filled: dict[str, int]
) -> None:
    with write(mem.conn):
        save_object(mem.conn, obj("person:zhang-wei", "张大伟", summary="改名了"), clock.now())
        save_object(mem.conn, obj("person:new", "新同事", aliases=["newbie"]), clock.now())
    for synced in (False, True):
        if synced:
            with write(mem.conn):
                assert sync_index(mem.conn)["objects"] == 2
        assert memory_find(mem.conn, "newbie")["hits"][0]["id"] == "person:new"
        assert memory_find(mem.conn, "张大伟")["hits"][0]["id"] == "person:zhang-wei"
        assert "person:zhang-wei" not in ids_of(memory_find(mem.conn, "负责 roadmap"))


def test_the_migration_indexes_rows_already_there(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    old.execute("BEGIN")
    MIGRATIONS[0](old)
    old.execute("INSERT INTO _migrations VALUES ('m001_initial', 'then')")
    old.execute("COMMIT")
    old.execute("INSERT INTO events (occurred_at, occurred_us, ingested_at, source, kind, text,"
                " chars, est_tokens) VALUES ('2026-01-01T00:00:00+00:00', 0, 'x', 'user',"
                " 'message', '旧的记录：张伟喜欢爬山', 11, 5)")
    old.execute("INSERT INTO objects (id, type, name, aliases, created_at, updated_at) VALUES"
                " ('person:zw', 'person', '张伟', '[\"Zhang Wei\"]', 'x', 'x')")
    apply_migrations(old)
    old.close()
    conn = open_home_db(path, readonly=True)
    answer = memory_find(conn, "张伟")
    assert ids_of(answer) == ["person:zw", 1] and "unindexed_events" not in answer
    assert memory_find(conn, "zhang wei")["hits"][0]["id"] == "person:zw"
    assert conn.execute("SELECT count(*) FROM recall_dirty").fetchone()[0] == 0
    conn.close()


def test_find_on_a_read_only_connection_never_writes(tmp_path: Path, mem: Memory,
                                                     filled: dict[str, int]) -> None:
    mem.append_events([NewEvent("未索引的一条：张伟")], index=False)
    conn = open_home_db(mem.config.db_path, readonly=True)
    before = conn.execute("SELECT total_changes()").fetchone()[0]
    answer = memory_find(conn, "张伟")
    assert answer["unindexed_events"] == 1 and len(answer["hits"]) == 4
    assert conn.execute("SELECT total_changes()").fetchone()[0] == before
    assert not conn.in_transaction
    conn.close()
