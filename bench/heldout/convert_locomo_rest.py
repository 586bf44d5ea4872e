#!/usr/bin/env python3
"""The five LoCoMo conversations that shared/data/locomo (locomo-dev.json) lacks -> common shape.

Source: github.com/snap-research/locomo @ e76cdff4a04fce19090596d49862fe87a5c15aaa,
data/locomo10.zip
(copied to raw/locomo10.zip), members data/multimodal_dialog/locomo10_v2/{44,47,48,49,50}.json
(conv-44, conv-47 ... conv-50; the dev file holds conv-26, 30, 41, 42, 43).
Same shape as LoCoMo itself (not a new shape): a held-out check of LoCoMo conversations that
nothing was tuned on. Writes locomo-rest.jsonl and locomo-rest-histories.jsonl.

    python3 convert_locomo_rest.py [--zip PATH]

Questions and evidence are LoCoMo's own (every qa with evidence that names an existing turn;
category 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial). Turn time is the
session's date_time (one timestamp per session, as LoCoMo gives it).
"""
from __future__ import annotations

import argparse
import json
import os
import zipfile
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The sources as fetched (bench/heldout/README.md): $MEMVAULT_HELDOUT_RAW, else ./raw
RAW = Path(os.environ.get("MEMVAULT_HELDOUT_RAW", "raw"))
OUT = Path(".")
CATS = {1: "1-multi-hop", 2: "2-temporal", 3: "3-open-domain", 4: "4-single-hop",
        5: "5-adversarial"}
MEMBERS = ["44", "47", "48", "49", "50"]


def iso(text: str) -> str | None:
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").isoformat()
    except ValueError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".", help="where the set's two files go")
    ap.add_argument("--zip", default=str(RAW / "locomo10.zip"))
    args = ap.parse_args()
    global OUT
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    z = zipfile.ZipFile(args.zip)
    questions, histories = [], []
    dropped = 0
    for m in MEMBERS:
        d = json.loads(z.read(f"data/multimodal_dialog/locomo10_v2/{m}.json"))
        hid = f"locomo-conv-{m}"
        turns = []
        n = 1
        while f"session_{n}" in d:
            when = iso(d.get(f"session_{n}_date_time", ""))
            for t in d[f"session_{n}"]:
                # text only, as bench/recall.py indexes LoCoMo (photo captions left out)
                turns.append({"id": t["dia_id"], "speaker": t["speaker"], "text": t["text"],
                              "time": when, "session": n})
            n += 1
        known = {t["id"] for t in turns}
        histories.append({"history": hid, "turns": turns})
        for i, qa in enumerate(d["qa"]):
            ev = [e.strip() for e in qa.get("evidence", []) if e.strip() in known]
            if not ev:
                dropped += 1
                continue
            questions.append({"set": "locomo-rest", "lang": "en",
                              "category": CATS.get(qa["category"], str(qa["category"])),
                              "question": qa["question"], "history": hid,
                              "evidence": list(dict.fromkeys(ev)), "id": f"{hid}-q{i}"})
    for name, rows in (("locomo-rest", questions), ("locomo-rest-histories", histories)):
        with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"locomo-rest: {len(questions)} questions, {len(histories)} histories; "
          f"dropped {dropped} without resolvable evidence")


if __name__ == "__main__":
    main()
