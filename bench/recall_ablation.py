"""Which of recall's rules carry over to conversations nobody tuned them on: each rule switched
off in turn, recall measured on the tuning split and on the validation split beside the engine
as it is (LoCoMo conversations 0-2 tune, 3-4 validate; the first half of the labelled MemoryBank
users tune, the rest validate: bench/recall.py).

    python bench/recall_ablation.py                    # every rule (about 12 s a rule)
    python bench/recall_ablation.py --only neighbours,spoken
    python bench/recall_ablation.py --noisy --only "rarest,several"   # chatty questions

A rule earns its place when switching it off costs recall on validation too, not only on tuning
(a rule that only helps the split it was fitted on is fitted to that corpus's phrasing). Each
row shows the change from the engine as it is when that rule is off: LoCoMo recall@10 overall
and per category, and Chinese (zh, 28 questions a split) and English (en, 14 tuning and 20
validation questions) MemoryBank hits @3/@10. Rules are switched off by patching module
constants or functions for the run; nothing is written to the project. With --noisy every
question is asked after chit-chat (bench/recall.py --noisy), where the rules for long questions
show.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import recall_feedback  # noqa: E402
from memvault.recall import (  # noqa: E402
    context,
    dates,  # noqa: E402
    query,
    rank,
    terms,
)
from recall import (  # noqa: E402
    BANKS,
    CATEGORIES,
    DATA,
    LABELS,
    NOISY,
    ROOT,
    Recall,
    locomo_recall,
    memorybank_recall,
    table,
)

QUESTION_WORDS = frozenset({"what", "which", "who", "whom", "when", "where", "why", "how"})


def _no_dates_spoken(text: str, said_on: str) -> list[Any]:
    return []


def _date_words_kept(text: str) -> dates.DateMentions:
    """The dates a query names, without their spans: their words are terms again."""
    return dates.DateMentions(dates.date_mentions(text).windows, ())


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _first_terms(parsed: terms.Query, df: Any) -> terms.Query:
    """The cut this replaced: the first MAX_TERMS terms in parser order."""
    return dataclasses.replace(parsed, terms=parsed.terms[: terms.MAX_TERMS])


# name -> what to patch: (object, attribute, value while the rule is off)
# Tried, not adopted (docs/recall.md): a query cut only before the words that join two questions
# (另外, "also", ", and what"), never after a "?" alone.
_JOINS_ONLY = re.compile(terms._PART_BREAK.pattern.removeprefix(r"(?<=[?？])\s*|"),
                         re.IGNORECASE)

ABLATIONS: dict[str, list[tuple[Any, str, Any]]] = {
    "neighbours": [(context, "AFTER_WEIGHT", 0.0), (context, "BEFORE_WEIGHT", 0.0)],
    "neighbour reach 2 (1)": [(context, "NEIGHBOUR_REACH", 1)],
    "conversation gap 5 min (30)": [(context, "CONVERSATION_GAP_US", 30 * 60 * 1_000_000)],
    "before/after asymmetry (0.55/0.55)": [(context, "AFTER_WEIGHT", 0.55),
                                           (context, "BEFORE_WEIGHT", 0.55)],
    "one-or-two-term rule": [(query, "CONTEXT_MIN_TERMS", 0)],
    "spoken dates": [(context, "spoken_spans", _no_dates_spoken)],
    "date bonus": [(context, "DATE_BONUS", 0.0), (query, "DATE_BONUS", 0.0)],
    "date words out of terms": [(terms, "date_mentions", _date_words_kept)],
    "recency tie-break": [(query, "later_first", _nothing)],
    "stopwords (none dropped)": [(terms, "STOPWORDS", frozenset())],
    "question words as stopwords": [(terms, "STOPWORDS", terms.STOPWORDS - QUESTION_WORDS)],
    "short query = prefixes (<=3 words)": [(terms, "PREFIX_QUERY_WORDS", 0)],
    "half credit inside longer words": [(terms, "PREFIX_CREDIT", 0.0)],
    "inflections (query-side stemmer)": [(terms, "MIN_WORD", 10**6)],
    "CJK function characters": [(terms, "CJK_FUNCTION_CHARS", frozenset())],
    "CJK phrase bonus": [(rank, "PHRASE_BONUS", 0.0)],
    "rarest terms kept (the first ones instead)": [(query, "keep_informative", _first_terms)],
    "lone CJK characters as candidates": [(rank, "LONE_CJK_CANDIDATES", False)],
    "CJK characters as terms": [(terms, "CJK_CHAR_TERMS", False)],
    "several questions, a share each": [(query, "SPLIT_QUESTIONS", False)],
    "a \"?\" cuts a query (only the joining words do)": [(terms, "_PART_BREAK", _JOINS_ONLY)],
}


# name -> a replacement measured the same way (a row "with NAME"); needs what it names installed
# (a None value: not installed, the row is left out)
VARIANTS: dict[str, list[tuple[Any, str, Any]]] = {
    "pseudo-relevance feedback (k 3, m 10, lambda 0.2)": recall_feedback.ON,
    "feedback re-ranking only what was read": [*recall_feedback.ON,
                                               (recall_feedback, "SECOND_PASS", False)],
}


@contextmanager
def switched_off(patches: list[tuple[Any, str, Any]]) -> Iterator[None]:
    """The engine with these module attributes replaced, for the duration."""
    with ExitStack() as stack:
        for target, name, value in patches:
            stack.enter_context(mock.patch.object(target, name, value))
        yield


Scores = dict[str, dict[str, float]]  # split -> column -> value


def measure(args: argparse.Namespace) -> Scores:
    """LoCoMo recall@10 per category and overall, zh and en MemoryBank hits @3/@10, per split."""
    out: Scores = {}
    with tempfile.TemporaryDirectory(prefix="memvault-ablation-") as folder:
        splits, _ = locomo_recall(Path(args.locomo), folder)
        banks = {column: memorybank_recall(Path(args.memorybank), Path(labels), folder,
                                           BANKS[code])[0]
                 for column, code, labels in (("zh", "cn", args.labels),
                                              ("en", "en", args.labels_en))}
    for split, recall in splits.items():
        out[split] = _locomo_columns(recall)
        for code, bank in banks.items():
            for k in (3, 10):
                out[split][f"{code} @{k}"] = bank[split][f"find @{k}"]
                out[split][f"{code} pooled @{k}"] = bank[split][f"find pooled @{k}"]
    return out


def _locomo_columns(recall: Recall) -> dict[str, float]:
    per = recall[("find", 10)]
    every = [x for c in CATEGORIES for x in per[c]]
    columns = {"all": sum(every) / max(1, len(every))}
    for c, name in CATEGORIES.items():
        columns[name] = sum(per[c]) / max(1, len(per[c]))
    return columns


def _delta(value: float, base: float, whole: bool) -> str:
    change = value - base
    if whole:
        return f"{int(change):+d}" if change else "0"
    return f"{change:+.3f}" if abs(change) >= 0.0005 else "0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", default=str(DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--memorybank", default=str(DATA / "memorybank"))
    parser.add_argument("--labels", default=str(ROOT / "bench" / "recall_labels_memorybank.json"))
    parser.add_argument("--labels-en", default=str(LABELS["en"]))
    parser.add_argument("--only", default="", help="comma list of rule names (substrings)")
    parser.add_argument("--noisy", action="store_true",
                        help="ask every question after chit-chat (bench/noisy_questions.py)")
    args = parser.parse_args()
    NOISY["on"] = args.noisy
    wanted = [w for w in args.only.split(",") if w]
    every = {f"without {n}": p for n, p in ABLATIONS.items()}
    every |= {f"with {n}": p for n, p in VARIANTS.items()
              if all(v is not None for _, _, v in p)}
    chosen = {name: patches for name, patches in every.items()
              if not wanted or any(w in name for w in wanted)}
    base = measure(args)
    rows: dict[str, list[list[str]]] = {"tuning": [], "validation": []}
    for split in rows:
        rows[split].append(["engine as it is",
                            *(_fmt(v, c) for c, v in base[split].items())])
    for name, patches in chosen.items():
        with switched_off(patches):
            scores = measure(args)
        for split in rows:
            rows[split].append([name, *(
                _delta(v, base[split][c], _is_count(c)) for c, v in scores[split].items())])
        print(f"measured {name}", file=sys.stderr)
    columns = list(base["tuning"])
    for split, split_rows in rows.items():
        table(f"Ablation, {split} split: LoCoMo recall@10 and MemoryBank hits (first row: the"
              " engine; others: the change with that rule off; a rule that helps carries over"
              " when its row is negative here as well)", ["", *columns], split_rows)


def _fmt(value: float, column: str) -> str:
    return str(int(value)) if _is_count(column) else f"{value:.3f}"


def _is_count(column: str) -> bool:
    """Whether a column counts MemoryBank hits (whole numbers) rather than a recall share."""
    return column.startswith(("zh", "en"))


if __name__ == "__main__":
    main()
