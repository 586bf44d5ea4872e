"""The quick window reader (windows_in: each pattern tried only where its match can begin) reads
exactly what every pattern tried at every position reads (date_windows), over a corpus of varied
texts: the bundled sample, English and Chinese dates in every form, dotted and slashed numbers,
times, versions, scores, odd case foldings, and generated mixtures of them."""

from __future__ import annotations

import json
import re
import sys
from importlib import resources
from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st
from memvault.dates import reader
from memvault.dates.reader import MONTHS, date_mentions, date_windows, mentions_in, windows_in

HAND = [
    "met on 2024-01-10", "10.01.2024", "2024.01.10", "2024/01/10", "25/12/2023", "12/25/2023",
    "05/06/2023", "1.2.2024 and 12.12.2024.", "v1.2.3 released", "score 3-2, 10/10", "at 10:30",
    "10.30 pm", "3.14159", "2024-13-45", "1999-1-1", "0.5.2024", "123.01.2024", "2024.01.10.5",
    "Dec 29th", "the 29th of December", "29 Dec 2023", "Dec. 29, 2023", "December 2023",
    "in May", "I may go", "of March", "during june.", "in Mayfair", "decide in October",
    "JANUARY 3RD, 2025", "ſep 3, 2024", "ſeptember 2024", "İstanbul in May 3", "Dec.5",
    "sept 3", "the 3rd of may, 2022", "3 people", "#12", "janov 3", "amay 4", "on the 4th",
    "五月", "十二月二十五号", "2023年5月2号", "5月2日", "5 月 2 号", "月亮", "一个月", "三月份",
    "十一月三日开会", "下个月3号", "2026年12月16日上午九点", "周四的会改到下周二",
    "mixed 5月 and May 5",
    "９月３日", "２０２４-０１-１０", "in ＭＡＹ", "Ｄｅｃ 3", "١٢/٢٥/٢٠٢٣", "in Mar 2023 or Apr 4",
    "Nov 30 2023, Feb 29 2024, Feb 30 2024", "meet 12-16", "1/2/3/2024", "31.12.1899",
    "Aug 2999 and Aug 3000", "3rd\u00a0of\u00a0May", "in\nJuly", "of\tAug 2020",
]
PIECES = ["May", "may", "MAR", "Sept", "dec.", "in", "of", "during", "3", "12", "2023", "2024",
          "-", ".", "/", ",", " ", "  ", "th", "rd", "年", "月", "日", "号", "五", "十二", "二十",
          "#", "10:30", "v2.0", "ſ", "İ", "x", "\n", "01", "99", "1999", "of May", "Jan", "e"]


def sample_texts() -> list[str]:
    data = resources.files("memvault") / "data" / "sample_events.jsonl"
    return [json.loads(line)["text"] for line in data.read_text("utf-8").splitlines()]


def generated(count: int, seed: int = 48) -> list[str]:
    rng = Random(seed)
    glue = ["", " ", " ", " ", "-", "."]
    return ["".join(rng.choice(PIECES) + rng.choice(glue) for _ in range(rng.randint(1, 12)))
            for _ in range(count)]


def test_the_quick_reader_reads_what_every_pattern_reads_over_a_corpus() -> None:
    corpus = HAND + sample_texts() + generated(5_000)
    differ = [text for text in corpus if windows_in(text) != date_windows(text)]
    assert differ == []
    assert sum(1 for text in corpus if date_windows(text)) > 1_000  # the corpus names dates


def test_the_quick_reader_finds_the_same_phrases_as_every_pattern_over_a_corpus() -> None:
    """mentions_in (a query's dates, recall/terms.py) reads the windows and the spans of the
    phrases read that date_mentions reads."""
    corpus = HAND + sample_texts() + generated(5_000)
    differ = [text for text in corpus if mentions_in(text) != date_mentions(text)]
    assert differ == []
    assert sum(1 for text in corpus if date_mentions(text).spans) > 1_000


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=12).map("".join))
def test_the_quick_reader_reads_what_every_pattern_reads_in_any_text(text: str) -> None:
    assert windows_in(text) == date_windows(text)
    assert mentions_in(text) == date_mentions(text)


def test_only_the_long_s_folds_to_a_letter_of_a_months_first_three() -> None:
    """What _month_starts relies on: lower() maps every character that re.I matches to one of
    those letters onto it, but the long s (kept apart: such a text is scanned whole)."""
    letters = sorted({ch for month in MONTHS for ch in month[:3]})
    blind = re.compile(f"[{''.join(letters)}]", re.I)
    odd = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF
           and blind.fullmatch(chr(c)) and chr(c).lower() not in letters]
    assert odd == [reader._FOLDED_ELSE]
