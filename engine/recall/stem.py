"""English word families for recall: inflections and derivations of one word share a key
("countries", "country" -> "countri"; "customize", "customized" -> "custom"; "meeting",
"meets" -> "meet"), Snowball's English stemmer through PyStemmer (its C implementation).

Recall never stores stems: the index keeps plain tokens, and a query word reaches the tokens of
its family through recall_vocab (tokens starting with `root`, kept when their stem is the word's),
while stage 2 checks the stem of each word that starts with `root` in a candidate's text. So the
stemmer is applied to the query and to the few tokens it finds, never to the corpus. Irregular
forms ("met"/"meet") stay apart.
"""

from __future__ import annotations

import functools
import re
import threading

import Stemmer

MIN_WORD = 4  # shorter words are their own family ("was", "bus", "met")
_ASCII_WORD = re.compile(r"[a-z]+")
# A Snowball stemmer object keeps state between calls: one per thread (the service's tools
# run find on worker threads).
_LOCAL = threading.local()


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The family key of a lower-case word (the word itself when it is short or not ASCII).
    Remembered: a find stems the few hundred vocabulary words its prefixes reach, mostly the
    same from one find to the next."""
    if len(word) < MIN_WORD or not _ASCII_WORD.fullmatch(word):
        return word
    stemmer = getattr(_LOCAL, "stemmer", None)
    if stemmer is None:
        stemmer = _LOCAL.stemmer = Stemmer.Stemmer("english")
    return str(stemmer.stemWord(word))


def root(key: str) -> str:
    """The prefix every word of a family (a stem `key`) starts with: where to look them up
    ("countri" -> "countr", for "country" and "countries"; "hope" -> "hop", for "hoping")."""
    return key[:-1] if key.endswith(("i", "e")) and len(key) > 3 else key
