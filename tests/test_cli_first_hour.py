"""A newcomer's first hour and the CLI's start-up (it loads only what a command needs).

- organize runs its job here by default and says what it recognised; --no-wait says who will
  run the job (a live worker) or how to run it; no command prints a Python repr.
- commands that change the memory refresh the vault (core set, organize) or say how.
- a missing home is refused except by the commands that make one.
- --home works after the subcommand too.
- `import memvault.cli` and `memvault find --json` load none of the heavy modules, in a home
  whose memvault.toml sets values too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.cli import main
from memvault.jobs.leases import acquire_lease, process_holder, release_lease

NOTES = [
    "Had lunch with an old friend today, we talked about moving to Lisbon.",
    "TODO: send the invoice to Tom by Friday",
    "The weather was nice, walked along the river after work.",
    "Long day. Meetings, then more meetings.",
]


def jsonl(*texts: str) -> str:
    return "".join(json.dumps({"text": t}) + "\n" for t in texts)


def no_repr(text: str) -> None:
    """Human output is prose or tables: never a Python dict repr or a bare None."""
    assert "{'" not in text and "': " not in text, text
    assert "None" not in text, text


@pytest.fixture
def notes(runner: CliRunner) -> None:
    """Four natural notes, compacted out of the hot timeline so organize has them queued."""
    run_cli(runner, "ingest", "-", input=jsonl(*NOTES))
    run_cli(runner, "compact")


# -- item 2 and 4: organize waits, reports what it recognised ------------------------------------


def test_organize_runs_its_job_and_reports_what_was_recognised(notes: None,
                                                              runner: CliRunner) -> None:
    result = run_cli(runner, "organize")
    no_repr(result.stdout)
    lines = result.stdout.splitlines()
    assert "organize job 2: done" in lines
    recognised = next(line for line in lines if line.startswith("recognised:"))
    assert "todo 1" in recognised and "kept in the archive only: 3" in recognised
    # Most notes went to the archive with the builtin model: say why and what to change.
    assert "docs/builtin-model.md" in result.stdout and "model.provider" in result.stdout


def test_organize_json_carries_the_final_state_and_the_counts(notes: None,
                                                              runner: CliRunner) -> None:
    data = json.loads(run_cli(runner, "organize", "--json").stdout)
    assert data["final_state"] == "done" and data["model"] == "builtin"
    assert data["recognised"] == {"new_objects": {"todo": 1},
                                  "events": {"linked": 1, "archive_only": 3, "blocked": 0}}


def test_a_partial_organize_says_which_events_are_still_blocked(notes: None, home: Path,
                                                              runner: CliRunner) -> None:
    with Memory.open(home) as mem, mem.conn:
        mem.conn.execute("UPDATE archive_queue SET state = 'blocked' WHERE event_id = 1")
    result = run_cli(runner, "organize")
    assert "organize job 2: partial (" in result.stdout
    assert "events still blocked: 1" in result.stdout
    assert "`memvault organize --retry-blocked`" in result.stdout  # the command, not Python
    assert "retry_blocked=True" not in result.stdout
    data = json.loads(run_cli(runner, "organize", "--json").stdout)
    assert data["final_state"] == "partial" and data["blocked_events"] == [1]
    assert "events still blocked: 1" in data["note"]


def test_organize_no_compact_with_nothing_queued_says_the_events_are_still_hot(
    runner: CliRunner,
) -> None:
    run_cli(runner, "ingest", "-", input=jsonl("TODO: call the bank"))
    result = run_cli(runner, "organize", "--no-compact")
    assert "1 event(s) are still in the hot timeline" in result.stdout
    assert "without --no-compact compacts them first" in result.stdout


def test_organize_right_after_ingest_compacts_the_turns_and_files_them(
    runner: CliRunner,
) -> None:
    run_cli(runner, "ingest", "-", input=jsonl("TODO: call the bank"))
    result = run_cli(runner, "organize")
    assert result.stdout.startswith("compact job 1: done; hot timeline 1 nodes")
    assert "organize job 2: done" in result.stdout
    assert "new objects: todo 1; events linked to objects: 1" in result.stdout
    assert "still in the hot timeline" not in result.stdout


def test_no_wait_says_that_no_worker_runs_the_job_and_how(notes: None,
                                                          runner: CliRunner) -> None:
    result = run_cli(runner, "organize", "--no-wait")
    assert result.stdout == "organize job 2 queued\n"
    assert "no worker is running batches now" in result.stderr
    assert "memvault worker --burst" in result.stderr and "memvault serve" in result.stderr
    no_repr(result.output)
    data = json.loads(run_cli(runner, "organize", "--no-wait", "--json").stdout)
    assert data["state"] == "queued" and data["worker_running"] is None
    compact = run_cli(runner, "compact", "--no-wait")
    no_repr(compact.output)
    assert compact.stdout.startswith("compact job ") and "memvault compact" in compact.stderr


def test_no_wait_names_the_live_worker_that_holds_the_lease(notes: None, home: Path,
                                                            runner: CliRunner) -> None:
    holder = process_holder("test")  # this process: alive
    with Memory.open(home) as mem:
        assert acquire_lease(mem.conn, holder, datetime.now(UTC), 3_600)
    try:
        result = run_cli(runner, "organize", "--no-wait")
        assert "is running batches and will take job 2" in result.stderr
        data = json.loads(run_cli(runner, "organize", "--no-wait", "--json").stdout)
        assert data["worker_running"] and ":" in data["worker_running"]
    finally:
        with Memory.open(home) as mem:
            release_lease(mem.conn, holder)


# -- item 3: the vault follows the change ---------------------------------------------------------


def test_core_set_renders_the_vault_copy_when_a_vault_exists(home: Path, runner: CliRunner,
                                                              tmp_path: Path) -> None:
    result = run_cli(runner, "core", "set", "USER.md", "-", input="# Me\nlikes tea\n")
    assert "vault not written yet: `memvault project-vault --all`" in result.stderr
    run_cli(runner, "project-vault", "--all", "--quiet")
    result = run_cli(runner, "core", "set", "USER.md", "-", input="# Me\nlikes coffee\n")
    assert result.stdout == "USER.md: version 2\n"
    assert "vault refreshed" in result.stderr
    assert (home / "vault" / "USER.md").read_text(encoding="utf-8") == "# Me\nlikes coffee\n"


def test_organize_renders_what_it_made_into_an_existing_vault(notes: None, home: Path,
                                                               runner: CliRunner) -> None:
    run_cli(runner, "project-vault", "--all", "--quiet")
    assert not (home / "vault" / "objects" / "todo").exists()
    result = run_cli(runner, "organize")
    assert "vault refreshed" in result.stderr
    assert list((home / "vault" / "objects" / "todo").glob("*.md"))


def test_the_first_ingest_says_what_comes_next(runner: CliRunner) -> None:
    first = run_cli(runner, "ingest", "-", input=jsonl("hello"))
    assert "next: `memvault organize`" in first.stderr
    assert run_cli(runner, "ingest", "-", input=jsonl("again")).stderr == ""


# -- item 5: a missing home is refused, except where one is made ----------------------------------


@pytest.mark.parametrize("args", [["project-vault", "--quiet"], ["organize"], ["compact"],
                                  ["reindex"], ["worker", "--burst"], ["project", "approve", "x"],
                                  ["status"], ["find", "x"]])
def test_a_missing_home_is_refused_and_not_created(tmp_path: Path, runner: CliRunner,
                                                   args: list[str]) -> None:
    typo = tmp_path / "typo"
    result = run_cli(runner, "--home", str(typo), *args, code=1)
    assert f"no memory at {typo}" in result.output
    assert "memvault ingest" in result.output and "Traceback" not in result.output
    assert not typo.exists()


def test_the_commands_that_make_a_home_still_make_one(tmp_path: Path, runner: CliRunner) -> None:
    run_cli(runner, "--home", str(tmp_path / "a"), "ingest", "-", input=jsonl("hi"))
    run_cli(runner, "--home", str(tmp_path / "b"), "core", "set", "USER.md", "-", input="me\n")
    run_cli(runner, "--home", str(tmp_path / "c"), "migrate")
    for name in "abc":
        assert (tmp_path / name / "memory.db").is_file()


# -- item 6: --home after the subcommand ----------------------------------------------------------


def test_home_works_after_the_subcommand(tmp_path: Path, runner: CliRunner,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    run_cli(runner, "ingest", "--home", str(other), "-", input=jsonl("in the other home"))
    monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "elsewhere"))  # the option wins
    for args in (["status", "--home", str(other), "--json"],
                 ["--home", str(other), "status", "--json"],
                 ["--home", str(other), "status", "--home", str(other) + "/", "--json"]):
        assert json.loads(run_cli(runner, *args).stdout)["events"]["total"] == 1
    shown = run_cli(runner, "core", "show", "--home", str(other), "USER.md")
    assert "never been written" in shown.stdout


def test_two_different_homes_on_one_line_are_refused(tmp_path: Path, runner: CliRunner) -> None:
    result = run_cli(runner, "--home", str(tmp_path / "a"), "status", "--home",
                     str(tmp_path / "b"), code=2)
    assert "give the home once" in result.output


def test_every_subcommand_offers_home(runner: CliRunner) -> None:
    def walk(command: click.Command, path: tuple[str, ...]):
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                yield from walk(command.get_command(ctx, name), (*path, name))
        yield path

    for path in walk(main, ()):
        if path:
            assert "--home DIR" in run_cli(runner, *path, "--help").output, path


# -- start-up loads only what the command needs --------------------------------------------------

HEAVY = ("memvault.jobs.worker", "memvault.jobs.batch_loop", "memvault.objects.proposals",
         "memvault.vault.projector", "memvault.vault.render", "jinja2", "watchfiles", "rich",
         "pydantic", "mcp")


def loaded_heavy(code: str, home: Path) -> list[str]:
    script = (f"import sys\n{code}\n"
              f"print('HEAVY', *(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={"MEMVAULT_HOME": str(home), "PATH": ""})
    return out.stdout.splitlines()[-1].split()[1:]


def test_the_help_loads_every_command_module_but_no_heavy_one(home: Path) -> None:
    """`memvault --help` lists the commands from app.SHORT_HELP (tests/test_cli_help_listing.py):
    nothing heavy loads for it."""
    code = ("from memvault.cli import main\n"
            "main(['--help'], standalone_mode=False)")
    assert loaded_heavy(code, home) == []


def test_importing_the_cli_loads_no_command_module(home: Path) -> None:
    assert loaded_heavy("import memvault.cli", home) == []
    assert "memvault.cli.work" not in loaded_heavy("import memvault.cli", home)


@pytest.mark.parametrize("args", [["find", "tea", "--json"], ["status", "--json"],
                                  ["list", "person", "--json"], ["events", "2026-01-01",
                                                                  "2027-01-01", "--json"],
                                  ["object", "project:daily", "--json"]])
def test_read_commands_with_json_load_no_heavy_module(home: Path, args: list[str]) -> None:
    Memory.open(home).close()
    code = ("from memvault.cli import main\n"
            f"main({args!r}, standalone_mode=False)")
    assert loaded_heavy(code, home) == []


def test_a_settings_file_that_sets_values_keeps_read_commands_light(home: Path) -> None:
    """A home with a model configured is the usual one, not the commented defaults: its values
    are checked by pydantic-core alone (about 25 ms of CPU to import), never through pydantic's
    model layer (about 95 ms to import it and build the models, +60-90% on `memvault status
    --json`, measured on 2 cores)."""
    Memory.open(home).close()
    (home / "memvault.toml").write_text(
        '[model]\nprovider = "openai"\nname = "gpt-test"\n[worker]\npoll_s = 1\n'
        '[time]\ntimezone = "UTC"\n[deep]\nnightly_at = "03:10"\n', encoding="utf-8")
    for args in (["status", "--json"], ["find", "tea", "--json"]):
        code = ("from memvault.cli import main\n"
                f"main({args!r}, standalone_mode=False)")
        assert loaded_heavy(code, home) == [], args
