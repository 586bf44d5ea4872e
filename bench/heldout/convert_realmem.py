#!/usr/bin/env python3
"""RealMem / RealMemBench (long multi-session user-assistant projects, memory-driven queries) ->
common shape.

Source: github.com/zhiyuan5986/RealMemBench @ 067c486a525b0811ef9cb8cb5ad258e286d0ce7e,
dataset/*_dialogues_256k.json (copied to raw/realmem/; Apache-2.0). Writes realmem.jsonl and
realmem-histories.jsonl.

    python3 convert_realmem.py [--raw DIR] [--window 3]

History: one per persona (10; 135-276 sessions, 220k-350k tokens each): every session in order,
turn id "s<session>-t<turn>", speaker User/Assistant, time = the session's date, session = its
position (1-based).
Question: every user turn marked is_query whose following assistant turn lists memory_used. The
query is that user turn with up to window-1 turns before it in the same session ("Speaker: text"
lines). The memory at question time is everything before the query window, so each question has
"before" = the id of the window's first turn; evidence can only lie before it.
Evidence: the dataset's own labels -- the assistant reply's memory_used items, each matched by
content to a memory point extracted in the session it names, and that memory point's
source_turn (located by its source_content_snapshot; source_turn is 1-based in most records).
Category = the query's category_name (Dynamic Incremental, Dynamic Updating, Implicit
Preference, Temporal-reasoning, ...).
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
DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")


def source_index(memory: dict, turns: list[dict]) -> int | None:
    snap = (memory.get("source_content_snapshot") or "").strip()[:80]
    st = memory.get("source_turn")
    if isinstance(st, int):
        for i in (st - 1, st):
            if 0 <= i < len(turns) and snap and turns[i]["content"].strip()[:80] == snap:
                return i
    if snap:
        for i, t in enumerate(turns):
            if t["content"].strip()[:80] == snap:
                return i
    if isinstance(st, int) and 0 < st <= len(turns):
        return st - 1
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".", help="where the set's two files go")
    ap.add_argument("--raw", default=str(RAW / "realmem"))
    ap.add_argument("--window", type=int, default=3)
    args = ap.parse_args()
    global OUT
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    questions, histories = [], []
    dropped = {"no memory_used": 0, "evidence not before query": 0}
    for f in sorted(Path(args.raw).glob("*_dialogues_256k.json")):
        d = json.loads(f.read_text(encoding="utf-8"))
        person = d["_metadata"]["person_name"]
        hid = f"realmem-{person}"
        sessions = d["dialogues"]
        by_uuid = {s["session_uuid"]: n for n, s in enumerate(sessions)}
        turns, order = [], {}
        for n, s in enumerate(sessions):
            m = DATE.search(s.get("current_time") or "")
            when = m.group(1) + "T00:00:00" if m else None
            for k, t in enumerate(s["dialogue_turns"]):
                tid = f"s{n + 1}-t{k}"
                order[tid] = len(turns)
                turns.append({"id": tid, "speaker": t["speaker"], "text": t["content"],
                              "time": when, "session": n + 1})
        histories.append({"history": hid, "turns": turns})
        for n, s in enumerate(sessions):
            dt = s["dialogue_turns"]
            for k, t in enumerate(dt):
                if not t.get("is_query"):
                    continue
                used = (dt[k + 1].get("memory_used") if k + 1 < len(dt) else None) or []
                if not used:
                    dropped["no memory_used"] += 1
                    continue
                start = max(0, k - args.window + 1)
                before = f"s{n + 1}-t{start}"
                ev = []
                for mu in used:
                    j = by_uuid.get(mu.get("session_uuid"))
                    if j is None:
                        continue
                    for mem in sessions[j]["extracted_memory"]:
                        if mem["content"] == mu["content"]:
                            i = source_index(mem, sessions[j]["dialogue_turns"])
                            if i is not None:
                                tid = f"s{j + 1}-t{i}"
                                if order[tid] < order[before] and tid not in ev:
                                    ev.append(tid)
                            break
                if not ev:
                    dropped["evidence not before query"] += 1
                    continue
                query = "\n".join(f"{x['speaker']}: {x['content']}" for x in dt[start:k + 1])
                questions.append({"set": "realmem", "lang": "en",
                                  "category": t.get("category_name") or "?",
                                  "question": query, "history": hid, "evidence": ev,
                                  "before": before, "id": f"{hid}-{t.get('query_id') or k}"})
    for name, rows in (("realmem", questions), ("realmem-histories", histories)):
        with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for r in rows:
                out.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"realmem: {len(questions)} questions, {len(histories)} histories, "
          f"{sum(len(h['turns']) for h in histories)} turns; dropped {dropped}")


if __name__ == "__main__":
    main()
