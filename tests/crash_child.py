"""The doomed side of the crash harness (tests/crash_harness.py): what a child process does
until the parent SIGKILLs it.

A child opens its own Memory on the shared home (never a connection inherited across fork),
with a ManualClock that starts one generation (GAP) after the previous child's, so every lease a
killed child left behind has expired. It then loops over a seeded mix of actions: append one
event, append several in one transaction, ingest JSONL lines, request a compact or organize job,
or run one worker tick (scheduler on: threshold, hourly and nightly jobs come by themselves).
The model is `HarnessModel`: valid compact/organize/deep proposals, plus a few injected garbage
replies (the batch fails) and invalid proposals (the batch gets a field-level correction).

After an append returns, the child writes one ack line per event id (`E <id> <n>`, n being the
text's number, see `event_text`) to the ack file with a single unbuffered O_APPEND write; after a
request returns, `J <job_id>`; when a tick reports a failed batch, `F <batch_id> <kind>`. A
SIGKILL can lose an ack, never record an unacknowledged id.

The Board is a 2-byte shared file map the parent reads after the kill: byte 0 the write
transaction state (seen through the connection's trace callback: BEGIN opens, COMMIT starts the
commit, the next statement or ROLLBACK closes), byte 1 the phase the child was in.
"""

from __future__ import annotations

import json
import mmap
import os
import random
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memvault import ManualClock, Memory, NewEvent
from memvault.base.tokens import estimate_tokens
from memvault.jobs.worker import TickResult, Worker
from memvault.models.base import Message, ModelReply, ToolSpec
from scripted_provider import call

T0 = datetime(2026, 10, 13, 12, 0, 0, tzinfo=timezone(timedelta(hours=8)))
GAP = timedelta(hours=2)  # clock distance between generations: > lease (360 s) + a child's run
STEP = timedelta(seconds=1)  # the clock advances this much per child action
MAX_STEPS = 3_000  # then the child idles until killed (keeps its clock inside its generation)
BOARD = "crash-board.bin"
ACKS = "crash-acks.log"
CHILD_ERROR = "crash-child-error.txt"

TXN_NONE, TXN_OPEN, TXN_COMMITTING = 0, 1, 2
PHASES = ("start", "open", "idle", "append", "append_many", "ingest", "request", "index_sync",
          "scheduler", "lease+claim", "prompt", "model", "commit")
PHASE = {name: code for code, name in enumerate(PHASES)}

EN = ("Topic{k} update: the team agreed to ship the parser on Friday. ",
      "We reviewed Topic{k} again and moved the deadline by one week. ",
      "Reminder: the dentist appointment is on Tuesday at 9:30.\n",
      "The build failed twice on the CI runner; retrying fixed it. ",
      "Notes on Topic{k}: keep the cache small, measure before tuning.\n\n",
      "Lunch was noodles again. The weather is fine. ")
ZH = ("浩宇说周五之前要把解析器发布。", "今天和团队讨论了Topic{k}的进度，决定下周再看。",
      "提醒：周二上午九点半去看牙医。\n", "浩宇对花生过敏，订餐时要注意。",
      "关于Topic{k}：先测量，再优化，缓存不要太大。\n\n", "午饭又是面条，天气不错。")


def generation_start(gen: int) -> datetime:
    return T0 + gen * GAP


# -- event texts: derived from (seed, n), so the parent knows every text a child may write ------

_HEADER = re.compile(r"\[crash (\d+)/(\d+)\] ")


def event_text(seed: int, n: int) -> str:
    """Text number n of a run: short English, multi-fragment English, 5,000 chars of Chinese,
    or (rarely) 16,000–32,000 mixed chars. Starts with a header that names (seed, n)."""
    rng = random.Random(f"memvault-crash:{seed}:{n}")
    header = f"[crash {seed}/{n}] "
    kind = rng.random()
    pool: tuple[str, ...]
    if kind < 0.55:
        size, pool = rng.randint(60, 400), EN
    elif kind < 0.75:
        size, pool = rng.randint(2_100, 6_000), EN
    elif kind < 0.95:
        size, pool = 5_000, ZH
    else:
        size, pool = rng.randint(16_000, 32_000), EN + ZH
    parts = [header]
    length = len(header)
    while length < size:
        piece = rng.choice(pool).format(k=rng.randint(0, 6))
        parts.append(piece)
        length += len(piece)
    return "".join(parts)[:size]


def text_number(text: str, seed: int) -> int | None:
    """The n of a harness text of this seed (None for any other text)."""
    match = _HEADER.match(text)
    if match is None or int(match.group(1)) != seed:
        return None
    return int(match.group(2))


# -- the board the parent reads after the kill --------------------------------------------------


class Board:
    """Two shared bytes: the write-transaction state and the phase (see the module docstring)."""

    map: mmap.mmap | bytearray

    def __init__(self, path: Path) -> None:
        if not path.exists():
            path.write_bytes(b"\0\0")
        with open(path, "r+b") as handle:
            self.map = mmap.mmap(handle.fileno(), 2)

    def reset(self) -> None:
        self.map[0] = TXN_NONE
        self.map[1] = PHASE["start"]

    def read(self) -> tuple[int, str]:
        return self.map[0], PHASES[self.map[1]]

    def set_phase(self, name: str) -> None:
        self.map[1] = PHASE[name]

    def trace(self, sql: str) -> None:
        """sqlite3 trace callback: follow BEGIN / COMMIT / ROLLBACK."""
        head = sql[:12].lstrip().upper()
        if head.startswith("BEGIN"):
            self.map[0] = TXN_OPEN
        elif head.startswith("COMMIT"):
            self.map[0] = TXN_COMMITTING
        elif head.startswith("ROLLBACK") or self.map[0] == TXN_COMMITTING:
            self.map[0] = TXN_NONE


class NullBoard(Board):
    """A board for runs nobody watches (the final resume in the parent)."""

    def __init__(self) -> None:
        self.map = bytearray(2)


# -- the model: valid proposals, with a few injected failures -------------------------------------


class HarnessModel:
    """A provider answering every mode with a valid proposal. With probability `inject` a first
    answer is garbage (the batch fails and is retried), with the same probability it is an
    invalid proposal (the engine answers with a field error and the next answer is valid)."""

    name = "scripted"
    model = "crash-harness"
    max_output_tokens = 131_072
    context_tokens = 1_000_000

    def __init__(self, rng: random.Random, board: Board, inject: float = 0.0) -> None:
        self.rng = rng
        self.board = board
        self.inject = inject

    def complete(self, messages: list[Message], tools: list[ToolSpec],
                 max_output_tokens: int, deadline_s: float | None = None) -> ModelReply:
        self.board.set_phase("model")
        data = json.loads(str(messages[1]["content"]))
        tool = {"compact": "commit_compaction", "organize": "commit_organize",
                "deep": "commit_review"}[data["mode"]]
        retry = messages[-1]["role"] == "tool"  # a field error came back: answer properly
        roll = 1.0 if retry else self.rng.random()
        if self.rng.random() < 0.3:
            time.sleep(self.rng.uniform(0, 0.01))  # a model takes time: let kills land here
        if roll < self.inject:
            reply = call(tool, "{not json")
        elif roll < 2 * self.inject:
            reply = call(tool, self._invalid(data))
        else:
            reply = call(tool, self._valid(data))
        self.board.set_phase("commit")
        return reply

    def _valid(self, data: dict[str, Any]) -> dict[str, Any]:
        if data["mode"] == "compact":
            return compact_args(data)
        if data["mode"] == "organize":
            return organize_args(data, self.rng)
        return review_args(data, self.rng)

    @staticmethod
    def _invalid(data: dict[str, Any]) -> dict[str, Any]:
        if data["mode"] == "compact":
            args = compact_args(data)
            args["summary"] = "x" * (sum(n["chars"] for n in data["nodes"]) + 1)
            return args
        if data["mode"] == "organize":
            return {"events": [{"event_id": data["event"]["id"] + 10**6, "outcome": "linked"}]}
        return {"reviewed": []}


def compact_args(data: dict[str, Any]) -> dict[str, Any]:
    """Exactly the batch's nodes, and a summary shorter in chars and in estimated tokens: half
    as long (at most 600 chars), or for one node (an explicit job re-folds another job's lone
    head) just one token shorter, so heads do not shrink towards nothing."""
    nodes = data["nodes"]
    chars = sum(n["chars"] for n in nodes)
    tokens = sum(estimate_tokens(n["text"]) for n in nodes)
    size = max(1, min(600, chars // 2 if len(nodes) > 1 else chars - 1, 4 * (tokens - 1)))
    summary = (f"sum {nodes[0]['id']}-{nodes[-1]['id']}: " + "z" * size)[:size]
    return {"node_ids": [n["id"] for n in nodes], "summary": summary}


def pick_target(text: str, event_id: int) -> tuple[str, str, list[str]]:
    """The object a page is about: 浩宇, a topic, or (no name in the page) the event itself."""
    if "浩宇" in text:
        return "person:qhy", "浩宇", ["qhy"]
    match = re.search(r"Topic(\d)", text)
    if match:
        return f"knowledge:topic-{match.group(1)}", f"Topic{match.group(1)}", []
    return f"knowledge:event-{event_id}", f"Event {event_id} notes", []


def organize_args(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Every fourth event (never one already cited) is archive_only; the others cite the page
    for the object it names (created when new, sometimes rewritten when read), link it to
    project:daily, and now and then write USER.md. Non-last pages continue with progress."""
    event_id, page = data["event"]["id"], data["page"]
    last = page["last"]
    disposition: dict[str, Any] = {"event_id": event_id}
    if event_id % 4 == 0 and not data["targets"]:
        if last:
            disposition.update(outcome="archive_only", reason="small talk, nothing durable")
        else:
            disposition.update(outcome="continue", progress=f"read to {page['end']}")
        return {"events": [disposition]}
    object_id, name, aliases = pick_target(page["text"], event_id)
    related = {o["id"] for o in data["related"]}
    objects = []
    if object_id not in related or rng.random() < 0.3:
        objects = [{"id": object_id, "name": name, "aliases": aliases,
                    "summary": f"{name}, as the events tell it",
                    "body": f"{name}: last seen in event {event_id} near char {page['start']}.",
                    "cues": [f"what about {name}"]}]
    args: dict[str, Any] = {
        "objects": objects,
        "relations": [{"src": object_id, "label": "member_of", "dst": "project:daily"}],
        "evidence": [{"object_id": object_id, "event_id": event_id, "start": page["start"],
                      "end": min(page["end"], page["start"] + 10)}],
    }
    if last and event_id % 10 == 1:
        args["core_files"] = [{"name": "USER.md", "content": f"# User\nlast event {event_id}\n"}]
    if last:
        disposition["outcome"] = "linked"
    else:
        disposition.update(outcome="continue", progress=f"cited {object_id}; read to {page['end']}")
    args["events"] = [disposition]
    return args


def review_args(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Confirm every reviewed id; sometimes rewrite a knowledge object and relate two."""
    review = data["review"]
    args: dict[str, Any] = {"reviewed": [o["id"] for o in review]}
    knowledge = [o for o in review if o["type"] == "knowledge"]
    if knowledge and rng.random() < 0.5:
        o = knowledge[0]
        args["objects"] = [{"id": o["id"], "name": o["name"], "aliases": o["aliases"],
                            "summary": o["summary"], "body": f"{o['name']}: reviewed.",
                            "cues": o["cues"]}]
    if len(knowledge) >= 2:
        args["relations"] = [{"src": knowledge[0]["id"], "label": "related_to",
                              "dst": knowledge[1]["id"]}]
    return args


FAILURE_KINDS = (  # (kind, pattern of the batch error); anything else is unexpected
    ("injected", re.compile(r"arguments are not JSON")),
)


def failure_kind(error: str) -> str:
    """Classify a failed batch's error: injected, a known engine/jobs/modes/compact.py bug, or
    unexpected (with the error's start)."""
    for kind, pattern in FAILURE_KINDS:
        if pattern.search(error):
            return kind
    return "unexpected:" + "_".join(error.split())[:300]


# -- the child's life ---------------------------------------------------------------------------


class Child:
    """One generation's worker and agent in one process, on its own connection."""

    def __init__(self, home: Path, seed: int, gen: int, inject: float, board: Board) -> None:
        self.seed, self.gen, self.board = seed, gen, board
        self.rng = random.Random(f"memvault-crash-child:{seed}:{gen}")
        self.clock = ManualClock(generation_start(gen))
        self.mem = Memory.open(home, clock=self.clock)
        self.mem.conn.set_trace_callback(board.trace)
        self.acks = os.open(home / ACKS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        model = HarnessModel(self.rng, board, inject)
        self.worker = Worker(self.mem, model, holder=f"crash-{gen}", scheduler=True,
                             on_tick=self._on_tick)
        self.mem.sync_recall_index = self._labelled(  # type: ignore[method-assign]
            "index_sync", self.mem.sync_recall_index, "scheduler")
        assert self.worker.scheduler is not None
        self.worker.scheduler.check = self._labelled(  # type: ignore[method-assign]
            "scheduler", self.worker.scheduler.check, "lease+claim")
        for mode in self.worker.modes.values():  # building a batch's prompt reads the store
            mode.prompt = self._labelled(  # type: ignore[method-assign]
                "prompt", mode.prompt, "prompt")
        self.next_n = gen * 100_000

    def _labelled(self, phase: str, fn: Callable[..., Any], after: str) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            self.board.set_phase(phase)
            result = fn(*args, **kwargs)
            self.board.set_phase(after)
            return result
        return run

    def _texts(self, count: int) -> list[tuple[int, str]]:
        numbered = [(n, event_text(self.seed, n)) for n in range(self.next_n, self.next_n + count)]
        self.next_n += count
        return numbered

    def _ack(self, lines: list[str]) -> None:
        os.write(self.acks, "".join(f"{line}\n" for line in lines).encode())

    def _on_tick(self, result: TickResult) -> None:
        if result.action in ("failed", "terminal"):
            self._ack([f"F {result.batch_id} {failure_kind(result.error or '')}"])

    def _ack_events(self, ids: list[int], numbered: list[tuple[int, str]]) -> None:
        self._ack([f"E {i} {n}" for i, (n, _) in zip(ids, numbered, strict=True)])

    def live(self) -> None:
        """Act until MAX_STEPS, then idle until the kill."""
        for _ in range(MAX_STEPS):
            self.clock.advance(seconds=STEP.total_seconds())
            self.act(self.rng.random())
            self.board.set_phase("idle")
        while True:
            time.sleep(1)

    def act(self, roll: float) -> None:
        if roll < 0.20:
            self.board.set_phase("append")
            numbered = self._texts(1)
            source = self.rng.choice(("user", "assistant", "tool"))
            ids = [self.mem.append_event(numbered[0][1], source=source)]
            self._ack_events(ids, numbered)
        elif roll < 0.25:
            self.board.set_phase("append_many")
            numbered = self._texts(self.rng.randint(2, 4))
            ids = self.mem.append_events([NewEvent(t, kind="note") for _, t in numbered])
            self._ack_events(ids, numbered)
        elif roll < 0.27:
            self.board.set_phase("ingest")
            numbered = self._texts(self.rng.randint(2, 3))
            lines = [json.dumps({"text": t, "source": "import"}) for _, t in numbered]
            self._ack_events(self.mem.ingest(lines).new, numbered)
        elif roll < 0.29:
            self.request()
        else:
            self.worker.tick()

    def request(self) -> None:
        """An explicit compact or organize request, unless one of that mode is still open."""
        self.board.set_phase("request")
        mode = self.rng.choice(("compact", "organize", "organize", "deep"))
        open_jobs = self.mem.conn.execute(
            "SELECT COUNT(*) FROM jobs WHERE mode = ? AND origin = 'explicit'"
            " AND state IN ('queued', 'running')", (mode,)).fetchone()[0]
        if open_jobs:
            return
        if mode == "compact":
            receipt = self.mem.compact()
        else:
            receipt = self.mem.organize(mode, retry_blocked=self.rng.random() < 0.5)
        self._ack([f"J {receipt['job_id']}"])


def child_main(home: Path, seed: int, gen: int, inject: float) -> None:
    """A child's whole life (it never returns normally: the parent kills it)."""
    board = Board(home / BOARD)
    board.set_phase("open")
    Child(home, seed, gen, inject, board).live()
