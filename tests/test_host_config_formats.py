"""`--print-config --config-format codex` prints a table Codex's config.toml takes, with the
same command, args, url and token as the JSON form other hosts take."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli


@pytest.mark.timeout(60)
def test_mcp_print_config_for_codex_is_the_same_server_as_toml(home: Path,
                                                              runner: CliRunner) -> None:
    as_json = json.loads(run_cli(runner, "mcp", "--print-config", "--space", "work").stdout)
    as_toml = tomllib.loads(run_cli(runner, "mcp", "--print-config", "--space", "work",
                                    "--config-format", "codex").stdout)
    assert as_toml["mcp_servers"]["memvault"] == as_json["mcpServers"]["memvault"]
    assert as_toml["mcp_servers"]["memvault"]["args"][-3:] == ["--space", "work", "--background"]


@pytest.mark.timeout(60)
def test_serve_print_config_for_codex_names_the_url_and_the_token_header(
        home: Path, runner: CliRunner) -> None:
    args = ("serve", "--print-config", "--port", "8765")
    entry = json.loads(run_cli(runner, *args).stdout)["mcpServers"]["memvault"]
    table = tomllib.loads(run_cli(runner, *args, "--config-format", "codex").stdout)
    codex = table["mcp_servers"]["memvault"]
    assert codex["url"] == entry["url"] == "http://127.0.0.1:8765/mcp"
    assert codex["http_headers"] == entry["headers"]
