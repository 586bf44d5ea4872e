"""A process loads what its command runs and no more (bench/cli_startup.py measures what that
costs): importing a command module of the CLI, `memvault --help`, a piped `memvault find` and
a capture hook load none of the heavy modules (rich, the secret detector, jinja2, watchfiles,
the mcp SDK, openai, pydantic, export, forget, status, the worker). Piped, find prints what
rich's console would, without rich; and a regular expression compiles when first used."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.base import patterns
from memvault.base.patterns import lazy_compile
from memvault.cli import app
from memvault.cli.app import COMMANDS, Line, write_lines

HEAVY = ("rich", "memvault.secrets.detector", "jinja2", "watchfiles", "mcp", "openai",
         "pydantic", "memvault.home.export", "memvault.home.forget", "memvault.home.status",
         "memvault.jobs.progress", "memvault.jobs.worker", "memvault.vault.render")
# Command modules whose own commands need the library at once (they open a home or serve it):
# importing them loads home.memory, still nothing of HEAVY but the detector for core's files.
NEEDS_MORE = {"core": ["memvault.secrets.detector"]}
SESSION = "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b"
CLI = "import sys; from memvault.cli import main; sys.exit(main())"


def modules_after(code: str, home: Path, args: list[str] | None = None,
                  stdin: bytes | None = None) -> set[str]:
    """Every module loaded once `code` has run in a fresh interpreter (stdout piped)."""
    script = (f"import atexit, sys\n"
              f"atexit.register(lambda: print('LOADED', *sorted(sys.modules), file=sys.stderr))\n"
              f"{code}\n")
    out = subprocess.run([sys.executable, "-c", script, *(args or [])], input=stdin,
                         capture_output=True, check=True, timeout=60,
                         env={"MEMVAULT_HOME": str(home), "PATH": ""})
    line = [x for x in out.stderr.decode().splitlines() if x.startswith("LOADED ")][-1]
    return set(line.split()[1:])


def loaded(code: str, home: Path, args: list[str] | None = None,
           stdin: bytes | None = None) -> list[str]:
    """The modules of HEAVY loaded once `code` has run in a fresh interpreter (stdout piped)."""
    modules = modules_after(code, home, args, stdin)
    return [m for m in HEAVY if m in modules or any(n.startswith(m + ".") for n in modules)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("module", sorted({target.partition(":")[0]
                                           for target in COMMANDS.values()}))
def test_importing_a_command_module_loads_no_heavy_module(home: Path, module: str) -> None:
    assert loaded(f"import memvault.cli.{module}", home) == NEEDS_MORE.get(module, [])


@pytest.mark.timeout(60)
def test_the_package_face_loads_no_heavy_module_nor_the_command_line(home: Path) -> None:
    modules = modules_after("from memvault import Memory, NewEvent, ManualClock", home)
    assert [m for m in HEAVY if m in modules] == []
    assert "click" not in modules


@pytest.mark.timeout(60)
def test_the_help_loads_no_heavy_module_nor_the_settings(home: Path) -> None:
    modules = modules_after(CLI, home, ["--help"])
    assert [m for m in HEAVY if m in modules] == []
    assert "memvault.base.settings" not in modules  # the home is not opened for the listing


@pytest.mark.timeout(60)
def test_a_piped_find_loads_no_heavy_module_but_the_detector_it_masks_with(home: Path) -> None:
    with Memory.open(home) as mem:
        mem.append_event("Met Zhang Wei about the migration runbook", source="user")
    # The detector is find's to load: what it shows is scanned for secrets (masked).
    assert set(loaded(CLI, home, ["find", "runbook"])) <= {"memvault.secrets.detector"}
    # hashlib (OpenSSL) makes masking's marks, which a read never makes
    assert "hashlib" not in modules_after(CLI, home, ["find", "runbook"])


@pytest.mark.timeout(60)
def test_a_capture_hook_loads_no_heavy_module(home: Path, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_text(json.dumps({
        "type": "user", "uuid": "u-1", "sessionId": SESSION,
        "timestamp": "2026-10-13T12:00:00.000Z",
        "message": {"role": "user", "content": "When is the dentist?"}}) + "\n",
        encoding="utf-8")
    payload = json.dumps({"session_id": SESSION, "transcript_path": str(transcript),
                          "hook_event_name": "Stop"}).encode()
    assert loaded(CLI, home, ["hook", "claude-code"], stdin=payload) == []
    with Memory.open(home, readonly=True) as mem:
        assert mem.status()["events"]["total"] == 1  # the hook did its work


LINES = [
    Line("find 'runbook': 2 hits"), Line("1. event 12  0.504  2026-10-13T12:30:00+08:00"),
    Line("    Met Zhang Wei about the [bold]migration[/bold] runbook :smile:", terms=True),
    Line("    why: runbook; migration"), Line("2. person:zhang-wei  0.300  张伟 (archived)"),
    Line("    我是张伟，负责后端。 مرحبا e\u0301 👍🏽", terms=True),
    Line("    tab\there, bell\a, carriage\rreturn, escape \x1b[31mred"),
    Line("    bidi \u202eoverride\u202c and zero\u200bwidth"),
    Line("3 events are not indexed yet", style="yellow"), Line(""),
]


def test_piped_lines_are_what_the_console_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console
    from rich.text import Text

    expected = io.StringIO()
    console = Console(file=expected, highlight=False, soft_wrap=True)
    for line in LINES:
        console.print(Text(line.text), style=line.style, soft_wrap=True)
    shown = io.StringIO()
    monkeypatch.setattr(sys, "stdout", shown)
    write_lines(LINES)
    assert shown.getvalue() == expected.getvalue()


@pytest.mark.parametrize("columns", ["80", "30"])
def test_find_prints_the_same_lines_piped_as_through_the_console(
        home: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    """TTY_COMPATIBLE=0 keeps the output plain but sends it through rich's console (the path
    of a narrow terminal): the lines are those the piped path writes, the query's brackets
    included (once read as rich markup)."""
    with Memory.open(home) as mem:
        for text in ("Met Zhang Wei about the migration runbook [draft] :smile: 张伟说好的",
                     "The runbook\tmoved to the wiki; 迁移 runbook v2"):
            mem.append_event(text, source="user")
    monkeypatch.setenv("COLUMNS", columns)
    piped = run_cli(runner, "find", "runbook [draft] :smile:").output
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    assert run_cli(runner, "find", "runbook [draft] :smile:").output == piped
    assert piped.startswith("find 'runbook [draft] :smile:': 2 hits\n")


def test_the_piped_width_is_the_one_rich_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    for columns in ("37", "200", None):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert app.plain_width() == Console(file=io.StringIO()).width


def test_a_lazy_pattern_compiles_when_first_used_and_matches_as_compiled_does() -> None:
    source = r"(?P<word>[a-z]+)-(\d+)"
    before = patterns.compiled.cache_info().currsize
    lazy = lazy_compile(source, re.IGNORECASE)
    assert lazy.pattern == source
    assert patterns.compiled.cache_info().currsize == before  # nothing compiled yet
    plain = re.compile(source, re.IGNORECASE)
    text = "Abc-12 and def-3, GHI-45"
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in plain.finditer(text)]
    assert lazy.search(text).groupdict() == plain.search(text).groupdict()  # type: ignore[union-attr]
    assert lazy.sub("x", text) == plain.sub("x", text)
    assert (lazy.flags, lazy.groups, lazy.groupindex) == (plain.flags, plain.groups,
                                                           plain.groupindex)
    assert patterns.compiled.cache_info().currsize == before + 1
    with pytest.raises(AttributeError):
        lazy.no_such_method  # type: ignore[attr-defined]  # noqa: B018
