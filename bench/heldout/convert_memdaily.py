#!/usr/bin/env python3
"""MemDaily (MemSim's Chinese daily-life user-message memory QA) -> common shape, with noise.

Source: github.com/nuster1128/MemSim @ db9d5d552d6cb1d859f692eb7e6c0fd6d61d3815,
data_generation/final_dataset/messages_and_QAs/*.json (copied to raw/memdaily/). The repository
states no licence. Noise turns come from KdConv (github.com/thu-coai/KdConv @
653db76432de09a004ba708a68f8bbd5500e6bec, data/{film,music,travel}/{dev,test}.json, Apache-2.0;
copied to raw/kdconv/). Writes memdaily.jsonl and memdaily-histories.jsonl.

    python3 convert_memdaily.py [--per-file 30] [--noise 120] [--seed 13]

A MemDaily trajectory is a user's stream of 3-10 short statements to an assistant, and its one
question's "target_step_id" lists the statements that answer it. Trajectories cannot be pooled
(they reuse the same generated profiles and common names, so another trajectory's statements
would answer the question too), so each question gets its own history: its trajectory's
statements (ids "t<mid>") plus --noise utterances drawn without replacement from KdConv's
knowledge chats (ids "n<k>"), with times spread evenly over the trajectory's span, all sorted by
time -- the same construction as MemDaily's own noisy variants (memdaily_10/50/100), whose noise
pool (benchmark/rawdata/noise_pool.json) is absent from the snapshot (over 4 MiB). The first
--per-file trajectories of each of the 30 files (6 question types x entity types) are used.
Category = question type (simple, conditional, comparative, aggregative, post_processing, noisy);
the entity type (events, items, places, roles, hybrid) is in the question id.
Evidence = the question's target_step_id statements. Speaker of every turn is "user".
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The sources as fetched (bench/heldout/README.md): $MEMVAULT_HELDOUT_RAW, else ./raw
RAW = Path(os.environ.get("MEMVAULT_HELDOUT_RAW", "raw"))
OUT = Path(".")
TIME = re.compile(r"(\d{4})年(\d{2})月(\d{2})日\s*\S*\s*(\d{1,2}):(\d{2})")


def parse_time(text: str) -> datetime | None:
    m = TIME.search(text or "")
    return datetime(*map(int, m.groups())) if m else None


def noise_pool(kdconv: Path) -> list[str]:
    out = []
    for f in sorted(kdconv.glob("*.json")):
        for conv in json.loads(f.read_text(encoding="utf-8")):
            for m in conv["messages"]:
                text = m["message"].strip()
                if len(text) >= 6:
                    out.append(text)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".", help="where the set's two files go")
    ap.add_argument("--raw", default=str(RAW / "memdaily"))
    ap.add_argument("--kdconv", default=str(RAW / "kdconv"))
    ap.add_argument("--per-file", type=int, default=30)
    ap.add_argument("--noise", type=int, default=120)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    global OUT
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    pool = noise_pool(Path(args.kdconv))
    questions, histories = [], []
    for f in sorted(Path(args.raw).glob("*.json")):
        number, rest = f.stem.split("_", 1)
        qtype, entity = rest.rsplit("_", 1)
        for traj in json.loads(f.read_text(encoding="utf-8"))[:args.per_file]:
            hid = f"memdaily-{f.stem}-t{traj['tid']}"
            rng = random.Random(f"{args.seed}-{hid}")
            turns = []
            for m in traj["message_list"]:
                t = parse_time(m["time"])
                turns.append({"id": f"t{m['mid']}", "speaker": "user", "text": m["message"].strip(),
                              "time": t.isoformat() if t else None, "session": 1})
            times = [parse_time(m["time"]) for m in traj["message_list"]]
            start, end = min(times), max(times)
            for k, text in enumerate(rng.sample(pool, args.noise)):
                at = start + (end - start) * (k + 0.5) / args.noise
                turns.append({"id": f"n{k}", "speaker": "user", "text": text,
                              "time": at.replace(microsecond=0).isoformat(), "session": 1})
            turns.sort(key=lambda t: (t["time"], t["id"][0] == "n"))
            histories.append({"history": hid, "turns": turns})
            for q in traj["question_list"]:
                questions.append({"set": "memdaily", "lang": "zh", "category": qtype,
                                  "question": q["question"].strip(), "history": hid,
                                  "evidence": [f"t{i}" for i in dict.fromkeys(q["target_step_id"])],
                                  "id": f"{hid}-q{q['qid']}-{entity}"})
    for name, rows in (("memdaily", questions), ("memdaily-histories", histories)):
        with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for r in rows:
                out.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"memdaily: {len(questions)} questions, {len(histories)} histories, "
          f"noise pool {len(pool)} KdConv utterances")


if __name__ == "__main__":
    main()
