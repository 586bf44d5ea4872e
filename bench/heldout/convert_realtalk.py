#!/usr/bin/env python3
"""REALTALK (21-day real messaging-app chats, LoCoMo-style memory probes) -> common shape.

Source: github.com/danny911kr/REALTALK @ b903e06a9770bf4e5fe9018c3e132889666d3b4a, data/Chat_*.json
(copied to raw/realtalk/). Writes realtalk.jsonl and realtalk-histories.jsonl into --out.

    python3 convert_realtalk.py [--raw DIR]

One history per chat (10). Each turn keeps its dia_id ("D3:14") as id and its own timestamp.
Questions are the dataset's memory-probing questions (category 1 multi-hop, 2 temporal,
3 commonsense, LoCoMo's numbering); evidence is the dataset's own "evidence" list. The
preprocessed files dropped some turns (image-only or empty messages), so evidence ids are
normalised ("D5:3." -> "D5:3", "D12:3-D12:5" expanded to the ids that exist in that range,
"a;b" and "a, b" split), ids that name no existing turn are dropped, and a question left with
no evidence is dropped (counts printed).
"""
from __future__ import annotations

import argparse
import json
import os
import re
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The sources as fetched (bench/heldout/README.md): $MEMVAULT_HELDOUT_RAW, else ./raw
RAW = Path(os.environ.get("MEMVAULT_HELDOUT_RAW", "raw"))
OUT = Path(".")
CATS = {1: "1-multi-hop", 2: "2-temporal", 3: "3-commonsense"}
ID = re.compile(r"D(\d+):(\d+)")


def iso(text: str) -> str | None:
    try:
        return datetime.strptime(text.strip(), "%d.%m.%Y, %H:%M:%S").isoformat()
    except ValueError:
        return None


def parse_evidence(items: list[str], order: list[str]) -> tuple[list[str], int]:
    known = set(order)
    pos = {t: i for i, t in enumerate(order)}
    out: list[str] = []
    bad = 0
    for item in items:
        for part in re.split(r"[;,]", item):
            part = part.strip().rstrip(".").strip()
            if not part:
                continue
            ends = ID.findall(part)
            if "-" in part and len(ends) == 2:
                a, b = (f"D{d}:{n}" for d, n in ends)
                if a in pos and b in pos and pos[a] <= pos[b]:
                    out += order[pos[a]:pos[b] + 1]
                    continue
                # a range whose end was dropped: keep the ends that exist and what lies between
                lo = [t for t in order if _key(t) >= _key(a) and _key(t) <= _key(b)]
                if lo:
                    out += lo
                    continue
                bad += 1
                continue
            if len(ends) == 1:
                tid = f"D{ends[0][0]}:{ends[0][1]}"
                if tid in known:
                    out.append(tid)
                else:
                    bad += 1
            else:
                bad += 1  # malformed, e.g. "D13:45:D20:19"
    seen: list[str] = []
    for t in out:
        if t not in seen:
            seen.append(t)
    return seen, bad


def _key(tid: str) -> tuple[int, int]:
    d, n = ID.match(tid).groups()
    return int(d), int(n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".", help="where the set's two files go")
    ap.add_argument("--raw", default=str(RAW / "realtalk"))
    args = ap.parse_args()
    global OUT
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    files = sorted(Path(args.raw).glob("Chat_*.json"), key=lambda p: int(p.stem.split("_")[1]))
    questions, histories = [], []
    dropped_q = dropped_ids = 0
    for f in files:
        d = json.loads(f.read_text(encoding="utf-8"))
        hid = "realtalk-" + f.stem
        turns = []
        n = 1
        while f"session_{n}" in d:
            for t in d[f"session_{n}"]:
                turns.append({"id": t["dia_id"], "speaker": t["speaker"],
                              "text": t["clean_text"], "time": iso(t.get("date_time", "")),
                              "session": n})
            n += 1
        order = [t["id"] for t in turns]
        assert len(order) == len(set(order)), f.name
        histories.append({"history": hid, "turns": turns})
        for i, qa in enumerate(d["qa"]):
            ev, bad = parse_evidence(qa.get("evidence", []), order)
            dropped_ids += bad
            if not ev:
                dropped_q += 1
                continue
            questions.append({"set": "realtalk", "lang": "en",
                              "category": CATS.get(qa["category"], str(qa["category"])),
                              "question": qa["question"], "history": hid, "evidence": ev,
                              "id": f"{hid}-q{i}"})
    write(questions, histories, "realtalk")
    print(f"realtalk: {len(questions)} questions, {len(histories)} histories; "
          f"dropped {dropped_q} questions with no resolvable evidence, "
          f"{dropped_ids} unresolvable evidence ids")


def write(questions: list[dict], histories: list[dict], name: str) -> None:
    with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    with (OUT / f"{name}-histories.jsonl").open("w", encoding="utf-8") as f:
        for h in histories:
            f.write(json.dumps(h, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
