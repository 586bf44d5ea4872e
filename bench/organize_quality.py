"""Organize quality on real conversations: what compact -> organize -> deep keeps, scored by LoCoMo.

    python bench/organize_quality.py                       # builtin model, every conversation
    python bench/organize_quality.py --conversations 1     # the first conversation only
    python bench/organize_quality.py --model openai:NAME --base-url http://127.0.0.1:8080/v1 \
        --turns 40                                         # any OpenAI-compatible endpoint

Each LoCoMo conversation (../shared/data/locomo/locomo-dev.json, by path, never copied) goes
into a fresh temporary home: every turn is one event, its text "Speaker: what they said", its
`occurred_at` the session's date (plus one second per turn, to keep the order), its meta
{"speaker", "dia_id", "session"}. Then compact, organize and deep run to the end with the chosen
model, and the result is scored against LoCoMo's own annotations:

(a) coverage: share of observation turns (the turns LoCoMo's `observation` cites as stating a
    fact about a speaker) that end `linked` as evidence of some object;
(b) attribution: share of observation turns whose evidence object is the speaker's person object
    (a person named exactly like the speaker) or an object related to it (either direction);
(c) recall: for QA items with evidence, share whose evidence turn is cited by an object among
    memory_find's top 5 objects for the question;
(d) archive: archive_only share of the non-observation turns; objects per 100 turns; names held
    by more than one live object (duplicates by exact name);
(e) fact recall, line precision and size against the observation facts themselves
    (fact_quality.py says how); with --sizes, where the object characters go, by object type,
    field and duplication (organize_size.py), per split; --homes DIR keeps the memory homes.
Conversations 0-2 are the tuning set, 3-4 the validation set: each gets a pooled row, so a rule
that only fits the tuning conversations shows.
The model-usage ledger (calls, outcomes, tokens) is printed per mode, and the CPU seconds of
the engine (this process) beside those of the model server (`--server-pid`, else the process
listening on --base-url's local port; bench/server_cpu.py), so a slow run says whose time it is.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fact_quality import fact_scores, observation_facts, pooled  # noqa: E402
from memvault import Memory  # noqa: E402
from memvault.recall.query import memory_find  # noqa: E402
from memvault.timeline.events import NewEvent  # noqa: E402
from organize_size import merged, print_breakdown, size_breakdown  # noqa: E402
from server_cpu import ServerCpu, listening_pid  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
METRICS = ("coverage", "attribution", "recall", "archive", "obj/100", "dups", "fact_recall",
           "line_precision", "size")
HEADS = {"fact_recall": "fact_rec", "line_precision": "line_prec"}
TUNING = 3  # conversations [0, TUNING) tune the rules; the rest validate them


def session_date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as a naive datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def conversation_events(sample: dict[str, Any], limit: int | None = None) -> list[NewEvent]:
    """Every turn of one conversation as an event, in order (at most `limit`)."""
    conv = sample["conversation"]
    out: list[NewEvent] = []
    sessions = sorted(int(k.split("_")[1]) for k in conv
                       if k.startswith("session_") and k.count("_") == 1)
    for number in sessions:
        when = session_date(conv[f"session_{number}_date_time"])
        for offset, turn in enumerate(conv[f"session_{number}"]):
            meta = {"speaker": turn["speaker"], "dia_id": turn["dia_id"], "session": number}
            stamp = (when + timedelta(seconds=offset)).isoformat() + "Z"
            out.append(NewEvent(f"{turn['speaker']}: {turn['text']}", stamp, "user", "message",
                                meta))
    return out[:limit] if limit else out


def write_config(home: Path, model: str, base_url: str | None,
                 extra: str = "") -> None:
    """memvault.toml for the chosen provider (builtin needs none); `extra` adds [model] keys
    (a small local server needs its context, output cap and tool mode said)."""
    home.mkdir(parents=True, exist_ok=True)
    if not model.startswith("openai:"):
        return
    name = model.split(":", 1)[1]
    (home / "memvault.toml").write_text(
        f'[model]\nprovider = "openai"\nname = "{name}"\nbase_url = "{base_url or ""}"\n'
        f"{extra}[worker]\nbackoff_s = 0.0\nmax_failed_claims = 2\n", encoding="utf-8")


def model_settings(args: argparse.Namespace) -> str:
    """The [model] lines that --context-tokens, --max-output-tokens and --tool-mode ask for."""
    lines = []
    if args.context_tokens:
        lines.append(f"context_tokens = {args.context_tokens}")
    if args.max_output_tokens:
        lines += [f"max_output_tokens = {args.max_output_tokens}",
                  f"max_output_tokens_cap = {max(args.max_output_tokens, 2_048)}"]
    if args.tool_mode:
        lines += [f'tool_mode = "{args.tool_mode}"', 'schema_format = "json_object"']
    return "".join(line + "\n" for line in lines)


def run_jobs(mem: Memory, minutes: float, compact_with: str | None = None
             ) -> tuple[float, list[str]]:
    """compact, organize, deep, each to its end (or until `minutes` pass): seconds taken and
    each job's final state ("organize: done"). `compact_with` names another provider for the
    compaction alone (what is measured is organize; a tiny model may never finish compacting)."""
    worker = mem.worker(scheduler=False)  # each job on the provider it was queued with
    began = time.perf_counter()
    deadline = time.monotonic() + minutes * 60
    states: list[str] = []
    for mode, request in (("compact", lambda: mem.compact(model=compact_with)),
                          ("organize", mem.organize), ("deep", lambda: mem.organize("deep"))):
        job = request()["job_id"]
        state = ""
        while state not in ("done", "partial", "failed", "cancelled"):
            state = mem.conn.execute("SELECT state FROM jobs WHERE id = ?", (job,)).fetchone()[0]
            if time.monotonic() >= deadline:
                state += " (out of time)"
                break
            worker.tick()
        states.append(f"{mode}: {state}")
    return time.perf_counter() - began, states


def _neighbours(conn: sqlite3.Connection, object_id: str) -> set[str]:
    rows = conn.execute("SELECT src_id, dst_id FROM relations WHERE src_id = ? OR dst_id = ?",
                        (object_id, object_id))
    return {x for r in rows for x in r} | {object_id}


def score(conn: sqlite3.Connection, sample: dict[str, Any], dia_events: dict[str, int]
          ) -> dict[str, Any]:
    """The metrics above for one organized conversation."""
    state = dict(conn.execute("SELECT event_id, state FROM archive_queue").fetchall())
    cited: dict[int, set[str]] = {}
    for object_id, event_id in conn.execute(
            "SELECT COALESCE(o.redirect_to, o.id), e.event_id FROM evidence e"
            " JOIN objects o ON o.id = e.object_id"):
        cited.setdefault(event_id, set()).add(object_id)
    persons = {name: oid for oid, name in conn.execute(
        "SELECT id, name FROM objects WHERE type = 'person' AND redirect_to IS NULL")}
    observed: dict[str, str] = {}  # dia_id -> speaker
    for session in sample["observation"].values():
        for speaker, facts in session.items():
            for fact in facts:
                for dia in dia_ids(fact[1]):
                    if dia in dia_events:
                        observed.setdefault(dia, speaker)
    linked = attributed = 0
    for dia, speaker in observed.items():
        event = dia_events[dia]
        objects = cited.get(event, set())
        if state.get(event) == "linked" and objects:
            linked += 1
            person = persons.get(speaker)
            if person and objects & _neighbours(conn, person):
                attributed += 1
    other = [e for d, e in dia_events.items() if d not in observed]
    archived = sum(1 for e in other if state.get(e) == "archive_only")
    found = total = 0
    for qa in sample["qa"]:
        wanted = {dia_events[d] for d in dia_ids(qa.get("evidence") or []) if d in dia_events}
        if not wanted:
            continue
        total += 1
        hits = memory_find(conn, str(qa["question"])[:1000], include_events=False,
                           limit=5)["hits"]
        if any(cited_by(conn, str(h["id"])) & wanted for h in hits[:5]):
            found += 1
    names = Counter(r[0] for r in conn.execute(  # project:daily is the engine's own, not made
        "SELECT name FROM objects WHERE redirect_to IS NULL AND status != 'archived'"
        " AND id != 'project:daily'"))
    live = sum(names.values())
    return {"turns": len(dia_events), "observed": len(observed), "qa": total,
            "coverage": linked / max(1, len(observed)),
            "attribution": attributed / max(1, len(observed)),
            "recall": found / max(1, total),
            "archive": archived / max(1, len(other)),
            "obj/100": 100 * live / max(1, len(dia_events)),
            "dups": sum(n - 1 for n in names.values() if n > 1),
            "raw": (linked, attributed, found, archived, len(other), live)}


def dia_ids(value: Any) -> list[str]:
    """LoCoMo's evidence field: one "D1:3", a "D1:3; D1:4" string, or a list of either."""
    items = value if isinstance(value, list) else [value]
    return [d.strip() for item in items for d in str(item).replace(",", ";").split(";")
            if d.strip()]


def cited_by(conn: sqlite3.Connection, object_id: str) -> set[int]:
    """Events an object (or what was merged into it) cites."""
    return {r[0] for r in conn.execute(
        "SELECT e.event_id FROM evidence e JOIN objects o ON o.id = e.object_id"
        " WHERE o.id = ? OR o.redirect_to = ?", (object_id, object_id))}


def ledger(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute(
        "SELECT mode, outcome, COUNT(*) AS calls, SUM(input_tokens) AS input_tokens,"
        " SUM(output_tokens) AS output_tokens, MAX(estimated) AS estimated FROM model_calls"
        " GROUP BY mode, outcome ORDER BY mode, outcome")]


def evaluate(sample: dict[str, Any], args: argparse.Namespace, folder: Path
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    home = folder / str(sample["sample_id"])
    write_config(home, args.model, args.base_url, model_settings(args))
    events = conversation_events(sample, args.turns)
    with Memory.open(home) as mem:
        ids = mem.append_events(events)
        dia_events = {str(e.meta["dia_id"]): i for e, i in zip(events, ids, strict=True)
                      if e.meta}
        seconds, states = run_jobs(mem, args.minutes, args.compact_with)
        result = score(mem.conn, sample, dia_events)
        result |= fact_scores(mem.conn, observation_facts(sample, dia_events),
                              sum(len(e.text) for e in events))
        result["seconds"], result["jobs"] = seconds, states
        result["sizes"] = size_breakdown(mem.conn)
        return result, ledger(mem.conn)


def print_table(rows: list[tuple[str, dict[str, Any]]]) -> None:
    print(f"{'conversation':16} {'turns':>6} {'obs':>5} {'qa':>5} "
          + " ".join(f"{HEADS.get(m, m):>9}" for m in METRICS) + f" {'seconds':>8}")
    for name, r in rows:
        cells = [f"{r[m]:>9.3f}" if isinstance(r[m], float) and m != "obj/100"
                 else f"{r[m]:>9.1f}" if m == "obj/100" else f"{r[m]:>9}" for m in METRICS]
        print(f"{name:16} {r['turns']:>6} {r['observed']:>5} {r['qa']:>5} " + " ".join(cells)
              + f" {r['seconds']:>8.1f}")


def overall(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Pooled over conversations (shares of the summed counts, not means of shares)."""
    linked, attributed, found, archived, other, live = (
        sum(r["raw"][i] for r in results) for i in range(6))
    observed, total, turns = (sum(r[k] for r in results) for k in ("observed", "qa", "turns"))
    return {"turns": turns, "observed": observed, "qa": total,
            "coverage": linked / max(1, observed), "attribution": attributed / max(1, observed),
            "recall": found / max(1, total), "archive": archived / max(1, other),
            "obj/100": 100 * live / max(1, turns), "dups": sum(r["dups"] for r in results),
            "seconds": sum(r["seconds"] for r in results),
            **pooled([r["fact_raw"] for r in results])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA / "locomo" / "locomo-dev.json")
    parser.add_argument("--model", default="builtin", help="builtin, or openai:NAME")
    parser.add_argument("--base-url", default=None, help="the OpenAI-compatible endpoint "
                        "(the key is read from $OPENAI_API_KEY when the server wants one)")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N")
    parser.add_argument("--turns", type=int, default=None, help="only the first N turns of each")
    parser.add_argument("--minutes", type=float, default=60.0, help="stop each run after this")
    parser.add_argument("--context-tokens", type=int, default=None,
                        help="the server's context window (e.g. llama.cpp's --n_ctx)")
    parser.add_argument("--max-output-tokens", type=int, default=None,
                        help="output tokens asked for first (small local models: 512)")
    parser.add_argument("--compact-with", choices=("builtin",), default=None,
                        help="compact with the builtin model and organize with --model")
    parser.add_argument("--tool-mode", choices=("native", "json_schema"), default=None,
                        help="json_schema for servers that never emit tool calls")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--sizes", action="store_true", help="where the object characters go, "
                        "per split (bench/organize_size.py)")
    parser.add_argument("--homes", type=Path, default=None,
                        help="keep each conversation's memory home in this folder")
    parser.add_argument("--server-pid", type=int, default=None,
                        help="the model server's process, for its CPU seconds (default: the "
                             "one listening on --base-url's local port)")
    args = parser.parse_args(argv)
    if args.model != "builtin" and not args.model.startswith("openai:"):
        parser.error("--model is builtin or openai:NAME")
    if not args.data.is_file():
        print(f"error: no LoCoMo data at {args.data} (see ../shared/data/README.md)",
              file=sys.stderr)
        return 2
    samples = json.loads(args.data.read_text(encoding="utf-8"))[: args.conversations]
    rows: list[tuple[str, dict[str, Any]]] = []
    calls: Counter[tuple[str, str]] = Counter()
    tokens: Counter[tuple[str, str]] = Counter()
    server = ServerCpu(args.server_pid or (listening_pid(args.base_url)
                                           if args.base_url else None))
    engine_began = time.process_time()
    with tempfile.TemporaryDirectory(prefix="memvault-quality-") as tmp:
        for sample in samples:
            result, used = evaluate(sample, args, args.homes or Path(tmp))
            rows.append((str(sample["sample_id"]), result))
            for row in used:
                key = (row["mode"], row["outcome"])
                calls[key] += row["calls"]
                tokens[(*key, "in")] += row["input_tokens"] or 0
                tokens[(*key, "out")] += row["output_tokens"] or 0
            print(f"... {sample['sample_id']} in {result['seconds']:.0f} s; "
                  + ", ".join(result["jobs"]), flush=True)
    engine_cpu, server_cpu = time.process_time() - engine_began, server.seconds()
    print(f"\nmodel: {args.model}" + (f" at {args.base_url}" if args.base_url else ""))
    print(f"cpu: engine {engine_cpu:.1f} s; model server "
          + (f"{server_cpu:.1f} s (pid {server.pid})" if server_cpu is not None
             else "not measured (in process, or no --server-pid)"))
    sets = [(f"tuning 0-{TUNING - 1}", [r for i, (_, r) in enumerate(rows) if i < TUNING]),
            (f"validation {TUNING}-", [r for i, (_, r) in enumerate(rows) if i >= TUNING])]
    print_table([*[(f"{i} {n}", r) for i, (n, r) in enumerate(rows)],
                 *[(name, overall(part)) for name, part in sets if part],
                 ("overall", overall([r for _, r in rows]))])
    if args.sizes:
        for name, part in sets:
            if part:
                print_breakdown(name, merged([r["sizes"] for r in part]),
                                sum(r["fact_raw"][5] for r in part))
    print(f"\n{'ledger mode':12} {'outcome':12} {'calls':>7} {'in tok':>10} {'out tok':>10}")
    for (mode, outcome), count in sorted(calls.items()):
        print(f"{mode:12} {outcome:12} {count:>7} {tokens[(mode, outcome, 'in')]:>10} "
              f"{tokens[(mode, outcome, 'out')]:>10}")
    if args.json:
        print(json.dumps({n: {k: v for k, v in r.items() if k not in ("raw", "fact_raw", "sizes")}
                          for n, r in rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
