"""Capture: an agent host's conversation stored as it happens, from the transcript the host
keeps, by the host's own hooks (`memvault hook claude-code`, `memvault hook codex`).

- Each call reads the transcript forward from where the last one stopped and stores the new
  messages (memvault.timeline.transcripts says what is kept) through `Memory.append`: onto the
  hot timeline with their own times, so compact and organize treat them as appended turns.
- A call is bounded (STEP_EVENTS events, the parts of one long message included; STEP_BYTES
  bytes, skipped ones included; no new line STEP_SECONDS after the hook started once it has
  stored a message or handled STEP_SURE_LINES lines; SQLite's busy wait, the open's included,
  to what is left of that): a backlog goes on at the next call.
- Where a transcript was read to is kept per file and space in the `state` table
  (`capture:<host>:<space>:` and the sha256 of its path; the shared space's without the
  space, as before spaces had their own: offset, line, the parts of a long message taken, an
  overlong line being skipped, inode, a mark of the bytes read, and what later lines need).
  It is a shortcut, not the guarantee: every message carries its key
  (memvault.timeline.keys), so a call that dies before saving its offset, two calls at once,
  or a file read again from the start store nothing twice. A saved offset never moves back; a
  file that shrank, was replaced (another inode) or rewritten in place (its first bytes or
  the bytes before the offset changed) is read again from its start.
- A key already stored with the same text (the agent sent the turn with memory_append under
  that key, or it was imported) is skipped; with other text it is a conflict: the stored event
  stays as it is, the conflict is counted and logged, and the capture goes on.
- A hook never fails its host: `run_hook` catches every error and writes it to `capture.log`
  in the home (a JSON line: time, host, session, what went wrong, secrets redacted, never a
  turn's text), and to stderr only when the home cannot take it. Nothing goes to stdout.
  A hook's own command line that click refuses exits 0 the same way (memvault.cli.hook_guard).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, BinaryIO

from ..base.clock import iso
from ..base.config import append_private_line, make_private_dir
from ..base.errors import InputError
from ..base.spaces import SHARED
from ..store.connection import get_state, set_state, write
from ..timeline.events import NewEvent
from ..timeline.keys import KeyConflict, check_key, stored_keys
from ..timeline.messages import message_events, message_key
from ..timeline.transcripts import Bounds, Progress, read_transcript, session_from_path, storable
from .memory import Memory

STEP_EVENTS = 200  # events one call stores at most
STEP_BYTES = 4 * 1024 * 1024  # transcript bytes one call reads at most (and one line more)
STEP_SECONDS = 0.5  # a call starts no new line this long after the hook started, once it
# has stored a message or handled STEP_SURE_LINES lines (a late start on a loaded machine)
STEP_SURE_LINES = 1_000
MARK_BYTES = 4096  # first bytes and bytes before the offset compared, call to call
READ_BUFFER = 1 << 20  # reading a long line in 8 KiB pieces costs ten times as long
BUSY_MIN_MS = 150  # SQLite's wait for the write lock, at least (the worker's commits are short)
LOG_NAME = "capture.log"
LOG_MAX_BYTES = 1024 * 1024  # then it becomes capture.log.1 (one generation kept)
STATE_PREFIX = "capture:"
CODEX_HOME_ENV = "CODEX_HOME"


@dataclass
class Captured:
    """What one capture did (counts only, never text)."""

    host: str
    path: str
    session: str | None = None
    stored: int = 0  # new events
    already: int = 0  # keys already stored with the same text
    conflicts: int = 0  # keys stored with other text: left as they were
    left_out: int = 0  # tool calls and results, thinking, the host's own lines
    unreadable: int = 0  # lines that are not a JSON object, or too long
    refused: int = 0  # messages the store refused (a key, time or meta it cannot take)
    more: bool = False  # the file holds more than this call read: the next call goes on


class CaptureError(Exception):
    """Why a hook stored nothing (logged, never raised to the host)."""


# -- a transcript file ---------------------------------------------------------------------------
def capture_file(memory: Memory, host: str, path: str | Path, *, session: str | None = None,
                 bounds: Bounds | None = None) -> Captured:
    """Store the messages of `path` not read by an earlier call for this memory's space,
    within `bounds`."""
    path = Path(path).expanduser().absolute()
    report = Captured(host, str(path), session)
    state_key = _state_key(host, path, memory.spaces.writes)
    with _open_transcript(path) as stream:
        st = os.fstat(stream.fileno())
        saved = _saved(memory, state_key)
        progress = _progress(saved, st, stream)
        stale = saved if progress is None else None  # a record of what the file was before
        progress = progress or Progress()
        if st.st_size <= progress.offset:
            return report
        stream.seek(progress.offset)
        part = read_transcript(host, stream, progress, bounds,
                               session=session or session_from_path(path))
        mark = _mark(stream, part.progress.offset)
    report.session = part.progress.session or session or session_from_path(path)
    report.left_out, report.more = part.left_out, not part.finished
    report.unreadable = part.unreadable + part.too_long
    # Indexing for recall waits for the worker's poll when the step's time is up (recall
    # scans what is not indexed yet): 200 long parts take half a second to index.
    _store(memory, part.events, report, index=bounds is None or not bounds.past_deadline())
    _save_progress(memory, state_key, {**part.progress.to_dict(), "ino": st.st_ino,
                                       "mark": mark}, stale)
    return report


def _open_transcript(path: Path) -> BinaryIO:
    """The transcript, opened for reading; CaptureError unless it is a regular file (opened
    without blocking and then checked: a FIFO would block the host's turn). A symlink in its
    place is not followed: a host writes its transcript itself, so a link there was put by
    someone else, and could point the memory at any file the person can read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
                     | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CaptureError(f"the transcript {path} is a symlink; not followed") from None
        raise CaptureError(f"cannot read the transcript {path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CaptureError(f"the transcript {path} is not a regular file")
        return os.fdopen(fd, "rb", buffering=READ_BUFFER)
    except BaseException:
        os.close(fd)
        raise


def _state_key(host: str, path: Path, space: str) -> str:
    """Where the progress of `path` captured into `space` is kept: each space its own, since
    hooks bound to two spaces (a global one and a project's) both read the file. The shared
    space keeps the key of the versions before (no space in it), so they read on."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:32]
    return f"{STATE_PREFIX}{host}:{digest}" if space == SHARED else \
        f"{STATE_PREFIX}{host}:{space}:{digest}"


def _progress(saved: dict[str, Any] | None, st: os.stat_result, stream: IO[bytes]
              ) -> Progress | None:
    """Where the last call stopped; the start for a new file; None when the record is of what
    the file was before: another inode, shrunk, or rewritten in place (its bytes before the
    offset, or its first bytes, are not the ones read then). A record saved before marks were
    kept is trusted."""
    if saved is None:
        return Progress()
    progress = Progress.from_dict(saved)
    if saved.get("ino") != st.st_ino or progress.offset > st.st_size:
        return None
    if "mark" in saved and saved["mark"] != _mark(stream, progress.offset):
        return None
    return progress


def _mark(stream: IO[bytes], offset: int) -> str:
    """A digest of the file's first MARK_BYTES and of the MARK_BYTES before `offset`: what
    the next call checks to tell a file appended to from one rewritten in place."""
    digest = hashlib.sha256()
    for start in (0, max(0, offset - MARK_BYTES)):
        stream.seek(start)
        digest.update(stream.read(min(MARK_BYTES, offset - start)))
    return digest.hexdigest()[:32]


def _saved(memory: Memory, state_key: str) -> dict[str, Any] | None:
    raw = get_state(memory.conn, state_key)
    try:
        saved = json.loads(raw) if raw else None
    except ValueError:
        return None
    return saved if isinstance(saved, dict) else None


def _save_progress(memory: Memory, state_key: str, record: dict[str, Any],
                   stale: dict[str, Any] | None) -> None:
    """Record how far the file was read, unless another call got further in the same file
    meanwhile (a saved position never moves back; only the `stale` record this call found
    describing the file as it was before is replaced by a position behind it)."""
    with write(memory.conn):
        before = _saved(memory, state_key)
        if (before is not None and before != stale and before.get("ino") == record["ino"]
                and Progress.from_dict(before).position()
                > Progress.from_dict(record).position()):
            return
        set_state(memory.conn, state_key, json.dumps(record, ensure_ascii=False))


def _store(memory: Memory, events: Sequence[NewEvent], report: Captured,
           index: bool = True) -> None:
    """Append the events whose key is new, in one transaction; count repeats and conflicts.
    One retry when another writer stored one of the keys between the look-up and the append.
    When the store refuses the batch (an event with a key, time or meta it cannot take), the
    events go one at a time and the refused ones are counted: one bad line never holds up the
    rest of a transcript, call after call."""
    for attempt in (1, 2):
        fresh = _fresh(memory, events, report if attempt == 1 else None)
        if not fresh:
            return
        try:
            appended = memory.append(fresh, index)
        except KeyConflict:
            if attempt == 2:
                raise
            continue
        except InputError:
            for event in fresh:
                try:
                    one = memory.append([event], index)
                except InputError:  # a conflict that raced in is left as stored, too
                    report.refused += 1
                    continue
                report.stored += len(one.new)
                report.already += len(one.skipped)
            return
        report.stored += len(appended.new)
        report.already += len(appended.skipped)
        return


def _fresh(memory: Memory, events: Sequence[NewEvent], report: Captured | None
           ) -> list[NewEvent]:
    """The events whose key is not stored yet (a key the store would refuse is counted)."""
    keyed: list[tuple[NewEvent, str]] = []
    for event in events:
        try:
            keyed.append((event, check_key(event.key) or ""))
        except InputError:
            if report is not None:
                report.refused += 1
    stored = stored_keys(memory.conn, [key for _, key in keyed], memory.spaces.writes)
    fresh = []
    for event, key in keyed:
        if key not in stored:
            fresh.append(event)
        elif report is not None:
            if stored[key][1] == event.text:
                report.already += 1
            else:
                report.conflicts += 1
    return fresh


# -- Claude Code ---------------------------------------------------------------------------------
def claude_code_hook(memory: Memory, payload: dict[str, Any], bounds: Bounds) -> Captured:
    """A Claude Code hook (Stop, PreCompact, SessionEnd, …): its transcript_path, read on."""
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path:
        raise CaptureError("the hook input has no transcript_path")
    session = payload.get("session_id")
    return capture_file(memory, "claude-code", path, bounds=bounds,
                        session=session if isinstance(session, str) and session else None)


# -- Codex CLI -----------------------------------------------------------------------------------
def codex_hook(memory: Memory, payload: dict[str, Any], bounds: Bounds,
               codex_home: Path | None = None) -> Captured:
    """Codex's legacy `notify` JSON ({"type": "agent-turn-complete", "thread-id", "turn-id",
    "input-messages", "last-assistant-message", …}) or its Stop hook input (session_id,
    turn_id, transcript_path, last_assistant_message): the session's rollout file, read on;
    without one (an ephemeral session), the turn's messages the payload carries."""
    notify = "hook_event_name" not in payload
    if notify and payload.get("type") != "agent-turn-complete":
        return Captured("codex", "", None)  # another notification: nothing to capture
    thread = payload.get("thread-id" if notify else "session_id")
    thread = thread if isinstance(thread, str) and thread else None
    path = None if notify else payload.get("transcript_path")
    if not (isinstance(path, str) and path and Path(path).expanduser().is_file()):
        found = find_rollout(codex_home or default_codex_home(), thread) if thread else None
        path = str(found) if found else None
    if path:
        return capture_file(memory, "codex", path, session=thread, bounds=bounds)
    if thread is None:
        raise CaptureError("the payload names no thread (no thread-id or session_id)")
    return _codex_payload(memory, payload, thread, notify)


def default_codex_home() -> Path:
    return Path(os.environ.get(CODEX_HOME_ENV) or "~/.codex").expanduser()


def find_rollout(codex_home: Path, thread: str) -> Path | None:
    """The rollout file of `thread` under `codex_home`: sessions/YYYY/MM/DD/rollout-<time>-
    <thread>.jsonl, or archived_sessions/. A UUIDv7 thread id carries its creation time, so
    the days around it are looked at first; then every day."""
    if "/" in thread or "\\" in thread or thread.startswith("."):
        return None
    name = f"rollout-*-{thread}.jsonl"
    sessions = codex_home / "sessions"
    for day in _thread_days(thread):
        found = sorted((sessions / day).glob(name))
        if found:
            return found[0]
    found = sorted(sessions.glob(f"*/*/*/{name}")) or sorted(
        (codex_home / "archived_sessions").glob(name))
    return found[0] if found else None


def _thread_days(thread: str) -> list[str]:
    """YYYY/MM/DD folders of the day a UUIDv7 was made, local and UTC, and the days beside."""
    digits = thread.replace("-", "")
    if len(digits) != 32 or digits[12] != "7":
        return []
    try:
        made = datetime.fromtimestamp(int(digits[:12], 16) / 1000, UTC)
    except (ValueError, OverflowError, OSError):
        return []
    days: list[str] = []
    for moment in (made, made.astimezone()):
        for shift in (0, -86_400, 86_400):
            day = datetime.fromtimestamp(moment.timestamp() + shift, moment.tzinfo)
            label = day.strftime("%Y/%m/%d")
            if label not in days:
                days.append(label)
    return days


def _codex_payload(memory: Memory, payload: dict[str, Any], thread: str,
                   notify: bool) -> Captured:
    """The turn as the payload carries it (no rollout file): the person's input messages
    (notify only) and the last assistant message, keyed codex:<thread>:<turn>:in<N> / :out."""
    report = Captured("codex", "", thread)
    turn = payload.get("turn-id" if notify else "turn_id")
    if not isinstance(turn, str) or not turn:
        raise CaptureError("the payload names no turn (no turn-id or turn_id)")
    meta = {"host": "codex", "session": thread, "turn": turn, "from": "notify" if notify
            else "hook"}
    said: list[tuple[str, Any]] = []
    inputs = payload.get("input-messages") if notify else None
    if isinstance(inputs, list):
        said += [(f"in{n}", text) for n, text in enumerate(inputs, start=1)]
    said.append(("out", payload.get("last-assistant-message" if notify
                                    else "last_assistant_message")))
    events: list[NewEvent] = []
    for label, text in said:
        if isinstance(text, str) and text.strip():
            source = "assistant" if label == "out" else "user"
            events += message_events(storable(text), None, source, meta,
                                     message_key("codex", thread, f"{turn}:{label}"))
    _store(memory, events, report)
    return report


# -- the hook process ----------------------------------------------------------------------------
def run_hook(home: Path, host: str, raw: bytes | str | None, started: float,
             codex_home: Path | None = None, space: str | None = None,
             clock: Callable[[], float] = time.monotonic) -> Captured | None:
    """Everything a hook does, never raising: parse the host's JSON, open the home (bound to
    `space`: what it captures is written there), capture within the bounds counted from
    `started` (`clock()` when the hook began; time.monotonic), log what went wrong. Returns
    what was captured (None when nothing could be)."""
    session: Any = None
    try:
        payload = _payload(raw)
        session = payload.get("session_id") or payload.get("thread-id")
        deadline = started + STEP_SECONDS
        bounds = Bounds(STEP_BYTES, STEP_EVENTS, deadline, clock, STEP_SURE_LINES)
        # Every statement of the open (migrations included) waits for a lock only what is
        # left of the step, not the 30 s of other commands.
        with Memory.open(home, space=space,
                         busy_timeout_ms=_lock_wait_ms(deadline, clock)) as memory:
            memory.conn.execute(f"PRAGMA busy_timeout = {_lock_wait_ms(deadline, clock)}")
            if host == "claude-code":
                report = claude_code_hook(memory, payload, bounds)
            else:
                report = codex_hook(memory, payload, bounds, codex_home)
            if report.conflicts or report.unreadable or report.refused:
                _log(home, host, session, "skipped",
                     f"{report.conflicts} key(s) already stored with other text (left as "
                     f"stored), {report.unreadable} unreadable or overlong line(s), "
                     f"{report.refused} message(s) the store refused, in {report.path}")
            return report
    except Exception as exc:  # the host's turn must never fail because of the memory
        _log(home, host, session, "error", f"{type(exc).__name__}: {exc}")
        return None


def _lock_wait_ms(deadline: float, clock: Callable[[], float]) -> int:
    """SQLite's wait for a lock: what is left until `deadline`, at least BUSY_MIN_MS."""
    return max(BUSY_MIN_MS, int((deadline - clock()) * 1000))


def log_hook_failure(home: Path | None, host: str, detail: str) -> None:
    """Log why a hook command could not run at all (its command line): one line in the home's
    capture.log, or on stderr when there is no home to take it."""
    if home is None:
        _stderr(host, _redacted(detail))
    else:
        _log(home, host, None, "error", detail)


def _payload(raw: bytes | str | None) -> dict[str, Any]:
    if not raw or not raw.strip():
        raise CaptureError("no hook input (the host passes JSON on stdin, or Codex's notify "
                           "JSON as the last argument)")
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError):
        raise CaptureError("the hook input is not JSON") from None
    if not isinstance(payload, dict):
        raise CaptureError("the hook input is not a JSON object")
    return payload


def _log(home: Path, host: str, session: Any, what: str, detail: str) -> None:
    """One JSON line in the home's capture.log (0600, rotated at LOG_MAX_BYTES; the home made
    if missing); stderr when the home cannot take it (another user's, read-only). Secrets are
    redacted."""
    shown = _redacted(detail)
    entry = {"at": iso(datetime.now(UTC)), "host": host, "what": what,
             "session": session if isinstance(session, str) else None, "detail": shown}
    path = home / LOG_NAME
    try:
        make_private_dir(home)  # as the first capture's open would
        if home.stat().st_uid != os.geteuid():
            raise OSError("the home is not this user's folder")
        if path.is_file() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, home / f"{LOG_NAME}.1")
        append_private_line(path, entry)
    except OSError:
        _stderr(host, shown)


def _redacted(detail: str) -> str:
    """`detail` as a log shows it: secrets redacted, at most 1,000 chars. The detector is
    imported here, on a failure: a hook that stores its turns never needs it."""
    from ..secrets.detector import redact_secrets

    return redact_secrets(detail)[:1_000]


def _stderr(host: str, detail: str) -> None:
    try:
        sys.stderr.write(f"memvault hook {host}: {detail}\n")
    except (OSError, ValueError):
        pass
