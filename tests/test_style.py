"""The tree is ruff and mypy clean (pyproject.toml's rules), so CI catches what a reviewer would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typecheck import run_mypy

REPO = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    # ruff is in the test extra: a missing ruff is a broken install, not a reason to skip.
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    assert Path(ruff).exists(), "ruff is not installed (pip install -e '.[test]')"
    done = subprocess.run([ruff, "check", "--no-cache", "."], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(900)
def test_mypy_finds_nothing() -> None:
    # mypy is in the test extra; typecheck.py checks the package as it installs (`memvault`),
    # with pyproject.toml's [tool.mypy]. A cold run takes ~40 s, a warm one (.mypy_cache) ~5 s.
    status, report = run_mypy(timeout_s=840)
    assert status == 0, report
