"""What the person says of themself when no name is known: an agent's user, a ChatGPT history.

A turn from the user with no speaker (memory_append without meta, an imported chat) says "I"
of someone whose name the page does not hold, so it cannot be a line of their person object
(which is only sent as related when its name is on the page). What such a turn states plainly
is kept as objects of its own:
- their work: "I work as a data analyst at Brightwater Insurance in Bristol", "I'm a nurse at
  St James's", "I lead the backend team" (the role needs a role word, people.self_role_en),
  "我是一名小学老师", "我在一家外企做HR" (a Chinese role word, people.role_zh, or capitals), a
  knowledge object whose conclusion is the clause as said;
- a commitment: "I'll book the pottery class for two then" (a concrete act, not "I'll think
  about it"), an open todo;
- a wish with a time said by a pronoun ("She wants to go to Kyoto in April") or of themself
  ("I'd really love to go to Kerala next spring", "我一直想去冰岛，争取明年冬天去"), a schedule.
A speaker's own statements are speech.py's; a self-introduction with a name is people.py's.
"""

from __future__ import annotations

import re

from .people import role_zh, self_role_en
from .profiles import clip, lang_of
from .rules import COND_EN, Finding, key_phrase, short_name
from .textspan import Span

_SELF_START = re.compile(r"(?:^|[,;:]\s*|\b(?:and|but|so|also)\s+)(?=I(?:'m|’m| am| work| lead|"
                         r" run| manage| head| oversee| coordinate| just joined| joined)\b)")
_WILL_EN = re.compile(r"(?:^|[,;:]\s*|\b(?:and|so|then)\s+)I(?:'ll|’ll| will)\s+"
                      r"(?:also\s+|just\s+)?(?P<item>[a-z][^.!?;]{5,120})")
# "I'll think about it", "I'll let you know", "I'll try": no act anyone could check off.
_VAGUE_WILL = re.compile(r"(?:think|see|try|let|keep|have to see|check it|do (?:it|that|this)|be\b|"
                         r"get back|look into it|figure|need|take care|manage|survive|wait)\b")


# A wish with a time said of someone by a pronoun: "She wants to go to Kyoto in April",
# "她想四月去京都". The page does not say who (a name said before the pronoun on the same page
# is kin.py's), so it is a plan of its own, its time kept as said with the day it was said.
# The person's own, with an adverb or a lead word ("honestly I'd really love to go to Kerala
# next spring", "我一直想去冰岛看极光，争取明年冬天去"), is one too.
_WISH_EN = re.compile(
    r"^\W*(?:(?:honestly|really|so|and|also|oh|ok(?:ay)?|well)[,]?\s+)*"
    r"(?:(?:She|He|They)\s+(?:really\s+|still\s+)?(?:wants?|would like|hopes?|plans?)|"
    r"(?:I|We|we)(?:['’]d|\s+would)?\s+(?:really\s+|so\s+|still\s+|just\s+|also\s+)*"
    r"(?:love|like|want|hope|plan)|(?:I['’]m|I am|We['’]re|we['’]re)\s+(?:really\s+)?hoping)"
    r"\s+to\s+(?P<item>[^.!?;]{6,120})", re.IGNORECASE)
_WISH_ZH = re.compile(r"^\W*(?:她|他|我)(?:们)?(?:一直|很|特别|真的?|好|还|也|早就)?"
                      r"(?:想|打算|准备|计划)(?P<item>[^，。！？；]{3,60})")
_WHEN = re.compile(r"\b(?:in\s+)?(?:early\s+|late\s+)?(?:January|February|March|April|May|June|"
                   r"July|August|September|October|November|December|spring|summer|autumn|fall|"
                   r"winter|next\s+(?:week|month|year|spring|summer|autumn|winter))\b|"
                   r"[一二三四五六七八九十]+月|下个?月|明年|暑假|寒假|五一|国庆|年底")


def wishes(sentences: list[Span], said_on: str) -> list[Finding]:
    """A schedule for each wish with a time said by a pronoun (see above)."""
    out: list[Finding] = []
    for sent in sentences:
        m = _WISH_EN.match(sent.text) or _WISH_ZH.match(sent.text)
        when = _WHEN.search(sent.text)
        if m is None or when is None:
            continue
        zh = lang_of(sent.text) == "zh"
        rule = (f"{when.group().strip()}（{said_on} 说的）" if zh else
                f"{when.group().strip()} (said on {said_on})")
        fields = {"rule": rule, "item": sent.text.strip(),
                  "state": "计划（一次）" if zh else "planned (one-off)", "note": ""}
        out.append(Finding("schedule", short_name(m.group("item").strip(" ,.，"), 60), fields,
                           sent, "zh" if zh else "en"))
    return out


def self_facts(sentences: list[Span], start: int = 0) -> list[Finding]:
    """Knowledge and todos for what the user says of themself (see the module doc), from the
    sentences that start at or after `start`."""
    out: list[Finding] = []
    for sent in sentences:
        if sent.end <= start or sent.text.rstrip().endswith(("?", "？")):
            continue
        if lang_of(sent.text) == "zh":
            if (work := _work_zh(sent)) is not None:
                out.append(work)
            continue
        work = _work(sent)
        if work is not None:
            out.append(work)
            continue
        will = _WILL_EN.search(sent.text)
        if will and (todo := _commitment(will.group("item"), sent)) is not None:
            out.append(todo)
    return out


def _work(sent: Span) -> Finding | None:
    for m in _SELF_START.finditer(sent.text):
        clause = re.split(r"[,;]\s+(?!Inc|Ltd)|\s[-–—]\s", sent.text[m.end():])[0].rstrip(" .!")
        if self_role_en(clause):
            fields = {"conclusion": clip(clause, 600), "applies": "", "experience": ""}
            return Finding("knowledge", short_name(clause, 60), fields, sent, "en")
    return None


# The user's work in Chinese: "我是一名小学老师", "我在一家外企做HR", "我在协和医院当护士".
_WORK_ZH = re.compile(r"^\W*(?:我(?:现在|目前)?(?:是(?:一名|一个|个|一位)?|"
                      r"在[^，,。；;！!？?]{2,20}?(?:做|当|担任|任))"
                      r"(?P<role>[^，,。；;！!？?（(]{2,16}))")


def _work_zh(sent: Span) -> Finding | None:
    m = _WORK_ZH.match(sent.text)
    if m is None or not (role_zh(m.group("role")) or re.fullmatch(r"[A-Z]{2,5}", m.group("role"))):
        return None
    clause = re.split(r"[，,。；;！!？?]", sent.text.strip())[0]
    fields = {"conclusion": clip(clause, 600), "applies": "", "experience": ""}
    return Finding("knowledge", short_name(clause, 60), fields, sent, "zh")


def _commitment(item: str, sent: Span) -> Finding | None:
    item = re.split(r",\s+|\s+(?:then|now|later|because|so|but|and then|if)\b", item)[0]
    item = item.strip(" .!")
    cond = COND_EN.search(item)
    condition = cond.group("cond").strip() if cond and cond.start() > 0 else ""
    item = item[: cond.start()].strip() if condition and cond else item
    # "I'll write it up tomorrow", "I'll sort that out": what "it" is, the page does not say
    if len(item.split()) < 3 or _VAGUE_WILL.match(item) or re.search(
            r"\byou\b|^\w+\s+(?:it|this|that|them|these|those|something|everything)\b", item,
            re.IGNORECASE):
        return None
    fields = {"item": item, "condition": condition, "state": "open", "note": ""}
    short = key_phrase(item, "en")
    return Finding("todo", short_name(item), fields, sent, "en", [short] if short else [])


# Health the user states of themself: a condition, an allergy, an injury, a medicine and its
# dose, a limit they live by ("Severe latex allergy", "我对青霉素过敏", "RSI in the right hand",
# "back: L4/L5 disc. … no lifting >25 lb", "I'm on levothyroxine now, fifty micrograms…").
_HEALTH_EN = re.compile(
    r"\b(?:allerg(?:y|ies|ic)|asthma|diabet(?:es|ic)|thyroid|RSI|migraines?|eczema|arthritis|"
    r"disc|slipped|sprain(?:ed)?|fractur(?:e|ed)|tendinitis|blood pressure|cholesterol|"
    r"anxiety|insomnia|diagnosed|underactive|overactive|intoleran(?:t|ce)|coeliac|celiac|"
    r"physio(?:therapy)?|no lifting|lifting limit|mg|mcg|micrograms?|milligrams?)\b"
    # a topic of work, not a condition: "the diabetes recall clinic", "an asthma review"
    r"(?!\s+(?:recall|clinics?|service|team|ward|project|review|nurse|audit|research))",
    re.IGNORECASE)
_HEALTH_ZH = re.compile(r"过敏|哮喘|糖尿病|高血压|低血糖|甲状腺|腰椎|颈椎|椎间盘|胃病|胃炎|偏头痛|"
                        r"失眠|抑郁|焦虑症|乳糖不耐|不能吃|忌口|毫克|确诊")


_REMEMBERED = re.compile(r"^\W*(?:记住|(?i:remember)\b)")


def health_facts(sentences: list[Span]) -> list[Finding]:
    """One knowledge object for the health the user states in a turn (see above): named by
    its first such sentence, its conclusion every such sentence, as said."""
    said = [s for s in sentences if not s.text.rstrip().endswith(("?", "？"))
            and not _REMEMBERED.match(s.text)  # "记住：…" is a fact of its own (rules.py)
            and (_HEALTH_ZH if lang_of(s.text) == "zh" else _HEALTH_EN).search(s.text)]
    if not said:
        return []
    zh = lang_of(said[0].text) == "zh"
    health = _HEALTH_ZH if zh else _HEALTH_EN
    first = next(c for c in re.split(r"[,;，；。]\s*|(?<!Dr)(?<!Mr)(?<!Ms)\.\s", said[0].text)
                 if health.search(c)).strip(" .")
    fields = {"conclusion": clip(" ".join(s.text.strip() for s in said), 600),
              "applies": "", "experience": ""}
    name = short_name(("健康：" if zh else "Health: ") + first, 60)
    return [Finding("knowledge", name, fields, said[0], "zh" if zh else "en")]


# A wish the user is unsure of: kept as what they said, never a plan ("maybe learn welding
# someday", "thinking I might go for the Staff promo next cycle", "也许寒假会去云南玩几天").
_TENTATIVE_EN = re.compile(
    r"(?:^|[,;:]\s*|\b(?:and|so|but|keep)\s+)(?:I\s+)?(?:keep\s+)?(?:thinking\s+)?"
    r"(?:maybe|perhaps|possibly|(?:I|we)\s+might|thinking\s+(?:of|about))\s+(?:I['’]d\s+|we['’]d\s+)?"
    r"(?P<item>(?!be\b|it\b|that\b|not\b|you\b)[a-z][^.!?;,]{5,100})", re.IGNORECASE)
_TENTATIVE_ZH = re.compile(r"^\W*(?:我(?:们)?)?(?:也许|或许|可能|说不定)"
                           r"(?P<item>[^，。！？；]{3,40})")


def tentative_wishes(sentences: list[Span]) -> list[Finding]:
    """A knowledge object for each wish the user is unsure of (see above)."""
    out: list[Finding] = []
    for sent in sentences:
        zh = lang_of(sent.text) == "zh"
        m = (_TENTATIVE_ZH.match if zh else _TENTATIVE_EN.search)(sent.text)
        if m is None or sent.text.rstrip().endswith(("?", "？")) or (
                not zh and re.search(r"\byou\b", m.group("item"), re.IGNORECASE)):
            continue
        item = m.group("item").strip(" .")
        fields = {"conclusion": clip(sent.text.strip(), 600), "applies": "", "experience": ""}
        name = short_name(("也许：" if zh else "Maybe: ") + item, 60)
        out.append(Finding("knowledge", name, fields, sent, "zh" if zh else "en"))
    return out
