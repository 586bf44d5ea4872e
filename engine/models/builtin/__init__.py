"""`builtin`: a deterministic, rule-based "model" that works offline, honestly named so.

It speaks the same protocol as a real model: it reads the conversation and answers with ONE
call of the mode's commit tool. The mode is recognised by the tool offered (commit_compaction
-> compact, commit_organize -> organize, commit_review -> deep); the batch payload is the JSON
content of the first user message. When the last message is a tool result carrying an error
(a field-level correction), it resubmits a reduced proposal built from its previous one, so a
batch converges or runs out of corrections; it never loops on its own.

Usage is estimated with base/tokens.py (`estimated=True`): nothing is billed. What the rules can
and cannot do is written down in docs/builtin-model.md.
"""

from __future__ import annotations

import json
from typing import Any, cast

from ...base.tokens import estimate_tokens
from ...objects.proposals import without_controls
from ..base import Message, ModelReply, ProviderError, ToolCall, ToolSpec, Usage
from ..payloads import CompactPayload, DeepPayload, OrganizePayload
from . import compact, deep, organize

TOOLS = {"commit_compaction": "compact", "commit_organize": "organize", "commit_review": "deep"}


class BuiltinProvider:
    """The offline rules behind the Provider protocol (see base.Provider)."""

    name = "builtin"
    model = "builtin-rules-1"
    max_output_tokens = 131_072
    context_tokens = 1_000_000

    def complete(
        self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int,
        deadline_s: float | None = None,
    ) -> ModelReply:
        """Answer with one call of the offered commit tool (offline and quick: no deadline
        to keep)."""
        tool = next((t.name for t in tools if t.name in TOOLS), None)
        if tool is None:
            raise ProviderError(
                "the builtin model only answers compact, organize and deep batches "
                f"(offered: {', '.join(t.name for t in tools) or 'no tools'})"
            )
        payload = _payload(messages)
        try:
            arguments = self.answer(TOOLS[tool], payload, messages)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a malformed payload
            raise ProviderError(f"the builtin rules could not read this {TOOLS[tool]} batch: "
                                f"{type(exc).__name__}: {exc}") from exc
        # Raw event text may hold terminal escapes, which a proposal may not: never copied.
        text = json.dumps(without_controls(arguments), ensure_ascii=False)
        usage = Usage(estimate_tokens(json.dumps(messages, ensure_ascii=False)),
                      estimate_tokens(text), estimated=True)
        if usage.output_tokens > max_output_tokens:
            # Like a real model: an answer longer than allowed comes back truncated.
            return ModelReply(text="", finish_reason="length", usage=usage, model=self.model)
        rounds = sum(1 for m in messages if m.get("role") == "assistant")
        return ModelReply(tool_calls=[ToolCall(f"builtin_{tool}_{rounds + 1}", tool, text)],
                          finish_reason="tool_calls", usage=usage, model=self.model)

    def answer(self, mode: str, payload: dict[str, Any],
               messages: list[Message]) -> dict[str, Any]:
        """The commit arguments for `mode`, first try or after a correction. The payload is
        read as its mode's shape (models/payloads.py) without checking it whole: the rules read
        what they need, and a field they miss is a KeyError, reported as a malformed batch."""
        correction = _correction(messages)
        previous = _previous_arguments(messages)
        error, field_path = correction or ("", "")
        if mode == "compact":
            nodes = cast("CompactPayload", payload)
            attempt = sum(1 for m in messages if m.get("role") == "tool")
            return (compact.build(nodes) if correction is None or previous is None
                    else compact.correct(nodes, previous, error, attempt))
        if mode == "organize":
            page = cast("OrganizePayload", payload)
            return (organize.build(page)[0] if correction is None or previous is None
                    else organize.correct(page, previous, field_path, error))
        review = cast("DeepPayload", payload)
        return (deep.build(review) if correction is None or previous is None
                else deep.correct(review, previous, field_path))


def _payload(messages: list[Message]) -> dict[str, Any]:
    for message in messages:
        if message.get("role") == "user":
            try:
                data = json.loads(str(message.get("content") or ""))
            except json.JSONDecodeError as exc:
                raise ProviderError(f"the builtin model needs a JSON payload: {exc}") from None
            if not isinstance(data, dict):
                raise ProviderError("the builtin model needs a JSON object as the batch payload")
            return data
    raise ProviderError("the builtin model got no user message with the batch payload")


def _correction(messages: list[Message]) -> tuple[str, str] | None:
    """(error, field) when the last message is a tool result that reports an error."""
    if not messages or messages[-1].get("role") != "tool":
        return None
    try:
        data = json.loads(str(messages[-1].get("content") or ""))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or "error" not in data:
        return None
    return str(data.get("error") or ""), str(data.get("field") or "")


def _previous_arguments(messages: list[Message]) -> dict[str, Any] | None:
    """The arguments of the last tool call this model made, if any."""
    for message in reversed(messages):
        calls = message.get("tool_calls") or []
        if message.get("role") == "assistant" and calls:
            raw = calls[-1].get("function", {}).get("arguments", "")
            try:
                data = json.loads(raw)
            except (json.JSONDecodeError, TypeError):
                return None
            return data if isinstance(data, dict) else None
    return None
