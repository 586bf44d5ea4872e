"""Recall benchmark: what memory_find finds, what its index costs, how fast it answers at scale.

    python bench/recall.py                       # everything, default sizes (several minutes)
    python bench/recall.py --skip scale,ingest   # only the recall tables (about a minute)
    python bench/recall.py --skip locomo,ingest,scale,memorybank-cn   # English MemoryBank only
    python bench/recall.py --events 200000 --objects 2000
    python bench/recall.py --skip scale,ingest --noisy   # each question after chit-chat

Sections (data by path, never copied into the project):
1. locomo: each LoCoMo conversation's turns become events ("speaker: text") in a fresh memory;
   for every question with evidence, recall@5/10/20 of the evidence turns through memory_find
   over raw events, per category, beside rank-bm25 (BM25Okapi, lowercase [a-z0-9]+ tokens) over
   the same turns in the same run.
2. memorybank: the Chinese and the English MemoryBank histories (each query and response an
   event, one memory per user, and all users of both languages pooled in one memory, so each
   language's questions meet the other's turns as distractors); per hand-labelled probing
   question (bench/recall_labels_memorybank.json, bench/recall_labels_memorybank_en.json), the
   rank of a labelled turn in memory_find's top 10, beside BM25Okapi over CJK character bigrams
   (Chinese) or the LoCoMo baseline's English tokens (English). The English probes were
   labelled before any measurement and no rule is tuned to them.
3. ingest: the cost of the index on ingesting events, against a bare executemany, and the
   rejected design (a per-row FTS5 trigger) for comparison.
4. scale: p50/p95 latency of memory_find with N events (synthetic: real LoCoMo/MemoryBank turns
   with a Zipf-distributed share of their words replaced) and M objects, per query kind.
   Its query kinds include chatty questions: a question after 60-150 chars of small talk.
With --noisy, sections 1 and 2 ask every question after a chit-chat prefix of 60-150 chars in
its language (bench/noisy_questions.py; the same prefix for a question on every run), and count
the questions that then find nothing where the bare question finds something.
Timings are wall-clock on this machine; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # noisy_questions, when loaded by path

from memvault.home.migrations import open_home_db  # noqa: E402
from memvault.objects.records import ObjectRecord, add_relation, save_object  # noqa: E402
from memvault.recall.dates import date_windows  # noqa: E402
from memvault.recall.index import CJK_RUN, sync_index  # noqa: E402
from memvault.recall.query import memory_find  # noqa: E402
from memvault.store.connection import write  # noqa: E402
from memvault.timeline.events import insert_events  # noqa: E402
from noisy_questions import noisy  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data from the project root; from a git worktree (../wt/NAME), the first ancestor
# folder that holds shared/data
DATA = next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()),
            ROOT.parent / "shared" / "data")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 20)
NOISY = {"on": False, "empty": 0, "asked": 0}  # --noisy: questions after chit-chat (issue 36)
_WORDS = re.compile(r"[a-z0-9]+")


def event_row(text: str, when: datetime, source: str = "user", meta: dict | None = None) -> tuple:
    """A row as events.validate_event returns it (the bench builds its own valid rows)."""
    micros = int(when.timestamp() * 1_000_000)
    return (when.isoformat(), micros, NOW.isoformat(), source, "message",
            json.dumps(meta, ensure_ascii=False) if meta else None, text)


def fresh_db(folder: str, name: str) -> sqlite3.Connection:
    return open_home_db(Path(folder) / name / "memory.db")


def ingest(conn: sqlite3.Connection, rows: list[tuple], batch: int = 10_000) -> list[int]:
    ids: list[int] = []
    for start in range(0, len(rows), batch):
        with write(conn):
            ids += insert_events(conn, rows[start : start + batch], NOW)
    with write(conn):
        sync_index(conn)
    return ids


def table(title: str, header: list[str], rows: Iterable[list[Any]]) -> None:
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


# -- 1. LoCoMo --------------------------------------------------------------------------------

def locomo_turns(conv: dict) -> list[tuple[str, str, datetime]]:
    c = conv["conversation"]
    out = []
    for key, turns in c.items():
        if not (key.startswith("session_") and isinstance(turns, list)):
            continue
        when = _locomo_date(c.get(f"{key}_date_time", ""))
        for i, t in enumerate(turns):
            out.append((t["dia_id"], f"{t['speaker']}: {t['text']}", when + timedelta(seconds=i)))
    return out


def _locomo_date(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return NOW


TUNE_CONVERSATIONS = 3  # LoCoMo conversations 0-2 tune, the rest validate (never tune on them)
Recall = dict[tuple[str, int], dict[int, list[float]]]


def split_name(tuning: bool) -> str:
    """The split a conversation or user belongs to, as the tables name it."""
    return "tuning" if tuning else "validation"


def bench_locomo(path: Path, folder: str, per_conv: int = 0) -> None:
    splits, took = locomo_recall(path, folder, per_conv)
    for name, recall in sorted(splits.items(), key=lambda kv: kv[0] != "tuning"):
        _locomo_table(f"{path.name}, {name} split", recall, took)


def locomo_recall(path: Path, folder: str, per_conv: int = 0) -> tuple[dict[str, Recall],
                                                                       list[float]]:
    """Recall per split, (ranker, k) and category, beside BM25; and find's timings."""
    data = json.loads(path.read_text(encoding="utf-8"))
    splits: dict[str, Recall] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    took: list[float] = []
    for n, conv in enumerate(data):
        recall = splits[split_name(n < TUNE_CONVERSATIONS)]
        turns = locomo_turns(conv)
        conn = fresh_db(folder, f"locomo{n}")
        ids = ingest(conn, [event_row(t, w, meta={"dia_id": d}) for d, t, w in turns])
        dia_of = {i: d for i, (d, _, _) in zip(ids, turns, strict=True)}
        dias = [d for d, _, _ in turns]
        bm25 = BM25Okapi([_WORDS.findall(t.lower()) for _, t, _ in turns])
        for qa in conv["qa"][: per_conv or None]:
            evidence = {e for e in qa.get("evidence", []) if e in dia_of.values()}
            if not evidence:
                continue
            question = ask(qa["question"])
            scores = bm25.get_scores(_WORDS.findall(question.lower()))
            base = [dias[i] for i in sorted(range(len(dias)), key=lambda i: -scores[i])[:20]]
            start = time.perf_counter()
            hits = memory_find(conn, question, types=["event"], limit=20)["hits"]
            took.append(time.perf_counter() - start)
            count_empty(conn, qa["question"], hits)
            mine = [dia_of[h["id"]] for h in hits]
            for k in KS:
                for name, ranked in (("bm25", base), ("find", mine)):
                    found = len(evidence & set(ranked[:k])) / len(evidence)
                    recall[(name, k)][qa["category"]].append(found)
        conn.close()
    return splits, took


def ask(question: str) -> str:
    """The question as asked: after a chit-chat prefix with --noisy (bench/noisy_questions.py)."""
    return noisy(question) if NOISY["on"] else question


def count_empty(conn: sqlite3.Connection, question: str, hits: list) -> None:
    """With --noisy, count the chatty questions that found nothing where the bare one finds."""
    if NOISY["on"]:
        NOISY["asked"] += 1
        if not hits and memory_find(conn, question, types=["event"], limit=1)["hits"]:
            NOISY["empty"] += 1


def _locomo_table(title: str, recall: Recall, took: list[float]) -> None:
    rows = []
    for k in KS:
        for name in ("bm25", "find"):
            per = recall[(name, k)]
            cells = [f"{_mean(per[c]):.3f}" for c in CATEGORIES]
            every = [x for c in CATEGORIES for x in per[c]]
            rows.append([f"{name} @{k}", *cells, f"{_mean(every):.3f}"])
        ratio = [_mean(recall[("find", k)][c]) / max(1e-9, _mean(
            recall[("bm25", k)][c])) for c in CATEGORIES]
        rows.append([f"ratio @{k}", *(f"{r:.2f}x" for r in ratio), ""])
        delta = [_mean(recall[("find", k)][c]) - _mean(recall[("bm25", k)][c])
                 for c in CATEGORIES]
        both = [_mean([x for c in CATEGORIES for x in recall[(n, k)][c]])
                for n in ("find", "bm25")]
        rows.append([f"find-bm25 @{k}", *(f"{d:+.3f}" for d in delta),
                     f"{both[0] - both[1]:+.3f}"])
    counts = [str(len(recall[("find", 5)][c])) for c in CATEGORIES]
    table(f"LoCoMo evidence recall ({title}, {sum(map(int, counts))} questions; "
          f"memory_find p50 {_ms(took, 50)} ms, p95 {_ms(took, 95)} ms at ~600 events)",
          ["", *(f"{CATEGORIES[c]} ({n})" for c, n in zip(CATEGORIES, counts, strict=True)),
           "all"], rows)


def _mean(values: list[float]) -> float:
    """The mean, NaN for no values (a --questions subset can leave a category empty)."""
    return statistics.mean(values) if values else float("nan")


def _ms(values: list[float], pct: int) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))] * 1000:.1f}"


# -- 2. MemoryBank ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Bank:
    """One language of MemoryBank: its histories, the hand labels of its probing questions, and
    how its BM25 baseline cuts text. The pooled memory holds both languages' users, so each
    language's questions meet the other's turns as distractors."""

    code: str  # "cn" or "en", as the data files name the language
    language: str
    tokens: Callable[[str], list[str]]
    shown: int  # characters of a question the rank table shows

    def history_file(self) -> str:
        return f"memory_bank_{self.code}-dev.json"


def english_tokens(text: str) -> list[str]:
    """The LoCoMo baseline's tokens: lowercase [a-z0-9]+ words."""
    return _WORDS.findall(text.lower())


def cjk_bigram_tokens(text: str) -> list[str]:
    text = text.lower()
    out = _WORDS.findall(text)
    for run in CJK_RUN.findall(text):
        out += [run[i : i + 2] for i in range(len(run) - 1)] or [run]
    return out


BANKS = {"cn": Bank("cn", "Chinese", cjk_bigram_tokens, 34),
         "en": Bank("en", "English", english_tokens, 44)}
LABELS = {"cn": ROOT / "bench" / "recall_labels_memorybank.json",
          "en": ROOT / "bench" / "recall_labels_memorybank_en.json"}


def memorybank_rows(history: dict, user: str) -> tuple[list[tuple], list[str]]:
    rows, turn_of = [], []
    for date, turns in history.items():
        day = datetime.fromisoformat(date).replace(hour=20, tzinfo=timezone(timedelta(hours=8)))
        for i, t in enumerate(turns):
            for j, (role, source) in enumerate((("query", "user"), ("response", "agent"))):
                when = day + timedelta(minutes=2 * i + j)
                rows.append(event_row(t[role], when, source, {"user": user, "turn": f"{date}#{i}"}))
                turn_of.append(f"{user}/{date}#{i}")
    return rows, turn_of


def memorybank_histories(folder_data: Path, bank: Bank) -> dict[str, dict]:
    """Each user's history (date -> turns) of one language; the English file pads some names
    with spaces (' Jason '), which the labels do not."""
    data = json.loads((folder_data / bank.history_file()).read_text(encoding="utf-8"))
    return {user.strip(): record["history"] for user, record in data.items()}


def load_labels(path: Path, histories: dict[str, dict]) -> dict[str, list[dict]]:
    """The hand labels of `path` (per user, in history order), checked against the histories
    they label: every user has a history, every turn is a 'DATE#INDEX' that user's history
    holds, and a question names turns unless it is marked none (no answer in the history).
    A bad label raises ValueError naming it: a typo would otherwise count as a miss no ranker
    could fix."""
    labels = json.loads(path.read_text(encoding="utf-8"))["users"]
    for user, questions in labels.items():
        if user not in histories:
            raise ValueError(f"{path.name}: user {user!r} has no history")
        for q in questions:
            where = f"{path.name}: {user} q{q.get('q')}"
            if bool(q.get("none")) == bool(q["turns"]):
                raise ValueError(f"{where}: give turns, or none for a question with no answer")
            for turn in q["turns"]:
                date, _, index = turn.partition("#")
                day = histories[user].get(date)
                if day is None or not index.isdigit() or int(index) >= len(day):
                    raise ValueError(f"{where}: turn {turn!r} is not in the history")
    return labels


def bench_memorybank(folder_data: Path, labels_path: Path, folder: str,
                     bank: Bank = BANKS["cn"]) -> None:
    splits, out, pooled = memorybank_recall(folder_data, labels_path, folder, bank)
    table(f"MemoryBank ({bank.language}) probing questions: rank of the labelled turn in the "
          "top 10 ('-' = not in the top 10; * = names only a date or 'the first talk'; "
          "questions with no answer in the history are left out)",
          ["user", "q", "question", "find", "bm25", "find pooled", "bm25 pooled"], out)
    for split, totals in sorted(splits.items(), key=lambda kv: kv[0] != "tuning"):
        _memorybank_summary(bank, split, totals, pooled)


def _pooled_memory(folder_data: Path, bank: Bank, folder: str
                   ) -> tuple[sqlite3.Connection, dict[int, str], BM25Okapi, list[str]]:
    """Every user of both languages in one memory (Chinese first, in file order); turns of the
    other language are named 'CODE:user/...' so they never match a label. BM25 over it cuts
    CJK bigrams, which on English text are exactly the English tokens."""
    rows, turns = [], []
    for other in BANKS.values():
        prefix = "" if other == bank else f"{other.code}:"
        for user, history in memorybank_histories(folder_data, other).items():
            user_rows, user_turns = memorybank_rows(history, prefix + user)
            rows += user_rows
            turns += user_turns
    conn = fresh_db(folder, f"memorybank-{bank.code}-pooled")
    turn_of = dict(zip(ingest(conn, rows), turns, strict=True))
    return conn, turn_of, BM25Okapi([cjk_bigram_tokens(r[-1]) for r in rows]), turns


def memorybank_recall(
    folder_data: Path, labels_path: Path, folder: str, bank: Bank = BANKS["cn"],
) -> tuple[dict[str, dict[str, int]], list[list[Any]], int]:
    """Hits @3/@10 per split and ranker, the rank of each question's turn per ranker, and the
    size of the pooled memory. Questions labelled none are left out of both."""
    histories = memorybank_histories(folder_data, bank)
    labels = load_labels(labels_path, histories)
    pooled, pooled_turn, pooled_bm25, pooled_turns = _pooled_memory(folder_data, bank, folder)
    out: list[list[Any]] = []
    splits: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for number, (user, questions) in enumerate(labels.items()):
        # the first half of the labelled users tunes, the second half validates
        totals = splits[split_name(number < len(labels) // 2)]
        questions = [q for q in questions if not q.get("none")]
        totals["questions"] += len(questions)
        totals["lexical"] += sum(1 for q in questions if not q.get("time_only"))
        rows, turns = memorybank_rows(histories[user], user)
        conn = fresh_db(folder, f"memorybank-{bank.code}-{number}")
        turn_of = dict(zip(ingest(conn, rows), turns, strict=True))
        bm25 = BM25Okapi([bank.tokens(r[-1]) for r in rows])
        for q in questions:
            want = {f"{user}/{t}" for t in q["turns"]}
            question = ask(q["question"])
            answer = memory_find(conn, question, types=["event"], limit=10)
            count_empty(conn, q["question"], answer["hits"])
            mine = _rank_turns(answer, turn_of)
            base = _bm25_turns(bm25, bank.tokens(question), turns)
            answer = memory_find(pooled, question, types=["event"], limit=10)
            count_empty(pooled, q["question"], answer["hits"])
            pool = _rank_turns(answer, pooled_turn)
            pool_base = _bm25_turns(pooled_bm25, cjk_bigram_tokens(question), pooled_turns)
            marks = [_rank_of(want, r) for r in (mine, base, pool, pool_base)]
            for name, rank in zip(("find", "bm25", "find pooled", "bm25 pooled"), marks,
                                  strict=True):
                for k in (3, 10):
                    hit = rank is not None and rank <= k
                    totals[f"{name} @{k}"] += hit
                    if not q.get("time_only"):
                        totals[f"{name} @{k} (lexical)"] += hit
            out.append([user, q["q"],
                        q["question"][: bank.shown] + ("*" if q.get("time_only") else ""),
                        *(r if r is not None else "-" for r in marks)])
        conn.close()
    pooled.close()
    return splits, out, len(pooled_turn)


def _memorybank_summary(bank: Bank, split: str, totals: dict[str, int], pooled: int) -> None:
    n, lexical = totals["questions"], totals["lexical"]
    summary = [[name, *(f"{totals[f'{name} @{k}']}/{n} = {totals[f'{name} @{k}'] / n:.3f}"
                        for k in (3, 10)),
                *(f"{totals[f'{name} @{k} (lexical)']}/{lexical} = "
                  f"{totals[f'{name} @{k} (lexical)'] / lexical:.3f}" for k in (3, 10))]
               for name in ("find", "bm25", "find pooled", "bm25 pooled")]
    table(f"MemoryBank ({bank.language}) recall@3 and @10 of the labelled turn, {split} split "
          f"(per user memory ~90 events; pooled ~{pooled} events, Chinese and English users "
          "together)",
          ["", "@3 all questions", "@10 all questions", "@3 without time-only",
           "@10 without time-only"], summary)


def _rank_turns(answer: dict, turn_of: dict[int, str]) -> list[str]:
    seen: list[str] = []
    for hit in answer["hits"]:
        turn = turn_of[hit["id"]]
        if turn not in seen:
            seen.append(turn)
    return seen


def _bm25_turns(bm25: BM25Okapi, tokens: list[str], turns: list[str]) -> list[str]:
    scores = bm25.get_scores(tokens)
    seen: list[str] = []
    for i in sorted(range(len(turns)), key=lambda i: -scores[i])[:10]:
        if turns[i] not in seen:
            seen.append(turns[i])
    return seen


def _rank_of(want: set[str], ranked: list[str]) -> int | None:
    for rank, turn in enumerate(ranked[:10], 1):
        if turn in want:
            return rank
    return None


# -- synthetic corpus (ingest and scale) ------------------------------------------------------

def source_texts(locomo: Path, memorybank: Path) -> tuple[list[str], list[str]]:
    en: list[str] = []
    for conv in json.loads(locomo.read_text(encoding="utf-8")):
        en += [t for _, t, _ in locomo_turns(conv)]
    cn: list[str] = []
    for name, bucket in (("memory_bank_cn-dev.json", cn), ("memory_bank_en-dev.json", en)):
        for record in json.loads((memorybank / name).read_text(encoding="utf-8")).values():
            for turns in record["history"].values():
                for t in turns:
                    bucket += [t["query"], t["response"]]
    return en, cn


class Synth:
    """Events like the real turns, with ~30% of English words (4+ letters) and ~15% of Chinese
    characters replaced by Zipf-distributed ones, so the vocabulary grows like years of use."""

    def __init__(self, en: list[str], cn: list[str], cjk_share: float, seed: int = 7) -> None:
        self.rnd = random.Random(seed)
        self.en, self.cn, self.cjk_share = en, cn, cjk_share
        syl = ["ka", "lo", "mi", "ren", "tas", "vo", "zu", "pel", "dri", "an", "shi", "qua",
               "bel", "nor", "tix", "gam", "sor", "lin", "wu", "yel"]
        self.vocab = ["".join(self.rnd.choice(syl) for _ in range(self.rnd.randint(2, 4)))
                      for _ in range(300_000)]
        self.chars = sorted({ch for t in cn for ch in t if CJK_RUN.match(ch)})
        self.word = re.compile(r"[A-Za-z]{4,}")

    def _zipf(self, items: list[str]) -> str:
        return items[int(len(items) ** self.rnd.random()) - 1]

    def text(self) -> str:
        rnd = self.rnd
        if rnd.random() < self.cjk_share:
            t = rnd.choice(self.cn)
            return "".join(self._zipf(self.chars) if CJK_RUN.match(ch) and rnd.random() < 0.15
                           else ch for ch in t)
        t = rnd.choice(self.en)
        return self.word.sub(
            lambda m: self._zipf(self.vocab) if rnd.random() < 0.3 else m.group(0), t)

    def rows(self, n: int) -> list[tuple]:
        start = NOW - timedelta(days=3 * 365)
        step = timedelta(days=3 * 365) / max(n, 1)
        return [event_row(self.text(), start + step * i) for i in range(n)]


# -- 3. ingest cost ---------------------------------------------------------------------------

def bench_ingest(synth: Synth, n: int, folder: str, batch: int = 1_000) -> None:
    rows = synth.rows(n)
    cols = ("occurred_at, occurred_us, ingested_at, source, kind, meta, text, chars, est_tokens")
    bare_rows = [(*r, len(r[-1]), len(r[-1]) // 4) for r in rows]
    sql = f"INSERT INTO events ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"

    def run(name: str, setup: Callable[[sqlite3.Connection], None],
            after_batch: Callable[[sqlite3.Connection], None] | None = None,
            at_end: Callable[[sqlite3.Connection], None] | None = None) -> tuple[float, float]:
        conn = fresh_db(folder, f"ingest-{name}")
        setup(conn)
        start = time.perf_counter()
        for i in range(0, n, batch):
            with write(conn):
                conn.executemany(sql, bare_rows[i : i + batch])
                if after_batch:
                    after_batch(conn)
        mid = time.perf_counter()
        if at_end:
            with write(conn):
                at_end(conn)
        end = time.perf_counter()
        conn.close()
        return mid - start, end - start

    def trigger(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE VIRTUAL TABLE t_fts USING fts5 (text, content='')")
        conn.execute("CREATE TRIGGER t_fts_ai AFTER INSERT ON events BEGIN INSERT INTO t_fts"
                     " (rowid, text) VALUES (new.id, new.text); END")

    def nothing(conn: sqlite3.Connection) -> None:
        return None

    def sync(conn: sqlite3.Connection) -> None:
        sync_index(conn)

    results = [("bare executemany (m002 present: no trigger on events)",
                run("bare", nothing)[1])]
    results.append(("  + sync_index after every batch (index always current)",
                    run("sync-batch", nothing, after_batch=sync)[1]))
    ingest_only, total = run("sync-end", nothing, at_end=sync)
    results.append(("  + one sync_index at the end (bulk catch-up), total", total))
    results.append(("rejected: per-row FTS5 trigger on events (unicode61, no CJK analysis)",
                    run("trigger", trigger)[1]))
    base = results[0][1]
    table(f"Ingest cost of the index: {n:,} synthetic events, {batch:,} per transaction",
          ["variant", "seconds", "events/s", "vs bare"],
          [[name, f"{sec:.2f}", f"{n / sec:,.0f}", f"{base / sec:.0%}"]
           for name, sec in results])
    print(f"bulk catch-up alone: {total - ingest_only:.2f} s = "
          f"{n / max(total - ingest_only, 1e-9):,.0f} events/s indexed")


# -- 4. scale ---------------------------------------------------------------------------------

def build_scale(path: Path, synth: Synth, n_events: int, n_objects: int) -> dict[str, float]:
    conn = open_home_db(path)
    have = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    timings: dict[str, float] = {}
    start = time.perf_counter()
    for i in range(have, n_events, 20_000):
        with write(conn):
            insert_events(conn, synth.rows(min(20_000, n_events - i)), NOW)
    timings["ingest events"] = time.perf_counter() - start
    if conn.execute("SELECT count(*) FROM objects").fetchone()[0] < n_objects:
        start = time.perf_counter()
        make_objects(conn, synth, n_objects)
        timings["write objects"] = time.perf_counter() - start
    start = time.perf_counter()
    with write(conn):
        done = sync_index(conn)
    timings[f"sync_index ({done['events']:,} events, {done['objects']:,} objects)"] = (
        time.perf_counter() - start)
    conn.close()
    return timings


SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏"
    "吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严"
)


def make_objects(conn: sqlite3.Connection, synth: Synth, n: int) -> None:
    rnd = random.Random(11)
    given = synth.chars[:600]
    kinds = ["person"] * 30 + ["knowledge"] * 30 + ["todo"] * 15 + ["task"] * 10 + [
        "schedule"] * 5 + ["project"] * 2
    projects: list[str] = []
    with write(conn):
        for i in range(n):
            kind = rnd.choice(kinds)
            if kind == "person":
                name = rnd.choice(SURNAMES) + "".join(rnd.choice(given)
                                                      for _ in range(rnd.randint(1, 2)))
                aliases = [rnd.choice(synth.vocab[:5000]).capitalize()]
            else:
                name = synth.text()[:60].strip() or f"item {i}"
                aliases = []
            body = " ".join(synth.text() for _ in range(rnd.randint(2, 12)))[:16_000]
            obj = ObjectRecord(
                id=f"{kind}:o{i}", type=kind, name=name, aliases=aliases,
                summary=synth.text()[:400], body=body,
                cues=[synth.text()[:40] for _ in range(rnd.randint(0, 3))])
            save_object(conn, obj, NOW)
            if kind == "project":
                projects.append(obj.id)
            elif projects and rnd.random() < 0.7:
                add_relation(conn, obj.id, "member_of", rnd.choice(projects), NOW)


def scale_queries(locomo: Path, memorybank: Path, synth: Synth, per_kind: int) -> dict:
    rnd = random.Random(5)
    questions = [qa["question"] for conv in json.loads(locomo.read_text(encoding="utf-8"))
                 for qa in conv["qa"]]
    probing: dict[str, list[str]] = {"cn": [], "en": []}
    for lang in probing:
        for line in (memorybank / f"probing_questions_{lang}-dev.jsonl").read_text(
                encoding="utf-8").splitlines():
            for qs in json.loads(line).values():
                probing[lang] += qs
    runs = [r for t in synth.cn for r in CJK_RUN.findall(t)]
    pick = [r for r in runs if len(r) >= 4]

    def cut(n: int) -> list[str]:
        out: list[str] = []
        while len(out) < per_kind:
            r = rnd.choice(pick)
            start = rnd.randrange(len(r) - n + 1)
            out.append(r[start : start + n])
        return out

    names = [t.split(":")[0] for t in synth.en[:3000]]
    dated = [q for q in questions + probing["cn"] if date_windows(q)]
    return {
        "LoCoMo question (en)": rnd.sample(questions, per_kind),
        "MemoryBank question (zh)": probing["cn"][:per_kind],
        "MemoryBank question (en)": probing["en"][:per_kind],
        "question naming a date": rnd.sample(dated, min(per_kind, len(dated))),
        "CJK 2 chars": cut(2), "CJK 3 chars": cut(3), "CJK 4 chars": cut(4),
        "English name": [rnd.choice(names) for _ in range(per_kind)],
        "English prefix (4)": [rnd.choice(names)[:4] for _ in range(per_kind)],
        "mixed zh+en": [f"{rnd.choice(names)} {c}" for c in cut(2)],
        "chatty question (en)": [noisy(q) for q in rnd.sample(questions, per_kind)],
        "chatty question (zh)": [noisy(q) for q in probing["cn"][-per_kind:]],
    }


def bench_scale(args: argparse.Namespace, synth: Synth, folder: str) -> None:
    path = Path(args.db) if args.db else Path(folder) / "scale" / "memory.db"
    start = time.perf_counter()
    timings = build_scale(path, synth, args.events, args.objects)
    build = time.perf_counter() - start
    conn = open_home_db(path, readonly=True)
    sizes = {r[0]: r[1] for r in conn.execute(
        "SELECT CASE WHEN name LIKE 'recall_events_fts%' THEN 'events index'"
        " WHEN name LIKE 'recall_objects_fts%' OR name LIKE 'recall_%' THEN 'objects index'"
        " ELSE 'rest' END, sum(pgsize) FROM dbstat GROUP BY 1")}
    counts = conn.execute("SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM objects)"
                          ).fetchone()
    print(f"\nscale memory: {counts[0]:,} events, {counts[1]:,} objects, built in {build:.0f} s ("
          + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()) + "); size: "
          + ", ".join(f"{k} {v / 1e6:.0f} MB" for k, v in sorted(sizes.items())))
    kinds = scale_queries(Path(args.locomo), Path(args.memorybank), synth, args.queries)
    for query in [q for qs in kinds.values() for q in qs][:50]:  # warm the page cache
        memory_find(conn, query)
    rows, every, every_cpu = [], [], []
    for kind, queries in kinds.items():
        took, cpu, hits = [], [], 0
        for query in queries:
            start, start_cpu = time.perf_counter(), time.process_time()
            answer = memory_find(conn, query)
            took.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            hits += bool(answer["hits"])
        every += took
        every_cpu += cpu
        rows.append([kind, len(queries), f"{hits}/{len(queries)}", _ms(took, 50), _ms(took, 95),
                     f"{max(took) * 1000:.1f}", _ms(cpu, 50), _ms(cpu, 95)])
    rows.append(["all", len(every), "", _ms(every, 50), _ms(every, 95),
                 f"{max(every) * 1000:.1f}", _ms(every_cpu, 50), _ms(every_cpu, 95)])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    table(f"memory_find latency (ms) at {counts[0]:,} events and {counts[1]:,} objects, "
          f"limit 20, objects and events ({os.cpu_count()} CPUs, load average {load:.1f})",
          ["query kind", "n", "answered", "wall p50", "wall p95", "wall max", "cpu p50",
           "cpu p95"], rows)
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", default=str(DATA / "locomo" / "locomo-dev.json"))
    parser.add_argument("--memorybank", default=str(DATA / "memorybank"))
    parser.add_argument("--labels", default=str(LABELS["cn"]), help="Chinese MemoryBank labels")
    parser.add_argument("--labels-en", default=str(LABELS["en"]),
                        help="English MemoryBank labels")
    parser.add_argument("--events", type=int, default=1_000_000, help="scale: events")
    parser.add_argument("--objects", type=int, default=10_000, help="scale: objects")
    parser.add_argument("--queries", type=int, default=40, help="scale: queries per kind")
    parser.add_argument("--cjk-share", type=float, default=0.2,
                        help="scale/ingest: share of Chinese events")
    parser.add_argument("--ingest", type=int, default=100_000, help="ingest: events")
    parser.add_argument("--db", default=None, help="scale: build/reuse this database file")
    parser.add_argument("--skip", default="",
                        help="comma list of: locomo, memorybank (both languages), memorybank-cn,"
                             " memorybank-en, ingest, scale")
    parser.add_argument("--questions", type=int, default=0,
                        help="locomo: only the first N questions of each conversation (0: all;"
                             " for quick iteration, never for reported numbers)")
    parser.add_argument("--noisy", action="store_true",
                        help="locomo, memorybank: ask each question after 60-150 chars of"
                             " chit-chat in its language (bench/noisy_questions.py)")
    parser.add_argument("--feedback", action="store_true",
                        help="measure find with pseudo-relevance feedback (tried, not"
                             " adopted: bench/recall_feedback.py)")
    args = parser.parse_args()
    if args.feedback:
        from recall_feedback import ON

        for target, name, value in ON:
            setattr(target, name, value)
    skip = set(filter(None, args.skip.split(",")))
    NOISY["on"] = args.noisy
    with tempfile.TemporaryDirectory(prefix="memvault-recall-") as folder:
        if "locomo" not in skip:
            bench_locomo(Path(args.locomo), folder, args.questions)
        for code, labels in (("cn", args.labels), ("en", args.labels_en)):
            if not skip & {"memorybank", f"memorybank-{code}"}:
                bench_memorybank(Path(args.memorybank), Path(labels), folder, BANKS[code])
        if args.noisy:
            print(f"\nnoisy questions: {NOISY['empty']} of {NOISY['asked']} found nothing where"
                  " the bare question finds something")
        if skip >= {"ingest", "scale"}:
            return
        en, cn = source_texts(Path(args.locomo), Path(args.memorybank))
        if "ingest" not in skip:
            bench_ingest(Synth(en, cn, args.cjk_share), args.ingest, folder)
        if "scale" not in skip:
            bench_scale(args, Synth(en, cn, args.cjk_share, seed=3), folder)


if __name__ == "__main__":
    main()
