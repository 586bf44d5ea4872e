"""The CLI's consoles are made on first use and made again when what they were made for
changed: the stream (a test runner or an embedding program swaps sys.stdout) or COLUMNS, which
rich reads once; a width set for one command must not cut the tables of every later one."""

from __future__ import annotations

import pytest
from memvault.cli.app import LazyConsole


def test_a_console_follows_a_changed_columns_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    console = LazyConsole(highlight=False)
    monkeypatch.setenv("COLUMNS", "80")
    assert console.get().width == 80
    monkeypatch.setenv("COLUMNS", "200")
    assert console.get().width == 200


def test_a_console_is_kept_while_nothing_it_was_made_for_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    console = LazyConsole(highlight=False)
    assert console.get() is console.get()
