"""The batch loop shared by compact, organize and deep.

The model is given one batch and a set of tools, calls them for up to `max_rounds` rounds and
ends by calling the mode's commit tool. The loop does not commit: it hands the validated
arguments to its caller (a `Turn`'s proposal), which commits them and hands a refusal back
(`BatchLoop.refuse`) for the model to correct. Limits (docs/spec.md section 3): batch timeout,
rounds, field-level corrections (a validation error goes back naming the field; one past the
limit fails the batch), output tokens growing on truncation up to the model's and the remaining
context's limit, and the claim transfer budget on what the batch sends.
Provider errors, malformed tool calls and non-JSON arguments fail the batch outright.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from ..base.clock import Clock
from ..base.config import Config
from ..base.errors import FieldError, MemvaultError
from ..base.tokens import estimate_tokens
from ..models.base import Message, ModelReply, Provider, ToolCall, ToolSpec

__all__ = ["BatchFailed", "BatchLimits", "BatchLoop", "CallLog", "FieldError", "Proposal", "Tool",
           "Turn"]


# A model call must end this long before the worker's lease does: the commit that follows it
# needs the lease still valid.
LEASE_MARGIN_S = 5.0
# With less than this left on the lease after the margin, no model call is started: its answer
# could not be committed (the batch fails, to be retried under a new lease).
MIN_CALL_S = 5.0


class BatchFailed(MemvaultError):
    """The batch cannot finish; it counts toward the batch's failed claims. `lasting`: its
    cause will not heal by waiting (the provider's ProviderError said so)."""

    def __init__(self, message: str, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting


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


@dataclass(frozen=True)
class Proposal:
    """The commit tool's arguments as the model sent them, validated by the tool's schema: what
    the caller commits (the store's rules are checked by the commit itself)."""

    args: BaseModel
    tool: str  # the commit tool's name
    call_id: str  # the tool call that carries it, for a correction's answer


@dataclass
class Turn:
    """One step of a batch: the model call it made (none when it went on with the tool calls
    left of the last reply) and how it ended: a proposal to commit, a failure, or neither
    (call the next turn, after putting `calls` on record)."""

    calls: list[CallLog] = field(default_factory=list)
    proposal: Proposal | None = None
    failure: str | None = None  # why the batch cannot finish; it counts as a failed claim
    lasting: bool = False  # the failure will not heal by waiting


class BatchLoop:
    """One batch's conversation. The caller drives it turn by turn (`next_turn`), records each
    turn's calls, commits a proposal itself and hands a refused one back (`refuse`), which the
    model then sees as a correction naming the field."""

    def __init__(self, provider: Provider, messages: list[Message], tools: list[Tool],
                 limits: BatchLimits, clock: Clock, lease_expires: datetime | None = None,
                 ) -> None:
        self.provider, self.messages, self.limits, self.clock = provider, messages, limits, clock
        self.lease_expires = lease_expires  # each model call must end before (LEASE_MARGIN_S)
        self.by_name = {t.name: t for t in tools}
        self.specs = [t.spec() for t in tools]
        self.terminal = next(t.name for t in tools if t.terminal)
        self.started = clock.now()
        # Each message is encoded once (`_encode_new`, before the round that first sends it): the
        # transfer budget and the context room are both measured from these, never by
        # re-encoding the conversation every round.
        self.encoded: list[str] = []
        _encode_new(messages, self.encoded)
        self.sent = sum(len(e.encode()) for e in self.encoded)
        self.tools_json = "[" + ", ".join(_schema_json(t.args) for t in tools) + "]"
        self.out_tokens = min(limits.max_output_tokens, provider.max_output_tokens)
        self.rounds = self.corrections = 0
        self.last_correction = ""
        self.left: list[ToolCall] = []  # tool calls of the last reply not run yet

    def next_turn(self) -> Turn:
        """Run the tool calls left of the last reply, else call the model once and run the
        tools it asks for, up to a proposal of the commit tool."""
        turn = Turn()
        try:
            self._check_corrections()
            if not self.left:
                self._call_model(turn)
            turn.proposal = self._run_tool_calls()
        except BatchFailed as exc:
            turn.failure, turn.lasting = str(exc), exc.lasting
        return turn

    def refuse(self, proposal: Proposal, error: FieldError) -> None:
        """The commit refused `proposal` for a reason the model can fix: count a correction
        and answer its tool call with the field (past the limit, the next turn fails)."""
        self._correct(proposal.call_id, error)

    def _correct(self, call_id: str, error: FieldError) -> None:
        self.corrections += 1
        self.last_correction = str(error)
        self.messages.append(_tool_message(call_id, {"error": str(error), "field": error.field}))

    def _check_corrections(self) -> None:
        if self.corrections > self.limits.max_corrections:
            raise BatchFailed(f"{self.corrections} invalid proposals (limit "
                              f"{self.limits.max_corrections} corrections); last: "
                              f"{self.last_correction}")

    def _call_model(self, turn: Turn) -> None:
        """One model call (checking the limits first); its reply's tool calls become `left`."""
        limits = self.limits
        if (self.clock.now() - self.started).total_seconds() >= limits.timeout_s:
            raise BatchFailed(f"timeout: no proposal within {limits.timeout_s:g} s")
        if self.rounds >= limits.max_rounds:
            raise BatchFailed(f"no proposal after {limits.max_rounds} tool rounds")
        _encode_new(self.messages, self.encoded)
        cap = _output_cap(self.provider, self.encoded, self.tools_json, limits)
        self.out_tokens = min(self.out_tokens, cap)
        if self.out_tokens < 1:
            raise BatchFailed("the conversation fills the model's context: no room to answer")
        deadline = self._call_deadline()
        began = time.perf_counter()
        try:
            reply = self.provider.complete(self.messages, self.specs, self.out_tokens,
                                           deadline_s=deadline)
        except Exception as exc:  # any provider failure fails this batch, clearly
            turn.calls.append(_log(None, began, "error"))
            raise BatchFailed(f"provider {self.provider.name} failed: {exc}",
                              lasting=getattr(exc, "lasting", False) is True) from exc
        if reply.truncated:
            turn.calls.append(_log(reply, began, "truncated"))
            if self.out_tokens >= cap:
                raise BatchFailed(
                    f"answer truncated at {self.out_tokens} output tokens, the most the model "
                    "and the remaining context allow"
                )
            self.out_tokens = min(self.out_tokens * 2, cap)
            return
        turn.calls.append(_log(reply, began, "ok"))
        self.rounds += 1
        self.messages.append(_assistant_message(reply))
        if not reply.tool_calls:
            self.messages.append({"role": "user", "content": f"Use the tools; finish by "
                                                             f"calling {self.terminal}."})
        self.left = list(reply.tool_calls)

    def _call_deadline(self) -> float | None:
        """Seconds the next model call may take: what is left on the lease, less the commit's
        margin (the provider keeps its own timeout when that is sooner). BatchFailed, before
        any call, when that is under MIN_CALL_S: the answer could not be committed."""
        if self.lease_expires is None:
            return None
        left = (self.lease_expires - self.clock.now()).total_seconds() - LEASE_MARGIN_S
        if left < MIN_CALL_S:
            raise BatchFailed(
                f"the lease has {max(0.0, left + LEASE_MARGIN_S):.0f} s left: too little for a "
                "model call and its commit; retried under a new lease")
        return left

    def _run_tool_calls(self) -> Proposal | None:
        """Run the left tool calls in order, up to the first valid proposal (returned; the
        calls after it wait for `refuse`, or are dropped by the commit)."""
        while self.left:
            tool_call = self.left.pop(0)
            tool = self.by_name.get(tool_call.name)
            if tool is None:
                raise BatchFailed(f"malformed tool call: no tool named {tool_call.name!r}")
            arguments = _parse_arguments(tool_call.arguments, tool_call.name)
            try:
                result = tool.run(arguments)
            except FieldError as exc:
                self._correct(tool_call.id, exc)
                self._check_corrections()
                continue
            except BatchFailed:
                raise
            except Exception as exc:  # a bug or a database error: fail this batch, keep the worker
                raise BatchFailed(f"tool {tool_call.name} failed: {exc!r}") from exc
            if tool.terminal:
                return Proposal(result, tool.name, tool_call.id)
            self._answer(tool, tool_call.id, result)
        return None

    def _answer(self, tool: Tool, call_id: str, result: Any) -> None:
        """A browsing tool's result for the model, unless the transfer budget is used up."""
        message = _tool_message(call_id, result)
        self.sent += len(message["content"].encode())
        if self.sent > self.limits.transfer_budget_bytes:
            if tool.on_withheld is not None:
                tool.on_withheld(result)
            message["content"] = json.dumps({
                "error": f"transfer budget of {self.limits.transfer_budget_bytes} bytes used "
                         f"up; call {self.terminal} with what you have",
            })
        self.messages.append(message)

def _log(reply: ModelReply | None, began: float, outcome: str) -> CallLog:
    return CallLog(reply, int((time.perf_counter() - began) * 1000), outcome)


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
