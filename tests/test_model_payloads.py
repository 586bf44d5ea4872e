"""The batch payloads are one typed contract: each mode's payload, as a worker sends it, is
exactly its shape in models/payloads.py (no field the shape leaves out, none it lacks), and a
payload that does not fit is refused with the field named."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from memvault.base.clock import ManualClock
from memvault.models.base import Message, ModelReply, ProviderError, ToolSpec
from memvault.models.builtin import TOOLS, BuiltinProvider
from memvault.models.payloads import read_payload
from memvault.timeline.events import NewEvent
from modes_support import compact_then_organize, open_memory

pytestmark = pytest.mark.timeout(120)


class Recording(BuiltinProvider):
    """The builtin, keeping every first payload it is sent, by mode."""

    def __init__(self) -> None:
        self.payloads: dict[str, list[dict[str, Any]]] = {}

    def complete(self, messages: list[Message], tools: list[ToolSpec], max_output_tokens: int,
                 deadline_s: float | None = None) -> ModelReply:
        mode = next(TOOLS[t.name] for t in tools if t.name in TOOLS)
        self.payloads.setdefault(mode, []).append(json.loads(str(messages[1]["content"])))
        return super().complete(messages, tools, max_output_tokens, deadline_s)


def test_every_mode_sends_exactly_its_typed_shape(tmp_path) -> None:
    clock = ManualClock(datetime(2026, 12, 4, 9, 0, tzinfo=UTC))
    provider = Recording()
    with open_memory(tmp_path / "home", clock) as mem:
        mem.append_events([
            NewEvent("I'm Mira Okafor, I lead the data platform team.",
                     "2026-12-04T09:00:00Z", "user", "message"),
            NewEvent("Dentist on 2026-12-10 at 9:30.", "2026-12-04T09:01:00Z", "user",
                     "message"),
            NewEvent("[memory_find] Mira Okafor leads the data platform team.",
                     "2026-12-04T09:02:00Z", "tool", "memory_result"),
        ])
        compact_then_organize(mem, provider, lambda: mem.organize(mode="deep"))
    assert set(provider.payloads) == {"compact", "organize", "deep"}
    for mode, sent in provider.payloads.items():
        for payload in sent:
            # validation drops a field the shape does not name: equal means none was dropped
            assert read_payload(mode, payload) == payload, mode
            assert payload["mode"] == mode


def _organize_payload() -> dict[str, Any]:
    return {"mode": "organize",
            "event": {"id": 1, "occurred_at": "2026-12-04T09:00:00Z", "source": "user",
                      "kind": "message", "meta": {}, "chars": 5},
            "page": {"start": 0, "end": 5, "last": True, "text": "hello"},
            "progress": None, "targets": [], "related": [], "scope": None}


@pytest.mark.parametrize(("break_it", "field"), [
    (lambda p: p.pop("page"), "page"),
    (lambda p: p["event"].update(id="one"), "event.id"),
    (lambda p: p["page"].pop("end"), "page.end"),
    (lambda p: p.update(related=[{"id": "person:x"}]), "related.0.type"),
])
def test_a_payload_that_does_not_fit_its_shape_is_refused_with_its_field_named(
        break_it, field) -> None:
    payload = _organize_payload()
    assert read_payload("organize", payload) == payload
    break_it(payload)
    with pytest.raises(ProviderError, match=rf"organize payload .*{field}"):
        read_payload("organize", payload)


def test_the_builtin_names_a_batch_it_cannot_read() -> None:
    payload = _organize_payload()
    del payload["page"]
    messages: list[Message] = [{"role": "system", "content": "s"},
                               {"role": "user", "content": json.dumps(payload)}]
    with pytest.raises(ProviderError, match="could not read this organize batch: KeyError"):
        BuiltinProvider().complete(messages, [ToolSpec("commit_organize", "", {})], 10_000)
