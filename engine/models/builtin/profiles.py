"""Object bodies as the builtin model writes them: labelled lines, rendered, parsed and merged.

A body is a list of `- label: value` lines (Chinese labels and full-width colon for Chinese
sources). The labels follow docs/spec.md's suggested bodies (section 1.4: person
identity/role/traits/how to work with them; todo item/condition/state; schedule time
rule/item/state; knowledge conclusion/when it applies/experience; project scope/goal/state;
credential purpose/where it lives). A fact the rules did not find is written as unknown, never
guessed.

Merging keeps every line of the existing body: a value written as unknown may be filled in, a
person's role may grow, a todo's state may change; other facts are never overwritten.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

UNKNOWN = {"zh": "未知", "en": "unknown"}
_UNKNOWN_VALUES = {"未知", "unknown", "不明", "n/a", ""}

# canonical key -> (Chinese label, English label), per object type, in body order.
FIELDS: dict[str, list[tuple[str, str, str]]] = {
    "person": [("identity", "身份", "identity"), ("role", "职责", "role"),
               ("traits", "特点", "traits"), ("howto", "协作提示", "how to work with them"),
               ("projects", "项目", "projects")],
    "todo": [("item", "事项", "item"), ("condition", "条件", "condition"),
             ("state", "状态", "state"), ("note", "备注", "note")],
    "schedule": [("rule", "时间规则", "time rule"), ("item", "事项", "item"),
                 ("state", "状态", "state"), ("note", "备注", "note")],
    "knowledge": [("conclusion", "结论", "conclusion"), ("applies", "适用条件", "when it applies"),
                  ("experience", "经验", "experience")],
    "project": [("scope", "范围", "scope"), ("goal", "目标", "goal"), ("state", "现状", "state")],
    "credential": [("purpose", "用途", "purpose"), ("where", "存放位置", "where it lives"),
                   ("value", "密钥本身", "secret value"), ("note", "备注", "note")],
    "task": [("goal", "目标", "goal"), ("progress", "进度", "progress"),
             ("constraints", "约束", "constraints"), ("next", "下一步", "next step")],
}
# Keys that are always written (as unknown when missing); the rest only when known.
REQUIRED = {
    "person": ("identity", "role", "traits", "howto"), "todo": ("item", "condition", "state"),
    "schedule": ("rule", "item", "state"), "knowledge": ("conclusion", "applies", "experience"),
    "project": ("scope", "goal", "state"), "credential": ("purpose", "where", "value"),
    "task": ("goal", "progress", "constraints", "next"),
}
# Keys whose values accumulate ("a; b") instead of keeping the first one.
GROWING = {"role", "projects", "note", "traits"}
# Keys a later statement may replace outright.
REPLACEABLE = {"state"}

_LINE = re.compile(r"^\s*[-*]?\s*([^:：\n]{1,40}?)\s*[:：]\s*(.*)$")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def lang_of(text: str) -> str:
    """'zh' when a fair share of the letters are Han characters, else 'en'."""
    han = len(_CJK.findall(text))
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return "zh" if han and han * 3 >= latin else "en"


def norm(text: str) -> str:
    """Normalised form for name comparison: NFKC, case-folded, no spaces or dots."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\s._·\-]+", "", text)


def is_unknown(value: str | None) -> bool:
    return value is None or value.strip().casefold() in _UNKNOWN_VALUES


@dataclass
class Line:
    """One body line: its label as written, the canonical key (None if foreign) and value."""

    label: str
    key: str | None
    value: str
    raw: str


def _key_for(type_: str, label: str) -> str | None:
    wanted = label.strip().casefold()
    for key, zh, en in FIELDS.get(type_, []):
        if wanted in (zh.casefold(), en.casefold(), key):
            return key
    return None


def parse_body(type_: str, body: str) -> list[Line]:
    """Split a body into lines; lines that are not `label: value` keep key None."""
    lines = []
    for raw in body.splitlines():
        match = _LINE.match(raw)
        if match:
            label, value = match.group(1), match.group(2).strip()
            lines.append(Line(label, _key_for(type_, label), value, raw))
        elif raw.strip():
            lines.append(Line("", None, raw.strip(), raw))
    return lines


def body_lang(lines: list[Line], default: str) -> str:
    for line in lines:
        if line.key:
            return "zh" if _CJK.search(line.label) else "en"
    return default


def label_for(type_: str, key: str, lang: str) -> str:
    for k, zh, en in FIELDS[type_]:
        if k == key:
            return zh if lang == "zh" else en
    return key


def render_line(type_: str, key: str, value: str, lang: str) -> str:
    sep = "：" if lang == "zh" else ": "
    return f"- {label_for(type_, key, lang)}{sep}{value}"


def render_body(type_: str, fields: dict[str, str], lang: str) -> str:
    """A fresh body: every required key (unknown when missing), then the known optional ones."""
    out = []
    for key, _, _ in FIELDS[type_]:
        value = fields.get(key, "")
        if is_unknown(value):
            if key not in REQUIRED[type_]:
                continue
            value = UNKNOWN[lang]
        out.append(render_line(type_, key, value.strip(), lang))
    return "\n".join(out)


def merge_body(type_: str, body: str, fields: dict[str, str], lang: str,
               replace: frozenset[str] = frozenset()) -> str:
    """The existing body with new facts folded in; never drops or contradicts an old line,
    except the keys in `replace`: a stated change (a schedule moved to another day) replaces
    their value, and the caller keeps the old one as a history line."""
    lines = parse_body(type_, body)
    lang = body_lang(lines, lang)
    out = [line.raw for line in lines]
    seen: set[str] = set()
    for index, line in enumerate(lines):
        if line.key is None or line.key in seen or line.key not in fields:
            continue
        seen.add(line.key)
        new = fields[line.key].strip()
        if is_unknown(new):
            continue
        old = line.value
        if is_unknown(old) or (line.key in REPLACEABLE | replace and norm(old) != norm(new)):
            value = new
        elif line.key in GROWING and norm(new) not in norm(old) and norm(old) not in norm(new):
            value = f"{old}; {new}"
        else:
            continue
        sep = "：" if _CJK.search(line.label) else ": "
        out[index] = f"- {line.label}{sep}{value}"
    for key, _, _ in FIELDS[type_]:
        value = fields.get(key, "")
        if key in seen or is_unknown(value) or any(line.key == key for line in lines):
            continue
        out.append(render_line(type_, key, value.strip(), lang))
    return "\n".join(out)


def field_value(type_: str, body: str, key: str) -> str | None:
    """The value of `key` in a body, or None when the body has no such line."""
    for line in parse_body(type_, body):
        if line.key == key:
            return line.value
    return None


_DONE = re.compile(r"\bdone\b|\bcompleted?\b|\bfinished\b|已完成|完成了|已办|已结束", re.IGNORECASE)


def is_done(body: str) -> bool:
    """Does a todo's body say its state is done?"""
    state = field_value("todo", body, "state")
    return state is not None and bool(_DONE.search(state))


def merge_unique(*groups: list[str], exclude: str = "", limit: int = 32) -> list[str]:
    """Union of string lists in order, without duplicates (by normalised form) or `exclude`."""
    out: list[str] = []
    seen = {norm(exclude)} if exclude else set()
    for group in groups:
        for item in group:
            item = item.strip()
            key = norm(item)
            if item and key not in seen:
                seen.add(key)
                out.append(item)
    return out[:limit]


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` chars, at a word boundary when that is close, with '…'."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6 and not _CJK.search(cut[space:]):
        cut = cut[:space]
    return cut.rstrip(" ,，、;；:：") + "…"
