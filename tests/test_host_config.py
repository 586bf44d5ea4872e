"""What an agent host needs: a printed config that really starts memvault, and loopback HTTP
that needs a token, says where MCP lives and logs its URL (never the token).

Servers run as real subprocesses on 127.0.0.1 (port 0: any free one) and are stopped by the
test; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.service.mcp_server import open_client, tool_payload

CLI = [sys.executable, "-c", "import sys; from memvault.cli import main; sys.exit(main())"]
WAIT_S = 60.0
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "host", "version": "1"}}}


def printed(runner: CliRunner, *args: str) -> dict[str, Any]:
    return json.loads(run_cli(runner, *args).stdout)["mcpServers"]["memvault"]


# -- stdio ----------------------------------------------------------------------------------------
def test_the_printed_stdio_config_starts_memvault_without_a_path(runner: CliRunner, home: Path,
                                                                 tmp_path: Path) -> None:
    entry = printed(runner, "mcp", "--print-config")
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][-3:] == [str(home.absolute()), "mcp", "--background"]
    # start exactly what a host would, with no PATH at all (`spawn memvault ENOENT` before)
    env = {k: v for k, v in os.environ.items() if k not in ("PATH", "MEMVAULT_HOME")}
    with (tmp_path / "host.log").open("wb") as log:
        proc = subprocess.Popen([entry["command"], *entry["args"]], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, env=env)
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
            proc.stdin.flush()
            reply = _read_line(proc, WAIT_S)
            proc.stdin.close()
            assert proc.wait(WAIT_S) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(WAIT_S)
    assert reply["result"]["serverInfo"]["name"] == "memvault"


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
    """One line of the child's stdout, or fail after `timeout` (the child is then killed)."""
    import threading

    box: list[bytes] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()),  # type: ignore[union-attr]
                              daemon=True)
    reader.start()
    reader.join(timeout)
    if not box:
        proc.kill()
        raise AssertionError(f"no answer within {timeout:.0f}s")
    return json.loads(box[0])


# -- the HTTP config and its token ---------------------------------------------------------------
def test_serve_prints_the_url_and_a_token_kept_in_the_home(runner: CliRunner, home: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMVAULT_TOKEN", raising=False)
    entry = printed(runner, "serve", "--print-config")
    assert entry["url"] == "http://127.0.0.1:8765/mcp"
    token = (home / "service.token").read_text().strip()
    assert entry["headers"] == {"Authorization": f"Bearer {token}"} and len(token) >= 40
    assert (home / "service.token").stat().st_mode & 0o777 == 0o600
    assert printed(runner, "serve", "--print-config", "--port", "9000")["headers"] == \
        entry["headers"]  # made once, then kept
    monkeypatch.setenv("MEMVAULT_TOKEN", "from-the-environment")
    assert printed(runner, "serve", "--print-config")["headers"]["Authorization"] == \
        "Bearer from-the-environment"
    assert "headers" not in printed(runner, "serve", "--print-config", "--no-auth")


def test_a_socket_has_no_host_config(runner: CliRunner) -> None:
    result = run_cli(runner, "serve", "--socket", "--print-config", code=2)
    assert "a Unix socket has none" in result.output


def test_an_unusable_token_file_is_refused_naming_it(runner: CliRunner, home: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMVAULT_TOKEN", raising=False)
    Memory.open(home).close()
    (home / "service.token").write_text("  \n")
    result = run_cli(runner, "serve", "--print-config", code=1)
    assert "service.token holds no usable token" in result.output


# -- a real service on loopback TCP ---------------------------------------------------------------
class Served:
    """`memvault serve --port 0` as a subprocess, its JSON log lines read from a file."""

    def __init__(self, home: Path, log: Path, *extra: str) -> None:
        self.log = log
        self._out = log.open("wb")
        env = {k: v for k, v in os.environ.items() if k != "MEMVAULT_TOKEN"}
        self.proc = subprocess.Popen(
            [*CLI, "--home", str(home), "serve", "--port", "0", "--no-worker", "--no-vault",
             *extra], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._out,
            env=env)
        self.ready = self._wait_ready()

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.log.read_text().splitlines() if x.startswith("{")]

    def _wait_ready(self) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            for line in self.lines():
                if line["event"] == "service_ready":
                    return line
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited: {self.log.read_text()}")
            time.sleep(0.05)
        raise AssertionError("serve did not get ready in time")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(WAIT_S)
        self._out.close()


@pytest.fixture
def served(home: Path, tmp_path: Path) -> Iterator[Served]:
    Memory.open(home).close()
    service = Served(home, tmp_path / "serve.log")
    try:
        yield service
    finally:
        service.stop()


def test_tcp_serving_needs_the_token_and_logs_its_url_never_the_token(served: Served,
                                                                      home: Path) -> None:
    token = (home / "service.token").read_text().strip()
    url = served.ready["url"]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    assert served.ready["auth"] == "bearer" and "--print-config" in served.ready["host_config"]
    root = httpx2.get(url.removesuffix("/mcp") + "/", timeout=WAIT_S).json()
    assert root["mcp"] == "/mcp" and root["auth"] == "bearer"
    refused = httpx2.post(url, json=INITIALIZE, timeout=WAIT_S,
                          headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401

    async def talk() -> dict[str, Any]:
        async with open_client(url=url, token=token, timeout_s=WAIT_S) as client:
            await client.call_tool("memory_append", {"text": "over loopback"})
            return tool_payload(await client.call_tool("memory_status", {}))

    assert anyio.run(talk)["events"]["total"] == 1
    served.stop()
    assert token not in served.log.read_text()


def test_no_auth_is_an_explicit_loud_choice(home: Path, tmp_path: Path) -> None:
    Memory.open(home).close()
    service = Served(home, tmp_path / "open.log", "--no-auth")
    try:
        assert service.ready["auth"] == "none"
        warnings = [x for x in service.lines() if x["event"] == "service_unauthenticated"]
        assert warnings and warnings[0]["level"] == "warning"
        assert not (home / "service.token").exists()
    finally:
        service.stop()
