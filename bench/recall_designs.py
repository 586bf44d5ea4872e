"""Why CJK bigrams: three ways to index Chinese for FTS5, measured on the same synthetic events.

    python bench/recall_designs.py [--events 100000] [--queries 40]
    python bench/recall_designs.py --stemming     # only the English stemming comparison

1. bigram (chosen): recall/index.py analyze(): CJK runs become overlapping bigrams plus the
   run's last character, unicode61, detail=none. 2 chars = one token; longer = all its bigrams.
2. trigram: FTS5's trigram tokenizer over the raw text (padded with two newlines so every
   character starts a trigram). 3+ chars = a phrase; 2 chars = the trigrams it starts, listed
   with fts5vocab (a walk over their postings), OR-ed.
3. jieba: CJK runs segmented with jieba.cut_for_search at index time; a query is the AND of its
   jieba tokens.
For each: build time and index size for the events, lookup latency of CJK substrings of 2 and
3-4 characters (rowids of the newest 1,001 matches, what recall's stage 1 reads), and substring
recall/precision: of the events that contain the query string, how many the lookup returns.

Stemming at index time (--stemming): LoCoMo turns in two FTS5 tables per conversation, one
`unicode61` (what the events index tokenizes English with) and one `porter unicode61`, ranked by
FTS5's bm25() for the OR of the question's words; recall@5/10/20 of the evidence per category,
beside memory_find, which matches inflections at query time (recall/stem.py) over the same turns,
and memory_find with Porter's stems as its word families (what a porter index would conflate,
under the engine's scorer).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault.recall import rank, stem, terms  # noqa: E402
from memvault.recall.index import CJK_RUN, analyze  # noqa: E402
from memvault.recall.query import memory_find  # noqa: E402
from recall import (  # noqa: E402
    CATEGORIES,
    DATA,
    Synth,
    event_row,
    fresh_db,
    ingest,
    locomo_turns,
    source_texts,
    table,
)

STEM_TOKENIZERS = {"unicode61": "unicode61 remove_diacritics 2",
                   "porter unicode61": "porter unicode61 remove_diacritics 2"}
_ASCII_WORDS = re.compile(r"[a-z0-9]+")


def _jieba_text(text: str) -> str:
    import jieba

    return CJK_RUN.sub(lambda m: " " + " ".join(jieba.cut_for_search(m.group())) + " ", text)


def _jieba_match(query: str) -> str:
    import jieba

    return " AND ".join(f'"{t}"' for t in jieba.cut_for_search(query) if t.strip())


def _bigram_match(query: str) -> str:
    pairs = [query[i : i + 2] for i in range(len(query) - 1)]
    return " AND ".join(f'"{p}"' for p in dict.fromkeys(pairs))


DESIGNS: dict[str, tuple[str, Callable[[str], str]]] = {
    "bigram (chosen)": ("text, content='', detail='none', tokenize='unicode61 remove_diacritics 2'",
                        analyze),
    "trigram": ("text, content='', tokenize='trigram'", lambda t: t + "\n\n"),
    "jieba": ("text, content='', detail='none', tokenize='unicode61 remove_diacritics 2'",
              _jieba_text),
}


def lookup(conn: sqlite3.Connection, design: str, query: str, limit: int) -> list[int]:
    if design == "trigram" and len(query) == 2:
        terms = [r[0] for r in conn.execute(
            "SELECT term FROM v WHERE term >= ? AND term < ?", (query, query + "\U0010ffff"))]
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    elif design == "trigram":
        match = '"' + query + '"'
    elif design == "jieba":
        match = _jieba_match(query)
    else:
        match = _bigram_match(query)
    row = conn.execute("SELECT json_group_array(rowid) FROM (SELECT rowid FROM t WHERE t MATCH ?"
                       " ORDER BY rowid DESC LIMIT ?)", (match, limit)).fetchone()
    return json.loads(row[0])


def _fts_ranked(conn: sqlite3.Connection, table: str, question: str, limit: int) -> list[int]:
    """Rowids by FTS5 bm25() for the OR of the question's words (each quoted: text stays text)."""
    words = dict.fromkeys(_ASCII_WORDS.findall(question.lower()))
    if not words:
        return []
    match = " OR ".join(f'"{w}"' for w in words)
    return [r[0] for r in conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}) LIMIT ?",
        (match, limit))]


def _porter_stems(data: list[dict]) -> Callable[[str], str]:
    """Porter stems (FTS5's porter tokenizer, read back through fts5vocab) of every word of the
    LoCoMo turns and questions: a stand-in for a porter index under memory_find's scorer."""
    words: set[str] = set()
    for conv in data:
        words.update(w for _, t, _ in locomo_turns(conv) for w in _ASCII_WORDS.findall(t.lower()))
        words.update(w for qa in conv["qa"] for w in _ASCII_WORDS.findall(qa["question"].lower()))
    ordered = sorted(words)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE p USING fts5 (w, tokenize='porter ascii')")
    conn.execute("CREATE VIRTUAL TABLE pv USING fts5vocab(p, 'instance')")
    conn.executemany("INSERT INTO p (rowid, w) VALUES (?, ?)",
                     [(i + 1, w) for i, w in enumerate(ordered)])
    stems = {ordered[doc - 1]: term for term, doc in conn.execute("SELECT term, doc FROM pv")}
    conn.close()
    return lambda word: stems.get(word, word) if len(word) >= stem.MIN_WORD else word


@contextmanager
def _stemmer(family: Callable[[str], str]) -> Iterator[None]:
    """memory_find with `family` as its word-family key (recall/stem.py's stem by default)."""
    modules = (stem, terms, rank)
    saved = [m.stem for m in modules]
    for m in modules:
        m.stem = family
    try:
        yield
    finally:
        for m, old in zip(modules, saved, strict=True):
            m.stem = old


def bench_stemming(path: Path, ks: tuple[int, ...] = (5, 10, 20)) -> None:
    """Recall of LoCoMo evidence: bm25() over a unicode61 and a porter-stemmed FTS5 table of the
    same turns, and memory_find (query-time inflections) over them as events."""
    data = json.loads(path.read_text(encoding="utf-8"))
    found: dict[tuple[str, int, int], list[float]] = {}
    names = [*STEM_TOKENIZERS, "memory_find", "memory_find, porter"]
    porter = _porter_stems(data)
    with tempfile.TemporaryDirectory(prefix="memvault-stemming-") as folder:
        for n, conv in enumerate(data):
            turns = locomo_turns(conv)
            conn = sqlite3.connect(":memory:")
            for i, tokenize in enumerate(STEM_TOKENIZERS.values()):
                conn.execute(f"CREATE VIRTUAL TABLE t{i} USING fts5 (text, tokenize='{tokenize}')")
                conn.executemany(f"INSERT INTO t{i} (rowid, text) VALUES (?, ?)",
                                 [(j + 1, t) for j, (_, t, _) in enumerate(turns)])
            mem = fresh_db(folder, f"stem{n}")
            ids = ingest(mem, [event_row(t, w) for _, t, w in turns])
            dia = {j + 1: d for j, (d, _, _) in enumerate(turns)}
            dia_of_event = {i: d for i, (d, _, _) in zip(ids, turns, strict=True)}
            for qa in conv["qa"]:
                evidence = {e for e in qa.get("evidence", []) if e in dia.values()}
                if not evidence:
                    continue
                ranked = {name: [dia[r] for r in _fts_ranked(conn, f"t{i}", qa["question"],
                                                             max(ks))]
                          for i, name in enumerate(STEM_TOKENIZERS)}
                for name, family in (("memory_find", stem.stem), ("memory_find, porter", porter)):
                    with _stemmer(family):
                        hits = memory_find(mem, qa["question"], types=["event"],
                                           limit=max(ks))["hits"]
                    ranked[name] = [dia_of_event[h["id"]] for h in hits]
                for name in names:
                    for k in ks:
                        share = len(evidence & set(ranked[name][:k])) / len(evidence)
                        found.setdefault((name, k, qa["category"]), []).append(share)
            conn.close()
            mem.close()
    rows = []
    for k in ks:
        for name in names:
            cells = [found.get((name, k, c), []) for c in CATEGORIES]
            every = [x for c in cells for x in c]
            rows.append([f"{name} @{k}", *(f"{sum(c) / max(1, len(c)):.3f}" for c in cells),
                         f"{sum(every) / max(1, len(every)):.3f}"])
    table(f"Stemming at index time: LoCoMo evidence recall ({path.name}), FTS5 bm25() over "
          "unicode61 vs porter tables of the same turns, and memory_find",
          ["", *CATEGORIES.values(), "all"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", default=str(DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--memorybank", default=str(DATA / "memorybank"))
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40, help="queries per length")
    parser.add_argument("--stemming", action="store_true",
                        help="only the English stemming comparison on LoCoMo")
    args = parser.parse_args()
    if args.stemming:
        bench_stemming(Path(args.locomo))
        return
    en, cn = source_texts(Path(args.locomo), Path(args.memorybank))
    synth = Synth(en, cn, cjk_share=0.2, seed=13)
    texts = [synth.text() for _ in range(args.events)]
    rnd = random.Random(3)
    runs = [r for t in texts for r in CJK_RUN.findall(t) if len(r) >= 4]
    queries = {n: [] for n in (2, 3, 4)}
    for n, bucket in queries.items():
        while len(bucket) < args.queries:
            run = rnd.choice(runs)
            start = rnd.randrange(len(run) - n + 1)
            bucket.append(run[start : start + n])
    truth = {q: {i + 1 for i, t in enumerate(texts) if q in t}
             for qs in queries.values() for q in qs}
    rows = []
    with tempfile.TemporaryDirectory(prefix="memvault-designs-") as folder:
        for design, (columns, prepare) in DESIGNS.items():
            try:
                prepared = [prepare(t) for t in texts[:1]]
            except ImportError:
                print(f"{design}: skipped (not installed)")
                continue
            conn = sqlite3.connect(Path(folder) / f"{design.split()[0]}.db", isolation_level=None)
            conn.execute(f"CREATE VIRTUAL TABLE t USING fts5 ({columns})")
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
            start = time.perf_counter()
            for i in range(0, len(texts), 5_000):
                prepared = {str(i + j + 1): prepare(t) for j, t in enumerate(texts[i : i + 5_000])}
                conn.execute("BEGIN")
                conn.execute("INSERT INTO t (rowid, text) SELECT CAST(key AS INTEGER), value"
                             " FROM json_each(?)", (json.dumps(prepared, ensure_ascii=False),))
                conn.execute("COMMIT")
            build = time.perf_counter() - start
            size = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 't%'").fetchone()[0]
            cells = [design, f"{build:.1f}", f"{size / 1e6:.1f}"]
            for n in (2, 3, 4):
                took, found, hit, want = [], 0, 0, 0
                for q in queries[n]:
                    t0 = time.perf_counter()
                    lookup(conn, design, q, 1_001)
                    took.append(time.perf_counter() - t0)
                    got = set(lookup(conn, design, q, -1))
                    found += len(got)
                    hit += len(got & truth[q])
                    want += len(truth[q])
                took.sort()
                p50, p95 = took[len(took) // 2] * 1000, took[int(len(took) * 0.95)] * 1000
                cells += [f"{p50:.2f} / {p95:.2f}",
                          f"{hit / max(want, 1):.3f} / {hit / max(found, 1):.3f}"]
            rows.append(cells)
            conn.close()
    table(f"CJK indexing designs on {args.events:,} synthetic events (20% Chinese), "
          f"{args.queries} substrings per length; latency ms p50 / p95; "
          "substring recall / precision",
          ["design", "build s", "index MB", "2 chars ms", "2 chars R / P", "3 chars ms",
           "3 chars R / P", "4 chars ms", "4 chars R / P"], rows)


if __name__ == "__main__":
    main()
