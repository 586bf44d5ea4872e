"""Agent hosts' transcripts read as events: Claude Code's session JSONL and Codex CLI's rollout
JSONL, from a byte offset, a bounded step at a time.

Neither host publishes a schema for these files; what is read here follows their hook
documentation (which names the file) and the files as the hosts write them (Claude Code 2.1,
Codex CLI 0.128; docs/capture.md says where each was checked).

- `claude-code`: one JSON object a line. `user` and `assistant` lines carry `uuid`,
  `sessionId`, `timestamp` (ISO), `isSidechain`, `isMeta`, `cwd` and `message` {role, content:
  text or a list of blocks: text, thinking, tool_use, tool_result, image}. Other lines
  (summary, system, file-history-snapshot, progress, ...) are bookkeeping. Kept: the person's
  text and the assistant's text blocks of the main conversation. Left out: every tool call and
  tool result (memvault's own MCP tools included: the memory's output never comes back as its
  evidence), thinking, images, sub-agent lines (isSidechain), lines Claude Code adds itself
  (isMeta, the compaction summary, API-error and synthetic replies), slash commands, bash-mode
  input and output and interruption markers, and `<system-reminder>` blocks inside a text.
  Key: `claude-code:<sessionId>:<uuid>`.
- `codex`: {timestamp, type, payload} lines: `session_meta` first (payload.id is the thread
  id), then `response_item` (what the model sees: messages with injected context, function
  calls and their output, reasoning), `event_msg` (user_message, agent_message, task_started,
  token_count, ...), `turn_context`, `compacted`. Kept: event_msg user_message and
  agent_message, what the person typed and what the agent said, without the AGENTS.md and
  environment context Codex injects. Left out: everything else, every tool included. A
  rollout is only appended to (a resumed session goes on in the same file), so a message's
  line number names it: key `codex:<thread id>:<line number>`.

Invariants: the file is read from a byte offset and only forward; a line is taken only when
complete (it ends in a newline, or is valid JSON at the very end of a file); a line longer
than MAX_LINE_BYTES is skipped without being held, a bounded chunk at a time, and a read that
stops inside it says so (`Progress.skipping`) so the next goes on from there; a message of
more events than a read may take is taken part by part (`Progress.part`: how many of the
message's parts at the offset are taken); an unreadable line is counted and skipped, or with
`strict` (an import) stops the read naming its number; text is kept as written, made storable
(NUL and lone surrogates become U+FFFD).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from ..base.errors import InputError
from ..base.patterns import lazy_compile
from .events import NewEvent
from .fragments import find_lone_surrogate
from .messages import message_events, message_key, message_time

HOSTS = ("claude-code", "codex")
MAX_LINE_BYTES = 16 * 1024 * 1024  # a pasted image or a long tool output; never held past this
META_TEXT_MAX = 1_000  # a path carried in meta
_SKIP_CHUNK = 1 << 20  # an overlong line is skipped this much at a time, the bounds checked
# What the host adds inside the person's message: reminders, and the IDE integration's context
# (the file open in the editor, the selection, its diagnostics).
_HOST_CONTEXT = lazy_compile(r"<(system-reminder|ide_[a-z_]+)>.*?</\1>\s*", re.DOTALL)
# Slash commands and their local output, bash-mode input and output: the host's, not a turn.
_HOST_LINE = lazy_compile(r"\s*<(?:command-(?:name|message|args)|local-command-[a-z]+|"
                          r"bash-(?:input|stdout|stderr))>")
_INTERRUPTED = lazy_compile(r"\[Request interrupted by user[^\]]*\]")
_CODEX_TOOL_ITEMS = {"function_call", "function_call_output", "custom_tool_call",
                     "custom_tool_call_output", "local_shell_call", "web_search_call",
                     "tool_search_call", "tool_search_output", "image_generation_call"}
_UUID_TAIL = lazy_compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass
class Progress:
    """How far a transcript has been read: the byte offset and line count after the last
    handled line, and what a later line's key and meta need from earlier lines (Codex: the
    thread id of `session_meta`, the turn and working directory in force).

    `part`: the line at `offset` is a message of several events of which the first `part` are
    taken (a read stopped inside it at its event bound). `skipping`: `offset` is inside a line
    past MAX_LINE_BYTES, being skipped (its line not counted yet)."""

    offset: int = 0
    line: int = 0
    session: str | None = None
    turn: str | None = None
    cwd: str | None = None
    part: int = 0
    skipping: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Progress:
        """The progress `to_dict` saved; the start for anything else (an older record lacks
        `part` and `skipping`: none)."""
        if not isinstance(data, dict):
            return cls()
        known = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        try:
            progress = cls(**known)
        except TypeError:
            return cls()
        counts = (progress.offset, progress.line, progress.part)
        ok = (all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts)
              and isinstance(progress.skipping, bool)
              and not (progress.skipping and progress.part)
              and all(v is None or isinstance(v, str)
                      for v in (progress.session, progress.turn, progress.cwd)))
        return progress if ok else cls()

    def position(self) -> tuple[int, int]:
        """Where the read stands, to compare two: the offset, then the parts taken there."""
        return self.offset, self.part


@dataclass
class Bounds:
    """How much one read may do: bytes (every byte read, skipped ones included), events, a
    deadline on `clock` (None: no limit). A read handles at least one line (or skips one
    chunk of an overlong line), so a backlog always moves; and the deadline does not end it
    before it has taken an event or handled `sure_steps` lines and chunks, so a read that
    starts late (a loaded machine) still moves the backlog by a message."""

    max_bytes: int | None = None
    max_events: int | None = None
    deadline: float | None = None
    clock: Callable[[], float] = time.monotonic
    sure_steps: int = 1

    def reached(self, read_bytes: int, events: int, steps: int) -> bool:
        """Whether a read that has read `read_bytes`, taken `events` and handled `steps` lines
        and skipped chunks stops now."""
        return ((self.max_bytes is not None and read_bytes >= self.max_bytes)
                or (self.max_events is not None and events >= self.max_events)
                or ((events > 0 or steps >= self.sure_steps) and self.past_deadline()))

    def past_deadline(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline

    def room(self, events: int) -> int | None:
        """How many more events a read that has taken `events` may take (None: any); at
        least one for a read that has taken none."""
        if self.max_events is None:
            return None
        return max(self.max_events - events, 0 if events else 1)


@dataclass
class TranscriptPart:
    """What one read found: the events (each keyed), where the next read starts, whether the
    file was read to its end, and what was left out (counts only, never text)."""

    progress: Progress
    events: list[NewEvent] = field(default_factory=list)
    finished: bool = False
    messages: int = 0  # messages kept (a long one is several events)
    left_out: int = 0  # tool calls and results, thinking, the host's own lines
    empty: int = 0  # no text left (an image alone, an empty reply)
    unreadable: int = 0  # not a JSON object, or torn at the end of a finished file
    too_long: int = 0  # past MAX_LINE_BYTES, skipped unread


# One host's reading of a parsed line: the events of its message (none for other lines).
LineHandler = Callable[[dict[str, Any], Progress, str | None, TranscriptPart], list[NewEvent]]


def read_transcript(host: str, stream: IO[bytes], progress: Progress, bounds: Bounds | None = None,
                    *, session: str | None = None, final: bool = False,
                    strict: bool = False) -> TranscriptPart:
    """Read `stream` from `progress.offset` (where it must already be positioned) until its
    end or `bounds`. `session` names the session when the file does not (a Claude Code line
    without sessionId, a rollout without session_meta). `final`: the host is done writing, so
    a last line without a newline is taken as it is. `strict`: an unreadable line raises
    InputError naming its number instead of being skipped."""
    if host not in HOSTS:
        raise InputError(f"unknown host {host!r} (known: {', '.join(HOSTS)})")
    bounds = bounds or Bounds()
    part = TranscriptPart(replace(progress))
    here = part.progress
    handle = _claude_line if host == "claude-code" else _codex_line
    read = steps = 0
    while True:
        if here.skipping:
            size = _skip_chunk(stream, part, final)
            if size is None:
                break  # the file ends inside the overlong line: the host is still writing it
        else:
            raw = stream.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            size = len(raw)
            if size > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                here.offset += size  # held no further: the rest is skipped a chunk at a time
                here.skipping = True
            elif not raw.endswith(b"\n") and not final and _parse(raw) is None:
                break  # a line the host is still writing: left for the next read
            elif not _take_line(raw, handle, session, bounds, part, strict):
                return part  # stopped inside a message: its next part comes next
        read, steps = read + size, steps + 1
        if bounds.reached(read, len(part.events), steps):
            part.finished = _at_end(stream)
            return part
    part.finished = True
    return part


def _take_line(raw: bytes, handle: LineHandler, session: str | None, bounds: Bounds,
               part: TranscriptPart, strict: bool) -> bool:
    """Handle one whole line: the events of its message that `bounds` leave room for. False
    when the read must stop inside the message: the progress then stays at the line, with
    the number of its parts taken, and the next read takes the rest."""
    here = part.progress
    before = here.offset, here.line
    here.offset += len(raw)
    here.line += 1
    taken, here.part = here.part, 0  # parts of this line an earlier read took
    if not raw.strip():
        return True
    entry = _parse(raw)
    if entry is None:
        if strict and raw.endswith(b"\n"):
            raise InputError(f"line {here.line}: not a JSON object")
        part.unreadable += 1
        return True
    events = handle(entry, here, session, part)[taken:]
    room = bounds.room(len(part.events))
    if room is None or len(events) <= room:
        part.events += events
        return True
    part.events += events[:room]
    (here.offset, here.line), here.part = before, taken + room
    return False


def _skip_chunk(stream: IO[bytes], part: TranscriptPart, final: bool) -> int | None:
    """Skip on through an overlong line, one chunk: the bytes skipped; None at the end of a
    file the host is still writing (the line goes on later). The line is counted when it
    ends (a newline, or the end of a `final` file)."""
    here = part.progress
    chunk = stream.readline(_SKIP_CHUNK)
    if not chunk and not final:
        return None
    here.offset += len(chunk)
    if not chunk or chunk.endswith(b"\n"):
        here.skipping = False
        here.line += 1
        part.too_long += 1
    return len(chunk)


def session_from_path(path: str | Path) -> str:
    """A session id named by a transcript's file name: Claude Code's `<session>.jsonl`, Codex's
    `rollout-<time>-<thread id>.jsonl`."""
    stem = Path(path).stem
    found = _UUID_TAIL.search(stem)
    return found.group() if found else stem


def storable(text: str) -> str:
    """The text as stored: NUL and lone surrogates (which SQLite text cannot carry) as U+FFFD."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if find_lone_surrogate(text) is not None:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


# -- lines ---------------------------------------------------------------------------------------
def _at_end(stream: IO[bytes]) -> bool:
    at = stream.tell()
    ended = not stream.read(1)
    stream.seek(at)
    return ended


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(raw)
    except (ValueError, RecursionError):  # broken JSON or not UTF-8
        return None
    return entry if isinstance(entry, dict) else None


# -- Claude Code ---------------------------------------------------------------------------------
def _claude_line(entry: dict[str, Any], here: Progress, session: str | None,
                 part: TranscriptPart) -> list[NewEvent]:
    role = entry.get("type")
    if role not in ("user", "assistant"):
        return []  # bookkeeping: summary, system, file-history-snapshot, progress, ...
    message = entry.get("message")
    if (not isinstance(message, dict) or entry.get("isSidechain") or entry.get("isMeta")
            or entry.get("isCompactSummary") or entry.get("isApiErrorMessage")
            or message.get("model") == "<synthetic>"):
        part.left_out += 1
        return []
    texts, others = _claude_texts(message.get("content"))
    said = "\n\n".join(texts)
    text = _HOST_CONTEXT.sub("", said)
    if role == "user" and (_HOST_LINE.match(text) or _INTERRUPTED.fullmatch(text.strip())):
        part.left_out += 1
        return []
    if not text.strip():
        if others or text != said:  # only tool results, or only what the host added
            part.left_out += 1
        else:
            part.empty += 1
        return []
    uuid, sid = entry.get("uuid"), entry.get("sessionId") or session
    if not isinstance(uuid, str) or not uuid or not isinstance(sid, str) or not sid:
        part.unreadable += 1
        return []
    meta: dict[str, Any] = {"host": "claude-code", "session": sid, "message_id": uuid}
    if isinstance(entry.get("cwd"), str):
        meta["cwd"] = storable(entry["cwd"][:META_TEXT_MAX])
    part.messages += 1
    return message_events(storable(text), _when(entry.get("timestamp")), role, meta,
                          message_key("claude-code", sid, uuid))


def _claude_texts(content: Any) -> tuple[list[str], int]:
    """The text of a message's content, and how many of its blocks were something else."""
    if isinstance(content, str):
        return [content], 0
    if not isinstance(content, list):
        return [], 0
    texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
             and isinstance(b.get("text"), str)]
    return texts, len(content) - len(texts)


# -- Codex CLI -----------------------------------------------------------------------------------
def _codex_line(entry: dict[str, Any], here: Progress, session: str | None,
                part: TranscriptPart) -> list[NewEvent]:
    kind, payload = entry.get("type"), entry.get("payload")
    if not isinstance(payload, dict):
        return []
    if kind == "session_meta":
        if isinstance(payload.get("id"), str) and payload["id"]:
            here.session = payload["id"]
        _codex_cwd(here, payload)
        return []
    if kind == "turn_context":
        _codex_cwd(here, payload)
        if isinstance(payload.get("turn_id"), str):
            here.turn = payload["turn_id"]
        return []
    if kind == "response_item":
        if payload.get("type") in _CODEX_TOOL_ITEMS:
            part.left_out += 1
        return []
    if kind != "event_msg":
        return []
    what = payload.get("type")
    if what in ("task_started", "turn_started") and isinstance(payload.get("turn_id"), str):
        here.turn = payload["turn_id"]
        return []
    if what not in ("user_message", "agent_message"):
        return []
    # Older versions marked the context Codex injected as a user message of another kind.
    if what == "user_message" and payload.get("kind") not in (None, "plain"):
        part.left_out += 1
        return []
    text = payload.get("message")
    if not isinstance(text, str) or not text.strip():
        part.empty += 1
        return []
    thread = here.session or session
    if not thread:
        part.unreadable += 1
        return []
    meta: dict[str, Any] = {"host": "codex", "session": thread, "line": here.line}
    if here.turn:
        meta["turn"] = here.turn
    if here.cwd:
        meta["cwd"] = here.cwd
    source = "user" if what == "user_message" else "assistant"
    part.messages += 1
    return message_events(storable(text), _when(entry.get("timestamp")), source, meta,
                          message_key("codex", thread, str(here.line)))


def _codex_cwd(here: Progress, payload: dict[str, Any]) -> None:
    if isinstance(payload.get("cwd"), str):
        here.cwd = storable(payload["cwd"][:META_TEXT_MAX])


def _when(value: Any) -> str | datetime | None:
    """The line's time if it is one (ISO text); None (stored at capture time) otherwise."""
    if not isinstance(value, str):
        return None
    when = message_time(value)
    try:
        datetime.fromisoformat(str(when))
    except ValueError:
        return None
    return when
