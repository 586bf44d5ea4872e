"""The recall index's text analysis: the fast `analyze_tokens` makes exactly the tokens (and
token counts) of the straightforward reference below, which is the documented rule: NFKC, every
CJK run becomes its overlapping bigrams plus its last character, the rest is left to unicode61.
Checked against SQLite's own tokenizer, on generated and on hand-picked text."""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memvault.recall.index import CJK_RUN, analyze_tokens, fold, nfkc

_WORD_CHARS = st.sampled_from(
    list("abcXYZ019 ,.:;!?()-_'\"\n\tßÉéñ") + ["\u0301", "\u200b", "ｈ", "Ａ", "３"]
    + list("，：；！？（）\u3000。、“”《》") + list("浩宇会议室讨论花生過敏今天")
    + list("カタカナひらがな한국어") + ["\uf900", "\uff76", "\U00020000", "々"]
)


def reference_analysis(text: str) -> tuple[str, set[str]]:
    """The rule written plainly (the implementation before it was made fast)."""
    text = unicodedata.normalize("NFKC", text)
    pieces = re.split(f"({CJK_RUN.pattern})", text)
    out, tokens = [], set()
    for i, piece in enumerate(pieces):
        if i % 2:  # a CJK run
            run = [piece[j : j + 2] for j in range(len(piece) - 1)] + [piece[-1]]
            tokens.update(run)
            out.append(" " + " ".join(run) + " ")
        else:
            tokens.update(re.findall(r"[^\W_]+", reference_fold(piece)))
            out.append(piece)
    return "".join(out), tokens


def reference_fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    stripped = re.sub(r"[\u0300-\u036f]", "", unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFC", stripped)


def sqlite_tokens(analysed: str) -> Counter[str]:
    """The tokens, with their counts, that SQLite's unicode61 makes of an analysed text."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize = 'unicode61')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        conn.execute("INSERT INTO t (rowid, text) VALUES (1, ?)", (analysed,))
        return Counter(row[0] for row in conn.execute("SELECT term FROM v"))
    finally:
        conn.close()


@settings(max_examples=400, deadline=None)
@given(st.text(_WORD_CHARS, max_size=40))
def test_fast_analysis_indexes_the_same_tokens_as_the_rule(text: str) -> None:
    fast_text, fast_tokens = analyze_tokens(text)
    ref_text, ref_tokens = reference_analysis(text)
    assert sqlite_tokens(fast_text) == sqlite_tokens(ref_text)
    assert fast_tokens == ref_tokens


@pytest.mark.parametrize("text", [
    "今天下午三点和浩宇在三楼会议室讨论，记住：浩宇对花生过敏！",
    "浩宇",  # a 2-character name is one token, plus its last character
    "Ｈｅｌｌｏ，ｗｏｒｌｄ３",  # full-width letters become ASCII words
    "Café au lait，咖啡 (coffee)\u3000好喝",
    "abc中文def",  # a CJK run between letters still splits off
    "兀兀兀",  # a compatibility ideograph is its unified form
    "ｶﾀｶﾅ",  # half-width katakana become kana runs
])
def test_hand_picked_texts_analyse_as_the_rule(text: str) -> None:
    fast_text, fast_tokens = analyze_tokens(text)
    ref_text, ref_tokens = reference_analysis(text)
    assert sqlite_tokens(fast_text) == sqlite_tokens(ref_text)
    assert fast_tokens == ref_tokens


def test_a_two_character_name_is_a_token_and_bigrams_count_each_occurrence() -> None:
    analysed, tokens = analyze_tokens("浩宇说，浩宇会来")
    assert tokens == {"浩宇", "宇说", "说", "宇会", "会来", "来"}
    assert sqlite_tokens(analysed)["浩宇"] == 2


@given(st.text(_WORD_CHARS, max_size=40))
def test_nfkc_and_fold_agree_with_unicodedata(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)
    assert fold(text) == reference_fold(text)
