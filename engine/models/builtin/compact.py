"""compact for the builtin model: an extractive summary of a run of hot-timeline nodes.

One line per raw node, "MM-DD HH:MM source: first sentence, trimmed"; a head (an earlier
summary) contributes its own lines. The summary covers every node it was given and is strictly
shorter than the nodes both in chars and in estimated tokens (memvault.base.tokens), aiming at about
45% of them; when that budget is too tight it drops repeated dates, then folds heads into one
line, then folds everything into one line, and only as a last resort cuts to fit. Nothing is
invented: every word comes from the nodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...base.tokens import estimate_tokens
from ...secrets.detector import scan_secrets
from ..payloads import CompactPayload

RATIO = 0.5
MIN_CONTENT = 10  # below this many chars per line, the next, more compact layout is tried
_STAMP = re.compile(r"\d{4}-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})")
_HEAD_LINE = re.compile(
    r"^(?:(\d{2}-\d{2})\s+)?(\d{2}:\d{2})(?:[–-](?:\d{2}-\d{2}\s+)?\d{2}:\d{2})?"
    r"\s*(?:([A-Za-z][\w-]{0,20}))?\s*:\s*(.*)$")
SOFT_CONTENT = 80  # a node's content grows sentence by sentence up to about this many chars
_SENTENCE_END = re.compile(r"(?<=[。！？!?])|(?<=\.)\s|\n")
_SMALL_TALK = re.compile(
    r"^(?:早上好|晚上好|你好|您好|好的|好|嗯|哈哈|谢谢|收到|明白|hi|hello|hey|ok|okay|sure|thanks|"
    r"thank you|got it|great|nice work|welcome back|congrats)\b.{0,12}$", re.IGNORECASE)


@dataclass
class Item:
    """One line of the summary: when, who, and what was said."""

    date: str
    time: str
    source: str
    content: str


@dataclass
class Node:
    """A node of the batch, reduced to what the summary needs."""

    items: list[Item]
    head: bool
    date: str
    time: str
    end_date: str
    end_time: str


SECRET_MARK = "[secret]"


def _stamp(value: Any) -> tuple[str, str]:
    match = _STAMP.search(str(value or ""))
    if not match:
        return "", ""
    return f"{match.group(1)}-{match.group(2)}", f"{match.group(3)}:{match.group(4)}"


def first_sentence(text: str) -> str:
    """The first sentence of `text` that says something (a leading greeting is skipped),
    followed by the next ones while they fit in about SOFT_CONTENT chars."""
    parts = [" ".join(p.split()) for p in _SENTENCE_END.split(text.strip()) if p and p.strip()]
    while len(parts) > 1 and _SMALL_TALK.match(parts[0]):
        parts.pop(0)
    if not parts:
        return ""
    out = parts.pop(0)
    while parts and len(out) + 1 + len(parts[0]) <= SOFT_CONTENT:
        out = f"{out} {parts.pop(0)}"
    return out


def without_secrets(text: str) -> str:
    """`text` with each secret-looking value replaced by a short mark: the engine refuses a
    summary that holds one, and an extractive summary would otherwise copy it every retry."""
    out, pos = [], 0
    for hit in sorted(scan_secrets(text), key=lambda h: (h.start, -h.end)):
        if hit.end > pos:
            out += [text[pos: max(pos, hit.start)], SECRET_MARK]
            pos = hit.end
    return "".join(out) + text[pos:]


def load(payload: CompactPayload) -> list[Node]:
    nodes = []
    for raw in payload.get("nodes") or []:
        date, time = _stamp(raw.get("from"))
        end_date, end_time = _stamp(raw.get("to"))
        text = without_secrets(str(raw.get("text") or ""))
        source = str(raw.get("source") or "")
        if raw.get("kind") == "head" or int(raw.get("level") or 0) >= 1:
            items = []
            for line in (ln.strip() for ln in text.splitlines()):
                match = _HEAD_LINE.match(line) if line else None
                if match:
                    items.append(Item(match.group(1) or date, match.group(2),
                                      match.group(3) or "", " ".join(match.group(4).split())))
                elif line:
                    items.append(Item(date, time, "", " ".join(line.split())))
            nodes.append(Node(items or [Item(date, time, "", "")], True, date, time, end_date,
                              end_time))
        else:
            nodes.append(Node([Item(date, time, source, first_sentence(text))], False, date,
                              time, end_date, end_time))
    return nodes


def trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…" if limit >= 2 else text[:limit]


def _prefix(item: Item, last_date: str, with_date: bool) -> str:
    when = item.time if (not with_date and item.date == last_date) else \
        f"{item.date} {item.time}".strip()
    who = f" {item.source}" if item.source else ""
    return f"{when}{who}".strip()


def layout_lines(nodes: list[Node], limit: int, always_date: bool) -> str:
    """Layouts 1 and 2: a line per raw node and per head line; dates only when they change."""
    out, last = [], ""
    for node in nodes:
        for item in node.items:
            out.append(f"{_prefix(item, last, always_date)}: {trim(item.content, limit)}")
            last = item.date
    return "\n".join(out)


def layout_folded_heads(nodes: list[Node], limit: int) -> str:
    """Layout 3: one line per node; a head's lines folded into one."""
    out, last = [], ""
    for node in nodes:
        if node.head:
            until = node.end_time if node.end_date == node.date else \
                f"{node.end_date} {node.end_time}"
            span = f"{node.time}–{until}" if node.end_time else node.time
            when = span if node.date == last else f"{node.date} {span}".strip()
            out.append(f"{when}: " + "; ".join(trim(i.content, limit) for i in node.items))
        else:
            out.append(f"{_prefix(node.items[0], last, False)}: "
                       f"{trim(node.items[0].content, limit)}")
        last = node.date
    return "\n".join(out)


def layout_one_line(nodes: list[Node], limit: int) -> str:
    """Layout 4: everything on one line after the run's time span."""
    first, last = nodes[0], nodes[-1]
    end_date, end_time = (last.end_date, last.end_time) if last.end_time else (last.date,
                                                                               last.time)
    until = end_time if end_date == first.date else f"{end_date} {end_time}"
    span = f"{first.date} {first.time}–{until}".strip()
    parts = ["; ".join(trim(i.content, limit) for i in n.items) for n in nodes]
    return f"{span}: " + " / ".join(parts)


def _fits(text: str, chars: int, tokens: int) -> bool:
    return 0 < len(text) <= chars and estimate_tokens(text) <= tokens


def _best_limit(render: Callable[[int], str], longest: int, chars: int,
                tokens: int) -> int | None:
    """The largest per-line content limit whose rendering fits the budgets, or None."""
    if not _fits(render(0), chars, tokens):
        return None
    lo, hi = 0, longest
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _fits(render(mid), chars, tokens):
            lo = mid
        else:
            hi = mid - 1
    return lo


def summarise(nodes: list[Node], chars: int, tokens: int) -> str | None:
    """The most detailed layout that fits `chars` and `tokens`, or None."""
    longest = max((len(i.content) for n in nodes for i in n.items), default=0)
    layouts: list[Callable[[int], str]] = [
        lambda lim: layout_lines(nodes, lim, True),
        lambda lim: layout_lines(nodes, lim, False),
        lambda lim: layout_folded_heads(nodes, lim),
        lambda lim: layout_one_line(nodes, lim),
    ]
    fallback: tuple[int, str] | None = None
    for render in layouts:
        limit = _best_limit(render, longest, chars, tokens)
        if limit is None:
            continue
        if limit >= min(MIN_CONTENT, longest):
            return render(limit)
        if fallback is None or limit > fallback[0]:
            fallback = (limit, render(limit))
    return fallback[1] if fallback else None


def cut_to_fit(text: str, chars: int, tokens: int) -> str:
    """The longest prefix of `text` within both budgets (at least one char)."""
    lo, hi = 1, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _fits(text[:mid], chars, tokens):
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def build(payload: CompactPayload, ratio: float = RATIO,
          totals: tuple[int, int] | None = None) -> dict[str, Any]:
    """commit_compaction arguments: every node id and a summary within `ratio` of the nodes."""
    raw_nodes = payload.get("nodes") or []
    ids = [n["id"] for n in raw_nodes]
    if totals is None:
        totals = (sum(int(n.get("chars") or len(str(n.get("text") or ""))) for n in raw_nodes),
                  sum(estimate_tokens(str(n.get("text") or "")) for n in raw_nodes))
    total_chars, total_tokens = totals
    nodes = load(payload)
    summary = None
    if nodes:
        for chars, tokens in ((int(total_chars * ratio), int(total_tokens * ratio)),
                              (total_chars - 1, total_tokens - 1)):
            if chars >= 1 and tokens >= 1:
                summary = summarise(nodes, chars, tokens)
                if summary:
                    break
        if not summary:
            everything = " / ".join("; ".join(i.content for i in n.items) for n in nodes)
            summary = cut_to_fit(everything or "…", max(1, total_chars - 1),
                                 max(1, total_tokens - 1))
    return {"node_ids": ids, "summary": summary or "…"}


def correct(payload: CompactPayload, previous: dict[str, Any], error: str,
            attempt: int) -> dict[str, Any]:
    """After a refusal: the engine's own totals if it named them, and a harder cut."""
    numbers = re.search(r"\((\d+) chars, ~(\d+) estimated tokens\)", error)
    totals = (int(numbers.group(1)), int(numbers.group(2))) if numbers else None
    out = build(payload, ratio=RATIO / (2 ** attempt), totals=totals)
    listed = re.search(r"nodes \[([\d,\s]+)\]", error)
    if listed:
        out["node_ids"] = [int(x) for x in listed.group(1).split(",") if x.strip()]
    previous_summary = str(previous.get("summary") or "")
    if previous_summary and len(out["summary"]) >= len(previous_summary) > 1:
        out["summary"] = previous_summary[: max(1, len(previous_summary) // 2)]
    return out
