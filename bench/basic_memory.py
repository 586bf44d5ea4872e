"""memvault beside basic-memory 0.24.1 on the same conversation turns.

    python bench/basic_memory.py [--turns 1000] [--finds 100] [--basic-memory CMD]

Both sides get the same `--turns` generated turns (Chinese, English and mixed), written one at
a time as an agent would, then answer the same `--finds` searches:
- memvault, in-process: `Memory.append_event` per turn, `Memory.find` per search (after one
  `sync_recall_index`, as the worker keeps it);
- basic-memory, through its own MCP server over stdio (`basic-memory mcp`), one `write_note`
  per turn and one `search_notes` per search, with HOME pointed at a temporary folder so its
  config, notes and database are fresh and nothing of yours is touched.

Printed: writes/s and search p50/p95 of each side, and memvault's ratio to basic-memory
(the goal: memvault >= 100x on writes and on search p50).

basic-memory needs Python >= 3.12. Where its command is missing (this project still supports
3.11), the script says so, runs the memvault side alone and exits 0: install it with e.g.
`uv tool install --python 3.12 basic-memory==0.24.1` and pass `--basic-memory basic-memory`
(or put it on PATH). Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault import ManualClock, Memory  # noqa: E402
from service import pct, turn  # noqa: E402  (the same turns as the service bench)

BASIC_MEMORY_VERSION = "0.24.1"
START = datetime(2026, 10, 5, 9, 0, tzinfo=timezone(timedelta(hours=8)))
QUERIES = ["设计稿", "invoice", "Lighthouse milestone", "项目进度", "tea coffee", "张伟", "Haoyu"]


def make_turns(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [turn(rng, i) for i in range(n)]


def run_memvault(root: Path, turns: list[str], finds: int) -> dict[str, Any]:
    clock = ManualClock(START)
    with Memory.open(root / "memvault-home", clock=clock) as mem:
        began = time.perf_counter()
        for i, text in enumerate(turns):
            clock.advance(seconds=1)
            mem.append_event(text, meta={"turn": i})
        write_s = time.perf_counter() - began
        mem.sync_recall_index(None)
        times = []
        for i in range(finds):
            t0 = time.perf_counter()
            mem.find(QUERIES[i % len(QUERIES)])
            times.append(time.perf_counter() - t0)
    return {"writes_s": len(turns) / write_s, "find": times}


async def _basic_memory_session(command: list[str], home: Path, turns: list[str],
                                finds: int) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {**os.environ, "HOME": str(home), "BASIC_MEMORY_HOME": str(home / "basic-memory")}
    params = StdioServerParameters(command=command[0], args=[*command[1:], "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        began = time.perf_counter()
        for i, text in enumerate(turns):
            result = await session.call_tool("write_note", {
                "title": f"turn {i:05d}", "content": text, "folder": "turns"})
            if result.is_error:
                raise RuntimeError(f"write_note failed: {result.content}")
        write_s = time.perf_counter() - began
        times = []
        for i in range(finds):
            t0 = time.perf_counter()
            result = await session.call_tool("search_notes",
                                             {"query": QUERIES[i % len(QUERIES)]})
            times.append(time.perf_counter() - t0)
            if result.is_error:
                raise RuntimeError(f"search_notes failed: {result.content}")
    return {"writes_s": len(turns) / write_s, "find": times}


def find_basic_memory(given: str | None) -> tuple[list[str] | None, str]:
    """The command that runs basic-memory, or None and why it is not here."""
    command = given or shutil.which("basic-memory")
    if not command:
        return None, (
            f"basic-memory is not installed here (it needs Python >= 3.12; this is Python "
            f"{sys.version.split()[0]}). Install basic-memory=={BASIC_MEMORY_VERSION} under "
            "Python 3.12+ and pass --basic-memory CMD")
    try:
        out = subprocess.run([command, "--version"], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{command} does not run: {exc}"
    version = (out.stdout + out.stderr).strip()
    if BASIC_MEMORY_VERSION not in version:
        print(f"note: {command} says {version!r}, not {BASIC_MEMORY_VERSION}")
    return [command], ""


def row(name: str, result: dict[str, Any]) -> str:
    return (f"{name:<28}{result['writes_s']:>12,.2f}{pct(result['find'], 0.5) * 1e3:>12.2f}"
            f"{pct(result['find'], 0.95) * 1e3:>12.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1_000)
    parser.add_argument("--finds", type=int, default=100)
    parser.add_argument("--basic-memory", default=None, help="the basic-memory command")
    args = parser.parse_args(argv)
    turns = make_turns(args.turns)
    with tempfile.TemporaryDirectory(prefix="memvault-bench-") as tmp:
        root = Path(tmp)
        mine = run_memvault(root, turns, args.finds)
        print(f"{args.turns:,} turns, {args.finds} searches\n")
        print(f"{'':28}{'writes/s':>12}{'find p50 ms':>12}{'find p95 ms':>12}")
        print(row("memvault (in-process)", mine))
        command, why = find_basic_memory(args.basic_memory)
        if command is None:
            print(f"\nbasic-memory: skipped: {why}.")
            return 0
        home = root / "basic-memory-home"
        home.mkdir()
        theirs = asyncio.run(_basic_memory_session(command, home, turns, args.finds))
        print(row(f"basic-memory {BASIC_MEMORY_VERSION} (MCP)", theirs))
        print(f"\nmemvault vs basic-memory: writes/s {mine['writes_s'] / theirs['writes_s']:,.1f}x,"
              f" find p50 {pct(theirs['find'], 0.5) / pct(mine['find'], 0.5):,.1f}x as fast"
              " (the goal: both >= 100x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
