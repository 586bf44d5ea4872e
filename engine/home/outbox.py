"""`memvault hook ... --remote URL`: a second device's hook sends its turns to the writer home
over HTTP(S), through a local outbox, never blocking or failing the host.

Each call reads the transcript on from where the last call stopped (the same reader and the
same keys as a local capture), adds the new messages to the outbox (a 0600 JSON-lines file in
the device's memvault folder, bounded: when full, the transcript is not read further, so
nothing is dropped, only delayed), then sends what waits there to the remote home's
`memory_append` (MCP over streamable HTTP) until the step's deadline. A message leaves the
outbox only after the remote has answered for it; one sent twice (a kill between the answer
and the outbox's rewrite) is stored once, by its key.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..base.config import make_private_dir
from ..timeline.events import NewEvent
from ..timeline.transcripts import Bounds, Progress, read_transcript, session_from_path
from .capture import (
    STEP_BYTES,
    STEP_EVENTS,
    STEP_SECONDS,
    STEP_SURE_LINES,
    CaptureError,
    _log,
    _mark,
    _open_transcript,
    _payload,
    _progress,
    default_codex_home,
    find_rollout,
)

OUTBOX_DIR = "outbox"
SPOOL = "spool.jsonl"
PROGRESS = "progress.json"
MAX_EVENTS = 20_000  # messages the outbox holds at most
MAX_BYTES = 64 * 1024 * 1024  # and bytes
SEND_TIMEOUT_S = 1.5  # one HTTP request; the step's deadline bounds them all
# A remote call's whole step: the transcript's part (capture's STEP_SECONDS) and the sending
# (a TLS handshake to another machine takes a round trip or two); under the host's timeout.
REMOTE_STEP_SECONDS = 2.0
PROTOCOL = "2025-06-18"


@dataclass(frozen=True)
class Remote:
    """The writer home a device sends to: its MCP URL, a bearer token, a CA to trust."""

    url: str
    token: str | None
    ca_cert: Path | None = None


@dataclass
class Sent:
    """What one remote hook call did (counts only, never text)."""

    read: int = 0  # messages taken from the transcript into the outbox
    sent: int = 0  # messages the remote answered for (stored, or already stored by key)
    waiting: int = 0  # messages left in the outbox
    full: bool = False  # the outbox is at its bound: the transcript waits
    unreachable: str | None = None  # why the remote could not be reached this time


def outbox_dir(folder: Path) -> Path:
    """The outbox folder in the device's memvault folder (made 0700)."""
    path = folder / OUTBOX_DIR
    make_private_dir(path)
    return path


@contextmanager
def _locked(folder: Path, deadline: float, clock: Callable[[], float]) -> Iterator[bool]:
    """The outbox's lock until `deadline`; yields False when another call holds it."""
    fd = os.open(outbox_dir(folder) / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if clock() >= deadline:
                    yield False
                    return
                time.sleep(0.02)
        yield True
    finally:
        os.close(fd)


def _write_private(path: Path, data: bytes) -> None:
    """Replace `path` with `data` (0600, written aside and renamed: whole or not at all)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def read_spool(folder: Path) -> list[dict[str, Any]]:
    """The messages waiting in the outbox, oldest first."""
    try:
        lines = (outbox_dir(folder) / SPOOL).read_bytes().splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


def _save_spool(folder: Path, waiting: list[dict[str, Any]]) -> None:
    data = b"".join(json.dumps(e, ensure_ascii=False).encode() + b"\n" for e in waiting)
    _write_private(outbox_dir(folder) / SPOOL, data)


def _load_progress(folder: Path) -> dict[str, Any]:
    try:
        saved = json.loads((outbox_dir(folder) / PROGRESS).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def _spool_transcript(folder: Path, host: str, path: Path, session: str | None,
                      bounds: Bounds, report: Sent) -> None:
    """Add the transcript's new messages to the outbox (unless it is full)."""
    waiting = read_spool(folder)
    size = sum(len(json.dumps(e)) for e in waiting)
    if len(waiting) >= MAX_EVENTS or size >= MAX_BYTES:
        report.full = True
        return
    saved_all = _load_progress(folder)
    digest = hashlib.sha256(f"{host}:{path}".encode()).hexdigest()[:32]
    with _open_transcript(path) as stream:
        st = os.fstat(stream.fileno())
        progress = _progress(saved_all.get(digest), st, stream) or Progress()
        if st.st_size <= progress.offset:
            return
        stream.seek(progress.offset)
        room = Bounds(bounds.max_bytes, min(bounds.max_events or MAX_EVENTS,
                                            MAX_EVENTS - len(waiting)),
                      bounds.deadline, bounds.clock, bounds.sure_steps)
        part = read_transcript(host, stream, progress, room,
                               session=session or session_from_path(path))
        mark = _mark(stream, part.progress.offset)
    waiting += [_as_entry(event) for event in part.events]
    report.read += len(part.events)
    _save_spool(folder, waiting)  # the messages first: a kill here re-reads, keys dedupe
    saved_all[digest] = {**part.progress.to_dict(), "ino": st.st_ino, "mark": mark}
    _write_private(outbox_dir(folder) / PROGRESS, json.dumps(saved_all).encode())


def _as_entry(event: NewEvent) -> dict[str, Any]:
    entry = asdict(event)
    when = entry.get("occurred_at")
    if when is not None and not isinstance(when, str):
        entry["occurred_at"] = when.isoformat()
    return entry


class RemoteDown(Exception):
    """The remote home could not be reached, or refused the call."""


class McpSession:
    """A minimal MCP client over streamable HTTP (JSON responses): initialize, then tool
    calls. The standard library only, so a hook starts in milliseconds."""

    def __init__(self, remote: Remote, timeout_s: float) -> None:
        self.remote, self.timeout_s = remote, timeout_s
        self.context = ssl.create_default_context(
            cafile=str(remote.ca_cert) if remote.ca_cert else None)
        self.session: str | None = None
        self.next_id = 1
        self.call("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                 "clientInfo": {"name": "memvault-hook", "version": "1"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message: dict[str, Any]) -> dict[str, Any] | None:
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": PROTOCOL}
        if self.remote.token:
            headers["Authorization"] = f"Bearer {self.remote.token}"
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        request = urllib.request.Request(self.remote.url, json.dumps(message).encode(),
                                         headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s,
                                        context=self.context) as answer:
                self.session = answer.headers.get("Mcp-Session-Id") or self.session
                body = answer.read()
        except urllib.error.HTTPError as exc:
            raise RemoteDown(f"the remote home answered HTTP {exc.code}") from None
        except (OSError, ValueError) as exc:
            raise RemoteDown(f"the remote home cannot be reached: {exc}") from None
        return json.loads(body) if body.strip() else None

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.next_id += 1
        answer = self.post(message)
        if not answer or "error" in answer:
            raise RemoteDown(f"the remote home refused {method}: "
                             f"{(answer or {}).get('error', {}).get('message', 'no answer')}")
        result: dict[str, Any] = answer["result"]
        return result


def flush(folder: Path, remote: Remote, deadline: float,
          clock: Callable[[], float] = time.monotonic) -> Sent:
    """Send what waits in the outbox, oldest first, until it is empty or `deadline`; a
    message the remote refuses for good (isError) is logged and dropped, so it cannot hold
    up the rest. The caller holds the outbox's lock."""
    report = Sent()
    waiting = read_spool(folder)
    if not waiting:
        return report
    done = 0
    try:
        session = McpSession(remote, min(SEND_TIMEOUT_S, max(0.2, deadline - clock())))
        for entry in waiting:
            if clock() >= deadline:
                break
            result = session.call("tools/call", {"name": "memory_append", "arguments": {
                k: v for k, v in entry.items() if v is not None}})
            if result.get("isError"):
                _log(folder, "remote", entry.get("key"), "skipped",
                     "the remote home refused a message; dropped from the outbox")
            done += 1
    except RemoteDown as exc:
        report.unreachable = str(exc)
    if done:
        _save_spool(folder, waiting[done:])
    report.sent, report.waiting = done, len(waiting) - done
    return report


def transcript_of(host: str, payload: dict[str, Any],
                  codex_home: Path | None = None) -> tuple[Path, str | None]:
    """The transcript a hook payload names, and its session; CaptureError when none."""
    session = payload.get("session_id") or payload.get("thread-id")
    session = session if isinstance(session, str) and session else None
    path = payload.get("transcript_path")
    if host == "codex" and not (isinstance(path, str) and Path(path).expanduser().is_file()):
        found = find_rollout(codex_home or default_codex_home(), session) if session else None
        path = str(found) if found else None
    if not isinstance(path, str) or not path:
        raise CaptureError("the hook input names no transcript (a remote hook sends what a "
                           "transcript holds)")
    return Path(path).expanduser().absolute(), session


def run_remote_hook(folder: Path, host: str, raw: bytes | str | None, started: float,
                    remote: Remote, codex_home: Path | None = None,
                    clock: Callable[[], float] = time.monotonic) -> Sent | None:
    """Everything a remote hook does, never raising: the transcript into the outbox, the
    outbox to the remote, within the step counted from `started`; failures logged to the
    folder's capture.log (an unreachable remote too, as a note: the turns wait)."""
    try:
        deadline = started + REMOTE_STEP_SECONDS
        bounds = Bounds(STEP_BYTES, STEP_EVENTS, started + STEP_SECONDS, clock, STEP_SURE_LINES)
        path, session = transcript_of(host, _payload(raw), codex_home)
        with _locked(folder, started + STEP_SECONDS, clock) as mine:
            if not mine:
                return Sent()
            report = Sent()
            _spool_transcript(folder, host, path, session, bounds, report)
            sent = flush(folder, remote, deadline, clock)
            report.sent, report.waiting, report.unreachable = (sent.sent, sent.waiting,
                                                               sent.unreachable)
        if report.unreachable:
            _log(folder, host, session, "waiting",
                 f"{report.waiting} message(s) wait in the outbox: {report.unreachable}")
        if report.full:
            _log(folder, host, session, "waiting", "the outbox is full: the transcript is read "
                 "on once the remote home takes what waits")
        return report
    except Exception as exc:  # the host's turn must never fail because of the memory
        _log(folder, host, None, "error", f"{type(exc).__name__}: {exc}")
        return None
