"""The tree is ruff clean (pyproject.toml's rules), so CI catches what a reviewer would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff")
                    .exists(), reason="ruff is not installed (pip install -e '.[test]')")
def test_ruff_finds_nothing() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    done = subprocess.run([ruff, "check", "--no-cache", "."], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
