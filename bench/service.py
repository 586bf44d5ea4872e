"""Service benchmark: concurrent agents appending and finding against one `memvault serve`.

    python bench/service.py                    # 1 and 8 clients, 60 s per run (about 9 minutes)
    python bench/service.py --seconds 10       # a quick look
    python bench/service.py --clients 4 --skip inprocess,bare
    python bench/service.py --clients 1 --seconds 10 --no-worker --skip noop,bare,inprocess \
        --transport tcp,stdio,socket            # the transports side by side, no worker

For each client count in --clients, four runs, each for --seconds:
1. service, once per --transport: `memvault serve` (a real subprocess on a Unix socket or on
   loopback TCP with its bearer token, its worker on the builtin model) and --clients client
   processes, each one MCP session that alternates memory_append and memory_find as fast as
   answers come; over stdio each client starts its own `memvault mcp` (as a host does) and
   the worker runs as `memvault worker`;
2. no-op (floor): the same service (memvault.service.host.Service, same SDK app, transport
   security and uvicorn settings), no worker, with one extra tool `noop` that returns {"ok": true};
   the clients call only it: what the SDK and HTTP stack cost by themselves;
3. bare HTTP (floor): a Starlette endpoint returning a fixed JSON body, under the same uvicorn
   settings on a Unix socket, posted to by an httpx2 client per process: the HTTP floor;
4. in-process: the same operations called on `Memory` directly from --clients threads (each its
   own Memory, as the service's pool lends them), with a Worker thread on the builtin model.
The floor rows show one call's latency in both the append and the find columns (they alternate
the same call).
In runs 1 and 4 the memory is kept busy: the timeline's threshold is low so appends keep the
worker compacting, and every few seconds an explicit memory_organize queues the archive, so finds
and appends run while batches commit. Printed: appends/s, append and find p50/p95, errors (target
0), the batches the worker committed meanwhile, and the server's CPU per call (the serving
process's user+system time over the run, per answered call; over stdio the `memvault mcp`
processes'; with the worker in the serving process its batches count too: `--no-worker`
leaves the worker and the organize requests out, for the API's cost alone). Timings are
wall-clock on this machine; nothing here asserts a time.
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
    server_cpu_s: float = 0.0  # CPU time of the processes that served these calls

    def add(self, other: Tally) -> None:
        self.append += other.append
        self.find += other.find
        self.errors += other.errors
        self.server_cpu_s += other.server_cpu_s
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux /proc), 0.0 when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


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
def client_process(index: int, endpoint: dict[str, str], start_at: mp.Value, seconds: float,
                   ready: Any, results: Any, kind: str = "memvault") -> None:
    """One agent: its own MCP session (`kind` memvault: alternates append and find; noop: calls
    the no-op tool) or, for `kind` bare, its own HTTP client; until the deadline."""
    import anyio

    rng = random.Random(index)
    tally = Tally()

    async def loop(call: Any) -> None:
        ready.put(index)
        while start_at.value == 0:
            await anyio.sleep(0.01)
        end = start_at.value + seconds
        n = 0
        while time.time() < end:
            n += 1
            op = "append" if n % 2 else "find"
            started = time.perf_counter()
            try:
                error = await call(op, n)
            except Exception as exc:  # a transport failure counts as an error
                tally.error(f"{op}: {type(exc).__name__}: {exc}")
                continue
            elapsed = time.perf_counter() - started
            if error is not None:
                tally.error(f"{op}: {error}")
            else:
                getattr(tally, op).append(elapsed)

    async def run_mcp() -> None:
        async with connect(endpoint) as client:
            await client.call_tool("memory_status", {})
            mine = child_pids(os.getpid()) if "stdio_home" in endpoint else []
            cpu_before = sum(cpu_seconds(pid) for pid in mine)

            async def call(op: str, n: int) -> str | None:
                if kind == "noop":
                    result = await client.call_tool("noop", {})
                else:
                    args = ({"text": turn(rng, n), "source": f"agent-{index}"} if op == "append"
                            else {"query": rng.choice(NAMES), "limit": 10})
                    result = await client.call_tool(f"memory_{op}", args)
                if result.is_error:
                    return " ".join(getattr(c, "text", "") for c in result.content)
                return None

            await loop(call)
            tally.server_cpu_s = sum(cpu_seconds(pid) for pid in mine) - cpu_before

    async def run_bare() -> None:
        import httpx2

        transport = httpx2.AsyncHTTPTransport(uds=endpoint["socket"])
        async with httpx2.AsyncClient(transport=transport, timeout=60) as http:
            async def call(op: str, n: int) -> str | None:
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                        "params": {"name": "noop", "arguments": {}}}
                answer = await http.post("http://localhost/mcp", json=body)
                return None if answer.json().get("result") else f"HTTP {answer.status_code}"

            await loop(call)

    try:
        anyio.run(run_bare if kind == "bare" else run_mcp)
    except BaseException as exc:  # report, never hang the parent
        tally.error(f"client {index}: {type(exc).__name__}: {exc}")
        ready.put(index)
    results.put(tally)


def connect(endpoint: dict[str, str]) -> Any:
    """An MCP client for `endpoint`: a Unix socket, a URL with its token, or stdio (starting
    `memvault mcp` on the home, as an agent host does)."""
    from memvault.service.mcp_server import open_client

    if "socket" in endpoint:
        return open_client(socket_path=endpoint["socket"], timeout_s=60)
    if "url" in endpoint:
        return open_client(url=endpoint["url"], token=endpoint["token"] or None, timeout_s=60)
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    command = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "--home", endpoint["stdio_home"], "mcp",
                              "--log-level", "warning"])
    return Client(command, read_timeout_seconds=60)


def organizer(call: Any, stop: threading.Event) -> None:
    """Queue an organize job every few seconds so the worker always has archive work."""
    while not stop.wait(ORGANIZE_EVERY_S):
        try:
            call()
        except Exception as exc:  # the bench goes on; the errors column shows client errors
            print(f"  organize request failed: {exc}", file=sys.stderr)


def run_service(root: Path, clients: int, seconds: float, model: str,
                kind: str = "memvault", transport: str = "socket",
                with_worker: bool = True) -> tuple[Tally, int]:
    """`kind` memvault: `memvault serve` (or, over stdio, `memvault worker` beside each
    client's `memvault mcp`); noop or bare: a floor server on a Unix socket."""
    home = make_home(root, f"{kind}-{transport}-{clients}")
    sock = root / f"{kind}{transport[0]}{clients}.sock"
    log_path = root / f"{kind}-{transport}-{clients}.log"
    log = log_path.open("wb")
    worker_flags = ["--model", model] if with_worker else ["--no-worker"]
    endpoint: dict[str, str] = {"socket": str(sock)}
    if kind != "memvault":
        command = [sys.executable, __file__, "--floor-server", kind, "--socket", str(sock),
                   "--home", str(home)]
    elif transport == "stdio":
        endpoint = {"stdio_home": str(home)}
        command = ([*CLI, "--home", str(home), "worker", "--model", model] if with_worker
                   else [sys.executable, "-c", "import time; time.sleep(86400)"])
    else:
        where = (["--socket", str(sock)] if transport == "socket" else ["--port", "0"])
        command = [*CLI, "--home", str(home), "serve", *where, *worker_flags, "--no-vault",
                   "--log-level", "info" if transport == "tcp" else "warning"]
    serve = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log,
                             stdin=subprocess.DEVNULL)
    ctx = mp.get_context("spawn")
    start_at = ctx.Value("d", 0.0)
    ready, results = ctx.Queue(), ctx.Queue()
    procs = []
    try:
        if kind == "memvault" and transport == "tcp":
            endpoint = {"url": _wait_for_url(serve, log_path),
                        "token": (home / "service.token").read_text().strip()}
        elif transport != "stdio" or kind != "memvault":
            _wait_for_socket(serve, sock, log_path)
        procs = [ctx.Process(target=client_process,
                             args=(i, endpoint, start_at, seconds, ready, results, kind))
                 for i in range(clients)]
        for p in procs:
            p.start()
        for _ in procs:
            ready.get(timeout=180)
        stop = threading.Event()
        thread = threading.Thread(target=organizer,
                                  args=(lambda: _organize_via_mcp(endpoint), stop))
        before = committed_batches(home)
        start_at.value = time.time() + 0.2
        served_by_serve = transport != "stdio" or kind != "memvault"
        cpu_before = cpu_seconds(serve.pid)
        if kind == "memvault" and with_worker:
            thread.start()
        tally = Tally()
        for _ in procs:
            tally.add(results.get(timeout=seconds + 120))
        if served_by_serve:
            tally.server_cpu_s = cpu_seconds(serve.pid) - cpu_before
        stop.set()
        if thread.is_alive():
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


def _wait_for_socket(serve: subprocess.Popen[bytes], sock: Path, log: Path) -> None:
    deadline = time.monotonic() + 120
    while not sock.exists():
        if serve.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"server did not start; see {log}")
        time.sleep(0.05)


def _wait_for_url(serve: subprocess.Popen[bytes], log: Path) -> str:
    """The URL `memvault serve --port 0` logs in its service_ready line."""
    import json

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if '"service_ready"' in line:
                return json.loads(line)["url"]
        if serve.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"server did not start; see {log}")


def _organize_via_mcp(endpoint: dict[str, str]) -> None:
    import anyio
    from memvault.service.mcp_server import tool_payload

    async def go() -> None:
        async with connect(endpoint) as client:
            tool_payload(await client.call_tool("memory_organize", {}))

    anyio.run(go)


# -- the floors -----------------------------------------------------------------------------------
def floor_server(kind: str, sock: Path, home: Path) -> None:
    """Serve a floor until SIGTERM: `noop` is memvault's own Service (SDK app, transport
    security, uvicorn settings, GIL switch interval) plus a no-op tool and no worker; `bare` is
    a Starlette endpoint with a fixed JSON answer under the same uvicorn settings."""
    import asyncio

    from memvault.service import host

    host.configure_logging("warning")
    if kind == "noop":
        class NoopService(host.Service):
            def build(self, pool: Any) -> Any:
                server = super().build(pool)

                @server.tool()
                def noop() -> dict[str, bool]:
                    """Do nothing (the bench's floor)."""
                    return {"ok": True}

                return server

        raise SystemExit(NoopService(home, host.Listen(socket=sock)).run())
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    answer = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"ok":true}}}'

    async def endpoint(request: Request) -> Response:
        await request.body()
        return Response(answer, media_type="application/json")

    app = Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])
    with host.switch_interval(host.SERVE_SWITCH_INTERVAL_S):
        asyncio.run(uvicorn.Server(host.uvicorn_config(app)).serve(sockets=[host.bind_unix(sock)]))


# -- the in-process side --------------------------------------------------------------------------
def run_inprocess(root: Path, clients: int, seconds: float, model: str,
                  with_worker: bool = True) -> tuple[Tally, int]:
    from memvault import Memory, MemvaultError

    home = make_home(root, f"inprocess-{clients}")
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
    if with_worker:
        worker_thread.start()
        org.start()
    start.wait()
    for t in threads:
        t.join()
    stop.set()
    if with_worker:
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
    return (f"{name:<20} {len(tally.append) / seconds:>10.1f} "
            f"{pct(tally.append, .5) * ms:>10.2f} {pct(tally.append, .95) * ms:>10.2f} "
            f"{len(tally.find) / seconds:>9.1f} "
            f"{pct(tally.find, .5) * ms:>9.2f} {pct(tally.find, .95) * ms:>9.2f} "
            f"{tally.errors:>7} {batches:>8} {_cpu_per_call(tally):>9}")


def _cpu_per_call(tally: Tally) -> str:
    calls = len(tally.append) + len(tally.find)
    if not tally.server_cpu_s or not calls:
        return "-"
    return f"{tally.server_cpu_s / calls * 1000:.2f}"


RUNS = (("service (MCP)", "service", "memvault"), ("no-op (MCP)", "noop", "noop"),
        ("bare HTTP", "bare", "bare"), ("in-process", "inprocess", None))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,8", help="comma list of client counts")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--model", default="builtin", help="worker provider (default builtin)")
    parser.add_argument("--skip", default="", help="comma list: service, noop, bare, inprocess")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--transport", default="socket",
                        help="comma list for the service run: socket, tcp, stdio")
    parser.add_argument("--no-worker", action="store_true",
                        help="no worker and no organize requests: the API's own cost")
    parser.add_argument("--floor-server", choices=("noop", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--socket", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_server:
        floor_server(args.floor_server, Path(args.socket), Path(args.home))
        return
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    transports = [t.strip() for t in args.transport.split(",") if t.strip()]
    if set(transports) - {"socket", "tcp", "stdio"}:
        parser.error("--transport takes socket, tcp and stdio")
    root = Path(tempfile.mkdtemp(prefix="mvb", dir="/tmp"))  # short: the socket path
    os.chmod(root, 0o700)
    print(f"clients {counts}, {args.seconds:g} s each, "
          f"{'no worker' if args.no_worker else 'worker model ' + args.model}, "
          f"{SEED_EVENTS} seed events; scratch {root}")
    rows = []
    try:
        for clients in counts:
            for name, key, kind in RUNS:
                if key in skip:
                    continue
                for transport in (transports if kind == "memvault" else ["socket"]):
                    label = f"{name} {transport}" if kind == "memvault" else name
                    print(f"running {label}, {clients} clients ...", flush=True)
                    if kind is None:
                        tally, batches = run_inprocess(root, clients, args.seconds, args.model,
                                                       not args.no_worker)
                    else:
                        tally, batches = run_service(root, clients, args.seconds, args.model,
                                                     kind, transport, not args.no_worker)
                    rows.append((f"{label} x{clients}", tally, batches))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    header = (f"{'':<20} {'appends/s':>10} {'app p50ms':>10} {'app p95ms':>10} "
              f"{'finds/s':>9} {'find p50':>9} {'find p95':>9} {'errors':>7} {'batches':>8} "
              f"{'srv cpu ms':>9}")
    print()
    print(header)
    for name, tally, batches in rows:
        print(row(name, tally, args.seconds, batches))
    for name, tally, _ in rows:
        for text in tally.first_errors:
            print(f"  {name} error: {text}")
    if rows:
        finds = statistics.fmean(len(t.find) for _, t, _ in rows)
        print(f"\n(latencies in ms; {finds:.0f} finds per run on average; batches = worker "
              "commits during the run;\n floor rows: one no-op call in both columns, no worker;"
              " srv cpu ms = the serving processes' CPU per call)")


if __name__ == "__main__":
    main()
