#!/usr/bin/env python3
"""PrefEval (a user's stated or revealed preference, asked about many turns later) -> common shape.

Source: github.com/amazon-science/PrefEval @ 50795054b5ff5f418d2b768a331d71e480f93331,
benchmark_dataset/explicit_preference/*.json, benchmark_dataset/implicit_preference/choice-based/
*.json and benchmark_dataset/filtered_inter_turns.json (copied to raw/prefeval/; CC BY-NC 4.0).
Writes prefeval.jsonl and prefeval-histories.jsonl.

    python3 convert_prefeval.py [--seed 7]

Each of the 20 topics (travel_hotel, lifestyle_dietary, ...) holds ~50 preferences, each with a
later question whose good answer depends on it. History: one composite user per (form, index i):
the i-th preference of every topic, one session each, so a history holds one preference per
topic (about 20) and no two preferences compete for the same question; plus PrefEval's own
distractor conversations (the 24 filtered LMSYS chats of filtered_inter_turns.json, the
"inter turns" PrefEval puts between preference and question), sessions shuffled with a fixed
seed. Time null throughout.
Forms (= category):
  explicit        -- the preference is one user turn ("I avoid hotels with a bustling nightlife
                     atmosphere."); evidence = that turn.
  implicit-choice -- a four-turn exchange (user asks, assistant lists options, user picks one and
                     says why, assistant acknowledges); evidence = the user's selection turn, the
                     turn that reveals the preference.
Question: the topic question ("Can you suggest some great hotels for my upcoming trip to Las
Vegas?"), asked after the whole history.
Not converted: implicit persona-driven (the preference is paraphrased inside a long persona chat
and no turn is labelled; only 128 of 1000 contain it verbatim).
"""
from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The sources as fetched (bench/heldout/README.md): $MEMVAULT_HELDOUT_RAW, else ./raw
RAW = Path(os.environ.get("MEMVAULT_HELDOUT_RAW", "raw"))
OUT = Path(".")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".", help="where the set's two files go")
    ap.add_argument("--raw", default=str(RAW / "prefeval"))
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    global OUT
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    raw = Path(args.raw)
    inter = json.loads((raw / "filtered_inter_turns.json").read_text(encoding="utf-8"))
    questions, histories = [], []
    for form, folder in (("explicit", "explicit_preference"),
                         ("implicit-choice", "implicit_preference/choice-based")):
        topics = {f.stem: json.loads(f.read_text(encoding="utf-8"))
                  for f in sorted((raw / folder).glob("*.json"))}
        for i in range(max(len(v) for v in topics.values())):
            hid = f"prefeval-{form}-{i}"
            rng = random.Random(f"{args.seed}-{hid}")
            blocks = []  # (kind, payload)
            for topic, items in topics.items():
                if i < len(items):
                    blocks.append(("pref", (topic, items[i])))
            blocks += [("inter", c) for c in inter]
            rng.shuffle(blocks)
            turns = []
            for s, (kind, payload) in enumerate(blocks, 1):
                if kind == "inter":
                    for k, m in enumerate(payload["conversation"]):
                        turns.append({"id": f"s{s}-{k}", "speaker": m["role"],
                                      "text": m["content"], "time": None, "session": s})
                    continue
                topic, item = payload
                if form == "explicit":
                    turns.append({"id": f"s{s}-0", "speaker": "user", "text": item["preference"],
                                  "time": None, "session": s})
                    evidence = [f"s{s}-0"]
                else:
                    c = item["conversation"]
                    for k, (who, key) in enumerate((("user", "query"),
                                                    ("assistant", "assistant_options"),
                                                    ("user", "user_selection"),
                                                    ("assistant", "assistant_acknowledgment"))):
                        turns.append({"id": f"s{s}-{k}", "speaker": who, "text": c[key],
                                      "time": None, "session": s})
                    evidence = [f"s{s}-2"]
                questions.append({"set": "prefeval", "lang": "en", "category": form,
                                  "question": item["question"].strip(), "history": hid,
                                  "evidence": evidence, "id": f"{hid}-{topic}"})
            histories.append({"history": hid, "turns": turns})
    for name, rows in (("prefeval", questions), ("prefeval-histories", histories)):
        with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for r in rows:
                out.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"prefeval: {len(questions)} questions, {len(histories)} histories, "
          f"{sum(len(h['turns']) for h in histories)} turns")


if __name__ == "__main__":
    main()
