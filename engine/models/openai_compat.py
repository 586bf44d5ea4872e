"""`openai`: any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek, Qwen, Ollama,
llama.cpp's llama-server, vLLM), through the official `openai` client.

tool_mode "native" offers the tools as functions. tool_mode "json_schema" is for servers that
accept `tools` but never emit a call while they do enforce `response_format`: each answer must
then be one JSON object {"tool": NAME, "arguments": {...}} constrained by a schema built from
the tools (arrays keep their maxItems, or small models repeat an item until the token limit).
The API key is read from the environment at call time and never stored or logged.

Sizes come from the server where it says them (server_facts.py: llama.cpp's /props, Ollama's
/api/show and /api/ps, /v1/models metadata), capped by the settings: `context_tokens` and
`max_output_tokens` are what the batch loop sizes each call to. They are counted in the
engine's estimated tokens, scaled down by how much more the server's own tokenizer counts (each
reported usage teaches the ratio), so a prompt the estimate says fits does fit. A context
overflow (llama.cpp's 400 `exceed_context_size_error`, OpenAI's `context_length_exceeded`)
teaches the real context and fails the call naming the setting: the worker retries the batch
shrunk, never the same request. Tools the server drops in silence (its capabilities say so, or
a first answer has no tool call and no refusal) fail with one line: set tool_mode json_schema.

Each call has ONE overall deadline (batch.timeout_s, or the caller's `deadline_s` when that is
sooner: the time left on the worker's lease): httpx's timeouts restart on every byte, so
a server trickling its reply a byte at a time would otherwise hold the batch (and its job)
forever. The request runs on a daemon thread; at the deadline the provider gives up on it,
closes that HTTP client (its connection dies with it) and makes a fresh one for the next call.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any

from ..base.tokens import estimate_tokens
from .base import Message, ModelReply, ProviderError, ToolCall, ToolSpec, Usage
from .server_facts import (
    PROBE_S,
    Overflow,
    ServerFacts,
    bounded,
    context_overflow,
    read_facts,
    urllib_fetch,
)

DEFAULT_MAX_ITEMS = 32
MAX_GRAMMAR_LENGTH = 256
REPROBE_S = 30.0  # an unreachable server is asked again after this long, not at every call
MAX_SCALE = 4.0  # the most server tokens per estimated token believed (a garbled usage)
JSON_SCHEMA_ADVICE = ('set tool_mode = "json_schema" in [model] of memvault.toml (the server '
                      'then only has to follow a JSON schema)')


class OpenAICompatProvider:
    """A chat-completions model over HTTP."""

    name = "openai"

    def __init__(
        self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
        tool_mode: str = "native", max_output_tokens: int = 131_072,
        schema_format: str = "json_schema",
        context_tokens: int = 1_000_000, timeout_s: float = 300.0,
    ) -> None:
        if not model:
            raise ProviderError("the openai provider needs a model name (model.name or --model)")
        from openai import OpenAI

        self.model = model
        self.tool_mode = tool_mode
        self.schema_format = schema_format
        self.settings_output_tokens = max_output_tokens
        self.settings_context_tokens = context_tokens
        self.timeout_s = timeout_s
        self._base_url = (base_url or os.environ.get("OPENAI_BASE_URL")
                          or "https://api.openai.com/v1")
        self._api_key_env = api_key_env
        self._openai = OpenAI
        self._client = self._new_client()
        self._facts: ServerFacts | None = None
        self._probed_at = -REPROBE_S
        self._learned_context: int | None = None  # from an overflow error
        self.scale = 1.0  # server tokens per estimated token, the most seen
        self._tool_calls_seen = False

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def api_key_env(self) -> str:
        """The NAME of the environment variable holding the key (never its value)."""
        return self._api_key_env

    def server_facts(self) -> ServerFacts:
        """What the server says of its model (asked once; an unreachable one again after
        REPROBE_S): see server_facts.py."""
        now = time.monotonic()
        if self._facts is not None and (self._facts.reachable
                                        or now - self._probed_at < REPROBE_S):
            return self._facts
        key = os.environ.get(self._api_key_env)
        seconds = min(PROBE_S, self.timeout_s)
        fetch = urllib_fetch({"Authorization": f"Bearer {key}"} if key else {}, seconds)
        self._probed_at = now
        self._facts = bounded(lambda: read_facts(fetch, self._base_url, self.model), seconds)
        return self._facts

    @property
    def server_context_tokens(self) -> int:
        """The context in the server's tokens: what it said (or an overflow taught), capped by
        model.context_tokens."""
        said = self._learned_context or self.server_facts().context_tokens
        return min(said, self.settings_context_tokens) if said else self.settings_context_tokens

    @property
    def context_tokens(self) -> int:
        """The context in estimated tokens (what the batch loop measures prompts in)."""
        return int(self.server_context_tokens / self.scale)

    @context_tokens.setter
    def context_tokens(self, value: int) -> None:
        self.settings_context_tokens = value

    @property
    def max_output_tokens(self) -> int:
        """model.max_output_tokens_cap, or less: the server's own output limit, and half the
        context the server said (one runaway answer on a CPU server would otherwise run for
        many minutes before the context stops it)."""
        facts = self.server_facts()
        limits = [self.settings_output_tokens, facts.output_tokens,
                  (self._learned_context or facts.context_tokens or 0) // 2 or None]
        return max(1, min(n for n in limits if n))

    @max_output_tokens.setter
    def max_output_tokens(self, value: int) -> None:
        self.settings_output_tokens = value

    def _new_client(self) -> Any:
        # A local server needs no key; the client insists on one, so pass a placeholder.
        key = os.environ.get(self._api_key_env) or "not-needed"
        # Retries are the worker's business (it counts failed claims): the client must not hide
        # them.
        return self._openai(base_url=self._base_url, api_key=key, max_retries=0,
                            timeout=self.timeout_s)

    def _create(self, request: dict[str, Any], deadline_s: float | None = None) -> Any:
        """The chat completion, or ProviderError once timeout_s (or the sooner `deadline_s`)
        has passed in all (connect, headers and the whole body together), whatever the server
        does meanwhile."""
        wait, why = self.timeout_s, "batch.timeout_s"
        if deadline_s is not None and deadline_s < wait:
            wait, why = max(0.0, deadline_s), "the time left on the worker's lease"
        client = self._client
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def call() -> None:
            try:
                outcome["response"] = client.chat.completions.create(**request)
            except BaseException as exc:  # handed to the caller's thread below
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=call, name="memvault-model-call", daemon=True).start()
        if not done.wait(wait):
            self._client = self._new_client()
            try:
                client.close()  # its connection goes with it; the thread then ends on an error
            except Exception:  # a client in mid-read may object; it is discarded anyway
                pass
            raise ProviderError(f"no complete answer within {wait:g} s ({why}): the server "
                                "is too slow or stalled")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["response"]

    def complete(
        self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int,
        deadline_s: float | None = None,
    ) -> ModelReply:
        from openai import OpenAIError

        request: dict[str, Any] = {"model": self.model, "max_tokens": max_output_tokens}
        if self.tool_mode == "json_schema":
            request["messages"] = _with_tool_list(_flatten_tool_history(messages), tools)
            schema = tool_choice_schema(tools)
            request["response_format"] = (
                {"type": "json_object", "schema": schema} if self.schema_format == "json_object"
                else {"type": "json_schema",
                      "json_schema": {"name": "tool_call", "strict": True, "schema": schema}})
        else:
            if tools and self.server_facts().tools is False:
                raise ProviderError(
                    f"the server at {self._base_url} says model {self.model}'s chat template "
                    f"takes no tools: {JSON_SCHEMA_ADVICE}", lasting=True)
            request["messages"] = messages
            request["tools"] = [t.openai() for t in tools]
        try:
            response = self._create(request, deadline_s)
        except OpenAIError as exc:
            if (overflow := context_overflow(exc)) is not None:
                raise ProviderError(self._overflowed(overflow, request)) from None
            raise ProviderError(f"{type(exc).__name__}: {_short(exc)}",
                                lasting=lasting_failure(exc)) from None
        if not getattr(response, "choices", None):
            raise ProviderError("the server answered without choices")
        choice = response.choices[0]
        usage = _usage(response, messages, choice.message.content or "")
        if not usage.estimated:
            self._learn_scale(usage.input_tokens, request)
        text = choice.message.content or ""
        finish = choice.finish_reason or "stop"
        if self.tool_mode == "json_schema":
            calls = [] if finish == "length" else [_parse_json_call(text)]
            return ModelReply(text="", tool_calls=calls, finish_reason=finish, usage=usage,
                              model=response.model or self.model)
        calls = [
            ToolCall(c.id or f"call_{i}", c.function.name, c.function.arguments or "")
            for i, c in enumerate(choice.message.tool_calls or [])
        ]
        self._check_tools_taken(tools, messages, calls, choice, finish)
        return ModelReply(text=text, tool_calls=calls, finish_reason=finish, usage=usage,
                          model=response.model or self.model)


    def _check_tools_taken(self, tools: list[ToolSpec], messages: list[Message],
                           calls: list[ToolCall], choice: Any, finish: str) -> None:
        """ProviderError (lasting) when the tools seem dropped: the first answer of a
        conversation, from a server that never called a tool for this provider, has no tool
        call and no refusal (llama-server drops `tools` in silence when the model's template
        has none; "use the tools" rounds would follow until the round limit)."""
        if calls:
            self._tool_calls_seen = True
            return
        first = not any(m.get("role") == "assistant" for m in messages)
        refused = bool(getattr(choice.message, "refusal", None))
        if tools and first and not refused and finish != "length" \
                and not self._tool_calls_seen and self.server_facts().tools is not True:
            raise ProviderError(
                f"model {self.model} at {self._base_url} answered without calling a tool "
                f"(its server may drop tools in silence): {JSON_SCHEMA_ADVICE}", lasting=True)

    def _learn_scale(self, reported: int, request: dict[str, Any]) -> None:
        """Learn how many of the server's tokens one estimated token is, from a prompt's
        reported size (the most seen, so the estimate never again undershoots it)."""
        estimated = estimate_tokens(json.dumps(request.get("messages"), ensure_ascii=False)
                                    + json.dumps(request.get("tools") or
                                                 request.get("response_format") or ""))
        if estimated > 0 and reported > 0:
            self.scale = min(MAX_SCALE, max(self.scale, reported / estimated))

    def _overflowed(self, overflow: Overflow, request: dict[str, Any]) -> str:
        """What an overflow taught (the real context, the tokenizer's ratio) and the line
        that says it."""
        if overflow.context_tokens:
            self._learned_context = overflow.context_tokens
        if overflow.prompt_tokens:
            self._learn_scale(overflow.prompt_tokens, request)
        asked = f" ({overflow.prompt_tokens} tokens)" if overflow.prompt_tokens else ""
        context = f" ({overflow.context_tokens} tokens)" if overflow.context_tokens else ""
        return (f"context overflow: the request{asked} is larger than the server's "
                f"context{context}; the batch is retried smaller, sized to it. If it keeps "
                "failing, give the server a larger context (llama-server --ctx-size, Ollama "
                "num_ctx or OLLAMA_CONTEXT_LENGTH) or lower organize.page_chars, and set "
                "model.context_tokens to the server's context")


def tool_choice_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """One JSON schema admitting {"tool": name, "arguments": <that tool's schema>}."""
    options = []
    defs: dict[str, Any] = {}
    for tool in tools:
        params = _bound_arrays(json.loads(json.dumps(tool.parameters)))
        defs.update(params.pop("$defs", {}))
        options.append({
            "type": "object",
            "description": tool.description,
            "properties": {"tool": {"const": tool.name}, "arguments": params},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        })
    schema: dict[str, Any] = {"anyOf": options}
    if defs:
        schema["$defs"] = defs
    return schema


def _bound_arrays(node: Any) -> Any:
    """Give every array a maxItems; drop long string maxLengths, which grammar-based servers
    (llama.cpp) unroll into one rule per char and choke on. The engine checks lengths anyway
    and sends a correction naming the field."""
    if isinstance(node, dict):
        if node.get("type") == "array" and "maxItems" not in node:
            node["maxItems"] = DEFAULT_MAX_ITEMS
        if node.get("type") == "string" and node.get("maxLength", 0) > MAX_GRAMMAR_LENGTH:
            del node["maxLength"]
        for value in node.values():
            _bound_arrays(value)
    elif isinstance(node, list):
        for value in node:
            _bound_arrays(value)
    return node


def _parse_json_call(text: str) -> ToolCall:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ProviderError(f"json_schema answer is not JSON: {text[:120]!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("tool"), str):
        raise ProviderError("json_schema answer lacks a 'tool' name")
    arguments = data.get("arguments", {})
    return ToolCall("call_json", data["tool"], json.dumps(arguments, ensure_ascii=False))


def _with_tool_list(messages: list[Message], tools: list[ToolSpec]) -> list[Message]:
    """The messages with the tools' names and descriptions said in the first system message
    (a grammar-enforcing server shows the model the schema's shape, never its descriptions)."""
    if not tools:
        return messages
    listing = "\n".join(f"- {t.name}: {t.description}" for t in tools)
    note = ("Answer with one JSON object {\"tool\": NAME, \"arguments\": {...}} calling one "
            f"of these tools:\n{listing}")
    if messages and messages[0]["role"] == "system":
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{note}"},
                *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def _flatten_tool_history(messages: list[Message]) -> list[Message]:
    """Servers without tool support get earlier calls and results as plain turns."""
    flat: list[Message] = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = [{"tool": c["function"]["name"],
                      "arguments": json.loads(c["function"]["arguments"] or "{}")}
                     for c in m["tool_calls"]]
            flat.append({"role": "assistant", "content": json.dumps(calls[0] if len(calls) == 1
                                                                    else calls,
                                                                    ensure_ascii=False)})
        elif m["role"] == "tool":
            flat.append({"role": "user", "content": f"Tool result: {m['content']}"})
        else:
            flat.append({"role": m["role"], "content": m.get("content") or ""})
    return flat


def _usage(response: Any, messages: list[Message], text: str) -> Usage:
    reported = getattr(response, "usage", None)
    if reported and reported.prompt_tokens is not None:
        return Usage(reported.prompt_tokens, reported.completion_tokens or 0, False)
    return Usage(estimate_tokens(json.dumps(messages, ensure_ascii=False)), estimate_tokens(text),
                 True)


def lasting_failure(exc: Exception) -> bool:
    """Whether waiting cannot heal this failure of the OpenAI client: the server refused the
    connection or its host is unknown, the key is refused (401, 403), the URL or the model
    does not exist (404). A timeout, 429 and a 5xx may heal; so may anything else."""
    from openai import (
        APIConnectionError,
        APITimeoutError,
        AuthenticationError,
        NotFoundError,
        PermissionDeniedError,
    )

    if isinstance(exc, AuthenticationError | PermissionDeniedError | NotFoundError):
        return True
    if isinstance(exc, APIConnectionError) and not isinstance(exc, APITimeoutError):
        cause: BaseException | None = exc
        while cause is not None:
            if isinstance(cause, ConnectionRefusedError | socket.gaierror):
                return True
            text = str(cause).lower()
            if "connection refused" in text or "name or service not known" in text \
                    or "nodename nor servname" in text or "name resolution" in text:
                return True
            cause = cause.__cause__ or cause.__context__
    return False


def _short(exc: Exception) -> str:
    """The error in one line. A connection error's own text is only "Connection error.":
    the cause (refused, unknown host, timed out) and the URL called are what a person needs."""
    text = str(exc)
    cause = exc.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({cause})"
    request = getattr(exc, "request", None)
    from openai import APIConnectionError

    if isinstance(exc, APIConnectionError) and request is not None:
        text += f" calling {request.url}"
    return text.replace("\n", " ")[:300]
