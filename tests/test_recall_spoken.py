"""The days an event speaks of ("next month", "上周三"), read against the day it was said, and
how memory_find uses them for a question that names a date."""

from __future__ import annotations

from datetime import date

import pytest
from memvault import Memory
from memvault.recall import spoken
from memvault.recall.query import memory_find
from memvault.recall.spoken import spoken_spans

from tests.test_recall_ranking import add, ids_of


def d(text: str) -> date:
    return date.fromisoformat(text)


EXAMPLES = [  # (text, said on, the spans it speaks of)
    ("I went to the support group yesterday.", "2023-05-08", [("2023-05-07", "2023-05-07")]),
    ("We met the day before yesterday.", "2023-05-08", [("2023-05-06", "2023-05-06")]),
    ("The party is the day after tomorrow!", "2023-05-08", [("2023-05-10", "2023-05-10")]),
    ("Tonight we cook.", "2023-05-08T21:00:00+08:00", [("2023-05-08", "2023-05-08")]),
    ("See you tomorrow", "2023-05-08", [("2023-05-09", "2023-05-09")]),
    ("Planning a trip there next month.", "2023-08-31", [("2023-09-01", "2023-09-30")]),
    ("Next month is the new year.", "2023-12-15", [("2024-01-01", "2024-01-31")]),
    ("Last month was hard.", "2024-01-10", [("2023-12-01", "2023-12-31")]),
    ("I quit last Friday.", "2023-05-12", [("2023-05-05", "2023-05-05")]),  # said on a Friday
    ("I quit last Friday.", "2023-05-13", [("2023-05-12", "2023-05-12")]),
    ("The exam is next Monday.", "2023-05-08", [("2023-05-15", "2023-05-15")]),
    ("Last week was busy.", "2023-05-10", [("2023-05-01", "2023-05-07")]),
    ("Any plans this weekend?", "2023-05-10", [("2023-05-13", "2023-05-14")]),
    ("I moved two weeks ago.", "2023-05-15", [("2023-04-28", "2023-05-04")]),
    ("It broke 3 days ago", "2023-05-15", [("2023-05-12", "2023-05-12")]),
    ("我昨天去了公园", "2023-05-08", [("2023-05-07", "2023-05-07")]),
    ("下个月去北京出差", "2023-05-08", [("2023-06-01", "2023-06-30")]),
    ("上周三我们去爬山了", "2023-05-08", [("2023-05-03", "2023-05-03")]),
    ("上周日下雨了", "2023-05-08", [("2023-05-07", "2023-05-07")]),
    ("3天前我感冒了", "2023-05-08", [("2023-05-05", "2023-05-05")]),
    ("上个星期很忙", "2023-05-10", [("2023-05-01", "2023-05-07")]),
    ("Yesterday I ran; next week I swim.", "2023-05-10",
     [("2023-05-09", "2023-05-09"), ("2023-05-15", "2023-05-21")]),
    ("day before yesterday we met", "2023-05-08", [("2023-05-06", "2023-05-06")]),
    ("See you next\nmonth", "2023-05-08", [("2023-06-01", "2023-06-30")]),
    ("A Couple  Of weeks ago", "2023-05-15", [("2023-04-28", "2023-05-04")]),
    ("ten days ago", "2023-05-15", [("2023-05-05", "2023-05-05")]),
    ("三天前我感冒了", "2023-05-03", [("2023-04-30", "2023-04-30")]),
    ("两个月前搬的家", "2023-05-03", [("2023-03-01", "2023-03-31")]),
    ("3天前天气很好", "2023-05-03", [("2023-04-30", "2023-04-30")]),  # not also 前天
    ("上周一直在下雨", "2023-05-10", [("2023-05-01", "2023-05-07")]),  # the week, not Monday
    ("上周天气很好", "2023-05-10", [("2023-05-01", "2023-05-07")]),
]


@pytest.mark.parametrize(("text", "said", "spans"), EXAMPLES)
def test_relative_phrases_read_against_the_day_of_saying(
    text: str, said: str, spans: list[tuple[str, str]],
) -> None:
    assert spoken_spans(text, said) == [(d(a), d(b)) for a, b in spans]


def test_every_rule_has_an_example_that_passes_the_quick_scan() -> None:
    # spoken_spans answers [] when _MENTIONS finds nothing, so a rule whose phrase the scan
    # misses would silently never apply: each rule must match an example that yields spans
    for pattern, _ in spoken._RULES:
        assert any(pattern.search(text.lower()) for text, _, _ in EXAMPLES), pattern.pattern


def test_every_branch_of_the_quick_scan_holds_a_needle_of_the_quicker_one() -> None:
    # spoken_spans tests the needles first and answers [] when none is in the text: each
    # branch of _MENTIONS (and so every phrase it lets through) must hold one of them
    branches = spoken._MENTIONS.pattern.split("|")
    words = [b for b in branches if b.isascii()]
    samples = [*words, "ago", "monday", "friday", "tuesday", "wednesday", "thursday",
               "saturday", "sunday", "3 days ago", "前天", "後天", "昨晚", "今早", "上个星期",
               "下礼拜", "这个月", "本周", "2天前", "3周前", "两个星期前", "5个月前"]
    for sample in samples:
        if spoken._MENTIONS.search(sample):
            assert any(n in sample for n in spoken._MENTION_NEEDLES), sample
    for text, _, _ in EXAMPLES:
        if spoken._MENTIONS.search(text.lower()):
            assert any(n in text.lower() for n in spoken._MENTION_NEEDLES), text


def test_every_phrase_a_rule_reads_holds_one_of_its_needles() -> None:
    # spoken_spans runs only the rules one of whose needles is in the text
    assert len(spoken._RULE_NEEDLES) == len(spoken._RULES)
    texts = [text.lower() for text, _, _ in EXAMPLES] + [
        "the day before yesterday", "the day after tomorrow", "后天", "後天", "this evening",
        "last night", "明晚", "a couple of weeks ago", "next weekend", "last sunday",
        "下周日", "上个礼拜三", "this week", "下个星期", "next month", "本月", "3个月前"]
    for (pattern, _), needles in zip(spoken._RULES, spoken._RULE_NEEDLES, strict=True):
        matched = [t for t in texts if pattern.search(t)]
        assert matched, pattern.pattern
        for text in matched:
            for m in pattern.finditer(text):
                assert any(n in m.group() for n in needles), (pattern.pattern, m.group())


@pytest.mark.parametrize(("text", "said"), [
    ("We went to the park and had lunch.", "2023-05-08"),
    ("See you on Monday.", "2023-05-08"),  # a weekday without last/next is not read
    ("yesterday", "not a date"),
    ("yesterday", ""),
    ("我们在天台上看月亮", "2023-05-08"),
    ("next month", "9999-12-15"),  # past the last date Python holds: no span, no error
    ("99 months ago", "0001-03-01"),  # before the first
    ("tomorrow", "9999-12-31"),
    # Chinese words that hold a phrase's characters without being one
    ("目前天气很好", "2023-06-02"),
    ("之前天气不错", "2023-06-02"),
    ("然后天就黑了", "2023-06-02"),
    ("晚上月亮很圆，我们去了公园", "2023-04-28"),
    ("我们登上月球", "2023-04-28"),
    ("这个月饼很好吃", "2023-04-28"),
    ("马上周末了", "2023-06-01"),
    ("路上周围都是树", "2023-06-01"),
    ("日本周末游", "2023-06-01"),
    ("一本月刊", "2023-06-01"),
    ("上上周", "2023-06-01"),  # two weeks back: not read, rather than read as one
    ("123天前", "2023-06-01"),  # not 23 days
])
def test_no_span_without_a_relative_phrase_or_a_day_of_saying(text: str, said: str) -> None:
    assert spoken_spans(text, said) == []


def test_a_turn_that_speaks_of_the_named_month_ranks_above_one_that_does_not(
    mem: Memory,
) -> None:
    plans, quiet = add(mem, ["Tim: Planning a trip to Universal Studios next month!",
                             "Tim: Planning a quiet day."],
                       start="2023-08-31T10:00", step_min=90)
    found = memory_find(mem.conn, "What is Tim planning for September 2023?", types=["event"])
    hits = {h["id"]: h for h in found["hits"]}
    assert ids_of(found).index(plans) < ids_of(found).index(quiet)  # the shorter turn, unlifted
    assert "said 2023-08-31 of 2023-09-01..2023-09-30" in hits[plans]["why"]
    assert not any(w.startswith("said") for w in hits[quiet]["why"])


def test_a_spoken_date_alone_does_not_make_a_hit(mem: Memory) -> None:
    # no word of the query in it: the phrase is not even read (that would mean reading every
    # turn near the date); an event said on the date is still found by the date alone
    add(mem, ["Caroline: The weather was grey and windy all afternoon."],
        start="2023-08-20T10:00")
    unrelated = add(mem, ["Melanie: Next month will be busy."], start="2023-08-31T10:00")[0]
    on_day = add(mem, ["Melanie: The garden looks lovely."], start="2023-09-03T10:00")[0]
    found = memory_find(mem.conn, "What did Tim do in September 2023?", types=["event"])
    assert on_day in ids_of(found)
    assert unrelated not in ids_of(found)


@pytest.mark.parametrize("query", ["garden party in December", "garden party today",
                                   "2月29号 garden party", "garden party on 2023-05-01"])
def test_events_at_the_calendars_ends_never_fail_a_find(mem: Memory, query: str) -> None:
    # 9999-12-31: its "today" spans the last day a date holds; December's window ends past it.
    # Years 2023 and 9999 between them: a date without a year is looked up in the years that
    # hold events, not in the 7,977 between; 2月29号 in 2023 is no day at all.
    first = add(mem, ["Tim: the garden party is today"], start="2023-05-01T10:00")[0]
    last = add(mem, ["Tim: the garden party is today"], start="9999-12-31T10:00")[0]
    found = ids_of(memory_find(mem.conn, query, types=["event"]))
    assert {first, last} <= set(found)
    if "December" in query:
        assert found[0] == last
