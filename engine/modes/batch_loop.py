"""The batch loop shared by compact, organize and deep.

The model is given one batch and a set of tools, calls them for up to `max_rounds` rounds and
ends by calling the mode's commit tool. Limits (SPEC.md section 5): batch timeout, rounds,
field-level corrections (a validation error goes back naming the field; one past the limit
fails the batch), output tokens growing on truncation up to the model's and the remaining
context's limit, and the claim transfer budget on what the batch sends.
Provider errors, malformed tool calls and non-JSON arguments fail the batch outright.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from ..base.clock import Clock
from ..base.config import Config
from ..base.errors import FieldError, MemvaultError
from ..base.tokens import estimate_tokens
from ..models.base import Message, ModelReply, Provider, ToolSpec

__all__ = ["BatchFailed", "BatchLimits", "BatchOutcome", "CallLog", "FieldError", "Tool",
           "run_batch"]


class BatchFailed(MemvaultError):
    """The batch cannot finish; it counts toward the batch's failed claims."""


@dataclass(frozen=True)
class BatchLimits:
    timeout_s: float = 300
    max_rounds: int = 16
    max_corrections: int = 3
    max_output_tokens: int = 32_768
    max_output_cap: int = 131_072
    transfer_budget_bytes: int = 96_000

    @classmethod
    def from_config(cls, config: Config) -> BatchLimits:
        return cls(
            timeout_s=config.settings.batch.timeout_s, max_rounds=config.settings.batch.max_rounds,
            max_corrections=config.settings.batch.max_corrections,
            max_output_tokens=config.settings.model.max_output_tokens,
            max_output_cap=config.settings.model.max_output_tokens_cap,
            transfer_budget_bytes=config.settings.organize.claim_budget_bytes,
        )


@dataclass
class Tool:
    """A tool of a mode: arguments checked against `args` (a pydantic model), then `handler`."""

    name: str
    description: str
    args: type[BaseModel]
    handler: Callable[[Any], Any]
    terminal: bool = False  # the commit tool: its success ends the batch
    # Called with the result when the transfer budget withholds it from the model: what the
    # model never saw must not count as seen (a withheld read_object is no read).
    on_withheld: Callable[[Any], None] | None = None

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, _schema(self.args))

    def run(self, arguments: dict[str, Any]) -> Any:
        try:
            parsed = self.args.model_validate(arguments)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "arguments"
            raise FieldError(where, first["msg"]) from None
        return self.handler(parsed)


@functools.cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    """A tool's JSON schema, built once per model class (pydantic's generation is not free)."""
    return model.model_json_schema()


@functools.cache
def _schema_json(model: type[BaseModel]) -> str:
    """A tool's JSON schema as JSON text (what the context room counts), built once per model
    class: the same text as json.dumps of `_schema(model)`."""
    return json.dumps(_schema(model))


@dataclass
class CallLog:
    """What the loop reports of each model call, for the usage ledger."""

    reply: ModelReply | None
    latency_ms: int
    outcome: str


@dataclass
class BatchOutcome:
    result: Any
    rounds: int
    corrections: int
    calls: list[CallLog] = field(default_factory=list)


def run_batch(
    provider: Provider,
    messages: list[Message],
    tools: list[Tool],
    limits: BatchLimits,
    clock: Clock,
    on_call: Callable[[CallLog], None] = lambda _: None,
    before_call: Callable[[], None] = lambda: None,
) -> BatchOutcome:
    """Drive the model until the terminal tool succeeds; raise BatchFailed otherwise.
    `on_call` reports each model call after it; `before_call` runs before each (the worker
    writes there what it still holds of earlier calls)."""
    by_name = {t.name: t for t in tools}
    specs = [t.spec() for t in tools]
    terminal = next(t.name for t in tools if t.terminal)
    started = clock.now()
    # Each message is encoded once (`_encode_new`, before the round that first sends it): the
    # transfer budget and the context room are both measured from these, never by re-encoding
    # the conversation every round; one added by the last round is never encoded at all.
    encoded: list[str] = []
    _encode_new(messages, encoded)
    sent = sum(len(e.encode()) for e in encoded)
    tools_json = "[" + ", ".join(_schema_json(t.args) for t in tools) + "]"
    out_tokens = min(limits.max_output_tokens, provider.max_output_tokens)
    rounds = corrections = 0
    calls: list[CallLog] = []

    def log(reply: ModelReply | None, began: float, outcome: str) -> None:
        entry = CallLog(reply, int((time.perf_counter() - began) * 1000), outcome)
        calls.append(entry)
        on_call(entry)

    while True:
        if (clock.now() - started).total_seconds() >= limits.timeout_s:
            raise BatchFailed(f"timeout: no proposal within {limits.timeout_s:g} s")
        if rounds >= limits.max_rounds:
            raise BatchFailed(f"no proposal after {limits.max_rounds} tool rounds")
        _encode_new(messages, encoded)
        cap = _output_cap(provider, encoded, tools_json, limits)
        out_tokens = min(out_tokens, cap)
        if out_tokens < 1:
            raise BatchFailed("the conversation fills the model's context: no room to answer")
        before_call()
        began = time.perf_counter()
        try:
            reply = provider.complete(messages, specs, out_tokens)
        except Exception as exc:  # any provider failure fails this batch, clearly
            log(None, began, "error")
            raise BatchFailed(f"provider {provider.name} failed: {exc}") from exc
        if reply.truncated:
            log(reply, began, "truncated")
            if out_tokens >= cap:
                raise BatchFailed(
                    f"answer truncated at {out_tokens} output tokens, the most the model and "
                    "the remaining context allow"
                )
            out_tokens = min(out_tokens * 2, cap)
            continue
        log(reply, began, "ok")
        rounds += 1
        messages.append(_assistant_message(reply))
        if not reply.tool_calls:
            messages.append({"role": "user", "content": f"Use the tools; finish by "
                                                                f"calling {terminal}."})
            continue
        for tool_call in reply.tool_calls:
            tool = by_name.get(tool_call.name)
            if tool is None:
                raise BatchFailed(f"malformed tool call: no tool named {tool_call.name!r}")
            arguments = _parse_arguments(tool_call.arguments, tool_call.name)
            try:
                result = tool.run(arguments)
            except FieldError as exc:
                corrections += 1
                if corrections > limits.max_corrections:
                    raise BatchFailed(
                        f"{corrections} invalid proposals (limit {limits.max_corrections} "
                        f"corrections); last: {exc}"
                    ) from None
                messages.append(_tool_message(tool_call.id, {"error": str(exc),
                                                                     "field": exc.field}))
                continue
            except BatchFailed:
                raise
            except Exception as exc:  # a bug or a database error: fail this batch, keep the worker
                raise BatchFailed(f"tool {tool_call.name} failed: {exc!r}") from exc
            if tool.terminal:
                return BatchOutcome(result, rounds, corrections, calls)
            message = _tool_message(tool_call.id, result)
            sent += len(message["content"].encode())
            if sent > limits.transfer_budget_bytes:
                if tool.on_withheld is not None:
                    tool.on_withheld(result)
                message["content"] = json.dumps({
                    "error": f"transfer budget of {limits.transfer_budget_bytes} bytes used up;"
                             f" call {terminal} with what you have",
                })
            messages.append(message)


def _encode_new(messages: list[Message], encoded: list[str]) -> None:
    """Encode the messages added since the last call (messages are only ever appended)."""
    encoded.extend(json.dumps(m, ensure_ascii=False) for m in messages[len(encoded):])


def _output_cap(
    provider: Provider, encoded: list[str], tools_json: str, limits: BatchLimits
) -> int:
    # The same text as json.dumps(messages) (its list separator is ", "), built from the
    # messages' own encodings.
    prompt = "[" + ", ".join(encoded) + "]" + tools_json
    room = provider.context_tokens - estimate_tokens(prompt)
    return max(0, min(limits.max_output_cap, provider.max_output_tokens, room))


def _parse_arguments(raw: str, name: str) -> dict[str, Any]:
    try:
        data = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise BatchFailed(
            f"malformed tool call {name}: arguments are not JSON ({exc.msg})"
        ) from None
    except (ValueError, RecursionError) as exc:  # an int past 4,300 digits; nesting too deep
        raise BatchFailed(f"malformed tool call {name}: arguments cannot be decoded "
                          f"({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise BatchFailed(f"malformed tool call {name}: arguments must be a JSON object")
    return data


def _assistant_message(reply: ModelReply) -> Message:
    message: Message = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return message


def _tool_message(call_id: str, result: Any) -> Message:
    return {"role": "tool", "tool_call_id": call_id,
            "content": json.dumps(result, ensure_ascii=False, default=str)}
