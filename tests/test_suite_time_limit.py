"""No test can hang the suite: pytest-timeout fails a test that runs past its limit.

The limit is set once in pyproject.toml ([tool.pytest.ini_options] timeout); a slow test may
carry its own `@pytest.mark.timeout(N)`. The proof runs a child pytest, with this project's
configuration, on a test that spins forever: it must fail on its own and the next test still run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SPINNING = '''
import pytest


@pytest.mark.timeout(1)
def test_spins_forever():
    while True:
        pass


def test_after_the_hang():
    assert True
'''


def test_the_suite_has_a_default_time_limit(request: pytest.FixtureRequest) -> None:
    limit = float(request.config.getini("timeout"))
    assert 0 < limit <= 600
    assert request.config.getini("timeout_method") == "signal"


def test_a_test_that_spins_forever_fails_and_the_suite_goes_on(tmp_path: Path) -> None:
    (tmp_path / "test_spin.py").write_text(SPINNING, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"),
         "--rootdir", str(tmp_path), str(tmp_path / "test_spin.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Timeout (>1.0s)" in done.stdout, done.stdout
    assert "1 failed, 1 passed" in done.stdout, done.stdout
