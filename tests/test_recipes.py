"""The recipes of docs/service.md ("Running it for good"), as written: its systemd units pass
`systemd-analyze verify` and its cron line runs. The one substitution is the one the page tells a
reader to make: the path of the `memvault` program (`~/memvault/.venv/bin/memvault`, where the
README's quick start installs it) becomes this install's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from memvault import Memory

REPO = Path(__file__).resolve().parents[1]
RECIPES = (REPO / "docs" / "service.md").read_text(encoding="utf-8")
PROGRAM = Path(sys.executable).parent / "memvault"  # the console script of this install
RECIPE_PROGRAM = ("%h/memvault/.venv/bin/memvault", "$HOME/memvault/.venv/bin/memvault")


def fenced(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", RECIPES, flags=re.S)


def unit_files() -> dict[str, str]:
    """Every systemd unit the page shows, by file name (from its `# ~/.config/...` line)."""
    units: dict[str, str] = {}
    for block in fenced("ini"):
        for part in re.split(r"^# ", block, flags=re.M):
            first, _, body = part.partition("\n")
            if first.startswith("~/.config/systemd/user/"):
                units[Path(first.strip()).name] = body
    return units


def test_the_service_page_has_the_recipes() -> None:
    assert {"memvault.service", "memvault-vault.service", "memvault-vault.timer"} <= set(
        unit_files())
    assert len(fenced("cron")) == 1
    for body in unit_files().values():
        assert "/.local/bin/" not in body  # the quick start never installs there


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_every_systemd_unit_verifies(tmp_path: Path) -> None:
    assert PROGRAM.exists()
    paths = []
    for name, body in unit_files().items():
        path = tmp_path / name
        path.write_text(body.replace(RECIPE_PROGRAM[0], str(PROGRAM)), encoding="utf-8")
        paths.append(str(path))
    done = subprocess.run(["systemd-analyze", "verify", *paths], capture_output=True, text=True,
                          timeout=120)
    problems = [line for line in (done.stdout + done.stderr).splitlines()
                if line.strip() and "memvault" in line]
    assert done.returncode == 0 and problems == [], done.stdout + done.stderr


def test_the_cron_line_runs(tmp_path: Path) -> None:
    (line,) = [x for x in fenced("cron")[0].splitlines() if x.strip()]
    command = " ".join(line.split()[5:]).replace(RECIPE_PROGRAM[1], str(PROGRAM))
    Memory.open(tmp_path / ".memvault").close()
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("MEMVAULT_HOME", None)
    done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""  # --quiet: cron mails nothing
    assert (tmp_path / ".memvault" / "vault" / "objects" / "README.md").is_file()
