"""What a known speaker says about themself: conversation rules for the builtin model.

A speaker is known from the event's meta (`speaker`) or from a `Name: ` prefix on the page's
first line. Only then do first-person sentences count, because only then is it known whose
fact it is. Each rule fires on explicit wording:
- a turn with a first-person statement ("I started a new job as a financial analyst", "我养了
  三只狗", "my dogs are Pepper, Precious and Panda") or an intention ("I'm going to…", "I plan
  to…", "我打算…") gives its best clauses (up to FACTS_PER_TURN, each saying something the
  profile does not hold yet and naming enough), rewritten in the third person as a note-taker
  would ("Jon started a new job as a financial analyst; wants to open a studio": the subject
  named once, hedges and discourse cut), for ONE dated line of the speaker's person object;
- an intention with a time word ("next month", "this Saturday", "下周") is a schedule `about`
  the speaker;
- a person named with a relation ("my friend Sarah", "我妹妹李娜") becomes a person who `knows`
  the speaker.
Questions, greetings, thanks, compliments and talk about the listener ("you…") are chatter and
stay out. A relative date is kept as said, with the day it was said; it is resolved only when
that is plain arithmetic ("tomorrow", "next month", "下周").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ...dates.reader import month_of, week_of
from ...secrets.detector import find_secret
from .dates import find_dates
from .lexicon import NOT_FIRST_NAMES
from .names import EN_NAME, PASSING_NAME
from .people import valid_en_name, valid_zh_name
from .profiles import clip, lang_of
from .textspan import HAN, Span, sentences

_PREFIX = re.compile(
    r"^(?P<name>" + EN_NAME + r"|[\u4e00-\u9fff]{2,4})\s*[:：]\s*(?=\S)")
# Line labels that look like a "Name: " prefix but are not speakers.
_LABELS = frozenset({
    "Session", "Status", "Update", "Summary", "Agenda", "Subject", "Re", "Fyi", "Todo", "Note",
    "Notes", "Reminder", "Added", "Done", "Logged", "Noted", "Saved", "Marked", "Question",
    "Answer", "Result", "Error", "Warning", "Info", "Tip", "Step", "Action", "Decision", "Goal",
    "Plan", "Next", "Meeting", "Topic", "Title", "Date", "Time", "Where", "When",
    "Location", "Event", "Task", "Project", "Remember", "Remind", "Edit", "Draft", "Output",
    "Input", "User", "Assistant", "System", "Agent", "Tool", "Bot",
})
_FIRST_EN = re.compile(r"(?<![\w'’])(?:I|I'm|I’m|I've|I’ve|I'd|I’d|I'll|I’ll|my|My|me|mine|we|We|"
                       r"we're|We're|we’re|We’re|we've|We've|our|Our|us)(?![\w'’])")
_SUBJECT_EN = re.compile(r"(?:\w+\s)?(?:I|I'm|I’m|I've|I’ve|I'd|I’d|I'll|I’ll|my|My|we|We|"
                         r"we're|We're|we’re|We’re|we've|We've|our|Our)(?![\w'’])")
# A clause boundary where a new subject may start.
_CLAUSES_EN = re.compile(r"\s*(?:[,;:]\s+(?:(?:but|and|so|because|since|though)\s+)?|\s[-–—]\s|"
                         r"\s+(?:but|because|since|though)\s+)")
# Informal English drops the "I": "Took a short trip to Rome", "Been working on my biz".
_DROPPED_EN = re.compile(
    r"(?:Just |Finally |Recently |Also )?(?:Started|Took|Went|Got|Had|Been|Finished|Made|"
    r"Bought|Visited|Joined|Opened|Signed|Lost|Won|Tried|Found|Moved|Adopted|Still|Spent|Did|"
    r"Learned|Learnt|Saw|Met|Ran|Picked|Booked|Launched|Painted|Built|Wrote|Read|Watched|Cooked|"
    r"Baked|Planted|Volunteered|Graduated|Passed|Received|Quit)\b")
_CHATTER_EN = re.compile(
    r"^(?:(?:oh|wow|aw+|haha|ha|hey|hi|hello|yeah|yes|yep|no|ok|okay|sure|well|so|omg|lol|cool|"
    r"nice|great|awesome|totally|absolutely|definitely|hmm|ah|thanks|thank you)\b[\s,!.…-]*)*"
    r"(?:thanks?\b|thank you|that(?:'s|’s| is| was| sounds| must)|this (?:is|sounds)|sounds|"
    r"you(?:'re|’re|'ve|’ve|'ll|’ll)?\b|your\b|glad|congrat|good luck|take care|see you|bye|"
    r"talk (?:soon|later)|have (?:a|fun)|"
    r"i (?:totally |really |completely |definitely |can )?(?:agree|understand|know (?:what|how|"
    r"that feeling)|bet|hope (?:you|it|that|so)|wish you|appreciate|admire|can(?:'|’)t wait to "
    r"(?:see|hear)|can imagine|love (?:that|this|it|your|how|the way|hearing|seeing|to hear)|"
    r"feel you|get (?:it|that|you)|think (?:you|it(?:'|’)s|that(?:'|’)s) (?:great|awesome|"
    r"amazing|cool|wonderful))|"
    r"i(?:'|’)m (?:so |really |very |super |totally )?(?:glad|happy (?:for|to hear)|sorry|"
    r"proud of|excited for you|thrilled for you|here for you|all ears|curious)|"
    r"i(?:'|’)d love to (?:see|hear)|me too|same here|let me know|keep (?:it up|going|me posted)|"
    r"let(?:'|’)s|it(?:'|’)s (?:great|so|been|nice|good|awesome|amazing) |"
    r"can(?:'|’)t wait to (?:see|hear)|have faith)",
    re.IGNORECASE,
)
_PLAN_EN = re.compile(
    r"\b(?:I|we)(?:(?:'m|’m| am|'re|’re| are) (?:going to|gonna|planning (?:to|on)|hoping to|"
    r"thinking (?:about|of)|about to)| (?:plan|want|hope|intend) to)\s+"
    r"(?P<item>[^.!?;]{6,140})", re.IGNORECASE)
# Intentions too vague to act on: "never forget", "do that", "check them out", "keep you posted".
_VAGUE_EN = re.compile(r"(?:never|always|just|really|do (?:it|that|this)|check (?:it|them|that) "
                       r"out|see|try|keep|make (?:it|sure)|let|tell|say|think|hear|be\b)",
                       re.IGNORECASE)
_WHEN_EN = re.compile(
    r"\b(?P<when>tomorrow|tonight|this (?:weekend|week|month|summer|fall|autumn|winter|spring|"
    r"year|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day)|next (?:week|weekend|month|year|summer|"
    r"fall|autumn|winter|spring|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day)|in (?:a|one|two|"
    r"three|four|a few|\d+) (?:days?|weeks?|months?)|on (?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)"
    r"day)\b", re.IGNORECASE)
_RELATIONS_EN = (r"(?:best )?(?:friend|buddy|sister|brother|husband|wife|partner|mom|mother|dad|"
                 r"father|son|daughter|cousin|aunt|uncle|grandma|grandmother|grandpa|grandfather|"
                 r"boss|coworker|colleague|neighbou?r|boyfriend|girlfriend|niece|nephew|teacher|"
                 r"mentor|coach|therapist|roommate|fianc[eé]e?)")
_NAMED_EN = re.compile(r"\b[Mm]y (?P<rel>" + _RELATIONS_EN + r")\s*,?\s+(?P<name>" + PASSING_NAME
                       + r")(?![\w'’])")
_CHATTER_ZH = re.compile(
    r"^(?:哈哈|呵呵|谢谢|多谢|好的|好啊|好吧|是啊|是的|对啊|对呀|嗯|哇|真的吗|"
    r"太好了|加油|恭喜|没事|不客气|你呢|那你|你也|你真|祝你|晚安|早安|拜拜|再见)")
_PLAN_ZH = re.compile(
    r"我(?:们)?(?:打算|准备|计划|想要|想去|要去|决定|会去|将要)(?P<item>[^，。！？；]{2,60})")
_WHEN_ZH = re.compile(
    r"(?P<when>明天|后天|今晚|这周末|周末|下周[一二三四五六日天]?|下个?月|下周末|明年|"
    r"这个月|月底|年底|(?:这|本)周[一二三四五六日天])")
_RELATIONS_ZH = (r"(?:朋友|好友|闺蜜|同事|同学|妹妹|姐姐|哥哥|弟弟|妈妈|爸爸|母亲|"
                 r"父亲|老公|老婆|丈夫|妻子|儿子|女儿|表哥|表姐|表弟|表妹|邻居|室友|"
                 r"老板|老师|男朋友|女朋友)")
_NAMED_ZH = re.compile(r"我(?:的)?(?P<rel>" + _RELATIONS_ZH + r")(?P<name>[\u4e00-\u9fff]{2,3})")
# Characters that usually follow a name rather than end one ("王芳下周…", "李娜要来…").
_AFTER_NAME = frozenset("下上要来去在是和跟说也都就还会很的了今明昨刚又才已正从到把被给让")
# Chinese line labels that look like a "名字：" prefix.
_LABELS_ZH = frozenset({
    "记住", "待办", "提醒", "备注", "地点", "时间", "日期", "注意", "结论", "总结", "小结",
    "问题", "回答", "更新", "进度", "目标", "计划", "说明", "附注", "会议", "主题", "标题",
    "事项", "状态", "用户", "助手", "系统", "老师", "小贴士"})
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


@dataclass
class Speaker:
    """Who speaks on this page, and where their own words start (page-local)."""

    name: str
    start: int


@dataclass
class Said:
    """One thing the speaker said that the rules keep."""

    kind: str  # "fact" | "todo" (an intention without a time) | "schedule" | "person"
    sentence: Span
    text: str  # the words kept: the fact, the plan's item, a named person
    when: str = ""  # a plan's time as said
    resolved: str = ""  # that time as a date, when plain arithmetic gives it
    relation: str = ""  # a named person's relation to the speaker
    said_on: date | None = None  # the day it was said, for a plan
    clause: str = ""  # a fact's clause as said, in the first person
    rank: int = 0  # a fact's place among the turn's clauses, best first


def speaker_of(meta: object, text: str, page_start: int) -> Speaker | None:
    """The speaker from meta `speaker`, else from a `Name: ` prefix on the event's first line."""
    prefix = _PREFIX.match(text) if page_start == 0 else None
    if prefix and prefix.group("name") in _LABELS | NOT_FIRST_NAMES:
        prefix = None
    name = meta.get("speaker") if isinstance(meta, dict) else None
    if isinstance(name, str) and 1 <= len(name.strip()) <= 60 and not find_secret(name):
        name = " ".join(name.split())
        start = prefix.end() if prefix and prefix.group("name") == name else 0
        return Speaker(name, start)
    if prefix is None:
        return None
    name = prefix.group("name")
    if HAN.match(name):  # a surname first ("张伟") or a familiar form ("小明", "老王", "阿强")
        familiar = name[0] in "小老阿" and len(name) <= 3
        if name in _LABELS_ZH or not (valid_zh_name(name) or familiar):
            return None
    elif not valid_en_name(name):
        return None
    return Speaker(name, prefix.end())


def _is_fact(text: str, lang: str) -> bool:
    """A first-person statement with some content, not a question or chatter."""
    if text.rstrip().endswith(("?", "？")) or re.search(r"[吗呢嘛]\s*[。！!]?$", text):
        return False
    if lang == "zh":
        han = len(re.findall(r"[\u4e00-\u9fff]", text))
        return "我" in text and han >= 6 and "我" in text[:6] and not _CHATTER_ZH.match(text)
    words = re.findall(r"[\w'’]+", lead_cut(text))
    if len(words) < 6 or _CHATTER_EN.match(text) or _CHATTER_EN.match(lead_cut(text)):
        return False
    if _DROPPED_EN.match(" ".join(words)):  # "Started hitting the gym last week"
        return True
    # The speaker is the subject of some clause: "I …", "My dogs …", "Last week, we …",
    # "It was tough, but I …" ("me"/"us" are not).
    for clause in _CLAUSES_EN.split(text):
        head = re.findall(r"[\w'’]+", lead_cut(clause.strip()))
        if _SUBJECT_EN.match(" ".join(head[:2])):
            return True
    return False


def lead_cut(text: str) -> str:
    """The sentence without a leading interjection, address or time ("Wow, Mel! Last week, …")."""
    return re.sub(r"^(?:(?:[\w'’]+\s){0,2}[\w'’]+[,!]\s+){1,2}", "", text)


def resolve(when: str, said_on: date | None) -> str:
    """A relative time as a date (read by the date reader, memvault.dates.reader), or the week,
    month or year it names; else ''."""
    if said_on is None:
        return ""
    named = find_dates(when, said_on)
    if named:
        return named[0].day.isoformat()
    w = when.casefold()
    if w in ("tonight", "今晚"):
        return said_on.isoformat()
    if w in ("next month", "下个月", "下月"):
        first, _last = month_of(said_on, 1)
        return f"{_MONTHS[first.month - 1]} {first.year}"
    if w in ("next year", "明年"):
        return str(said_on.year + 1)
    if w in ("next week", "下周"):
        return f"week of {week_of(said_on, 1)[0].isoformat()}"
    return ""


def _plan(sent: Span, lang: str, said_on: date | None) -> Said | None:
    m = (_PLAN_ZH if lang == "zh" else _PLAN_EN).search(sent.text)
    if not m:
        return None
    item = m.group("item").strip(" ,，")
    when = (_WHEN_ZH if lang == "zh" else _WHEN_EN).search(sent.text)
    if lang == "en":
        item = re.split(r"\s+(?:and then|but|because|so that|since|if)\s+", item)[0]
    if when and when.start() >= m.start("item"):
        item = " ".join(item.replace(when.group("when"), " ").split()).strip(" ,，")
    if lang == "en" and (len(item.split()) < 3 or _VAGUE_EN.match(item)
                         or re.search(r"\byou\b", item, re.IGNORECASE)):
        return None
    if len(item) < 2:
        return None
    if when:
        said = when.group("when")
        return Said("schedule", sent, item, said, resolve(said, said_on), said_on=said_on)
    return Said("todo", sent, item)


def _named(sent: Span, lang: str, speaker: str) -> list[Said]:
    out: list[Said] = []
    for m in (_NAMED_ZH if lang == "zh" else _NAMED_EN).finditer(sent.text):
        name = m.group("name")
        if lang == "zh" and len(name) == 3 and name[2] in _AFTER_NAME:
            name = name[:2]
        ok = valid_zh_name(name) if lang == "zh" else valid_en_name(name)
        if ok and name != speaker and name.split()[0] not in NOT_FIRST_NAMES:
            out.append(Said("person", sent, name, relation=m.group("rel")))
    return out


def listen(text: str, speaker: Speaker, said_on: date | None) -> list[Said]:
    """Everything the speaker said on this page that the rules keep, in order; the facts are
    every candidate clause in the third person ("Jon lost their job as a banker yesterday"),
    ranked (`rank`) for pick_facts, those with the speaker as subject first."""
    out: list[Said] = []
    statements: list[tuple[Span, str]] = []
    personal = False
    for sent in sentences(text):
        if sent.end <= speaker.start:
            continue
        if sent.start < speaker.start:  # the sentence after the "Name: " prefix
            sent = Span(speaker.start, sent.end, text[speaker.start:sent.end])
        if find_secret(sent.text):
            continue
        lang = lang_of(sent.text)
        out.extend(_named(sent, lang, speaker.name))
        question = sent.text.rstrip().endswith(("?", "？"))
        plan = _plan(sent, lang, said_on) if not question else None
        if plan and plan.kind == "schedule":
            out.append(plan)
            continue
        if _is_fact(sent.text, lang) or plan:
            personal = True
        if not question and not _CHATTER_EN.match(lead_cut(sent.text)):
            statements.append((sent, lang))
    if personal:  # a turn about the speaker: its statements' best clauses
        out += _fact_clauses(statements, speaker.name)
    return sorted(out, key=lambda h: h.sentence.start)


FACTS_PER_TURN = 3
# names_enough's bar; 4 cost LoCoMo validation 3.4 points of fact recall for 3.8 of size.
MIN_SPECIFIC = 3
_EVALUATION_EN = re.compile(r"(?:it|that|this|which|there)(?:'s|’s|\s+(?:is|was|has been|had been|"
                            r"must have been|must've been|looks?|sounds?|feels?|seems?|were))\b|"
                            r"(?:sorry|congrats|congratulations|thanks|thank)\b", re.IGNORECASE)
# Where a statement's clauses part: not at every comma ("my dogs are Pepper, Precious and Panda").
_FACT_CLAUSES_EN = re.compile(r"\s*(?:;\s+|:\s+|,\s+(?:but|so|because|since|though|and then)\s+|"
                              r"\s[-–—]\s|\s+(?:but|because|since|though|'cause|cause)\s+)")
# Intensifiers and hedges: they carry no fact ("Jon is super keen" -> "Jon is keen").
_FILLER_EN = re.compile(r"(?<![\w'’])(?:so|really|super|totally|just|pretty|very|actually|"
                        r"definitely|absolutely|literally|kinda|sorta|quite)\s+(?=\w)",
                        re.IGNORECASE)
_LISTENER_EN = re.compile(r"\b(?:you|your|you're|you’re|yours|u|ya)\b", re.IGNORECASE)


def _fact_clauses(statements: list[tuple[Span, str]], name: str) -> list[Said]:
    """The turn's clauses worth a line: not about the listener, not an evaluation ("it was so
    powerful"), naming enough (names_enough); the speaker's own first, then the ones that name
    the most."""
    mine: list[Said] = []
    other: list[Said] = []
    for sent, lang in statements:
        if lang == "zh":
            if _is_fact(sent.text, lang):
                text = third_person_zh(sent.text.rstrip("。！!；;…"), name)
                mine.append(Said("fact", sent, clip(text, 120)))  # as said: no clause
            continue
        for clause in _FACT_CLAUSES_EN.split(sent.text):
            clause = lead_cut(_HEDGES_EN.sub("", lead_cut(clause)).strip(" ,.!…"))
            words = re.findall(r"[\w'’]+", clause)
            content = [w for w in words if len(w) > 3]
            # An evaluation is kept only when it says enough ("It was an intense season with
            # tough losses and great wins"), not "it was so powerful".
            if len(content) < 3 or _LISTENER_EN.search(clause) or (_EVALUATION_EN.match(
                    clause) and len(content) < 4) or _CHATTER_EN.match(clause):
                continue
            own = bool(_SUBJECT_EN.match(" ".join(words[:2])) or _DROPPED_EN.match(clause))
            line = clip(tighten(third_person(clause, name)), 120)
            if names_enough(line, name):  # else its slot goes to a clause that names more
                (mine if own else other).append(Said("fact", sent, line, clause=clause))
    ranked = [*sorted(mine, key=lambda h: specificity(h.text), reverse=True),
              *sorted(other, key=lambda h: specificity(h.text), reverse=True)]
    for rank, h in enumerate(ranked):
        h.rank = rank
    return ranked


def names_enough(line: str, name: str) -> bool:
    """Does a clause name enough to be a fact? One that names little ("Jon is excited about
    it", "Parenting is such a responsibility": no name or number, at most three longer words,
    the speaker counted as one, after the hedges are cut) is a feeling about something said
    elsewhere."""
    rest = re.sub(r"^" + re.escape(name) + r"\b", "", line)
    subject = 1 if rest != line else 0  # the speaker counts once, however short their name
    return subject + specificity(rest) + 2 * _other_names(rest) > MIN_SPECIFIC


def _other_names(text: str) -> int:
    """The names specificity does not see: a word in capitals ("AJ", "IBM") or starting with a
    letter of a script without case ("李娜", "東京"), or with a capital outside ASCII ("Émile");
    a clause naming one is a fact however short the name."""
    return sum(1 for w in re.findall(r"(?<=\s)[^\W\d_]+", text)
               if not re.match(r"[A-Z][a-z]", w)
               and (not w[0].islower() if not w.isascii() else len(w) > 1 and w.isupper()))


def pick_facts(heard: list[Said], kept: list[set[str]], name: str) -> tuple[list[Said],
                                                                           list[Said]]:
    """The turn's facts worth its line: up to FACTS_PER_TURN clauses by rank, each saying
    something the profile's lines (`kept`, as words_of gives them) do not hold yet; and the
    ones passed over as said before (to be cited, not written)."""
    chosen: list[Said] = []
    before: list[Said] = []
    for h in sorted(heard, key=lambda h: h.rank):
        new = words_of(h.text, name)
        if not new or repeats(new, kept):
            before.append(h)
        elif len(chosen) < FACTS_PER_TURN:
            chosen.append(h)
            kept.append(new)
    return sorted(chosen, key=_place), before


def _place(h: Said) -> tuple[int, int]:
    """Where a clause was said: its sentence, then its place in the sentence."""
    return h.sentence.start, max(0, h.sentence.text.find(h.clause)) if h.clause else 0


def words_of(line: str, name: str) -> set[str]:
    """A line's words of three letters or more (a Han run counts as one), not the name."""
    return {w for w in re.findall(r"[a-z0-9\u4e00-\u9fff]{3,}", line.casefold())
            if w != name.casefold()}


def repeats(new: set[str], kept: list[set[str]]) -> bool:
    """A line says nothing new when 80% of its words are already in one earlier line ("Jon
    is determined to make it work", again)."""
    return any(len(new & old) >= 0.8 * len(new) for old in kept)


def fact_line(said: list[Said], name: str) -> str:
    """One line for a turn's facts: English clauses name the speaker once (third_person),
    Chinese ones are joined as they are."""
    if not all(h.clause for h in said):
        return ("；" if lang_of(said[0].text) == "zh" else "; ").join(h.text for h in said)
    parts: list[str] = []
    for h in said:
        named = any(re.search(r"(?<![\w'’])" + re.escape(name) + r"(?![\w'’])", p)
                    for p in parts)
        parts.append(clip(tighten(third_person(h.clause, name, named)), 120))
    return "; ".join(parts)


# What a note-taker leaves out of a clause: hedges, intensifiers and discourse ("really",
# "just", "you know", "to be honest", "by the way", "lol", emoji), and "going to" as a future
# is "will". (Cutting a closing evaluation, "…, and it was amazing", and leading "so/well/also"
# cost more fact recall than size: not done.)
_HEDGES_EN = re.compile(r"(?:,\s*)?(?<![\w'’])(?:you know|I mean|to be honest|honestly|"
                        r"basically|seriously|truly|completely|extremely|incredibly|by the way|"
                        r"btw|lol|haha\w*|hehe|kind of|sort of)(?![\w'’]),?", re.IGNORECASE)
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u200D]")
_FUTURE_EN = re.compile(r"\b(?:is|are|am)\s+(?:gonna|going to)\s+(?!(?:the|a|an|my|their|"
                        r"his|her|our|some|school|work|bed|church|college|class|be\b)\b)"
                        r"(?=[a-z])")


def tighten(text: str) -> str:
    """`text` without what a note-taker leaves out (see above)."""
    text = _FUTURE_EN.sub("will ", _FILLER_EN.sub("", _HEDGES_EN.sub("", _EMOJI.sub("", text))))
    return " ".join(text.split()) or text


def specificity(text: str) -> int:
    """How much a clause names: its longer words, and twice its names and numbers ("Jon has
    been to Paris" beats "Jon is keen to spread that intensity")."""
    return len([w for w in re.findall(r"[\w'’]+", text) if len(w) > 3]) + 2 * len(
        re.findall(r"(?<=\s)[A-Z][a-z]+|\d+", text))



# Third person, by plain substitution: the speaker's name for "I", "their" for "my" (their
# gender is not known), and the verb after the name agreed ("I love" -> "Jon loves"). A line
# names its subject once, as a note-taker writes it: a later part that starts with "I" drops
# the subject ("Jon loves dramas; watches one a week", "…, and got a copy"); a later "we" is
# "they".
_SUBJECTS = re.compile(
    r"(?<![\w'’])(?:I['’](?:m|ve|d|ll)|I (?:am|was|have|do)|I don['’]t|"
    r"I(?P<adv>(?:\s+(?:\w+ly|just|still|never|always|even|also|often|now|sometimes))*)\s+"
    r"(?P<verb>[a-z]+)|I|"
    r"[Ww]e(?P<we>['’](?:re|ve|ll|d))?)(?![\w'’])")
_NAMED_FORMS = {"i'm": "is", "i've": "has", "i'd": "would", "i'll": "will", "i am": "is",
                "i was": "was", "i have": "has", "i do": "does", "i don't": "doesn't"}
_PART_START = re.compile(r"(?:^|[,;]\s+|\s(?:and|but|then)\s+)$")
_WE_VERBS = {"'re": " are", "'ve": " have", "'ll": " will", "'d": " would"}
_NO_AGREE = re.compile(
    r"(?:[a-z]+ed|was|were|went|got|had|did|made|took|saw|met|found|felt|knew|thought|began|"
    r"bought|brought|came|gave|left|lost|ran|said|sold|sent|spent|told|won|wrote|can|could|"
    r"will|would|should|might|must|may|also|just|really|still|never|always|even|recently|"
    r"finally|actually|totally|definitely|usually|often|only|already|is|has|does|and|or|"
    r"been|being|first|forgot|kept|slept|taught|caught|held|built|heard|[a-z]+ly|"
    r"[a-z]+ing)$")
_PRONOUNS = {"my": "their", "My": "Their", "me": "them", "myself": "themself", "mine": "theirs",
             "our": "their", "Our": "Their", "us": "them",
             "ourselves": "themselves"}


def third_person(clause: str, name: str, named: bool = False) -> str:
    """`clause` as said of the speaker in the third person (see above); `named` when the line
    it joins already said the speaker's name."""
    text = clause
    if _DROPPED_EN.match(text):  # "Lost my job…" -> "I lost my job…"
        text = "I " + text[0].lower() + text[1:]
    said = named
    mine = re.search(r"(?<![\w'’])I(?![\w])", text) is not None  # the name goes to "I" then

    def subject(m: re.Match[str]) -> str:
        nonlocal said
        form = m.group(0).replace("’", "'")
        if form[0] in "Ww":  # "we" keeps its plural verb: "Jon and others do all kinds…"
            verb = _WE_VERBS.get(m.group("we") or "", "")
            if said or mine:
                return "they" + verb
            said = True
            return f"{name} and others{verb}"
        key = form.casefold()
        if key in _NAMED_FORMS:
            verb = _NAMED_FORMS[key]
        elif m.group("verb"):
            verb = f"{m.group('adv').strip()} {_agree(m.group('verb'))}".strip()
        else:
            verb = ""
        # A part of the line that starts with its subject again drops it ("…; loves coconut
        # milk", "…here, likes playing for fun"); elsewhere the name stays, with its verb.
        head = "" if said and _PART_START.search(text[:m.start()]) else name
        said = True
        return " ".join(x for x in (head, verb) if x)

    text = _SUBJECTS.sub(subject, text)
    text = re.sub(r"(?<![\w'’-])(" + "|".join(_PRONOUNS) + r")(?![\w'’-])",
                  lambda m: _PRONOUNS[m.group(1)], text)
    return text


def _agree(verb: str) -> str:
    """The verb as it follows "he"/"she": "love" -> "loves", "go" -> "goes", "try" -> "tries"."""
    low = verb.lower()
    if _NO_AGREE.match(low) or not low.isalpha() or low.endswith("s"):
        return verb
    if low in ("am", "have", "do", "go"):
        return {"am": "is", "have": "has", "do": "does", "go": "goes"}[low]
    if re.search(r"(?:ch|sh|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def third_person_zh(text: str, name: str) -> str:
    """A Chinese statement with the speaker's name for 我 ("我养了三只狗" -> "李娜养了三只狗")."""
    return re.sub(r"我们", f"{name}他们", text).replace("我", name)
