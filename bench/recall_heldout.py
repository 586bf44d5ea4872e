"""Recall on held-out sets of other shapes: does memory_find stay at or above plain BM25 on
dialogue memory it was never tuned on, in English and Chinese, per category?

    python bench/recall_heldout.py                         # every set found (several minutes)
    python bench/recall_heldout.py realtalk madial-zh      # named sets
    python bench/recall_heldout.py --max-questions 200     # a quick look (the first N a set)
    python bench/recall_heldout.py --data DIR --json out.json
    python bench/recall_heldout.py --off "small talk"         # an ablation row: that rule off

The sets (bench/heldout/README.md: where each comes from, its licence, how its questions and
evidence were derived) are read from a folder of `<set>.jsonl` (questions) and
`<set>-histories.jsonl` (turns) files: `--data`, else $MEMVAULT_HELDOUT, else the first folder
named `data-extra` beside the checkout or above it. bench/heldout/convert_*.py build them from
the public sources. They are validation only: no rule is tuned on them.

Each history's turns become events ("speaker: text", their own times; a turn without a time
gets one a minute after the one before) in a fresh memory, through the public `Memory` API.
A query longer than find takes (1,000 chars) is cut to its newest 1,000 on both sides.
A question with `before` (asked partway through its history) sees only the turns listed before
that turn: the memory holds just those when it is asked, and BM25 indexes just those. Each
question is asked on a clock set to its moment (the time of its `before` turn, else a minute
after the last turn), as an agent would ask it then.

Each set is split by history, written down here before any tuning: a history's place in its
file, counted from 0, even is `tuning`, odd is `validation` (`--split`; default both, printed
apart). A rule may be tried on tuning; it is adopted only if it holds or helps validation on
every set, in both languages.

Evidence recall@k: the share of a question's evidence turns in the top k, averaged per set and
category. The baseline, in the same run over the same turns: rank-bm25's BM25Okapi (k1 1.5,
b 0.75) over lowercase [a-z0-9]+ words plus, for Chinese, CJK character unigrams and bigrams.
Per set it prints @5/@10/@20 per category and overall, the difference, and how many questions
find answered better and worse than BM25 at @10 (with a sign test's two-sided p). Nothing here
asserts anything.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from memvault import ManualClock, Memory  # noqa: E402
from memvault.recall.terms import MAX_QUERY_CHARS  # noqa: E402
from memvault.timeline.messages import message_events  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KS = (5, 10, 20)
_WORDS = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_NO_TIME = datetime(2025, 1, 1, tzinfo=UTC)  # a history whose turns carry no time starts here


def data_folder(given: str | None) -> Path | None:
    """Where the sets are: --data, $MEMVAULT_HELDOUT, or a `data-extra` folder beside the
    checkout or above it."""
    if given or os.environ.get("MEMVAULT_HELDOUT"):
        return Path(given or os.environ["MEMVAULT_HELDOUT"])
    return next((p / "data-extra" for p in ROOT.parents if (p / "data-extra").is_dir()), None)


def tokens(text: str, lang: str) -> list[str]:
    """The baseline's tokens: English words; for Chinese also CJK unigrams and bigrams."""
    text = text.lower()
    out = _WORDS.findall(text)
    if lang == "zh":
        for run in _CJK.findall(text):
            out += list(run)
            out += [run[i:i + 2] for i in range(len(run) - 1)]
    return out


def load_jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


@dataclass
class Scores:
    """Per category, per ranker and k: each question's recall; and the paired @10 outcome."""

    recall: dict[tuple[str, str, int], list[float]] = field(
        default_factory=lambda: defaultdict(list))
    better: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    worse: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    took: list[float] = field(default_factory=list)

    def add(self, category: str, evidence: set[str], bm25: list[str], find: list[str]) -> None:
        for cat in (category, "(all)"):
            for k in KS:
                for name, ranked in (("bm25", bm25), ("find", find)):
                    self.recall[(cat, name, k)].append(
                        len(evidence & set(ranked[:k])) / len(evidence))
            at10 = [len(evidence & set(r[:10])) for r in (find, bm25)]
            if at10[0] > at10[1]:
                self.better[cat] += 1
            elif at10[0] < at10[1]:
                self.worse[cat] += 1

    def categories(self) -> list[str]:
        return sorted({c for c, _, _ in self.recall} - {"(all)"}) + ["(all)"]


def turn_time(turn: dict, before: datetime | None) -> datetime:
    """A turn's time (naive ISO read as UTC); a minute after the turn before when it has none."""
    if turn.get("time"):
        when = datetime.fromisoformat(turn["time"])
        return when if when.tzinfo else when.replace(tzinfo=UTC)
    return (before or _NO_TIME) + timedelta(minutes=1)


def run_history(folder: Path, history: dict, questions: list[dict], scores: Scores,
                lang: str) -> None:
    """One history: its turns appended up to each question's moment, each question asked of
    memory_find and of BM25 over the same turns."""
    turns = history["turns"]
    position = {t["id"]: i for i, t in enumerate(turns)}
    times: list[datetime] = []
    for turn in turns:
        times.append(turn_time(turn, times[-1] if times else None))
    docs = [tokens(f"{t['speaker']}: {t['text']}", lang) for t in turns]
    clock = ManualClock(times[0])
    home = Path(tempfile.mkdtemp(dir=folder))
    asked = sorted(questions, key=lambda q: position[q["before"]] if q.get("before")
                   else len(turns))
    with Memory.open(home, clock=clock) as mem:
        stored, turn_of = 0, {}
        bm25_at: dict[int, BM25Okapi | None] = {}
        for q in asked:
            limit = position[q["before"]] if q.get("before") else len(turns)
            if limit > stored:
                # a turn longer than an event holds is several events, as capture stores it
                new = [(t["id"], event) for i, t in enumerate(turns[stored:limit], start=stored)
                       for event in message_events(f"{t['speaker']}: {t['text']}", times[i],
                                                   "user", {"turn": t["id"]}, f"t:{t['id']}")]
                for start in range(0, len(new), 5_000):
                    chunk = new[start:start + 5_000]
                    ids = mem.append_events([event for _, event in chunk])
                    turn_of.update(zip(ids, (turn for turn, _ in chunk), strict=True))
                stored = limit
            if limit not in bm25_at:
                bm25_at[limit] = BM25Okapi(docs[:limit]) if limit else None
            evidence = set(q["evidence"])
            # find takes at most MAX_QUERY_CHARS: a longer dialogue tail is sent as an agent
            # would cut it, its newest part; BM25 gets the same text
            query = q["question"][-MAX_QUERY_CHARS:]
            clock.set(times[limit] if limit < len(turns) else times[-1] + timedelta(minutes=1))
            index = bm25_at[limit]
            base: list[str] = []
            if index is not None:
                got = index.get_scores(tokens(query, lang))
                base = [turns[i]["id"] for i in sorted(range(limit), key=lambda i: -got[i])[:20]]
            start_at = time.perf_counter()
            hits = mem.find(query, types=["event"], limit=20)["hits"]
            scores.took.append(time.perf_counter() - start_at)
            found = [turn_of[int(h["id"])] for h in hits if int(h["id"]) in turn_of]
            scores.add(q["category"], evidence, base, found)


SPLITS = ("tuning", "validation")


def run_set(data: Path, name: str, folder: Path, max_questions: int,
            splits: tuple[str, ...]) -> tuple[dict[str, Scores], str]:
    """Each split's scores (its histories by their place in the file: even tuning, odd
    validation), and the set's language; `max_questions` a split at most."""
    questions = list(load_jsonl(data / f"{name}.jsonl"))
    by_history: dict[str, list[dict]] = defaultdict(list)
    for q in questions:
        by_history[q["history"]].append(q)
    scores = {split: Scores() for split in splits}
    asked = dict.fromkeys(splits, 0)
    lang = questions[0]["lang"] if questions else "en"
    for place, history in enumerate(load_jsonl(data / f"{name}-histories.jsonl")):
        split = SPLITS[place % 2]
        mine = by_history.get(history["history"], [])
        if split not in scores or not mine:
            continue
        if max_questions:
            mine = mine[:max(0, max_questions - asked[split])]
        asked[split] += len(mine)
        if mine:
            run_history(folder, history, mine, scores[split], lang)
    return scores, lang


def sign_p(better: int, worse: int) -> float:
    """Two-sided sign test p for `better` against `worse` (ties left out)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(better, worse) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def mean(values: list[float]) -> float:
    return statistics.mean(values) if values else float("nan")


def print_set(name: str, lang: str, scores: Scores) -> None:
    ordered = sorted(scores.took)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000 if ordered else 0.0
    print(f"\n{name} ({lang}): find p95 {p95:.1f} ms")
    head = ["category", "n", *(f"{r}@{k}" for k in KS for r in ("bm25", "find")),
            "find-bm25@10", "better/worse@10", "p"]
    rows = []
    for cat in scores.categories():
        n = len(scores.recall[(cat, "find", 10)])
        cells = [f"{mean(scores.recall[(cat, r, k)]):.3f}" for k in KS for r in ("bm25", "find")]
        delta = mean(scores.recall[(cat, "find", 10)]) - mean(scores.recall[(cat, "bm25", 10)])
        b, w = scores.better[cat], scores.worse[cat]
        rows.append([cat, str(n), *cells, f"{delta:+.3f}", f"{b}/{w}", f"{sign_p(b, w):.3f}"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def set_figures(scores: Scores, lang: str) -> dict:
    """A split's figures: overall @10 of each ranker, the categories (of at least 20
    questions) where find is below BM25, and every category's recall."""
    below = [c for c in scores.categories() if c != "(all)"
             and len(scores.recall[(c, "find", 10)]) >= 20
             and mean(scores.recall[(c, "find", 10)]) < mean(scores.recall[(c, "bm25", 10)])]
    return {"lang": lang, "n": len(scores.recall[("(all)", "find", 10)]),
            "bm25": mean(scores.recall[("(all)", "bm25", 10)]),
            "find": mean(scores.recall[("(all)", "find", 10)]), "below": below,
            "categories": {c: {f"{r}@{k}": mean(scores.recall[(c, r, k)])
                               for r in ("bm25", "find") for k in KS}
                           for c in scores.categories()}}


def summary(rows: dict[str, dict]) -> None:
    print("\nsummary (evidence recall @10; categories of >= 20 questions where find < bm25)")
    for name, row in rows.items():
        print(f"  {name:<25} {row['lang']}  n={row['n']:<5} bm25 {row['bm25']:.3f}  "
              f"find {row['find']:.3f}  {row['find'] - row['bm25']:+.3f}  "
              f"below in: {', '.join(row['below']) or '-'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*")
    parser.add_argument("--data")
    parser.add_argument("--max-questions", type=int, default=0, help="at most N a split")
    parser.add_argument("--split", choices=(*SPLITS, "both"), default="both")
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--off", default="",
                        help="comma list of rules to switch off for the run (an ablation row:"
                             " bench/recall_ablation.py ABLATIONS names them)")
    args = parser.parse_args()
    with switched_off_rules(args.off):
        run(args)


@contextmanager
def switched_off_rules(names: str) -> Iterator[None]:
    """The engine with the named rules of bench/recall_ablation.py switched off."""
    if not names:
        yield
        return
    from recall_ablation import ABLATIONS, switched_off

    patches = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        found = [key for key in ABLATIONS if key.startswith(name)]
        if len(found) != 1:
            raise SystemExit(f"--off {name!r}: name one of {sorted(ABLATIONS)}")
        patches += ABLATIONS[found[0]]
    with switched_off(patches):
        yield


def run(args: argparse.Namespace) -> None:
    """Every named set, printed per split, then the summary."""
    data = data_folder(args.data)
    if data is None or not data.is_dir():
        raise SystemExit("no held-out sets found: pass --data DIR (bench/heldout/README.md)")
    names = args.sets or sorted(p.name[:-6] for p in data.glob("*.jsonl")
                                if not p.name.endswith("-histories.jsonl"))
    splits = SPLITS if args.split == "both" else (args.split,)
    figures: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            per_split, lang = run_set(data, name, Path(folder), args.max_questions, splits)
            for split, scores in per_split.items():
                print_set(f"{name} [{split}]", lang, scores)
                figures[f"{name} [{split}]"] = set_figures(scores, lang)
            sys.stdout.flush()
    summary(figures)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
