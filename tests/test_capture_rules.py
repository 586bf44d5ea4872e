"""Rules of a capture call (memvault.home.capture) that the suite could break unseen: a
replaced transcript (another inode) is read from its start even when its first bytes and the
bytes before the old offset are the same; one hook call stores at most 200 events; it starts
no new line once half a second has passed since the hook began; a saved offset never moves
back when a slower call ends after a faster one.

What breaks these tests (the mutation made in engine/home/capture.py, the tests run and seen
to fail, the code restored):
- in `_progress`, `saved.get("ino") != st.st_ino or` deleted ->
  test_a_replaced_transcript_with_the_same_edges_is_read_from_its_start.
- `STEP_EVENTS = 200` changed to 201, or `Bounds(STEP_BYTES, STEP_EVENTS, ...)` in `run_hook`
  to `Bounds(STEP_BYTES, None, ...)` -> test_a_hook_call_stores_at_most_200_events.
- `STEP_SECONDS = 0.5` changed to 0.6, or the deadline in `run_hook` to None ->
  test_a_hook_call_starts_no_new_line_half_a_second_after_it_began.
- in `_save_progress`, the `return` that keeps a position further on replaced by `pass` ->
  test_a_slower_call_never_moves_the_saved_offset_back.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from memvault import Memory
from memvault.home import capture
from memvault.home.capture import Captured, run_hook

SESSION = "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b"


def turn_line(uuid: str, text: str) -> bytes:
    return json.dumps({"type": "user", "uuid": uuid, "sessionId": SESSION,
                       "timestamp": "2026-05-04T09:30:00.000Z",
                       "message": {"role": "user", "content": text}}).encode() + b"\n"


def write_turns(path: Path, texts: list[str]) -> None:
    path.write_bytes(b"".join(turn_line(f"t-{n}", text) for n, text in enumerate(texts)))


def hook(home: Path, path: Path, started: float | None = None,
         clock: Any = None) -> Captured | None:
    began = time.monotonic() if started is None else started
    raw = json.dumps({"session_id": SESSION, "transcript_path": str(path)})
    return run_hook(home, "claude-code", raw, began, clock=clock or (lambda: began))


def texts(home: Path) -> list[str]:
    with Memory.open(home, readonly=True) as mem:
        return [row[0] for row in mem.conn.execute("SELECT text FROM events ORDER BY id")]


def saved_offset(home: Path) -> int:
    with Memory.open(home, readonly=True) as mem:
        (value,) = [row[0] for row in mem.conn.execute(
            "SELECT value FROM state WHERE key LIKE 'capture:%'")]
    return int(json.loads(value)["offset"])


def test_a_replaced_transcript_with_the_same_edges_is_read_from_its_start(
        home: Path, tmp_path: Path) -> None:
    edge = "e" * (2 * capture.MARK_BYTES)  # longer than the bytes the mark looks at
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(turn_line("t-0", edge) + turn_line("t-1", "the old middle")
                     + turn_line("t-2", edge))
    hook(home, path)
    replacement = tmp_path / "new.jsonl"  # its first and last lines as before, as long
    replacement.write_bytes(turn_line("t-0", edge) + turn_line("n-1", "the new middle")
                            + turn_line("t-2", edge) + turn_line("n-3", "a turn after"))
    os.replace(replacement, path)  # another inode under the old name
    hook(home, path)
    assert texts(home)[3:] == ["the new middle", "a turn after"]


def test_a_hook_call_stores_at_most_200_events(home: Path, tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    write_turns(path, [f"turn {n}" for n in range(201)])
    first = hook(home, path)
    assert first is not None and first.stored == 200 and first.more
    rest = hook(home, path)
    assert rest is not None and rest.stored == 1 and not rest.more


@pytest.mark.parametrize(("elapsed", "stored"), [(0.499, 6), (0.5, 1)])
def test_a_hook_call_starts_no_new_line_half_a_second_after_it_began(
        home: Path, tmp_path: Path, elapsed: float, stored: int) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    write_turns(path, [f"turn {n}" for n in range(6)])
    report = hook(home, path, started=100.0, clock=lambda: 100.0 + elapsed)
    # at the deadline: the first message only (a call always stores one, however late)
    assert report is not None and report.stored == stored


def test_a_slower_call_never_moves_the_saved_offset_back(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    write_turns(path, [f"turn {n}" for n in range(201)])
    store = capture._store
    faster: list[int] = []

    def store_after_a_faster_call(*args: Any, **kwargs: Any) -> None:
        if not faster:  # while the slow call stores its 200, another reads the whole file
            faster.append(0)
            monkeypatch.setattr(capture, "STEP_EVENTS", 1_000)
            hook(home, path)
            faster[0] = saved_offset(home)
        store(*args, **kwargs)

    monkeypatch.setattr(capture, "_store", store_after_a_faster_call)
    slow = hook(home, path)
    assert slow is not None and slow.more  # it stopped at 200
    assert faster[0] == path.stat().st_size and saved_offset(home) == faster[0]
