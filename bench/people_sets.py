"""What the default (builtin) model files from other people's words, set by set.

Each set is one person's days: `turns.jsonl` (ready for `memvault ingest -`) and `expected.json`
(checks: an object of a type holding every needle; `absent` checks for what must not become an
object: instructions to the agent, someone else's plan, a tentative wish filed as a plan, a
pasted secret). The shared people (../shared/data/people, written outside the team) and the
team's own (bench/people/, written before the rules they test) are scored by the shared
checker, check_people.py, which ingests each set into a fresh home, organizes and lists it.

    python bench/people_sets.py                 # every set, tuning and validation apart
    python bench/people_sets.py --only validation

Split, fixed before tuning: the validation sets are read for their score, never their turns.
Wrong objects (a violated absent check) must be 0 on validation.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent
OWN = BENCH / "people"
SHARED = next((p / "shared" / "data" / "people" for p in BENCH.parents
               if (p / "shared" / "data" / "people").is_dir()), None)
VALIDATION = {"p5-mixed-chloe", "q2-manager-dana", "q4-mixed-siyuan", "q6-retiree-guifen"}


@dataclass(frozen=True)
class SetScore:
    """One person's score: positive checks held, absent checks violated (wrong objects)."""

    name: str
    split: str
    held: int
    positive: int
    wrong: int
    objects: int
    misses: list[str]


def load_checker() -> ModuleType:
    """The shared check_people.py, imported from its folder (never copied here)."""
    if SHARED is None:
        raise SystemExit("no shared/data/people folder above the checkout: see bench/README.md")
    spec = importlib.util.spec_from_file_location("check_people", SHARED / "check_people.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def people_folders() -> list[Path]:
    """Every set: the shared ones and the team's own, each a folder with turns.jsonl."""
    roots = [r for r in (SHARED, OWN) if r is not None]
    return sorted((d for r in roots for d in r.iterdir() if (d / "turns.jsonl").is_file()),
                  key=lambda d: d.name)


def score(checker: ModuleType, folder: Path) -> SetScore:
    name, checks, objs, held, misses, wrong = checker.person(str(folder))
    absent = sum(1 for c in checks if c.get("absent"))
    positive_held = held - (absent - len(wrong))
    lines = [f"{c['id']} [{checker.classify(c, why)}] {c['what']} :: {why}" for c, why in misses]
    return SetScore(name, "validation" if name in VALIDATION else "tuning", positive_held,
                    len(checks) - absent, len(wrong), len(objs), lines)


def print_table(scores: list[SetScore]) -> None:
    print("| set | split | positive held | share | wrong objects | objects |")
    print("|---|---|---|---|---|---|")
    for s in scores:
        print(f"| {s.name} | {s.split} | {s.held}/{s.positive} | {s.held / s.positive:.2f} | "
              f"{s.wrong} | {s.objects} |")
    for split in ("tuning", "validation"):
        part = [s for s in scores if s.split == split]
        if part:
            held, pos = sum(s.held for s in part), sum(s.positive for s in part)
            print(f"| **{split}** | | {held}/{pos} | {held / pos:.2f} | "
                  f"{sum(s.wrong for s in part)} | |")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("tuning", "validation"))
    parser.add_argument("--misses", action="store_true",
                        help="list each miss (tuning sets only: validation shows its score)")
    args = parser.parse_args(argv)
    checker = load_checker()
    scores = []
    for folder in people_folders():
        split = "validation" if folder.name in VALIDATION else "tuning"
        if args.only and split != args.only:
            continue
        scores.append(score(checker, folder))
        print(f"scored {folder.name}", file=sys.stderr)
    print_table(scores)
    if args.misses:
        for s in scores:
            if s.split == "tuning":
                print(f"\n{s.name}:")
                print("\n".join(f"  {line}" for line in s.misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
