"""The vault recovers by itself: a projection that failed is retried once its cause is fixed,
and a projection killed between writing a file and recording it never fakes a hand edit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault.store.vault_tables import vault_status
from memvault.vault.paths import object_path
from vault_support import open_memory, put_object

needs_symlink = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")
PEOPLE = [f"person:p{i:02d}" for i in range(12)]


def errors_and_pending(home: Path) -> tuple[int, int]:
    with open_memory(home) as mem:
        status = vault_status(mem.conn)
        return status["error_total"], status["pending_objects"]


@needs_symlink
def test_objects_that_failed_behind_a_linked_folder_are_retried_once_it_is_fixed(
    runner: CliRunner, home: Path, tmp_path: Path
) -> None:
    """A --rebuild while `objects/person` is a symlink fails for every person, also those with
    no change to render; once the folder is back, plain batch runs write them and `check`
    goes green, with no second --rebuild."""
    with open_memory(home) as mem:
        for object_id in PEOPLE:
            put_object(mem, object_id, object_id.upper())
        vault = mem.config.vault_path
    run_cli(runner, "project-vault", "--all", "--quiet")
    folder, outside = vault / "objects" / "person", tmp_path / "outside"
    folder.rename(outside)
    folder.symlink_to(outside, target_is_directory=True)
    with open_memory(home) as mem:
        put_object(mem, PEOPLE[0], summary="changed while the folder was a link")

    run_cli(runner, "project-vault", "--rebuild", "--quiet", code=1)
    assert errors_and_pending(home)[0] == len(PEOPLE)
    run_cli(runner, "check", code=1)

    folder.unlink()
    outside.rename(folder)  # fixed: the real folder is back
    run_cli(runner, "project-vault", "--quiet")  # one batch of 10 (failed owners go last)
    run_cli(runner, "project-vault", "--quiet")
    assert errors_and_pending(home) == (0, 0)
    assert "changed while the folder was a link" in (vault / object_path(PEOPLE[0])).read_text()
    report = json.loads(run_cli(runner, "check", "--json").stdout)
    assert report["ok"] and not report["problems"]
