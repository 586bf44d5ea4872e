"""A light English stemmer for recall: inflections of one word share a key ("countries",
"country" -> "countri"; "customize", "customized" -> "customiz"; "meeting", "meets" -> "meet").

Recall never stores stems: the index keeps plain tokens, and a query word reaches the tokens of
its family through recall_vocab (tokens starting with `root`, kept when their stem is the word's),
while stage 2 checks the stem of each word that starts with `root` in a candidate's text. So the
rule is applied to the query and to the few tokens it finds, never to the corpus. It follows
Porter's step 1 and a few step-2 suffixes; irregular forms ("met"/"meet") stay apart.
"""

from __future__ import annotations

import re

MIN_WORD = 4  # shorter words are their own family ("was", "bus", "met")
_VOWEL = re.compile(r"[aeiouy]")
_ASCII_WORD = re.compile(r"[a-z]+")
_SUFFIXES = (  # longest first; (suffix, replacement)
    ("ational", "ate"), ("ization", "ize"), ("fulness", "ful"), ("ousness", "ous"),
    ("iveness", "ive"), ("ations", "ate"), ("ation", "ate"), ("sions", "s"), ("sion", "s"),
    ("tions", "t"), ("tion", "t"), ("ments", ""), ("ment", ""), ("ingly", ""), ("edly", ""),
    ("ness", ""), ("sses", "ss"), ("ies", "i"), ("ied", "i"), ("ing", ""), ("ed", ""),
    ("ly", ""), ("es", ""), ("s", ""),
)
_KEEP_S = ("ss", "us", "is")


def stem(word: str) -> str:
    """The family key of a lower-case word (the word itself when it is short or not ASCII)."""
    if len(word) < MIN_WORD or not _ASCII_WORD.fullmatch(word):
        return word
    for suffix, repl in _SUFFIXES:
        if not word.endswith(suffix):
            continue
        if suffix == "s" and word.endswith(_KEEP_S):
            break
        base = word[: -len(suffix)]
        if len(base) < 3 or not _VOWEL.search(base):
            break
        word = base + repl
        if repl == "" and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
            word = word[:-1]  # "running" -> "run"
        break
    if word.endswith("y") and len(word) > 3 and word[-2] not in "aeiou":
        word = word[:-1] + "i"  # "country" and "countries" meet at "countri"
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]  # "customize" and "customized" meet at "customiz"
    return word


def root(key: str) -> str:
    """The prefix every word of a family (a stem `key`) starts with: where to look them up
    ("countri" -> "countr", for "country" and "countries")."""
    return key[:-1] if key.endswith("i") and len(key) > 3 else key
