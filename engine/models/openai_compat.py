"""`openai`: any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek, Qwen, Ollama,
llama.cpp's llama-server, vLLM), through the official `openai` client.

tool_mode "native" offers the tools as functions. tool_mode "json_schema" is for servers that
accept `tools` but never emit a call while they do enforce `response_format`: each answer must
then be one JSON object {"tool": NAME, "arguments": {...}} constrained by a schema built from
the tools (arrays keep their maxItems, or small models repeat an item until the token limit).
The API key is read from the environment at call time and never stored or logged.

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
from typing import Any

from ..base.tokens import estimate_tokens
from .base import Message, ModelReply, ProviderError, ToolCall, ToolSpec, Usage

DEFAULT_MAX_ITEMS = 32
MAX_GRAMMAR_LENGTH = 256


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
        self.max_output_tokens = max_output_tokens
        self.context_tokens = context_tokens
        self.timeout_s = timeout_s
        self._base_url = (base_url or os.environ.get("OPENAI_BASE_URL")
                          or "https://api.openai.com/v1")
        self._api_key_env = api_key_env
        self._openai = OpenAI
        self._client = self._new_client()

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
            request["messages"] = _flatten_tool_history(messages)
            schema = tool_choice_schema(tools)
            request["response_format"] = (
                {"type": "json_object", "schema": schema} if self.schema_format == "json_object"
                else {"type": "json_schema",
                      "json_schema": {"name": "tool_call", "strict": True, "schema": schema}})
        else:
            request["messages"] = messages
            request["tools"] = [t.openai() for t in tools]
        try:
            response = self._create(request, deadline_s)
        except OpenAIError as exc:
            raise ProviderError(f"{type(exc).__name__}: {_short(exc)}",
                                lasting=lasting_failure(exc)) from None
        if not getattr(response, "choices", None):
            raise ProviderError("the server answered without choices")
        choice = response.choices[0]
        usage = _usage(response, messages, choice.message.content or "")
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
        return ModelReply(text=text, tool_calls=calls, finish_reason=finish, usage=usage,
                          model=response.model or self.model)


def tool_choice_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """One JSON schema admitting {"tool": name, "arguments": <that tool's schema>}."""
    options = []
    defs: dict[str, Any] = {}
    for tool in tools:
        params = _bound_arrays(json.loads(json.dumps(tool.parameters)))
        defs.update(params.pop("$defs", {}))
        options.append({
            "type": "object",
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
