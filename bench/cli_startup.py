"""CLI start-up: the wall time of a whole `memvault ... --json` process against a bare Python.

The goal: find/status/list/object/event/events each cost <= 5x `python3 -c "import
sqlite3"` as a whole process. The rows marked "(settings set)" run in a second home whose
memvault.toml sets values, as a home with a model configured does: they show what checking
the file (pydantic-core) adds. Every command runs N times interleaved with the baseline in the
same run (so load on the machine hits both alike); the table shows medians and their ratio.

    python bench/cli_startup.py [--runs 15]

The baseline is the same interpreter the `memvault` script uses (the venv's python3), so the
ratio measures memvault's own start-up, not a difference between two Pythons.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASELINE = [sys.executable, "-c", "import sqlite3"]
EVENTS = (b'{"text": "Met Zhang Wei about the migration runbook", '
          b'"occurred_at": "2026-10-13T12:30:00+08:00"}\n'
          b'{"text": "Dentist on Friday at 9", "occurred_at": "2026-10-14T08:00:00+08:00"}\n')
COMMANDS: dict[str, list[str]] = {
    "find": ["find", "runbook", "--json"],
    "status": ["status", "--json"],
    "list": ["list", "person", "--json"],
    "object": ["object", "project:daily", "--json"],
    "event": ["event", "1", "--json"],
    "events": ["events", "2026-10-01T00:00:00+08:00", "2026-11-01T00:00:00+08:00", "--json"],
    "--help": ["--help"],
}
SETTINGS_SET = ('[model]\nprovider = "openai"\nname = "gpt-4o-mini"\n'
                '[worker]\npoll_s = 1\n[deep]\nnightly_at = "03:10"\n')
SET_COMMANDS = ("find", "status")  # run again in the home whose memvault.toml sets values


def memvault_command() -> list[str]:
    """The installed `memvault` script beside this interpreter, else `python -m memvault.cli`."""
    script = Path(sys.executable).with_name("memvault")
    if script.exists():
        return [str(script)]
    found = shutil.which("memvault")
    return [found] if found else [sys.executable, "-m", "memvault.cli"]


def wall(argv: list[str], env: dict[str, str]) -> float:
    """Seconds one process takes from spawn to exit (it must exit 0)."""
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - start


def prepare_home(home: Path, cli: list[str], env: dict[str, str]) -> None:
    """A small home: two events, indexed for recall."""
    subprocess.run([*cli, "ingest", "-"], input=EVENTS, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per command (median)")
    args = parser.parse_args()
    cli = memvault_command()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MEMVAULT_HOME": str(Path(tmp) / "home")}
        set_env = {**os.environ, "MEMVAULT_HOME": str(Path(tmp) / "set")}
        prepare_home(Path(tmp) / "home", cli, env)
        prepare_home(Path(tmp) / "set", cli, set_env)
        (Path(tmp) / "set" / "memvault.toml").write_text(SETTINGS_SET, encoding="utf-8")
        print(f"memvault: {' '.join(cli)}; baseline: {' '.join(BASELINE)}; "
              f"{args.runs} runs each, interleaved")
        print(f"\n{'command':<22} {'memvault ms':>12} {'baseline ms':>12} {'ratio':>7}")
        runs = [(name, argv, env) for name, argv in COMMANDS.items()]
        runs += [(f"{name} (settings set)", COMMANDS[name], set_env) for name in SET_COMMANDS]
        for name, argv, home_env in runs:
            ours, base = [], []
            for _ in range(args.runs):
                base.append(wall(BASELINE, home_env))
                ours.append(wall([*cli, *argv], home_env))
            m_ours, m_base = statistics.median(ours), statistics.median(base)
            print(f"{name:<22} {m_ours * 1e3:>12.1f} {m_base * 1e3:>12.1f} "
                  f"{m_ours / m_base:>6.1f}x")


if __name__ == "__main__":
    main()
