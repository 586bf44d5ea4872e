"""Why memory_find misses: for each LoCoMo question whose evidence turn is not in the top 10,
whether that turn was scored at all (a candidate, or a neighbour of one) or never reached, and
whether it shares a word with the question (and how rare that word is in the conversation).

    python bench/recall_misses.py                 # both splits
    python bench/recall_misses.py --split validation --show 20

A turn that shares a query word but was never scored is a miss of the candidate stage (stage 1
of engine/recall/rank.py); one that was scored but ranked below 10 is a miss of the ranking; one
that shares no word is out of lexical reach (only its neighbours or a date can lift it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault.recall import query as find_module  # noqa: E402
from memvault.recall.index import fold  # noqa: E402
from memvault.recall.rank import occurrences  # noqa: E402
from memvault.recall.terms import parse_query  # noqa: E402
from recall import (  # noqa: E402
    CATEGORIES,
    DATA,
    TUNE_CONVERSATIONS,
    event_row,
    fresh_db,
    ingest,
    locomo_turns,
    split_name,
    table,
)

COMMON_SHARE = 0.1  # a word in more than this share of a conversation's turns is common


def shared_terms(question: str, text: str, folded_turns: list[str]) -> list[tuple[str, bool]]:
    """The query terms of `question` that `text` holds (as stage 2 matches them), each with
    whether it is rare (in at most COMMON_SHARE of the conversation's turns)."""
    folded = fold(text)
    out = []
    for term in parse_query(question).terms:
        if occurrences(term, folded)[0]:
            df = sum(1 for t in folded_turns if occurrences(term, t)[0])
            out.append((term.text, df <= COMMON_SHARE * len(folded_turns)))
    return out


def diagnose(path: Path, folder: str, wanted_split: str | None) -> list[dict[str, Any]]:
    """One row per (question, evidence turn) missing from the top 10."""
    scored: set[int] = set()
    real_in_context = find_module.in_context

    def recording(event_id: int, *args: Any) -> Any:
        scored.add(event_id)
        return real_in_context(event_id, *args)

    misses: list[dict[str, Any]] = []
    data = json.loads(path.read_text(encoding="utf-8"))
    with mock.patch.object(find_module, "in_context", recording):
        for n, conv in enumerate(data):
            split = split_name(n < TUNE_CONVERSATIONS)
            if wanted_split and split != wanted_split:
                continue
            turns = locomo_turns(conv)
            conn = fresh_db(folder, f"misses{n}")
            ids = ingest(conn, [event_row(t, w, meta={"dia_id": d}) for d, t, w in turns])
            id_of = {d: i for i, (d, _, _) in zip(ids, turns, strict=True)}
            text_of = {d: t for d, t, _ in turns}
            folded_turns = [fold(t) for _, t, _ in turns]
            for qa in conv["qa"]:
                evidence = [e for e in qa.get("evidence", []) if e in id_of]
                if not evidence:
                    continue
                scored.clear()
                hits = find_module.memory_find(conn, qa["question"], types=["event"], limit=20)
                ranked = [h["id"] for h in hits["hits"]]
                for dia in evidence:
                    if id_of[dia] in ranked[:10]:
                        continue
                    words = shared_terms(qa["question"], text_of[dia], folded_turns)
                    misses.append({
                        "split": split, "category": CATEGORIES[qa["category"]],
                        "question": qa["question"], "turn": text_of[dia],
                        "rank": ranked.index(id_of[dia]) + 1 if id_of[dia] in ranked else None,
                        "scored": id_of[dia] in scored, "shared": words,
                    })
            conn.close()
    return misses


def kind_of(miss: dict[str, Any]) -> str:
    """Scored but ranked below 10 / never scored though it shares a rare word / never scored,
    sharing only common words (a speaker's name) or none."""
    if miss["scored"]:
        return "scored, ranked below 10"
    if any(rare for _, rare in miss["shared"]):
        return "never scored, shares a rare word"
    return "never scored, only common words" if miss["shared"] else "never scored, no word"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", default=str(DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--split", choices=("tuning", "validation"), default=None)
    parser.add_argument("--show", type=int, default=0,
                        help="print this many never-scored misses that share a rare word")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memvault-misses-") as folder:
        misses = diagnose(Path(args.locomo), folder, args.split)
    counts = Counter((m["split"], m["category"], kind_of(m)) for m in misses)
    kinds = ("scored, ranked below 10", "never scored, shares a rare word",
             "never scored, only common words", "never scored, no word")
    rows = []
    for split in ("tuning", "validation"):
        for category in [*CATEGORIES.values(), "all"]:
            cells = [sum(n for (s, c, k), n in counts.items() if s == split and k == kind
                         and category in (c, "all")) for kind in kinds]
            if sum(cells):
                rows.append([split, category, *cells])
    table("Evidence turns missing from memory_find's top 10 (LoCoMo), by why",
          ["split", "category", *kinds], rows)
    shown = [m for m in misses if kind_of(m) == kinds[1]][: args.show]
    for miss in shown:
        print(f"\n[{miss['split']} {miss['category']}] {miss['question']}\n"
              f"  turn: {miss['turn'][:160]}\n  shares: "
              + ", ".join(w + ("" if rare else " (common)") for w, rare in miss["shared"]))


if __name__ == "__main__":
    main()
