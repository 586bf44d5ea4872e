"""`memvault export DIR` and `memvault restore DIR`: everything out, and back with every id."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

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


# -- hostile edits: every row is checked as the engine's writers check it -------------------------
@pytest.fixture(scope="module")
def small_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small home's export: three events (one of two hot fragments), a core file."""
    base = tmp_path_factory.mktemp("small")
    home, out = base / "home", base / "export"
    with Memory.open(home) as mem:
        mem.append_event("first line of the day", key="k-1", meta={"from": "test"})
        mem.append_event("second line")
        mem.append_event("long " * 500)  # 2,500 chars: two hot fragments
        mem.write_core_file("USER.md", "# User\n\nlikes tea\n")
    run_cli(CliRunner(), "--home", str(home), "export", str(out))
    return out


def tampered(export: Path, tmp_path: Path, table: str,
             edit: Any) -> Path:
    """A copy of `export` with `table`'s lines edited by `edit(lines) -> lines` and the
    manifest made to match (as an editor who knows the format would)."""
    out = tmp_path / "tampered"
    shutil.copytree(export, out)
    name = f"{table}.jsonl"
    lines = edit((out / name).read_text("utf-8").splitlines())
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    os.chmod(out / name, 0o600)
    (out / name).write_bytes(data)
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    manifest["files"][name].update(rows=len(lines), bytes=len(data),
                                   sha256=hashlib.sha256(data).hexdigest())
    os.chmod(out / "manifest.json", 0o600)
    (out / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    return out


def edit_row(index: int, **changes: Any) -> Any:
    """An edit that sets `changes` on row `index` (0-based) of a file."""
    def edit(lines: list[str]) -> list[str]:
        row = json.loads(lines[index])
        row.update(changes)
        return [*lines[:index], json.dumps(row, ensure_ascii=False), *lines[index + 1:]]
    return edit


DEEP = '{"id": 9, "meta": ' + "[" * 100_000 + "]" * 100_000 + "}"
REFUSALS = {
    "a text that is a number": ("events", edit_row(0, text=42), 1, "text must be text"),
    "an id that is text": ("events", edit_row(1, id="abc"), 2, "id must be an integer"),
    "an id that is a numeric string": ("events", edit_row(1, id="2"), 2, "id must be an integer"),
    "a duplicate id": ("events", lambda ls: [*ls, ls[0]], 4, "repeats a row before it"),
    "a text too long": ("events", edit_row(0, text="a" * 40_000), 1, "at most 32,000"),
    "a NUL in a text": ("events", edit_row(0, text="a\x00b"), 1, "NUL character"),
    "a meta that is no object": ("events", edit_row(0, meta="[1, 2]"), 1,
                                 "meta must be a JSON object"),
    "an empty source": ("events", edit_row(0, source=""), 1, "source must be a non-empty"),
    "a key too long": ("events", edit_row(0, key="k" * 201), 1, "a key holds at most 200"),
    "a time that is none": ("events", edit_row(0, occurred_at="yesterday-ish"), 1,
                            "occurred_at"),
    "a true/false for a number": ("events", edit_row(0, chars=True), 1,
                                  "chars must be an integer, got true"),
    "a nested value": ("core_files", edit_row(0, content={"a": 1}), 1,
                       "content must be text, got an object"),
    "a line nesting too deep": ("events", lambda ls: [*ls, DEEP], 4,
                                "nested more than 64 levels"),
    "a line that is no object": ("events", lambda ls: [*ls, "[1, 2]"], 4,
                                 "expected a JSON object"),
    "a blank line": ("events", lambda ls: [ls[0], "", *ls[1:]], 2, "broken JSON"),
    "a fragment outside its event": ("hot_nodes", edit_row(0, end_char=5_000), 1,
                                     "not a slice of event"),
    "a fragment of no event": ("hot_nodes", edit_row(0, event_id=77), 1,
                               "which the export does not hold"),
    "an unknown column": ("events", edit_row(0, colour="red"), 1, "columns this memvault"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_restore_refuses_a_hostile_row_naming_its_file_and_line(
    small_export: Path, runner: CliRunner, tmp_path: Path, case: str,
) -> None:
    table, edit, line, said = REFUSALS[case]
    out = tampered(small_export, tmp_path, table, edit)
    target = tmp_path / "target"
    result = run_cli(runner, "--home", str(target), "restore", str(out), code=1)
    assert f"{table}.jsonl line {line}: " in result.output and said in result.output, (
        result.output)
    assert "Traceback" not in result.output and "nothing was written" in result.output
    with Memory.open(target) as mem:
        assert mem.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
        assert mem.conn.execute("SELECT COUNT(*) FROM core_files").fetchone()[0] == 0


def test_restore_refuses_a_line_longer_than_any_row_without_reading_it_whole(
    small_export: Path, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memvault.home import restore

    monkeypatch.setattr(restore, "MAX_LINE_BYTES", 1_000)
    out = tampered(small_export, tmp_path, "events", edit_row(1, text="x" * 2_000))
    result = run_cli(runner, "--home", str(tmp_path / "t"), "restore", str(out), code=1)
    assert "events.jsonl line 2: longer than 1,000 bytes" in result.output


def test_restore_refuses_a_row_naming_a_missing_one_and_a_row_count_off_the_manifest(
    small_export: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    out = tampered(small_export, tmp_path, "archive_queue",
                   lambda ls: [json.dumps({"event_id": 99, "state": "pending",
                                           "enqueued_at": "2026-01-01T00:00:00+00:00",
                                           "updated_at": "2026-01-01T00:00:00+00:00"})])
    result = run_cli(runner, "--home", str(tmp_path / "t1"), "restore", str(out), code=1)
    assert "archive_queue row" in result.output and "does not hold" in result.output
    manifest = json.loads((small_export / "manifest.json").read_text("utf-8"))
    manifest["files"]["events.jsonl"]["rows"] = 2
    fixed = tmp_path / "fewer"
    shutil.copytree(small_export, fixed)
    os.chmod(fixed / "manifest.json", 0o600)
    (fixed / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    result = run_cli(runner, "--home", str(tmp_path / "t2"), "restore", str(fixed), code=1)
    assert "3 rows, the manifest says 2" in result.output


def test_restore_derives_again_what_the_file_could_have_falsified(
    small_export: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    """chars, est_tokens, occurred_us, a fragment's counts and a core file's sha256 come from
    the text, never from the file; what ingest accepts (a terminal escape in raw text) is
    accepted as ingest accepts it."""
    out = tampered(small_export, tmp_path, "events",
                   edit_row(0, chars=5, est_tokens=999, occurred_us=0,
                            text="first line of the day \x1b[31m"))
    events_fixed = out
    nodes = [json.loads(line) for line in
             (events_fixed / "hot_nodes.jsonl").read_text("utf-8").splitlines()]
    out2 = tampered(events_fixed, tmp_path / "b", "hot_nodes",
                    lambda ls: [json.dumps({**n, "chars": 1, "est_tokens": 999}) for n in nodes])
    out3 = tampered(out2, tmp_path / "c", "core_files", edit_row(0, sha256="0" * 64))
    target = tmp_path / "target"
    run_cli(runner, "--home", str(target), "restore", str(out3))
    with Memory.open(target) as mem:
        row = mem.conn.execute("SELECT * FROM events WHERE id = 1").fetchone()
        assert row["text"] == "first line of the day \x1b[31m" and row["chars"] == 27
        assert row["est_tokens"] == (27 + 3) // 4
        assert row["occurred_us"] != 0
        fragments = mem.conn.execute(
            "SELECT n.chars, n.start_char, n.end_char, n.est_tokens FROM hot_nodes n"
            " WHERE kind = 'raw' ORDER BY id").fetchall()
        assert all(chars == end - start and tokens != 999
                   for chars, start, end, tokens in fragments)
        core = mem.conn.execute("SELECT content, sha256 FROM core_files").fetchone()
        assert core[1] == hashlib.sha256(core[0].encode()).hexdigest()


def test_restore_refuses_a_fifo_in_the_export_without_waiting(
    small_export: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    out = tmp_path / "export"
    shutil.copytree(small_export, out)
    os.chmod(out / "events.jsonl", 0o600)
    (out / "events.jsonl").unlink()
    os.mkfifo(out / "events.jsonl")  # nobody writes to it: reading it would wait forever
    result = run_cli(runner, "--home", str(tmp_path / "t"), "restore", str(out), code=1)
    assert "events.jsonl is not a regular file" in result.output
