"""Service benchmark: concurrent agents appending and finding against one `memvault serve`.

    python bench/service.py                    # 8 clients, 60 s per side (about 3 minutes)
    python bench/service.py --seconds 10       # a quick look
    python bench/service.py --clients 4 --skip inprocess

Two runs of the same workload, each on a fresh memory seeded alike, each for --seconds:
1. service: `memvault serve` (a real subprocess on a Unix socket, its worker on the builtin
   model) and --clients client processes, each one MCP session that alternates memory_append
   and memory_find as fast as answers come;
2. in-process: the same operations called on `Memory` directly from --clients threads (each its
   own Memory, as the service's pool lends them), with a Worker thread on the builtin model.
In both, the memory is kept busy: the timeline's threshold is low so appends keep the worker
compacting, and every few seconds an explicit memory_organize queues the archive, so finds and
appends run while batches commit. Printed: appends/s, append and find p50/p95, errors (target
0), and the batches the worker committed meanwhile. Timings are wall-clock on this machine;
nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CLI = [sys.executable, "-c", "import sys; from memvault.cli import main; sys.exit(main())"]
NAMES = ["张伟", "李娜", "王芳", "刘洋", "陈静", "Alice Chen", "Bob Smith", "Carol Diaz",
         "Haoyu", "qhy", "Lighthouse", "garden"]
TEMPLATES = [
    "记住：{name}负责第{n}版设计稿，周三下午三点前交给我们。",
    "TODO: send {name} the invoice #{n} and confirm the garden plan by Friday.",
    "Remind me to call {name} about project Lighthouse, milestone {n}.",
    "{name} 说：我们下周开会讨论项目进度，记得带上第{n}版的数据。",
    "Note {n}: {name} prefers tea over coffee and answers email faster than chat.",
    "会议纪要 {n}：{name} 同意把上线时间推迟到月底，需要先完成压测。",
]
CONFIG = (
    "[compact]\nthreshold_tokens = 2000\n"
    "[worker]\npoll_s = 0.2\nbackoff_s = 1.0\nhourly_s = 86400\n"
    "[deep]\nquiet_minutes = 240\n"
)
SEED_EVENTS = 200
ORGANIZE_EVERY_S = 5.0


def turn(rng: random.Random, n: int) -> str:
    return rng.choice(TEMPLATES).format(name=rng.choice(NAMES), n=n)


@dataclass
class Tally:
    """Latencies (seconds) per operation, and errors, of one client or one run."""

    append: list[float] = field(default_factory=list)
    find: list[float] = field(default_factory=list)
    errors: int = 0
    first_errors: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.append += other.append
        self.find += other.find
        self.errors += other.errors
        self.first_errors += other.first_errors[: max(0, 3 - len(self.first_errors))]

    def error(self, text: str) -> None:
        self.errors += 1
        if len(self.first_errors) < 3:
            self.first_errors.append(text[:200])


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- setup ----------------------------------------------------------------------------------------
def make_home(root: Path, name: str) -> Path:
    from memvault import Memory, NewEvent

    home = root / name
    home.mkdir(parents=True)
    (home / "memvault.toml").write_text(CONFIG, encoding="utf-8")
    rng = random.Random(7)
    with Memory.open(home) as mem:
        mem.append_events(NewEvent(turn(rng, i), source="user") for i in range(SEED_EVENTS))
    return home


def committed_batches(home: Path) -> int:
    conn = sqlite3.connect(f"file:{home / 'memory.db'}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("SELECT COUNT(*) FROM receipts").fetchone()[0]
    finally:
        conn.close()


# -- the service side -----------------------------------------------------------------------------
def client_process(index: int, socket_path: str, start_at: mp.Value, seconds: float,
                   ready: Any, results: Any) -> None:
    """One agent: its own MCP session; alternates append and find until the deadline."""
    import anyio
    from memvault.service.mcp_server import open_client

    rng = random.Random(index)
    tally = Tally()

    async def run() -> None:
        async with open_client(socket_path=socket_path, timeout_s=60) as client:
            await client.call_tool("memory_status", {})
            ready.put(index)
            while start_at.value == 0:
                await anyio.sleep(0.01)
            end = start_at.value + seconds
            n = 0
            while time.time() < end:
                n += 1
                op = "append" if n % 2 else "find"
                args = ({"text": turn(rng, n), "source": f"agent-{index}"} if op == "append"
                        else {"query": rng.choice(NAMES), "limit": 10})
                started = time.perf_counter()
                try:
                    result = await client.call_tool(f"memory_{op}", args)
                except Exception as exc:  # a transport failure counts as an error
                    tally.error(f"{op}: {type(exc).__name__}: {exc}")
                    continue
                elapsed = time.perf_counter() - started
                if result.is_error:
                    tally.error(f"{op}: " + " ".join(getattr(c, "text", "")
                                                    for c in result.content))
                else:
                    getattr(tally, op).append(elapsed)

    try:
        anyio.run(run)
    except BaseException as exc:  # report, never hang the parent
        tally.error(f"client {index}: {type(exc).__name__}: {exc}")
        ready.put(index)
    results.put(tally)


def organizer(call: Any, stop: threading.Event) -> None:
    """Queue an organize job every few seconds so the worker always has archive work."""
    while not stop.wait(ORGANIZE_EVERY_S):
        try:
            call()
        except Exception as exc:  # the bench goes on; the errors column shows client errors
            print(f"  organize request failed: {exc}", file=sys.stderr)


def run_service(root: Path, clients: int, seconds: float, model: str) -> tuple[Tally, int]:
    home = make_home(root, "service")
    sock = root / "api.sock"
    log = (root / "serve.log").open("wb")
    serve = subprocess.Popen([*CLI, "--home", str(home), "serve", "--socket", str(sock),
                              "--model", model, "--no-vault", "--log-level", "warning"],
                             stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
    ctx = mp.get_context("spawn")
    start_at = ctx.Value("d", 0.0)
    ready, results = ctx.Queue(), ctx.Queue()
    procs = []
    try:
        deadline = time.monotonic() + 120
        while not sock.exists():
            if serve.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"memvault serve did not start; see {root / 'serve.log'}")
            time.sleep(0.05)
        procs = [ctx.Process(target=client_process,
                             args=(i, str(sock), start_at, seconds, ready, results))
                 for i in range(clients)]
        for p in procs:
            p.start()
        for _ in procs:
            ready.get(timeout=180)
        stop = threading.Event()
        thread = threading.Thread(target=organizer, args=(lambda: _organize_via_mcp(sock), stop))
        before = committed_batches(home)
        start_at.value = time.time() + 0.2
        thread.start()
        tally = Tally()
        for _ in procs:
            tally.add(results.get(timeout=seconds + 120))
        stop.set()
        thread.join()
        batches = committed_batches(home) - before
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(60)
        except subprocess.TimeoutExpired:
            serve.kill()
        log.close()
    return tally, batches


def _organize_via_mcp(sock: Path) -> None:
    import anyio
    from memvault.service.mcp_server import open_client, tool_payload

    async def go() -> None:
        async with open_client(socket_path=sock) as client:
            tool_payload(await client.call_tool("memory_organize", {}))

    anyio.run(go)


# -- the in-process side --------------------------------------------------------------------------
def run_inprocess(root: Path, clients: int, seconds: float, model: str) -> tuple[Tally, int]:
    from memvault import Memory, MemvaultError

    home = make_home(root, "inprocess")
    stop = threading.Event()
    worker_mem = Memory.open(home)
    worker = worker_mem.worker(model)
    worker_thread = threading.Thread(target=worker.run, kwargs={"stop": stop})
    organize_mem = Memory.open(home)
    org = threading.Thread(target=organizer, args=(organize_mem.organize, stop))
    tallies = [Tally() for _ in range(clients)]
    start = threading.Barrier(clients + 1)

    def agent(index: int) -> None:
        rng = random.Random(index)
        tally = tallies[index]
        with Memory.open(home) as mem:
            start.wait()
            end = time.time() + seconds
            n = 0
            while time.time() < end:
                n += 1
                started = time.perf_counter()
                try:
                    if n % 2:
                        mem.append_event(turn(rng, n), source=f"agent-{index}")
                        tally.append.append(time.perf_counter() - started)
                    else:
                        mem.find(rng.choice(NAMES), limit=10)
                        tally.find.append(time.perf_counter() - started)
                except (MemvaultError, sqlite3.Error) as exc:
                    tally.error(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    before = committed_batches(home)
    worker_thread.start()
    org.start()
    start.wait()
    for t in threads:
        t.join()
    stop.set()
    worker_thread.join(60)
    org.join()
    batches = committed_batches(home) - before
    worker_mem.close()
    organize_mem.close()
    total = Tally()
    for t in tallies:
        total.add(t)
    return total, batches


# -- report ---------------------------------------------------------------------------------------
def row(name: str, tally: Tally, seconds: float, batches: int) -> str:
    ms = 1000.0
    return (f"{name:<16} {len(tally.append) / seconds:>10.1f} "
            f"{pct(tally.append, .5) * ms:>10.2f} {pct(tally.append, .95) * ms:>10.2f} "
            f"{len(tally.find) / seconds:>9.1f} "
            f"{pct(tally.find, .5) * ms:>9.2f} {pct(tally.find, .95) * ms:>9.2f} "
            f"{tally.errors:>7} {batches:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--model", default="builtin", help="worker provider (default builtin)")
    parser.add_argument("--skip", default="", help="comma list: service, inprocess")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    root = Path(tempfile.mkdtemp(prefix="mvb", dir="/tmp"))  # short: the socket path
    os.chmod(root, 0o700)
    print(f"{args.clients} clients, {args.seconds:g} s each, worker model {args.model}, "
          f"{SEED_EVENTS} seed events; scratch {root}")
    rows = []
    try:
        for name, run in (("service (MCP)", run_service), ("in-process", run_inprocess)):
            if name.split()[0] in skip:
                continue
            print(f"running {name} ...", flush=True)
            tally, batches = run(root, args.clients, args.seconds, args.model)
            rows.append((name, tally, batches))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    header = (f"{'':<16} {'appends/s':>10} {'app p50ms':>10} {'app p95ms':>10} "
              f"{'finds/s':>9} {'find p50':>9} {'find p95':>9} {'errors':>7} {'batches':>8}")
    print()
    print(header)
    for name, tally, batches in rows:
        print(row(name, tally, args.seconds, batches))
    for name, tally, _ in rows:
        for text in tally.first_errors:
            print(f"  {name} error: {text}")
    if rows:
        finds = statistics.fmean(len(t.find) for _, t, _ in rows)
        print(f"\n(find latencies in ms; {finds:.0f} finds per run on average; "
              "batches = worker commits during the run)")


if __name__ == "__main__":
    main()
