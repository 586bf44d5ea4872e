"""Preferences the user states, and their change: one knowledge object per topic.

"I prefer calls after lunch", "I prefer running in the evening", "I prefer non-fiction",
"我比较喜欢下午开会", "我习惯晚上跑步" state a preference: what it is about (the topic: "calls",
"running", "开会") and what is preferred (the value: "after lunch", "in the evening", "下午").
The topic is what follows "for" ("mornings for calls"), else the words around a time phrase,
else the whole. A preference is a knowledge object named by its topic ("Preference: calls",
"偏好：开会") that answers to the topic as an alias, so a later statement on it is sent as
related: "I now prefer mornings for calls", "我现在更喜欢上午开会了" rewrite the object (its
conclusion is the newest statement) and keep the old one as a `- history:` line, as a moved
plan does. Only for a user with no speaker: a speaker's preferences are dated lines of their
own profile (speech.py), where the newer line is the later one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import profiles as pf
from .drafts import Directory, Draft, draft_for, names_of, object_id_for
from .rules import Finding
from .textspan import Span

_PREFER_EN = re.compile(
    r"(?:^|(?<=[,;:.!]\s)|\b(?:and|but|so)\s+)(?:(?i:now|actually|really|still|generally|"
    r"usually|these days|from now on),?\s+)*(?:I(?:\s+(?:(?:now|actually|really|still|much|"
    r"generally|usually|also)\s+)*(?:prefer|would prefer|would rather)|['’]d\s+(?:much\s+)?"
    r"(?:prefer|rather))|[Pp]refer)\s+(?P<what>[^.!?;]{3,100})")
_PREFER_ZH = re.compile(r"我(?P<how>(?:现在|还是|一般|比较|更|最|平时|通常|也)*)"
                        r"(?:喜欢|习惯|偏好|倾向于?)(?P<what>[^，,。！!？?；;]{2,30})")
_TIME_EN = re.compile(
    r"\b(?:(?:early|late)\s+)?(?:in the (?:morning|afternoon|evening)s?|(?:after|before) "
    r"(?:lunch|dinner|work|noon|breakfast)|at (?:night|weekends?|lunch)|on (?:weekends?|"
    r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?)|(?:mornings?|afternoons?|evenings?|"
    r"nights?|weekends?|weekdays?)|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?)\b",
    re.IGNORECASE)
_TIME_ZH = re.compile(r"^(?:上午|下午|晚上|早上|中午|白天|周末|工作日|晚饭后|午饭后|饭后|睡前)")
_CUT_EN = re.compile(r",\s+|\s+(?:since|because|as|but|so|when|though)\s+")
_STOP = frozenset("the and for with from into that this than them their your like more much "
                  "have just some very really".split())


@dataclass
class Preference:
    """One stated preference: its topic, what is preferred, the clause as said."""

    topic: str
    value: str
    said: str
    sentence: Span
    lang: str


# A switch says the new choice with a word of change, and so is a preference too: "coffee:
# switched. oat flat white now", "going forward: pytest fixtures, not unittest", "from now on,
# plain imperative subject lines", "I'm a tea person, strong, a drop of milk", "以前早上喝咖啡，
# 现在改喝绿茶了".
_SWITCH_EN = re.compile(
    r"^\W*(?P<topic>[a-z][\w -]{1,30}?)\s*:\s*(?:switched|changed)\b[.,!]?\s*"
    r"(?P<value>[^.,;!?]{2,60}?)\s+now\b(?:[^.;!?]*)"
    r"|\b(?:going forward|from now on)\s*[:,]\s*(?P<rule>[^.;!?]{3,100})"
    r"|\bI(?:['’]m| am)\s+(?:a|an)\s+(?P<kind>[a-z]+)\s+person\b(?P<how>[^.;!?]{0,80})",
    re.IGNORECASE)
_SWITCH_ZH = re.compile(r"(?:以前|之前|原来)[^，,。；;]{2,16}[，,]\s*(?:现在|如今|最近)(?:改|换)"
                        r"(?:成|为)?(?P<value>[^，,。！!？?；;]{2,12})")


_SWITCHED = re.compile(r"^\W*[a-z][\w -]{1,30}?\s*:\s*(?:switched|changed)\W*$", re.IGNORECASE)


def _switches(sent: Span) -> list[Preference]:
    m = _SWITCH_EN.search(sent.text)
    if m and m.group("topic"):
        topic = m.group("topic").strip()
        return [Preference(topic, m.group("value").strip(), m.group(0).strip(), sent, "en")]
    if m and m.group("rule"):
        rule = m.group("rule").strip(" ,")
        topic = re.split(r",\s*|\s+(?:not|instead of|over|rather than)\s+", rule)[0]
        topic = re.sub(r"[`'\"]", "", topic).strip()
        return [Preference(topic, rule, rule, sent, "en")] if len(topic) >= 3 else []
    if m and m.group("kind"):
        said = f"{m.group('kind')} person{m.group('how')}".strip(" ,")
        return [Preference(m.group("kind"), said, m.group(0).strip(" ,"), sent, "en")]
    z = _SWITCH_ZH.search(sent.text)
    if z:
        value = z.group("value").rstrip("了啦")
        return [Preference(value, value, z.group(0), sent, "zh")]
    return []


def find_preferences(sentences: list[Span]) -> list[Preference]:
    """Every preference the sentences state (see the module doc)."""
    out: list[Preference] = []
    for index, sent in enumerate(sentences):
        if sent.text.rstrip().endswith(("?", "？")):
            continue
        after = sentences[index + 1] if index + 1 < len(sentences) else None
        if after is not None and _SWITCHED.match(sent.text) and after.start - sent.end <= 2:
            # "coffee: switched. oat flat white now, …": the new choice is the next sentence
            sent = Span(sent.start, after.end, f"{sent.text} {after.text}")
        if switched := _switches(sent):
            out += switched
            continue
        m = _PREFER_EN.search(sent.text)
        if m:
            what = _CUT_EN.split(m.group("what").strip(), maxsplit=1)[0].strip(" ,.!")
            said = sent.text[m.start():m.start("what")] + what
            topic, value = _split_en(what)
            if topic:
                out.append(Preference(topic, value, said.strip(" ,"), sent, "en"))
            continue
        z = _PREFER_ZH.search(sent.text)
        if z and (z.group("how") or _TIME_ZH.match(z.group("what"))):
            what = z.group("what").rstrip("了啦")
            time = _TIME_ZH.match(what)
            topic = what[time.end():] if time else what
            if len(topic) >= 2:
                out.append(Preference(topic, time.group() if time else what,
                                      sent.text[z.start():z.end()], sent, "zh"))
    return out


def _split_en(what: str) -> tuple[str, str]:
    """(topic, value) of an English preference: "mornings for calls" -> ("calls",
    "mornings"), "calls after lunch" -> ("calls", "after lunch"), "non-fiction" -> both."""
    words = re.sub(r"^(?:to\s+)?(?:the|a|an|my)\s+", "", what)
    m = re.match(r"(?P<value>.+?)\s+for\s+(?:the\s+|my\s+)?(?P<topic>[\w -]{3,40})$", words)
    if m:
        return m.group("topic").strip(), m.group("value").strip()
    time = _TIME_EN.search(words)
    if time:
        topic = (words[:time.start()] + words[time.end():]).strip(" ,")
        topic = re.sub(r"\s+(?:early|late)$", "", topic)
        return (topic, time.group()) if len(topic) >= 3 else ("", "")
    return words.strip(), words.strip()


def apply_preferences(prefs: list[Preference], drafts: dict[str, Draft], directory: Directory,
                      day: str) -> None:
    """Each preference as its topic's knowledge object: a new one, or the related one on
    that topic rewritten with the old statement kept as history."""
    for pref in prefs:
        zh = pref.lang == "zh"
        name = f"偏好：{pref.topic}" if zh else f"Preference: {pref.topic}"
        existing = _on_topic(pref, directory)
        fields = {"conclusion": pref.said, "applies": pref.topic, "experience": ""}
        if existing is None:
            draft_for(drafts, directory, Finding("knowledge", name, fields, pref.sentence,
                                                 pref.lang, aliases=[pref.topic, *_main(pref)]))
            continue
        body = str(existing.get("body") or "")
        old = pf.field_value("knowledge", body, "conclusion") or ""
        draft = draft_for(drafts, directory, Finding(
            "knowledge", str(existing["name"]), {}, pref.sentence, pref.lang))
        if draft is None or pf.norm(old) == pf.norm(pref.said):
            continue
        draft.fields["conclusion"] = pref.said
        draft.replace = draft.replace | {"conclusion"}
        draft.lines.append(f"- 历史：{day} 之前：{old}" if zh else
                           f"- history: until {day}: {old}")


def _main(pref: Preference) -> list[str]:
    """The topic's main word when it has more ("async standups" -> "standups"), so a later
    "standups live on Mondays" names it: its last word of four letters or more."""
    if pref.lang != "en":
        return []
    words = [w for w in re.findall(r"[A-Za-z][\w-]{3,}", pref.topic) if w.lower() not in _STOP]
    return [words[-1]] if words and words[-1] != pref.topic else []


def _on_topic(pref: Preference, directory: Directory) -> dict[str, object] | None:
    """The related preference object on the same topic (by name, alias or a shared word:
    "do standups live" is on "async standups"), if any."""
    key = pf.norm(pref.topic)
    mine = {w.lower() for w in re.findall(r"[A-Za-z][\w-]{3,}", pref.topic)} - _STOP
    wanted = object_id_for("knowledge", f"Preference: {pref.topic}")
    for obj in _preferences(directory):
        names = names_of(obj)
        if obj.get("id") == wanted or any(pf.norm(n) == key for n in names[1:]) or (
                pref.lang == "en" and key in pf.norm(names[0])) or (
                mine & {w.lower() for n in names[1:] for w in re.findall(r"[A-Za-z][\w-]{3,}", n)}):
            return obj
    return None


def _preferences(directory: Directory) -> list[dict[str, object]]:
    return [o for o in directory.of_type("knowledge")
            if re.match(r"(?:Preference: |偏好：)", names_of(o)[0])]
