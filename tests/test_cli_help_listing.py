"""`memvault --help` lists every command from app.SHORT_HELP, importing no command module and
not the library, and each line there is the command's own one-line help."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from memvault.cli.app import COMMANDS, SHORT_HELP


def command_of(name: str) -> object:
    module, _, attr = COMMANDS[name].partition(":")
    return getattr(importlib.import_module(f"memvault.cli.{module}"), attr)


@pytest.mark.timeout(60)
def test_every_command_has_its_own_one_line_help_in_the_listing_table() -> None:
    assert set(SHORT_HELP) == set(COMMANDS)
    for name in COMMANDS:
        command = command_of(name)
        assert SHORT_HELP[name] == command.get_short_help_str(limit=10**6), (  # type: ignore[attr-defined]
            f"app.SHORT_HELP[{name!r}] must be the first line of the command's help")


@pytest.mark.timeout(60)
def test_the_listing_imports_no_command_module_and_not_the_library() -> None:
    script = ("import sys\nfrom memvault.cli import main\n"
              "main(['--help'], standalone_mode=False)\n"
              "print('LOADED', *sorted(m for m in sys.modules if m.startswith('memvault.')))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=50)
    loaded = out.stdout.splitlines()[-1].split()[1:]
    modules = {f"memvault.cli.{target.partition(':')[0]}" for target in COMMANDS.values()}
    assert not modules & set(loaded)
    assert "memvault.home.memory" not in loaded
    for name in ("find", "status", "hook"):
        assert name in out.stdout
