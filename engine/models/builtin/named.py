"""People a page names, as person drafts: with a relation or a title (kin.py), or in passing
(people.find_named), a sentence about them a dated line of their profile.

A first name alone is the one person (related, or named on the page) whose name starts with
it; shared by two, it names no one and the returned note says so. In a speaker's small talk
(a turn with nothing about themself) only news of someone counts, in sentences not talking to
the listener.
"""

from __future__ import annotations

import re
from datetime import date

from . import profiles as pf
from . import speech
from .drafts import Directory, Draft, draft_for, names_of, object_id_for
from .kin import find_kin, kin_findings
from .people import find_named, people_first_named, role_as
from .rules import Finding
from .textspan import Span, sentences


def named_people(drafts: dict[str, Draft], directory: Directory, text: str,
                  speaker: speech.Speaker | None, said_on: date | None,
                  chatter: bool = False) -> list[str]:
    """People a sentence names in passing become (or cite) person objects; a sentence about
    them ("Elena said…") is a dated line of their profile, in the third person as said. A
    first name alone is the one person whose name starts with it; shared, it names no one
    (the returned notes say so). In a speaker's `chatter` (nothing about themself) only news
    of someone counts: a relation or title, or a sentence with them as the subject of a verb
    only people do, not talking to the listener ("Raj: Tomas is relocating to Berlin", not
    "Congrats on those deals with Nike!", "Max looks so peaceful in that photo")."""
    notes: list[str] = []
    if chatter:
        text = "".join(" " * (s.end - s.start) if _LISTENER.search(s.text) else s.text
                       for s in _pieces(text))
    owner = object_id_for("person", speaker.name) if speaker else ""
    day = said_on.isoformat() if said_on else "undated"
    people = _people(drafts, directory)
    # Relations and titles first ("My sister is Mia Park", "Tom Reyes, our ward manager"):
    # what they say of a person is theirs, not a passing mention's.
    for finding in kin_findings(find_kin(sentences(text)), speaker.name if speaker else None,
                                owner or "", people, day):
        draft_for(drafts, directory, finding)
    people = _people(drafts, directory)
    known = {d.name for d in drafts.values() if d.type == "person"}
    if speaker:
        known.add(speaker.name)
    for hit in find_named(sentences(text), known, frozenset() if chatter else
                          frozenset(n for names in people.values() for n in names), chatter):
        if chatter and not hit.subject:
            continue
        if hit.common and directory.find("person", "", [hit.name]) is None:
            continue  # a dictionary word is a person only once someone said so
        name = hit.name
        if " " not in name and name.isascii():  # "Marcus" is the one person it starts
            owners = people_first_named(name, people)
            if len(owners) > 1:  # two people share the name: no guess, and no third person
                notes.append(f"{name} may be any of {', '.join(sorted(owners))}: not guessed")
                continue
            if speaker and owners == [object_id_for("person", speaker.name)]:
                continue
            name = people[owners[0]][0] if owners else name
        role = role_as(hit.sentence.text) if hit.subject else ""
        finding = Finding("person", name, {"identity": "", "role": role, "traits": "",
                                           "howto": ""}, hit.sentence,
                          pf.lang_of(hit.sentence.text), owner=owner or "")
        if hit.subject:
            finding.lines.append(f"- {day}: {pf.clip(hit.sentence.text, 200)}")
        draft_for(drafts, directory, finding)
    return notes


_LISTENER = re.compile(r"\b(?:you|your|you're|you’re|yours)\b|[你您]", re.IGNORECASE)


def _pieces(text: str) -> list[Span]:
    """`text` as consecutive spans: each sentence and the text between, offsets kept."""
    out: list[Span] = []
    at = 0
    for s in sentences(text):
        if s.start > at:
            out.append(Span(at, s.start, text[at:s.start]))
        out.append(s)
        at = s.end
    if at < len(text):
        out.append(Span(at, len(text), text[at:]))
    return out


def _people(drafts: dict[str, Draft], directory: Directory) -> dict[str, list[str]]:
    """id -> name and aliases of the related people and those this page names."""
    people = {str(o["id"]): names_of(o) for o in directory.of_type("person")}
    for d in drafts.values():
        if d.type == "person":
            people[d.id] = pf.merge_unique(people.get(d.id, []), [d.name, *d.aliases])
    return people
