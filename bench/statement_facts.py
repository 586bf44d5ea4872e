"""Plainly stated facts: which ones a model's organize makes hold, per category, on two splits.

    python bench/statement_facts.py                    # builtin, both splits (~1 min)
    python bench/statement_facts.py --split tuning --misses   # and the tuning facts that fail
    python bench/statement_facts.py --json             # the numbers as JSON too

The data (bench/data/statements_tuning.json, bench/data/statements_validation.json) is written
by hand: personas talking to their agent (`append`: memory_append events, source user or
assistant, no speaker unless the persona names them) or imported from a ChatGPT export
(`chatgpt`: the real `memvault import chatgpt` path), each turn with the facts a person would
expect to hold afterwards. The validation split was written before any rule and is only
scored: `--misses` lists failures of the tuning split alone.

Each persona runs in a fresh temporary home with a manual clock: an `append` persona's turns
arrive day by day, each day followed by organize (compact first) as the worker would run it;
a `chatgpt` persona's export is imported whole and organized once; deep runs at the end.
Then every fact is checked against the live objects, each in every version it had (a fact
holds when it held after its turn: "I need to pay the rent" made an open todo even when a
later "Paid the rent." closed it), merged ones followed:

    {"cat": "relation",             the category it is counted under
     "type": "person",              the object's type (a list: any of them; absent: any type)
     "name": "Mia Park|Mia",        its name or an alias is one of these (NFKC, case, spaces)
     "about": ["teaches"],          each phrase somewhere in its name, aliases, summary or body
     "line": ["prefer", "morning"], all phrases in ONE line (name, summary or a body line)
     "field": {"role": "sister"},   the body line of that field (role, state, time rule) holds it
     "state": "done",               its state line says done / open / cancelled
     "day": "2026-03-16",           its time rule (else any line) names that day: as
                                    written there, or absolute in words ("March 16",
                                    "16 Mar", "3月16日", "三月十六日"); a relative day
                                    must be resolved
     "related": {"type": "person", "name": "Mia Park"}}  a relation to such an object
A phrase may list alternatives with "|"; matching is case-insensitive. A fact holds when one
object meets all its conditions.

Line precision: of the object lines (name, summary, body lines without their `label:`) with
at least 3 content units (English content words as bench/fact_quality.py counts them, digits
and the model's own template words left out; two-char pieces of Chinese text), the share with
>= 60% of their units inside one turn of the persona. "chatter archived" is the share of the
user turns with no fact that end archive_only.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
import unicodedata
from collections import defaultdict
from datetime import datetime, timedelta
from io import BytesIO
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fact_quality import content_words  # noqa: E402
from memvault import ManualClock, Memory, NewEvent  # noqa: E402
from memvault.home.chat_import import import_export  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
SPLITS = ("tuning", "validation")
SHARE = 0.6
LABELS = {"role": ("role", "职责", "角色"), "state": ("state", "状态"),
          "rule": ("time rule", "时间规则", "when", "time")}
STATES = {"done": r"\bdone\b|完成|finished|closed", "open": r"\bopen\b|未完成|pending|待办",
          "cancelled": r"cancel|取消"}
# Words the builtin's templates add to a line ("scheduled (one-off)", "said on"): not content.
TEMPLATE_EN = frozenset("said scheduled one off planned recurring moved cancelled history todo "
                        "open done unknown introduced themself state project scope lives value "
                        "stored profile full role".split())
TEMPLATE_ZH = ("说的", "已安排", "一次", "改期", "原定", "历史", "已取消", "原为", "未知", "计划",
               "重复", "进行中", "自我介绍为", "待办", "未完成", "范围未知", "个人档案已满")
_LABEL = re.compile(r"^\s*[-*]?\s*(?:[^:：\n]{1,40}?[:：]\s*)?")
_HAN_RUN = re.compile(r"[\u3400-\u9fff]+")


def norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return re.sub(r"[\s._·\-]+", "", text)


def has(text: str, phrase: str) -> bool:
    """`text` holds the phrase, or one of its "|" alternatives (case-insensitive)."""
    low = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return any(" ".join(alt.casefold().split()) in " ".join(low.split())
               for alt in phrase.split("|"))


# --- running a persona -----------------------------------------------------------------------

def _when(at: str) -> datetime:
    return datetime.fromisoformat(at)


def run_persona(persona: dict[str, Any], home: Path) -> tuple[sqlite3.Connection, Memory,
                                                               list[int | None]]:
    """The persona's turns stored and organized in `home`; the open memory and each turn's event
    id (None for a turn an import did not store)."""
    turns = persona["turns"]
    last = max(_when(t["at"]) for t in turns)
    clock = ManualClock(min(_when(t["at"]) for t in turns))
    mem = Memory.open(home, clock=clock)
    if persona["channel"] == "chatgpt":
        clock.set(last + timedelta(hours=1))
        export = chatgpt_export(persona)
        import_export(mem, "chatgpt", BytesIO(json.dumps(export).encode()), "conversations.json")
        mem.organize(wait=True)
        keys = {r[0]: r[1] for r in mem.conn.execute("SELECT key, id FROM events")}
        ids = [keys.get(f"chatgpt:{_conv_id(t)}:{_message_id(persona, i)}")
               for i, t in enumerate(turns)]
    else:
        ids = []
        for day in sorted({_when(t["at"]).date() for t in turns}):
            batch = [t for t in turns if _when(t["at"]).date() == day]
            clock.set(max(_when(t["at"]) for t in batch) + timedelta(minutes=5))
            meta = [{"speaker": t["speaker"]} if t.get("speaker") else None for t in batch]
            ids += mem.append_events([NewEvent(t["text"], t["at"], t.get("role", "user"),
                                               "message", m) for t, m in zip(batch, meta,
                                                                              strict=True)])
            mem.organize(wait=True)
    clock.set(last + timedelta(hours=2))
    mem.organize("deep", wait=True)
    return mem.conn, mem, ids


def _conv_id(turn: dict[str, Any]) -> str:
    return "conv-" + re.sub(r"[^a-z0-9]+", "-", str(turn["conversation"]).casefold()).strip("-")


def _message_id(persona: dict[str, Any], index: int) -> str:
    return f"{persona['id']}-{index}"


def chatgpt_export(persona: dict[str, Any]) -> list[dict[str, Any]]:
    """The persona's turns as a ChatGPT `conversations.json`: one conversation per title, its
    messages a chain from a root node in the order written."""
    conversations: dict[str, dict[str, Any]] = {}
    for index, turn in enumerate(persona["turns"]):
        cid = _conv_id(turn)
        stamp = _when(turn["at"]).timestamp()
        conv = conversations.setdefault(cid, {
            "id": cid, "title": turn["conversation"], "create_time": stamp,
            "mapping": {"root": {"id": "root", "message": None, "parent": None, "children": []}},
            "current_node": "root"})
        node = _message_id(persona, index)
        parent = conv["current_node"]
        conv["mapping"][parent]["children"].append(node)
        conv["mapping"][node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": turn.get("role", "user")}, "create_time": stamp,
            "content": {"content_type": "text", "parts": [turn["text"]]}}}
        conv["current_node"] = node
    return list(conversations.values())


# --- checking facts ------------------------------------------------------------------------

class Graph:
    """The objects and relations of a home, read once: each live object with every version it
    had (a fact holds when it held after its turn: a todo said open and later done was open)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        redirect = dict(conn.execute("SELECT id, COALESCE(redirect_to, id) FROM objects"))
        for oid, type_, name, aliases, summary, body in conn.execute(
                "SELECT id, type, name, aliases, summary, body FROM objects"
                " WHERE redirect_to IS NULL AND id != 'project:daily'"):
            self.objects[oid] = _record(oid, type_, name, aliases, summary, body)
        self.versions: dict[str, list[dict[str, Any]]] = {
            oid: [obj] for oid, obj in self.objects.items()}
        for oid, type_, name, aliases, summary, body in conn.execute(
                "SELECT v.object_id, o.type, v.name, v.aliases, v.summary, v.body"
                " FROM object_versions v JOIN objects o ON o.id = v.object_id"):
            final = redirect.get(oid, oid)
            if final in self.versions:
                self.versions[final].append(_record(final, type_, name, aliases, summary, body))
        self.edges: set[tuple[str, str, str]] = set()
        for src, label, dst in conn.execute("SELECT src_id, label, dst_id FROM relations"):
            self.edges.add((redirect.get(src, src), label, redirect.get(dst, dst)))

    def matching(self, spec: dict[str, Any]) -> list[str]:
        """The ids of the objects one of whose versions meets `spec`."""
        return [oid for oid, versions in self.versions.items()
                if any(_meets(v, spec, self) for v in versions)]


def _record(oid: str, type_: str, name: str, aliases: str, summary: str | None,
            body: str | None) -> dict[str, Any]:
    return {"id": oid, "type": type_, "name": name, "aliases": json.loads(aliases or "[]"),
            "summary": summary or "", "body": body or ""}


def _lines(obj: dict[str, Any]) -> list[str]:
    return [obj["name"], obj["summary"], *obj["body"].splitlines()]


def _field(obj: dict[str, Any], key: str) -> list[str]:
    """The values of the body lines labelled as field `key`."""
    out = []
    for line in obj["body"].splitlines():
        m = re.match(r"^\s*[-*]?\s*([^:：\n]{1,40}?)\s*[:：]\s*(.*)$", line)
        if m and m.group(1).strip().casefold() in LABELS.get(key, (key,)):
            out.append(m.group(2))
    return out


def _meets(obj: dict[str, Any], spec: dict[str, Any], graph: Graph) -> bool:
    types = spec.get("type")
    if types and obj["type"] not in ([types] if isinstance(types, str) else types):
        return False
    if "name" in spec:
        names = {norm(n) for n in [obj["name"], *obj["aliases"]]}
        if not any(norm(alt) in names for alt in spec["name"].split("|")):
            return False
    whole = "\n".join([obj["name"], *obj["aliases"], obj["summary"], obj["body"]])
    if not all(has(whole, p) for p in spec.get("about", [])):
        return False
    if spec.get("line") and not any(all(has(line, p) for p in spec["line"])
                                    for line in _lines(obj)):
        return False
    for key, want in (spec.get("field") or {}).items():
        wants = [want] if isinstance(want, str) else want
        if not any(all(has(v, p) for p in wants) for v in _field(obj, key)):
            return False
    if "state" in spec and not any(re.search(STATES[spec["state"]], v, re.IGNORECASE)
                                   for v in _field(obj, "state")):
        return False
    if "day" in spec:
        where = _field(obj, "rule") or _lines(obj)
        if not any(re.search(day_pattern(spec["day"]), v, re.IGNORECASE) for v in where):
            return False
    rel = spec.get("related")
    if rel:
        others = {oid for oid in graph.matching(rel) if oid != obj["id"]}
        if not any((a == obj["id"] and b in others or b == obj["id"] and a in others)
                   and (not rel.get("label") or label == rel["label"])
                   for a, label, b in graph.edges):
            return False
    return True


MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def day_pattern(iso: str) -> str:
    """A day as ISO or written out absolutely: "2026-03-16", "March 16(th)", "16 Mar",
    "3月16日/号" (the year may be left out)."""
    year, month, day = (int(x) for x in iso.split("-"))
    name = MONTHS[month - 1] + r"[a-z]*\.?"
    cn_month, cn_day = _chinese_number(month), _chinese_number(day)
    return "|".join([re.escape(iso), rf"\b{name}\s+{day}(?!\d)", rf"(?<!\d){day}(?:st|nd|rd|th)?"
                     rf"\s+(?:of\s+)?{name}", rf"(?<!\d){month}\s*月\s*{day}\s*[日号]",
                     rf"(?<![一二三四五六七八九十]){cn_month}月{cn_day}[日号]"])


def _chinese_number(n: int) -> str:
    """1..31 in Chinese numerals ("二十二"), as a date writes it."""
    digits = "一二三四五六七八九"
    tens, ones = divmod(n, 10)
    head = "" if tens == 0 else ("十" if tens == 1 else digits[tens - 1] + "十")
    return head + (digits[ones - 1] if ones else "")


def units(text: str) -> set[str]:
    """A text's content units: English content words (no digits, no template words) and the
    two-char pieces of its Chinese runs (template phrases taken out first)."""
    for phrase in TEMPLATE_ZH:
        text = text.replace(phrase, " ")
    words = {w for w in content_words(text) if not w.isdigit() and w not in TEMPLATE_EN}
    for run in _HAN_RUN.findall(text):
        words |= {run[i:i + 2] for i in range(len(run) - 1)} if len(run) > 1 else {run}
    return words


def line_precision(graph: Graph, turns: list[str]) -> tuple[int, int]:
    """(supported lines, judged lines) of the graph's objects against the persona's turns."""
    said = [units(t) for t in turns]
    judged = supported = 0
    for obj in graph.objects.values():
        for line in [obj["name"], obj["summary"], *obj["body"].splitlines()]:
            mine = units(_LABEL.sub("", line, count=1))
            if len(mine) < 3 or line.strip().casefold() in ("unknown", "未知"):
                continue
            judged += 1
            supported += any(len(mine & s) >= SHARE * len(mine) for s in said)
    return supported, judged


def score(persona: dict[str, Any], home: Path) -> dict[str, Any]:
    conn, mem, ids = run_persona(persona, home)
    try:
        graph = Graph(conn)
        state = dict(conn.execute("SELECT event_id, state FROM archive_queue"))
        held: list[tuple[dict[str, Any], dict[str, Any], bool]] = []
        chatter = archived = 0
        for turn, event in zip(persona["turns"], ids, strict=True):
            for fact in turn.get("facts") or []:
                held.append((turn, fact, bool(graph.matching(fact))))
            if turn.get("role", "user") == "user" and not turn.get("facts"):
                chatter += 1
                archived += state.get(event) == "archive_only"
        precise, judged = line_precision(graph, [t["text"] for t in persona["turns"]])
        return {"held": held, "precise": precise, "judged": judged, "chatter": chatter,
                "archived": archived, "objects": len(graph.objects), "graph": graph}
    finally:
        mem.close()


def run_split(split: str, keep: Path | None) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    data = json.loads((DATA / f"statements_{split}.json").read_text(encoding="utf-8"))
    out = []
    with tempfile.TemporaryDirectory(prefix="memvault-statements-") as tmp:
        for persona in data["personas"]:
            home = (keep or Path(tmp)) / split / persona["id"]
            out.append((persona, score(persona, home)))
    return out


def tally(results: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    cats: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    channels: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for persona, r in results:
        for _, fact, ok in r["held"]:
            for bucket in (cats[fact["cat"]], channels[persona["channel"]]):
                bucket[0] += ok
                bucket[1] += 1
    held = sum(c[0] for c in cats.values())
    total = sum(c[1] for c in cats.values())
    precise = sum(r["precise"] for _, r in results)
    judged = sum(r["judged"] for _, r in results)
    return {"categories": dict(cats), "channels": dict(channels), "held": held, "facts": total,
            "recall": held / max(1, total), "precise": precise, "judged": judged,
            "line_precision": precise / max(1, judged),
            "chatter": sum(r["chatter"] for _, r in results),
            "archived": sum(r["archived"] for _, r in results),
            "objects": sum(r["objects"] for _, r in results)}


def print_tables(tallies: dict[str, dict[str, Any]]) -> None:
    splits = list(tallies)
    cats = sorted({c for t in tallies.values() for c in t["categories"]})
    print(f"{'category':14}" + "".join(f"{s:>16}" for s in splits))

    def cell(pair: list[int] | None) -> str:
        if not pair:
            return f"{'-':>16}"
        return f"{pair[0]:>5}/{pair[1]:<3} {pair[0] / max(1, pair[1]):>5.2f} "

    for cat in cats:
        print(f"{cat:14}" + "".join(cell(tallies[s]["categories"].get(cat)) for s in splits))
    for channel in sorted({c for t in tallies.values() for c in t["channels"]}):
        print(f"{'via ' + channel:14}" + "".join(cell(tallies[s]["channels"].get(channel))
                                                 for s in splits))
    print(f"{'overall':14}" + "".join(cell([tallies[s]["held"], tallies[s]["facts"]])
                                      for s in splits))
    print(f"{'line prec':14}" + "".join(cell([tallies[s]["precise"], tallies[s]["judged"]])
                                        for s in splits))
    print(f"{'chatter arch.':14}" + "".join(cell([tallies[s]["archived"], tallies[s]["chatter"]])
                                            for s in splits))
    print(f"{'objects':14}" + "".join(f"{tallies[s]['objects']:>16}" for s in splits))


def print_misses(results: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    for persona, r in results:
        for turn, fact, ok in r["held"]:
            if not ok:
                spec = {k: v for k, v in fact.items() if k != "cat"}
                print(f"- [{persona['id']} {turn['at'][:10]}] {fact['cat']}: {turn['text']}\n"
                      f"    wants {json.dumps(spec, ensure_ascii=False)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "both"), default="both")
    parser.add_argument("--misses", action="store_true",
                        help="list the tuning facts that do not hold (never validation's)")
    parser.add_argument("--homes", type=Path, default=None,
                        help="keep each persona's home under this folder (SPLIT/PERSONA)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    args = parser.parse_args(argv)
    splits = SPLITS if args.split == "both" else (args.split,)
    tallies = {}
    for split in splits:
        results = run_split(split, args.homes)
        tallies[split] = tally(results)
        if args.misses and split == "tuning":
            print_misses(results)
    print_tables(tallies)
    if args.json:
        print(json.dumps(tallies, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
