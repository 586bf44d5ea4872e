"""Recognising people: self-introductions, "X 是我的 Y" / "X is our Y" statements, stated aliases.

Only explicit statements count. A Chinese name is 2–4 Han characters starting with a common
surname (lexicon.SURNAMES) and not an everyday word (lexicon.NOT_NAMES); a "X 是我的 Y" or
"X is our Y" statement names a person only when Y ends in a role or relationship word. An alias
is taken only when a cue says so ("大家叫他老张", "英文名 Haoyu", "小名叫小雨", "aka").
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from .lexicon import COMPOUND_SURNAMES, NOT_FIRST_NAMES, NOT_NAMES, ROLES_EN, ROLES_ZH, SURNAMES
from .names import EN_NAME, PASSING_NAME
from .textspan import Span

HAN_RUN = r"[\u4e00-\u9fff]"
_BOUNDARY = r"(?=[\s，,。.！!？?（(：:、；;）)]|$)"
_CLAUSE = r"[^，,。.；;！!？?\n—]"

_ALIAS_CUE = (
    r"(?:(?:大家|同事们?|朋友们?|我们|家里人?|别人)?(?:都|常|常常|一般|通常|也)?"
    r"(?:叫|喊|称)(?:我|他|她)(?:为)?|英文名(?:叫|是)?|小名(?:叫|是)?|又名|昵称(?:叫|是)?|"
    r"\baka\b|a\.k\.a\.|also known as|goes by)"
)
_ALIAS = re.compile(
    _ALIAS_CUE + r"\s*[:：]?\s*(?:“|\")?(?P<alias>" + HAN_RUN + r"{1,4}" + _BOUNDARY
    + r"|[A-Za-z][A-Za-z0-9._-]{0,20}(?: [A-Z][a-z]+)?)"
)

_SELF_ZH = re.compile(r"我(?:是|叫)(?P<name>" + HAN_RUN + r"{2,4})" + _BOUNDARY)
_SELF_EN = re.compile(
    r"(?:\b(?:I'm|I’m|I am|[Mm]y name is)|(?:^|(?<=[\s,!]))(?P<this>[Tt]his is))"
    r"\s+(?P<name>" + EN_NAME + r")\b"
    r"(?:\s*,\s*(?:the|a|an|your|our)\s+(?P<role>[^.,;!?\n—]{2,60}))?"
    # a note's signature: "Ravi Kapoor here — product manager at Quillstone"
    r"|^\W*(?P<here>" + EN_NAME + r")\s+here\b(?:\s*(?:[—–,:]|\s-)\s*(?:the\s+|a\s+|an\s+)?"
    r"(?P<title>[^.,;!?\n—]{2,60}))?"
)
_IS_ROLE_ZH = re.compile(
    # an adverb before 是 is no part of the name ("赵敏现在是我们的项目经理" is 赵敏)
    r"(?P<pre>" + HAN_RUN + r"{2,8}?|" + EN_NAME + r")\s*(?:现在|目前|已经|也|一直)?是\s*"
    r"(?:我们公司|我们|你们|他们|咱们|我家|家里|公司|我|你|他|她)(?:的)?\s*"
    r"(?P<role>[^，,。.；;！!？?\n（(]{1,16})"
)
_IS_ROLE_EN = re.compile(
    r"\b(?P<name>" + EN_NAME + r")\s+(?:is|was)\s+(?:my|our|the|his|her|their|your)\s+"
    r"(?P<role>[^.,;!?\n—]{2,60})"
    # "a"/"an" after a name that is no abstract noun: "Networking was a lifesaver" names no one
    r"|\b(?P<full>(?![A-Z][a-z]+(?:ing|tion|sion|ness|ment|ity|ism|ship|ance|ence)\b)" + EN_NAME
    + r")\s+(?:is|was)\s+(?:a|an)\s+"
    r"(?P<kind>[^.,;!?\n—]{2,60})"
)
_DASH_ROLE = re.compile(
    r"(?P<name>" + HAN_RUN + r"{2,4})(?:[（(](?P<alias>[^）)]{1,10})[）)])?\s*(?:——|—|--)\s*"
    r"(?P<role>[^；;，,。\n]{1,16})"
)
_PAREN = re.compile(r"(?P<name>" + HAN_RUN + r"{2,4})\s*[（(](?P<inner>[^）)]{1,80})[）)]")
_ROLE_HEAD = re.compile(r"\s+(?:on|for|at|of|in|and|who|since|because|with)\s+")
_ROLE_PROJECT = re.compile(r"\b(?:on|for)\s+(?:the\s+)?(?P<proj>[A-Z][\w-]{1,30})\b")
_DUTY_ZH = re.compile(r"负责\s*(?P<duty>[^，,。；;！!？?\n]{1,20})")
_SELF_ROLE_ZH = re.compile(r"我是\s*(?P<role>[^，,。.；;！!？?\n（(]{2,20})")
# A first-person role clause after a self-introduction: "I'm Dana, I run the ops team at
# Larkspur", "…, and I work as a nurse", "…; I'm the CTO at Brightline". A small set of verbs
# that say what someone does at work, not a list of phrasings; what they run is a thing with
# an article or a name ("I run every morning" is no role).
_SELF_ROLE_EN = re.compile(
    r"^\s*[,;]?\s*(?:and\s+)?I(?:'m|’m| am)\s+(?:the|a|an)\s+(?P<role>[^.,;!?\n—]{2,60})"
    r"|^\s*[,;]?\s*(?:and\s+)?I\s+(?P<verb>run|lead|manage|head|oversee|coordinate|"
    r"work as|work on)\s+(?P<what>(?:the|a|an|our|my|[A-Z])[^.,;!?\n—]{1,60})"
    # a subject taught somewhere: "I teach physics at Redfield College"
    r"|^\s*[,;]?\s*(?:and\s+)?I\s+(?P<teach>teach)\s+(?P<subject>[a-z][\w ]{1,30}?\s+"
    r"(?:at|in)\s+[A-Z][^.,;!?\n—]{1,50})"
    # "I just joined as the product designer at Fieldnote"
    r"|^\s*[,;]?\s*(?:and\s+)?I\s+(?:(?:just|recently)\s+)?joined\s+(?:\w+\s+)?as\s+"
    r"(?:the|a|an|our)?\s*(?P<joined>[^.,;!?\n—]{2,60})")
_THIRD = {"run": "runs", "lead": "leads", "manage": "manages", "head": "heads",
          "oversee": "oversees", "coordinate": "coordinates", "work on": "works on"}
_DUTY_PROJECT = re.compile(r"负责\s*(?P<proj>[A-Z][\w-]{1,30})")
_FUNCTION_CHARS = set("向于和跟与同给对把被让叫请")


@dataclass
class PersonHit:
    """A person statement: name, what is known, where it was said."""

    name: str
    sentence: Span
    subject: bool = False  # the sentence is about them ("Elena said…", "林晓梅下周三来上海")
    common: bool = False  # a Chinese word jieba's dictionary knows ("白名单", "徐汇", "李娜")
    role: str = ""
    identity: str = ""
    aliases: list[str] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)


def valid_zh_name(name: str) -> bool:
    """2–4 Han chars, a common surname first, not an everyday word."""
    if not 2 <= len(name) <= 4 or name in NOT_NAMES or name[:2] in NOT_NAMES:
        return False
    return name[0] in SURNAMES or name[:2] in COMPOUND_SURNAMES


def valid_en_name(name: str) -> bool:
    words = name.split()
    return bool(words) and words[0] not in NOT_FIRST_NAMES and all(
        w not in NOT_FIRST_NAMES for w in words
    )


def zh_name_before(run: str) -> str | None:
    """The name at the end of a run of Han chars ("介绍一下李娜" -> "李娜"), if any."""
    if 2 <= len(run) <= 4 and valid_zh_name(run):
        return run
    for size in (3, 2):
        if len(run) > size:
            cand = run[-size:]
            if cand[0] not in _FUNCTION_CHARS and valid_zh_name(cand):
                return cand
    return None


def role_zh(role: str) -> str | None:
    """The role if it ends with a role word ("羽毛球搭子"), else None ("生日")."""
    role = role.strip()
    if any(role.endswith(word) for word in ROLES_ZH):
        return role
    return None


def role_en(role: str) -> str | None:
    """The role phrase if its head ends with a role word ("DevOps lead on Aurora"), without a
    leading "new" ("the new consultant cardiologist" is a consultant cardiologist)."""
    role = re.sub(r"^(?:new|current|acting|interim)\s+", "", role.strip())
    head = _ROLE_HEAD.split(role, maxsplit=1)[0].strip()
    words = head.split()
    if words and role_word(words[-1]):
        return re.split(r"\s+(?:and|who|since|because)\s+", role)[0].strip()
    return None


# Words that end like a trade ("-er", "-or", "-ist") but name a thing or an animal.
_NOT_ROLE_EN = frozenset("""
number paper letter water river flower corner center centre order dinner winter summer weather
matter monster character chapter cover filter folder ladder layer meter newspaper pepper powder
shoulder silver theater theatre tower trigger wonder error door floor color colour mirror motor
sensor tractor elevator calculator radiator monitor computer printer poster sticker trailer
hamster lobster spider tiger beaver otter retriever terrier boxer pointer setter power tower
answer offer other another either neither together however whatever never ever over under
after later rather better sooner faster bigger smaller longer major minor favor favour flavor
flavour honor honour humor humour labor labour interior exterior superior senior junior
christian italian indian asian canadian brazilian persian anyone someone present moment event
""".split())


def role_word(word: str) -> bool:
    """Does `word` name what someone is: a role word (lexicon.ROLES_EN), an abbreviation in
    capitals ("HCA", "CTO", "VP"), or a word formed like a trade ("educator", "cardiologist",
    "librarian"; not "number", "hamster"; "-ee" is left out: "agree", "coffee")?"""
    w = word.strip(".,;:()")
    low = w.lower()
    if low in ROLES_EN or (low.endswith("s") and low[:-1] in ROLES_EN):
        return True
    if re.fullmatch(r"[A-Z]{2,5}", w):
        return True
    return bool(re.fullmatch(r"[a-z]{3,}(?:ist|ian|or|er|ant)", low)) and (
        low not in _NOT_ROLE_EN)


def self_role_en(rest: str) -> str:
    """The role a first-person clause right after a self-introduction states ("I run the ops
    team at Larkspur" -> "runs the ops team at Larkspur", "I work as a nurse" -> "nurse",
    "I'm the CTO at Brightline" -> "CTO at Brightline"), else ""."""
    m = _SELF_ROLE_EN.match(rest)
    if m is None:
        return ""
    if m.group("role") or m.group("joined"):
        return role_en(m.group("role") or m.group("joined")) or ""
    if m.group("teach"):
        return f"teaches {m.group('subject').strip()}"
    what = m.group("what").strip()
    if m.group("verb") == "work as":
        return role_en(re.sub(r"^(?:a|an|the|our)\s+", "", what)) or ""
    return f"{_THIRD[m.group('verb')]} {what}"


# A job said after a Chinese self-introduction: "在星辰科技做产品经理", "是这边的后端工程师".
_JOB_ZH = re.compile(r"^\s*(?:我)?(?P<where>(?:在|于)[^，,。；;！!？?\n]{2,20}?)?"
                     r"(?P<verb>做|当|担任|任|是)(?P<role>[^，,。；;！!？?\n（(]{2,16})$")
_HERE_ZH = re.compile(r"^(?:这边|这里|我们|公司|团队|组里)的")


def job_zh(rest: str) -> str:
    """The job one of the first clauses after a Chinese self-introduction states, as said
    ("在星辰科技做产品经理"; "是这边的后端工程师" -> "后端工程师"), if it ends in a role word."""
    for clause in re.split(r"[，,；;。]", rest)[:3]:
        m = _JOB_ZH.match(clause.strip())
        if m is None or not role_zh(m.group("role")):
            continue
        if m.group("where"):
            return f"{m.group('where')}{m.group('verb')}{m.group('role').strip()}"
        return _HERE_ZH.sub("", m.group("role").strip())
    return ""


def first_name(name: str) -> str | None:
    """The first word of an English full name ("Marcus Lee" -> "Marcus"), kept as an alias so
    a later "Marcus says…" names the person (the engine sends an object as related only when
    the page holds its name or an alias); None for a one-word or Chinese name."""
    words = name.split()
    if len(words) < 2 or not name.isascii() or not valid_en_name(name):
        return None
    first = words[0]
    return first if len(first) >= 3 and first not in _NOT_PEOPLE_EN | _NAME_PREFIXES else None


def romanized(name: str) -> str | None:
    """A Chinese name in pinyin as it is written in English: surname first, the given name in
    one word ("张伟" -> "Zhang Wei", "秦浩宇" -> "Qin Haoyu"), a familiar form by its parts
    ("老张" -> "Lao Zhang"); None for any other name. Kept as an alias, so a page that writes
    "Lao Zhang says…" brings (and names) the person the Chinese name is (the engine sends an
    object as related only when the page holds its name or an alias)."""
    if not re.fullmatch(r"[\u4e00-\u9fff]{2,4}", name):
        return None
    familiar = len(name) == 2 and name[0] in "老小阿" and name[1] in SURNAMES
    if not (familiar or valid_zh_name(name)):
        return None
    from pypinyin import lazy_pinyin  # imported only for a Chinese person's name

    cut = 1 if familiar or name[:2] not in COMPOUND_SURNAMES else 2
    head, rest = lazy_pinyin(name[:cut]), lazy_pinyin(name[cut:])
    if not all(p.isascii() and p.isalpha() for p in head + rest):
        return None
    return f"{''.join(head).capitalize()} {''.join(rest).capitalize()}"


# Words before a name that are no first name ("Lao Zhang" is old Zhang, not a Lao).
_NAME_PREFIXES = frozenset({"Lao", "Xiao", "Old", "Little", "Young", "Big", "Auntie", "Cousin"})


_AS_ROLE = re.compile(r"\bas\s+(?:a|an|the|our|their|his|her)?\s*(?P<role>[a-z][^.,;!?\n—]{2,40})")


def role_as(sentence: str) -> str:
    """The role an "as ROLE" phrase states ("joins the team as network engineer"), else ""."""
    m = _AS_ROLE.search(sentence)
    return (role_en(m.group("role")) or "") if m else ""


def people_first_named(word: str, people: dict[str, list[str]]) -> list[str]:
    """The ids of the people (id -> name and aliases) whose name or an alias starts with the
    one word `word`: "Marcus" names "Marcus Lee" and "Marcus"."""
    key = word.casefold()
    return [pid for pid, names in people.items()
            if any(n.split() and n.split()[0].casefold() == key for n in names)]


def parse_aliases(text: str) -> list[str]:
    """Aliases stated with a cue inside `text` ("大家叫他老张，英文名 Haoyu")."""
    out = []
    for match in _ALIAS.finditer(text):
        alias = match.group("alias").strip(" “”\"")
        if alias and alias not in out:
            out.append(alias)
    return out


def _projects_in(role: str, sentence: str) -> list[str]:
    found = [m.group("proj") for m in _ROLE_PROJECT.finditer(role)]
    found += [m.group("proj") for m in _DUTY_PROJECT.finditer(sentence)]
    return [p for p in dict.fromkeys(found) if p not in NOT_FIRST_NAMES]


def find_people(sentences: list[Span]) -> list[PersonHit]:
    """Every person statement in the page's sentences."""
    hits: list[PersonHit] = []
    for index, sent in enumerate(sentences):
        s = sent.text
        local: list[tuple[int, PersonHit]] = []
        following = sentences[index + 1] if index + 1 < len(sentences) else None

        for m in _SELF_ZH.finditer(s):
            if valid_zh_name(m.group("name")):
                hit = PersonHit(m.group("name"), sent, identity=f"自我介绍为{m.group('name')}")
                rest = s[m.end():]
                duty = _DUTY_ZH.search(rest)
                said = _SELF_ROLE_ZH.search(rest)
                roles = [job_zh(rest), "负责" + duty.group("duty").strip() if duty else ""]
                if not any(roles) and said and (role := role_zh(said.group("role"))):
                    roles = [role]
                hit.role = "；".join(r for r in roles if r)
                hit.projects = _projects_in("", rest)
                local.append((m.start("name"), hit))
        for m in _SELF_EN.finditer(s):
            name = m.group("name") or m.group("here")
            role = (m.group("role") or m.group("title") or "").strip()
            role = role_en(role) or ("" if role else self_role_en(s[m.end():]))
            # "I'm Lena Fischer. I work as a nurse at St James's": the next sentence says it
            later = self_role_en(following.text) if following and not role else ""
            # "this is Mia" presents someone else unless the speaker's own job follows
            if not valid_en_name(name) or (" " not in name or m.group("this")) and not (
                    role or later):
                continue
            hit = PersonHit(name, sent, role=role,
                            identity=f"introduced themself as {name}")
            hit.projects = _projects_in(role, "")
            local.append((m.start("name" if m.group("name") else "here"), hit))
            if later and following is not None:
                hits.append(PersonHit(name, following, role=later,
                                      projects=_projects_in(later, "")))
        for m in _IS_ROLE_ZH.finditer(s):
            pre, role = m.group("pre"), role_zh(m.group("role"))
            name = pre if pre.isascii() and valid_en_name(pre) else zh_name_before(pre)
            if name and role:
                who = s[m.start("pre") + len(pre) - len(name) : m.end("role")].strip()
                hit = PersonHit(name, sent, role=role, identity=who)
                hit.projects = _projects_in("", s[m.end():])
                local.append((m.end("pre") - len(name), hit))
        for m in _IS_ROLE_EN.finditer(s):
            name = m.group("name") or m.group("full")
            role = role_en(m.group("role") or m.group("kind"))
            if role and valid_en_name(name):
                hit = PersonHit(name, sent, role=role, identity=m.group(0).strip())
                hit.projects = _projects_in(m.group("role") or m.group("kind"), "")
                local.append((m.start("name" if m.group("name") else "full"), hit))
        for m in _DASH_ROLE.finditer(s):
            name, role = zh_name_before(m.group("name")), role_zh(m.group("role"))
            if name and role:
                hit = PersonHit(name, sent, role=role, identity=f"{name} —— {role}")
                alias = (m.group("alias") or "").strip()
                if 2 <= len(alias) <= 4 and alias != name:
                    hit.aliases.append(alias)
                local.append((m.start("name") + len(m.group("name")) - len(name), hit))
        for m in _PAREN.finditer(s):
            name = zh_name_before(m.group("name"))
            aliases = parse_aliases(m.group("inner"))
            if name and aliases:
                local.append((m.end("name") - len(name), PersonHit(name, sent, aliases=aliases)))

        for pos, hit in said_roles(sent):
            if not any(h.name == hit.name and h.role for _, h in local):
                local.append((pos, hit))

        for _, hit in local:  # "Chen Hao (陈浩)": one person, the native form an alias
            native = re.search(re.escape(hit.name) + r"\s*[（(](" + HAN_RUN + r"{2,4})[)）]", s)
            if hit.name.isascii() and native and native.group(1) not in hit.aliases:
                hit.aliases.append(native.group(1))

        local.sort(key=lambda item: item[0])
        _attach_sentence_aliases(s, local)
        hits.extend(hit for _, hit in local)
    return hits


def _attach_sentence_aliases(s: str, local: list[tuple[int, PersonHit]]) -> None:
    """Cues like 小名叫小雨 / 大家都叫他 Mark: an alias of the nearest person named before."""
    for m in _ALIAS.finditer(s):
        before = [hit for pos, hit in local if pos < m.start()]
        if not before:
            continue
        target = before[-1]
        alias = m.group("alias").strip(" “”\"")
        if alias and alias != target.name and alias not in target.aliases:
            target.aliases.append(alias)


# --- people named in passing ("order it from Camille", "林晓梅下周三来上海") ---------------------

# Verbs and prepositions that take a person: "ask Camille", "met Elena", "from Camille".
_PERSON_CUE_EN = re.compile(
    r"\b(?:with|ask|asked|call|tell|told|meet|meeting|met|email|emailed|text|"
    r"texted|invite|invited|thank|thanked|remind|reminded|help|helped|"
    r"helping|see|saw|seeing)\s+(?P<name>" + PASSING_NAME + r")"
    r"(?=\s*(?:[,.;:!?)]|$|\s(?:about|to|for|at|on|in|and|next|tomorrow|today|tonight|this|"
    r"last|yesterday|soon|later|again|who|when|because|so)\b))|"
    # "from", "by" and "visit" take places too ("joined from Berlin at 22:00"): only a name
    # that ends the clause counts ("order the printer from Camille.").
    r"\b(?:from|by|visit|visiting|visited)\s+(?P<end>" + PASSING_NAME + r")"
    r"(?=\s*(?:[,.;!?)]|$))")
# A name that is the subject of a verb only people do: "Elena said", "Camille is coming".
_PERSON_SUBJECT_EN = re.compile(
    r"(?:^|(?<=[,;:] )|\b(?:and|but|so|because|when|that|said|says|heard|think|know)\s)"
    r"(?P<name>" + PASSING_NAME + r")"
    # who they are with it: "Sam from pharmacy", "Ifan from the design team"
    r"(?:\s+from\s+(?:the\s+)?[A-Za-z]+(?:\s+(?:team|department|office|group))?)?\s+(?:said|"
    r"says|told|asked|wants|wanted|called|emailed|texted|thinks|thought|promised|agreed|offered|"
    r"suggested|mentioned|visited|came|comes|is coming|will come|arrives|arrived|flew|drove|"
    r"moved|lives|works|worked|has had|got married|adopted|graduated|"
    # joining, working somewhere, preferring: what a plan or a fact about a colleague says
    r"joins|joined|will join|is joining|has worked|has been working|prefers|preferred|"
    # moving, handing over, retiring: what changes about them ("starts" is no cue: "Change
    # starts small")
    r"is moving|is relocating|relocates|relocated|will move|will relocate|is leaving|will leave|"
    r"will take over|takes over|took over|is taking over|will cover|will handle|hands over|"
    r"will hand over|is handing over|is retiring|retires)\b")
# A clause that starts with a person already known ("Ben is building Mia a bookshelf"): any
# verb, since the name is no guess.
_KNOWN_SUBJECT_EN = re.compile(
    r"(?:^|(?<=[,;:] )|\b(?:but|so|because|when|that)\s)(?P<name>" + PASSING_NAME + r")"
    r"\s+(?=(?:is|was|has|had|will|would|can|could|['’]s|['’]ll|"
    r"[a-z]{3,}(?:s|ed))\b)|"
    # after "and" a plain "-s" word is as often a noun ("…and Gatorade deals"): a clear verb
    r"\band\s(?P<also>" + PASSING_NAME + r")\s+(?=(?:is|was|has|had|will|would|"
    r"can|could|['’]s|['’]ll|[a-z]{3,}ed)\b)")
_NOT_PEOPLE_EN = frozenset({
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December", "God", "Mom", "Dad", "Mum", "Christmas", "Easter",
    "Amazon", "Google", "Apple", "Facebook", "Instagram", "Twitter", "Netflix", "Spotify",
    "Zoom", "Slack", "Lord", "Jesus", "Sir", "Madam", "Miss", "Mrs", "Mr", "Dr", "Uber",
    "Grandma", "Grandpa", "Granny", "Grandmother", "Grandfather", "Aunt", "Uncle", "Mommy",
    "Daddy", "Santa", "Buddy", "Bro", "Sis", "Babe", "Honey", "Dude", "Guys", "Everyone",
})


def zh_words(text: str) -> list[tuple[str, str]]:
    """`text` cut into (word, part of speech) by jieba: its dictionary tags person names (nr)
    and nouns far better than a surname table can. Imported on first use (it takes a second
    and a few MB); its start-up notice on stderr is silenced."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return [(p.word, p.flag) for p in jieba.posseg.cut(text)]


def in_dictionary(word: str) -> bool:
    """Is `word` in jieba's dictionary? Its names tagged nr there include everyday words
    ("白名单", "温馨") and places ("徐汇"); a name it had to guess ("林晓梅") is not."""
    import jieba.posseg

    return word in jieba.posseg.dt.word_tag_tab


# News of someone, what a speaker's small talk may still carry: a move, a hand-over, joining
# or leaving, a wish or a plan ("Amy wants to visit Rome in May").
_NEWS_VERB = re.compile(r"\s+(?:wants|wanted|would like|hopes|is hoping|plans|is planning|"
                        r"is going to|will|is moving|is relocating|relocates|relocated|will move|"
                        r"will relocate|is leaving|will leave|left|will take over|takes over|"
                        r"took over|is taking over|will cover|hands over|will hand over|"
                        r"is handing over|is retiring|retires|retired|joins|joined|will join|"
                        r"is joining|moved|got married|graduated|quit)\b")


def find_named(sentences: list[Span], skip: set[str],
               known: frozenset[str] = frozenset(), news: bool = False) -> list[PersonHit]:
    """People a sentence names in passing (not in `skip`): English by a person cue, or as the
    subject of any verb when they are `known` (a name or an alias of a related person),
    Chinese by jieba's name tag and a common surname (the subject when the sentence starts
    with them or says it is by or handed to them: "…由赵磊接手", "…交给王丽负责"). With `news`
    only an English subject of a news verb counts ("Tomas is relocating", not "Woodhaven has
    had an interesting past")."""
    hits: list[PersonHit] = []
    seen = set(skip)
    for sent in sentences:
        names: list[tuple[str, bool, bool]] = []
        if HAN_RE.search(sent.text):
            names += [(w, sent.text.startswith(w) or re.search(f"(?:由|交给){w}", sent.text)
                       is not None, in_dictionary(w))
                      for w, flag in zh_words(sent.text) if flag == "nr" and valid_zh_name(w)]
        for pattern in (_PERSON_CUE_EN, _PERSON_SUBJECT_EN, _KNOWN_SUBJECT_EN):
            for m in pattern.finditer(sent.text):
                group = next(g for g in ("name", "end", "also") if m.groupdict().get(g))
                name = m.group(group)
                if pattern is _KNOWN_SUBJECT_EN and name not in known:
                    continue
                if news and not _NEWS_VERB.match(sent.text, m.end(group)):
                    continue  # in small talk only news of someone counts
                if valid_en_name(name) and name.split()[0] not in _NOT_PEOPLE_EN:
                    names.append((name, pattern is not _PERSON_CUE_EN, False))
        for name, subject, common in sorted(names, key=lambda n: not n[1]):  # subject first
            if name not in seen:
                seen.add(name)
                hits.append(PersonHit(name, sent, subject=subject, common=common))
    return hits


HAN_RE = re.compile(HAN_RUN)


# --- roles said as a note, a work verb or a title (issue: other people's words) -------------

# A title before an English name is no part of it: "Dr. Rhys Evans", "Sister Gwen Morgan".
TITLES_EN = ("Dr", "Doctor", "Prof", "Professor", "Mr", "Mrs", "Ms", "Miss", "Mx", "Sister",
             "Nurse", "Chef", "Coach", "Captain", "Father", "Rev", "Judge", "Officer")
_TITLE_EN = r"(?:(?:" + "|".join(TITLES_EN) + r")\.?\s+)"
# A note's line: "Priya Nair — ops mgr, started Mon", "- Tom Brandt, forklift lead",
# "Dr. Rhys Evans — respiratory consultant"; a comma only on a list item.
_LINE_ROLE_EN = re.compile(
    r"^\W*?(?P<item>[-*•]\s*)?" + _TITLE_EN + r"?(?P<name>" + EN_NAME + r")\s*"
    r"(?P<sep>—|–|--|\s-\s|,)\s*(?:the\s+|a\s+|an\s+|our\s+)?(?P<role>[^,;.!?\n—–]{2,50})")
# What someone does at work, said with a verb after their full name: "Julia Alvarez runs
# payroll", "Carlos Reyes owns `payments-gateway`", "Kev drives the 2nd shift truck"; one
# word only on a list item ("- Kev drives…"), since "Apple runs…" names a firm.
_WORKS_EN = re.compile(
    r"^\W*?(?P<item>[-*•]\s*)?" + _TITLE_EN + r"?(?P<name>" + EN_NAME + r")\s+"
    r"(?P<verb>owns|runs|leads|manages|heads|drives|teaches|maintains|handles|oversees|"
    r"coordinates|supervises|looks after)\s+(?P<what>[^,;.!?\n—]{2,60})")
# A team or department someone is from: "Femi Adeyemi from security reviews…"
_FROM_TEAM_EN = re.compile(
    r"(?:^|(?<=[\s,;:]))(?P<name>" + EN_NAME + r")\s+from\s+(?P<team>[a-z][\w-]{2,30}"
    r"(?:\s+(?:team|department|office|group))?)\s+(?=[a-z]+s\b)")
# A Chinese title after a name: "李建华医生", "赵老师" stays a name of its own (no given name)
_NAME_TITLE_ZH = re.compile(r"(?P<run>" + HAN_RUN + r"{2,6}?)(?P<title>医生|大夫|老师|律师|教授|"
                            r"护士|经理|总监|主任|院长|校长|师傅)")
# A role said of someone named earlier in the sentence: "…周晓雯在深圳工作，她是个律师",
# "陈静负责财务" (a duty right after the name).
_PRONOUN_ROLE_ZH = re.compile(r"[，,]\s*(?:她|他)(?:现在|目前|以前|原来)?(?:是|当)"
                              r"(?:个|一个|一名|一位|名|位)?(?P<role>[^，,。；;！!？?]{1,10})")
_DUTY_AFTER_ZH = re.compile(r"^\W*(?P<name>" + HAN_RUN + r"{2,4}?)负责"
                            r"(?P<duty>[^，,。；;！!？?]{1,16})")


# The role before a full name, with no comma: "New registrar Tariq Hussain starts…", "Our
# practice nurse Jo Kaur…"; only a sentence's start, and a role word last.
_ROLE_FIRST_EN = re.compile(
    r"^\W*(?:(?:[Nn]ew|[Oo]ur|[Mm]y|[Tt]he)\s+)+(?P<role>(?:[a-z][\w-]*\s+){0,2}(?:[a-z][\w-]*|[A-Z]{2,5}))\s+"
    r"(?P<name>" + EN_NAME + r")\b")
# A Chinese relation or role right before a name, a clause's start: "室友陈思琪是学医的",
# "她男朋友周航在清华读研", "老伴周建军以前是工程师", "高中同学张磊"
_KIN_WORDS_ZH = "|".join(sorted({*ROLES_ZH, "老伴", "男朋友", "女朋友", "高中同学",
                                 "大学同学", "老同学", "未婚夫", "未婚妻"}, key=len, reverse=True))
# The role, then the name it is called by: "实验室新来了一个博士后，叫刘畅"
_ONE_CALLED_ZH = re.compile(r"(?:一个|一位|一名|个|位|名)(?P<role>[^，,。；;的]{1,8}?)[，,]?\s*"
                            r"(?:叫|名叫|叫做)(?P<name>" + HAN_RUN + r"{2,3})")
# A relation with the name in brackets: "Mum (Grace) in for her hip replacement", "my boss
# (Dana Whitfield)".
_REL_BRACKET_EN = re.compile(r"\b(?P<rel>[A-Za-z][a-z]{1,15})\s*\((?P<name>"
                             + EN_NAME + r")\)")
_ROLE_FIRST_ZH = re.compile(r"(?:^|(?<=[，,。；;：:]))\s*(?:她|他)?(?:和|跟|与|同)?(?P<role>"
                            + _KIN_WORDS_ZH
                            + r")(?P<name>" + HAN_RUN + r"{2,3}?)(?=是|在|以前|现在|也|下|要|来|去|"
                            r"说|和|跟|刚|已经|从|约|见|请|一起|，|,|。|$)")


def strip_title(name: str) -> str:
    """An English name without a title before it ("Dr. Rhys Evans" -> "Rhys Evans"), when a
    full name is left; "Mrs. Okafor" keeps its title, the only handle it has."""
    m = re.match(_TITLE_EN + r"(?P<rest>.+)$", name)
    return m.group("rest") if m and len(m.group("rest").split()) >= 2 else name


def said_roles(sent: Span) -> list[tuple[int, PersonHit]]:
    """People whose role a note line, a work verb, a team, a title word or a pronoun clause
    states (see the patterns above), with where the name starts."""
    s, out = sent.text, []
    for pattern in (_LINE_ROLE_EN, _WORKS_EN):
        m = pattern.match(s)
        if m is None or not valid_en_name(m.group("name")):
            continue
        name = m.group("name")
        if pattern is _LINE_ROLE_EN:
            if m.group("sep") == "," and not m.group("item"):
                continue
            role = role_en(m.group("role")) or ""
        else:
            if " " not in name and not m.group("item"):
                continue
            role = f"{m.group('verb')} {m.group('what').strip()}"
        if role:
            out.append((m.start("name"), PersonHit(name, sent, role=role,
                                                   identity=f"{name} — {role}")))
    first = _ROLE_FIRST_EN.match(s)
    if first and " " in first.group("name") and valid_en_name(first.group("name")) and (
            title := role_en(first.group("role"))):
        out.append((first.start("name"), PersonHit(first.group("name"), sent, role=title)))
    for m in _REL_BRACKET_EN.finditer(s):
        if valid_en_name(m.group("name")) and m.group("rel").lower() in ROLES_EN:
            out.append((m.start("name"), PersonHit(m.group("name"), sent,
                                                   role=m.group("rel").lower())))
    for m in _FROM_TEAM_EN.finditer(s):
        name = m.group("name")
        if " " in name and valid_en_name(name) and name.split()[0] not in NOT_FIRST_NAMES:
            out.append((m.start("name"), PersonHit(name, sent, role=f"from {m.group('team')}")))
    if HAN_RE.search(s):
        for m in _NAME_TITLE_ZH.finditer(s):
            name = zh_name_before(m.group("run"))
            if name and len(name) >= 3 or name and name[1] not in "老小":
                out.append((m.end("run") - len(name), PersonHit(name, sent,
                                                                role=m.group("title"))))
        for m in _ROLE_FIRST_ZH.finditer(s):
            if valid_zh_name(m.group("name")):
                # what the clause goes on to say of them: "周航在清华读研"
                rest = re.split(r"[，,。；;！!？?]", s[m.end("name"):])[0]
                said = m.group("name") + rest if len(rest) >= 2 else ""
                out.append((m.start("name"), PersonHit(m.group("name"), sent,
                                                       role=m.group("role"), identity=said)))
        for m in _ONE_CALLED_ZH.finditer(s):
            if valid_zh_name(m.group("name")) and role_zh(m.group("role")):
                out.append((m.start("name"), PersonHit(m.group("name"), sent,
                                                       role=m.group("role"))))
        duty = _DUTY_AFTER_ZH.match(s)
        if duty and valid_zh_name(duty.group("name")):
            out.append((duty.start("name"), PersonHit(
                duty.group("name"), sent, role="负责" + duty.group("duty").strip())))
        said = _PRONOUN_ROLE_ZH.search(s)
        if said and (title := role_zh(said.group("role"))):
            named = [w for w, flag in zh_words(s[:said.start()]) if flag == "nr"
                     and valid_zh_name(w)]
            if len(set(named)) == 1:
                out.append((s.index(named[0]), PersonHit(named[0], sent, role=title)))
    merged: dict[str, tuple[int, PersonHit]] = {}
    for pos, hit in out:  # one hit a person, its roles joined ("女儿; 律师")
        if hit.name in merged and hit.role not in merged[hit.name][1].role:
            merged[hit.name][1].role += f"; {hit.role}"
        merged.setdefault(hit.name, (pos, hit))
    return list(merged.values())
