"""bench/ is a suite: every script there is a question bench/run.py runs (or a helper
bench/README.md names), and bench/README.md has a row for each of the runner's names."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent / "bench"
HELPERS = {"run.py", "timing.py", "fact_quality.py", "organize_size.py", "recall_feedback.py",
           "noisy_questions.py", "server_cpu.py"}


def _load_runner() -> Any:
    spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_run", module)
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


def test_every_script_is_run_by_the_runner_or_is_a_helper() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")}
    run = {b.script for b in runner.SUITE}
    assert run <= scripts
    assert scripts - run == HELPERS


def test_the_readme_has_a_row_for_every_benchmark_and_names_every_file() -> None:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    assert [b.name for b in runner.SUITE if f"| `{b.name}` |" not in text] == []
    files = [p.name for p in BENCH.iterdir() if p.suffix in (".py", ".json")]
    assert [name for name in files if f"`{name}`" not in text] == []


def test_the_runner_lists_its_benchmarks_and_refuses_an_unknown_name() -> None:
    listed = subprocess.run([sys.executable, str(BENCH / "run.py"), "--list"],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [
        b.name for b in runner.SUITE]
    unknown = subprocess.run([sys.executable, str(BENCH / "run.py"), "nosuch"],
                             capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "unknown benchmark(s) nosuch" in unknown.stderr


def test_the_cpu_of_a_local_model_server_is_found_by_its_port() -> None:
    """bench/server_cpu.py finds the process listening on a base URL's local port (here the
    fake server, in this process) and reads its CPU seconds; another host is not guessed."""
    import os

    from tests.fake_openai import FakeOpenAI

    spec = importlib.util.spec_from_file_location("server_cpu", BENCH / "server_cpu.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with FakeOpenAI() as server:
        if not Path("/proc/net/tcp").exists():
            return  # not Linux: nothing to read, and None is what the bench reports
        assert module.listening_pid(server.base_url) == os.getpid()
    assert module.listening_pid("https://api.example.com/v1") is None
    cpu = module.ServerCpu(os.getpid())
    assert (cpu.seconds() or 0.0) >= 0.0
