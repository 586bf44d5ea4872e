#!/usr/bin/env python3
"""Checks every <name>.jsonl / <name>-histories.jsonl pair in a folder (the first argument, else
the current one) against the common shape (bench/heldout/README.md)."""
import json
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

HERE = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
for qp in sorted(HERE.glob("*.jsonl")):
    if qp.stem.endswith("-histories"):
        continue
    hp = HERE / f"{qp.stem}-histories.jsonl"
    hist = {}
    for line in hp.open(encoding="utf-8"):
        h = json.loads(line)
        assert h["history"] not in hist
        ids = [t["id"] for t in h["turns"]]
        assert len(ids) == len(set(ids)), h["history"]
        for t in h["turns"]:
            assert set(t) == {"id", "speaker", "text", "time", "session"}, t
            assert isinstance(t["session"], int) and isinstance(t["text"], str)
            if t["time"] is not None:
                datetime.fromisoformat(t["time"])
        hist[h["history"]] = {i: n for n, i in enumerate(ids)}
    cats, langs, qids = Counter(), Counter(), set()
    for line in qp.open(encoding="utf-8"):
        q = json.loads(line)
        assert q["set"] == qp.stem and q["lang"] in ("en", "zh") and q["question"].strip()
        assert q["id"] not in qids
        qids.add(q["id"])
        pos = hist[q["history"]]
        assert q["evidence"] and all(e in pos for e in q["evidence"]), q["id"]
        if q.get("before"):
            assert all(pos[e] < pos[q["before"]] for e in q["evidence"]), q["id"]
        cats[q["category"]] += 1
        langs[q["lang"]] += 1
    print(f"{qp.stem}: {sum(cats.values())} questions, {len(hist)} histories, "
          f"{sum(len(v) for v in hist.values())} turns, {dict(langs)},"
          f" {dict(sorted(cats.items()))}")
