"""`memvault export DIR` and `memvault restore DIR`: everything out, and back with every id."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.home.export import exported_tables


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo home (ingest, compact, organize, deep), built once for the module."""
    home = tmp_path_factory.mktemp("demo") / "home"
    run_cli(CliRunner(), "--home", str(home), "demo")
    return home


def copy_of(demo_home: Path, home: Path) -> Path:
    shutil.copytree(demo_home, home)
    return home


def table_rows(home: Path) -> dict[str, list[tuple]]:
    """Every exported (non-derived) table's rows, in rowid order."""
    conn = sqlite3.connect(home / "memory.db")
    try:
        return {table: conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
                for table in exported_tables(conn)}
    finally:
        conn.close()


def round_trip(runner: CliRunner, source: Path, tmp_path: Path) -> Path:
    """Export `source`, restore into a new home; assert check passes; return the new home."""
    out = tmp_path / "export"
    run_cli(runner, "--home", str(source), "export", str(out))
    target = tmp_path / "restored"
    report = json.loads(run_cli(runner, "--home", str(target), "restore", str(out),
                                "--json").stdout)
    assert report["check"]["ok"]
    run_cli(runner, "--home", str(target), "check")
    return target


def test_the_demo_home_round_trips_table_by_table(
    demo_home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    source = copy_of(demo_home, tmp_path / "source")
    target = round_trip(runner, source, tmp_path)
    before, after = table_rows(source), table_rows(target)
    assert before.keys() == after.keys()
    for table in before:
        assert after[table] == before[table], table
    assert before["events"] and before["objects"] and before["evidence"]
    with Memory.open(target) as mem:  # the derived recall index was rebuilt
        assert mem.find("Aurora")["hits"]
        assert "project:daily" in json.dumps(mem.read("project:daily"), ensure_ascii=False)


def test_a_home_after_merge_and_forget_round_trips_with_redirects_and_audit(
    demo_home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    source = copy_of(demo_home, tmp_path / "source")
    run_cli(runner, "--home", str(source), "merge", "person:mark-liu", "person:tom-becker")
    with Memory.open(source) as mem:
        some_text = mem.conn.execute(
            "SELECT substr(text, 1, 24) FROM events WHERE chars > 40 LIMIT 1").fetchone()[0]
    run_cli(runner, "--home", str(source), "forget", some_text, "--yes")
    target = round_trip(runner, source, tmp_path)
    before, after = table_rows(source), table_rows(target)
    for table in before:
        assert after[table] == before[table], table
    assert before["forget_audit"] and before["corrections"]
    with Memory.open(target) as mem:
        merged = mem.conn.execute(
            "SELECT redirect_to FROM objects WHERE id = 'person:mark-liu'").fetchone()[0]
        assert merged == "person:tom-becker"
        hits = mem.find(some_text)["hits"]
        assert some_text not in json.dumps(hits, ensure_ascii=False)
        assert mem.conn.execute("SELECT COUNT(*) FROM events WHERE instr(text, ?)",
                                (some_text,)).fetchone()[0] == 0


def test_export_is_private_and_says_it_holds_raw_text(
    demo_home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    out = tmp_path / "export"
    result = run_cli(runner, "--home", str(demo_home), "export", str(out))
    assert "raw text" in result.stderr and "secret" in result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    files = list(out.iterdir())
    assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    assert manifest["files"]["events.jsonl"]["rows"] == len(
        (out / "events.jsonl").read_text("utf-8").splitlines())
    assert "m007_event_keys" in manifest["migrations"]
    assert not any(t.startswith("recall_") for t in manifest["tables"])


def test_export_refuses_a_folder_that_holds_something_or_is_a_link(
    demo_home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    assert "not empty" in run_cli(runner, "--home", str(demo_home), "export", str(full),
                                  code=1).output
    assert (full / "keep.txt").read_text() == "mine"
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert "symbolic link" in run_cli(runner, "--home", str(demo_home), "export", str(link),
                                      code=1).output
    assert list(real.iterdir()) == []


def test_restore_refuses_a_home_that_holds_anything(
    demo_home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    out = tmp_path / "export"
    run_cli(runner, "--home", str(demo_home), "export", str(out))
    busy = tmp_path / "busy"
    with Memory.open(busy) as mem:
        mem.append_event("already here")
    result = run_cli(runner, "--home", str(busy), "restore", str(out), code=1)
    assert "not empty" in result.output and "1 events" in result.output
    with Memory.open(busy) as mem:
        assert [r[0] for r in mem.conn.execute("SELECT text FROM events")] == ["already here"]


def test_restore_checks_every_file_before_writing_anything(
    demo_home: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    out = tmp_path / "export"
    run_cli(runner, "--home", str(demo_home), "export", str(out))
    events = out / "events.jsonl"
    os.chmod(events, 0o600)
    events.write_text(events.read_text("utf-8").replace("Aurora", "Borealis"), "utf-8")
    target = tmp_path / "target"
    result = run_cli(runner, "--home", str(target), "restore", str(out), code=1)
    assert "events.jsonl" in result.output and "checksum" in result.output
    with Memory.open(target) as mem:
        assert mem.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
        assert mem.conn.execute("SELECT COUNT(*) FROM objects").fetchone()[0] == 1
    events.unlink()
    events.symlink_to(tmp_path / "elsewhere.jsonl")
    assert "symbolic link" in run_cli(runner, "--home", str(target), "restore", str(out),
                                      code=1).output
