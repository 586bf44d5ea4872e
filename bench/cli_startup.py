"""CLI start-up: the CPU and wall time of a whole `memvault ...` process against a bare Python.

The goals, against `python3 -c "import sqlite3"` as a whole process: find (plain or --json)
<= 4x, `--help` and one turn of `hook claude-code` <= 3x, status/list/object/event/events
<= 5x. The rows marked "(settings set)" run in a second home whose memvault.toml sets values,
as a home with a model configured does: they show what checking the file (pydantic-core)
adds. Every command runs N times interleaved with the baseline in the same run (so load on
the machine hits both alike); the table shows medians and their ratio, CPU (the child's user +
system time, what a shared machine's load disturbs least) and wall. The hook row appends one
user and one assistant line to a Claude Code transcript before each run, untimed, so every
call stores one new turn as a real Stop hook does.

memvault's bytecode is written first (`--no-bytecode` skips it), as installing a wheel does:
an editable install under PYTHONDONTWRITEBYTECODE would otherwise compile every module of
memvault again in each run, which an installed memvault never does.

    python bench/cli_startup.py [--runs 15]

The baseline is the same interpreter the `memvault` script uses (the venv's python3), so the
ratio measures memvault's own start-up, not a difference between two Pythons.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BASELINE = [sys.executable, "-c", "import sqlite3"]
EVENTS = (b'{"text": "Met Zhang Wei about the migration runbook", '
          b'"occurred_at": "2026-10-13T12:30:00+08:00"}\n'
          b'{"text": "Dentist on Friday at 9", "occurred_at": "2026-10-14T08:00:00+08:00"}\n')
COMMANDS: dict[str, list[str]] = {
    "find": ["find", "runbook", "--json"],
    "find (plain, piped)": ["find", "runbook"],
    "status": ["status", "--json"],
    "list": ["list", "person", "--json"],
    "object": ["object", "project:daily", "--json"],
    "event": ["event", "1", "--json"],
    "events": ["events", "2026-10-01T00:00:00+08:00", "2026-11-01T00:00:00+08:00", "--json"],
    "--help": ["--help"],
    "hook claude-code": ["hook", "claude-code"],
}
SETTINGS_SET = ('[model]\nprovider = "openai"\nname = "gpt-4o-mini"\n'
                '[worker]\npoll_s = 1\n[deep]\nnightly_at = "03:10"\n')
SET_COMMANDS = ("find", "status")  # run again in the home whose memvault.toml sets values
SESSION = "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b"


def memvault_command() -> list[str]:
    """The installed `memvault` script beside this interpreter, else `python -m memvault.cli`."""
    script = Path(sys.executable).with_name("memvault")
    if script.exists():
        return [str(script)]
    found = shutil.which("memvault")
    return [found] if found else [sys.executable, "-m", "memvault.cli"]


def write_bytecode() -> list[str]:
    """Compile memvault's modules (memvault and memvault.vault, wherever they are installed)
    to their __pycache__; the folders compiled."""
    folders = []
    for name in ("memvault", "memvault.vault"):
        spec = importlib.util.find_spec(name)
        folders += list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)
    return folders


def children_cpu() -> float:
    """CPU seconds (user + system) of every child waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str], env: dict[str, str], stdin: bytes | None = None) -> tuple[float, float]:
    """(CPU, wall) seconds one process takes from spawn to exit (it must exit 0)."""
    cpu, start = children_cpu(), time.perf_counter()
    subprocess.run(argv, env=env, input=stdin, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return children_cpu() - cpu, time.perf_counter() - start


def prepare_home(home: Path, cli: list[str], env: dict[str, str]) -> None:
    """A small home: two events, indexed for recall."""
    subprocess.run([*cli, "ingest", "-"], input=EVENTS, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Transcript:
    """A Claude Code transcript that gains one turn (a user and an assistant line) per call of
    `turn`, and the Stop hook's stdin for it."""

    def __init__(self, path: Path) -> None:
        self.path, self.turns = path, 0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def turn(self) -> bytes:
        self.turns += 1
        n, at = self.turns, f"2026-10-13T12:{self.turns // 60 % 60:02d}:{self.turns % 60:02d}"
        lines = [{"type": role, "uuid": f"{role}-{n}", "sessionId": SESSION,
                  "timestamp": f"{at}.000Z", "message": {"role": role, "content": text}}
                 for role, text in (("user", f"Question {n}: when is the dentist?"),
                                    ("assistant", f"Answer {n}: Friday at 9."))]
        with self.path.open("a", encoding="utf-8") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)
        return json.dumps({"session_id": SESSION, "transcript_path": str(self.path),
                           "cwd": "/tmp", "hook_event_name": "Stop"}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per command (median)")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="do not write memvault's bytecode first")
    args = parser.parse_args()
    if not args.no_bytecode:
        print(f"bytecode written for {', '.join(write_bytecode())}")
    cli = memvault_command()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MEMVAULT_HOME": str(Path(tmp) / "home")}
        set_env = {**os.environ, "MEMVAULT_HOME": str(Path(tmp) / "set")}
        prepare_home(Path(tmp) / "home", cli, env)
        prepare_home(Path(tmp) / "set", cli, set_env)
        (Path(tmp) / "set" / "memvault.toml").write_text(SETTINGS_SET, encoding="utf-8")
        transcript = Transcript(Path(tmp) / "projects" / f"{SESSION}.jsonl")
        print(f"memvault: {' '.join(cli)}; baseline: {' '.join(BASELINE)}; "
              f"{args.runs} runs each, interleaved; medians")
        print(f"\n{'command':<24} {'CPU ms':>7} {'base':>6} {'ratio':>6}   "
              f"{'wall ms':>7} {'base':>6} {'ratio':>6}")
        runs = [(name, argv, env) for name, argv in COMMANDS.items()]
        runs += [(f"{name} (settings set)", COMMANDS[name], set_env) for name in SET_COMMANDS]
        for name, argv, home_env in runs:
            stdin: Callable[[], bytes | None] = (transcript.turn if argv[0] == "hook"
                                                 else lambda: None)
            ours, base = [], []
            for _ in range(args.runs):
                base.append(run(BASELINE, home_env))
                ours.append(run([*cli, *argv], home_env, stdin()))
            cpu, base_cpu = (statistics.median(t[0] for t in ours),
                             statistics.median(t[0] for t in base))
            wall, base_wall = (statistics.median(t[1] for t in ours),
                               statistics.median(t[1] for t in base))
            print(f"{name:<24} {cpu * 1e3:>7.1f} {base_cpu * 1e3:>6.1f} {cpu / base_cpu:>5.1f}x"
                  f"   {wall * 1e3:>7.1f} {base_wall * 1e3:>6.1f} {wall / base_wall:>5.1f}x")
        with_hook = subprocess.run([*cli, "status", "--json"], env=env, check=True,
                                   capture_output=True).stdout
        print(f"\nhook calls stored {json.loads(with_hook)['events']['total'] - 2} events "
              f"({transcript.turns} turns appended)")


if __name__ == "__main__":
    main()
