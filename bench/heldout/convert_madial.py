#!/usr/bin/env python3
"""MADial-Bench (memory-augmented dialogue, English and Chinese) -> common shape, two sets.

Source: github.com/hejunqing/MADial-Bench @ 572e3a10d6d01852a65e4508e0b3ab2a00d0710c,
data/en/MADial-Bench-en-{dialogue,memory}.json and data/ch/MADial-Bench-zh-{dialogue,memory}.json
(copied to raw/madial/; MIT licence). Writes madial-en.jsonl, madial-zh.jsonl and their
-histories.jsonl files.

    python3 convert_madial.py [--raw DIR]

History: one per user ("user-id" 1 and 2): that user's memory archive, each memory event one turn
(id "m<memory id>", speaker "memory", text = the event sentence, time = the memory's date),
sorted by date. The English memory file has no user-id; it is taken from the Chinese file, whose
memory ids are the same.
Question: one per test dialogue. The dialogue's first "test-turn" is the assistant turn that has
to bring a memory up; the query is the (up to) three turns before it, "Name: text" per line.
Evidence: the dialogue's "relevant-id" memories (the benchmark's own memory-recall labels).
Category: the scene of the first relevant memory (the one the test turn recalls); the Chinese
"物品类" (items, one question) is counted with Others.
"""
from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The sources as fetched (bench/heldout/README.md): $MEMVAULT_HELDOUT_RAW, else ./raw
RAW = Path(os.environ.get("MEMVAULT_HELDOUT_RAW", "raw"))
OUT = Path(".")
SCENE_ZH = {"活动类": "Activity", "喜好类": "Preferences", "其他类": "Others",
            "情绪类": "Emotional",
            "物品类": "Others"}  # 物品类 (items): 3 memories, 1 question; counted with Others
TURN = re.compile(r'^<([^>]+)>\s*[:：]\s*"?(.*?)"?\s*$', re.S)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def memories(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for row in jsonl(path):
        out.update(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".", help="where the set's two files go")
    ap.add_argument("--raw", default=str(RAW / "madial"))
    args = ap.parse_args()
    global OUT
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    raw = Path(args.raw)
    zh_mem = memories(raw / "MADial-Bench-zh-memory.json")
    for lang in ("en", "zh"):
        mem = memories(raw / f"MADial-Bench-{lang}-memory.json")
        dialogues = jsonl(raw / f"MADial-Bench-{lang}-dialogue.json")
        by_user: dict[str, list[dict]] = {}
        for mid, m in mem.items():
            user = str(m.get("user-id") or zh_mem[mid]["user-id"])
            by_user.setdefault(user, []).append(
                {"id": f"m{mid}", "speaker": "memory", "text": m["event"].strip(),
                 "time": m.get("time") or None, "session": 1})
        histories = []
        for user in sorted(by_user):
            turns = sorted(by_user[user], key=lambda t: (t["time"] or "", int(t["id"][1:])))
            histories.append({"history": f"madial-{lang}-user{user}", "turns": turns})
        questions = []
        for n, d in enumerate(dialogues):
            test = d["test-turn"][0]
            context = []
            for line in d["dialogue"][max(0, test - 3):test]:
                m = TURN.match(line.strip())
                if m:
                    context.append(f"{m.group(1)}: {m.group(2).strip()}")
            rel = [f"m{r}" for r in d["relevant-id"]]
            scene = mem[str(d["relevant-id"][0])]["scene"]
            questions.append({"set": f"madial-{lang}", "lang": lang,
                              "category": SCENE_ZH.get(scene, scene),
                              "question": "\n".join(context),
                              "history": f"madial-{lang}-user{d['user-id']}",
                              "evidence": rel, "id": f"madial-{lang}-d{n}"})
        for name, rows in ((f"madial-{lang}", questions), (f"madial-{lang}-histories", histories)):
            with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as f:
                for r in rows:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
        print(f"madial-{lang}: {len(questions)} questions, {len(histories)} histories "
              f"({sum(len(h['turns']) for h in histories)} memories)")


if __name__ == "__main__":
    main()
