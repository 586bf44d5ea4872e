"""Estimated tokens: the measure the compaction threshold and the views use.

The estimate is `cjk + ceil(ascii / 4) + other`: every CJK character (Han, kana, Hangul, CJK and
full-width punctuation) counts as one token, ASCII as four characters a token (the usual figure
for English under BPE tokenizers), and any other character (accents, emoji, symbols) as one.
Counting CJK at 4 characters a token would underrate Chinese text about fourfold; current
tokenizers spend roughly 0.7–1.5 tokens per Han character, so one is a fair, slightly cautious
middle. Since CJK and other chars both count one, the sum is `chars - ascii + ceil(ascii / 4)`.
It is an estimate, never billed usage: the ledger keeps what providers report.
"""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text` (see the module docstring for the rule)."""
    if text.isascii():
        return (len(text) + 3) // 4
    # CJK and every other non-ASCII char both count one token, so only the ASCII chars need
    # counting (this is on the ingest path: one C-level pass, no regex).
    ascii_chars = len(text.encode("ascii", "ignore"))
    return len(text) - ascii_chars + (ascii_chars + 3) // 4
