"""The engine's one date reader (memvault.dates.reader): the words, the calendar arithmetic and
the three readings that recall and the builtin model both call."""

from __future__ import annotations

import re
from datetime import date

import pytest
from memvault.dates.reader import (
    CJK_WEEKDAYS,
    COUNT_WORDS,
    DateWindow,
    coming_weekday,
    count,
    date_windows,
    find_dates,
    last_weekday,
    month_day_of_slashes,
    month_number,
    next_month_day,
    next_weekday,
    weekday_in_week,
    windows_in,
)
from memvault.models.builtin.speech import resolve
from memvault.recall.spoken import spoken_spans

FRIDAY = date(2026, 12, 4)


def days(text: str, said_on: date | None = FRIDAY) -> list[str]:
    return [d.day.isoformat() for d in find_dates(text, said_on)]


def test_month_names_and_numbers_read_in_every_spelling() -> None:
    assert [month_number(n) for n in ("Jan", "january", "SEPT", "ſep", "dec")] == [1, 1, 9, 9, 12]
    assert month_number("xyz") is None
    assert [count(w) for w in ("3", "two", "A  couple of", "several")] == [3, 2, 2, 4]
    words = re.compile(rf"(?:{COUNT_WORDS})\b")
    found = [m.group() for t in ("a couple of days", "an hour", "a few") if (m := words.match(t))]
    assert found == ["a couple of", "an", "a few"]  # the longest words first


def test_a_slashed_date_is_read_only_when_one_side_cannot_be_a_month() -> None:
    assert month_day_of_slashes(25, 12) == (12, 25)
    assert month_day_of_slashes(12, 25) == (12, 25)
    assert month_day_of_slashes(5, 6) is None
    assert date_windows("on 25/12/2023 and 05/06/2023") == [DateWindow(2023, 12, 25)]


def test_weekdays_count_from_the_day_of_saying() -> None:
    assert last_weekday(FRIDAY, 4) == date(2026, 11, 27)  # "last Friday" on a Friday
    assert next_weekday(FRIDAY, 4) == date(2026, 12, 11)
    assert coming_weekday(FRIDAY, 4) == FRIDAY  # "this Friday"
    assert coming_weekday(FRIDAY, 1) == date(2026, 12, 8)
    assert weekday_in_week(FRIDAY, 1, 1) == date(2026, 12, 8)  # 下周二
    assert CJK_WEEKDAYS.index("天") == 7 and weekday_in_week(FRIDAY, 0, 6) == date(2026, 12, 6)


def test_a_day_of_the_month_without_its_year_is_the_next_one() -> None:
    assert next_month_day(FRIDAY, 12, 4) == date(2027, 12, 4)  # the day itself is past
    assert next_month_day(FRIDAY, 12, 5) == date(2026, 12, 5)
    assert next_month_day(FRIDAY, 2, 29) == date(2028, 2, 29)
    assert next_month_day(FRIDAY, 2, 30) is None
    assert next_month_day(date(9999, 12, 31), 1, 1) is None


def test_english_days_are_read_without_a_date_library() -> None:
    assert days("moved to Jan 21") == ["2027-01-21"]
    assert days("the 21st of January 2027, or Sept. 3") == ["2027-01-21", "2027-09-03"]
    assert days("next Tuesday, this Friday, last Sunday") == [
        "2026-12-08", "2026-12-04", "2026-11-29"]
    assert days("on Tues, in a week, in two days, in 3 weeks, tomorrow") == [
        "2026-12-08", "2026-12-11", "2026-12-06", "2026-12-25", "2026-12-05"]
    assert days("周四的会改到下周二") == ["2026-12-03", "2026-12-08"]


def test_the_day_after_tomorrow_is_two_days_on_not_tomorrow() -> None:
    assert days("the day after tomorrow") == ["2026-12-06"]
    assert days("The day before yesterday, and tomorrow") == ["2026-12-02", "2026-12-05"]


def test_odd_english_days_are_no_day() -> None:
    # a day the month cannot have (dateparser read "Jan 32" as January 2032), a short name
    # after "next" that is as often a word, a weekday spelling no one writes
    assert days("Jan 32, Mar 99, Jan 00, Feb 30") == []
    assert days("next Sat, this Sun, last Wed, on Thurs") == []
    assert days("on Sat") == ["2026-12-05"]
    assert days("in 999999999 days") == []
    assert days("next Tuesday", None) == []  # relative, and no day of saying


def test_recall_and_the_builtin_read_a_relative_weekday_as_the_same_day() -> None:
    for text in ("last Friday", "next Friday", "下周二"):
        for said in (FRIDAY, date(2026, 12, 7), date(2026, 12, 6)):
            day = date.fromisoformat(days(text, said)[0])
            assert spoken_spans(text, said.isoformat()) == [(day, day)], (text, said)


def test_a_plan_said_in_conversation_is_dated_by_the_same_reader() -> None:
    """The builtin's plans said in passing ("I'm going to visit Mom next Saturday") resolve
    their day as every other reader does: "next Saturday" on a Monday is that week's."""
    monday = date(2026, 12, 7)
    for text in ("next Saturday", "this Friday", "on Tuesday", "下周三", "tomorrow", "后天"):
        assert resolve(text, monday) == days(text, monday)[0], text
    assert resolve("next Saturday", monday) == "2026-12-12"
    assert resolve("tonight", monday) == "2026-12-07"
    assert resolve("next week", monday) == "week of 2026-12-14"
    assert resolve("next month", monday) == "January 2027"


@pytest.mark.parametrize("text", ["met on 2024-01-10", "10.01.2024", "Dec 29th",
                                  "the 29th of December", "in May", "五月", "十二月二十五号",
                                  "3 people", "#12", "I may go"])
def test_the_quick_window_reader_reads_what_every_pattern_reads(text: str) -> None:
    assert windows_in(text) == date_windows(text)


@pytest.mark.parametrize(("text", "day"), [
    ("五月二十日上午九点体检", date(2027, 5, 20)),
    ("九月三十号晚上七点家庭聚餐", date(2027, 9, 30)),
    ("Piano recital on the 26th at 4pm", date(2026, 12, 26)),
    ("the review moved to the 2nd", date(2027, 1, 2)),  # before today's day: next month's
    ("on the 4th", FRIDAY),  # today's day itself
    ("下个月3号之前交表", date(2027, 1, 3)),
    ("5号交房租", date(2026, 12, 5)),
])
def test_a_day_said_by_numerals_or_alone_is_the_next_such_day(text: str, day: date) -> None:
    assert [d.day for d in find_dates(text, FRIDAY)] == [day]


@pytest.mark.parametrize("text", ["住在3号楼", "坐5号线", "05 号 runner 没起来", "2号机器",
                                  "一个月后", "on the 31st"])
def test_a_number_that_is_no_day_of_the_month_gives_none(text: str) -> None:
    assert find_dates(text, date(2026, 11, 20)) == []  # November has no 31st: no guess


def test_a_day_said_alone_needs_the_day_of_saying() -> None:
    assert find_dates("on the 4th", None) == []
