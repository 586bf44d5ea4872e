"""The tree is ruff clean (pyproject.toml's rules), so CI catches what a reviewer would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    # ruff is in the test extra: a missing ruff is a broken install, not a reason to skip.
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    assert Path(ruff).exists(), "ruff is not installed (pip install -e '.[test]')"
    done = subprocess.run([ruff, "check", "--no-cache", "."], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
