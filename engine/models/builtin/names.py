"""How a person's name is written in Latin script, as one regular expression every rule uses.

A name is one to three capitalised words: accented and extended Latin letters too ("Zoë",
"Łukasiewicz", "Østergaard"), a word in two capitalised parts ("McKenzie", "MacDonald",
"O'Brien", "D'Souza", "Jean-Luc"), and lowercase particles between words ("Pieter de Boer",
"Anouk van der Berg", "Tomás de la Cruz", "Fatima al-Sayed"). A name never ends in a particle,
and a possessive "'s" is not part of it ("Zoë's husband").
"""

from __future__ import annotations

import unicodedata

# Latin letters: Basic Latin, Latin-1, Extended-A and -B, Extended Additional (Vietnamese).
_LATIN = [*range(0x41, 0x250), *range(0x1E00, 0x1F00)]


def _letter_class(categories: tuple[str, ...]) -> str:
    """A regex character class of the Latin letters of these Unicode categories, as ranges."""
    chars = [c for c in _LATIN if unicodedata.category(chr(c)) in categories]
    ranges: list[tuple[int, int]] = []
    for code in chars:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return "[" + "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges) + "]"


UPPER = _letter_class(("Lu", "Lt"))
LOWER = _letter_class(("Ll",))
# Lowercase words that join the parts of a name: Dutch, German, Romance, Arabic.
PARTICLES = ("van", "von", "der", "den", "de", "da", "di", "du", "del", "della", "dos", "das",
             "do", "la", "le", "ten", "ter", "zu", "bin", "ibn", "al", "el")
_PARTICLE = r"(?:" + "|".join(sorted(PARTICLES, key=len, reverse=True)) + r")"


def _word(min_letters: int) -> str:
    """A capitalised word of at least `min_letters` letters (its first part counts)."""
    part = UPPER + LOWER + "{" + str(min_letters - 1) + ",}"
    tail = UPPER + LOWER + "+"
    return (r"(?:(?:[OD]['’](?=" + UPPER + r"))?(?:Ma?c(?=" + UPPER + r"))?" + part
            + r"(?:-" + tail + r")?)")


def name_pattern(min_letters: int = 2, words: int = 3) -> str:
    """A regex (no groups) for a Latin-script name of 1 to `words` capitalised words of at least
    `min_letters` letters, with particles ("de", "van der", "al-") between them."""
    word = _word(min_letters)
    joint = r"(?:[ -]|\s(?:" + _PARTICLE + r"\s){1,2}|\s" + _PARTICLE + r"-)"
    return r"(?:" + word + r"(?:" + joint + word + r"){0," + str(words - 1) + r"})"


EN_NAME = name_pattern()
# A name said in passing ("ask Camille about it"): words of 3 letters or more, two at most, so
# "Hi" or "OK" in a sentence is no one.
PASSING_NAME = name_pattern(3, 2)


def name_words(name: str) -> list[str]:
    """The capitalised words of a name, its particles left out ("Pieter de Boer" -> Pieter,
    Boer)."""
    return [w for w in name.replace("-", " ").split() if w not in PARTICLES]
