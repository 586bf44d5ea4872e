"""Shared fixtures: every test gets its own memory home in tmp_path, a manual clock and a runner.

Nothing here touches the network or the real ~/.memvault: MEMVAULT_HOME is always set.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import T0
from memvault import ManualClock, Memory


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh memory home (not yet created on disk) named by $MEMVAULT_HOME."""
    path = tmp_path / "home"
    monkeypatch.setenv("MEMVAULT_HOME", str(path))
    monkeypatch.setenv("COLUMNS", "200")  # rich tables: wide enough not to wrap short cells
    return path


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def mem(home: Path, clock: ManualClock) -> Iterator[Memory]:
    memory = Memory.open(home, clock=clock)
    try:
        yield memory
    finally:
        memory.close()


@pytest.fixture
def conn(mem: Memory) -> sqlite3.Connection:
    return mem.conn


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
