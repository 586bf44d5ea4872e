"""An object's state: where a schedule or a todo stands, as a field of its own.

`objects.state` (migration m018_object_state) holds it: a schedule is scheduled, moved,
cancelled or done; a todo is open, done or dropped; every other type has none (NULL). It is
not `status` (candidate/active/archived: the object's lifecycle in memory): a cancelled plan is
still an active object, and should read as cancelled everywhere it is shown.

`past` is never stored: a one-off schedule still scheduled (or moved) whose day has gone reads
as past, worked out when read from its time rule and the clock (`shown_state`). Nothing here
reads a clock: callers pass today's date.

A model sets the state through the proposal schema (proposals.ObjectWrite.state), a person
with `memvault edit ID --state …`. A write that gives none keeps the stored state, unless its
body's state line now says another one (a model that only rewrote the body), and a new object
takes the one its body says (`state_from_body`), so bodies written before the field existed,
or by a model that leaves it out, still give their objects a state. The body's state line
follows the state (`body_with_state`): a state set by the field or by hand rewrites a line that
said another, so the page never contradicts itself.
"""

from __future__ import annotations

import re
from datetime import date

from ..base.errors import InputError
from ..base.patterns import lazy_compile

SCHEDULE_STATES = ("scheduled", "moved", "cancelled", "done")
TODO_STATES = ("open", "done", "dropped")
STATES: dict[str, tuple[str, ...]] = {"schedule": SCHEDULE_STATES, "todo": TODO_STATES}
ALL_STATES = tuple(dict.fromkeys([*SCHEDULE_STATES, *TODO_STATES]))
# States that end a plan: no longer ahead, no longer to do.
CLOSED = frozenset({"cancelled", "done", "dropped"})
PAST = "past"  # shown, never stored: a one-off whose day has gone

# A body's state line, as the builtin model writes it (`- state: cancelled`, `- 状态：已取消`)
# and as a person or a real model usually does.
STATE_LINE = lazy_compile(r"^\s*[-*]?\s*(?:state|状态)\s*[:：]\s*(?P<value>.*)$",
                          re.IGNORECASE | re.MULTILINE)
RULE_LINE = lazy_compile(
    r"^\s*[-*]?\s*(?:time rule|time|when|date|时间规则|时间|日期)\s*[:：]\s*(?P<value>.*)$",
    re.IGNORECASE | re.MULTILINE)
_ISO_DAY = lazy_compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_RECURRING = lazy_compile(r"\b(?:recurring|repeat\w*|every|weekly|daily|monthly)\b|重复|每",
                          re.IGNORECASE)
# What a state line's words mean, checked in this order (a "moved" line names its old day).
_WORDS = (
    ("cancelled", lazy_compile(r"cancel|called off|取消", re.IGNORECASE)),
    ("dropped", lazy_compile(r"drop|abandon|放弃|不做了|作废", re.IGNORECASE)),
    ("done", lazy_compile(r"\bdone\b|\bcompleted?\b|\bfinished\b|已完成|(?<![未没])完成|已办",
                          re.IGNORECASE)),
    ("moved", lazy_compile(r"\bmoved\b|postpone|reschedul|改期|推迟|延期", re.IGNORECASE)),
)


def has_state(type_: str) -> bool:
    """Whether objects of this type carry a state (schedules and todos do)."""
    return type_ in STATES


def default_state(type_: str) -> str | None:
    """The state a new schedule or todo starts in; None for the other types."""
    states = STATES.get(type_)
    return states[0] if states else None


def state_problem(type_: str, state: str) -> str | None:
    """Why `state` is not one an object of `type_` may hold (None when it may)."""
    if state == PAST:
        return ("past is worked out from a one-off's time and today, never set: set "
                "done or cancelled instead")
    states = STATES.get(type_)
    if states is None:
        return (f"a {type_} has no state (only schedules and todos do: "
                f"schedule {', '.join(SCHEDULE_STATES)}; todo {', '.join(TODO_STATES)})")
    if state not in states:
        return f"{state!r} is not a {type_} state (one of {', '.join(states)})"
    return None


def check_state(type_: str, state: str) -> None:
    """InputError when `state` is not valid for `type_` (see state_problem)."""
    problem = state_problem(type_, state)
    if problem:
        raise InputError(problem)


def state_from_text(type_: str, text: str) -> str | None:
    """The state a state line's words say (`cancelled on 2026-10-20 (was …)` -> cancelled;
    `改期（原定 …）` -> moved), for this type: a todo that is cancelled is dropped, one that is
    moved is still open. None for a type without states."""
    if type_ not in STATES:
        return None
    said = next((state for state, words in _WORDS if words.search(text)), None)
    if type_ == "todo":
        said = {"cancelled": "dropped", "moved": "open"}.get(said or "", said)
    return said if said in STATES[type_] else default_state(type_)


def state_from_body(type_: str, body: str) -> str | None:
    """The state a schedule's or todo's body says on its state line (the first one); the
    type's first state when it has none; None for the other types."""
    if type_ not in STATES:
        return None
    line = STATE_LINE.search(body)
    return state_from_text(type_, line.group("value")) if line else default_state(type_)


def state_of(type_: str, stored: str | None, body: str) -> str | None:
    """The object's state: the stored one, or (a row written without it, as a database
    upgraded from the original design holds) the one its body says."""
    if type_ not in STATES:
        return None
    return stored or state_from_body(type_, body)


# The word a state line says each state with, in English and Chinese (the builtin's words).
_LINE_WORDS = {
    "scheduled": ("scheduled", "已安排"), "moved": ("moved", "改期"),
    "cancelled": ("cancelled", "已取消"), "done": ("done", "已完成"),
    "open": ("open", "未完成"), "dropped": ("dropped", "已放弃"),
}
BODY_MAX_CHARS = 16_000  # objects.body's CHECK


def body_with_state(type_: str, body: str, state: str | None) -> str:
    """`body` with its (first) state line saying `state`, when it says another: the line is
    rewritten as the state's word (Chinese under a Chinese label), keeping that a schedule
    repeats (`cancelled (recurring)`), so it is never read as a one-off that can go past. A
    body without a state line, or one already saying `state`, is returned as it is."""
    line = STATE_LINE.search(body)
    if state is None or type_ not in STATES or line is None:
        return body
    said = line.group("value")
    if state_from_text(type_, said) == state:
        return body
    zh = bool(re.search(r"[\u4e00-\u9fff]", body[line.start():line.start("value")]))
    word = _LINE_WORDS[state][1 if zh else 0]
    if _RECURRING.search(said):
        word += "（重复）" if zh else " (recurring)"
    rewritten = body[:line.start("value")] + word + body[line.end("value"):]
    return rewritten if len(rewritten) <= BODY_MAX_CHARS else body


def one_off_day(body: str, summary: str = "") -> date | None:
    """The day a one-off schedule is on: the first ISO date of its time rule line (else of its
    summary); None when it repeats or names no date."""
    line = RULE_LINE.search(body)
    text = line.group("value") if line else summary
    state = STATE_LINE.search(body)
    if _RECURRING.search(text) or (state and _RECURRING.search(state.group("value"))):
        return None
    found = _ISO_DAY.search(text)
    if not found:
        return None
    try:
        return date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    except ValueError:
        return None


def shown_state(type_: str, stored: str | None, body: str, summary: str,
                today: date | None) -> str | None:
    """The state as read on `today`: `past` for a schedule still scheduled or moved whose
    one-off day is before today, else the state (None: a type without states)."""
    state = state_of(type_, stored, body)
    if (type_ == "schedule" and today is not None and state in ("scheduled", "moved")
            and (day := one_off_day(body, summary)) is not None and day < today):
        return PAST
    return state


def is_current(state: str | None) -> bool:
    """Still ahead or open: not cancelled, done, dropped or past (no state: current)."""
    return state not in CLOSED and state != PAST


def marked_summary(state: str | None, summary: str) -> str:
    """A summary as a person or agent reads it: one of a plan that is no longer ahead says so
    first (`[cancelled] Dentist — 2026-10-28`), so the old date never reads as upcoming."""
    if is_current(state) or not summary:
        return summary
    return f"[{state}] {summary}"
