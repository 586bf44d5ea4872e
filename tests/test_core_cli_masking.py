"""`memvault core show` masks a secret-looking value as every other read does, and
`--reveal-secrets` shows it and logs the reveal (never the value) like the other readers;
`core history` never prints content."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers import run_cli

PASSWORD = "Tr0ub4dor-and-3"
USER_MD = f"# USER\n\nThe home router password: {PASSWORD}\nLikes tea.\n"


def _set_user_md(runner: CliRunner, tmp_path: Path, text: str = USER_MD) -> None:
    source = tmp_path / "USER.md"
    source.write_text(text, encoding="utf-8")
    run_cli(runner, "core", "set", "USER.md", str(source))


def test_core_show_and_history_mask_a_stored_password(
        home: Path, runner: CliRunner, tmp_path: Path) -> None:
    _set_user_md(runner, tmp_path)
    for args in (["core", "show", "USER.md"], ["core", "show", "USER.md", "--json"],
                 ["core", "history", "USER.md"], ["core", "history", "USER.md", "--json"]):
        result = run_cli(runner, *args)
        assert PASSWORD not in result.output, args
    shown = run_cli(runner, "core", "show", "USER.md").stdout
    assert "[secret: an assigned secret value]" in shown and "Likes tea." in shown
    assert not (home / "reveals.log").exists()


def test_core_show_reveal_secrets_shows_the_value_and_logs_it(
        home: Path, runner: CliRunner, tmp_path: Path) -> None:
    _set_user_md(runner, tmp_path)
    shown = run_cli(runner, "core", "show", "USER.md", "--reveal-secrets")
    assert shown.stdout == USER_MD
    assert "secrets revealed by core show for USER.md" in shown.stderr
    as_json = json.loads(run_cli(runner, "core", "show", "USER.md", "--reveal-secrets",
                                 "--json").stdout)
    assert as_json["content"] == USER_MD
    log = [json.loads(line) for line in (home / "reveals.log").read_text().splitlines()]
    assert [(e["command"], e["records"]) for e in log] == [("core show", ["USER.md"])] * 2
    assert PASSWORD not in (home / "reveals.log").read_text()


def test_core_show_reveal_of_a_file_without_secrets_logs_nothing(
        home: Path, runner: CliRunner, tmp_path: Path) -> None:
    _set_user_md(runner, tmp_path, "# USER\n\nLikes tea.\n")
    shown = run_cli(runner, "core", "show", "USER.md", "--reveal-secrets")
    assert shown.stdout == "# USER\n\nLikes tea.\n"
    assert "nothing revealed, nothing logged" in shown.stderr
    assert not (home / "reveals.log").exists()
