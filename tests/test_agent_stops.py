"""`memvault mcp --background` keeps the reference's promise that a stopped agent makes no model
calls: its worker lives in the agent's own MCP process, so when the host closes stdio the
process exits, the worker with it, and the lease is free. (`memvault serve` and `memvault
worker` run on their own and go on calling models: docs/spec.md section 9.)"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

from memvault import Memory
from memvault.jobs.leases import lease_taken

CLI = [sys.executable, "-c", "import sys; from memvault.cli import main; sys.exit(main())"]


def call(call_id: int, name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def test_closing_stdio_stops_the_background_worker_with_the_agent(home: Path) -> None:
    Memory.open(home).close()
    (home / "memvault.toml").write_text("[worker]\npoll_s = 0.1\n", encoding="utf-8")
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *(call(10 + i, "memory_append", {"text": f"TODO: call Ada about item {i}"})
          for i in range(3)),
        call(20, "memory_organize", {}),
    ]
    proc = subprocess.Popen([*CLI, "--home", str(home), "mcp", "--background"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL,
                            env={**os.environ, "MEMVAULT_HOME": str(home)})
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    try:
        for frame in frames:  # each request answered before the next is sent, as a host does
            proc.stdin.write(json.dumps(frame).encode() + b"\n")
            proc.stdin.flush()
            if "id" in frame:
                assert json.loads(lines.get(timeout=60))["id"] == frame["id"]
        proc.stdin.close()  # the agent stops
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    with Memory.open(home) as mem:
        # The process is gone and held no lease past its exit: nothing of it can call a model.
        assert not lease_taken(mem.conn, "anyone-else", mem.clock.now())
