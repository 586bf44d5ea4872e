"""Drafts: what one page says about which objects, matched against the related ones.

A Draft gathers the findings about one object id (a new one, or a related one found by id,
name or alias; never a duplicate of a related object), done markers close the best-matching
open todo, and `write_profile` turns a draft into the whole profile to write, or into nothing
when an existing profile would not change (then it is only cited).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from ...base.errors import InputError
from ...dates.reader import CJK_WEEKDAYS, WEEKDAYS
from ...objects.ids import check_object_id, make_slug
from ...objects.states import default_state, has_state, state_from_text
from ...secrets.detector import find_secret
from . import profiles as pf
from .changes import Change, unmatched_plan
from .dates import Dated, find_dates
from .lexicon import STOP_BIGRAMS, STOP_WORDS
from .people import strip_title
from .rules import DoneMark, Finding, Scan, weekday_word
from .textspan import Span, mentions

_SECRET_ASSIGNED = re.compile(
    r"(?i)(?:password|passwd|passcode|pin|密码|口令|密钥)\s*(?:is|是|为|[:：=])\s*[\"'`]?[^\s\"'`，。]{4,}")


NAMED_BY_ALIAS = ("person", "project")


@dataclass
class Draft:
    """An object this page speaks about: a new one, or an update of a related one."""

    id: str
    type: str
    name: str
    lang: str
    fields: dict[str, str] = field(default_factory=dict)
    aliases: list[str] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    existing: dict[str, Any] | None = None
    owner: str = ""
    lines: list[str] = field(default_factory=list)
    replace: frozenset[str] = frozenset()  # keys a stated change overwrites (changes.py)
    drop: frozenset[str] = frozenset()  # aliases a change made stale (a moved plan's weekday)

    def absorb(self, finding: Finding) -> None:
        self.aliases = pf.merge_unique(self.aliases, [finding.name, *finding.aliases],
                                       exclude=self.name)
        for key, value in finding.fields.items():
            old = self.fields.get(key, "")
            if pf.is_unknown(old):
                self.fields[key] = value
            elif key in pf.GROWING and not pf.is_unknown(value) and pf.norm(value) not in pf.norm(
                    old):
                self.fields[key] = f"{old}; {value}"
        if finding.sentence not in self.spans:
            self.spans.append(finding.sentence)
        self.projects = pf.merge_unique(self.projects, finding.projects)
        self.owner = self.owner or finding.owner
        self.lines += [line for line in finding.lines if line not in self.lines]


def type_of(obj: dict[str, Any]) -> str:
    """An object's type, from `type` or from its id."""
    return str(obj.get("type") or str(obj.get("id", "")).partition(":")[0])


def names_of(obj: dict[str, Any]) -> list[str]:
    """An object's name, then its aliases."""
    return [str(obj.get("name") or "")] + [str(a) for a in obj.get("aliases") or []]


class Directory:
    """The related objects, findable by id and by (type, normalised name); people and projects
    by their aliases too."""

    def __init__(self, related: Sequence[Mapping[str, Any]]) -> None:
        objects = [dict(o) for o in related]  # the rules keep and read their own copies
        self.by_id = {str(o["id"]): o for o in objects if o.get("id")}
        self.by_name: dict[tuple[str, str], dict[str, Any]] = {}
        for obj in objects:
            names = names_of(obj) if type_of(obj) in NAMED_BY_ALIAS else names_of(obj)[:1]
            for name in names:
                if name.strip():
                    self.by_name.setdefault((type_of(obj), pf.norm(name)), obj)

    def find(self, type_: str, object_id: str, names: list[str]) -> dict[str, Any] | None:
        if object_id in self.by_id and type_of(self.by_id[object_id]) == type_:
            return self.by_id[object_id]
        for name in names:
            hit = self.by_name.get((type_, pf.norm(name)))
            if hit:
                return hit
        return None

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [o for o in self.by_id.values() if type_of(o) == type_]


def object_id_for(type_: str, name: str) -> str | None:
    """`type:make_slug(name)`, with a clipped name's "…" dropped; None if no valid id results."""
    slug = make_slug(name.replace("…", " "))
    slug = re.sub(r"\.{2,}", ".", slug).strip(".-")[:100]
    if not slug or slug == "unnamed":
        return None
    try:
        check_object_id(f"{type_}:{slug}")
    except InputError:
        return None
    return f"{type_}:{slug}"


def draft_for(drafts: dict[str, Draft], directory: Directory, finding: Finding) -> Draft | None:
    if finding.type == "person":  # "Dr. Rhys Evans" is Rhys Evans
        finding.name = strip_title(finding.name)
    object_id = object_id_for(finding.type, finding.name)
    if object_id is None:
        return None
    # A person's or project's aliases are names; a todo's or schedule's are only short handles
    # (two different dentist appointments share "看牙医"), so they never decide identity.
    names = [finding.name, *(finding.aliases if finding.type in NAMED_BY_ALIAS else [])]
    existing = directory.find(finding.type, object_id, names)
    if existing is None and finding.type == "schedule":
        same = _same_event(finding, drafts, directory)
        existing = same if isinstance(same, dict) else None
        object_id = same if isinstance(same, str) else object_id
        if same is not None and not _day(finding.fields.get("rule", "")):
            # a weekly plan said again (in the other language, say): it keeps its own words
            finding.fields = {k: v for k, v in finding.fields.items() if k not in (
                "rule", "state")}
    if existing:
        object_id = str(existing["id"])
    else:
        for draft in drafts.values():  # same name or alias found earlier on this page
            known = [draft.name, *(draft.aliases if draft.type in NAMED_BY_ALIAS else [])]
            if draft.type == finding.type and {pf.norm(n) for n in names} & {
                    pf.norm(n) for n in known}:
                object_id = draft.id
    if object_id not in drafts:
        name = str(existing["name"]) if existing else finding.name
        drafts[object_id] = Draft(object_id, finding.type, name, finding.lang, existing=existing)
    draft = drafts[object_id]
    draft.absorb(finding)
    return draft


def _same_event(finding: Finding, drafts: dict[str, Draft], directory: Directory
                ) -> dict[str, Any] | str | None:
    """The schedule (a related one, or the id of one found on this page) that a new dated
    finding restates: the same day and the same event words ("Dentist appointment on
    2026-12-09" and "the dentist visit is on December 9"; "季度评审会议定在12月10日" and "12月10日开
    季度评审会"), so it is cited and not made twice."""
    day = _day(finding.fields.get("rule", ""))
    if not day:
        return _same_recurring(finding, drafts, directory)
    words = f"{finding.name} {finding.fields.get('item', '')}"
    for draft in drafts.values():
        if draft.type == "schedule" and _day(draft.fields.get("rule", "")) == day and (
                _same_words(words, " ".join([draft.name, *draft.aliases]))):
            return draft.id
    for obj in directory.of_type("schedule"):
        body = str(obj.get("body") or "")
        if _day(pf.field_value("schedule", body, "rule") or "") == day and _same_words(
                words, " ".join([*names_of(obj), pf.field_value("schedule", body, "item") or ""])):
            return obj
    return None


def _same_recurring(finding: Finding, drafts: dict[str, Draft], directory: Directory
                    ) -> dict[str, Any] | str | None:
    """The recurring schedule a new recurring finding restates, in either language: the same
    weekdays and hour ("every Monday at 10:00", "每周一上午十点") and a name held in the other's
    ("standup" in "Team standup")."""
    key = recurrence(finding.fields.get("rule", ""))
    if key is None:
        return None
    mine = pf.norm(finding.name)

    def same(names: list[str], rule: str) -> bool:
        theirs = [pf.norm(n) for n in names if n]
        return recurrence(rule) == key and any(
            len(min(a, mine, key=len)) >= 4 and (a in mine or mine in a) for a in theirs)

    for draft in drafts.values():
        if draft.type == "schedule" and same([draft.name, *draft.aliases],
                                             draft.fields.get("rule", "")):
            return draft.id
    for obj in directory.of_type("schedule"):
        if same(names_of(obj), pf.field_value("schedule", str(obj.get("body") or ""), "rule")
                or ""):
            return obj
    return None


_ZH_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2}


def recurrence(rule: str) -> tuple[frozenset[int], int] | None:
    """(weekdays, hour in 24h) of a weekly rule, in English or Chinese ("every other Thursday
    at 16:00", "隔周四下午四点" -> ({3}, 16)); None when it names no weekday and hour."""
    days = {i for w, i in _WEEKDAYS.items() if w.isascii() and re.search(
        rf"\b{w}(?:day)?s?\b", rule, re.IGNORECASE)}
    days |= {_WEEKDAYS[c] for c in re.findall(r"(?:周|星期|礼拜)([一二三四五六日天])", rule)}
    hour: int | None = None
    m = re.search(r"\b(\d{1,2})(?::\d{2})?\s*([ap])\.?m\b|\b(\d{1,2}):\d{2}\b", rule, re.I)
    if m:
        pm = 12 if (m.group(2) or "").lower() == "p" else 0
        hour = int(m.group(1)) % 12 + pm if m.group(1) else int(m.group(3))
    elif z := re.search(r"(上午|下午|晚上|早上|中午)?(十[一二]?|[一二三四五六七八九两]|\d{1,2})点",
                        rule):
        text = z.group(2)
        value = int(text) if text.isdigit() else (
            10 + (_ZH_DIGITS[text[1]] if len(text) > 1 else 0) if text.startswith("十")
            else _ZH_DIGITS[text])
        hour = value + 12 if z.group(1) in ("下午", "晚上") and value < 12 else value
    return (frozenset(days), hour) if days and hour is not None else None


def _day(rule: str) -> str:
    m = re.match(r"\s*(\d{4}-\d{2}-\d{2})", rule)
    return m.group(1) if m else ""


def _same_words(new: str, old: str) -> bool:
    """Half the new words (4+ letters, not filler) are in the old, or a Han run of 3+."""
    han = re.findall(r"[\u4e00-\u9fff]{3,}", new)
    if han:
        return similarity(new, old) >= 3
    mine = {w for w in re.findall(r"[a-z]{4,}", new.casefold()) if w not in STOP_WORDS}
    theirs = set(re.findall(r"[a-z]{4,}", old.casefold()))
    return bool(mine) and len(mine & theirs) * 2 >= len(mine)


def similarity(subject: str, target: str) -> int:
    """How strongly a done marker's subject names a todo: shared Han run or shared words."""
    a = "".join(pf.norm(subject).split())
    b = "".join(pf.norm(target).split())
    best = 0
    for i in range(len(a)):
        for j in range(i + 2, len(a) + 1):
            piece = a[i:j]
            if not re.fullmatch(r"[\u4e00-\u9fff]+", piece) or piece not in b:
                break
            if not (len(piece) == 2 and piece in STOP_BIGRAMS):
                best = max(best, len(piece))

    def stems(text: str) -> set[str]:
        words = re.findall(r"[a-z]{4,}", text.casefold().replace("'s", ""))
        return {re.sub(r"(?:ed|ing|s)$", "", w) if len(w) > 5 else w for w in words
                if w not in STOP_WORDS}

    return best + 2 * len(stems(subject) & stems(target))


def apply_done(found: Scan, drafts: dict[str, Draft], directory: Directory) -> None:
    """Close the todo each done marker names best (a related one or one found on this page).
    A plain past tense ("Paid the rent.") closes only a todo whose verb it is ("pay the
    rent"), and a Chinese one ("季度报告提前交了") a one-off schedule when no todo is named (a
    deadline is a plan: "下周五要交季度报告")."""
    for mark in found.done:
        best: tuple[int, str, dict[str, Any] | None] = (0, "", None)
        for draft in drafts.values():
            if _closable(mark, draft.type, draft.fields.get("state", ""),
                         draft.fields.get("item") or draft.name) and (
                    mark.sentence not in draft.spans):
                score = similarity(mark.subject, f"{draft.name} {draft.fields.get('item', '')}")
                best = max(best, (score, draft.id, None), key=lambda b: b[0])
        for obj in [*directory.of_type("todo"), *directory.of_type("schedule")]:
            body = str(obj.get("body") or "")
            item = pf.field_value(type_of(obj), body, "item") or ""
            state = pf.field_value(type_of(obj), body, "state") or ""
            if obj.get("status") == "archived" or not _closable(
                    mark, type_of(obj), state, item or str(obj.get("name"))):
                continue
            score = similarity(mark.subject, f"{obj.get('name')} {item}")
            best = max(best, (score, str(obj["id"]), obj), key=lambda b: b[0])
        score, object_id, existing = best
        if score < 2 or score <= _done_already(mark, directory):
            continue  # it names a todo already done ("已标记完成：给妈妈买生日礼物") best
        if object_id not in drafts and existing is not None:
            kind = type_of(existing)
            lang = pf.body_lang(pf.parse_body(kind, str(existing.get("body") or "")),
                                pf.lang_of(mark.subject))
            drafts[object_id] = Draft(object_id, kind, str(existing["name"]), lang,
                                      existing=existing)
        draft = drafts[object_id]
        draft.fields["state"] = "done"
        if mark.sentence not in draft.spans:
            draft.spans.append(mark.sentence)


def _done_already(mark: DoneMark, directory: Directory) -> int:
    """How well `mark` names a related todo that is done already (0: none): a marker that
    repeats a todo's closing is about that todo, and closes nothing else that shares words."""
    scores = []
    for obj in directory.of_type("todo"):
        body = str(obj.get("body") or "")
        if state_done(pf.field_value("todo", body, "state") or ""):
            item = pf.field_value("todo", body, "item") or ""
            scores.append(similarity(mark.subject, f"{obj.get('name')} {item}"))
    return max(scores, default=0)


def _closable(mark: DoneMark, kind: str, state: str, item: str) -> bool:
    """Can `mark` close an object of this kind, state and item (see apply_done)?"""
    if state_done(state) or re.search(r"cancel|取消|dropped|已放弃", state, re.IGNORECASE):
        return False
    zh = pf.lang_of(mark.subject) == "zh"
    if kind == "schedule":
        return zh and not re.search(r"recurring|重复", state, re.IGNORECASE)
    if kind != "todo":
        return False
    if not mark.verb or zh:
        return True
    first = (re.findall(r"[A-Za-z]+", item) or [""])[0].casefold()
    return len(first) >= 2 and (first == mark.verb or len(mark.verb) >= 3 and (
        first.startswith(mark.verb) or mark.verb.startswith(first)))


_CANCEL_ACT = re.compile(r"^\W*(?:cancel|call off|scrap|取消)", re.IGNORECASE)


def _cancels_itself(change: Change, name: str) -> bool:
    """A plan whose act is a cancelling ("Cancel the SaaS overage plan") is not what a later
    "the SaaS plan is cancelled" cancels: that says the act is as planned."""
    return change.kind == "cancelled" and _CANCEL_ACT.match(name) is not None


def apply_changes(changes: list[Change], drafts: dict[str, Draft], directory: Directory,
                  day: str, keep_unmatched: bool = False) -> list[str]:
    """Apply each change to the schedule or todo it names best (a related one or one found on
    this page): a new day replaces the time rule, "cancelled" the state; the old value stays as
    a history line. One that shares nothing with any of them is, with `keep_unmatched` (the
    user's words), the plan it is plainly about (changes.unmatched_plan), if any. Returns notes
    for the changes that named nothing."""
    notes: list[str] = []
    said_on = _iso_day(day)
    for change in changes:
        # Every candidate by how well the change names it: its thing (shared words, at least
        # one: a day alone names no plan) and its day.
        scored: list[tuple[int, str, dict[str, Any] | None]] = []
        named = find_dates(change.words, said_on) if said_on else []
        for draft in drafts.values():
            if (draft.type in ("schedule", "todo") and change.sentence not in draft.spans
                    and not _cancels_itself(change, draft.name)):
                words = _names_thing(change.words, " ".join([draft.name, *draft.aliases,
                                                             draft.fields.get("item", "")]))
                if words:
                    scored.append((words + _on_day(change.words, named,
                                                   draft.fields.get("rule", ""), said_on),
                                   draft.id, None))
        for obj in [*directory.of_type("schedule"), *directory.of_type("todo")]:
            if _cancels_itself(change, str(obj.get("name") or "")) or str(obj["id"]) in drafts:
                continue
            body = str(obj.get("body") or "")
            item = pf.field_value(type_of(obj), body, "item") or ""
            words = _names_thing(change.words, " ".join([*names_of(obj), item]))
            if words:
                scored.append((words + _on_day(change.words, named, pf.field_value(
                    type_of(obj), body, "rule") or "", said_on), str(obj["id"]), obj))
        scored.sort(key=lambda b: -b[0])
        score, object_id, existing = scored[0] if scored else (0, "", None)
        if len(scored) > 1 and scored[1][0] == score and score >= 2:
            # two plans named as well as each other: unsure, so it stays a fact in the event
            notes.append(f"a change ({pf.clip(change.sentence.text, 80)}) names two plans as "
                         "well as each other: left as said")
            continue
        if score < 2 or score < 4 and not _names(change.words, drafts, existing, object_id):
            # only when it shares nothing with a known one (which it may well mean)
            plan = unmatched_plan(change) if keep_unmatched and score == 0 else None
            kept = draft_for(drafts, directory, plan) if plan is not None else None
            if kept is None:
                notes.append(f"a change ({pf.clip(change.sentence.text, 80)}) named no "
                             "schedule or todo among the related objects")
            else:
                _change(kept, change, day)
            continue
        if object_id not in drafts and existing is not None:
            lang = pf.body_lang(pf.parse_body(type_of(existing), str(existing.get("body") or "")),
                                pf.lang_of(change.sentence.text))
            drafts[object_id] = Draft(object_id, type_of(existing), str(existing["name"]), lang,
                                      existing=existing)
        _change(drafts[object_id], change, day)
    return notes


def _names_thing(words: str, plan: str) -> int:
    """How well a change's words name a plan's thing: shared words (similarity), else 1 when
    both hold the same kind of event ("周四的会" and "跟供应商开会", "Thursday's meeting" and
    "team meeting"), which with the plan's day names it; 0 when nothing is shared."""
    score = similarity(words, plan)
    if score:
        return score
    kinds = [k.casefold() for k in _EVENT_KIND.findall(words)]
    return int(any(k in plan.casefold() for k in kinds))


_EVENT_KIND = re.compile(r"(?i)\b(?:meeting|call|appointment|lunch|dinner|class|session|"
                         r"review|interview|party|trip|flight)\b|会|课|饭|约")


def _iso_day(day: str) -> date | None:
    try:
        return date.fromisoformat(day)
    except ValueError:
        return None


# A weekday's number by its English name or its Chinese numeral (周日 = 周天: Sunday).
_WEEKDAYS = ({name: i for i, name in enumerate(WEEKDAYS)}
             | {char: min(i, 6) for i, char in enumerate(CJK_WEEKDAYS)})


def _on_day(words: str, named: list[Dated], rule: str, said_on: date | None) -> int:
    """4 when a change names the day a schedule is on: that date, or its weekday ("周四的会改到
    下周二" said on Tuesday: the meeting this Thursday; "Monday's stand-up" said on Thursday:
    the coming Monday; a weekday alone is the one within a week of the turn), else 0."""
    on = _day(rule)
    if not on or said_on is None:
        return 0
    day = date.fromisoformat(on)
    weekdays = [_WEEKDAYS[w.casefold()[-1:] if not w.isascii() else w.casefold()]
                for w in [weekday_word(d.said) for d in named] + [weekday_word(words)] if w]
    near = abs((day - said_on).days) <= 7
    if any(d.day == day for d in named) or near and day.weekday() in weekdays:
        return 4
    return 0


def _names(words: str, drafts: dict[str, Draft], existing: dict[str, Any] | None,
           object_id: str) -> bool:
    """Do the change's words name the object (its name or an alias)? One shared word is
    enough only then ("the move" -> alias "move"); otherwise two are needed."""
    names = names_of(existing) if existing else [drafts[object_id].name,
                                                  *drafts[object_id].aliases]
    return mentions(words, [n for n in names if n])


def _change(draft: Draft, change: Change, day: str) -> None:
    zh = draft.lang == "zh"
    body = str((draft.existing or {}).get("body") or "")
    old_rule = (draft.fields.get("rule") or pf.field_value(draft.type, body, "rule")
                or pf.UNKNOWN.get(draft.lang, "unknown"))
    old_state = draft.fields.get("state") or pf.field_value(draft.type, body, "state") or ""
    if change.kind == "moved" and change.day is not None and draft.type == "schedule":
        new = _moved_day(change, old_rule, day).isoformat()
        if new == _day(old_rule):  # said again (the assistant's echo): nothing changes
            if change.sentence not in draft.spans:
                draft.spans.append(change.sentence)
            return
        draft.fields["rule"] = new
        draft.fields["state"] = f"改期（原定 {old_rule}）" if zh else f"moved (was {old_rule})"
        draft.replace = draft.replace | {"rule"}
        # A name that carries the old day ("看牙医 10月20日", "dentist 2026-10-28") says the new
        # one, or recall would show the stale day first.
        for said in reversed(find_dates(draft.name, None)):
            draft.name = f"{draft.name[:said.start]}{new}{draft.name[said.end:]}".strip()
        # A weekday it answered to is stale now; the new one, when said so, is its handle.
        stale = {a for a in [*names_of(draft.existing or {})[1:], *draft.aliases]
                 if weekday_word(a) == a}
        draft.drop = draft.drop | stale
        draft.aliases = [a for a in draft.aliases if a not in stale]
        if weekday_word(change.said):
            draft.aliases.append(weekday_word(change.said))
            draft.drop = draft.drop - {weekday_word(change.said)}
        history = (f"{old_rule} → {new}（{day} 改期）" if zh
                   else f"{old_rule} -> {new} (moved on {day})")
    elif draft.type == "todo":  # a todo called off is dropped (objects/states.py)
        draft.fields["state"] = "已放弃" if zh else "dropped"
        history = (f"{day} 放弃（原为 {old_state or '未知'}）" if zh
                   else f"dropped on {day} (was {old_state or 'unknown'})")
    else:
        draft.fields["state"] = "已取消" if zh else "cancelled"
        history = (f"{day} 取消（原为 {old_state or '未知'}）" if zh
                   else f"cancelled on {day} (was {old_state or 'unknown'})")
    draft.lines.append(f"- 历史：{history}" if zh else f"- history: {history}")
    if change.sentence not in draft.spans:
        draft.spans.append(change.sentence)


def _moved_day(change: Change, old_rule: str, day: str) -> date:
    """The day a move names; a weekday alone ("dentist -> fri", "pushed to Thursday") is the
    one nearest the plan's old day and after the day it was said (Thu Dec 10 -> fri: Dec 11)."""
    old, said_on = _iso_day(_day(old_rule)), _iso_day(day)
    if change.weekday is None or change.day is None or old is None or said_on is None:
        return change.day or date.min
    candidates = [old + timedelta(days=k) for k in range(-6, 7)]
    after = [d for d in candidates if d.weekday() == change.weekday and d > said_on]
    return min(after, key=lambda d: abs((d - old).days), default=change.day)


def state_done(state: str) -> bool:
    return bool(re.search(r"\bdone\b|已完成", state))


def summary_of(draft: Draft, fields: dict[str, str]) -> str:
    zh, f = draft.lang == "zh", {k: v for k, v in fields.items() if not pf.is_unknown(v)}
    # A person's first name (people.first_name) is an alias for lookup, not worth saying.
    first = draft.name.split()[0] if draft.type == "person" and draft.name.split() else None
    aka = ", ".join(a for a in draft.aliases if a != first)
    if draft.type == "person":
        role = f.get("role") or ("职责未知" if zh else "role unknown")
        text = f"{draft.name}（{aka}）— {role}" if zh and aka else (
            f"{draft.name} ({aka}) — {role}" if aka else f"{draft.name} — {role}")
    elif draft.type == "todo":
        item, state = f.get("item", draft.name), f.get("state", "open")
        cond = f.get("condition", "")
        text = (f"待办：{item}" + (f"（{cond}）" if cond else "") + f" — {state}" if zh else
                f"Todo: {item}" + (f" ({cond})" if cond else "") + f" — {state}")
    elif draft.type == "schedule":
        item, rule = f.get("item", draft.name), f.get("rule", "")
        text = f"{rule}：{item}" if pf.lang_of(item) == "zh" else f"{item} — {rule}"
    elif draft.type == "knowledge":
        text = f.get("conclusion", draft.name)
    elif draft.type == "project":
        scope = f.get("scope") or ("范围未知" if zh else "scope unknown")
        text = f"{'项目' if zh else 'Project'} {draft.name}: {scope}"
    elif draft.type == "credential":
        text = (f"{f.get('purpose', draft.name)} — 存放在 {f.get('where', '未知')}（不存密钥本身）"
                if zh else f"{f.get('purpose', draft.name)} — lives in "
                           f"{f.get('where', 'unknown')} (the value is not stored)")
    else:
        text = draft.name
    return pf.clip(text, 400)


def cues_of(draft: Draft) -> list[str]:
    f = {k: v for k, v in draft.fields.items() if not pf.is_unknown(v)}
    zh = draft.lang == "zh"
    extra: list[str] = {
        "person": [f"{draft.name}是谁" if zh else f"who is {draft.name}", f.get("role", "")],
        "todo": [f.get("item", ""), f.get("condition", "")],
        "schedule": [f.get("item", ""), f.get("rule", "")],
        "knowledge": [],
        "project": [f"{draft.name} 项目" if zh else f"{draft.name} project"],
        "credential": [f"{f.get('purpose', draft.name)}在哪" if zh
                       else f"where is the {f.get('purpose', draft.name)}"],
    }.get(draft.type, [])
    return [pf.clip(c, 80) for c in pf.merge_unique([draft.name], draft.aliases, extra)
            if c][:12]


def write_profile(draft: Draft) -> dict[str, Any] | None:
    """The whole profile to write, or None when an existing profile would not change."""
    if draft.existing is None:
        status = "candidate" if draft.type == "project" else None
        body = with_lines(pf.render_body(draft.type, draft.fields, draft.lang), draft.lines)
        out = {"id": draft.id, "name": draft.name, "aliases": draft.aliases[:32],
               "summary": summary_of(draft, draft.fields), "body": body[:16_000],
               "cues": cues_of(draft), "status": status}
        if has_state(draft.type):
            out["state"] = state_from_text(draft.type, draft.fields.get("state", ""))
        return out if status else {k: v for k, v in out.items() if k != "status"}
    old = draft.existing
    old_body, old_summary = str(old.get("body") or ""), str(old.get("summary") or "")
    body = with_lines(pf.merge_body(draft.type, old_body, draft.fields, draft.lang,
                                    draft.replace), draft.lines)[:16_000]
    aliases = pf.merge_unique([a for a in old.get("aliases") or [] if a not in draft.drop],
                              [a for a in draft.aliases if a not in draft.drop],
                              exclude=str(old["name"]))
    if body == old_body and aliases == list(old.get("aliases") or []):
        return None  # nothing new: cite it, do not rewrite it
    summary = old_summary
    # a person's summary said "role unknown" and the body now holds one: it says the role
    unknown_role = draft.type == "person" and re.search(r"role unknown|职责未知", summary) and (
        not pf.is_unknown(pf.field_value("person", body, "role") or ""))
    if not summary or ((draft.type in ("todo", "schedule") or draft.replace or unknown_role)
                       and body != old_body):
        merged = {line.key: line.value for line in pf.parse_body(draft.type, body) if line.key}
        draft.aliases = aliases
        summary = summary_of(draft, merged)
    stale = _stale_cues(draft, old_body)
    cues = pf.merge_unique([c for c in old.get("cues") or [] if pf.norm(str(c)) not in stale],
                           cues_of(draft))
    out = {"id": draft.id, "name": draft.name, "aliases": aliases, "summary": summary,
           "body": body, "cues": cues}
    if old.get("status") in ("candidate", "active", "archived"):
        out["status"] = old["status"]
    said = state_from_text(draft.type, draft.fields.get("state", ""))
    if said is not None and said != default_state(draft.type):
        # Only a change this page said (moved, cancelled, done, dropped) is given: a rewrite
        # for another reason leaves the stored state to the write's rule (kept, unless the
        # body's state line now says another), so a state a person set by hand stays.
        out["state"] = said
    return out


def _stale_cues(draft: Draft, old_body: str) -> set[str]:
    """Cues (normalised) that said a value a stated change replaced — a moved schedule's old
    day, an old state, a name that carried the old day — so recall finds the current one."""
    old = draft.existing or {}
    values = [str(old.get("name") or "")] if draft.name != old.get("name") else []
    for key in draft.replace | pf.REPLACEABLE:
        value = pf.field_value(draft.type, old_body, key)
        if value and key in draft.fields and pf.norm(value) != pf.norm(draft.fields[key]):
            values.append(value)
    return {pf.norm(pf.clip(v, 80)) for v in values if v}


def with_lines(body: str, extra: list[str]) -> str:
    """`body` with the `extra` lines a speaker said appended, each once, within the size limit."""
    have = {pf.norm(line) for line in body.splitlines()}
    for line in extra:
        if pf.norm(line) not in have and len(body) + len(line) + 1 <= 16_000:
            body = f"{body}\n{line}" if body else line
            have.add(pf.norm(line))
    return body


def looks_secret(obj: dict[str, Any]) -> bool:
    text = " ".join([obj["name"], obj.get("summary", ""), obj.get("body", ""),
                     *obj.get("aliases", []), *obj.get("cues", [])])
    return bool(find_secret(text) or _SECRET_ASSIGNED.search(text))
