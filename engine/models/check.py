"""`memvault model check`: what the configured endpoint can do, asked with one tiny
structured question: reachable, its context and output sizes (and where they come from),
whether tools (or a JSON schema) come back as a call, and the time a token takes.

The question is the smallest the engine's own batches ask: call one tool with one enum
argument. A server that drops tools in silence is then asked again in json_schema mode, so the
one line of advice says whether switching works.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from .base import ProviderError, ToolSpec
from .openai_compat import JSON_SCHEMA_ADVICE, OpenAICompatProvider

CHECK_TOOL = ToolSpec(
    "answer", "Give the answer to the question.",
    {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
     "required": ["answer"], "additionalProperties": False})
CHECK_MESSAGES = [
    {"role": "system", "content": "You answer by calling the answer tool, nothing else."},
    {"role": "user", "content": "Is water wet? Call the answer tool with yes or no."},
]
CHECK_OUTPUT_TOKENS = 256  # room for a small model's call (and a thinking model's preamble)
MIN_CONTEXT = 8_192  # below this an organize batch (prompt, tools, page) hardly fits


@dataclass(frozen=True)
class ModelCheck:
    """What `check_model` found; `advice`: the one line to act on (None: all works)."""

    model: str
    base_url: str
    server: str  # llama.cpp, ollama, openai-compatible, unreachable
    context_tokens: int
    context_source: str  # "/props", "/api/show num_ctx", …, or "model.context_tokens"
    output_tokens: int
    tool_mode: str  # the configured one
    answered: bool  # the tiny question came back as a valid tool call
    json_schema_works: bool | None  # asked when native tools failed; None: not asked
    seconds: float | None
    answer_tokens: int | None
    error: str | None
    advice: str | None

    @property
    def seconds_per_token(self) -> float | None:
        if self.seconds is None or not self.answer_tokens:
            return None
        return self.seconds / self.answer_tokens


def check_model(provider: OpenAICompatProvider,
                timer: Callable[[], float] = time.perf_counter) -> ModelCheck:
    """Ask `provider`'s server what it serves and one tiny structured question."""
    facts = provider.server_facts()
    said = facts.context_tokens is not None and facts.context_tokens <= \
        provider.settings_context_tokens
    context_source = facts.source if said else "model.context_tokens"
    found = functools.partial(
        ModelCheck, provider.model, provider.base_url, facts.server,
        provider.server_context_tokens, context_source, provider.max_output_tokens,
        provider.tool_mode)
    if not facts.reachable:
        return found(answered=False, json_schema_works=None, seconds=None, answer_tokens=None,
                     error="connection refused or host unknown",
                     advice=f"start the server, or set model.base_url to where it listens "
                            f"(now {provider.base_url})")
    answered, tokens, error, seconds = _timed_ask(provider, timer)
    json_works = None
    if not answered and provider.tool_mode == "native" and error and "json_schema" in error:
        json_works, tokens, _, seconds = _timed_ask(_in_json_schema(provider), timer)
    return found(answered=answered, json_schema_works=json_works, seconds=seconds,
                 answer_tokens=tokens, error=error,
                 advice=_advice(provider, answered, json_works, error))


def _timed_ask(provider: OpenAICompatProvider, timer: Callable[[], float]
               ) -> tuple[bool, int | None, str | None, float]:
    """`_ask`, and the seconds it took."""
    began = timer()
    answered, tokens, error = _ask(provider)
    return answered, tokens, error, timer() - began


def _ask(provider: OpenAICompatProvider) -> tuple[bool, int | None, str | None]:
    """Whether the tiny question came back as a valid call, its output tokens, the error."""
    try:
        reply = provider.complete([dict(m) for m in CHECK_MESSAGES], [CHECK_TOOL],
                                  CHECK_OUTPUT_TOKENS)
    except ProviderError as exc:
        return False, None, str(exc)
    tokens = reply.usage.output_tokens or None
    if reply.truncated:
        return False, tokens, f"the answer ran past {CHECK_OUTPUT_TOKENS} output tokens"
    call = next((c for c in reply.tool_calls if c.name == CHECK_TOOL.name), None)
    if call is None:
        return False, tokens, "the answer called no tool"
    try:
        value = json.loads(call.arguments or "{}").get("answer")
    except (ValueError, AttributeError):
        return False, tokens, f"the tool call's arguments are not a JSON object: " \
                              f"{call.arguments[:80]!r}"
    if value not in ("yes", "no"):
        return False, tokens, f"the answer {value!r} is outside the schema's enum"
    return True, tokens, None


def _in_json_schema(provider: OpenAICompatProvider) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        model=provider.model, base_url=provider.base_url, api_key_env=provider.api_key_env,
        tool_mode="json_schema", schema_format=provider.schema_format,
        max_output_tokens=provider.settings_output_tokens,
        context_tokens=provider.settings_context_tokens, timeout_s=provider.timeout_s)


def _advice(provider: OpenAICompatProvider, answered: bool, json_works: bool | None,
            error: str | None) -> str | None:
    if json_works:
        return JSON_SCHEMA_ADVICE
    if not answered:
        if provider.tool_mode == "json_schema" and error and "not JSON" in error:
            return ('the server ignores the JSON schema: try schema_format = "json_object" '
                    "in [model] (llama-cpp-python's server), or a larger model")
        return "the model could not answer one structured question: try a larger model"
    if provider.server_context_tokens < MIN_CONTEXT:
        return (f"the context is {provider.server_context_tokens} tokens: give the server at "
                f"least {MIN_CONTEXT} (llama-server --ctx-size, Ollama num_ctx) and set "
                "model.context_tokens to it")
    return None


def check_lines(check: ModelCheck) -> list[str]:
    """The check for people, one fact a line, the advice last."""
    if check.server == "unreachable":
        return [f"reachable: no ({check.base_url}: {check.error})", f"advice: {check.advice}"]
    lines = [f"reachable: yes ({check.server} at {check.base_url}, model {check.model})",
             f"context: {check.context_tokens:,} tokens (from {check.context_source})",
             f"output: at most {check.output_tokens:,} tokens an answer"]
    if check.answered:
        lines.append(f"tools: {check.tool_mode} works (one structured answer came back)")
    else:
        lines.append(f"tools: {check.tool_mode} failed: {check.error}")
        if check.json_schema_works is not None:
            lines.append("json_schema: " + ("works" if check.json_schema_works else "failed too"))
    if check.seconds is not None and (check.answered or check.json_schema_works):
        per = check.seconds_per_token
        lines.append(f"speed: {check.seconds:.1f} s for the answer"
                     + (f" ({check.answer_tokens} tokens, {per:.3f} s a token)" if per else ""))
    lines.append(f"advice: {check.advice}" if check.advice else "ready: organize can use it")
    return lines
