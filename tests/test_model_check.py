"""`memvault model check` asks the configured endpoint one tiny structured question and says
what works, each case against the fake server: a llama-server that takes tools, one that drops
them (json_schema is then tried and advised), one that answers nothing, the builtin model."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli, write_config
from memvault import Memory

from tests.fake_openai import FakeOpenAI, completion, llama_props, tool_call


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def use(home: Path, base_url: str, extra: str = "") -> None:
    write_config(home, f'[model]\nprovider = "openai"\nname = "tiny"\nbase_url = "{base_url}"\n'
                       + extra)  # no memory yet: a server is checked before anything is stored


def answered(body: dict) -> dict:
    return completion(tool_calls=[tool_call("answer", {"answer": "yes"})],
                      finish_reason="tool_calls",
                      usage={"prompt_tokens": 40, "completion_tokens": 8})


def test_a_server_that_takes_tools_is_ready(home, runner: CliRunner, server):
    server.props = llama_props(n_ctx=16_384, n_predict=4096)
    server.queue(answered)
    use(home, server.base_url)
    out = run_cli(runner, "model", "check").output
    assert "reachable: yes (llama.cpp at " in out
    assert "context: 16,384 tokens (from /props)" in out
    assert "output: at most 4,096 tokens" in out
    assert "tools: native works" in out and "8 tokens" in out and "ready" in out


def test_dropped_tools_are_found_and_json_schema_advised(home, runner, server):
    server.drop_tools = True
    server.queue(answered, completion(content=json.dumps({"tool": "answer",
                                                          "arguments": {"answer": "no"}})))
    use(home, server.base_url)
    out = run_cli(runner, "model", "check", code=1).output
    assert "json_schema: works" in out
    assert out.strip().endswith('advice: set tool_mode = "json_schema" in [model] of '
                                "memvault.toml (the server then only has to follow a JSON "
                                "schema)")
    assert "response_format" in server.requests[1]


def test_a_small_context_is_said_with_the_setting(home, runner, server):
    server.props = llama_props(n_ctx=4096)
    server.queue(answered)
    use(home, server.base_url)
    out = run_cli(runner, "model", "check").output
    assert "advice: the context is 4096 tokens" in out and "--ctx-size" in out


def test_an_unreachable_endpoint_says_where_it_looked(home, runner):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    use(home, f"http://127.0.0.1:{port}/v1")
    out = run_cli(runner, "model", "check", code=1).output
    assert f"reachable: no (http://127.0.0.1:{port}/v1" in out
    assert "model.base_url" in out


def test_json_reports_the_same(home, runner, server):
    server.props = llama_props(n_ctx=8192)
    server.queue(answered)
    use(home, server.base_url)
    data = json.loads(run_cli(runner, "model", "check", "--json").output)
    assert data["server"] == "llama.cpp" and data["context_tokens"] == 8192
    assert data["answered"] is True and data["advice"] is None


def test_the_builtin_model_has_no_endpoint_to_check(home, runner):
    Memory.open(home).close()
    out = run_cli(runner, "model", "check").output
    assert "builtin" in out and "no endpoint to check" in out
