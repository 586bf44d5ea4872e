"""`memvault worker` with a slowed model, for tests/test_service_integration.py (not a test).

Runs the real CLI command (`python tests/slow_worker.py --home H worker --model builtin`) with
the chosen provider wrapped: before each model call it appends one JSON line to the file named
by $MEMVAULT_TEST_MARKER (pid, offered tools); when the call offers the tool named by
$MEMVAULT_TEST_SLOW_TOOL (default commit_organize) it then sleeps $MEMVAULT_TEST_DELAY seconds.
A marker line therefore means "a batch is claimed and not yet committed", and the sleep gives a
test a window to SIGKILL the worker mid-batch. When $MEMVAULT_TEST_TICKS names a file, every
finished worker tick appends one JSON line there (pid, action: busy, idle, committed, ...), so
a test can wait for what the worker did instead of sleeping.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import memvault.models as providers
from memvault.jobs.worker import Worker


class SlowModel:
    """Delegates to the real provider after marking the call and sleeping."""

    def __init__(self, inner: Any, marker: Path, delay: float, slow_tool: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.max_output_tokens = inner.max_output_tokens
        self.context_tokens = inner.context_tokens
        self.marker = marker
        self.delay = delay
        self.slow_tool = slow_tool

    def complete(self, messages: list[Any], tools: list[Any], max_output_tokens: int,
                 deadline_s: float | None = None) -> Any:
        line = json.dumps({"pid": os.getpid(), "tools": [t.name for t in tools],
                           "at": time.time()})
        with self.marker.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
        if any(t.name == self.slow_tool for t in tools):
            time.sleep(self.delay)
        return self.inner.complete(messages, tools, max_output_tokens, deadline_s)


def record_ticks(path: Path) -> None:
    """Make every Worker tick append its action to `path` once it has finished."""
    real_tick = Worker.tick

    def tick(self: Worker) -> Any:
        result = real_tick(self)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), "action": result.action}) + "\n")
        return result

    Worker.tick = tick  # type: ignore[method-assign]


def main() -> None:
    marker = Path(os.environ["MEMVAULT_TEST_MARKER"])
    delay = float(os.environ.get("MEMVAULT_TEST_DELAY", "1.5"))
    slow_tool = os.environ.get("MEMVAULT_TEST_SLOW_TOOL", "commit_organize")
    real = providers.make_provider

    def make_provider(config: Any, name: str | None = None, model: str | None = None) -> Any:
        return SlowModel(real(config, name, model), marker, delay, slow_tool)

    providers.make_provider = make_provider
    if os.environ.get("MEMVAULT_TEST_TICKS"):
        record_ticks(Path(os.environ["MEMVAULT_TEST_TICKS"]))
    from memvault.cli import main as cli

    sys.exit(cli())


if __name__ == "__main__":
    main()
