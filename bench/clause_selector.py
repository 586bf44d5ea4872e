"""Could a learned clause selector give the builtin a better fact-recall/size trade? (offline)

    python bench/clause_selector.py               # the screen (tuning 0-2, validation 3-4)
    python bench/clause_selector.py --label part --kinds surface,words
    python bench/clause_selector.py --data FILE

The builtin writes, per turn about the speaker, up to three of the turn's candidate clauses
(engine/models/builtin/speech.py: `listen` gives them ranked, `pick_facts` keeps the first
ones that say something new). Here every candidate clause comes from that same code path
(`listen` with the names-enough bar lowered to 0, so the bar becomes one more feature) and is
labelled (`--label`): `holds` when its third-person line holds >= 60% of the content words of
some observation fact of its conversation (bench/fact_quality.py's test), `part` when it holds
two content words of a fact that cites its turn (an annotator turned part of it into a fact).

A logistic regression over weak features (surface: length, names, numbers, time words, past
tense, the speaker as subject, novelty against what the speaker said before, position and rank
in the turn; words: the clause's lowercased unigrams, optionally bigrams) is fitted on the
tuning conversations only, its L2 strength chosen by leave-one-conversation-out AUC. Then each
selector is replayed turn by turn through `pick_facts` (a clause said before is skipped) and the
chosen lines are scored like the pipeline does, offline:

- fact recall: share of facts that one turn line (the joined clauses) holds >= 60% of;
- size: the lines' characters with their "- 2023-05-08: " / "  - " prefixes and newlines, per
  conversation character. The pipeline's objects also hold names, labels, schedules and
  continuations (about 0.011 more on LoCoMo): compare selectors on this scale, not with the
  goal directly; `today` (K=3 t=3) is printed so it can be set beside organize_quality.py's.

Selectors: `hand` (the builtin's ranking, K clauses a turn, names-enough bar t: today is K=3,
t=3), `learned` (clauses ranked by the model's score, K a turn, those scoring under a threshold
left out; "per char" ranks by probability per character instead), `oracle[label]` (only the
clauses the label calls positive, ranked as the builtin does). Printed: the validation envelope
(best recall at each size over a selector's settings, mixing two), and for each target size the
setting chosen on tuning (most tuning recall within the size), measured on validation beside
the hand rules' envelope at the size it reached.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fact_quality import SHARE, content_words, observation_facts  # noqa: E402
from memvault.models.builtin import speech  # noqa: E402
from organize_quality import DATA, TUNING, session_date  # noqa: E402

TARGETS = (0.20, 0.25, 0.30)
LABELS = ("holds", "part")
_TIME = re.compile(r"\b(?:yesterday|today|tonight|tomorrow|ago|last|next|this|recently|weekend|"
                   r"week|month|year|summer|winter|spring|fall|monday|tuesday|wednesday|"
                   r"thursday|friday|saturday|sunday|january|february|march|april|may|june|july|"
                   r"august|september|october|november|december|\d{4})\b", re.IGNORECASE)
_PAST = re.compile(r"\b(?:\w+ed|was|were|went|got|had|did|made|took|saw|met|found|felt|began|"
                   r"bought|came|gave|left|lost|ran|won|wrote|spent|told|been)\b", re.IGNORECASE)
_PLAN = re.compile(r"\b(?:will|want|wants|going|plan|plans|hope|hopes|gonna|'ll|’ll)\b",
                   re.IGNORECASE)
_FEEL = re.compile(r"\b(?:love|loves|feel|feels|felt|happy|excited|glad|proud|grateful|amazing|"
                   r"awesome|great|fun|hard|tough)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no|n't|don't|didn't|doesn't)\b", re.IGNORECASE)
SURFACE = ("words", "long", "content", "specific", "bar", "names", "numbers", "time", "past",
           "plan", "feel", "negation", "own", "rank", "candidates", "position", "first",
           "sentences", "turn_words", "seen_share", "max_overlap", "question_turn")


@dataclass
class Clause:
    """One candidate clause of one turn, with what the selectors and the model need."""

    said: speech.Said
    label: bool  # the label the model learns (LABELS)
    surface: dict[str, float]
    labels: dict[str, bool] = field(default_factory=dict)
    score: float = 0.0


@dataclass
class Turn:
    """A turn about its speaker: its candidate clauses, in the builtin's rank order."""

    speaker: str
    day: str
    clauses: list[Clause]


@dataclass
class Conversation:
    """One LoCoMo conversation as the selectors see it."""

    turns: list[Turn]
    facts: list[set[str]]
    chars: int
    name: str = ""


def bar_of(line: str, name: str) -> int:
    """The highest names-enough bar (speech.MIN_SPECIFIC) this line still passes."""
    saved = speech.MIN_SPECIFIC
    try:
        for bar in range(0, 40):
            speech.MIN_SPECIFIC = bar
            if not speech.names_enough(line, name):
                return bar - 1
        return 40
    finally:
        speech.MIN_SPECIFIC = saved


def load(sample: dict[str, Any]) -> Conversation:
    """Every candidate clause of every turn about its speaker, from the builtin's own listen()."""
    conv = sample["conversation"]
    facts = [content_words(f) for f in observation_facts(sample, _AllDias())]
    cited = _facts_by_turn(sample)
    turns: list[Turn] = []
    chars = 0
    heard_before: dict[str, list[set[str]]] = {}
    sessions = sorted(int(k.split("_")[1]) for k in conv
                      if k.startswith("session_") and k.count("_") == 1)
    saved = speech.MIN_SPECIFIC
    speech.MIN_SPECIFIC = -1  # every clause: the bar is a feature here
    try:
        for number in sessions:
            said_on = session_date(conv[f"session_{number}_date_time"]).date()
            for turn in conv[f"session_{number}"]:
                text = f"{turn['speaker']}: {turn['text']}"
                chars += len(text)
                found = _turn(text, turn["speaker"], said_on, facts, heard_before,
                              cited.get(turn["dia_id"], []))
                if found is not None:
                    turns.append(found)
    finally:
        speech.MIN_SPECIFIC = saved
    return Conversation(turns, facts, chars, sample.get("sample_id", ""))


class _AllDias(dict[str, int]):
    """Every dia id counts as ingested (the whole conversation is)."""

    def __contains__(self, key: object) -> bool:
        return True


def _facts_by_turn(sample: dict[str, Any]) -> dict[str, list[set[str]]]:
    """dia id -> the content words of each observation fact that cites that turn."""
    out: dict[str, list[set[str]]] = {}
    for session in sample["observation"].values():
        for items in session.values():
            for fact in items:
                cited = fact[1] if isinstance(fact[1], list) else [fact[1]]
                for d in {d.strip() for c in cited for d in str(c).replace(",", ";").split(";")}:
                    out.setdefault(d, []).append(content_words(str(fact[0])))
    return out


def _labels(line: str, name: str, facts: list[set[str]], own: list[set[str]]) -> dict[str, bool]:
    """holds: the line holds >= 60% of some fact's content words (fact_quality's test);
    part: it holds >= 2 content words (the speaker's name not counted) of a fact that cites
    its turn, i.e. an annotator turned part of it into a fact."""
    words = content_words(line)
    bare = words - content_words(name)
    return {"holds": any(f and len(words & f) >= SHARE * len(f) for f in facts),
            "part": any(len(bare & f) >= 2 for f in own)}


def _turn(text: str, name: str, said_on: date, facts: list[set[str]],
          heard_before: dict[str, list[set[str]]], own: list[set[str]]) -> Turn | None:
    speaker = speech.speaker_of({"speaker": name}, text, 0)
    assert speaker is not None
    said = [h for h in speech.listen(text, speaker, said_on) if h.kind == "fact"]
    if not said:
        return None
    earlier = heard_before.setdefault(name, [])
    seen = set().union(*earlier) if earlier else set()
    by_place = sorted(said, key=speech._place)
    clauses = []
    for h in said:
        words = speech.words_of(h.text, name)
        mine = content_words(h.text)
        labels = _labels(h.text, name, facts, own)
        surface = {
            "words": len(h.clause.split()), "long": sum(len(w) > 3 for w in h.clause.split()),
            "content": len(mine), "specific": speech.specificity(h.text),
            "bar": bar_of(h.text, name),
            "names": len(re.findall(r"(?<=\s)[A-Z][a-z]+", h.text)),
            "numbers": len(re.findall(r"\d+", h.text)),
            "time": len(_TIME.findall(h.clause)), "past": len(_PAST.findall(h.clause)),
            "plan": len(_PLAN.findall(h.clause)), "feel": len(_FEEL.findall(h.clause)),
            "negation": len(_NEGATION.findall(h.clause)),
            "own": float(bool(h.text.startswith(name))), "rank": h.rank,
            "candidates": len(said), "position": by_place.index(h),
            "first": float(by_place.index(h) == 0),
            "sentences": len({x.sentence.start for x in said}),
            "turn_words": len(text.split()),
            "seen_share": len(words & seen) / max(1, len(words)),
            "max_overlap": max((len(words & w) / max(1, len(words)) for w in earlier),
                               default=0.0),
            "question_turn": float("?" in text)}
        clauses.append(Clause(h, labels["holds"], surface, labels))
    earlier += [speech.words_of(h.text, name) for h in said]
    return Turn(name, said_on.isoformat(), clauses)


# --- replaying a selector ------------------------------------------------------------------

Keep = Callable[[Clause], bool]


def replay(conv: Conversation, per_turn: int, keep: Keep, order: Callable[[Clause], float]
           ) -> tuple[int, int]:
    """(facts recalled, line characters) when each turn keeps, through pick_facts, up to
    `per_turn` of the clauses `keep` accepts, best `order` first."""
    kept: dict[str, list[set[str]]] = {}
    last_day: dict[str, str] = {}
    lines: list[set[str]] = []
    chars = 0
    saved = speech.FACTS_PER_TURN
    speech.FACTS_PER_TURN = per_turn
    try:
        for turn in conv.turns:
            pool = sorted((c for c in turn.clauses if keep(c)), key=order)
            for rank, c in enumerate(pool):
                c.said.rank = rank
            chosen, _ = speech.pick_facts([c.said for c in pool],
                                          kept.setdefault(turn.speaker, []), turn.speaker)
            if not chosen:
                continue
            line = speech.fact_line(chosen, turn.speaker)
            prefix = 4 if last_day.get(turn.speaker) == turn.day else len(f"- {turn.day}: ")
            last_day[turn.speaker] = turn.day
            chars += prefix + len(line) + 1
            lines.append(content_words(line))
    finally:
        speech.FACTS_PER_TURN = saved
    recalled = sum(1 for f in conv.facts if f and any(len(w & f) >= SHARE * len(f)
                                                       for w in lines))
    return recalled, chars


def curve_point(convs: Sequence[Conversation], per_turn: int, keep: Keep,
                order: Callable[[Clause], float]) -> tuple[float, float]:
    """(pooled fact recall, pooled size) of one selector over several conversations."""
    got = [replay(c, per_turn, keep, order) for c in convs]
    facts = sum(len(c.facts) for c in convs)
    chars = sum(c.chars for c in convs)
    return sum(g[0] for g in got) / facts, sum(g[1] for g in got) / chars


def _builtin_order(c: Clause) -> float:
    return c.surface["rank"]


def _score_order(c: Clause) -> float:
    return -c.score


Selector = tuple[str, int, Keep, Callable[[Clause], float]]


def hand_selectors() -> list[Selector]:
    """The builtin's ranking with K clauses a turn and names-enough bar t."""
    return [(f"K={k} t={t}", k, (lambda c, t=t: c.surface["bar"] >= t), _builtin_order)
            for k in (1, 2, 3) for t in range(0, 10)]


def learned_selectors(scores: Sequence[float]) -> list[Selector]:
    """Clauses by the model's score, K a turn, those under a threshold (a score quantile) out."""
    cuts = np.quantile(np.asarray(scores), np.linspace(0.0, 0.95, 20))
    return [(f"K={k} q={q:.2f}", k, (lambda c, cut=cut: c.score >= cut), _score_order)
            for k in (1, 2, 3, 4) for q, cut in zip(np.linspace(0.0, 0.95, 20), cuts,
                                                      strict=True)]


def dense_selectors(scores: Sequence[float]) -> list[Selector]:
    """Clauses by the model's probability per character (what a clause costs in size), K a
    turn, those under a threshold out."""
    dense = np.asarray(scores)
    qs = np.linspace(0.0, 0.95, 20)
    return [(f"K={k} q={q:.2f}", k, (lambda c, cut=cut: _density(c) >= cut),
             lambda c: -_density(c)) for k in (2, 3, 4)
            for q, cut in zip(qs, np.quantile(dense, qs), strict=True)]


def _density(c: Clause) -> float:
    return float(1.0 / (1.0 + np.exp(-c.score)) / max(1, len(c.said.text)))


def oracle_selectors(label: str) -> list[Selector]:
    """Only the clauses `label` calls positive, ranked as the builtin ranks them."""
    return [(f"K={k}", k, (lambda c: c.labels[label]), _builtin_order) for k in (1, 2, 3)]


def frontier(points: list[tuple[float, float]], size: float) -> float:
    """Best recall at `size` on the upper envelope of (recall, size) points: a point within the
    size, or a line between two points either side of it (mixing the two selectors)."""
    best = max([r for r, s in points if s <= size], default=float("nan"))
    for r0, s0 in points:
        for r1, s1 in points:
            if s0 <= size < s1:
                best = max(best, r0 + (r1 - r0) * (size - s0) / (s1 - s0))
    return best


def sweep(name: str, selectors: list[Selector], tune: Sequence[Conversation],
          valid: Sequence[Conversation]) -> dict[str, Any]:
    """Each selector on both splits; per target size the one chosen on tuning, and the
    validation frontier."""
    rows = [(label, curve_point(tune, k, keep, order), curve_point(valid, k, keep, order))
            for label, k, keep, order in selectors]
    out: dict[str, Any] = {"name": name, "chosen": {}, "frontier": {}}
    for target in TARGETS:
        fits = [r for r in rows if r[1][1] <= target]
        if fits:
            label, t_pt, v_pt = max(fits, key=lambda r: r[1][0])
            out["chosen"][target] = (label, t_pt, v_pt)
        out["frontier"][target] = frontier([r[2] for r in rows], target)
    out["rows"] = rows
    return out


# --- the model -----------------------------------------------------------------------------

def features(clauses: Sequence[Clause], words: CountVectorizer | None, surface: bool,
             scaler: StandardScaler | None) -> Any:
    """The design matrix: scaled surface features and/or the clause's word counts."""
    parts = []
    if surface:
        raw = np.array([[np.log1p(max(0.0, c.surface[k])) for k in SURFACE] for c in clauses])
        parts.append(sparse.csr_matrix(scaler.transform(raw) if scaler else raw))
    if words is not None:
        parts.append(words.transform([c.said.clause.casefold() for c in clauses]))
    return sparse.hstack(parts).tocsr()


@dataclass
class Model:
    """A fitted selector model and how to build its features."""

    kind: str
    strength: float
    words: CountVectorizer | None
    scaler: StandardScaler | None
    fit: LogisticRegression

    def score(self, clauses: Sequence[Clause]) -> np.ndarray:
        x = features(clauses, self.words, self.scaler is not None, self.scaler)
        return self.fit.decision_function(x)


def train(clauses: Sequence[Clause], kind: str, strength: float) -> Model:
    """Fit one feature set: "surface", "words" (unigrams), "words2" (and bigrams), "all"
    (surface and unigrams), "all2" (surface, unigrams and bigrams)."""
    words = None
    if kind != "surface":
        words = CountVectorizer(binary=True, min_df=2, token_pattern=r"[a-z0-9']+",
                                ngram_range=(1, 2) if kind.endswith("2") else (1, 1))
        words.fit([c.said.clause.casefold() for c in clauses])
    scaler = None
    if not kind.startswith("words"):
        raw = np.array([[np.log1p(max(0.0, c.surface[k])) for k in SURFACE] for c in clauses])
        scaler = StandardScaler().fit(raw)
    x = features(clauses, words, scaler is not None, scaler)
    y = np.array([c.label for c in clauses])
    fit = LogisticRegression(C=strength, max_iter=2000, solver="liblinear").fit(x, y)
    return Model(kind, strength, words, scaler, fit)


def choose_strength(tune: Sequence[Conversation], kind: str) -> tuple[float, float]:
    """(C, mean held-out AUC) by leave-one-conversation-out over the tuning conversations."""
    best = (0.0, -1.0)
    for strength in (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0):
        aucs = []
        for i, held in enumerate(tune):
            rest = [c for j, conv in enumerate(tune) if j != i for t in conv.turns
                    for c in t.clauses]
            out = [c for t in held.turns for c in t.clauses]
            model = train(rest, kind, strength)
            aucs.append(roc_auc_score([c.label for c in out], model.score(out)))
        if np.mean(aucs) > best[1]:
            best = (strength, float(np.mean(aucs)))
    return best


def all_clauses(convs: Sequence[Conversation]) -> list[Clause]:
    return [c for conv in convs for t in conv.turns for c in t.clauses]


def report(results: list[dict[str, Any]], valid_clauses: list[Clause],
           tune: Sequence[Conversation], valid: Sequence[Conversation]) -> None:
    """The validation envelope per selector, then each size target's tuning-chosen selector
    against the hand rules' envelope at the size it reached on validation."""
    everything = curve_point(valid, 9, lambda c: True, _builtin_order)
    print(f"every candidate clause, validation: fact recall {everything[0]:.3f}, "
          f"size {everything[1]:.3f}")
    hand = [r[2] for r in results[0]["rows"]]
    print("\nvalidation envelope (best recall at each offline size, mixing two settings)")
    print("| selector | validation AUC | " + " | ".join(f"rec @ {t:.2f}" for t in TARGETS) + " |")
    print("|---|---|" + "---|" * len(TARGETS))
    for res in results:
        auc = f"{res['auc']:.3f}" if "auc" in res else "-"
        print(f"| {res['name']} | {auc} | " + " | ".join(
            f"{res['frontier'][t]:.3f}" for t in TARGETS) + " |")
    print("\nchosen on tuning (most tuning recall within the size), measured on validation;"
          " hand = the hand rules' validation envelope at the size reached")
    print("| target | selector | setting | tuning rec / size | validation rec / size | hand |"
          " Δ rec |")
    print("|---|---|---|---|---|---|---|")
    for target in TARGETS:
        for res in results:
            if target not in res["chosen"]:
                continue
            label, t_pt, v_pt = res["chosen"][target]
            at = frontier(hand, v_pt[1])
            print(f"| {target:.2f} | {res['name']} | {label} | {t_pt[0]:.3f} / {t_pt[1]:.3f} | "
                  f"{v_pt[0]:.3f} / {v_pt[1]:.3f} | {at:.3f} | {v_pt[0] - at:+.3f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA / "locomo" / "locomo-dev.json")
    parser.add_argument("--kinds", default="surface,words,words2,all,all2")
    parser.add_argument("--label", choices=LABELS, default="holds")
    parser.add_argument("--dense", default="all", help="the kind also tried per character")
    args = parser.parse_args(argv)
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    convs = [load(s) for s in samples]
    for c in all_clauses(convs):
        c.label = c.labels[args.label]
    tune, valid = convs[:TUNING], convs[TUNING:]
    for split, group in (("tuning", tune), ("validation", valid)):
        cl = all_clauses(group)
        print(f"{split}: {len(cl)} candidate clauses, {sum(c.label for c in cl)} positive "
              f"({sum(c.label for c in cl) / len(cl):.3f}), "
              f"{sum(len(c.facts) for c in group)} facts")
    today = hand_selectors()[2 * 10 + 3]
    for split, group in (("tuning", tune), ("validation", valid)):
        r, s = curve_point(group, today[1], today[2], today[3])
        print(f"today (K=3 t=3) offline, {split}: fact recall {r:.3f}, size {s:.3f}")
    results = [sweep("hand", hand_selectors(), tune, valid)]
    results += [sweep(f"oracle[{label}]", oracle_selectors(label), tune, valid)
                for label in LABELS]
    for kind in args.kinds.split(","):
        strength, cv_auc = choose_strength(tune, kind)
        model = train(all_clauses(tune), kind, strength)
        for conv in convs:
            cl = all_clauses([conv])
            for c, s in zip(cl, model.score(cl), strict=True):
                c.score = float(s)
        if kind == "surface":  # what the model leans on, per standard deviation of log(1+x)
            weights = sorted(zip(SURFACE, model.fit.coef_[0], strict=True),
                             key=lambda w: -abs(w[1]))
            print("surface weights: " + ", ".join(f"{k} {w:+.2f}" for k, w in weights))
        vcl = all_clauses(valid)
        auc = roc_auc_score([c.label for c in vcl], [c.score for c in vcl])
        print(f"learned[{kind}]: C={strength} tuning LOCO AUC {cv_auc:.3f}, "
              f"validation AUC {auc:.3f}")
        results.append(sweep(f"learned[{kind}]", learned_selectors(
            [c.score for c in all_clauses(tune)]), tune, valid))
        results[-1]["auc"] = auc
        if kind == args.dense:
            results.append(sweep(f"learned[{kind}] per char", dense_selectors(
                [_density(c) for c in all_clauses(tune)]), tune, valid))
    report(results, [c for c in all_clauses(valid)], tune, valid)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
