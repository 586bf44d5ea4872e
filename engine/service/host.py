"""`memvault serve`: one process that runs the worker, the background tasks it is given (the
vault projector heartbeat and the core-file watcher, built by the CLI) and the agent's MCP API.

Threads: the worker thread and each background task open their own `Memory` (their own
sqlite3 connection; WAL lets them run beside each other); the API borrows connections from a
`MemoryPool`. The API listens first and answers `initialize` at once: nothing it needs waits
for a projection or a scan. Recall never waits on the worker.

Shutdown on SIGINT/SIGTERM: the listener stops taking requests and finishes those in flight,
the stop event reaches every thread, and the worker finishes the tick it is in: the batch in
flight either commits or, when it outlasts `service.shutdown_grace_s`, is left behind; its
lease expires and the next worker re-claims it. Nothing is lost: every write is one SQLite
transaction. A second signal stops at once.

Logs: one JSON object per line on stderr (`ts`, `level`, `logger`, `event`, then fields), through
the stdlib `logging`; `log_event(logger, "name", key=value)` writes one. Secret-looking values in
any of it are redacted (memvault.secrets.detector): a log never echoes a refused secret.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, TextIO, TypedDict

import uvicorn

from ..home.memory import Memory
from ..jobs.worker import TickResult, Worker
from ..secrets.detector import redact_secrets
from .listen import SOCKET_PATH_MAX as SOCKET_PATH_MAX  # re-exported: callers import them here
from .listen import Listen as Listen
from .listen import TlsFiles as TlsFiles
from .listen import bind_tcp as bind_tcp
from .listen import bind_unix as bind_unix
from .listen import check_host as check_host
from .listen import check_loopback as check_loopback
from .listen import check_tls_files as check_tls_files
from .listen import is_loopback as is_loopback
from .mcp_server import (
    DEFAULT_POOL_SIZE,
    MemoryPool,
    MemvaultMCP,
    build_server,
    http_app,
    run_stdio,
)
from .switch import switch_interval

log = logging.getLogger("memvault.service")

# Settings of the [service] table, with the defaults used until engine/base/config.py has them.
RESTART_MIN_S, RESTART_MAX_S = 1.0, 300.0
# The GIL switch interval while serving. One request hops threads several times (socket read,
# the SDK's worker thread for the tool, the answer); each hop waits for the GIL, and while the
# worker thread runs pure-Python batch work CPython hands the GIL over only every switch
# interval (5 ms by default), so each hop could cost up to 5 ms. 0.5 ms keeps the API responsive
# beside a busy worker; the worker loses little (it mostly waits on SQLite or a model).
SERVE_SWITCH_INTERVAL_S = 0.0005


# -- structured logs ----------------------------------------------------------------------------
def redacted(value: Any) -> Any:
    """`value` with every secret-looking text in it replaced by `[redacted: kind]`.

    Logs carry refusals and batch errors, whose messages may quote what a model or an agent
    sent (an unknown tool name, an id); a secret in one must never reach a log file."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact_secrets(str(value))  # what json.dumps(default=str) would write


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record, on one line (newlines inside values are escaped); every text
    in it passes `redacted` first."""

    CORE = ("ts", "level", "logger", "event")

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": redacted(record.getMessage()),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            for key, value in fields.items():
                data[f"field_{key}" if key in self.CORE else key] = redacted(value)
        if record.exc_info:
            data["traceback"] = redacted(
                "".join(traceback.format_exception(*record.exc_info)))
        return json.dumps(data, ensure_ascii=False, default=str)


def configure_logging(level: str = "info", stream: TextIO | None = None) -> logging.Handler:
    """Send every log record to `stream` (stderr) as JSON lines; return the handler."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLinesFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Per-request chatter of the HTTP stack stays out unless asked for.
    quiet = logging.DEBUG if level.lower() == "debug" else logging.WARNING
    for name in ("mcp", "uvicorn", "uvicorn.error", "uvicorn.access", "httpx", "httpx2",
                 "watchfiles"):
        logging.getLogger(name).setLevel(quiet)
    return handler


def log_event(logger: logging.Logger, event: str, level: int = logging.INFO, /, *,
              exc_info: bool = False, **fields: Any) -> None:
    """Log one structured event: `event` is the message, `fields` become JSON keys."""
    logger.log(level, event, extra={"fields": fields}, exc_info=exc_info)


# -- background tasks ---------------------------------------------------------------------------
@dataclass
class BackgroundTask:
    """A loop run in its own thread until the stop event is set.

    `target(stop)` must return soon after `stop` is set. When it raises, the service logs it
    and (with `restart`) runs it again after a backoff that doubles from 1 s to 300 s and
    resets after an hour of good running: a crash is restarted, a healthy task never is.
    """

    name: str
    target: Callable[[threading.Event], None]
    restart: bool = True


WorkerFactory = Callable[[Memory, Callable[[TickResult], None]], Worker]
"""Builds the worker on the thread's own Memory, with the service's tick callback."""


def worker_task(home: str | Path, factory: WorkerFactory) -> BackgroundTask:
    """The worker as a background task: its own Memory, batch after batch until stopped."""

    def run(stop: threading.Event) -> None:
        mem = Memory.open(home)
        try:
            worker = factory(mem, TickLogger())
            log_event(log, "worker_started", holder=worker.holder,
                      provider=getattr(worker.provider, "name", "?"),
                      model=getattr(worker.provider, "model", ""))
            ran = worker.run(stop=stop)
            log_event(log, "worker_stopped", holder=worker.holder, batches=ran)
        finally:
            mem.close()

    return BackgroundTask("worker", run)


class TickLogger:
    """Logs every batch outcome, and the worker's quiet states only when they change."""

    QUIET = ("idle", "busy", "waiting")

    def __init__(self) -> None:
        self._last: str | None = None

    def __call__(self, result: TickResult) -> None:
        if result.action in self.QUIET:
            if result.action != self._last:
                log_event(log, "worker_" + result.action)
        else:
            level = logging.WARNING if result.action in ("failed", "terminal") else logging.INFO
            log_event(log, "batch_" + result.action, level, job_id=result.job_id,
                      batch_id=result.batch_id, error=result.error,
                      receipt=_receipt_brief(result.receipt))
        self._last = result.action


def _receipt_brief(receipt: dict[str, Any] | None) -> dict[str, Any] | None:
    if not receipt:
        return None
    keep = ("mode", "revision", "event_id", "outcome", "covered", "head_id", "replayed")
    return {k: receipt[k] for k in keep if k in receipt}


class _Runner(threading.Thread):
    """Runs one BackgroundTask, restarting it after a crash (with backoff)."""

    def __init__(self, task: BackgroundTask, stop: threading.Event) -> None:
        super().__init__(name=f"memvault-{task.name}", daemon=True)
        self.task = task
        self.stop = stop

    def run(self) -> None:
        delay = RESTART_MIN_S
        while not self.stop.is_set():
            started = time.monotonic()
            log_event(log, "task_started", task=self.task.name)
            try:
                self.task.target(self.stop)
            except Exception as exc:
                log_event(log, "task_crashed", logging.ERROR, exc_info=True, task=self.task.name,
                          error=f"{type(exc).__name__}: {exc}")
                if not self.task.restart or self.stop.is_set():
                    return
                if time.monotonic() - started > 3_600:
                    delay = RESTART_MIN_S
                log_event(log, "task_restarting", logging.WARNING, task=self.task.name,
                          delay_s=delay)
                if self.stop.wait(delay):
                    return
                delay = min(delay * 2, RESTART_MAX_S)
                continue
            if not self.stop.is_set():
                log_event(log, "task_ended", logging.WARNING, task=self.task.name,
                          note="returned before the service stopped; not restarted")
            return


# -- the service --------------------------------------------------------------------------------
class _HowToConnect(TypedDict, total=False):
    host_config: str  # the command printing a host's config (TCP only)


class Service:
    """The serve process: API + worker + given background tasks, until a signal stops it.

    `worker` builds the worker (None: no worker here, e.g. a separate `memvault worker` runs);
    `tasks` are the extra background loops (the CLI passes the vault projector and watcher).
    """

    def __init__(
        self, home: str | Path, listen: Listen, *, worker: WorkerFactory | None = None,
        tasks: Sequence[BackgroundTask] = (), bearer_token: str | None = None,
        pool_size: int = DEFAULT_POOL_SIZE, shutdown_grace_s: float = 30.0,
        space: str | None = None, space_tokens: Mapping[str, str] | None = None,
    ) -> None:
        self.home = Path(home)
        self.space = space  # the space every API call is bound to (None: every space)
        self.space_tokens = dict(space_tokens or {})  # token -> the space its calls are bound to
        self.listen = listen
        self.worker = worker
        self.tasks = list(tasks)
        self.bearer_token = bearer_token or None
        self.pool_size = pool_size
        self.shutdown_grace_s = shutdown_grace_s
        self.stop_event = threading.Event()
        self._force = threading.Event()
        self._runners: list[_Runner] = []
        self._uvicorn: _Uvicorn | None = None

    def stop(self, reason: str = "requested") -> None:
        """Ask everything to stop (safe from any thread and from a signal handler)."""
        if not self.stop_event.is_set():
            log_event(log, "service_stopping", reason=reason)
        self.stop_event.set()

    def _auth(self) -> str:
        if self.listen.stdio:
            return "process"  # whoever starts it owns it
        if self.bearer_token or self.space_tokens:
            return "bearer"
        return "socket-permissions" if self.listen.socket is not None else "none"

    def _how_to_connect(self) -> _HowToConnect:
        if self.listen.port is None:
            return {}
        host = "" if self.listen.host == "127.0.0.1" else f" --host {self.listen.host}"
        return {"host_config": f"memvault --home {self.home} serve{host} --port "
                               f"{self.listen.port} --print-config"}

    def build(self, pool: MemoryPool) -> MemvaultMCP:
        """The MCP server this service runs over `pool` (bench/service.py adds a no-op tool)."""
        return build_server(pool, bearer_token=self.bearer_token,
                            space_tokens=self.space_tokens)

    def run(self) -> int:
        """Serve until stopped; return the process exit status (0 after a clean stop)."""
        with switch_interval(SERVE_SWITCH_INTERVAL_S):
            return self._run()

    def _run(self) -> int:
        pool = MemoryPool.for_home(self.home, self.pool_size, space=self.space)  # opens nothing
        server = self.build(pool)
        sock = None
        if not self.listen.stdio:
            sock = (bind_unix(self.listen.socket) if self.listen.socket is not None
                    else bind_tcp(self.listen.host, self.listen.port or 0,
                                  off_loopback=self.listen.off_loopback))
            if self.listen.socket is None:
                self.listen.port = sock.getsockname()[1]
        log_event(log, "service_starting", pid=os.getpid(), home=str(self.home),
                  worker=self.worker is not None, tasks=[t.name for t in self.tasks],
                  auth=self._auth(), **self.listen.describe())
        if self.listen.port is not None and not (self.bearer_token or self.space_tokens):
            log_event(log, "service_unauthenticated", logging.WARNING,
                      note="serving loopback TCP WITHOUT a token (--no-auth): every local user "
                           "can read and write this memory")
        status = 0
        with self._signals():
            try:
                asyncio.run(self._serve(server, sock))
            except Exception:
                log_event(log, "service_failed", logging.ERROR, exc_info=True)
                status = 1
            finally:
                self.stop("shutdown" if status == 0 else "failure")
                self._join_background()
                server.pools.close()
                pool.close()
                if sock is not None:
                    sock.close()
                    if self.listen.socket is not None:
                        self.listen.socket.unlink(missing_ok=True)
        log_event(log, "service_stopped", exit_code=status)
        return status

    # -- pieces ---------------------------------------------------------------------------------
    def _start_background(self) -> None:
        if self.stop_event.is_set():
            return
        tasks = list(self.tasks)
        if self.worker is not None:
            tasks.insert(0, worker_task(self.home, self.worker))
        for task in tasks:
            runner = _Runner(task, self.stop_event)
            runner.start()
            self._runners.append(runner)

    def _join_background(self) -> None:
        deadline = time.monotonic() + self.shutdown_grace_s
        for runner in self._runners:
            while runner.is_alive() and not self._force.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                runner.join(min(left, 0.2))
            if runner.is_alive():
                log_event(log, "task_abandoned", logging.WARNING, task=runner.task.name,
                          note="still running at exit; a batch in flight is re-claimed after "
                               "its lease expires")
            else:
                log_event(log, "task_stopped", task=runner.task.name)

    async def _serve(self, server: Any, sock: socket.socket | None) -> None:
        if sock is None:
            await self._serve_stdio(server)
            return
        self._uvicorn = _Uvicorn(uvicorn_config(
            http_app(server, remote=self.listen.off_loopback), self.listen.tls))
        relay = asyncio.create_task(self._relay_stop())
        try:
            await self._uvicorn.serve(sockets=[sock])
        finally:
            relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await relay

    async def _relay_stop(self) -> None:
        """Announce readiness; turn the stop event into uvicorn's exit flags."""
        announced = False
        server = self._uvicorn
        assert server is not None
        while True:
            if not announced and server.started:
                announced = True
                log_event(log, "service_ready", auth=self._auth(), **self.listen.describe(),
                          **self._how_to_connect())
                self._start_background()  # after the API answers: no scan delays initialize
            if self.stop_event.is_set():
                server.should_exit = True
            if self._force.is_set():
                server.force_exit = True
            await asyncio.sleep(0.05)

    async def _serve_stdio(self, server: Any) -> None:
        task = asyncio.create_task(run_stdio(server))
        log_event(log, "service_ready", **self.listen.describe())
        self._start_background()
        while not task.done() and not self.stop_event.is_set():
            await asyncio.wait({task}, timeout=0.1)
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task  # stdin closed by the host: a normal end

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handle(signum: int, frame: FrameType | None) -> None:
            name = signal.Signals(signum).name
            if self.stop_event.is_set():
                log_event(log, "signal_force", signal=name)
                self._force.set()
            else:
                log_event(log, "signal", signal=name)
                self.stop(name)

        previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)


def uvicorn_config(app: Any, tls: TlsFiles | None = None) -> uvicorn.Config:
    """The uvicorn settings of `memvault serve` (bench/service.py serves its floors with them).

    No access log and no uvicorn log config (our JSON lines only); no websockets; the HTTP
    parser is uvicorn's choice (httptools when installed, else h11). With `tls`, HTTPS."""
    return uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", ws="none",
                          timeout_graceful_shutdown=5,
                          ssl_certfile=None if tls is None else str(tls.cert),
                          ssl_keyfile=None if tls is None else str(tls.key))


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: the service owns SIGINT/SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
