"""Who someone is to whom: relations said possessively, family names, roles in apposition.

`find_kin(sentences)` reads, in English and Chinese:
- a relation said possessively: "My sister is Mia Park", "My wife's name is Anjali", "My
  manager, Alice Grant, wants…", "my brother Paolo is moving…", "our son Luca", "我姐姐是王芳",
  "我老婆叫周敏", "我的直属领导是高建国", "我妹妹林悦下个月…";
- a family name: "Mia's husband is called Ben", "Greta's husband is called Jonas", "王芳的老公
  叫陈明", "赵磊的女儿叫赵小雨";
- a role in apposition: "Tom Reyes, our ward manager, asked…", "Helen Zhou, our head of data
  science, …", "刘洋，我们的财务总监，…", "孙浩，我们组的测试负责人，…", "…是高建国，技术副总裁";
- a Chinese title as the subject: "我们的CEO是陈建国", "HR那边的负责人是刘婷", "我们组的组长叫王磊";
and what the rest of the sentence says of that person, as one line about them with the pronoun
replaced by the name ("…, she teaches chemistry" -> "Mia Park teaches chemistry", "…, he's a
carpenter" -> "Ben is a carpenter", "…，她在杭州当律师" -> "王芳在杭州当律师", "my brother Paolo is
moving to Toronto" -> "Paolo is moving to Toronto"); a next sentence of the same line that
starts with "He"/"She" when the sentence named one person ("My landlord is Gerald Hughes. He's
been ignoring the boiler…") says it of them too.

A relation is the speaker's (`of` ""), another person's (`of` their name: "Mia's husband") or
a title held in a group (`of` None: "our ward manager" is a ward manager). A relation must be a
relation word; a title must end in a role word or look like one (an abbreviation in capitals,
"…ist", "…or"; people.role_word), so "Paris, the capital, …" names no one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .drafts import object_id_for
from .lexicon import NOT_FIRST_NAMES, ROLES_ZH
from .names import EN_NAME
from .people import people_first_named, role_word, valid_en_name, valid_zh_name
from .profiles import clip, lang_of, norm
from .rules import Finding
from .textspan import Span

_REL_EN = (r"(?:(?:older|younger|little|big|elder|twin|new|direct|line|best|old)\s+)?"
           r"(?:sister|brother|wife|husband|partner|fianc[eé]e?|girlfriend|boyfriend|mum|mom|"
           r"mother|dad|father|son|daughter|cousin|aunt|uncle|niece|nephew|grandma|grandmother|"
           r"grandpa|grandfather|friend|flatmate|roommate|housemate|neighbou?r|landlord|landlady|"
           r"boss|manager|colleague|co-?worker|mentor|tutor|teacher|coach|doctor|GP|dentist|"
           r"therapist|supervisor|man|kid|child)")
_TITLE = r"(?:(?:Mr|Mrs|Ms|Dr)\.?\s+)"
_NAME = r"(?:" + _TITLE + r"?" + EN_NAME + r")"  # names.py: accents, particles, O', Mc
_CALLED = r"(?:\s+is\s+(?:called|named)|['’]s\s+name\s+is|\s+is|['’]s)\s+"
# "My sister is Mia Park", "My wife's name is Anjali", "My manager, Alice Grant, …", "my brother
# Paolo is moving…", "Mia's husband is called Ben", "Greta's husband is called Jonas".
_POSSESSED_EN = re.compile(
    r"(?:(?<![\w'’])(?P<my>[Mm]y|[Oo]ur)|\b(?P<of>" + _NAME + r")['’]s)\s+(?P<rel>" + _REL_EN
    + r")(?:" + _CALLED + r"|\s*,\s*|\s+)(?P<name>" + _NAME + r")(?![\w'’])")
# "Tom Reyes, our ward manager, asked…", "Zara Khan, the new HCA on our ward, starts…",
# "Siobhan Kelly, head of sales, joins…"; the title first: "Our new intern, Sean, starts…"
_APPOSED_EN = re.compile(r"(?:^|(?<=[\s(]))(?P<name>" + _NAME + r")\s*,\s*"
                         r"(?:(?P<det>our|my|the)\s+)?(?P<role>[^,;.!?\n]{2,50}?)\s*,")
_TITLE_FIRST_EN = re.compile(r"(?:^|(?<=[\s(]))(?P<det>[Oo]ur|[Mm]y|[Tt]he)\s+"
                             r"(?P<role>[^,;.!?\n]{2,40}?)\s*,\s*(?P<name>" + _NAME + r")\s*,")
# The title, then the name it is called by: "the area manager, a guy called Declan Hurst",
# "our new intern is called Sam Ortiz", "my physio, a woman named Ines Costa"
_CALLED_EN = re.compile(r"(?:^|(?<=[\s(]))(?P<det>[Oo]ur|[Mm]y|[Tt]he)\s+"
                        r"(?P<role>[^,;.!?\n]{2,40}?)(?:\s*,\s*(?:a|an|this|some)\s+(?:guy|man|woman|lady|girl|bloke|chap|"
                        r"person|fella|dude)|\s+is)\s+(?:called|named)\s+(?P<name>" + _NAME + r")")
# A note's label: "line manager: Helen Byrne (VP Product)", "landlord - Mr Greene"
_LABELLED_EN = re.compile(r"^\W*(?:[Mm]y\s+)?(?P<rel>" + _REL_EN + r")\s*(?::|\s[-–—])\s*"
                          r"(?P<name>" + _NAME + r")(?:\s*\((?P<title>[^)]{2,40})\))?")
_REL_ZH = (r"(?:直属|亲)?(?:姐姐|妹妹|哥哥|弟弟|老公|老婆|丈夫|妻子|先生|太太|爱人|儿子|女儿|爸爸|"
           r"妈妈|父亲|母亲|爷爷|奶奶|外公|外婆|姥姥|姥爷|公公|婆婆|岳父|岳母|舅舅|叔叔|阿姨|姑姑|"
           r"表哥|表姐|表弟|表妹|堂哥|堂姐|朋友|好友|闺蜜|同学|室友|邻居|同事|老板|上司|领导|主管|"
           r"经理|导师|男朋友|女朋友|未婚夫|未婚妻|搭档|合伙人|房东|师傅)")
_HAN = r"[\u4e00-\u9fff]"
# Any Chinese title word, longest first so "班主任" is taken whole, not as its tail "主任"
_TITLE_WORD_ZH = "|".join(sorted(ROLES_ZH, key=len, reverse=True))
# "我姐姐是王芳", "我老婆叫周敏", "我的直属领导是高建国", "我妹妹林悦下个月…", "王芳的老公叫陈明"
_POSSESSED_ZH = re.compile(r"(?:(?P<my>我(?:们[^，,。；;的]{0,4})?)(?:的|家|有个|有一个|有位)?|"
                           r"(?P<of>" + _HAN + r"{2,4}?)的)(?P<rel>" + _REL_ZH + r")"
                           r"(?:是|叫|名叫|叫做)?(?P<name>" + _HAN + r"{2,8})")
# The title before the name: "我们部门的会计赵敏下周…"
_TITLED_ZH = re.compile(r"(?:我们|我|咱们)[^，,。；;的]{0,4}的(?P<role>[^，,。；;！!？?的]{0,6}?(?:"
                        + _TITLE_WORD_ZH + r"))(?P<name>" + _HAN + r"{2,8})")
# The title, then the name it is called by: "我们组长叫黄磊", "新来的实习生叫赵敏", "我们部门
# 有个会计叫钱芳"
_CALLED_ZH = re.compile(r"(?:(?:我们|我|咱们)(?:[^，,。；;的叫]{0,4}的)?|新来的|有个|有一个|有位)"
                        r"(?P<role>[^，,。；;！!？?的叫]{0,6}?(?:" + _TITLE_WORD_ZH + r"))"
                        r"(?:叫|名叫|叫做)(?P<name>" + _HAN + r"{2,8})")
# The title as the subject: "我们的CEO是陈建国", "HR那边的负责人是刘婷", "我们组的组长叫王磊"
_TITLE_IS_ZH = re.compile(r"(?:(?:我们|我|咱们)[^，,。；;的]{0,4}|[A-Za-z]{2,8}(?:那边|部门|组)?)的"
                          r"(?P<role>[^，,。；;！!？?的是叫]{0,6}?(?:" + _TITLE_WORD_ZH
                          + r"|[A-Z]{2,5}))"
                          r"(?:是|叫)(?P<name>" + _HAN + r"{2,8})")
# A title after a name, dropped from it: "林国栋律师" is 林国栋
_NAME_TITLE_ZH = re.compile(r"^(?P<name>" + _HAN + r"{2,3}?)(?:律师|老师|医生|教授|经理|总监|主任)")
# "刘洋，我们的财务总监，…", "孙浩，我们组的测试负责人，…"; "…高建国，技术副总裁。"
_APPOSED_ZH = re.compile(r"(?P<name>" + _HAN + r"{2,4})[，,]\s*(?P<det>(?:我们|我|咱们|公司)"
                         r"[^，,。；;的]{0,3}的)?(?P<role>[^，,。；;！!？?的]{2,10})(?=[，,。；;！!]|$)")
_AFTER_NAME = frozenset("下上要来去在是和跟说也都就还会很的了今明昨刚又才已正从到把被给让")
# A clause that goes on about the person: ", she teaches…", ", he's a carpenter", " is moving…"
_PRONOUN_EN = re.compile(r"^\s*,\s*(?:and\s+)?(?:she|he|they)(?P<be>['’]s|['’]ll|\s)\s*"
                         r"(?P<rest>.+)", re.IGNORECASE)
_PREDICATE_EN = re.compile(r"^\s+(?P<rest>(?!(?:and|or|to|from|in|at|on|with|for|of|who|that|"
                           r"but|so|because)\b)[a-z][\w'’-]*\b.+)")
_CLAUSE_END_EN = re.compile(r",\s+(?:so|but|and then|because|which|since|though)\b|;|\s+(?:but|"
                            r"because|so that|though)\s+|[.!?](?:\s|$)|\s[-–—]\s")
_NEXT_PRONOUN_EN = re.compile(r"^(?:She|He)(?P<be>['’]s|['’]ll|\s)\s*(?P<rest>[a-z].+)")
_ZH_GOES_ON = re.compile(r"^[，,]?\s*(?:她|他)?(?P<rest>(?:是|在|今年|最近|下个月|下周|明年|现在|"
                         r"已经|刚|也|还|正在|准备|打算|想|要|会|从|每)[^。！!？?；;]*)")


@dataclass
class Kin:
    """A person named with a relation or a title, and what the sentence says of them."""

    name: str
    role: str  # "sister", "ward manager", "husband", "财务总监"
    of: str | None  # "" the speaker's relation, a name for another's ("Mia"), None: a title
    sentence: Span
    said: str = ""  # what the sentence says of them, their name for the pronoun


# Who someone is to the speaker outside work: kept in a person's role when their job changes
# (roles.py). Work relations ("manager", "mentor") are left out: a promotion may end them.
_PERSONAL_EN = re.compile(
    r"(?:^|['’]s\s+)(?:(?:older|younger|little|big|elder|twin|best|old)\s+)?(?:sister|brother|"
    r"wife|husband|partner|fianc[eé]e?|girlfriend|boyfriend|mum|mom|mother|dad|father|son|"
    r"daughter|cousin|aunt|uncle|niece|nephew|grandma|grandmother|grandpa|grandfather|friend|"
    r"flatmate|roommate|housemate|neighbou?r)$", re.IGNORECASE)
_PERSONAL_ZH = re.compile(r"(?:^|的)(?:亲)?(?:姐姐|妹妹|哥哥|弟弟|老公|老婆|丈夫|妻子|先生|太太|"
                          r"爱人|儿子|女儿|爸爸|妈妈|父亲|母亲|表哥|表姐|表弟|表妹|堂哥|堂姐|"
                          r"朋友|好友|闺蜜|同学|室友|邻居|男朋友|女朋友|未婚夫|未婚妻)$")


def relation_word(role: str) -> bool:
    """Is `role` ("brother", "Owen's sister", "王芳的老公", "同学") a family or personal
    relation, as opposed to a job?"""
    role = role.strip()
    return bool(_PERSONAL_EN.search(role) or _PERSONAL_ZH.search(role))


def _name_en(raw: str) -> str | None:
    """A person's name from a match: a title kept only before a surname alone ("Mrs Patel",
    "Dr. Omar Haddad" -> "Omar Haddad"); None when it is no name."""
    title = re.match(_TITLE, raw)
    rest = raw[title.end():] if title else raw
    if not valid_en_name(rest) or rest.split()[0] in _NOT_NAMES_EN:
        return None
    return raw if title and " " not in rest else rest


# Capitalised words after "is" that describe rather than name ("My mum is British").
_NOT_NAMES_EN = frozenset({
    "British", "English", "French", "German", "Italian", "Spanish", "Irish", "Scottish",
    "Welsh", "American", "Canadian", "Chinese", "Japanese", "Indian", "Catholic", "Jewish",
    "Muslim", "Christian", "Vegan", "Vegetarian", "Mum", "Mom", "Dad", "God", "Monday",
    "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January", "February",
    "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December", "Yesterday", "Anyway", "Honestly", "Actually", "Finally", "Well", "Oh",
    "Btw", "Update", "Plus", "Apparently", "Luckily", "Sadly", "Wow", "Yeah", "Yep", "Nope",
    "Cool", "Nice", "Great", "Awesome", "Amazing", "Haha", "Lol", "Omg", "Ah", "Aw", "Hmm",
    "Ugh", "Sweet", "Wait", "Right", *NOT_FIRST_NAMES})


def _said_en(name: str, rest: str) -> str:
    """What `rest`, the words after the name, says of the person, as "NAME …" or ""."""
    m = _PRONOUN_EN.match(rest) or _PREDICATE_EN.match(rest)
    if m is None:
        return ""
    return _predicate(name, m.groupdict().get("be") or " ", m.group("rest"))


def _predicate(name: str, be: str, pred: str) -> str:
    """"NAME " and the clause `pred`, a contracted "'s"/"'ll" (`be`) written out."""
    pred = _CLAUSE_END_EN.split(pred, maxsplit=1)[0].strip(" ,")
    if be.strip() in ("'s", "’s"):
        pred = ("has " if re.match(r"(?:been|got)\b", pred) else "is ") + pred
    elif be.strip() in ("'ll", "’ll"):
        pred = "will " + pred
    return f"{name} {pred}" if len(pred.split()) >= 2 else ""


def _title_en(role: str) -> str | None:
    """The title an apposition gives ("new HCA on our ward" -> "HCA on our ward"), if its head
    is a role word."""
    role = re.sub(r"^(?:new|current|former|acting|interim)\s+", "", role.strip())
    head = re.split(r"\s+(?:on|for|at|of|in|with|from)\s+", role, maxsplit=1)[0].split()
    return role if head and role_word(head[-1]) else None


def _english(sent: Span) -> list[Kin]:
    s = sent.text
    out: list[Kin] = []
    for m in _POSSESSED_EN.finditer(s):
        name = _name_en(m.group("name"))
        of = "" if m.group("my") else _name_en(m.group("of") or "")
        if name is None or of is None or name == of:
            continue
        joined = s[m.end("rel"):m.start("name")]
        if "," in joined and not re.match(r"\s*,\s*" + re.escape(m.group("name")) + r"\s*,",
                                          s[m.end("rel"):]):
            continue  # "my brother, Rhys," or nothing: "my friend, Tom's…" is not a name
        rest = s[m.end("name"):]
        if "," in joined:  # "My manager, Alice Grant, wants…": what follows the aside
            rest = " " + rest.split(",", 1)[1]
        out.append(Kin(name, m.group("rel"), of, sent, _said_en(name, rest)))
    for pattern in (_APPOSED_EN, _TITLE_FIRST_EN, _CALLED_EN):
        for m in pattern.finditer(s):
            name, role = _name_en(m.group("name")), _title_en(m.group("role"))
            if name is None or role is None or any(k.name == name for k in out):
                continue
            of = "" if (m.group("det") or "").casefold() == "my" else None
            out.append(Kin(name, role, of, sent, _said_en(name, s[m.end():])))
    label = _LABELLED_EN.match(s)
    if label and (name := _name_en(label.group("name"))) and not any(
            k.name == name for k in out):
        out.append(Kin(name, label.group("rel"), "", sent))
        if label.group("title") and (title := _title_en(label.group("title"))):
            out.append(Kin(name, title, None, sent))
    return out


def _name_zh(run: str) -> str | None:
    """The name that starts a run of Han chars: the whole run when it is one ("陈明", then a
    comma), else up to a char that usually follows a name ("林悦下个月…" -> "林悦") or a title
    ("林国栋律师" -> "林国栋")."""
    titled = _NAME_TITLE_ZH.match(run)
    if titled and valid_zh_name(titled.group("name")):
        return titled.group("name")
    if len(run) <= 4 and valid_zh_name(run):
        return run
    for size in (2, 3):
        if len(run) > size and run[size] in _AFTER_NAME and valid_zh_name(run[:size]):
            return run[:size]
    return None


def _said_zh(name: str, rest: str) -> str:
    m = _ZH_GOES_ON.match(rest)
    return f"{name}{m.group('rest').strip()}" if m and len(m.group("rest")) >= 2 else ""


def _chinese(sent: Span) -> list[Kin]:
    s = sent.text
    out: list[Kin] = []
    for m in _POSSESSED_ZH.finditer(s):
        name = _name_zh(m.group("name"))
        of = "" if m.group("my") else (m.group("of") or "")
        if of and not valid_zh_name(of):
            continue
        if name is None or name == of:
            continue
        end = m.start("name") + len(name)
        out.append(Kin(name, m.group("rel").removeprefix("亲"), of, sent,
                       _said_zh(name, s[end:])))
    for m in _APPOSED_ZH.finditer(s):
        name = _name_zh(m.group("name")[-3:]) or _name_zh(m.group("name")[-2:])
        role = m.group("role").strip()
        if name is None or not any(role.endswith(w) for w in ROLES_ZH) or re.match(
                r"[她他我你是在今明下上]", role) or re.search(r"[当做是在要去]", role):
            continue
        known = next((k for k in out if k.name == name), None)
        if known is not None:  # "我的直属领导是高建国，技术副总裁": both are what he is
            known.role = f"{known.role}；{role}"
            continue
        out.append(Kin(name, role, None, sent, _said_zh(name, s[m.end():])))
    for m in [*_TITLED_ZH.finditer(s), *_CALLED_ZH.finditer(s), *_TITLE_IS_ZH.finditer(s)]:
        name, role = _name_zh(m.group("name")), m.group("role")
        if name and not any(
                k.name == name for k in out):
            out.append(Kin(name, role, None, sent,
                           _said_zh(name, s[m.start("name") + len(name):])))
    return out


def find_kin(sentences: list[Span]) -> list[Kin]:
    """Every person the page's sentences name with a relation or a title (see the module doc)."""
    out: list[Kin] = []
    previous: list[Kin] = []
    for index, sent in enumerate(sentences):
        zh = re.search(_HAN, sent.text) is not None
        found = _chinese(sent) if zh else _english(sent)
        out += found
        # "My landlord is Gerald Hughes. He's been ignoring the boiler…"
        follow = _NEXT_PRONOUN_EN.match(sent.text) if not found and not zh else None
        if follow and len(previous) == 1 and index and sentences[index - 1].end <= sent.start:
            kin = previous[0]
            said = _predicate(kin.name, follow.group("be"), follow.group("rest"))
            if said:
                out.append(Kin(kin.name, "", kin.of, sent, said))
        previous = found
    return out


def kin_findings(hits: list[Kin], speaker: str | None, owner: str,
                 people: dict[str, list[str]], day: str) -> list[Finding]:
    """The person findings `hits` make: each person with their role ("sister", or "Elif's
    manager" when Elif speaks; "Mia's husband"; a title as given) and what was said of them
    as a dated line; a relative `knows` whom they are a relative of (the speaker, `owner`, or
    the person named: "Mia" is the one person, among `people` (id -> names), called so)."""
    out: list[Finding] = []
    for hit in hits:
        zh = lang_of(hit.sentence.text) == "zh"
        found = known_person(hit.name, people)
        if found is None:
            continue
        holder = owner if hit.of == "" else ""
        if hit.of is None or not hit.role:
            role = hit.role
        elif hit.of == "":
            role = hit.role if not speaker else (
                f"{speaker}的{hit.role}" if zh else f"{speaker}'s {hit.role}")
        else:
            of = known_person(hit.of, people)
            if of is None:
                continue
            role = f"{hit.of}的{hit.role}" if zh else f"{hit.of}'s {hit.role}"
            out.append(Finding("person", of[1], {}, hit.sentence, lang_of(of[1])))
            holder = of[0]
        name = found[1]
        finding = Finding("person", name, {"identity": "", "role": role, "traits": "",
                                           "howto": ""}, hit.sentence, "zh" if zh else "en",
                          owner=holder)
        if hit.said:
            finding.lines.append(f"- {day}: {clip(hit.said.replace(hit.name, name, 1), 200)}")
        out.append(finding)
    return out


def known_person(name: str, people: dict[str, list[str]]) -> tuple[str, str] | None:
    """(id, name) of the person `name` says: one of `people` (id -> name and aliases) called
    so, or whose name starts with it ("Mia" -> "Mia Park"), else a new one; None when two
    people share a first name (no guess)."""
    key = norm(name)
    for pid, names in people.items():
        if any(norm(n) == key for n in names):
            return pid, names[0]
    owners = people_first_named(name, people) if " " not in name and name.isascii() else []
    if len(owners) > 1:
        return None
    if owners:
        return owners[0], people[owners[0]][0]
    new = object_id_for("person", name)
    return (new, name) if new else None
