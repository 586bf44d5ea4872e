"""Bad input in files: JSONL to ingest, memvault.toml, core files, hand-mangled vault files;
and the check that keeps the bad-input table in tests/README.md true.

Each case gets one clear message and loses nothing: lines before a bad JSONL line stay
stored, a refused core file leaves both the file and memory's last version, a mangled vault
file survives as a `.conflict` copy, a folder in the wrong place is left alone.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import count, write_config
from memvault import Memory
from memvault.base.config import load_config
from memvault.base.errors import ConfigError, IngestError, InputError
from memvault.cli import main
from memvault.objects.corefiles import core_file_history, read_core_file
from memvault.objects.records import get_object
from memvault.vault.bookkeeping import vault_status
from memvault.vault.files import VaultFolderError
from memvault.vault.paths import object_path
from memvault.vault.projector import render_vault
from memvault.vault.watcher import VaultWatcher
from vault_support import open_memory, project, put_object

TESTS = Path(__file__).resolve().parent


def good(text: str) -> bytes:
    return json.dumps({"text": text}, ensure_ascii=False).encode()


# -- ingest JSONL -----------------------------------------------------------------------------


def test_a_utf16_file_is_refused_on_line_1(mem: Memory) -> None:
    data = (good("第一条").decode() + "\n").encode("utf-16")
    with pytest.raises(IngestError) as info:
        mem.ingest(data.splitlines(keepends=True))
    assert str(info.value).startswith("line 1: not valid UTF-8 (byte 0)")
    assert "nothing was stored" in str(info.value)
    assert count(mem.conn, "events") == 0


def test_old_mac_line_ends_are_one_broken_line(mem: Memory) -> None:
    """A file split by CR alone reads as one line: refused as broken JSON, nothing stored."""
    data = good("a") + b"\r" + good("b") + b"\r"
    with pytest.raises(IngestError) as info:
        mem.ingest([data])  # binary file iteration splits on LF only
    assert "line 1: broken JSON: Extra data" in str(info.value)
    assert count(mem.conn, "events") == 0


@pytest.mark.parametrize("value", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_in_meta_is_a_bad_line(mem: Memory, value: bytes) -> None:
    """Python's json reads NaN; it is not JSON, so meta holding it would not read back."""
    with pytest.raises(IngestError) as info:
        mem.ingest([good("kept"), b'{"text": "x", "meta": {"n": ' + value + b"}}"])
    assert str(info.value).startswith("line 2: meta is not JSON-serialisable: NaN and "
                                      "Infinity are not JSON")
    assert info.value.stored == [1] and count(mem.conn, "events") == 1


@pytest.mark.parametrize("bad", [
    b'{"text": "x", "meta": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
    b'{"text": "x", "meta": {"n": ' + b"9" * 5_000 + b"}}",
])
def test_json_too_deep_or_a_number_too_long_is_a_bad_line(mem: Memory, bad: bytes) -> None:
    with pytest.raises(IngestError) as info:
        mem.ingest([good("kept"), bad])
    assert str(info.value).startswith("line 2: ")
    assert info.value.stored == [1] and count(mem.conn, "events") == 1


# -- memvault.toml ----------------------------------------------------------------------------


@pytest.mark.parametrize(("toml", "message"), [
    ("[compact]\ntarget_ratio = nan\n", "compact.target_ratio = nan: allowed range 0.1–0.95"),
    ("[worker]\npoll_s = inf\n", "worker.poll_s = inf: allowed range 0.05–60"),
    ("[compact.extra]\nx = 1\n", "compact.extra: unknown setting"),
    ("[compact]\nnodes_per_batch = [4]\n", "compact.nodes_per_batch = [4]: expected int"),
])
def test_odd_toml_values_name_the_key(home: Path, toml: str, message: str) -> None:
    write_config(home, toml)
    with pytest.raises(ConfigError) as info:
        load_config(home)
    assert message in str(info.value)
    assert not (home / "memory.db").exists()


# -- core files -------------------------------------------------------------------------------


def run(runner: CliRunner, *args: str, code: int, input: bytes | None = None) -> str:
    result = runner.invoke(main, list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"memvault {' '.join(args)} raised") from result.exception
    assert result.exit_code == code, (args, result.output)
    return result.output


@pytest.mark.parametrize(("data", "message"), [
    (b"a\x00b\n", "USER.md: content has a NUL character at char 1 (in -); USER.md left unchanged"),
    (b"x" * 1_025, "-: over the limit vault.core_file_max_bytes = 1,024 bytes (memvault.toml)"),
])
def test_core_set_refuses_nul_and_oversize_and_keeps_the_version(
    runner: CliRunner, home: Path, data: bytes, message: str
) -> None:
    write_config(home, "[vault]\ncore_file_max_bytes = 1024\n")
    run(runner, "core", "set", "USER.md", "-", code=0, input="浩宇\n".encode())
    assert message in run(runner, "core", "set", "USER.md", "-", code=1, input=data)
    with Memory.open(home, readonly=True) as mem:
        assert read_core_file(mem.conn, "USER.md")["content"] == "浩宇\n"
        assert len(core_file_history(mem.conn, "USER.md")) == 1


def test_core_set_of_a_folder_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    assert "is a directory" in run(runner, "core", "set", "AGENTS.md", str(tmp_path), code=2)


def test_a_nul_character_is_refused_by_the_engine(mem: Memory) -> None:
    mem.write_core_file("SOUL.md", "calm\n")
    with pytest.raises(InputError, match="SOUL.md: content has a NUL character at char 3"):
        mem.write_core_file("SOUL.md", "bad\x00")
    assert read_core_file(mem.conn, "SOUL.md")["content"] == "calm\n"


@pytest.fixture
def vmem(tmp_path: Path):
    """A memory with AGENTS.md and one person, its vault rendered."""
    with open_memory(tmp_path / "home") as memory:
        memory.write_core_file("AGENTS.md", "# Agents\n\nv1\n")
        put_object(memory, "person:qhy", "秦浩宇", summary="the user")
        project(memory)
        yield memory


def watch_once(mem: Memory, *paths: str) -> list:
    """What the watcher makes of `paths` as they are on disk now (no thread, no timing)."""
    return VaultWatcher.for_config(mem.config, clock=mem.clock).handle(mem.conn, paths)


def test_a_core_file_with_a_nul_is_refused_and_left_alone(vmem: Memory) -> None:
    agents = vmem.config.vault_path / "AGENTS.md"
    agents.write_bytes(b"# Agents\n\x00\n")
    [outcome] = watch_once(vmem, "AGENTS.md")
    assert outcome.action == "refused"
    assert "AGENTS.md holds a NUL character: not imported" in outcome.message
    assert "memory keeps version 1" in outcome.message
    assert agents.read_bytes() == b"# Agents\n\x00\n"
    assert read_core_file(vmem.conn, "AGENTS.md")["content"] == "# Agents\n\nv1\n"


def test_a_folder_named_like_a_core_file_is_reported_and_left_alone(vmem: Memory) -> None:
    agents = vmem.config.vault_path / "AGENTS.md"
    agents.unlink()
    agents.mkdir()
    (agents / "notes.txt").write_text("mine\n", encoding="utf-8")
    [outcome] = watch_once(vmem, "AGENTS.md")
    assert outcome.action == "error"
    assert "is a folder where the vault keeps a file: move it away" in outcome.message
    result = project(vmem)
    [error] = [e for e in result.errors if e["object_id"] == "AGENTS.md"]
    assert "is a folder where the vault keeps a file" in error["error"]
    assert (agents / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert read_core_file(vmem.conn, "AGENTS.md")["version"] == 1
    assert vault_status(vmem.conn)["error_total"] == 1


def test_files_that_are_not_core_or_projected_files_are_left_alone(vmem: Memory) -> None:
    vault = vmem.config.vault_path
    mine = {"agents.md": "lower case\n", "NOTES.md": "my notes\n",
            "objects/person/my-own-note.md": "about qhy\n"}
    for rel, text in mine.items():
        (vault / rel).write_text(text, encoding="utf-8")
    assert watch_once(vmem, *mine) == []
    project(vmem, rebuild=True)
    assert {rel: (vault / rel).read_text(encoding="utf-8") for rel in mine} == mine
    assert [h["origin"] for h in core_file_history(vmem.conn, "AGENTS.md")] == ["api"]


# -- vault object files -----------------------------------------------------------------------


def test_a_mangled_object_file_is_reported_then_kept_byte_for_byte(vmem: Memory) -> None:
    rel = object_path("person:qhy")
    path = vmem.config.vault_path / rel
    original = path.read_bytes()
    mangled = b"---\nid: [unclosed\n\xff\xfe not utf-8 \x00\n" + original[40:]
    path.write_bytes(mangled)
    [outcome] = watch_once(vmem, rel)
    assert (outcome.action, outcome.object_id) == ("hand_edit", "person:qhy")
    assert "not imported" in outcome.message and ".conflict-1.md" in outcome.message
    assert get_object(vmem.conn, "person:qhy").summary == "the user"
    result = project(vmem)
    assert result.conflicts == [rel.replace(".md", ".conflict-1.md")] and result.errors == []
    assert path.read_bytes() == original
    assert path.with_name(path.stem + ".conflict-1.md").read_bytes() == mangled


def test_a_folder_where_an_object_file_belongs_is_reported_and_left_alone(
    vmem: Memory
) -> None:
    rel = object_path("person:qhy")
    path = vmem.config.vault_path / rel
    path.unlink()
    path.mkdir()
    (path / "keep.txt").write_text("mine\n", encoding="utf-8")
    [outcome] = watch_once(vmem, rel)
    assert outcome.action == "error" and "is a folder where the vault keeps a file" in \
        outcome.message
    put_object(vmem, "person:qhy", summary="changed")
    result = project(vmem)
    [error] = result.errors
    assert error["object_id"] == "person:qhy" and error["path"] == rel
    assert "move it away (its contents are left alone)" in error["error"]
    assert (path / "keep.txt").read_text(encoding="utf-8") == "mine\n"
    assert vault_status(vmem.conn)["pending_objects"] == 1  # retried by the next run
    (path / "keep.txt").unlink()
    path.rmdir()
    assert project(vmem).errors == []
    assert "changed" in path.read_text(encoding="utf-8")


def test_a_symlinked_object_file_is_replaced_and_its_target_untouched(
    vmem: Memory, tmp_path: Path
) -> None:
    rel = object_path("person:qhy")
    path = vmem.config.vault_path / rel
    outside = tmp_path / "outside.md"
    outside.write_text("not the vault's\n", encoding="utf-8")
    path.unlink()
    path.symlink_to(outside)
    assert [o.action for o in watch_once(vmem, rel)] == ["hand_edit"]
    result = project(vmem)
    assert result.conflicts == [f"{rel}.conflict"]
    assert not path.is_symlink() and "秦浩宇" in path.read_text(encoding="utf-8")
    assert outside.read_text(encoding="utf-8") == "not the vault's\n"
    assert path.with_name(path.name + ".conflict").read_text(encoding="utf-8") == \
        "not the vault's\n"


def test_a_vault_that_is_a_file_is_one_line_for_both_commands(
    runner: CliRunner, home: Path
) -> None:
    run(runner, "ingest", "-", code=0, input=good("x") + b"\n")
    (home / "vault").write_text("mine\n", encoding="utf-8")
    for args in (("project-vault",), ("watch",)):
        output = run(runner, *args, code=1)
        assert f"Error: the vault {home / 'vault'} is a file, not a folder: move it away" \
            in output
        assert "Traceback" not in output
    assert (home / "vault").read_text(encoding="utf-8") == "mine\n"


def test_a_vault_folder_that_cannot_be_created_is_refused(vmem: Memory, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("mine\n", encoding="utf-8")
    with pytest.raises(VaultFolderError, match="cannot create the vault folder .*: Not a "
                                               "directory"):
        render_vault(vmem.conn, blocker / "vault")
    assert blocker.read_text(encoding="utf-8") == "mine\n"


# -- the table in tests/README.md -------------------------------------------------------------

_ROW_REF = re.compile(r"`(test_[\w]+\.py)::(test_\w+)`")


def table_refs() -> list[tuple[str, str]]:
    """Every `file::test` the bad-input table of tests/README.md points to, in order."""
    text = (TESTS / "README.md").read_text(encoding="utf-8")
    table = text[text.index("## Bad input"):]
    rows = [line for line in table.splitlines() if line.startswith("|")][2:]  # no header
    refs = []
    for row in rows:
        found = _ROW_REF.findall(row.split("|")[-2])
        assert found, f"a row without a test: {row}"
        refs += found
    return refs


def defined_tests(path: Path) -> set[str]:
    """Names of the module-level test functions of a test file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_test_the_bad_input_table_names_exists() -> None:
    refs = table_refs()
    assert len(refs) >= 40
    missing = [f"{file}::{name}" for file, name in refs
               if not (TESTS / file).is_file() or name not in defined_tests(TESTS / file)]
    assert missing == []


def test_every_bad_input_test_is_in_the_table() -> None:
    named = set(table_refs())
    files = sorted(TESTS.glob("test_bad_input*.py"))
    assert len(files) == 3
    unlisted = [f"{path.name}::{name}" for path in files for name in sorted(defined_tests(path))
                if (path.name, name) not in named and "table" not in name]
    assert unlisted == []
