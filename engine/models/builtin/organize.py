"""organize for the builtin model: one page of one event in, one OrganizeProposal out.

Invariants of what it proposes:
- every object written has at least one evidence span, the sentence it came from, as ABSOLUTE
  char offsets inside [page.start, page.end);
- an object found in `related` is updated (aliases merged, unknown facts filled in, a todo's
  state changed) and never duplicated; when nothing would change only evidence is attached;
  an existing object that is not in `related` is never rewritten knowingly;
- a new project is `candidate`; a credential holds purpose and location, never a value, and any
  object whose text looks like a secret is dropped;
- what a known speaker says about themself (speech.py) becomes one dated third-person line of
  their person object per turn (a full profile continues in a monthly knowledge object), or
  schedules and people `about`/`knows` that person;
- dated plans, needs and changes (changes.py) become schedules and todos; a change rewrites the
  object it names, keeping the old value as a history line; people named in passing
  (people.find_named) or with a relation or title (kin.py) become persons; in a speaker's
  small talk only news of someone counts;
- a user with no speaker (no name the page could hold) has their work, commitments, wishes
  said by a pronoun (me.py) and preferences (prefs.py, one object per topic, rewritten when
  it changes) kept as objects of their own;
- the page's `memory_output` spans (the memory's own output quoted back, listed by the engine)
  are blank to the rules and never cited; a correction naming such a range drops every
  citation of it;
- exactly one disposition: continue (not the last page), else linked when this or earlier pages
  produced targets, else archive_only with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from typing import Any

from ..payloads import OrganizePayload, PayloadEvent, PayloadPage
from . import changes, speech
from . import profiles as pf
from .dates import dated_clauses, find_dates
from .drafts import (
    Directory,
    Draft,
    apply_changes,
    apply_done,
    draft_for,
    looks_secret,
    names_of,
    object_id_for,
    state_done,
    write_profile,
)
from .me import health_facts, self_facts, tentative_wishes, wishes
from .named import named_people
from .people import first_name, romanized
from .prefs import apply_preferences, find_preferences
from .roles import apply_role_changes, find_role_changes
from .rules import Finding, Scan, scan, short_name
from .textspan import Span, blanked, lines, mention_pattern, overlaps, sentences

MODEL = "builtin-rules-1"
PRIORITY = {"project": 0, "person": 1, "credential": 2, "todo": 3, "schedule": 4,
            "knowledge": 5, "task": 6}
MAX_OBJECTS, MAX_RELATIONS, MAX_EVIDENCE, SPANS_PER_OBJECT = 32, 64, 256, 4
# A speaker's person body takes dated lines up to this size; later facts become knowledge
# objects about them, so the profile stays readable and fits in every claim that names them.
PERSON_LINES_CAP = 15_000


def _relations(drafts: dict[str, Draft], directory: Directory, text: str) -> list[dict[str, str]]:
    """member_of the projects and about the people each draft names (see the module doc)."""
    projects: dict[str, list[str]] = {}
    for obj in directory.of_type("project"):
        if obj["id"] != "project:daily":
            projects[str(obj["id"])] = names_of(obj)
    for d in drafts.values():
        if d.type == "project":
            projects[d.id] = [d.name, *d.aliases]
    people: dict[str, list[str]] = {str(o["id"]): names_of(o) for o in directory.of_type("person")}
    for d in drafts.values():
        if d.type == "person":
            people[d.id] = pf.merge_unique(people.get(d.id, []), [d.name, *d.aliases])
    firsts = [n.split()[0] for names in people.values() for n in names[:1] if " " in n]
    for pid, names in people.items():
        first = names[0].split()[0] if " " in names[0] else ""
        if len(first) >= 3 and firsts.count(first) == 1:
            names.append(first)
        elif first:  # two people's shared first name (their alias) names neither of them
            people[pid] = [n for n in names if n != first]
    page_lines = lines(text)
    out: list[dict[str, str]] = []
    for d in drafts.values():
        if d.type == "project":
            continue
        if d.type == "person":  # a person belongs to the projects named where they are named
            said = " ".join(ln.text for ln in page_lines
                            if any(ln.start <= s.start < ln.end for s in d.spans))
        else:  # anything else to the projects and people its own words name
            said = " ".join([d.name, *d.fields.values(), str((d.existing or {}).get("body", ""))])
        for pid, names in projects.items():
            named = {pf.norm(p) for p in d.projects} & {pf.norm(n) for n in names}
            if named or _mentions(said, names):
                out.append({"src": d.id, "label": "member_of", "dst": pid})
        if d.type in ("todo", "schedule", "knowledge", "credential"):
            for pid, names in people.items():
                if pid != d.id and _mentions(said, names):
                    out.append({"src": d.id, "label": "about", "dst": pid})
    return out


def _mentions(text: str, names: list[str]) -> bool:
    return any((p := mention_pattern(n)) is not None and p.search(text) for n in names)


def _ensure_projects(drafts: dict[str, Draft], directory: Directory) -> None:
    """A project named by a role ("designer on Aurora") becomes a candidate if unknown."""
    for d in list(drafts.values()):
        for name in d.projects:
            if directory.find("project", object_id_for("project", name) or "", [name]) or any(
                    p.type == "project" and pf.norm(name) in {pf.norm(n) for n in
                                                              [p.name, *p.aliases]}
                    for p in drafts.values()):
                continue
            finding = Finding("project", name, {"scope": "", "goal": "", "state": ""},
                              d.spans[0], d.lang)
            draft_for(drafts, directory, finding)


def _drop_false_people(drafts: dict[str, Draft], directory: Directory) -> None:
    project_names = {pf.norm(n) for d in drafts.values() if d.type == "project"
                     for n in [d.name, *d.aliases]}
    project_names |= {pf.norm(n) for o in directory.of_type("project") for n in names_of(o)}
    # "Appraisal moved to Thursday": the word that heads a known plan's name is that plan
    plans = [d.name for d in drafts.values() if d.type == "schedule"]
    plans += [str(o.get("name") or "") for o in directory.of_type("schedule")]
    project_names |= {pf.norm(n.split()[0]) for n in plans if n.split()}
    for key in [k for k, d in drafts.items() if d.type == "person" and d.existing is None
                and pf.norm(d.name) in project_names]:
        del drafts[key]


def _cite_titled_project(drafts: dict[str, Draft], directory: Directory, event: PayloadEvent,
                         page: PayloadPage, text: str) -> None:
    """A note or long document whose title line names a known project is cited for it."""
    first = lines(text)[:1]
    if int(page["start"]) != 0 or not first or not (
            event.get("kind") == "note" or int(event.get("chars") or len(text)) >= 1000):
        return
    for obj in directory.of_type("project"):
        object_id = str(obj["id"])
        if object_id != "project:daily" and _mentions(first[0].text, names_of(obj)):
            if object_id not in drafts:
                drafts[object_id] = Draft(object_id, "project", str(obj["name"]),
                                          pf.lang_of(text), existing=obj)
            if first[0] not in drafts[object_id].spans:
                drafts[object_id].spans.append(first[0])


def build(payload: OrganizePayload) -> tuple[dict[str, Any], list[str]]:
    """The proposal for one organize payload, and notes for the disposition."""
    event, page = payload["event"], payload["page"]
    text, base, end = str(page.get("text") or ""), int(page["start"]), int(page["end"])
    directory = Directory(payload.get("related") or [])
    # The memory's own output quoted back (the engine lists it) is never read as new facts
    # nor cited: the rules see blanks there, and the agent's words around it still count.
    quoted = memory_output(payload)
    text = blanked(text, quoted)
    notes: list[str] = []
    if event.get("kind") == "tool_result" or event.get("source") == "tool":
        found = Scan([], [])
        notes.append("tool output; the builtin rules do not take facts from tool results")
    else:
        found = scan(text)
    drafts: dict[str, Draft] = {}
    said_on = _said_on(event)
    for finding in found.findings:
        _on_its_day(finding, said_on)
        draft_for(drafts, directory, finding)
    speaker = None if notes else speech.speaker_of(event.get("meta"), text, base)
    plans = changes.Plans([], []) if notes else _plans(text, found, speaker, said_on)
    if event.get("source") not in ("user", None):  # the agent's words are not the user's plans
        plans.findings = []
    for finding in plans.findings:
        draft_for(drafts, directory, finding)
    if speaker is None and not notes and event.get("source") in ("user", None):
        # the user's own work and commitments, said with no name on the page (me.py)
        taken = [f.sentence for f in [*found.findings, *plans.findings]]
        free = _free(text, taken + [d.sentence for d in found.done if not d.verb])
        listed = {f.sentence for f in found.findings if f.type in ("project", "todo",
                                                                    "knowledge")}
        plain = [s for s in sentences(text) if s not in listed]  # "Project: … diabetes clinic"
        for finding in self_facts(free) + wishes(free, said_on.isoformat() if said_on else
                                                   "undated") + health_facts(plain) + (
                tentative_wishes(plain)):
            draft_for(drafts, directory, finding)
        apply_preferences(find_preferences(free), drafts, directory,
                          said_on.isoformat() if said_on else "undated")
    tool = bool(notes)
    chatter = speaker is not None and not _conversation(drafts, directory, speaker, text, event)
    if not tool:  # a speaker's words about someone else count too ("Raj: Tomas is moving…")
        notes += named_people(drafts, directory, text, speaker, said_on, chatter)
    if not tool and event.get("source") in ("user", None):  # the newer role is current
        apply_role_changes(find_role_changes(sentences(text)), drafts, directory,
                           said_on.isoformat() if said_on else "undated")
    if chatter and speaker is not None and not drafts:
        notes.append(f"{pf.clip(speaker.name, 60)} said nothing the rules keep: a question, "
                     "greeting, thanks or talk about the listener, no first-person statement, "
                     "plan or named person")
    _drop_false_people(drafts, directory)
    for draft in drafts.values():  # "Marcus Lee" answers to "Marcus" (people.first_name),
        # "张伟" to "Zhang Wei" and its "老张" to "Lao Zhang" (people.romanized): said on a new
        # person or one rewritten anyway (never a rewrite for the aliases alone)
        if draft.type == "person" and (draft.existing is None or write_profile(draft)):
            names = [draft.name, *draft.aliases, *names_of(draft.existing or {})]
            said = [first_name(draft.name), *(romanized(n) for n in names)]
            draft.aliases = pf.merge_unique(draft.aliases, [n for n in said if n],
                                            exclude=draft.name)
    _ensure_projects(drafts, directory)
    apply_done(found, drafts, directory)
    notes += apply_changes(plans.changes, drafts, directory,
                           said_on.isoformat() if said_on else "undated",
                           keep_unmatched=event.get("source") in ("user", None))
    if found.findings or found.done or event.get("kind") == "note":
        _cite_titled_project(drafts, directory, event, page, text)
    if any(not d.verb for d in found.done) and not any(
            d.type == "todo" and state_done(d.fields.get("state", "")) for d in drafts.values()):
        notes.append("a done marker named no open todo among the related objects")

    if quoted:
        notes.append(_uncited(drafts, quoted, payload))
    writes: list[dict[str, Any]] = []
    cited: list[Draft] = []
    for draft in sorted(drafts.values(), key=lambda d: (PRIORITY.get(d.type, 9), d.id)):
        obj = write_profile(draft)
        if obj is not None and looks_secret(obj):
            notes.append(f"dropped {draft.id}: its text looks like a secret value")
            continue
        if obj is not None and len(writes) >= MAX_OBJECTS:
            continue
        if obj is not None:
            writes.append(obj)
        cited.append(draft)
    evidence: list[dict[str, Any]] = []
    for draft in cited:
        for span in draft.spans[:SPANS_PER_OBJECT]:
            start, stop = max(base, base + span.start), min(end, base + span.end)
            if stop > start and len(evidence) < MAX_EVIDENCE:
                evidence.append({"object_id": draft.id, "event_id": event["id"], "start": start,
                                 "end": stop})
    known = {d.id for d in cited} | set(directory.by_id) | set(payload.get("targets") or [])
    relations: list[dict[str, str]] = []
    seen: set[tuple[str, str, str]] = set()
    owned = [{"src": d.id, "label": "knows" if d.type == "person" else "about", "dst": d.owner}
             for d in cited if d.owner]
    for rel in [*owned, *_relations({d.id: d for d in cited}, directory, text)]:
        key = (rel["src"], rel["label"], rel["dst"])
        if rel["src"] != rel["dst"] and rel["src"] in known and rel["dst"] in known and (
                key not in seen and len(relations) < MAX_RELATIONS):
            seen.add(key)
            relations.append(rel)
    proposal = {"objects": writes, "relations": relations, "evidence": evidence,
                "core_files": [], "events": []}
    proposal["events"] = [disposition(payload, proposal, notes)]
    return proposal, notes


def memory_output(payload: OrganizePayload) -> list[tuple[int, int]]:
    """The page's memory-output spans (the payload's `memory_output`), page-local."""
    base = int(payload["page"]["start"])
    return [(int(s["start"]) - base, int(s["end"]) - base)
            for s in payload.get("memory_output") or []]


def _uncited(drafts: dict[str, Draft], quoted: list[tuple[int, int]],
             payload: OrganizePayload) -> str:
    """Drop every span that meets memory output, and the drafts left with none (an object is
    only written with its evidence); the note saying what was not read."""
    for key, draft in list(drafts.items()):
        draft.spans = [s for s in draft.spans if not overlaps(s, quoted)]
        if not draft.spans:
            del drafts[key]
    base = int(payload["page"]["start"])
    where = ", ".join(f"{base + start}-{base + end}" for start, end in quoted[:4])
    whats = sorted({str(s.get("what") or "memory output")
                    for s in payload.get("memory_output") or []})
    return (f"chars {where} are memory output ({', '.join(whats[:3])}): not read as new facts "
            "and never cited")


def _plans(text: str, found: Scan, speaker: speech.Speaker | None,
           said_on: date | None) -> changes.Plans:
    """Dated plans, needs and changes (changes.py) in sentences no explicit rule used; a plan
    a known speaker makes is about them."""
    # a plain past tense ("Booked the pottery class, it's on April 4") may still hold a plan
    # a person named in a sentence does not use it up: "和高中同学张磊约了…吃火锅" is a plan too
    taken = [f.sentence for f in found.findings if f.type != "person"] + [
        d.sentence for d in found.done if not d.verb]
    plans = changes.scan_plans(_free(text, taken, speaker.start if speaker else 0), said_on,
                               notes=speaker is None)
    owner = object_id_for("person", speaker.name) if speaker else None
    for finding in plans.findings:
        finding.owner = owner or ""
    return plans


def _on_its_day(finding: Finding, said_on: date | None) -> None:
    """An appointment said with its day ("Tuesday 8 December at 3:10pm", "Nov 3 at 08:15")
    keeps that day as a calendar day first, as a dated plan does, so a later change finds it
    by its day and a day gone reads past: "2026-12-08 (Tuesday 8 December at 3:10pm)"."""
    rule = finding.fields.get("rule", "")
    if finding.type != "schedule" or said_on is None or not rule or re.match(
            r"\s*\d{4}-\d{2}-\d{2}", rule) or re.search(r"recurring|重复", finding.fields.get(
                "state", "")):
        return
    found = find_dates(rule, said_on)
    # "11 月 1 日（周日）12:00": the date said in figures, its weekday only repeats it
    days = {d.day for d in found if re.search(r"\d", d.said)} or {d.day for d in found}
    if len(days) == 1:
        day = days.pop()
        finding.fields["rule"] = (f"{day.isoformat()}（{rule}）" if pf.lang_of(rule) == "zh"
                                  else f"{day.isoformat()} ({rule})")


def _free(text: str, taken: list[Span], start: int = 0) -> list[Span]:
    """The page's sentences from `start` on that no span in `taken` overlaps; of a sentence
    that joins two dated clauses (dates.dated_clauses), the clauses none overlaps."""
    return [s for sent in sentences(text) if sent.end > start
            for s in (dated_clauses(sent, None) if any(
                t.start < sent.end and sent.start < t.end for t in taken) else [sent])
            if not any(t.start < s.end and s.start < t.end for t in taken)]


def _said_on(event: PayloadEvent) -> date | None:
    try:
        return date.fromisoformat(str(event.get("occurred_at") or "")[:10])
    except ValueError:
        return None


def _conversation(drafts: dict[str, Draft], directory: Directory, speaker: speech.Speaker,
                  text: str, event: PayloadEvent) -> bool:
    """Drafts for what a known speaker says about themself (see speech.py); False when the
    speaker said nothing the rules keep."""
    said_on = _said_on(event)
    # A sentence the explicit rules already used (a self-introduction, a TODO) is not said again.
    taken = [span for d in drafts.values() for span in d.spans]
    heard = [h for h in speech.listen(text, speaker, said_on) if not any(
        t.start < h.sentence.end and h.sentence.start < t.end for t in taken)]
    if not heard:
        return bool(drafts)
    day = said_on.isoformat() if said_on else "undated"
    facts = [h for h in heard if h.kind == "fact"]
    known = directory.find("person", object_id_for("person", speaker.name) or "", [speaker.name])
    if known is not None and not facts:  # known already: each plan cites it by its relation
        owner, who = str(known["id"]), None
    else:
        first = (facts or heard)[0].sentence
        who = draft_for(drafts, directory, Finding("person", speaker.name, {}, first,
                                                   pf.lang_of(first.text)))
        if who is None:
            return bool(drafts)
        owner = who.id
    body = str((who.existing or {}).get("body") or "") if who else ""
    for h in heard:
        if (finding := _finding(h, speaker.name, owner)) is not None:
            draft_for(drafts, directory, finding)
    kept = [speech.words_of(line, speaker.name) for line in body.splitlines()]
    # the turn's facts: ONE dated line of the speaker's profile
    said, before = speech.pick_facts(facts, kept, speaker.name)
    for h in before:
        if who is not None and h.sentence not in who.spans:
            who.spans.append(h.sentence)  # said before: cite it, do not write it again
    if said and who is not None:
        joined = speech.fact_line(said, speaker.name)
        line = f"- {day}: {joined}"
        body = str((who.existing or {}).get("body") or "")
        if len(body) + sum(len(x) + 1 for x in who.lines) + len(line) + 1 > PERSON_LINES_CAP:
            who = draft_for(drafts, directory, _continuation(speaker.name, owner, day, said))
            body = str((who.existing or {}).get("body") or "") if who else ""
        if who is not None:
            # A later line of the same day is indented under the first, without its date.
            last = (who.lines or body.splitlines() or [""])[-1]
            if last.startswith((f"- {day}: ", "  - ")) and (
                    last.startswith(f"- {day}: ") or _day_of(who, body) == day):
                line = f"  - {joined}"
            who.lines.append(line)
            who.spans += [h.sentence for h in said if h.sentence not in who.spans]
    return True


def _day_of(draft: Draft, body: str) -> str:
    """The day of the last dated line of a profile (with the lines this page adds)."""
    for line in reversed([*body.splitlines(), *draft.lines][::1]):
        m = re.match(r"- (\d{4}-\d{2}-\d{2}|undated): ", line)
        if m:
            return m.group(1)
    return ""


def _continuation(speaker: str, owner: str, day: str, said: list[speech.Said]) -> Finding:
    """The knowledge object that takes a full profile's further lines, one per month: named
    "Jon, 2023-03" with the speaker's name as alias, so a later page naming them brings it."""
    month = day[:7]
    lang = pf.lang_of(said[0].sentence.text)
    conclusion = (f"{speaker} {month} 说的事（个人档案已满）" if lang == "zh" else
                  f"what {speaker} said in {month} (their profile is full)")
    return Finding("knowledge", f"{speaker}, {month}", {"conclusion": conclusion, "applies": "",
                                                       "experience": ""},
                   said[0].sentence, lang, aliases=[speaker], owner=owner)


def _finding(h: speech.Said, speaker: str, owner: str) -> Finding | None:
    """The object one heard statement makes; None for a fact (a line of the speaker's own
    profile)."""
    lang = pf.lang_of(h.sentence.text)
    zh = lang == "zh"
    label = f"{speaker}：" if zh else f"{speaker}: "
    if h.kind == "person":
        role = f"{speaker}的{h.relation}" if zh else f"{speaker}'s {h.relation}"
        return Finding("person", h.text, {"identity": "", "role": role, "traits": "",
                                          "howto": ""}, h.sentence, lang, owner=owner)
    if h.kind == "fact":
        return None
    name = pf.clip(label + short_name(speech.lead_cut(h.text), 50), 60)
    day = h.said_on.isoformat() if h.said_on else "undated"
    when = f"{h.when}（{day} 说的" if zh else f"{h.when} (said on {day}"
    when += (f"，约 {h.resolved}）" if zh else f"; about {h.resolved})") if h.resolved else (
        "）" if zh else ")")
    return Finding("schedule", pf.clip(f"{name} {h.resolved or h.when}", 60),
                   {"rule": when, "item": h.text, "state": "计划（一次）" if zh else
                    "planned (one-off)", "note": ""}, h.sentence, lang, owner=owner)


def disposition(payload: OrganizePayload, proposal: dict[str, Any],
                notes: list[str]) -> dict[str, Any]:
    """continue / linked / archive_only for the claimed event, from what the proposal holds."""
    event, page = payload["event"], payload["page"]
    cited = sorted({e["object_id"] for e in proposal["evidence"]})
    if not page.get("last", True):
        earlier = str(payload.get("progress") or "")
        done_part = f"; earlier: {pf.clip(earlier, 600)}" if earlier else ""
        text = (f"{MODEL} read chars {page['start']}-{page['end']} of event {event['id']}; "
                f"cited {', '.join(cited) or 'nothing'}{done_part}; next: the page from "
                f"char {page['end']}")
        return {"event_id": event["id"], "outcome": "continue", "progress": pf.clip(text, 2000)}
    if cited or payload.get("targets"):
        return {"event_id": event["id"], "outcome": "linked"}
    reason = ("no durable fact the builtin rules recognise: no self-introduction or role "
              "statement, TODO/待办/提醒我/remind me, dated or recurring appointment, "
              "remember that/记住, named project or credential location; small talk or "
              "details only a real model could judge")
    if notes:
        reason = "; ".join(notes) + "; " + reason
    return {"event_id": event["id"], "outcome": "archive_only", "reason": pf.clip(reason, 1000)}


def correct(payload: OrganizePayload, previous: dict[str, Any], field_path: str,
            error: str) -> dict[str, Any]:
    """Resubmit `previous` without what the correction names; always smaller, never looping."""
    fixed = {k: list(previous.get(k) or []) for k in
             ("objects", "relations", "evidence", "core_files")}
    parts = field_path.split(".")
    head = parts[0] if parts else ""
    index = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    unread = bool(re.search(r"\bread\b|overwrit", error, re.IGNORECASE))
    quoted = _refused_range(error) if head == "evidence" else None
    if quoted is not None:  # memory output: no citation of that range, the one named or not
        _drop_evidence(fixed, lambda e: int(e.get("start", 0)) < quoted[1]
                       and quoted[0] < int(e.get("end", 0)))
    elif head in ("objects", "relations", "evidence", "core_files") and index is not None:
        if index < len(fixed[head]):
            gone = fixed[head].pop(index)
            if head == "objects" and not unread:
                _forget(fixed, str(gone.get("id")))
    elif head in ("objects", "relations", "evidence", "core_files"):
        for obj in fixed[head] if head == "objects" and not unread else []:
            _forget(fixed, str(obj.get("id")))
        fixed[head] = []
    elif head == "events":
        # linked without a link, or archive_only with writes (uncited ones: archive_only is
        # only chosen with no evidence): without the writes, archive_only is allowed unless the
        # event already has targets, and then the disposition is linked.
        if any(d.get("outcome") in ("linked", "archive_only")
               for d in previous.get("events") or []):
            fixed = {k: [] for k in fixed}
    elif fixed["relations"]:
        fixed["relations"] = []
    elif fixed["objects"]:
        _forget(fixed, str(fixed["objects"].pop().get("id")))
    else:
        fixed["evidence"] = []
    proposal: dict[str, Any] = {**fixed, "events": []}
    proposal["events"] = [disposition(payload, proposal, [f"after a correction ({error[:200]})"])]
    return proposal


def _refused_range(error: str) -> tuple[int, int] | None:
    """The chars [start, end) an evidence refusal names as memory output, if it does."""
    m = re.search(r"chars \[(\d+), (\d+)\) of event \d+ are memory output", error)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _drop_evidence(proposal: dict[str, list[Any]],
                   refused: Callable[[dict[str, Any]], bool]) -> None:
    """Drop the evidence `refused` picks; an object left with no evidence goes too (with its
    relations): the builtin writes nothing it cannot cite."""
    before = {str(e.get("object_id")) for e in proposal["evidence"]}
    proposal["evidence"] = [e for e in proposal["evidence"] if not refused(e)]
    for object_id in before - {str(e.get("object_id")) for e in proposal["evidence"]}:
        proposal["objects"] = [o for o in proposal["objects"] if o.get("id") != object_id]
        _forget(proposal, object_id)


def _forget(proposal: dict[str, list[Any]], object_id: str) -> None:
    proposal["evidence"] = [e for e in proposal["evidence"] if e.get("object_id") != object_id]
    proposal["relations"] = [r for r in proposal["relations"]
                             if object_id not in (r.get("src"), r.get("dst"))]
