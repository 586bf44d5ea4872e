"""Local model servers as they behave: the openai provider reads the context, output limit and
tool support from llama.cpp's /props or Ollama's /api/show (settings cap them), sizes requests
to the server's own tokenizer, takes a context overflow as a cause to shrink (never a plain
retry), and says `tool_mode = "json_schema"` in one line when the tools are dropped."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import meetings_memory
from memvault import Memory
from memvault.models.base import ProviderError, ToolSpec
from memvault.models.openai_compat import OpenAICompatProvider
from memvault.models.server_facts import context_overflow

from tests.fake_openai import (
    FakeOpenAI,
    Status,
    completion,
    llama_props,
    ollama_show,
    tool_call,
)

TOOL = ToolSpec("commit_note", "File the note as an object.",
                {"type": "object", "properties": {"text": {"type": "string"}}})
MESSAGES = [{"role": "system", "content": "You file notes."},
            {"role": "user", "content": "Note: the Aurora beta ships on Friday. " * 20}]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    memory = meetings_memory(tmp_path / "home")
    yield memory
    memory.close()


def provider(server: FakeOpenAI, mode: str = "native", **kwargs: object) -> OpenAICompatProvider:
    return OpenAICompatProvider(model="tiny", base_url=server.base_url, tool_mode=mode,
                                **kwargs)  # type: ignore[arg-type]


def called() -> dict:
    return completion(tool_calls=[tool_call("commit_note", {"text": "Aurora"})],
                      finish_reason="tool_calls")


def test_llama_cpp_context_and_output_limit_are_read_from_props(server):
    server.props = llama_props(n_ctx=8192, n_predict=2048)
    prov = provider(server)
    assert prov.server_context_tokens == 8192
    assert prov.context_tokens == 8192 and prov.max_output_tokens == 2048
    assert server.probes == ["GET /props"]  # asked once, and no further endpoint


def test_settings_cap_what_the_server_says(server):
    server.props = llama_props(n_ctx=32768)
    prov = provider(server, context_tokens=16_384, max_output_tokens=4096)
    assert prov.context_tokens == 16_384 and prov.max_output_tokens == 4096


def test_a_server_that_says_nothing_is_taken_at_the_settings_word(server):
    prov = provider(server, context_tokens=65_536)
    assert prov.context_tokens == 65_536
    assert prov.server_facts().server == "openai-compatible"


def test_vllm_style_model_listing_gives_the_context(server):
    server.models = {"object": "list", "data": [{"id": "tiny", "max_model_len": 12_288}]}
    assert provider(server).context_tokens == 12_288


def test_ollama_context_comes_from_num_ctx_then_the_loaded_model(server):
    server.ollama_show = ollama_show(context_length=131_072, num_ctx=16_384)
    assert provider(server).server_context_tokens == 16_384
    server.ollama_show = ollama_show(context_length=131_072)
    server.ollama_ps = {"models": [{"name": "tiny", "model": "tiny", "context_length": 8192}]}
    assert provider(server).server_context_tokens == 8192


def test_compaction_requests_are_sized_to_the_servers_context(server, mem):
    server.props = llama_props(n_ctx=4096)

    def commit(body: dict) -> dict:
        ids = [n["id"] for n in json.loads(body["messages"][1]["content"])["nodes"]]
        return completion(tool_calls=[tool_call("commit_compaction",
                                                {"node_ids": ids, "summary": "Aurora"})],
                          finish_reason="tool_calls")

    server.queue(commit)
    mem.compact()
    result = mem.worker(provider(server), scheduler=False).tick()
    assert result.action == "committed"
    assert server.requests[0]["max_tokens"] < 4096  # not the 32,768 of the settings


def test_template_without_tools_says_switch_to_json_schema_before_any_call(server):
    server.props = llama_props(supports_tools=False)
    with pytest.raises(ProviderError) as failure:
        provider(server).complete(MESSAGES, [TOOL], 256)
    assert 'tool_mode = "json_schema"' in str(failure.value) and failure.value.lasting
    assert server.requests == []


def test_ollama_model_without_the_tools_capability_says_json_schema(server):
    server.ollama_show = ollama_show(tools=False)
    with pytest.raises(ProviderError, match='tool_mode = "json_schema"'):
        provider(server).complete(MESSAGES, [TOOL], 256)


def test_tools_dropped_in_silence_end_in_one_line_after_one_call(server, mem):
    server.drop_tools = True
    server.queue(called(), called())
    mem.compact()
    result = mem.worker(provider(server), scheduler=False).tick()
    assert result.action == "failed" and result.lasting
    assert 'tool_mode = "json_schema"' in (result.error or "")
    assert len(server.requests) == 1  # no "use the tools" rounds


def test_a_refusal_is_not_taken_for_dropped_tools(server):
    answer = completion(content=None)
    answer["choices"][0]["message"]["refusal"] = "I cannot help with that."
    server.queue(answer)
    reply = provider(server).complete(MESSAGES, [TOOL], 256)
    assert reply.tool_calls == []


def test_a_server_that_called_tools_before_may_answer_in_text(server):
    prov = provider(server)
    server.queue(called(), completion(content="Let me think."))
    prov.complete(MESSAGES, [TOOL], 256)
    assert prov.complete(MESSAGES, [TOOL], 256).text == "Let me think."


def test_context_overflow_teaches_the_context_and_names_the_setting(server):
    server.context_limit = 100
    prov = provider(server)
    with pytest.raises(ProviderError) as failure:
        prov.complete(MESSAGES, [TOOL], 256)
    message = str(failure.value)
    assert "context overflow" in message and "model.context_tokens" in message
    assert "--ctx-size" in message and not failure.value.lasting
    assert prov.server_context_tokens == 100
    assert prov.scale > 1.0  # the server counts more tokens than the estimate
    assert prov.context_tokens < 100


def test_context_overflow_fails_the_batch_for_a_smaller_retry(server, mem):
    server.context_limit = 60
    mem.compact()
    result = mem.worker(provider(server), scheduler=False).tick()
    assert result.action == "failed" and not result.lasting
    assert "context overflow" in (result.error or "")
    assert len(server.requests) == 1  # never the same request again at once


def test_reported_usage_teaches_the_tokenizer_ratio(server):
    reply = completion(tool_calls=[tool_call("commit_note", {})], finish_reason="tool_calls",
                       usage={"prompt_tokens": 10_000, "completion_tokens": 5})
    server.queue(reply)
    prov = provider(server, context_tokens=100_000)
    prov.complete(MESSAGES, [TOOL], 256)
    assert prov.scale > 1.0 and prov.context_tokens < 100_000


@pytest.mark.parametrize("body, context, prompt", [
    ({"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 9031,
                "n_ctx": 8192, "message": "request (9031 tokens) exceeds the available "
                                          "context size (8192 tokens)"}}, 8192, 9031),
    ({"error": {"code": "context_length_exceeded", "type": "invalid_request_error",
                "message": "This model's maximum context length is 8,192 tokens. However, "
                           "your messages resulted in 9,031 tokens."}}, 8192, 9031),
])
def test_overflow_errors_of_llama_cpp_and_openai_are_recognised(server, body, context, prompt):
    server.queue(Status(400, body))
    from openai import OpenAI, OpenAIError

    client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    with pytest.raises(OpenAIError) as failure:
        client.chat.completions.create(model="tiny", messages=MESSAGES)
    overflow = context_overflow(failure.value)
    assert overflow is not None
    assert (overflow.context_tokens, overflow.prompt_tokens) == (context, prompt)


def test_other_client_errors_are_not_overflows(server):
    server.queue(Status(400, {"error": {"message": "bad request: unknown field"}}))
    from openai import OpenAI, OpenAIError

    client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    with pytest.raises(OpenAIError) as failure:
        client.chat.completions.create(model="tiny", messages=MESSAGES)
    assert context_overflow(failure.value) is None


def test_json_schema_mode_sends_the_tools_descriptions(server):
    server.queue(completion(content=json.dumps({"tool": "commit_note", "arguments": {}})))
    provider(server, "json_schema").complete(MESSAGES, [TOOL], 256)
    body = server.requests[0]
    option = body["response_format"]["json_schema"]["schema"]["anyOf"][0]
    assert option["description"] == TOOL.description
    assert "commit_note: File the note as an object." in body["messages"][0]["content"]


def test_a_trickling_server_cannot_hold_the_probe_or_the_call(server):
    server.props = llama_props(n_ctx=8192)
    server.trickle_s = 0.2  # the /props answer alone would take minutes
    server.queue(called())
    prov = provider(server, timeout_s=1.0, context_tokens=50_000)
    assert prov.context_tokens == 50_000  # the probe gave up: the settings hold
    with pytest.raises(ProviderError, match="no complete answer within"):
        prov.complete(MESSAGES, [TOOL], 256)


def test_an_unreachable_server_is_said_so():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    prov = OpenAICompatProvider(model="tiny", base_url=f"http://127.0.0.1:{port}/v1",
                                context_tokens=20_000)
    assert not prov.server_facts().reachable
    assert prov.context_tokens == 20_000


def test_output_is_capped_at_half_the_servers_context_without_n_predict(server):
    server.props = llama_props(n_ctx=8192)  # n_predict -1: the server would not stop it
    assert provider(server).max_output_tokens == 4096
