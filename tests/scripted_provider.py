"""A fake provider for tests: replays a given list of answers and records every request it saw.

Not a provider a user can choose (model.provider and `--model` offer builtin and openai): a
test hands a ScriptedProvider to `Memory.worker(provider)` or `Worker(mem, provider)`, and
every job that worker runs goes to it. bench/batch_overhead.py and bench/organize_overhead.py
borrow it for a model that answers instantly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memvault.models.base import Message, ModelReply, ProviderError, ToolCall, ToolSpec, Usage

Step = ModelReply | Exception | Callable[[list[Message], list[ToolSpec], int], ModelReply]


def call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> ModelReply:
    """A reply that calls one tool (arguments as a dict, or raw text to simulate garbage)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ModelReply(
        tool_calls=[ToolCall(call_id or f"call_{name}", name, raw)], finish_reason="tool_calls",
        usage=Usage(100, 20),
    )


class ScriptedProvider:
    """Answers with the queued steps in order; a step may be a reply, an exception to raise,
    or a function of (messages, tools, max_output_tokens). Raises when the script runs out."""

    name = "scripted"

    def __init__(
        self, steps: list[Step] | None = None, model: str = "scripted-1",
        max_output_tokens: int = 131_072, context_tokens: int = 1_000_000,
    ) -> None:
        self.steps: list[Step] = list(steps or [])
        self.model = model
        self.max_output_tokens = max_output_tokens
        self.context_tokens = context_tokens
        self.history: list[dict[str, Any]] = []

    def enqueue(self, *steps: Step) -> None:
        self.steps.extend(steps)

    def complete(
        self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int,
        deadline_s: float | None = None,
    ) -> ModelReply:
        self.history.append({
            "messages": [dict(m) for m in messages], "tools": [t.name for t in tools],
            "max_output_tokens": max_output_tokens, "deadline_s": deadline_s,
        })
        if not self.steps:
            raise ProviderError("scripted provider has no answer left")
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        if callable(step) and not isinstance(step, ModelReply):
            return step(messages, tools, max_output_tokens)
        return step
