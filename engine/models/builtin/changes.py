"""Plans with a date, things someone needs to do, and later changes to them.

`scan_plans(sentences, said_on)` finds, in Chinese and English, whoever says it:
- a dated plan: a statement (not a question) naming a day after the day it was said
  ("The Larkspur office move is scheduled for 2027-01-14", "林晓梅下周三来上海") becomes a
  schedule whose time rule is that day; the item is the sentence's subject when it has the form
  "X is scheduled/set/planned for DATE", else the sentence without the date;
- a need: "I need to…", "we have to…", "我要…", "我得…", "我需要…" becomes an open todo;
- a change: "postponed/moved/rescheduled to DATE", "改到/推迟到/提前到 DATE" (a new day),
  "cancelled", "called off", "取消了" (cancelled). A change names no object itself: organize.py
  applies it to the schedule or todo it names best, which keeps its old value as a history
  line (and, in the engine, as the object's previous version). One the user said that shares
  no word with any of them but is plainly about a plan ("The dentist appointment is
  cancelled") is kept as that plan (`unmatched_plan`), its day unknown: old history arrives
  in any order, so the plan said before the change may be organized after it (and then the
  engine keeps the change, said later, current: objects/latest.py).
A date in the past ("last Friday") is history and today ("今天是我的生日") a remark, not a plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from ...dates.reader import WEEKDAY_NAME, WEEKDAYS, next_weekday
from .dates import Dated, dated_clauses, find_dates
from .lexicon import NOT_FIRST_NAMES
from .people import zh_words
from .profiles import clip, lang_of
from .rules import Finding, head_aliases, short_name, weekday_word
from .textspan import Span

_QUESTION = re.compile(r"[?？]\s*$|[吗呢嘛]\s*[。！!]?\s*$")
_SET_FOR_EN = re.compile(
    r"^(?:(?:so|and|ok|okay|also|btw|fyi)[,:]?\s+)?(?P<item>.{3,80}?)\s+"
    r"(?:(?:is|are|was|will be|'s)\s+(?:now\s+)?"
    r"(?:scheduled|planned|set|booked|fixed|due|happening|taking place|on)\b|"
    # a note drops the verb: "Christmas night out booked for 19/12"
    r"(?:booked|scheduled|planned|set|fixed)\s+(?:for|on)$)",
    re.IGNORECASE)
_SET_FOR_ZH = re.compile(r"^(?P<item>.{2,30}?)(?:定在|安排在|约在|放在|订在|是在|在)\s*$")
# "need to", "have to", "must"; not "should" (advice) nor "got to" (often "had the chance to").
_NEED_EN = re.compile(
    r"\b(?:I|we)\s+(?:really\s+|still\s+|also\s+)?(?:(?:need|have|'ve got|’ve got)\s+to|must)"
    r"\s+(?P<item>[^.!?;]{6,120})", re.IGNORECASE)
# A note to oneself drops the subject: "Need to renew my registration before April". Only
# when no speaker is known: in a conversation "Have to say…", "Must be nice" are remarks.
_BARE_NEED_EN = re.compile(r"^\W*(?:(?:[Nn]eed|[Hh]ave)\s+to|[Mm]ust)\s+(?P<item>[^.!?;]{6,120})")
_VAGUE_NEED_EN = re.compile(r"(?i)^(?:do|make|be|get|keep|find|fix|show|try|see|say|think|go)\b"
                            r".*\b(?:it|that|this|something|things|however|better|way|up)\b")
_NEED_ZH = re.compile(r"我(?:们)?(?:还)?(?:需要|得|要|必须)(?P<item>[^，。！？；]{3,40})")
# A note's need without its subject ("要去银行办信用卡", "得把报告交了"): only in notes, and
# not 要是/要不/要么 (if, or else), 得了/得到, 要求 (a demand).
_BARE_NEED_ZH = re.compile(r"^\W*(?:(?:帮我)?记(?:一下|住|着)?[：:]\s*)?"
                           r"(?:[^，,。；;：:]{1,6}?(?:之前|以前|前))?(?:还)?(?:需要|得|要|必须)"
                           r"(?!是|不|么|了|到|求)"
                           r"(?P<item>[^，。！？；]{3,40})")
_NOT_TASK_ZH = re.compile(r"^(?:是|不|说|看看|想想|睡|走了|去睡|哭|笑)")
_MOVE_EN = re.compile(r"\b(?:postponed|moved|rescheduled|pushed(?:\s+back)?|delayed|shifted|"
                      r"brought\s+forward|bumped|changed)\s+(?:to|until|till)\s+|\s(?:->|→)\s*",
                      re.IGNORECASE)
_MOVE_ZH = re.compile(r"(?:改到|改为|改成|改在|推迟到|延期到|延到|推到|提前到|挪到|换到|调到)")
_CANCEL = re.compile(r"\b(?:cancel(?:l)?ed|called\s+off|scrapped|is\s+off|cxl(?:['’]?d|ed)?)\b|"
                     r"取消(?:了)?",
                     re.IGNORECASE)
# The cancelling verb first, its object after it: asked for ("Please cancel the offsite", "取消
#项目复盘会吧") or told in the first person ("We called off the board dinner").
_CANCEL_FIRST_EN = re.compile(
    r"^\W*(?:(?:please|pls|ok(?:ay)?|so|and|also)\s*,?\s+)*"
    r"(?:(?:I|we|they)\s+(?:have\s+|had\s+|just\s+|already\s+)*|let['’]s\s+)?"
    r"(?:cancel(?:l?ed)?|call(?:ed)?\s+off|scrap(?:ped)?)\s+(?P<what>[^,.;!?]{3,80})",
    re.IGNORECASE)
_CANCEL_FIRST_ZH = re.compile(r"^\W*(?:请|帮我|麻烦|我们|我)?(?:把)?取消(?:掉)?了?"
                              r"(?P<what>[^，,。！!？?；;]{2,30}?)(?:吧|了|啊)?(?=[，,。！!？?；;]|$)")
_LEAD_EN = re.compile(
    r"^(?:(?:change of plans?|update|heads up|fyi|btw|note|ok|okay|so)\s*[:,-]?\s*)+"
    r"|^(?:(?:I|we)(?:'m|’m| am|'re|’re| are)?\s+(?:going to|gonna|will|'ll|have|'ve got)\s+)"
    # what arranged it: "I signed up for the Bath half marathon" is the marathon
    r"|^(?:(?:I|we)\s+)?(?:signed up|registered|enrolled|entered)\s+(?:for|in)\s+",
    re.IGNORECASE)
_TRIM_EN = re.compile(r"\s+(?:on|for|at|by|from|until|is|are|will be|starting|scheduled)\s*$",
                      re.IGNORECASE)
_TRIM_ZH = re.compile(r"(?:定在|安排在|约在|放在|在|是|要|于|将|会)$")


@dataclass
class Change:
    """A statement that changes a plan: a new day, or cancelled."""

    kind: str  # "moved" | "cancelled"
    sentence: Span
    words: str  # the sentence without the change words: what names the changed object
    day: date | None = None
    said: str = ""
    subject: str = ""  # the words that name the changed plan alone (the clause before the verb)
    weekday: int | None = None  # a move to a weekday alone: the one nearest the plan's old day


@dataclass
class Plans:
    findings: list[Finding]
    changes: list[Change]


def scan_plans(sentences: list[Span], said_on: date | None, notes: bool = False) -> Plans:
    """Dated plans, needs and changes in the page's sentences (see the module doc); `notes`
    when no speaker is known (a need may drop its subject)."""
    found = Plans([], [])
    for sent in sentences:
        if _QUESTION.search(sent.text):
            continue
        change = _change(sent, said_on)
        if change is not None:
            found.changes.append(change)
            continue
        need = _need(sent, notes)
        if need is not None:
            found.findings.append(need)
            continue
        for part in dated_clauses(sent, said_on, plan_dates):
            plan = _dated_plan(part, said_on)
            if plan is not None:
                found.findings.append(plan)
    return found


_CLAUSE_END = re.compile(r"[,;，；]\s*|\s+(?:and|but)\s+")


def _change(sent: Span, said_on: date | None) -> Change | None:
    text = sent.text
    move = _MOVE_ZH.search(text) or _MOVE_EN.search(text)
    if move:
        moved = _moved_to(text, move, said_on)
        if moved is not None:
            subject = _clause_before(text, move.start())
            words = subject + " " + text[moved.end:]
            bare = not re.search(r"\d", moved.said) and not find_dates(moved.said, said_on)
            return Change("moved", sent, words.strip(), moved.day, moved.said, subject,
                          moved.day.weekday() if bare else None)
    swap = _INSTEAD.search(text)
    if swap:  # "could we do the Wednesday instead of the Tuesday, same time"
        days = plan_dates(text[swap.start("new"):swap.end("new")], said_on)
        moved = days[0] if days else _weekday_after(text, swap.start("new"), said_on)
        if moved is not None:
            subject = _clause_before(text, swap.start())
            bare = not re.search(r"\d", moved.said)
            # who asked for the swap names the plan as well ("Mrs. Okafor rang and asked …")
            return Change("moved", sent, f"{text[:swap.start()]} {swap.group('old')}", moved.day,
                          moved.said, subject, moved.day.weekday() if bare else None)
    first = _CANCEL_FIRST_EN.match(text) or _CANCEL_FIRST_ZH.match(text)
    if first:
        what = first.group("what").strip()
        return Change("cancelled", sent, what, subject=what)
    cancel = _CANCEL.search(text)
    if cancel:
        subject = _clause_before(text, cancel.start())
        return Change("cancelled", sent, subject, subject=subject)
    return None


# A day put in place of another: "the Wednesday instead of the Tuesday", "Friday rather than
# Thursday", "周五而不是周四" (the old day names the plan, the new one is its day).
_INSTEAD = re.compile(
    r"(?P<new>(?:the\s+)?(?:" + WEEKDAY_NAME + r"|\d{1,2}(?:st|nd|rd|th)?(?:\s+[A-Z][a-z]+)?)"
    r"(?:\s+the\s+\d{1,2}(?:st|nd|rd|th))?)\s+(?:instead\s+of|rather\s+than)\s+"
    r"(?P<old>(?:the\s+)?(?:" + WEEKDAY_NAME + r"|\d{1,2}(?:st|nd|rd|th)?)\b[^,.;]{0,30})",
    re.IGNORECASE)


def _moved_to(text: str, move: re.Match[str], said_on: date | None) -> Dated | None:
    """The day a move names after its verb: a date, else a weekday alone. After an arrow only
    a day right after it, and none when a day stands before it ("Mon Dec 7 -> Mon Dec 14" is a
    range, "Tom -> shift supervisor eff today" no move)."""
    after = [d for d in find_dates(text, said_on, numeric=True) if d.start >= move.end() - 1]
    if ">" in move.group() or "→" in move.group():
        if find_dates(text[:move.start()], said_on, numeric=True):
            return None
        after = [d for d in after if d.start <= move.end() + 1]
    return after[0] if after else _weekday_after(text, move.end(), said_on)


_WEEKDAY_NEXT = re.compile(r"\s*(?:the\s+)?(?P<wd>" + WEEKDAY_NAME + r")\b\.?"
                           r"(?:\s+(?:the\s+)?(?P<n>\d{1,2})(?:st|nd|rd|th)\b)?", re.IGNORECASE)


def _weekday_after(text: str, start: int, said_on: date | None) -> Dated | None:
    """The day a move names by its weekday alone ("moved to Thursday", "dentist -> fri"): the
    coming one; with a day of the month ("Thursday 10th") only when the two agree."""
    m = _WEEKDAY_NEXT.match(text, start)
    if m is None or said_on is None:
        return None
    prefix = m.group("wd").casefold()[:3]
    weekday = next(i for i, w in enumerate(WEEKDAYS) if w.startswith(prefix))
    first = next_weekday(said_on, weekday)
    agreeing = [d for d in (first + timedelta(weeks=k) for k in range(5))
                if not m.group("n") or d.day == int(m.group("n"))]
    return Dated(m.start("wd"), m.end(), m.group().strip(), agreeing[0]) if agreeing else None


# A change that names no known plan is kept only when its subject is plainly a plan: an event
# word in it ("dentist appointment", "board dinner", "周一的例会"), said as news (no modal, no
# request to the listener), not a person ("Wei Ling cancelled") nor a pronoun ("It's off").
_EVENT_EN = re.compile(
    r"\b(?:appointments?|meetings?|visits?|reviews?|calls?|dinners?|lunch(?:es)?|breakfasts?|"
    r"part(?:y|ies)|trips?|flights?|class(?:es)?|lessons?|sessions?|interviews?|offsites?|"
    r"conferences?|workshops?|games?|match(?:es)?|concerts?|shows?|recitals?|exams?|tests?|"
    r"check-?ups?|inspections?|ceremon(?:y|ies)|weddings?|events?|rehearsals?|trainings?|"
    r"practices?|stand-?ups?|syncs?|demos?|launch(?:es)?|webinars?|talks?|bookings?|"
    r"reservations?|deliver(?:y|ies)|shipments?|retreats?|screenings?|tours?|hearings?|"
    r"dates?|night|day|viewings?|fittings?|consultations?|surgery|operation)\b", re.IGNORECASE)
_EVENT_ZH = re.compile(r"会|约|行程|聚餐|聚会|饭局|面试|课|航班|体检|检查|考试|比赛|演出|婚礼|旅行|"
                       r"旅游|出差|复诊|看牙|活动|派对|发布|交付|发货|讲座|培训|复盘|评审|答辩|典礼")
_MODAL_EN = re.compile(r"\b(?:will|would|could|should|might|may|must|gonna|going\s+to|to\s+be|"
                       r"if|whether|not)\b", re.IGNORECASE)
_MODAL_ZH = re.compile(r"可能|也许|打算|准备|将要|要不要|会不会|是否|如果|没有|没")
_LEAD_WORDS_EN = re.compile(
    r"^(?:[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?:\s*)?"  # a speaker's "Nora: "
    r"(?:(?:actually|so|and|but|also|oh|ok|okay|well|update|fyi|btw|heads up|sadly|"
    r"unfortunately|change of plans?)\b[\s,:-]*)*(?:the|our|my|a|an|this|that)?\s*",
    re.IGNORECASE)
# What is left of "the dentist visit is (postponed)", "the offsite has been (moved)".
_AUX_TAIL_EN = re.compile(r"(?:\s+(?:is|are|was|were|has|have|had|been|got|gets|now|just|also|"
                          r"already|officially|finally))+$|['’]s(?:\s+been)?$", re.IGNORECASE)
_PRONOUN_EN = re.compile(r"^(?:i|we|he|she|they|it|you|this|that|these|those|everything|"
                         r"something)\b", re.IGNORECASE)
_LEAD_ZH = re.compile(r"^(?:[^：:]{1,12}[：:]\s*)?(?:我们|我|把|那个|这个)?")
_TAIL_ZH = re.compile(r"(?:也|还|都|又|就|已经|被|的)+$")


def unmatched_plan(change: Change) -> Finding | None:
    """The schedule a change that names no known one is about, its day unknown, when its
    subject is plainly a plan (see above): "The dentist appointment is cancelled" -> the
    dentist appointment, cancelled. None otherwise: a vague or personal subject ("It's off",
    "Wei Ling cancelled"), news not yet true ("will be cancelled"), a request to the listener
    ("帮我写一封邮件，告诉客户发货推迟到…")."""
    text, lang = change.sentence.text, lang_of(change.sentence.text)
    if (_NOT_PLAN_EN if lang == "en" else _TO_LISTENER_ZH).search(text):
        return None
    subject = change.subject.strip(" ,.!?;:，。！？；：")
    if lang == "en":
        subject = _AUX_TAIL_EN.sub("", _LEAD_WORDS_EN.sub("", subject)).strip(" ,.!-")
        plain = (_EVENT_EN.search(subject) and not _MODAL_EN.search(subject)
                 and not _PRONOUN_EN.match(subject) and len(subject.split()) <= 8)
    else:
        subject = _TAIL_ZH.sub("", _LEAD_ZH.sub("", subject)).strip(" ，,")
        plain = _EVENT_ZH.search(subject) and not _MODAL_ZH.search(subject)
    name = short_name(subject)
    if not plain or len(name) < 2:
        return None
    fields = {"rule": "", "item": clip(subject, 200), "state": "", "note": ""}
    return Finding("schedule", name, fields, change.sentence, lang, head_aliases(subject, lang))


def _clause_before(text: str, end: int) -> str:
    """The words of the clause that ends at `end`: what a change names ("the on-call rotation
    is published, and the SaaS plan is cancelled" names only the SaaS plan)."""
    starts = [m.end() for m in _CLAUSE_END.finditer(text, 0, end)]
    return text[(starts[-1] if starts else 0):end].strip()


def _need(sent: Span, notes: bool = False) -> Finding | None:
    lang = lang_of(sent.text)
    m = (_NEED_ZH if lang == "zh" else _NEED_EN).search(sent.text)
    if m is None and notes:
        m = (_BARE_NEED_EN if lang == "en" else _BARE_NEED_ZH).match(sent.text)
    if not m:
        return None
    item = m.group("item").strip(" ,，。.")
    if lang == "zh" and _NOT_TASK_ZH.match(item):
        return None
    if lang == "en":
        item = re.split(r"\s+(?:and then|but|because|so that|since|if)\s+", item)[0]
        if len(item.split()) < 2 or re.search(r"\byou\b", item, re.IGNORECASE) or (
                _VAGUE_NEED_EN.match(item)):
            return None
    name = short_name(item)
    if len(name) < 2:
        return None
    fields = {"item": item, "condition": "", "state": "open" if lang == "en" else "未完成",
              "note": ""}
    return Finding("todo", name, fields, sent, lang, head_aliases(item, lang))


# English tense: a plan says so ("will", "going to", "scheduled for") or at least has no verb in
# the past ("I started pottery classes on Monday" is last Monday, not a plan).
_PLANNED_EN = re.compile(r"\b(?:will|'ll|’ll|going to|gonna|scheduled|planned|planning|set for|"
                         r"booked|due|plan to|need to|have to|coming up|is on|are on)\b", re.I)
_PAST_EN = re.compile(r"\b(?:was|were|did|had|went|got|took|made|saw|met|came|left|began|"
                      r"bought|ran|won|lost|[a-z]{3,}ed)\b", re.IGNORECASE)


# Not a plan: talk to the listener ("see you tomorrow", "let's…"), or the day itself as the
# subject ("Tomorrow's gonna be awesome", "明天是…").
_NOT_PLAN_EN = re.compile(r"\b(?:you|your|you're|let's|let’s|lets|can't wait|cannot wait)\b|"
                          r"^\W*(?:tomorrow|today|tonight)(?:'s|’s|\s+(?:is|will be|was))\b",
                          re.IGNORECASE)


_TO_LISTENER_ZH = re.compile(r"你|您|帮我|请|麻烦")
# An instruction, not a plan: "Please leave comments inline; we would like to freeze…".
_REQUEST_EN = re.compile(r"^\W*(?:please|pls|plz|kindly)\b", re.IGNORECASE)
# An action item whose owner is a team ("4) Fake clock for the two search-indexer tests —
# search team, Nov 6"): that team's plan, not the user's.
_TEAM_OWNED = re.compile(r"\s[—–-]\s+(?:the\s+)?[\w-]+\s+team\s*,?\s*$", re.IGNORECASE)


# A wish the speaker is unsure of, said before its day, is no plan (me.tentative_wishes).
_UNSURE = re.compile(r"\b(?:maybe|perhaps|possibly|might|thinking\s+(?:of|about)|not sure|"
                     r"idk|someday|hypothetically)\b|也许|或许|说不定|还没定|不一定", re.IGNORECASE)


# Someone else away is their news, not the user's plan: "fyi Mei's out on PTO Dec 21 – Jan 4",
# "Brenda is off next week", "Jess on leave Dec 3", "王丽下周请假".
_AWAY = re.compile(
    r"^\W*(?:(?:fyi|btw|also|and|so|oh)\b[,:]?\s*)*(?P<who>[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)"
    r"(?:(?:['’]s|\s+is|\s+will\s+be|\s+['’]ll\s+be)\s+(?:away|out|off)\b|"
    r"(?:['’]s|\s+is|\s+will\s+be)?\s+on\s+(?:PTO|leave|holiday|vacation|annual\s+leave|"
    r"sick\s+leave|mat(?:ernity)?\s+leave|paternity\s+leave)\b)|"
    r"^\W*[\u4e00-\u9fff]{2,4}(?:[^，。]{0,8})(?:请假|休假|休年假)")


def _someone_away(text: str) -> bool:
    m = _AWAY.match(text)
    who = (m.group("who") or "") if m else ""
    return m is not None and who.split()[0:1] != ["I"] and not _EVENT_EN.search(who) and (
        who.split()[0] not in NOT_FIRST_NAMES if who else True)


def plan_dates(text: str, said_on: date | None) -> list[Dated]:
    """The days a plan may name: every day phrase, and a bare slashed day ("12/10", "15/12":
    month first unless the first cannot be a month) when near, not a hyphened one ("9-5" is
    hours), a count ("8/8") nor one in a range ("12/20-12/27", the reader skips it)."""
    return [d for d in find_dates(text, said_on, numeric=True)
            if not re.fullmatch(r"\d{1,2}-\d{1,2}", d.said) and not (
                re.fullmatch(r"\d{1,2}/\d{1,2}", d.said) and not _near_slashed(d, said_on))]


def _near_slashed(dated: Dated, said_on: date | None) -> bool:
    """A bare slashed day is a day when it is near (within 120 days of the turn) and not a
    count ("8/8 runners online", "3/3 done")."""
    first, second = dated.said.split("/")
    return said_on is not None and first != second and (
        0 <= (dated.day - said_on).days <= 120)


def _dated_plan(sent: Span, said_on: date | None) -> Finding | None:
    lang = lang_of(sent.text)
    past = lang == "en" and not _PLANNED_EN.search(sent.text) and _PAST_EN.search(sent.text)
    if lang == "en" and _NOT_PLAN_EN.search(sent.text):
        return None
    dates = [d for d in plan_dates(sent.text, said_on) if said_on is None or d.day > said_on]
    if not dates:
        return None
    when = dates[0]
    # a weekday and the date it is ("周日晚上吃火锅，12月13日", "Sunday, 13 December"): the date
    said_day = [d for d in dates[1:] if re.search(r"\d", d.said) and weekday_word(when.said)
                and not re.search(r"\d", when.said) and d.day.weekday() == when.day.weekday()]
    when = said_day[0] if said_day else when
    # A verb in the past that arranged a day named outright, still ahead, in the same clause
    # ("I signed up for the half marathon on March 29", "booked a table for May 3"); a
    # relative day after a past verb is the past ("I started pottery classes on Monday"), and
    # "until November 7" arranges nothing.
    # A day of the month alone after a past verb ("I went there on the 4th") is a past day.
    if past and not (said_on and re.match(r"\d|[A-Za-z]{3}", when.said) and not re.match(
            r"(?:on|next|this|last|in|tomorrow|yesterday|today)\b|\d{1,2}(?:st|nd|rd|th)$",
            when.said, re.I)
            and re.search(r"\b(?:on|for)\s+(?:the\s+)?$", sent.text[:when.start])
            and _PAST_EN.search(re.split(r"[,;:”\"]", sent.text[:when.start])[-1])):
        return None
    before, after = sent.text[: when.start], sent.text[when.end:]
    if _UNSURE.search(before) or _someone_away(sent.text):  # unsure; someone else's leave
        return None
    if _REQUEST_EN.match(sent.text) or _TEAM_OWNED.search(before):
        return None  # a request to the listener; an action item a team owns is theirs
    timed = False
    if lang == "zh":  # only the clause that holds the date
        clauses_before = re.split(r"[，,；;]", before)
        before, after = clauses_before[-1], re.split(r"[，,；;]", after)[0]
        if not before.strip() and not after.strip(" 。.！!") and len(clauses_before) > 1:
            # a day said alone as its own clause ("…约了周日晚上吃火锅，12月13日，在五道口"):
            # the plan is the clause before it
            before = clauses_before[-2]
        after = re.sub(r"^(?:之前|以前|前|之后|以后)?(?:就要|就|要|得|会|将)?", "", after.strip())
        clock = _CLOCK_ZH.match(after)
        if clock and clock.group() and not before.strip():  # "下周一上午十点面试": a timed note
            timed, after = True, after[clock.end():]
        set_for = _SET_FOR_ZH.match(before.strip())
        item = set_for.group("item") if set_for else _TRIM_ZH.sub("", before.strip()) + after
        item = re.sub(r"^(?:是|我们|我|的)+", "", item).strip(" ，,。.！!")
    else:
        set_for = _SET_FOR_EN.match(before.strip())
        item = set_for.group("item") if set_for else f"{before.strip()} {after.strip()}"
        item = _TRIM_EN.sub("", _LEAD_EN.sub("", item.strip(" ,.!"))).strip(" ,.!")
        item = re.sub(r"^(?:the|our|my|a|an)\s+", "", item, flags=re.IGNORECASE)
    item = re.sub(r"^\W*(?:\d+[).）]|[（(][^）)]{1,12}[）)])\s*", "", item)  # "2) …", "（周五）…"
    name = short_name(event_phrase(item))
    # "X is scheduled for DATE" / "X定在DATE" names an event; otherwise the rest must be an act.
    if len(name) < 2 or not set_for and not _actionable(name, lang) and not (
            timed and _event_zh(name)):
        return None
    handle = _timeless(item) if lang == "en" else item
    name = short_name(_timeless(event_phrase(item)) if lang == "en" else name)
    relative = not re.search(r"\d{4}", when.said)
    said = f" ({when.said}, said on {said_on.isoformat()})" if relative and said_on else ""
    if lang == "zh":
        said = f"（{when.said}，{said_on.isoformat()} 说的）" if relative and said_on else ""
    fields = {"rule": when.day.isoformat() + said, "item": clip(item, 200),
              "state": "已安排（一次）" if lang == "zh" else "scheduled (one-off)", "note": ""}
    # said by its weekday ("周四下午三点…"), it answers to it: "周四的会改到下周二" names it
    weekday = [w for w in [weekday_word(when.said)] if w]
    return Finding("schedule", name, fields, sent, lang, head_aliases(handle, lang) + weekday)


# A clock or a weekday left in an English item ("dentist thu 2:30p", "vendor call 10am"): the
# rule holds the day, so the name and its handles go without them ("dentist").
_CLOCK_OR_WEEKDAY = re.compile(r"\s*\b(?:\d{1,2}(?::\d{2})?\s*[ap]\.?m?\.?|\d{1,2}:\d{2}|"
                               + WEEKDAY_NAME + r")(?![\w:])", re.IGNORECASE)


def _timeless(item: str) -> str:
    plain = _CLOCK_OR_WEEKDAY.sub("", item).strip(" ,.;")
    return plain if len(plain) >= 3 else item


# Who said a plan is not the plan: "Marcus says the movers need the floor plan by January 5"
# names "movers need the floor plan" (the item keeps the whole, so the plan is still about him).
_REPORTED = re.compile(
    r"^(?:[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?\s+(?:says|said|mentioned|mentions|told (?:me|us)|"
    r"tells (?:me|us)|thinks|reminded (?:me|us)|wrote|writes)(?:\s+that)?|"
    r"[\u4e00-\u9fff]{2,4}(?:说|提到|告诉我|讲)[，,：:]?)\s*")


# What follows a label when the label is the event: its time ("at 14:00", "2:30pm").
_TIME_FIRST = re.compile(r"(?:at|on|from|by|@)\s|\d{1,2}[:.]\d{2}|\d{1,2}\s*[ap]\.?m\b",
                         re.IGNORECASE)


def event_phrase(item: str) -> str:
    """The words that name a plan: the item without who reported it, a leading label or number
    ("Follow-ups (owner, due): 1) …") or article, and when long its first part ("Marcus says
    the movers need the floor plan" -> "movers need the floor plan", "On-call rotation for the
    runner fleet — Tom" -> "On-call rotation for the runner fleet")."""
    phrase = _REPORTED.sub("", item.strip(), count=1)
    phrase = re.sub(r"^(?:the|our|my|a|an)\s+", "", phrase, flags=re.IGNORECASE)
    if len(phrase) > 40:  # a comma inside brackets parts nothing
        label = re.match(r"^([^:：]{2,30})[:：]\s*(?=\S{2})", phrase)
        if label and _TIME_FIRST.match(phrase[label.end():]):
            phrase = label.group(1)  # "Appraisal with Dr. Fenwick: 09.12.2026 at 14:00, …"
        elif label:
            phrase = phrase[label.end():]
        phrase = re.sub(r"^\W*\d+[).）]\s*", "", phrase)
        phrase = re.split(r"\s+[—–-]\s+|[;；]\s*|[,，]\s*(?![^(（]*[)）])", phrase)[0]
    return phrase if len(phrase) >= 2 else item


_WEATHER_ZH = re.compile(r"[晴阴雨雪雾霾冷热暖凉]|降温|升温|气温|天气|刮风|大风|台风")
_VAGUE_WORDS = frozenset({"it", "up", "this", "that", "them", "there", "here", "things",
                          "something", "anything", "stuff", "out", "back", "some"})


# A time of day and a clock after a Chinese date ("上午十点", "晚上六点", "下午两点半", "下午"):
# part of the appointment's time, not of what it is.
_CLOCK_ZH = re.compile(r"(?:上午|下午|晚上|早上|中午|傍晚|凌晨)?\s*"
                       r"(?:[\d一二三四五六七八九十两]{1,3}\s*[点:：]\s*"
                       r"(?:半|[\d一二三四五六七八九十]{1,3}\s*分?)?)?")


def _event_zh(name: str) -> bool:
    """What a date-led, timed note names ("面试", "部门聚餐", "开家长会"): two Han chars or more
    holding a noun or a verb, and not a request to the listener."""
    if len(re.findall(r"[\u4e00-\u9fff]", name)) < 2 or re.search(r"你|帮我|请|麻烦", name):
        return False
    return any(flag[:1] in ("n", "v", "j") for _, flag in zh_words(name))


def _actionable(name: str, lang: str) -> bool:
    """An item someone could do or attend: English with two real words and not a condition
    ("If anything looks odd…"), Chinese with a verb or a noun (jieba), not a request to the
    listener ("帮我查一下…", "提醒你…") nor weather ("稍微回暖一点", "北京晴")."""
    if lang == "en":
        words = [w for w in re.findall(r"[A-Za-z]{3,}", name) if w.lower() not in _VAGUE_WORDS]
        return len(words) >= 2 and not re.match(r"(?i)(?:if|when|whether|maybe)\b", name)
    if len(re.findall(r"[\u4e00-\u9fff]", name)) < 3 or re.search(r"你|帮我|请|麻烦", name):
        return False
    # one event word is enough ("下午三点开会", "去面试", "飞北京", "部门聚餐"), unless it is the
    # weather ("北京晴", "稍微回暖一点", "降温了")
    flags = {flag[:1] for _, flag in zh_words(name)}
    return ("v" in flags or "n" in flags) and not _WEATHER_ZH.search(name)
