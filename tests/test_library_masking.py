"""Masking is one policy of `Memory`: every read of the library masks secret-looking values
unless its caller asks to reveal, and a reveal that shows anything hidden is logged (without the
value) in the home's reveals.log. The CLI and the MCP server only pass the ask along."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from memvault import Memory, NewEvent
from memvault.home.reveals import REVEAL_LOG, Reveal
from vault_support import open_memory, put_object

PASSWORD = "password: Tr0ub4dor-and-3"

# Every public method of Memory, by what it does with stored text. A new method must be put in
# one of these, so a new read cannot be added without deciding how it masks.
READS = {"read_event", "list_events", "timeline_view", "expand", "read_core_file",
         "resident_context", "list_objects", "read_object", "find", "read", "evidence"}
MASKED_ALWAYS = {"status", "object_versions", "core_file_history", "event_moves", "usage",
                 "check", "forget_dry_run", "worker_holder"}  # no stored text, or masked
NOT_READS = {"open", "migrate", "tz", "close", "append_event", "append_events", "append",
             "ingest", "write_core_file", "sync_recall_index", "compact", "organize", "set_busy",
             "worker", "correct", "move_space", "approve_project", "reindex", "render_vault",
             "read_hand_edit", "adopt_vault_file", "backup", "forget"}


def leaks(value: object) -> bool:
    return "tr0ub4dor" in json.dumps(value, ensure_ascii=False, default=str).lower()


def seed(mem: Memory) -> int:
    (event_id,) = mem.append_events([NewEvent(f"the router {PASSWORD} (do not share)")])
    put_object(mem, "person:alice", "Alice", body=f"Alice keeps the router {PASSWORD}")
    mem.write_core_file("USER.md", f"# USER\n\nRouter {PASSWORD}\n")
    return event_id


def every_read(mem: Memory, event_id: int) -> dict[str, Callable[[Reveal | bool], Any]]:
    """Each library read of the seeded secret, by name, taking the `reveal` to pass."""
    return {
        "read_event": lambda r: mem.read_event(event_id, reveal=r),
        "list_events": lambda r: mem.list_events("2000-01-01T00:00:00+00:00",
                                                 "2100-01-01T00:00:00+00:00", reveal=r),
        "timeline_view": lambda r: mem.timeline_view(reveal=r),
        "expand": lambda r: mem.expand(1, reveal=r),
        "read_core_file": lambda r: mem.read_core_file("USER.md", reveal=r),
        "resident_context": lambda r: mem.resident_context(reveal=r),
        "list_objects": lambda r: mem.list_objects(reveal=r),
        "read_object": lambda r: mem.read_object("person:alice", reveal=r),
        "find": lambda r: mem.find("router", reveal=r),
        "read": lambda r: mem.read("person:alice", reveal=r),
        "evidence": lambda r: mem.evidence(str(event_id), reveal=r),
    }


@pytest.mark.timeout(60)
def test_every_public_method_of_memory_is_classified_and_every_read_takes_reveal() -> None:
    public = {name for name, _ in inspect.getmembers(Memory) if not name.startswith("_")}
    assert public == READS | MASKED_ALWAYS | NOT_READS, (
        "classify the new Memory method in tests/test_library_masking.py: a read masks "
        "unless asked to reveal")
    for name in READS:
        reveal = inspect.signature(getattr(Memory, name)).parameters["reveal"]
        assert reveal.default is False, name


@pytest.mark.timeout(60)
def test_every_library_read_masks_by_default(home: Path) -> None:
    with open_memory(home) as mem:
        event_id = seed(mem)
        answers = {name: read(False) for name, read in every_read(mem, event_id).items()}
        for name, answer in answers.items():
            assert not leaks(answer), (name, answer)
        assert not leaks(mem.status()) and not (home / REVEAL_LOG).exists()
        assert "[secret: " in json.dumps(answers["read_core_file"])


@pytest.mark.timeout(60)
def test_a_reveal_shows_the_value_and_is_logged_without_it(home: Path) -> None:
    with open_memory(home) as mem:
        event_id = seed(mem)
        asks = {name: Reveal(name) for name in READS}
        shown = {name: read(asks[name]) for name, read in every_read(mem, event_id).items()}
    for name in READS - {"expand"}:  # node 1 is a raw fragment: it has no children
        assert leaks(shown[name]), name
        assert asks[name].revealed, name
    log = [json.loads(line) for line in (home / REVEAL_LOG).read_text().splitlines()]
    assert "tr0ub4dor" not in (home / REVEAL_LOG).read_text().lower()
    assert {entry["command"] for entry in log} == READS - {"expand"}
    assert (home / REVEAL_LOG).stat().st_mode & 0o777 == 0o600
    assert next(e for e in log if e["command"] == "read_object")["records"] == ["person:alice"]


@pytest.mark.timeout(60)
def test_a_reveal_that_shows_nothing_hidden_logs_nothing(home: Path) -> None:
    with open_memory(home) as mem:
        (event_id,) = mem.append_events([NewEvent("tea with Alice on Friday")])
        ask = Reveal("event")
        page = mem.read_event(event_id, reveal=ask)
        assert page["text"] == "tea with Alice on Friday"
        assert not ask.revealed
        assert mem.find("tea", reveal=True)["hits"]
    assert not (home / REVEAL_LOG).exists()


@pytest.mark.timeout(60)
def test_a_library_callers_plain_true_is_logged_under_the_reads_name(home: Path) -> None:
    with open_memory(home) as mem:
        seed(mem)
        assert leaks(mem.list_objects(reveal=True))
    (entry,) = [json.loads(line) for line in (home / REVEAL_LOG).read_text().splitlines()]
    assert entry["command"] == "list" and entry["records"] == ["person:alice"]
