"""Terminal escapes and bidi overrides in model-written text: control characters (but newline and
tab) are refused as a correction naming the field; what is stored already (raw events, older
objects) is shown escaped on a terminal (`\\x1b`, `\\u202e`), exact through a pipe; ZWJ, ZWNJ
and LRM/RLM are kept."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.base.display import TerminalGuard, escape_bidi, for_terminal, guard_terminal
from memvault.objects.records import ObjectRecord, save_object
from memvault.store.connection import write
from modes_support import add_archived, commit_organize, compact_step, errors_seen, make_worker

FAMILY = "👨\u200d👩\u200d👧"  # ZWJ sequence
PERSIAN = "می\u200cخواهم"  # ZWNJ inside a word
MARKS = "abc\u200e\u200fdef"  # LRM, RLM


# -- refused in what a model writes -------------------------------------------------------------

@pytest.mark.parametrize(("text", "code"), [
    ("alert \x1b[31mred\x1b[0m", "U+001B (ESC)"),
    ("overwrite\rthe line", "U+000D (carriage return)"),
    ("C1 \x9b2J clear", "U+009B (CSI)"),
    ("bell \x07", "U+0007 (bell)"),
    ("vertical \x0b tab", "U+000B (vertical tab)"),
])
def test_a_control_character_in_a_proposal_is_a_correction_naming_the_field(
        mem: Memory, text: str, code: str) -> None:
    (event,) = add_archived(mem, "Victor runs the Aurora beta.")
    mem.organize()
    bad = {"id": "person:victor", "name": "Victor", "body": text}
    good = {"id": "person:victor", "name": "Victor", "body": "runs the Aurora beta\n\tok"}
    cite = [{"object_id": "person:victor", "event_id": event, "start": 0, "end": 6}]
    worker, provider = make_worker(mem, [
        commit_organize(event, "linked", objects=[bad], evidence=cite),
        commit_organize(event, "linked", objects=[good], evidence=cite)])
    assert worker.tick().action == "committed"
    [error] = errors_seen(provider)
    assert error["field"] == "objects.0.body"
    assert code in error["error"] and "no terminal escapes" in error["error"]
    stored = mem.read_object("person:victor")["object"]
    assert stored["body"] == good["body"]  # newline and tab are fine


def test_a_compaction_summary_with_an_escape_is_refused(mem: Memory) -> None:
    for i in range(3):
        mem.append_event(f"message {i}: the Aurora beta ships Friday")
    mem.compact()
    worker, provider = make_worker(mem, [compact_step("Aurora \x1b]0;pwned\x07 beta"),
                                         compact_step("Aurora beta ships Friday")])
    assert worker.tick().action == "committed"
    [error] = errors_seen(provider)
    assert error["field"] == "summary" and "U+001B (ESC)" in error["error"]


def test_scripts_and_emoji_that_need_joiners_and_marks_are_accepted(mem: Memory) -> None:
    (event,) = add_archived(mem, "Victor's family photo.")
    mem.organize()
    body = f"{FAMILY} {PERSIAN} {MARKS}"
    worker, provider = make_worker(mem, [commit_organize(
        event, "linked", objects=[{"id": "person:victor", "name": "Victor", "body": body}],
        evidence=[{"object_id": "person:victor", "event_id": event, "start": 0, "end": 6}])])
    assert worker.tick().action == "committed"
    assert errors_seen(provider) == []
    assert mem.read_object("person:victor")["object"]["body"] == body


def test_the_builtin_model_never_copies_an_escape_from_an_event(mem: Memory) -> None:
    add_archived(mem, "记住：浩宇对花生过敏 \x1b[2J and Victor runs the Aurora beta.\r\n")
    mem.organize()
    worker = mem.worker("builtin", scheduler=False)
    worker.run(burst=True, max_ticks=20)
    texts = json.dumps([dict(r) for r in mem.conn.execute("SELECT * FROM objects")],
                       ensure_ascii=False)
    assert "\\u001b" not in texts and "\\r" not in texts
    assert mem.conn.execute("SELECT COUNT(*) FROM batches WHERE state = 'terminal'"
                            ).fetchone()[0] == 0


# -- shown escaped on a terminal ------------------------------------------------------------

def test_bidi_controls_are_escaped_and_joiners_and_marks_kept() -> None:
    text = f"invoice \u202egpj.exe\u202c \u2066iso\u2069 {FAMILY} {PERSIAN} {MARKS}"
    assert escape_bidi(text) == (f"invoice \\u202egpj.exe\\u202c \\u2066iso\\u2069 {FAMILY} "
                                 f"{PERSIAN} {MARKS}")
    assert for_terminal(text) == escape_bidi(text)
    assert escape_bidi("\x1b[2J") == "\x1b[2J"  # the vault keeps controls (none are written)


def test_terminal_text_escapes_controls_but_keeps_newlines_tabs_and_colours() -> None:
    assert for_terminal("a\tb\nc") == "a\tb\nc"
    assert for_terminal("\x1b[1mbold\x1b[0m") == "\x1b[1mbold\x1b[0m"  # rich's own styling
    assert for_terminal("\x1b]52;c;cGF5\x07") == "\\x1b]52;c;cGF5\\x07"  # clipboard write
    assert for_terminal("\x1b[2J\rx\x08\x9b") == "\\x1b[2J\\rx\\x08\\x9b".replace("\\r", "\\x0d")


def test_only_a_terminal_is_guarded() -> None:
    import io

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    guarded = guard_terminal(tty)
    assert isinstance(guarded, TerminalGuard) and guard_terminal(guarded) is guarded
    guarded.write("x\u202ey\x1b[2J")
    assert tty.getvalue() == "x\\u202ey\\x1b[2J"
    pipe = io.StringIO()
    assert guard_terminal(pipe) is pipe


@pytest.fixture
def planted(home: Path) -> Path:
    """A home holding an object written before proposals refused escapes, and a raw event."""
    with Memory.open(home) as mem:
        mem.append_event("evil \x1b]0;pwned\x07 title \u202egpj.exe\u202c " + FAMILY)
        record = ObjectRecord(id="person:mallory", type="person", name="Mallory \u202eyrollaM",
                              body="clear \x1b[2J screen", status="active")
        with write(mem.conn):
            save_object(mem.conn, record, mem.clock.now())
    return home


def run_in_terminal(home: Path, *args: str) -> str:
    """`memvault ARGS` with stdout and stderr on a pseudo-terminal; its output (bounded)."""
    import pty

    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", "from memvault.cli import main; main()", "--home", str(home),
         *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    try:
        while select.select([master], [], [], 60)[0]:
            try:
                chunk = os.read(master, 65_536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        child.wait(timeout=60)
    return out.decode("utf-8")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals here")
@pytest.mark.parametrize(("args", "seen"), [
    (("object", "person:mallory"), ["Mallory \\u202eyrollaM", "clear \\x1b[2J screen"]),
    (("event", "1"), ["evil \\x1b]0;pwned\\x07 title \\u202egpj.exe\\u202c " + FAMILY]),
])
def test_stored_escapes_are_shown_escaped_on_a_terminal(planted: Path, args: tuple[str, ...],
                                                        seen: list[str]) -> None:
    out = run_in_terminal(planted, *args)
    for text in seen:
        assert text in out
    assert "\u202e" not in out and "\x1b]" not in out and "\x1b[2J" not in out


def test_a_pipe_gets_the_stored_text_exactly(planted: Path, runner: CliRunner) -> None:
    out = run_cli(runner, "event", "1", "--json").output
    assert json.loads(out)["text"].startswith("evil \x1b]0;pwned\x07 title \u202egpj")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals here")
def test_progress_bars_still_draw_themselves_on_a_terminal(planted: Path) -> None:
    out = run_in_terminal(planted, "compact", "--wait")
    assert "compact job 1: done" in out
    assert "\x1b[?25l" in out and "\\x1b[?25l" not in out  # rich's own cursor control


def test_a_vault_page_shows_escapes_and_bidi_written_out() -> None:
    from memvault.base.display import for_markdown

    text = f"clear \x1b[2J \x1b[31mred\x1b[0m \u202egpj\u202c\n\tok {FAMILY} {MARKS}\r"
    assert for_markdown(text) == (f"clear \\x1b[2J \\x1b[31mred\\x1b[0m \\u202egpj\\u202c\n\tok "
                                  f"{FAMILY} {MARKS}\\x0d")


def test_a_vault_page_shows_bidi_overrides_and_escapes_written_out(tmp_path) -> None:
    """Stored text that would reorder or colour what a reader sees is written out in the
    object's page (the core files stay byte-exact copies, so they are not touched)."""
    from memvault.vault.paths import object_path
    from vault_support import open_memory, project, put_object

    with open_memory(tmp_path / "home") as mem:
        put_object(mem, "person:eve", "Eve",
                   summary="pays \u202eoT 01\u202c and \x1b[31mred\x1b[0m",
                   body="keeps \u200d joiners, \u200e marks\tand tabs")
        project(mem)
        page = (mem.config.vault_path / object_path("person:eve")).read_text("utf-8")
    assert "\u202e" not in page and "\x1b" not in page
    assert "\\u202e" in page and "\\x1b[31m" in page
    assert "\u200d" in page and "\u200e" in page
