"""A person's new role, said later: the newer role is current, the older one is history.

"Maya Lewis got promoted, she's director of engineering now", "Tom is no longer an intern,
he's been hired as a junior developer", "Kofi has become deputy head", "Simone Achebe has just
been promoted to VP of product", "王建华现在是副校长了", "黄磊升任数学教研组长了".

A change needs both a person named as the subject and a word that says the role changed: "now"
("is now", "现在是"), a verb of promotion or appointment ("promoted to", "appointed", "hired as",
"升任", "当上"), "has become"/"成为", or "no longer". The new role must end in a role word
(people.role_en, people.role_zh), so "Kofi is now in Leeds" changes nothing.

apply_role_changes rewrites the person's `role` line with the new role and keeps the old one as
a `- history:` line (the engine keeps it as the previous version too), as a changed preference
does (prefs.py). A relation word of the old role stays ("brother" becomes "brother;
firefighter"): a promotion changes a job, not a family.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import profiles as pf
from .drafts import Directory, Draft, draft_for
from .kin import relation_word
from .people import EN_NAME, role_en, role_zh, valid_en_name, valid_zh_name, zh_words
from .rules import Finding
from .textspan import Span

_ARTICLE = r"(?:(?:a|an|the|our|their|my|his|her)\s+)?"
_ADVERB = r"(?:(?:just|recently|finally|officially|now|been)\s+)*"
_CHANGED = (r"(?:promoted|appointed|named|made|hired|taken\s+on|moved\s+up|elected|confirmed|"
            r"brought\s+in)")
# The role runs to the clause's end, without a trailing "now"/"from today".
_ROLE = r"(?P<role>[^.,;!?\n—–]{2,60}?)(?:\s+(?:now|from\s+today|today|as\s+of\s+\w+))?"
_END = r"\s*(?:[.,;!?\n—–]|$)"
# The name is the subject: the sentence's start, or after a speaker's "David: " or a lead word.
_SUBJECT = (r"(?:^|(?<=:\s)|(?<=\bso\s)|(?<=\band\s)|(?<=\bfyi\s)|(?<=\bbtw\s))"
            r"(?P<name>" + EN_NAME + r")")
_NAMED_EN = [
    # "Kofi is now deputy head", "Greta Lind has become our platform lead"
    re.compile(_SUBJECT + r"(?:\s+is|['’]s)\s+now\s+" + _ARTICLE + _ROLE + _END),
    re.compile(_SUBJECT + r"\s+(?:has\s+)?(?:just\s+)?(?:become|became)\s+" + _ARTICLE + _ROLE
               + _END),
    # "Aoife Walsh got promoted to design director", "Simone has just been promoted to VP"
    re.compile(_SUBJECT + r"\s+(?:got|was|is|has|['’]s|have)\s+" + _ADVERB + _CHANGED
               + r"(?:\s+full[- ]time)?\s+(?:to|as)\s+" + _ARTICLE + _ROLE + _END),
]
# "Maya Lewis got promoted, she's director of engineering now", "Tom is no longer an intern,
# he's been hired as a junior developer", "Sean's no longer an intern - hired full time as an
# associate PM": a named subject, a change word, then the new role in a later clause.
_LATER_CLAUSE_EN = re.compile(
    _SUBJECT + r"(?P<between>[^.!?\n]{2,80}?)(?:,|\s[-–—])\s*(?:and\s+)?"
    r"(?:(?:she|he|they)(?:['’]s|\s+is|['’]re|\s+are|\s+has|['’]ve|\s+have)\s+)?" + _ADVERB
    + r"(?:" + _CHANGED + r"(?:\s+full[- ]time)?\s+(?:as|to)\s+)?" + _ARTICLE + _ROLE + _END)
_CHANGE_WORD_EN = re.compile(r"\b(?:now|no\s+longer|promoted|appointed|hired|become|became|"
                             r"made|named|elected|took\s+over|taken\s+over)\b", re.IGNORECASE)
# "王建华现在是副校长了", "黄磊升任数学教研组长了", "赵敏当上财务经理了",
# "王丽转正了，现在是行政专员", "周文教授现在是学院院长了".
_NAMED_ZH = re.compile(
    r"(?:^|(?<=[：:，,])|(?<=[：:]\s))(?P<head>[^，,。；;！!？?\n：:]{2,10}?[，,]?)"
    r"(?:(?:现在|目前|如今|已经|正式)+(?:是|成了|成为了?|当上了?)|升任|升为|升职为|晋升为|"
    r"被?提拔为|调任|改任|出任|当上了?|成为了?|荣升)"
    r"(?P<role>[^，,。；;！!？?\n了]{2,12})")


@dataclass
class RoleChange:
    """A person's new role as said: who, the new role, the sentence."""

    name: str
    role: str
    sentence: Span
    lang: str


def find_role_changes(sentences: list[Span]) -> list[RoleChange]:
    """Every statement of a person's new role in `sentences` (see the module doc)."""
    out: list[RoleChange] = []
    for sent in sentences:
        text = sent.text.strip()
        if text.endswith(("?", "？")):
            continue
        found = _english(text) or _chinese(text)
        if found is not None:
            out.append(RoleChange(found[0], found[1], sent, found[2]))
    return out


def _english(text: str) -> tuple[str, str, str] | None:
    for pattern in _NAMED_EN:
        for m in pattern.finditer(text):
            role = role_en(m.group("role"))
            if role and valid_en_name(m.group("name")):
                return m.group("name"), role, "en"
    later = _LATER_CLAUSE_EN.search(text)
    if later and _CHANGE_WORD_EN.search(text[later.end("name"):]) and valid_en_name(
            later.group("name")):
        role = role_en(later.group("role"))
        if role and not re.search(r"\b(?:no\s+longer|not)\b",
                                  text[later.start("role"):later.end()]):
            return later.group("name"), role, "en"
    return None


def _chinese(text: str) -> tuple[str, str, str] | None:
    for m in _NAMED_ZH.finditer(text):
        role = role_zh(m.group("role").strip())
        # the subject is the clause's first word that is a name ("王丽转正了，现在是…",
        # "周文教授现在是…"): jieba cuts it off what follows better than a length can
        name = next((w for w, _ in zh_words(m.group("head")) if valid_zh_name(w)), None)
        if role and name:
            return name, role, "zh"
    return None


def apply_role_changes(changes: list[RoleChange], drafts: dict[str, Draft],
                       directory: Directory, day: str) -> None:
    """Each change as its person's current role: a new person, or the related one rewritten
    with the old role kept as a `- history:` line and its relation words kept in the role."""
    for change in changes:
        zh = change.lang == "zh"
        finding = Finding("person", change.name, {"identity": "", "role": "", "traits": "",
                                                  "how to work with them": ""},
                          change.sentence, change.lang)
        draft = draft_for(drafts, directory, finding)
        if draft is None:
            continue
        old = pf.field_value("person", str((draft.existing or {}).get("body") or ""), "role")
        if old is None or pf.is_unknown(old):
            draft.fields["role"] = change.role
            continue
        if pf.norm(change.role) in pf.norm(old):
            continue
        kept = [part for part in re.split(r"[;；]\s*", old) if relation_word(part)]
        draft.fields["role"] = ("；" if zh else "; ").join([*kept, change.role])
        draft.replace = draft.replace | {"role"}
        draft.lines.append(f"- 历史：{day} 之前原为{old}" if zh else
                           f"- history: until {day}: role was {old}")
