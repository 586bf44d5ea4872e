"""Tampered files in the home get a clear line naming the file, never SQLite's or Python's own
words: a linked or FIFO `vault.lock`, a linked `memory.db-shm`; a core file hard-linked to a
file outside the vault is not imported; files under vault/ that others may read are tightened by
a writing open and reported by `check`."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.base.errors import StoreError
from memvault.objects.corefiles import read_core_file
from memvault.vault.bookkeeping import vault_status
from memvault.vault.watcher import VaultWatcher
from vault_support import open_memory, project

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
OUTSIDE = "root:x:0:0:root:/root:/bin/bash\n"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def projected(home: Path) -> Path:
    """A home whose vault has been projected once (AGENTS.md v1 in it)."""
    with open_memory(home) as mem:
        mem.write_core_file("AGENTS.md", "# Agents\n\nv1\n")
        project(mem)
    return home


# -- vault.lock -------------------------------------------------------------------------------

@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_a_tampered_vault_lock_is_replaced_and_the_projection_runs(
        projected: Path, runner: CliRunner, tmp_path: Path, plant: str) -> None:
    if plant == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    lock = projected / "vault.lock"
    target = tmp_path / "elsewhere.txt"
    target.write_text(OUTSIDE, encoding="utf-8")
    lock.unlink(missing_ok=True)
    if plant == "symlink":
        lock.symlink_to(target)
        what = "a symbolic link"
    else:
        os.mkfifo(lock)
        what = "a FIFO"
    result = run_cli(runner, "project-vault", "--all")
    assert f"removed {lock}: it was {what}, not the vault projection's lock file" in result.output
    assert "not seekable" not in result.output and "Too many levels" not in result.output
    assert stat.S_ISREG(lock.lstat().st_mode)  # the projection made its own lock file again
    assert target.read_text(encoding="utf-8") == OUTSIDE  # what the link named: untouched


@pytest.mark.parametrize("plant", ["symlink", "fifo", "folder"])
def test_the_lock_opener_names_a_lock_file_that_is_not_a_file(tmp_path: Path,
                                                               plant: str) -> None:
    from memvault.base.errors import ConfigError
    from memvault.base.home_trust import open_lock_file

    lock = tmp_path / "vault.lock"
    fd = open_lock_file(lock)  # a regular file: made 0600, opened
    os.close(fd)
    assert mode(lock) == 0o600
    lock.unlink()
    if plant == "symlink":
        lock.symlink_to(tmp_path / "elsewhere")
    elif plant == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(lock)
    else:
        lock.mkdir()
    what = {"symlink": "is a symbolic link", "fifo": "is a FIFO",
            "folder": "is a folder"}[plant]
    with pytest.raises(ConfigError, match=f"vault.lock {what}"):
        open_lock_file(lock)
    assert not (tmp_path / "elsewhere").exists()


def test_a_folder_as_the_vault_lock_is_named_and_left_alone(projected: Path,
                                                            runner: CliRunner) -> None:
    lock = projected / "vault.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    (lock / "keep.txt").write_text("mine", encoding="utf-8")
    with Memory.open(projected) as mem:
        assert any("vault.lock is a folder where the vault projection keeps its lock file" in n
                   for n in mem.notices)
    assert (lock / "keep.txt").read_text(encoding="utf-8") == "mine"


# -- memory.db-wal / -shm -----------------------------------------------------------------------

@pytest.mark.parametrize("part", ["memory.db-shm", "memory.db-wal"])
def test_a_linked_wal_or_shm_is_one_line_naming_it(made_home: Path, runner: CliRunner,
                                                    tmp_path: Path, part: str) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"\0" * 64)
    (made_home / part).unlink(missing_ok=True)
    (made_home / part).symlink_to(target)
    for args in (["status"], ["core", "set", "USER.md", "-"]):
        result = run_cli(runner, *args, code=1, input="# me\n")
        assert f"{made_home / part} is a symbolic link" in result.output
        assert "unable to open database file" not in result.output
    with pytest.raises(StoreError, match=f"{part} is a symbolic link"):
        Memory.open(made_home)
    assert target.read_bytes() == b"\0" * 64


@pytest.mark.parametrize("plant", ["fifo", "dev-zero"])
def test_a_database_that_is_not_a_file_is_one_line_never_a_hang(made_home: Path,
                                                                 plant: str) -> None:
    db = made_home / "memory.db"
    for part in ("memory.db", "memory.db-wal", "memory.db-shm"):
        (made_home / part).unlink(missing_ok=True)
    if plant == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(db)
        what = "a FIFO"
    else:
        db.symlink_to("/dev/zero")
        what = "a device"
    for args in (["status"], ["core", "set", "USER.md", "/dev/null"]):
        child = subprocess.run(  # a child, bounded: a regression here hangs rather than fails
            [sys.executable, "-c", "from memvault.cli import main; main()", *args],
            capture_output=True, text=True, timeout=60, env=os.environ.copy())
        assert child.returncode == 1
        assert f"{db} is {what}, not a regular file: SQLite cannot use it" in child.stderr
        assert "disk I/O error" not in child.stderr and "Traceback" not in child.stderr
    assert plant == "dev-zero" or stat.S_ISFIFO(db.lstat().st_mode)  # left alone


def test_a_linked_database_file_still_works(made_home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.db"
    (made_home / "memory.db").rename(elsewhere)
    (made_home / "memory.db").symlink_to(elsewhere)
    with Memory.open(made_home, readonly=True) as mem:
        assert mem.status()["events"]["total"] == 1


@pytest.fixture
def made_home(home: Path) -> Path:
    with Memory.open(home) as mem:
        mem.append_event("the Aurora beta ships on Friday")
    return home


# -- a hard-linked core file ----------------------------------------------------------------

def test_a_hard_linked_core_file_is_neither_imported_nor_overwritten(home: Path,
                                                                     tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(OUTSIDE, encoding="utf-8")
    with open_memory(home) as mem:
        mem.write_core_file("USER.md", "# User\n\nv1\n")
        project(mem)
        user = mem.config.vault_path / "USER.md"
        user.unlink()
        os.link(outside, user)  # same device: tmp_path holds both
        result = project(mem)
        [core] = [c for c in result.core if c["name"] == "USER.md"]
        assert core["action"] == "refused" and "has 2 hard links" in core["message"]
        [seen] = VaultWatcher.for_config(mem.config, clock=mem.clock).handle(
            mem.conn, ["USER.md"])
        assert seen.action == "refused" and "hard links" in seen.message
        assert read_core_file(mem.conn, "USER.md")["content"] == "# User\n\nv1\n"
        reports = [(r["path"], r["kind"]) for r in vault_status(mem.conn)["hand_edits"]]
        assert ("USER.md", "core_refused") in reports
    assert outside.read_text(encoding="utf-8") == OUTSIDE
    assert os.stat(outside).st_nlink == 2  # left as it is: the person decides


# -- permissions under vault/ ---------------------------------------------------------------

def test_loose_files_under_the_vault_are_reported_and_tightened(projected: Path,
                                                                 runner: CliRunner) -> None:
    vault = projected / "vault"
    agents = vault / "AGENTS.md"
    objects = vault / "objects"
    os.chmod(agents, 0o644)
    os.chmod(objects, 0o755)
    report = run_cli(runner, "check", "--json", code=1).output
    assert "vault/AGENTS.md 0644" in report and "vault/objects 0755" in report
    with Memory.open(projected) as mem:
        [note] = [n for n in mem.notices if n.startswith("tightened")]
    assert "vault/AGENTS.md: was 0644, now 0600" in note
    assert "vault/objects: was 0755, now 0700" in note
    assert (mode(agents), mode(objects)) == (0o600, 0o700)
    assert '"kind": "permissions"' not in run_cli(runner, "check", "--json").output
