"""`memvault project-vault` (cron-safe) and the watch command's wiring."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click
import pytest
from click.testing import CliRunner
from memvault.cli import main
from memvault.home.migrations import open_home_db
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write
from memvault.vault import files as vault_files_module
from memvault.vault.bookkeeping import vault_status
from memvault.vault.projector import vault_lock


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home with 12 objects (the vault's commands are part of `memvault`)."""
    assert {"project-vault", "watch"} <= set(main.list_commands(click.Context(main)))
    root = tmp_path / "home"
    monkeypatch.setenv("MEMVAULT_HOME", str(root))  # never the real ~/.memvault
    conn = open_home_db(root / "memory.db")
    with write(conn):
        for i in range(12):
            save_object(conn, ObjectRecord(id=f"todo:t{i:02d}", type="todo", name=f"T{i}"),
                        datetime(2026, 10, 5, 9, i, tzinfo=UTC))
    conn.close()
    return root


def run(home, *args: str):
    return CliRunner().invoke(main, ["--home", str(home), *args])


def test_project_vault_renders_one_batch_then_everything(home) -> None:
    first = run(home, "project-vault")
    assert first.exit_code == 0, first.output
    # 12 todos plus the built-in project:daily (created when the CLI opened the memory, i.e.
    # newest, so rendered last): one batch of 10, then the other 3.
    assert "10 objects rendered" in first.output and "3 objects still pending" in first.output
    rest = run(home, "project-vault", "--all", "--json")
    data = json.loads(rest.output)
    assert data["objects"] == 3 and data["remaining"] == 0
    assert len([p for p in data["written"] if p.startswith("objects/project/")]) == 1
    assert (home / "vault" / "objects" / "README.md").is_file()
    assert run(home, "project-vault", "--quiet").output == ""


def test_project_vault_fails_loudly_and_records_the_failure(home, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(vault_files_module, "atomic_write", broken)
    monkeypatch.setattr("memvault.vault.file_writes.atomic_write", broken)
    monkeypatch.setattr("memvault.vault.core_sync.atomic_write", broken)
    result = run(home, "project-vault", "--quiet")
    assert result.exit_code == 1
    assert "Read-only file system" in result.output
    conn = open_home_db(home / "memory.db")
    try:
        failed = {e["object_id"] for e in vault_status(conn)["errors"]}
        assert failed == {f"todo:t{i:02d}" for i in range(10)} | {
            "AGENTS.md", "SOUL.md", "USER.md", "objects/README.md"}
    finally:
        conn.close()


def test_an_overlapping_cron_run_skips_quietly(home) -> None:
    (home / "vault").mkdir(mode=0o700, parents=True, exist_ok=True)
    with vault_lock(home / "vault"):
        result = run(home, "project-vault", "--quiet")
    assert result.exit_code == 0 and result.output == ""
    assert not (home / "vault" / "objects").exists()


@pytest.mark.parametrize("flag", ["--rebuild", "--all"])
def test_a_full_render_that_cannot_run_says_so_and_fails(home, flag: str) -> None:
    (home / "vault").mkdir(mode=0o700, parents=True, exist_ok=True)
    with vault_lock(home / "vault"):
        result = run(home, "project-vault", flag, "--quiet")
    assert result.exit_code == 1
    assert f"{flag} did not run" in result.output
    assert not (home / "vault" / "objects").exists()


def test_watch_is_a_command_with_help(home) -> None:
    result = run(home, "watch", "--help")
    assert result.exit_code == 0 and "AGENTS.md" in result.output
