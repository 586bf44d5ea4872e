"""Estimated tokens: the measure the compaction threshold and the views use.

The estimate is `cjk + ceil(ascii / 4) + other`: every CJK character (Han, kana, Hangul, CJK and
full-width punctuation) counts as one token, ASCII as four characters a token (the usual figure
for English under BPE tokenizers), and any other character (accents, emoji, symbols) as one.
Counting CJK at 4 characters a token would underrate Chinese text about fourfold; current
tokenizers spend roughly 0.7–1.5 tokens per Han character, so one is a fair, slightly cautious
middle. It is an estimate, never billed usage: the ledger keeps what providers report.
"""

from __future__ import annotations

import re

_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f"
    "\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f"
    "\uff00-\uffef\U00020000-\U0003134f]+"
)


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text` (see the module docstring for the rule)."""
    if text.isascii():
        return (len(text) + 3) // 4
    # Runs, not single chars: far fewer matches on Chinese text (this is on the ingest path).
    cjk = sum(map(len, _CJK.findall(text)))
    ascii_chars = len(text.encode("ascii", "ignore"))
    other = len(text) - cjk - ascii_chars
    return cjk + (ascii_chars + 3) // 4 + other
