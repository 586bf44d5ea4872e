#!/usr/bin/env python3
"""KdConv (Chinese knowledge-grounded chats on films, music, travel) -> a derived recall set.

Source: github.com/thu-coai/KdConv @ 653db76432de09a004ba708a68f8bbd5500e6bec,
data/{film,music,travel}/{dev,test}.json (copied to raw/kdconv/; Apache-2.0; the train files are
over 4 MiB and absent from the snapshot). Writes kdconv.jsonl and kdconv-histories.jsonl.

    python3 convert_kdconv.py [--per-domain 200] [--max-evidence 2] [--seed 5]

KdConv has no memory questions, but every turn is annotated (by the dataset's annotators) with
the knowledge-base triples (entity, attribute, value) it states. The same popular entities come
back in many chats, so a memory question is derived honestly from those labels:
History: one per domain: its 300 dev+test chats in file order, one chat a session; turn id
"c<chat>-t<turn>", speakers "A"/"B" alternating (KdConv names none), time null.
Question: a turn u that answers a question (the turn before it ends with a question mark) and
states a triple (attribute other than the long "Information" text) already stated in an earlier
turn -- in an earlier chat, or earlier in the same chat before the
query window. The query is the (up to) three turns before u, the context an agent has when it
must produce u; "before" = the window's first turn (the memory is everything earlier).
Evidence: the earlier turns annotated with one of u's triples. Kept only when there are at most
--max-evidence such turns (any one of them would do, so a long list would make share-of-evidence
meaningless) and the triple's value does not already appear in the query window. A seeded sample
of --per-domain questions per domain; category = the domain.
"""
from __future__ import annotations

import argparse
import json
import os
import random
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The sources as fetched (bench/heldout/README.md): $MEMVAULT_HELDOUT_RAW, else ./raw
RAW = Path(os.environ.get("MEMVAULT_HELDOUT_RAW", "raw"))
OUT = Path(".")


def triples(m: dict) -> list[tuple[str, str, str]]:
    return [(a["name"], a["attrname"], a["attrvalue"]) for a in m.get("attrs", [])
            if a.get("attrname") != "Information"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".", help="where the set's two files go")
    ap.add_argument("--raw", default=str(RAW / "kdconv"))
    ap.add_argument("--per-domain", type=int, default=200)
    ap.add_argument("--max-evidence", type=int, default=2)
    ap.add_argument("--window", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    global OUT
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    raw = Path(args.raw)
    questions, histories = [], []
    for dom in ("film", "music", "travel"):
        chats = []
        for split in ("dev", "test"):
            chats += json.loads((raw / f"{dom}_{split}.json").read_text(encoding="utf-8"))
        hid = f"kdconv-{dom}"
        turns, pos = [], {}
        for c, chat in enumerate(chats):
            for t, m in enumerate(chat["messages"]):
                tid = f"c{c}-t{t}"
                pos[tid] = len(turns)
                turns.append({"id": tid, "speaker": "AB"[t % 2], "text": m["message"].strip(),
                              "time": None, "session": c + 1})
        histories.append({"history": hid, "turns": turns})
        stated: dict[tuple, list[str]] = defaultdict(list)
        candidates = []
        for c, chat in enumerate(chats):
            msgs = chat["messages"]
            for t, m in enumerate(msgs):
                ks = triples(m)
                asked = t > 0 and msgs[t - 1]["message"].strip().endswith(("？", "?"))
                if asked and ks:
                    start = max(0, t - args.window)
                    before = f"c{c}-t{start}"
                    window = "".join(x["message"] for x in msgs[start:t])
                    ev = []
                    for k in ks:
                        if k[2] and k[2] in window:
                            ev = []
                            break
                        ev += [e for e in stated[k] if pos[e] < pos[before] and e not in ev]
                    if 0 < len(ev) <= args.max_evidence:
                        query = "\n".join(f"{'AB'[i % 2]}: {msgs[i]['message'].strip()}"
                                          for i in range(start, t))
                        candidates.append({"set": "kdconv", "lang": "zh", "category": dom,
                                           "question": query, "history": hid, "evidence": ev,
                                           "before": before, "id": f"{hid}-c{c}-t{t}"})
                for k in ks:
                    stated[k].append(f"c{c}-t{t}")
        rng = random.Random(f"{args.seed}-{dom}")
        picked = sorted(rng.sample(range(len(candidates)), min(args.per_domain, len(candidates))))
        questions += [candidates[i] for i in picked]
        print(f"kdconv-{dom}: {len(candidates)} candidate questions, kept {len(picked)}")
    for name, rows in (("kdconv", questions), ("kdconv-histories", histories)):
        with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for r in rows:
                out.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"kdconv: {len(questions)} questions, {len(histories)} histories, "
          f"{sum(len(h['turns']) for h in histories)} turns")


if __name__ == "__main__":
    main()
