"""The vault trusts nothing on disk: symlinks and special files are never followed, read without
bound, or written through; the projector never writes outside the vault's real folder; a
deleted object file comes back on the next run, batch or --all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.objects.corefiles import core_file_history, read_core_file
from memvault.vault.bookkeeping import vault_status
from memvault.vault.files import VaultFolderError
from memvault.vault.paths import object_path, page_path
from memvault.vault.watcher import VaultWatcher
from vault_support import open_memory, project, put_object, relate, vault_files

JOIN_S = 30.0  # generous: only a real hang (a blocking open or read) exceeds it
SECRET = "root:x:0:0:root:/root:/bin/bash\napi_key = sk-live-0123456789\n"

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
needs_symlink = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")


@pytest.fixture
def vmem(tmp_path: Path):
    """A memory whose vault holds AGENTS.md v1, USER.md v1 (set by `core set`) and one object."""
    with open_memory(tmp_path / "home") as memory:
        memory.write_core_file("AGENTS.md", "# Agents\n\nv1\n")
        memory.write_core_file("USER.md", "# User\n\nset by core set\n")
        put_object(memory, "person:qhy", "秦浩宇", summary="the user")
        project(memory)
        yield memory


def watch_once(mem: Memory, *paths: str) -> list:
    """What the watcher makes of `paths` as they are on disk now (no thread, no timing)."""
    return VaultWatcher.for_config(mem.config, clock=mem.clock).handle(mem.conn, paths)


def open_reports(mem: Memory) -> list[tuple[str, str]]:
    return [(r["path"], r["kind"]) for r in vault_status(mem.conn)["hand_edits"]]


def finishes(call: Callable[[], Any]) -> Any:
    """Run `call` in a thread; assert it returned (a blocking open would hang it) and return
    its value (re-raising what it raised)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # surfaced in the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(JOIN_S)
    assert not thread.is_alive(), "the call hung"
    if "error" in box:
        raise box["error"]
    return box["value"]


def tree(root: Path) -> dict[str, bytes | str]:
    """Everything under `root` (files by bytes, folders and links by kind), for 'unchanged'."""
    found: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        found[rel] = "link" if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return found


# -- 1. core files: regular files inside the vault only --------------------------------------
@needs_symlink
def test_a_symlinked_core_file_is_neither_imported_nor_overwritten(
    vmem: Memory, tmp_path: Path
) -> None:
    secret = tmp_path / "passwd"
    secret.write_text(SECRET, encoding="utf-8")
    user = vmem.config.vault_path / "USER.md"
    user.unlink()
    user.symlink_to(secret)

    result = project(vmem)
    [core] = [c for c in result.core if c["name"] == "USER.md"]
    assert core["action"] == "refused" and "symbolic link" in core["message"]
    assert read_core_file(vmem.conn, "USER.md")["content"] == "# User\n\nset by core set\n"
    assert [h["origin"] for h in core_file_history(vmem.conn, "USER.md")] == ["api"]
    assert user.is_symlink() and os.readlink(user) == str(secret)  # not replaced either
    assert secret.read_text(encoding="utf-8") == SECRET
    assert open_reports(vmem) == [("USER.md", "core_refused")]

    [outcome] = watch_once(vmem, "USER.md")
    assert outcome.action == "refused" and "symbolic link" in outcome.message
    assert [h["origin"] for h in core_file_history(vmem.conn, "USER.md")] == ["api"]

    user.unlink()  # the link replaced by a real file: imported, the report closed
    user.write_text("# User\n\nreal edit\n", encoding="utf-8")
    assert [o.action for o in watch_once(vmem, "USER.md")] == ["imported"]
    assert open_reports(vmem) == []


@needs_symlink
def test_a_core_file_linked_to_dev_zero_is_refused_without_reading_it(
    vmem: Memory, tmp_path: Path
) -> None:
    """In a child with a 1 GiB address-space limit, so an unbounded read fails fast there."""
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    soul = vmem.config.vault_path / "SOUL.md"
    soul.unlink()
    soul.symlink_to("/dev/zero")
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from memvault import Memory\n"
        "from memvault.vault.projector import render_vault\n"
        "from memvault.vault.watcher import VaultWatcher\n"
        "with Memory.open(Path(sys.argv[1])) as mem:\n"
        "    r = render_vault(mem.conn, mem.config.vault_path, config=mem.config)\n"
        "    w = VaultWatcher.for_config(mem.config).handle(mem.conn, ['SOUL.md'])\n"
        "    print(json.dumps({'core': r.core, 'watch': [o.action for o in w]}))\n"
    )

    def limit_memory() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    child = subprocess.run(
        [sys.executable, "-c", script, str(vmem.config.home)], capture_output=True, text=True,
        preexec_fn=limit_memory, timeout=300, cwd=tmp_path,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    seen = json.loads(child.stdout)
    [core] = [c for c in seen["core"] if c["name"] == "SOUL.md"]
    assert core["action"] == "refused" and "symbolic link" in core["message"]
    assert seen["watch"] == ["refused"]
    assert ("SOUL.md", "core_refused") in open_reports(vmem)
    assert read_core_file(vmem.conn, "SOUL.md") is None


@needs_fifo
def test_a_fifo_as_a_core_file_is_refused_promptly(vmem: Memory) -> None:
    soul = vmem.config.vault_path / "SOUL.md"
    soul.unlink()
    os.mkfifo(soul)

    [outcome] = finishes(lambda: watch_once(vmem, "SOUL.md"))
    assert outcome.action == "refused" and "not a regular file" in outcome.message
    result = finishes(lambda: project(vmem))
    [core] = [c for c in result.core if c["name"] == "SOUL.md"]
    assert core["action"] == "refused"
    assert open_reports(vmem) == [("SOUL.md", "core_refused")]
    assert read_core_file(vmem.conn, "SOUL.md") is None
    assert soul.is_fifo()  # left alone, not replaced


@needs_fifo
def test_a_fifo_where_an_object_file_belongs_is_refused_promptly(vmem: Memory) -> None:
    rel = object_path("person:qhy")
    path = vmem.config.vault_path / rel
    path.unlink()
    os.mkfifo(path)
    [outcome] = finishes(lambda: watch_once(vmem, rel))
    assert outcome.action == "hand_edit" and "not a regular file" in outcome.message
    put_object(vmem, "person:qhy", summary="changed")
    result = finishes(lambda: project(vmem))
    [error] = result.errors
    assert error["object_id"] == "person:qhy" and "not a regular file" in error["error"]
    assert path.is_fifo()
    assert vault_status(vmem.conn)["error_total"] == 1


# -- 2. never write outside the vault's real folder ------------------------------------------
@needs_symlink
def test_a_symlinked_type_folder_is_not_written_through(vmem: Memory, tmp_path: Path) -> None:
    vault = vmem.config.vault_path
    outside = tmp_path / "outside"
    (vault / "objects" / "person").rename(outside)  # its files now live outside the vault
    (vault / "objects" / "person").symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    put_object(vmem, "person:qhy", summary="changed")
    for i in range(12):
        put_object(vmem, f"person:p{i:02d}", f"P{i}")

    result = project(vmem)
    assert tree(outside) == before
    failed = {e["object_id"] for e in result.errors}
    assert failed == {"person:qhy"} | {f"person:p{i:02d}" for i in range(12)}
    assert all("symbolic link" in e["error"] for e in result.errors)
    assert vault_status(vmem.conn)["error_total"] == 13
    project(vmem, rebuild=True)
    assert tree(outside) == before
    assert [o.action for o in watch_once(vmem, object_path("person:qhy"))] == ["hand_edit"]
    assert tree(outside) == before


@needs_symlink
def test_a_symlinked_objects_folder_is_not_written_through(vmem: Memory, tmp_path: Path) -> None:
    vault = vmem.config.vault_path
    outside = tmp_path / "outside"
    (vault / "objects").rename(outside)
    (vault / "objects").symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    put_object(vmem, "task:t", "T")
    result = project(vmem, rebuild=True)
    assert tree(outside) == before
    assert {e["object_id"] for e in result.errors} >= {"task:t", "objects/README.md"}


@needs_symlink
def test_a_symlinked_vault_root_is_refused_with_a_clear_line(
    vmem: Memory, tmp_path: Path
) -> None:
    vault = vmem.config.vault_path
    outside = tmp_path / "elsewhere"
    vault.rename(outside)
    vault.symlink_to(outside, target_is_directory=True)
    put_object(vmem, "task:t", "T")
    (outside / "USER.md").write_text("typed into the linked folder\n", encoding="utf-8")
    before = tree(outside)
    with pytest.raises(VaultFolderError, match="is a symbolic link"):
        project(vmem)
    with pytest.raises(VaultFolderError, match="is a symbolic link"):
        VaultWatcher.for_config(vmem.config).run(threading.Event())
    assert tree(outside) == before
    assert read_core_file(vmem.conn, "USER.md")["content"] == "# User\n\nset by core set\n"

    output = run_cli(CliRunner(), "--home", str(vmem.config.home), "project-vault",
                     code=1).output
    assert f"the vault {vault} is a symbolic link" in output
    assert tree(outside) == before


# -- 3. a deleted object file comes back --------------------------------------------------------
def test_a_deleted_object_file_is_restored_by_an_all_run(vmem: Memory) -> None:
    path = vmem.config.vault_path / object_path("person:qhy")
    original = path.read_bytes()
    path.unlink()
    assert vault_status(vmem.conn)["pending_objects"] == 0  # nothing marked it
    result = project(vmem)  # --all
    assert object_path("person:qhy") in result.written
    assert path.read_bytes() == original
    assert project(vmem).written == []


def test_a_deleted_object_file_is_restored_by_a_batch_run(vmem: Memory) -> None:
    path = vmem.config.vault_path / object_path("person:qhy")
    original = path.read_bytes()
    path.unlink()
    result = project(vmem, all=False)
    assert object_path("person:qhy") in result.written
    assert path.read_bytes() == original


def test_a_deleted_continuation_page_is_restored(vmem: Memory) -> None:
    for i in range(60):
        put_object(vmem, f"task:t{i:02d}", f"T{i}")
        relate(vmem, "person:qhy", "related_to", f"task:t{i:02d}")
    project(vmem)
    page = vmem.config.vault_path / page_path("person:qhy", 2)
    original = page.read_bytes()
    files = vault_files(vmem.config.vault_path)
    page.unlink()
    project(vmem, all=False)
    assert page.read_bytes() == original
    assert vault_files(vmem.config.vault_path) == files


# -- a killed projection's leftovers ------------------------------------------------------------
def _dead_pid() -> int:
    """The pid of a process that has exited (reaped), so no live writer owns it."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=JOIN_S)
    return child.pid


def test_a_killed_writers_temp_files_are_removed_by_the_next_full_run(vmem: Memory) -> None:
    folder = (vmem.config.vault_path / object_path("person:qhy")).parent
    dead = _dead_pid()
    leftovers = [folder / f".x.md.conflict.{dead}-4.memvault-tmp",
                 vmem.config.vault_path / f".AGENTS.md.{dead}-0.memvault-tmp"]
    live = folder / f".y.md.{os.getpid()}-9.memvault-tmp"  # this process: maybe in flight
    for path in (*leftovers, live):
        path.write_bytes(b"half a file")
    project(vmem, all=False)  # a batch run does not walk the vault
    assert all(p.exists() for p in leftovers)
    project(vmem)  # `project-vault` (--all)
    assert not any(p.exists() for p in leftovers)
    assert live.exists()
    assert open_reports(vmem) == []


def test_a_rebuild_removes_a_killed_writers_temp_files(vmem: Memory) -> None:
    folder = (vmem.config.vault_path / object_path("person:qhy")).parent
    leftover = folder / f".x.md.conflict.{_dead_pid()}-4.memvault-tmp"
    leftover.write_bytes(b"half a file")
    project(vmem, rebuild=True)  # what `project-vault --rebuild` runs
    assert not leftover.exists()
