"""The builtin model's extraction patterns: what a plain rule can recognise reliably.

`scan(text)` reads one page and returns findings (person, todo, schedule, knowledge, project,
credential) and done markers, each tied to the sentence it came from (page-local offsets).
Patterns match anywhere in a line, in Chinese and English; they only fire on explicit wording
("TODO:", "待办：", "提醒我", "Remind me to", "Remember that", "记住：", "every Monday at 10:00",
"10月20日下午3点", "project Lighthouse", "… lives in 1Password"). Anything subtler is left
alone: a rule that guesses writes wrong memories, which is worse than writing none.
A credential finding holds purpose and where the secret lives, never a value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...dates.reader import CJK_WEEKDAYS, MONTHS, WEEKDAYS, ZH_DAY_NUMBER, ZH_MONTH_NUMBER
from .dates import dated_clauses
from .lexicon import NOT_FIRST_NAMES
from .people import find_people, zh_words
from .profiles import clip, lang_of, merge_unique
from .textspan import Span, sentences

WD_ZH = "[一二三四五六日天]"
HOUR_ZH = r"(?:\d{1,2}|十[一二]?|[一二两三四五六七八九])"
CLOCK_ZH = (
    r"(?:(?:早上|上午|中午|下午|晚上|傍晚|凌晨)\s*)?(?:\d{1,2}\s*[:：]\s*\d{2}|" + HOUR_ZH
    + r"\s*点(?:\s*(?:半|一刻|三刻|\d{1,2}\s*分?|[一二三四五]?十[一二三四五六七八九]?分?))?)"
)
# a day as the date reader reads it: digits or Chinese numerals ("5月2日", "九月三十号")
DATE_ZH = (
    rf"(?:(?:\d{{4}}\s*年\s*)?(?:{ZH_MONTH_NUMBER})\s*月\s*(?:{ZH_DAY_NUMBER})\s*[日号]|"
    r"\d{4}-\d{1,2}-\d{1,2})"
    r"(?:\s*[（(](?:周|星期)" + WD_ZH + r"[）)])?"
)
RECUR_ZH = (
    r"(?:每个?(?:周|星期|礼拜)" + WD_ZH + r"(?:[、和]" + WD_ZH + r")*|每天|每日|每晚|每早|"
    r"每个?工作日|每个?月\s*\d{1,2}\s*[日号]|隔周" + WD_ZH + r"|每两周" + WD_ZH + r"?)"
)
TIME_WORD_ZH = (
    r"(?:(?:下|这|本)?(?:周|星期|礼拜)" + WD_ZH + r"|明天|后天|今天|今晚|明早|明晚|这个?月底|月底|"
    r"月初|年底|下个?月|下周|本周|这周|" + DATE_ZH + r"|早上|上午|中午|下午|晚上|傍晚|"
    + HOUR_ZH + r"\s*点半?)"
)
# The date reader's weekday and month names (memvault.dates.reader), as these sentence shapes
# write them: a weekday in full and capitalised, a month by its first letters ("Sept" too).
WD_EN = r"(?:" + "|".join(w.capitalize() for w in WEEKDAYS) + r")"
MONTH_EN = r"(?:" + "|".join([*(m[:3].capitalize() for m in MONTHS), "Sept"]) + r")[a-z]*\.?"
CLOCK_EN = r"(?:\d{1,2}:\d{2}(?:\s*[ap]\.?m\.?)?|\d{1,2}\s*[ap]\.?m\.?)"
DATE_EN = (
    r"(?:\d{4}-\d{2}-\d{2}|" + MONTH_EN + r"\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?|"
    r"\d{1,2}(?:st|nd|rd|th)?\s+" + MONTH_EN + r"(?:\s+\d{4})?)"
)

_SCHED_ZH = re.compile(
    r"(?P<rule>(?:(?P<recur>" + RECUR_ZH + r")|(?P<date>" + DATE_ZH + r"))\s*" + CLOCK_ZH + r")"
)
_SCHED_EN = re.compile(
    r"(?P<rule>\b(?:(?P<recur>(?i:every)\s+(?:other\s+)?(?:day|weekday|morning|evening|night|"
    r"week|month|" + WD_EN + r"s?)(?:\s*(?:,|and|&)\s*" + WD_EN + r")*\s+(?:at\s+)?)|"
    r"(?:on|for)\s+(?:" + WD_EN + r",?\s+)?(?P<date>" + DATE_EN + r"),?\s+(?:at|@)\s*)"
    + CLOCK_EN + r")"
)
_TODO = re.compile(r"(?:\b(?i:todo|to-do|(?:open|action)\s+items?(?:\s+for\s+me)?)\b|待办(?:事项)?)"
                   r"\s*[:：]\s*(?P<body>.+)$")
_REMIND_ZH = re.compile(r"提醒我\s*(?P<body>.+)$")
# Imperatives only: at the start of a clause or after "please"/"can you"; "these photos remind
# me of home" and "just remember that…" (advice, reminiscence) are not instructions.
_CLAUSE_START = (r"(?:^|(?<=[.!?;:,，。：；—]\s)|(?<=[.!?;:,，。：；—])|"
                 r"\b(?:[Pp]lease|pls|[Cc]an you|[Cc]ould you|[Aa]lso)\s+)")
# An English fact worth keeping names something: a digit, a path or URL, a capitalised word (a
# name), or the speaker ("I", "my"); "remember that staying positive matters" does not.
_SPECIFIC_EN = re.compile(r"\d|/|\s[A-Z]|\b(?:I|my|me|we|our|us)\b")
_REMIND_EN = re.compile(_CLAUSE_START + r"[Rr]emind me (?!of\b)(?:to |that |about )?(?P<body>.+)$")
_REMEMBER_EN = re.compile(_CLAUSE_START + r"[Rr]emember(?:\s+that|\s*:)\s+(?P<body>[^?]+)$")
_REMEMBER_ZH = re.compile(r"记住(?:一下)?\s*[：:，,]\s*(?P<body>.+)$")
COND_EN = re.compile(
    r"\s+(?P<cond>(?:by|before|after|until|till|when|once|whenever|tomorrow|tonight|today|"
    r"next\s+\w+|this\s+(?:week|weekend|month|morning|afternoon|evening)|in\s+\d+\s+\w+|"
    r"on\s+(?:(?:the\s+)?\d|" + WD_EN + r"|" + MONTH_EN + r"|weekends?))\b.*)$"
)
_COND_ZH_LEAD = re.compile(
    r"^(?P<cond>(?:" + TIME_WORD_ZH + r"|\s)+(?:之前|以前|前|之后|以后)?)(?=\S)"
)
_COND_ZH_ANY = re.compile(r"(?P<cond>(?:" + TIME_WORD_ZH + r")+(?:之前|以前|前|截止))")
_SPLIT_EN = re.compile(r"\s+(?:—|–|-)\s+|;\s*|,\s+|\s+(?:so|because|since)\s+")
_SPLIT_ZH = re.compile(r"\s*[，,；;（(]\s*|\s+(?:—|–)\s+")
_APPLIES_ZH = re.compile(r"(?P<a>[^，。,；]{2,16}的时候|如果[^，。,；]{2,20})")
_APPLIES_EN = re.compile(r"\b(?P<a>(?:when|whenever|if|during|especially|only)\s+[^,.;—]{2,50})")
_URL = re.compile(r"https?://\S+")
_FILLER_LEAD = re.compile(
    r"^(?:(?:and|also|added|add|a|an|the|new|recurring|event|reminder|set|done|noted|ok|okay|"
    r"please|our|my)\b\s*)+", re.IGNORECASE,
)
_FILLER_TAIL = re.compile(
    r"(?:\s+(?:is|are|was|scheduled|set|planned|booked|moved|happens|at|in|on|to|the))+$",
    re.IGNORECASE,
)
_CHATTY = re.compile(r"^(?:please|can you|could you|帮我|请|麻烦)", re.IGNORECASE)
_FILLER_ZH = re.compile(r"添加|已记录|记下了|已标记|^(?:还有|另外|顺便|好的?|嗯|对了|并)$")
_TAIL_ZH = re.compile(r"\s*(?:放在|定在|改到|改在|安排在|是|在|照常|照旧)$")
_ARRANGED_ZH = re.compile(r"(?:已经)?(?:报好|订好|约好|定好|安排好|报名)了?$")
_LABEL_WORDS = {"时间", "日期", "地点", "time", "date", "when", "where"}

_PROJECT_PATTERNS = (
    re.compile(r"(?P<zh>[\u4e00-\u9fff]{2,6})项目\s*[（(]\s*(?P<name>[A-Za-z][\w-]{1,30})\s*[）)]"),
    re.compile(r"\b[Pp]roject\s+(?P<name>[A-Z][\w-]{1,30})\b"),
    # "the Aurora project", "kicks off Aurora project"; not "Your project" opening a sentence
    re.compile(r"(?:\b[Tt]he\s+(?P<the>[A-Z][\w-]{1,30})|(?<=[a-z,] )(?P<name>[A-Z][\w-]{1,30}))"
               r"\s+project\b"),
    re.compile(r"项目\s*(?P<name>[A-Z][\w-]{1,30})"),
    re.compile(r"(?<![\w-])(?P<name>[A-Z][\w-]{1,30})\s*项目"),
    re.compile(r"[「“\"](?P<name>[^」”\"]{2,20})[」”\"]\s*项目"),
)
_SECRET_EN = (r"(?:password|passphrase|passcode|key|token|secret|credentials?|pin|certificate|"
              r"license)")
_CRED_EN = re.compile(
    r"(?P<what>\b(?:[\w'’-]+\s+){0,5}?" + _SECRET_EN + r"(?:\s+(?:for|of|to)\s+(?:the\s+)?"
    r"[\w'’ -]{1,30}?)?)\s+(?:(?:that|which)\s+)?(?:is\s+|are\s+)?(?:lives?|kept|stored|saved|"
    r"sits?|stays?)\s+(?:in|at|under|inside)\s+(?P<where>[^;\n—]+?)(?=\.\s|\.$|;|—|\n|$)",
    re.IGNORECASE,
)
_CRED_ZH = re.compile(
    r"(?P<what>[\w\u4e00-\u9fff][^，,。；;！!？?\n]{0,24}?(?:密码|口令|密钥|私钥|令牌|秘钥|凭据|凭证|"
    r"证书|token|Token|key|Key))\s*(?:也|都)?\s*(?:存在|放在|保存在|存放在|记在|存于|保存于|在)\s*"
    r"(?P<where>[^，,。；;！!？?\n]{2,60})"
)
_DETERMINER = re.compile(r"^.*\b(?:the|our|my|a|an|your|this|that)\s+", re.IGNORECASE)
_DONE_EN = re.compile(r"\b(?:[Mm]arked\s+)?[Dd]one\s*[:：]\s*(?P<subj>[^\n.;!?]+)")
_DONE_EN_PASSIVE = re.compile(
    r"(?P<subj>\b[A-Za-z][\w '’-]{2,60}?)\s+(?:is|was|are|were|has been|have been)\s+"
    r"(?:sent|done|finished|submitted|paid|booked|bought|renewed|filed|completed)\b"
)
_DONE_ZH = (
    re.compile(r"(?:已标记完成|标记为?完成|已完成|完成)\s*[：:]\s*(?P<subj>[^\n。；;！!？?]+)"),
    re.compile(r"[“\"「](?P<subj>[^”\"」]{2,30})[”\"」]\s*(?:已)?标记为?完成"),
    re.compile(
        r"(?P<subj>[^\s，,。；;！!？?：:]{2,24}?)\s*(?:已经|已)\s*(?:发|交|买|做|办|订|约|报|寄|取|"
        r"还|付|提交|完成|处理|搞定|打)(?:好|完|过|出去|掉)?(?:给[^，,。；;！!？?]{1,16})?\s*了"
    ),
    re.compile(r"(?P<subj>[^\s，,。；;！!？?：:]{2,24}?)(?:约|订|买|报|交|发|取|办|弄|做|寄|打)"
               r"(?:好|完|回来|过)了"),
)
# "Paid the rent.", "I booked the train tickets", "Finished the module!": a past tense at the
# start of a clause (or after I/we), with what it was done to.
_DONE_EN_PAST = re.compile(
    r"(?:^|(?<=[.!?;:]\s)|\b(?:I|we)\s+(?:just\s+|finally\s+|already\s+|have\s+)?)"
    r"(?:(?:[Jj]ust|[Ff]inally|[Aa]lready)\s+)?(?P<verb>[A-Za-z]{2,}ed|[Pp]aid|[Bb]ought|[Ss]ent|"
    r"[Gg]ot|[Rr]an|[Dd]id|[Mm]ade|[Ww]rote|[Tt]ook|[Ss]old|[Bb]uilt|[Ff]ound|[Gg]ave)\s+"
    r"(?P<obj>(?:the|a|an|my|our|all|his|her|their)\b[^.,;!?\n]{2,80}|[a-z][^.,;!?\n]{2,80})")
_IRREGULAR = {"paid": "pay", "bought": "buy", "sent": "send", "got": "get", "ran": "run",
              "did": "do", "made": "make", "wrote": "write", "took": "take", "sold": "sell",
              "built": "build", "found": "find", "gave": "give"}
# "expenses filed", "flights booked.": a note that is only a thing and its past participle.
_DONE_EN_NOTE = re.compile(r"^\W*(?P<obj>(?:the\s+|my\s+|our\s+)?[A-Za-z][\w' -]{2,40}?)\s+"
                           r"(?P<verb>[a-z]{2,}ed|paid|sent|done|bought|built)\s*[.!]?$")
# "房租交了。", "季度报告提前交了。": a bare 了 after paying or handing in, ending the clause.
_DONE_ZH_BARE = re.compile(r"(?P<subj>[^\s，,。；;！!？?：:]{2,24}?)(?:已经|已|提前|都|也)?"
                           r"(?:交|付|缴|还|寄)了(?=[，,。；;！!\s]|$)")
_DONE_STRIP = re.compile(r"[。.!！]+$")


def lemma(verb: str) -> str:
    """A past tense's plain form, near enough to compare with a todo's verb ("paid" -> "pay",
    "booked" -> "book", "submitted" -> "submit", "renewed" -> "renew")."""
    v = verb.casefold()
    if v in _IRREGULAR:
        return _IRREGULAR[v]
    if v.endswith("ied"):
        return v[:-3] + "y"
    base = v[:-2] if v.endswith("ed") else v
    if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
        base = base[:-1]
    return base



@dataclass
class Finding:
    """One object the rules recognised, before it is matched against existing objects."""

    type: str
    name: str
    fields: dict[str, str]
    sentence: Span
    lang: str
    aliases: list[str] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    owner: str = ""  # the id of the person who said it about themself (speech.py), if any
    lines: list[str] = field(default_factory=list)  # dated first-person lines for a person


@dataclass
class DoneMark:
    """A statement that something got done; it may close a todo."""

    subject: str
    sentence: Span
    verb: str = ""  # "pay" for "Paid the rent.": a plain past tense, which closes only a todo
    # whose own verb it is (drafts.apply_done); an explicit marker ("Done: …") has none


@dataclass
class Scan:
    findings: list[Finding]
    done: list[DoneMark]


def short_name(text: str, limit: int = 60) -> str:
    """A short object name from a clause: URLs and filler dropped, clipped to `limit`."""
    text = _URL.sub("", text)
    text = _FILLER_LEAD.sub("", text.strip(" “”\"'：:，,-—"))
    text = _FILLER_TAIL.sub("", text.strip())
    return clip(text.strip(" “”\"'：:，,。.-—"), limit)


def _split_clause(body: str, lang: str) -> tuple[str, str]:
    """(first clause, the rest); a bracketed rest keeps only what is inside the brackets."""
    body = _DONE_STRIP.sub("", body.strip())
    m = (_SPLIT_ZH if lang == "zh" else _SPLIT_EN).search(body)
    if not m:
        return body.strip(), ""
    first, rest = body[: m.start()].strip(), body[m.end():]
    if m.group(0).strip() in ("（", "("):
        rest = re.split(r"[）)]", rest, maxsplit=1)[0]
    return first, rest.strip(" ）)。.，,")


# Where a todo line lists its acts: a comma or semicolon before a plain verb-led part.
_ACTS = re.compile(r"\s*[,;]\s+(?=[a-z]{3,}\s+(?:the|a|an|my|our|new|his|her|their|some|"
                   r"[a-z]{2,}|[A-Z]{2,}))")
_NOT_ACT = frozenset("and but or so then which who that it he she they we you i also plus "
                     "maybe probably".split())


def acts(body: str) -> list[str]:
    """The acts an English todo line lists, each its own todo ("renew my NMC revalidation,
    book a flu jab for Owain" -> two); the whole body when its parts are not all acts (a
    part led by a pronoun or a conjunction is the same act's note)."""
    if lang_of(body) != "en":
        return [body]
    parts = _ACTS.split(body.strip())
    if len(parts) < 2 or any(p.split()[0].lower() in _NOT_ACT or len(p.split()) < 2
                             for p in parts):
        return [body]
    return parts


def _todo(body: str, sent: Span) -> Finding | None:
    lang = lang_of(body)
    item, note = _split_clause(body, lang)
    cond = ""
    if lang == "zh":
        lead = _COND_ZH_LEAD.match(item)
        if lead and len(item) - lead.end() >= 2:
            cond, item = lead.group("cond").strip(), item[lead.end():].strip()
        elif any_cond := _COND_ZH_ANY.search(note):
            cond = any_cond.group("cond")
    else:
        found = COND_EN.search(item)
        if found and found.start() > 0:
            cond, item = found.group("cond").strip(), item[: found.start()].strip()
    name = short_name(item)
    if len(name) < 2:
        return None
    fields = {"item": item, "condition": cond, "state": "open", "note": clip(note, 200)}
    short = key_phrase(item, lang)
    return Finding("todo", name, fields, sent, lang, [short] if short and short != name else [])


_VERB_ZH = re.compile(
    r"^(?:把(?P<ba>.+?)(?:发给|交给|寄给|送给|转给|给|发|交|寄|送)|给.{1,6}?(?:买|订|报名|预约|准备|打)"
    r"(?P<for>.+)|(?:去|再|先)?(?:交|取|买|订|预约|整理|提交|写|发|寄|办|带上|准备|续)(?P<obj>.+))")
_LEAD_VERB_EN = re.compile(r"^\w+\s+(?:(?:the|a|an|my|our|his|her|their)\s+)?")
_CUT_EN = re.compile(r"\s+(?:for|to|with|about|on|by|from|in|at|so|when|after|before)\s+.*$")


def key_phrase(item: str, lang: str) -> str:
    """The thing a todo is about, as people will call it later ("周报", "passport"): it becomes
    an alias, so a later "周报已经发了" or "Done: renewed the passport" finds the todo."""
    if lang == "zh":
        m = _VERB_ZH.match(item.strip())
        phrase = next((g for g in (m.groups() if m else ()) if g), "")
        tail = phrase.split("的")[-1].strip()
        phrase = tail if len(tail) >= 3 else phrase.strip()
        return phrase if 2 <= len(phrase) <= 12 else ""
    words = _CUT_EN.sub("", _LEAD_VERB_EN.sub("", item.strip())).split()
    keep = 2 if len(words) >= 3 else len(words)
    if len(words) > keep and words[-keep].endswith("'s") and words[-keep - 1][:1].isupper():
        keep += 1  # "Zhang Wei's PR", not "Wei's PR"
    phrase = " ".join(words[-keep:])
    return phrase if len(phrase) >= 4 and phrase.casefold() != item.casefold() else ""


def _knowledge(body: str, sent: Span, following: Span | None) -> Finding | None:
    lang = lang_of(body)
    text = body.strip()
    if lang == "en" and not _SPECIFIC_EN.search(" " + text):
        return None
    if following and len(following.text) <= 40 and _APPLIES_ZH.search(following.text):
        text = f"{text}{'' if lang == 'zh' else ' '}{following.text}"
        gap = " " * (following.start - sent.end)
        sent = Span(sent.start, following.end, sent.text + gap + following.text)
    first, _ = _split_clause(_URL.sub("", body), lang)
    name = short_name(first)
    if len(name) < 2:
        return None
    applies = (_APPLIES_ZH if lang == "zh" else _APPLIES_EN).search(text)
    fields = {"conclusion": clip(text, 600), "applies": applies.group("a").strip() if applies
              else "", "experience": ""}
    return Finding("knowledge", name, fields, sent, lang)


def _schedule(match: re.Match[str], sent: Span) -> Finding | None:
    s, lang = sent.text, lang_of(sent.text)
    before, after = s[: match.start()], s[match.end():]
    recurring = bool(match.group("recur"))
    date = re.sub(r"[（(].*?[）)]", "", match.group("date") or "").strip()
    if "月" in date:
        date = re.sub(r"\s+", "", date)
    if lang == "zh" and re.match(r"\s*[\u4e00-\u9fffA-Za-z]", after):
        item_text, note = _split_clause(after, "zh")
        item = re.sub(r"^(?:的|开(?=\s|[A-Za-z]))\s*", "", item_text).strip()
        item = _TAIL_ZH.sub("", item)
        clauses = [c.strip() for c in re.split(r"[，,：:]", before) if c.strip()]
        prev = clauses[-1] if clauses else ""
        arranged = _ARRANGED_ZH.sub("", prev)
        if len(item) < 3 and prev and arranged != prev:
            item = arranged
        elif len(prev) >= 4 and not _FILLER_ZH.search(prev):
            note = "，".join(x for x in (prev, note) if x)
    else:
        quoted = re.findall(r"[“\"]([^”\"]{2,40})[”\"]", before)
        pieces = re.split(r"\s*(?:(?<!\d)[:：](?!\d)|[,;，]|—|–|\s-\s)\s*", before)
        segments = [_TAIL_ZH.sub("", short_name(seg)) for seg in pieces]
        candidates = quoted[-1:] + [seg for seg in reversed(segments) if len(seg) >= 2]
        item = short_name(candidates[0]) if candidates else ""
        note = after.strip(" ,，—-–.。")
    item = item.strip(" ，,：:")
    if len(item) < 2 or item.casefold() in _LABEL_WORDS:
        return None
    if _CHATTY.match(note):
        note = ""
    base = re.sub(r"\s*[（(][^）)]*[）)]", "", item)
    base = base.replace("的", "") if lang == "zh" and len(base) > 3 else base
    name = clip(base if recurring else f"{base} {date}", 60)
    # its head too ("budget review" of "Budget review with Maya"), so a later change naming it
    # ("budget review pushed to 13 November") reaches it, as a dated plan's does
    aliases = [] if recurring or len(base) < 2 else merge_unique(
        [clip(base, 60)], [a for a in head_aliases(base, lang) if a != base])
    if recurring and lang == "en" and len(base.split()) >= 2:
        # its head noun ("standup" of "Team standup"), so "每周一上午十点的 standup" finds it
        aliases = [a for a in head_aliases(base, lang)[:1] if a != base]
    state = ("重复（进行中）" if recurring else "已安排（一次）") if lang == "zh" else (
        "recurring" if recurring else "scheduled (one-off)")
    rule = re.sub(r"^(?:on|for)\s+", "", " ".join(match.group("rule").split()))
    return Finding("schedule", name, {"rule": rule, "item": item, "state": state,
                                      "note": clip(note, 200)}, sent, lang, aliases)


# A note's label: "Project: set up the new diabetes recall clinic with Nurse Kaur by February"
# is the project "diabetes recall clinic", the whole line its scope.
_PROJECT_LABEL = re.compile(r"^\W*[Pp]roject\s*[:：]\s*(?P<label>[^.;\n]{4,200})")
_PROJECT_LEAD = re.compile(r"^(?:(?:set\s+up|start|launch|build|create|run|lead|do|plan|finish)"
                           r"\s+)?(?:(?:the|a|an|our|my)\s+)?(?:new\s+)?", re.IGNORECASE)
_PROJECT_TAIL = re.compile(r"\s+(?:with|by|due|before|for|on|in|at|from)\s+.*$|\s*[,，(（].*$")


def _labelled_project(sent: Span) -> Finding | None:
    m = _PROJECT_LABEL.match(sent.text)
    if m is None or lang_of(m.group("label")) != "en":
        return None
    name = _PROJECT_TAIL.sub("", _PROJECT_LEAD.sub("", m.group("label").strip()))
    if len(name.split()) < 1 or len(name) < 4:
        return None
    fields = {"scope": clip(m.group("label").strip(), 300), "goal": "", "state": ""}
    return Finding("project", clip(name, 60), fields, sent, "en")


def _projects(sent: Span) -> list[Finding]:
    out: list[Finding] = [p for p in [_labelled_project(sent)] if p]
    for pattern in _PROJECT_PATTERNS:
        for m in pattern.finditer(sent.text):
            name = (m.groupdict().get("name") or m.groupdict().get("the") or "").strip()
            if name in NOT_FIRST_NAMES or len(name) < 2:
                continue
            aliases = []
            if "zh" in m.groupdict() and m.group("zh"):
                aliases = [m.group("zh") + "项目", m.group("zh")]
            scope = re.search(
                re.escape(name) + r"\s*[)）]?\s*(?:(?:is|was)\s+(?:the|a|an)\s+|=\s*|[:：]\s*|"
                r"，?也就是\s*)(?P<scope>[^.。；;\n]{6,})", sent.text)
            fields = {"scope": clip(scope.group("scope"), 300) if scope else "",
                      "goal": "", "state": ""}
            out.append(Finding("project", name, fields, sent, lang_of(sent.text), aliases))
    return out


def _credentials(sent: Span) -> list[Finding]:
    out: list[Finding] = []
    last_where = ""
    for pattern, lang in ((_CRED_ZH, "zh"), (_CRED_EN, "en")):
        for m in pattern.finditer(sent.text):
            what = m.group("what").strip()
            if lang == "en":
                what = _DETERMINER.sub("", what) if len(what.split()) > 2 else re.sub(
                    r"^(?:the|our|my|a|an)\s+", "", what, flags=re.IGNORECASE)
            where = re.split(r"\s+(?:and|but|so)\s+|,\s+(?:and|so)\s+", m.group("where"))[0]
            where = where.strip(" ,，。.")
            if re.search(r"同一|一样|同样|same", where) and last_where:
                where = last_where
            if len(what.split()) < 2 and len(what) < 4 or len(where) < 2:
                continue
            last_where = where
            fields = {"purpose": what, "where": where,
                      "value": "不保存（只记存放位置）" if lang == "zh" else
                      "not stored (only where it lives)"}
            out.append(Finding("credential", short_name(what), fields, sent, lang))
    return out


_NOT_DONE = re.compile(r"\b(?:not|never|no longer|yet to|haven['’]t|hasn['’]t|didn['’]t|"
                       r"isn['’]t|wasn['’]t|aren['’]t)\b|n['’]t\b", re.IGNORECASE)


def _done(sent: Span) -> list[DoneMark]:
    out: list[DoneMark] = []
    patterns = (_DONE_EN, _DONE_EN_PASSIVE, *_DONE_ZH, _DONE_ZH_BARE)
    for pattern in patterns:
        for m in pattern.finditer(sent.text):
            subject = re.sub(r"(?:已经|已|提前|都|也)$", "", m.group("subj").strip(" ，,：:"))
            if pattern is _DONE_ZH_BARE and re.search(r"得|要|必须|提醒|把|前", subject):
                continue  # "我得在月底前把房租交了" is the need, not the deed
            if len(subject) >= 2 and all(d.subject != subject for d in out):
                out.append(DoneMark(subject, sent))
    if _NOT_DONE.search(sent.text):  # "label printer still not ordered": the need stands
        return out
    note = _DONE_EN_NOTE.match(sent.text)
    if not out and note and not re.match(r"(?i)(?:I|we|you|he|she|they|it)\b", note.group("obj")):
        out.append(DoneMark(f"{note.group('verb')} {note.group('obj').strip()}", sent,
                            verb=lemma(note.group("verb"))))
    elif not out and not sent.text.rstrip().endswith("?"):
        for m in _DONE_EN_PAST.finditer(sent.text):
            out.append(DoneMark(f"{m.group('verb')} {m.group('obj').strip()}", sent,
                                verb=lemma(m.group("verb"))))
    return out


# A todo list: a header alone on its line ("todo:", "待办：") and the bulleted items under it.
_TODO_HEADER = re.compile(r"^\W*(?:(?i:todos?|to-dos?)|待办(?:事项)?)\s*[:：]?\s*$")
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d{1,2}[.)）])\s+(?P<item>\S.*)$")


def listed_todos(sents: list[Span]) -> dict[Span, str]:
    """Each bullet under a todo header, with its item: "todo:\n- renew forklift cert\n- …"."""
    out: dict[Span, str] = {}
    header = False
    for sent in sents:
        bullet = _BULLET.match(sent.text)
        if header and bullet:
            # "renew forklift cert (exp 12/31)": the bracket is the item's note
            out[sent] = re.sub(r"\s*[(（]([^()（）]+)[)）]\s*$", r" — \1", bullet.group("item"))
            continue
        header = bool(_TODO_HEADER.match(sent.text))
    return out


def scan(text: str) -> Scan:
    """Every finding and done marker in `text` (one page)."""
    sents = sentences(text)
    findings: list[Finding] = []
    done: list[DoneMark] = []
    for hit in find_people(sents):
        fields = {"identity": hit.identity, "role": hit.role, "traits": "", "howto": "",
                  "projects": ", ".join(hit.projects)}
        findings.append(Finding("person", hit.name, fields, hit.sentence,
                                lang_of(hit.sentence.text), hit.aliases, hit.projects))
    listed = listed_todos(sents)
    for index, sent in enumerate(sents):
        s = sent.text
        following = sents[index + 1] if index + 1 < len(sents) else None
        claimed = False
        creds = _credentials(sent)
        findings.extend(creds)
        if sent in listed and (todo := _todo(listed[sent], sent)):
            findings.append(todo)
            claimed = True
        for pattern in (_TODO, _REMIND_ZH, _REMIND_EN):
            m = pattern.search(s)
            if m and not claimed:
                # "todo: renew GMC registration fee, order new BP cuffs": one todo an act
                made = [t for body in acts(m.group("body")) if (t := _todo(body, sent))]
                findings.extend(made)
                claimed = bool(made)
                if claimed:
                    break
        for pattern in (_REMEMBER_EN, _REMEMBER_ZH):
            m = pattern.search(s)
            if m and not claimed and not creds and (fact := _knowledge(m.group("body"), sent,
                                                                       following)):
                findings.append(fact)
                claimed = True
        if not claimed:  # each plan of a sentence that joins two is its own clause
            for part in dated_clauses(sent, None):
                for pattern in (_SCHED_ZH, _SCHED_EN):
                    for m in pattern.finditer(part.text):
                        if sched := _schedule(m, part):
                            findings.append(sched)
        findings.extend(_projects(sent))
        done.extend(_done(sent))
    return Scan(findings, done)


_EN_STOP = frozenset({"the", "a", "an", "my", "our", "your", "his", "her", "their", "this",
                      "that", "with", "from", "for", "to", "of", "on", "in", "at", "and", "up"})
_WEEKDAY_ZH = re.compile(r"(?:周|星期|礼拜)[" + CJK_WEEKDAYS + r"]")
_WEEKDAY_EN = re.compile(r"\b" + WD_EN + r"\b", re.IGNORECASE)


def weekday_word(said: str) -> str:
    """The weekday a date phrase names by its weekday, as a handle ("下周二" -> "周二", "next
    Tuesday" -> "Tuesday"), else "": people call a plan by it ("周四的会", "Thursday's call")."""
    zh = _WEEKDAY_ZH.search(said)
    if zh:
        return zh.group()
    en = _WEEKDAY_EN.search(said)
    return en.group().capitalize() if en else ""


def head_aliases(item: str, lang: str) -> list[str]:
    """Short handles a later change may call the object by: the head noun ("move", "printer")
    and, in Chinese, a noun run before a verb ("评审会", "会议室"). The engine finds a related
    object by its name's or alias's first word, so "the move is postponed" must reach
    "Larkspur office move" through "move"."""
    if lang == "zh":
        nouns = [w for w, flag in zh_words(item) if flag.startswith(("n", "vn")) and
                 flag != "nr" and len(w) >= 2 and w != item]
        nouns = list(dict.fromkeys(reversed(nouns)))
        return [n for i, n in enumerate(nouns) if i == 0 or len(n) >= 3][:3]
    words = [w for w in re.findall(r"[A-Za-z][\w'-]+", _cut_tail(item)) if w.lower() not in
             _EN_STOP]
    while len(words) > 1 and _ARRANGED.fullmatch(words[-1]):  # "night out booked": no handle
        words.pop()
    out = [words[-1]] if words and len(words[-1]) >= 4 else []
    if len(words) >= 2:
        out.append(" ".join(words[-2:]))
    # A compound's thing before its event noun ("Dentist appointment", "hip replacement
    # surgery"): "the dentist moved to Thursday" names the appointment by it.
    if len(words) >= 2 and _EVENT_HEAD.fullmatch(words[-1]) and len(words[-2]) >= 4 and (
            not _ARRANGED.fullmatch(words[-2])):
        out.append(words[-2])
    return out


_ARRANGED = re.compile(r"(?i)booked|scheduled|planned|arranged|confirmed|set|fixed|organi[sz]ed")
_EVENT_HEAD = re.compile(
    r"(?i)appointments?|visits?|check-?ups?|consultations?|sessions?|surgery|operation|"
    r"meetings?|reviews?|appraisals?|interviews?|lessons?|class(?:es)?|exams?|tests?|"
    r"dinners?|lunch(?:es)?|part(?:y|ies)|trips?|flights?")


def _cut_tail(item: str) -> str:
    """The item's first clause without its time and its prepositional tail: "renew my
    indemnity insurance this month, it lapses on the 30th" -> "renew my indemnity insurance"."""
    item = _NEXT_CLAUSE.split(re.sub(r"\([^()]*\)", " ", item), maxsplit=1)[0]
    item = re.split(r"\s+and\s+(?=[a-z]+\s)", item, maxsplit=1)[0]  # the first act of two
    item = _TIME_TAIL_EN.sub("", item)
    return re.sub(r"\s+(?:from|with|for|to|by|at|on|in|before|after)\s+.*$", "", item)


# Where an item's first clause ends: a comma, a semicolon or a dash; a comma inside brackets
# is a label's ("Follow-ups (owner, due): …"), read past.
_NEXT_CLAUSE = re.compile(r"[,;]\s|\s[—–-]\s")
_TIME_TAIL_EN = re.compile(r"\s+(?:(?:this|next|by|before|until)\s+(?:week(?:end)?|month|year|"
                           r"morning|afternoon|evening|time)|today|tonight|tomorrow|soon|asap|"
                           r"later|first thing)\b.*$", re.IGNORECASE)
