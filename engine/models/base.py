"""The provider protocol: messages in, tool calls or text out, with usage and finish reason.

Messages are OpenAI-style dicts ({"role", "content", "tool_calls", "tool_call_id"}), the
lingua franca of every provider here. A provider never touches the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name, "description": self.description, "parameters": self.parameters,
            },
        }


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for; `arguments` is the raw JSON text the model wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    estimated: bool = False  # True when the provider reported nothing and we estimated


@dataclass
class ModelReply:
    """What one model call returned. finish_reason: 'stop', 'tool_calls' or 'length'."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=lambda: Usage(0, 0, True))
    model: str = ""

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class ProviderError(Exception):
    """A provider could not produce an answer (connection refused, HTTP error, garbage).
    `lasting`: waiting will not heal it (a refused connection, an unknown host, 401/403/404,
    an unknown model): a person must change something first."""

    def __init__(self, message: str, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting


class Provider(Protocol):
    """A model behind one method. Capabilities are plain attributes."""

    name: str
    model: str
    max_output_tokens: int  # the most output the model can give in one answer
    context_tokens: int  # the model's context window

    def complete(
        self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int,
        deadline_s: float | None = None,
    ) -> ModelReply:
        """Answer the conversation, calling at most the given tools. `deadline_s`: the most
        seconds this call may take (the worker's lease must outlast it); a provider that can
        wait on a server gives up by then, or by its own timeout when that comes first, with
        a ProviderError."""
        ...
