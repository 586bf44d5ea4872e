"""Why CJK bigrams: three ways to index Chinese for FTS5, measured on the same synthetic events.

    python bench/recall_designs.py [--events 100000] [--queries 40]

1. bigram (chosen): store/recall_index.py analyze(): CJK runs become overlapping bigrams plus the
   run's last character, unicode61, detail=none. 2 chars = one token; longer = all its bigrams.
2. trigram: FTS5's trigram tokenizer over the raw text (padded with two newlines so every
   character starts a trigram). 3+ chars = a phrase; 2 chars = the trigrams it starts, listed
   with fts5vocab (a walk over their postings), OR-ed.
3. jieba: CJK runs segmented with jieba.cut_for_search at index time; a query is the AND of its
   jieba tokens.
For each: build time and index size for the events, lookup latency of CJK substrings of 2 and
3-4 characters (rowids of the newest 1,001 matches, what recall's stage 1 reads), and substring
recall/precision: of the events that contain the query string, how many the lookup returns.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault.store.recall_index import CJK_RUN, analyze  # noqa: E402
from recall import DATA, Synth, source_texts, table  # noqa: E402


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", default=str(DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--memorybank", default=str(DATA / "memorybank"))
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40, help="queries per length")
    args = parser.parse_args()
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
