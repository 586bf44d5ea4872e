#!/usr/bin/env python3
"""FriendsQA (questions about Friends TV-show dialogue, answer spans in utterances) -> common shape.

Source: github.com/emorynlp/FriendsQA @ 9ce6c98a6acf13c87d96b6811e4409b5de43bdfe,
dat/friendsqa_dev.json and dat/friendsqa_tst.json (copied to raw/friendsqa/; Apache-2.0; the
training file is over 4 MiB and absent from the snapshot). Writes friendsqa.jsonl and
friendsqa-histories.jsonl.

    python3 convert_friendsqa.py [--raw DIR]

History: one per episode (dev and test hold 17 episodes, 249 scenes): every scene of the episode
in transcript order, a scene being a session; turn id "<scene>-u<uid>", speaker the utterance's
speakers joined with " & ", time null. Question: the dataset's question as asked (FriendsQA asks
about the scene, so the agent's query is that question); category = its question type (the
id's suffix: What, Who, Where, When, Why, How). Evidence: the utterance ids of all its gold
answers (an answer that is a speaker name points at the utterance that speaker said).
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".", help="where the set's two files go")
    ap.add_argument("--raw", default=str(RAW / "friendsqa"))
    args = ap.parse_args()
    global OUT
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    episodes: dict[str, list] = {}
    for split in ("dev", "tst"):
        data = json.loads((Path(args.raw) / f"friendsqa_{split}.json").read_text(encoding="utf-8"))
        for scene in data["data"]:
            ep = scene["title"].rsplit("_", 1)[0]
            episodes.setdefault(ep, []).append(scene)
    questions, histories = [], []
    for ep in sorted(episodes):
        hid = f"friendsqa-{ep}"
        turns = []
        for n, scene in enumerate(sorted(episodes[ep], key=lambda s: s["title"]), 1):
            sid = scene["title"]
            for para in scene["paragraphs"]:
                utts = para.get("utterances:") or para.get("utterances") or []
                known = set()
                for u in utts:
                    tid = f"{sid}-u{u['uid']}"
                    known.add(tid)
                    turns.append({"id": tid, "speaker": " & ".join(u["speakers"]) or "?",
                                  "text": u["utterance"], "time": None, "session": n})
                for qa in para["qas"]:
                    ev = [f"{sid}-u{a['utterance_id']}" for a in qa["answers"]
                          if f"{sid}-u{a['utterance_id']}" in known]
                    if not ev:
                        continue
                    kind = re.split(r"[_ ]", qa["id"][len(sid) + 1:])[0] or "?"
                    questions.append({"set": "friendsqa", "lang": "en", "category": kind,
                                      "question": qa["question"].strip(), "history": hid,
                                      "evidence": list(dict.fromkeys(ev)), "id": qa["id"]})
        histories.append({"history": hid, "turns": turns})
    for name, rows in (("friendsqa", questions), ("friendsqa-histories", histories)):
        with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for r in rows:
                out.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"friendsqa: {len(questions)} questions, {len(histories)} histories, "
          f"{sum(len(h['turns']) for h in histories)} turns")


if __name__ == "__main__":
    main()
