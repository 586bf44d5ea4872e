"""organize's claim limits in bytes, and the status a new project is born with.

A claim transfers at most organize.claim_budget_bytes (bytes, not tokens, not chars): the page
alone may take at most half of it after the payload's reserve, so a Chinese page (3 bytes a
char) is shrunk where an English page of the same length is not; related objects are added only
while they fit what is left. A new project is created `candidate`; a proposal creating it
`active` or `archived` gets a correction.

What breaks this test (each mutation made in the engine, the test run and seen to fail, the
code restored):
- engine/jobs/modes/organize.py `_page`: the byte margin `len(text[start:end].encode())` changed to
  the char margin `len(text[start:end])` -> test_a_chinese_page_is_shrunk_by_its_bytes;
- engine/jobs/modes/organize.py `related_objects`: the cost `len(json.dumps(item, ...).encode())`
  changed to `len(json.dumps(item, ...))` (chars), and separately the `if used + cost >
  budget: continue` check removed -> test_related_objects_stay_within_the_claim_budget;
- engine/objects/graph_write.py `_check_status`: `obj.status not in (None, "candidate")` changed
  to `obj.status not in (None, "candidate", "archived")` ->
  test_a_new_project_is_created_as_candidate[archived].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from memvault import ManualClock, Memory
from memvault.jobs.modes.organize import PAYLOAD_RESERVE
from memvault.models.base import Message, ModelReply, ToolSpec
from modes_support import (
    add_archived,
    commit_organize,
    errors_seen,
    make_worker,
    obj,
    one_batch,
    open_memory,
    organize_step,
    put_object,
)

BUDGET = 24_000  # the smallest claim budget the config allows
SMALL_BUDGET = f"[organize]\nclaim_budget_bytes = {BUDGET}\n"
PAGE_BYTES_MAX = (BUDGET - PAYLOAD_RESERVE) // 2


class Recorder:
    """A model step that keeps the claim it was sent (payload and its size) and continues."""

    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []
        self.sizes: list[int] = []

    def __call__(self, messages: list[Message], tools: list[ToolSpec],
                 max_out: int) -> ModelReply:
        self.sizes.append(sum(len(m["content"].encode()) for m in messages))
        return organize_step(self._build, self.payloads)(messages, tools, max_out)

    @staticmethod
    def _build(data: dict[str, Any]) -> dict[str, Any]:
        if data["page"]["last"]:
            return {"outcome": "archive_only", "reason": "a limits test"}
        return {"outcome": "continue", "progress": f"read to {data['page']['end']}"}


def first_claim(mem: Memory, text: str) -> tuple[dict[str, Any], int]:
    """Queue `text`, run one organize batch; return the payload the model got and the bytes of
    all its messages."""
    add_archived(mem, text)
    mem.organize()
    recorder = Recorder()
    worker, _ = make_worker(mem, [recorder])
    assert worker.tick().action == "committed"
    return recorder.payloads[0], recorder.sizes[0]


def test_an_english_page_of_8000_chars_fits_the_smallest_budget(
    home: Path, clock: ManualClock,
) -> None:
    mem = open_memory(home, clock, SMALL_BUDGET)
    data, _ = first_claim(mem, ("Ivo ships the billing fix on Monday. " * 300)[:9_000])
    page = data["page"]
    assert (page["start"], page["end"]) == (0, 8_000)  # 8,000 bytes: under half the budget
    mem.close()


def test_a_chinese_page_is_shrunk_by_its_bytes(home: Path, clock: ManualClock) -> None:
    mem = open_memory(home, clock, SMALL_BUDGET)
    data, size = first_claim(mem, ("伊沃周一发布账单修复。" * 900)[:9_000])
    page = data["page"]
    chars = page["end"] - page["start"]
    # 8,000 chars would be 24,000 bytes: the page is cut to what half the budget holds...
    assert len(page["text"].encode()) <= PAGE_BYTES_MAX
    assert mem.config["organize.page_min_chars"] <= chars < 8_000
    assert len(page["text"]) == chars
    # ...and the whole claim the model got stays within the claim budget.
    assert size <= BUDGET
    mem.close()


@pytest.mark.parametrize(("budget", "han_chars"), [(BUDGET, 2_000), (96_000, 16_000)],
                         ids=["smallest-budget", "default-budget"])
def test_related_objects_stay_within_the_claim_budget(
    home: Path, clock: ManualClock, budget: int, han_chars: int,
) -> None:
    mem = open_memory(home, clock, f"[organize]\nclaim_budget_bytes = {budget}\n")
    assert mem.config["organize.claim_budget_bytes"] == budget
    names = ["Alice", "Bruno", "Chen", "Dora", "Emil"]
    # Han is 3 bytes a char: the five bodies fit the budget in chars, not in bytes.
    body = ("负责发布流程与回滚清单。" * 1_500)[:han_chars]
    for name in names:
        put_object(mem, f"person:{name.lower()}", name, body=body)
    data, size = first_claim(mem, f"{', '.join(names)} met about the launch and agreed on it.")
    related = data["related"]
    room = budget - PAYLOAD_RESERVE - len(data["page"]["text"].encode())
    used = sum(len(json.dumps(o, ensure_ascii=False).encode()) for o in related)
    assert used <= room
    assert 1 <= len(related) < len(names)
    assert size <= budget
    mem.close()


@pytest.mark.parametrize("status", ["active", "archived"])
def test_a_new_project_is_created_as_candidate(mem: Memory, status: str) -> None:
    (event,) = add_archived(mem, "We start the Payments project next week.")
    mem.organize()
    cite = [{"object_id": "project:payments", "event_id": event, "start": 9, "end": 17}]
    result, provider = one_batch(
        mem,
        commit_organize(event, "linked", evidence=cite,
                        objects=[obj("project:payments", "Payments", status=status)]),
        commit_organize(event, "linked", evidence=cite,
                        objects=[obj("project:payments", "Payments")]))
    assert result.action == "committed"
    (error,) = errors_seen(provider)
    assert error["field"] == "objects.0.status" and "candidate" in error["error"]
    assert mem.read_object("project:payments")["object"]["status"] == "candidate"
