"""Splitting events into hot fragments: sizes, exact counts, preferred boundaries, whole graphemes.

And the token estimator the views and the compaction threshold use.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memvault.base.tokens import estimate_tokens
from memvault.timeline.fragments import (
    EVENT_MAX_CHARS,
    FRAGMENT_CHARS,
    find_lone_surrogate,
    split_fragments,
)

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # man ZWJ woman ZWJ girl
THUMBS_DARK = "\U0001f44d\U0001f3ff"  # thumbs up + skin tone modifier
FLAG_CN = "\U0001f1e8\U0001f1f3"  # regional indicators C N
KEYCAP_1 = "1\ufe0f\u20e3"  # digit, emoji presentation selector, combining enclosing keycap
E_ACUTE = "e\u0301"  # e + combining acute (class 230)
HINDI_KI = "\u0915\u093f"  # KA + vowel sign I (a spacing mark of combining class 0)
THAI_MAI_HAN_AKAT = "\u0e01\u0e31"  # KO KAI + MAI HAN-AKAT (Mn, combining class 0)


def assert_partition(text: str, pieces: list[tuple[int, int]]) -> None:
    """Contiguous, non-empty, within the budget, and concatenating back to the text exactly."""
    assert pieces[0][0] == 0
    assert pieces[-1][1] == len(text)
    for (_, end), (start, _) in zip(pieces, pieces[1:], strict=False):
        assert end == start
    for start, end in pieces:
        assert 0 < end - start <= FRAGMENT_CHARS
    assert "".join(text[s:e] for s, e in pieces) == text
    assert len(pieces) == max(1, -(-len(text) // FRAGMENT_CHARS))


def cuts(pieces: list[tuple[int, int]]) -> list[int]:
    return [end for _, end in pieces[:-1]]


@pytest.mark.parametrize(
    ("length", "expected"),
    [(1, 1), (1_999, 1), (2_000, 1), (2_001, 2), (4_000, 2), (4_001, 3), (31_999, 16),
     (32_000, 16)],
)
def test_fragment_count_is_ceil_of_length_over_2000(length: int, expected: int) -> None:
    for alphabet in ("a", "汉", "ab cd. ", "你好，世界。\n"):
        text = (alphabet * (length // len(alphabet) + 1))[:length]
        pieces = split_fragments(text)
        assert len(pieces) == expected
        assert_partition(text, pieces)


def test_the_limits_are_the_specified_ones() -> None:
    assert FRAGMENT_CHARS == 2_000
    assert EVENT_MAX_CHARS == 32_000


def test_exactly_2000_chars_is_one_fragment_and_2001_is_two() -> None:
    assert split_fragments("x" * 2_000) == [(0, 2_000)]
    pieces = split_fragments("x" * 2_001)
    assert len(pieces) == 2
    assert_partition("x" * 2_001, pieces)


def test_a_32000_char_event_of_cjk_is_exactly_16_full_fragments() -> None:
    text = "记" * EVENT_MAX_CHARS  # no boundary anywhere: every cut at the budget
    pieces = split_fragments(text)
    assert pieces == [(i * 2_000, (i + 1) * 2_000) for i in range(16)]


def test_a_blank_line_is_preferred_over_a_later_sentence_end() -> None:
    text = "a" * 1_500 + "\n\n" + "句子。" * 300 + "b" * 2_000
    pieces = split_fragments(text)
    assert_partition(text, pieces)
    assert cuts(pieces)[0] == 1_502  # right after the blank line, not at a later "。"


def test_a_line_end_is_preferred_over_sentence_ends() -> None:
    text = "Sentence one. " * 110 + "\n" + "Another one. " * 100
    pieces = split_fragments(text)
    assert_partition(text, pieces)
    assert cuts(pieces) == [1_541]  # after the newline, not after a later ". "


def test_chinese_text_is_cut_after_a_sentence_end() -> None:
    sentence = "今天下午三点和浩宇在三楼会议室讨论项目进度，记得带上周报。"
    text = sentence * 200
    pieces = split_fragments(text)
    assert_partition(text, pieces)
    for cut in cuts(pieces):
        assert text[cut - 1] == "。"


def test_english_text_is_cut_after_a_sentence_end_not_mid_word() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 200
    pieces = split_fragments(text)
    assert_partition(text, pieces)
    for cut in cuts(pieces):
        assert text[cut - 4 : cut + 1] == "dog. "  # the cut falls right after the full stop


def test_a_closing_quote_stays_with_its_sentence() -> None:
    text = ("他说：“明天见。”" + "好" * 40) * 120
    pieces = split_fragments(text)
    assert_partition(text, pieces)
    for cut in cuts(pieces):
        assert text[cut - 2 : cut] == "。”"


def test_without_boundaries_text_is_cut_at_the_budget() -> None:
    text = "x" * 5_000
    assert split_fragments(text) == [(0, 2_000), (2_000, 4_000), (4_000, 5_000)]


@pytest.mark.parametrize(
    "cluster", [FAMILY, THUMBS_DARK, FLAG_CN, KEYCAP_1, E_ACUTE, HINDI_KI, THAI_MAI_HAN_AKAT]
)
def test_a_grapheme_straddling_the_budget_is_not_split(cluster: str) -> None:
    """Place the cluster so that the 2,000-char budget falls inside it at every inner position."""
    for inner in range(1, len(cluster)):
        start = FRAGMENT_CHARS - inner
        text = "x" * start + cluster + "y" * 3_000
        pieces = split_fragments(text)
        assert_partition(text, pieces)
        for cut in cuts(pieces):
            assert not (start < cut < start + len(cluster)), (cluster, inner, cut)


def test_a_boundary_followed_by_a_combining_mark_is_not_used() -> None:
    # The only space in range is followed by a combining mark (which belongs to the space).
    text = "x" * 1_500 + " \u0301" + "x" * 3_000
    pieces = split_fragments(text)
    assert_partition(text, pieces)
    assert 1_501 not in cuts(pieces)


def test_emoji_sequences_survive_a_long_run_of_them() -> None:
    text = (FAMILY + THUMBS_DARK + FLAG_CN + " ") * 800
    pieces = split_fragments(text)
    assert_partition(text, pieces)
    for cut in cuts(pieces):
        assert text[cut] not in "\u200d\U0001f3ff" and text[cut - 1] != "\u200d"
        assert not ("\U0001f1e6" <= text[cut] <= "\U0001f1ff" and text[cut - 1] == "\U0001f1e8")


def test_when_there_is_no_room_the_budget_wins() -> None:
    # One base char and then only combining marks: no cut keeps it whole, fragments still fit.
    text = "a" + "\u0301" * 4_999
    pieces = split_fragments(text)
    assert_partition(text, pieces)


def test_fragments_of_mixed_text_with_newlines_and_crlf() -> None:
    text = ("第一段，中文内容。\r\nSecond line, English.\r\n\r\n" * 400)[:20_000]
    assert_partition(text, split_fragments(text))


TEXT_CHARS = st.sampled_from(
    list("abc xyz.!?。！？，、\n\t汉字记忆😀")
    + [FAMILY, THUMBS_DARK, FLAG_CN, KEYCAP_1, E_ACUTE, HINDI_KI, "\u200d", "\ufe0f", "\u0301"]
)


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(st.lists(TEXT_CHARS, min_size=1, max_size=12_000).map("".join))
def test_any_text_is_partitioned_within_budget_and_exactly(text: str) -> None:
    text = text[:EVENT_MAX_CHARS]
    assert_partition(text, split_fragments(text))


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(st.integers(min_value=1, max_value=EVENT_MAX_CHARS), st.sampled_from(["a", "汉", "a. "]))
def test_any_length_up_to_32000_gives_ceil_fragments(length: int, unit: str) -> None:
    text = (unit * length)[:length]
    assert_partition(text, split_fragments(text))


@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(st.lists(st.sampled_from(["x", "y z", E_ACUTE, HINDI_KI, FAMILY, KEYCAP_1]),
                min_size=1, max_size=3_000).map("".join))
def test_with_room_no_fragment_starts_with_a_mark_or_joiner(text: str) -> None:
    pieces = split_fragments(text)
    assert_partition(text, pieces)
    for cut in cuts(pieces):
        nxt, prev = text[cut], text[cut - 1]
        assert not unicodedata.category(nxt).startswith("M")
        assert nxt != "\u200d" and prev != "\u200d"


def test_find_lone_surrogate() -> None:
    assert find_lone_surrogate("fine 好 😀") is None
    assert find_lone_surrogate("ab\ud83dcd") == 2
    assert find_lone_surrogate("\udc00") == 0


# -- token estimates ------------------------------------------------------------------------------


def test_cjk_counts_about_one_token_a_char() -> None:
    assert estimate_tokens("浩宇对花生过敏") == 7
    assert estimate_tokens("汉" * 1_000) == 1_000
    assert estimate_tokens("ひらがなカタカナ") == 8
    assert estimate_tokens("한국어") == 3
    assert estimate_tokens("，。！？「」") == 6  # CJK and full-width punctuation


def test_english_counts_about_four_chars_a_token() -> None:
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("a" * 4_000) == 1_000
    text = "Remember that Haoyu prefers tea over coffee. " * 10
    assert estimate_tokens(text) == -(-len(text) // 4)


def test_mixed_text_adds_the_parts() -> None:
    assert estimate_tokens("tea 茶") == 1 + 1  # 4 ascii chars -> 1, one Han char -> 1
    assert estimate_tokens("Got it — tea over coffee.") == 1 + -(-24 // 4)  # the dash is "other"
    assert estimate_tokens("😀😀") == 2
    assert estimate_tokens("") == 0


def test_chinese_estimates_far_more_tokens_than_english_of_the_same_length() -> None:
    zh = "今天下午三点开会" * 50
    en = "meeting at three" * 25
    assert len(zh) == len(en)
    assert estimate_tokens(zh) == len(zh)
    assert estimate_tokens(en) == len(en) // 4
