"""Type-check the package as it installs: `python tests/typecheck.py` (exit status 1 on errors).

engine/ installs as `memvault` and vault/ as `memvault.vault` (pyproject.toml's package-dir). An
editable install provides that through an import hook mypy cannot follow, and checked as folders
the modules would be named engine.* and vault.*: every import between the two (`from ..vault…`
in the CLI, `from ..base…` in vault/) would resolve to nothing and be silently Any. So the
installed layout is rebuilt as symlinks under .mypy_cache/tree (pyproject.toml's mypy_path) and
mypy checks `memvault` there, with [tool.mypy]'s options; errors are shown at their repository
paths.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREE = REPO / ".mypy_cache" / "tree"
# Installed package -> repository folder, for the packages holding Python code.
LAYOUT = {"memvault": REPO / "engine", "memvault/vault": REPO / "vault"}


def build_tree() -> None:
    """Lay the package out under TREE as it installs: a real `memvault/` folder holding a link
    to each entry of engine/, and `memvault/vault` linking to vault/. Rebuilt every run, so a
    new subpackage is checked the first time."""
    shutil.rmtree(TREE, ignore_errors=True)
    root = TREE / "memvault"
    root.mkdir(parents=True)
    for entry in sorted(LAYOUT["memvault"].iterdir()):
        if entry.name != "__pycache__":
            (root / entry.name).symlink_to(entry)
    (root / "vault").symlink_to(LAYOUT["memvault/vault"])


def repository_path(line: str) -> str:
    """A mypy output line with its link-tree path replaced by the file's repository path."""
    tree = os.path.relpath(TREE, REPO) + "/memvault/"
    line = line.replace(tree + "vault/", "vault/")
    return line.replace(tree, "engine/")


def run_mypy(timeout_s: float = 600) -> tuple[int, str]:
    """(mypy's exit status, its report at repository paths)."""
    build_tree()
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")],
        cwd=REPO, capture_output=True, text=True, timeout=timeout_s)
    report = "\n".join(repository_path(line) for line in (done.stdout + done.stderr).splitlines())
    return done.returncode, report


if __name__ == "__main__":
    status, report = run_mypy()
    print(report)
    sys.exit(status)
