"""Concurrency stress: serve + watch + CLI + 8 MCP sessions + backups at once; is every
acknowledged event kept?

    python bench/concurrency.py                   # 60 s of load (about 2 minutes in all)
    python bench/concurrency.py --seconds 170     # the figure the security review quoted
    python bench/concurrency.py --socket --keep   # a Unix socket instead of TCP; keep the home

On a fresh home in a temporary folder (or --home, which must not exist yet), with the builtin
model and a low compaction threshold so the worker keeps compacting:
- `memvault serve` (loopback TCP on a free port with the token the home generates, or --socket)
  and `memvault watch` run as subprocesses in their own process groups, always stopped at the
  end (SIGTERM, then SIGKILL of the group);
- for --seconds, at once: --sessions MCP sessions (memvault.service.client.open_client), each
  appending events with memory_append (unique text and key per call; every acknowledged event
  id and text recorded) and now and then memory_find, memory_status, memory_organize; a CLI
  loop (`ingest` of small JSONL files with keys, `find`, `status`, `compact --no-wait`,
  `organize --no-wait`, `check`); `memvault backup` every --backup-every seconds; a hand edit of
  the vault's USER.md every --edit-every seconds (the watchers import it);
- then everything stops and a fresh read-only look checks: `memvault check`, every acknowledged
  event (MCP and CLI) stored under its id and key with its exact text, every backup opens, passes
  PRAGMA quick_check and holds every event acknowledged before it began, every hand edit of
  USER.md is a version in SQLite.
A busy/locked error is retried (same key: a retry never stores twice) and counted; an event
whose append never got an answer is "unacked", not lost. Exit status 1 when an acknowledged
event is lost or changed, a backup is invalid, or `memvault check` fails. Timings are
wall-clock on this machine; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from service import CLI, pct  # the memvault command line and the percentile service.py reports

NAMES = ["张伟", "李娜", "王芳", "刘洋", "陈静", "Alice Chen", "Bob Smith", "Carol Diaz",
         "Haoyu", "Lighthouse", "garden"]
TEMPLATES = [
    "记住：{name}负责第{n}版设计稿，周三下午三点前交给我们。",
    "TODO: send {name} the invoice #{n} and confirm the garden plan by Friday.",
    "Remind me to call {name} about project Lighthouse, milestone {n}.",
    "{name} 说：我们下周开会讨论项目进度，记得带上第{n}版的数据。",
    "Note {n}: {name} prefers tea over coffee and answers email faster than chat.",
]
CONFIG = (
    "[compact]\nthreshold_tokens = 2000\n"
    "[worker]\npoll_s = 0.5\nbackoff_s = 1.0\nhourly_s = 86400\n"
    "[deep]\nquiet_minutes = 240\n"
)
CALL_TIMEOUT_S = 60.0  # one MCP call
CLI_TIMEOUT_S = 120.0  # one CLI subprocess
RETRIES = 5  # busy/locked answers retried per append


def turn(rng: random.Random, n: int) -> str:
    return rng.choice(TEMPLATES).format(name=rng.choice(NAMES), n=n)


def is_busy(text: str) -> bool:
    low = text.lower()
    return "locked" in low or "busy" in low


@dataclass
class Run:
    """Everything the load threads record (appended from several threads: list.append and
    Counter updates under the lock)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    # (event_id, key, text, acked at monotonic)
    mcp_acked: list[tuple[int, str, str, float]] = field(default_factory=list)
    # (reported ids, key, text, acked at): the key's event must be one of the reported ids
    cli_acked: list[tuple[frozenset[int], str, str, float]] = field(default_factory=list)
    latency: dict[str, list[float]] = field(default_factory=dict)
    mcp_calls: Counter[str] = field(default_factory=Counter)
    mcp_failed: Counter[str] = field(default_factory=Counter)
    cli_runs: Counter[str] = field(default_factory=Counter)
    cli_failed: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # kind -> count
    first_errors: dict[str, str] = field(default_factory=dict)
    unacked: int = 0  # appends given up without an answer (not acknowledged: not "lost")
    backups: list[tuple[Path, float]] = field(default_factory=list)  # (path, started at)
    backup_runs: int = 0
    edits: list[str] = field(default_factory=list)  # contents written to vault/USER.md
    sessions_done: int = 0

    def error(self, kind: str, text: str) -> None:
        with self.lock:
            self.errors[kind] += 1
            self.first_errors.setdefault(kind, text.strip().splitlines()[-1][:300]
                                         if text.strip() else "(no message)")

    def timed(self, name: str, seconds: float) -> None:
        with self.lock:
            self.latency.setdefault(name, []).append(seconds)


# -- processes --------------------------------------------------------------------------------
def memvault(home: Path, *args: str, timeout: float = CLI_TIMEOUT_S,
             ) -> subprocess.CompletedProcess[str]:
    """`memvault --home HOME ARGS`, bounded (TimeoutExpired kills it, its group included)."""
    proc = subprocess.Popen([*CLI, "--home", str(home), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def start_daemon(home: Path, args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([*CLI, "--home", str(home), *args], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_daemon(proc: subprocess.Popen[bytes], grace_s: float = 60.0) -> int | None:
    """SIGTERM the process group, wait up to grace_s, then SIGKILL it. The exit status."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait(10)
    _kill_group(proc)  # anything the group left behind
    return proc.returncode


def wait_for_url(serve: subprocess.Popen[bytes], log: Path) -> str:
    """The URL `memvault serve --port 0` logs in its service_ready line."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if '"service_ready"' in line:
                return str(json.loads(line)["url"])
        if serve.poll() is not None:
            break
        time.sleep(0.1)
    raise SystemExit(f"memvault serve did not start; see {log}")


def wait_for_socket(serve: subprocess.Popen[bytes], sock: Path, log: Path) -> None:
    deadline = time.monotonic() + 120
    while not sock.exists():
        if serve.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"memvault serve did not start; see {log}")
        time.sleep(0.1)


# -- the MCP sessions ---------------------------------------------------------------------------
async def mcp_session(index: int, endpoint: dict[str, str], end: float, run: Run,
                      pause_s: float) -> None:
    """One agent: its own MCP session appending until `end`, with a find every 4th call, a
    status every 25th and an organize request every 60th. A broken session reconnects."""
    import anyio
    from memvault.service.client import ToolCallFailed, open_client, tool_payload

    rng = random.Random(index)
    n = 0
    pending: tuple[str, str, int] | None = None  # (key, text, tries) of an unanswered append

    async def call(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        with run.lock:
            run.mcp_calls[tool] += 1
        started = time.perf_counter()
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                answer = tool_payload(await client.call_tool(tool, args))
        except BaseException:
            with run.lock:
                run.mcp_failed[tool] += 1
            raise
        run.timed(tool, time.perf_counter() - started)
        return answer

    while time.time() < end:
        try:
            async with open_client(url=endpoint.get("url"), token=endpoint.get("token"),
                                   socket_path=endpoint.get("socket"),
                                   timeout_s=CALL_TIMEOUT_S) as client:
                while time.time() < end or pending is not None:
                    if pending is None:
                        n += 1
                        key = f"mcp-{index}-{n}"
                        text = f"{turn(rng, n)} [{key} {uuid.uuid4().hex[:12]}]"
                        pending = (key, text, 0)
                    key, text, tries = pending
                    try:
                        answer = await call(client, "memory_append",
                                            {"text": text, "key": key, "source": f"agent-{index}"})
                    except ToolCallFailed as exc:
                        busy = is_busy(str(exc))
                        run.error("mcp append busy/locked" if busy else "mcp append refused",
                                  str(exc))
                        if busy and tries + 1 < RETRIES:
                            pending = (key, text, tries + 1)
                            await anyio.sleep(0.2 * (tries + 1))
                        else:
                            with run.lock:
                                run.unacked += 1
                            pending = None
                        continue
                    with run.lock:
                        run.mcp_acked.append((int(answer["event_id"]), key, text,
                                              time.monotonic()))
                        if tries:
                            run.errors["mcp append retried ok"] += 1
                    pending = None
                    if time.time() >= end:
                        break
                    for every, tool, args in (
                            (4, "memory_find", {"query": rng.choice(NAMES), "limit": 10}),
                            (25, "memory_status", {}),
                            (60, "memory_organize", {})):
                        if n % every == 0:
                            try:
                                await call(client, tool, args)
                            except ToolCallFailed as exc:
                                run.error(f"mcp {tool} "
                                          + ("busy/locked" if is_busy(str(exc)) else "refused"),
                                          str(exc))
                    if pause_s:
                        await anyio.sleep(rng.uniform(0, 2 * pause_s))
                return
        except Exception as exc:  # transport: the session broke or a call timed out
            run.error("mcp transport", f"session {index}: {type(exc).__name__}: {exc}")
            if pending is not None:
                key, text, tries = pending
                if tries + 1 >= RETRIES:
                    with run.lock:
                        run.unacked += 1
                    pending = None
                else:
                    pending = (key, text, tries + 1)
            await anyio.sleep(1.0)
    if pending is not None:
        with run.lock:
            run.unacked += 1


def run_sessions(sessions: int, endpoint: dict[str, str], end: float, run: Run,
                 pause_s: float) -> None:
    import anyio

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(sessions):
                tg.start_soon(mcp_session, i, endpoint, end, run, pause_s)

    anyio.run(main)


# -- the CLI, backup and edit loops -------------------------------------------------------------
def cli_loop(home: Path, scratch: Path, stop: threading.Event, run: Run) -> None:
    """Ingest, find, status, compact, organize and check, round and round, every one bounded."""
    rng = random.Random(99)
    round_no = 0
    while not stop.is_set():
        round_no += 1
        lines = []
        for j in range(3):
            key = f"cli-{round_no}-{j}"
            lines.append((key, f"{turn(rng, round_no)} [{key} {uuid.uuid4().hex[:12]}]"))
        path = scratch / f"ingest-{round_no}.jsonl"
        path.write_text("".join(json.dumps({"text": t, "key": k, "source": "cli"},
                                           ensure_ascii=False) + "\n" for k, t in lines),
                        encoding="utf-8")
        commands: list[tuple[str, list[str]]] = [
            ("ingest", ["ingest", str(path), "--json"]),
            ("find", ["find", rng.choice(NAMES), "--json"]),
            ("status", ["status", "--json"]),
        ]
        if round_no % 3 == 0:
            commands.append(("compact", ["compact", "--no-wait"]))
        if round_no % 3 == 1:
            commands.append(("organize", ["organize", "--no-wait"]))
        if round_no % 4 == 2:
            commands.append(("check", ["check", "--json"]))
        for name, args in commands:
            if stop.is_set() and name != "ingest":
                break
            for attempt in range(RETRIES):
                ok, out = _cli_once(home, name, args, run)
                if ok:
                    if name == "ingest":
                        answer = json.loads(out)
                        ids = frozenset(answer["stored"]) | frozenset(answer["skipped"])
                        now = time.monotonic()
                        with run.lock:
                            run.cli_acked.extend((ids, k, t, now) for k, t in lines)
                            if attempt:
                                run.errors["cli ingest retried ok"] += 1
                    break
                if name != "ingest" or out != "busy":
                    break
                time.sleep(0.5 * (attempt + 1))
        stop.wait(0.2)


def _cli_once(home: Path, name: str, args: list[str], run: Run) -> tuple[bool, str]:
    """Run one CLI command; (True, stdout) or (False, "busy"|"failed")."""
    with run.lock:
        run.cli_runs[name] += 1
    started = time.perf_counter()
    try:
        done = memvault(home, *args)
    except subprocess.TimeoutExpired:
        with run.lock:
            run.cli_failed[name] += 1
        run.error(f"cli {name} timeout", f"{name} ran over {CLI_TIMEOUT_S:.0f} s")
        return False, "failed"
    run.timed(f"cli {name}", time.perf_counter() - started)
    if done.returncode == 0:
        return True, done.stdout
    with run.lock:
        run.cli_failed[name] += 1
    text = (done.stderr or done.stdout).strip()
    busy = is_busy(text)
    run.error(f"cli {name} " + ("busy/locked" if busy else f"exit {done.returncode}"), text)
    return False, "busy" if busy else "failed"


def backup_loop(home: Path, dest: Path, every_s: float, stop: threading.Event,
                run: Run) -> None:
    n = 0
    while not stop.wait(every_s):
        n += 1
        target = dest / f"backup-{n:03d}.db"
        started = time.monotonic()
        with run.lock:
            run.backup_runs += 1
        try:
            done = memvault(home, "backup", str(target), "--json")
        except subprocess.TimeoutExpired:
            run.error("backup timeout", f"backup {n} ran over {CLI_TIMEOUT_S:.0f} s")
            continue
        if done.returncode != 0:
            text = (done.stderr or done.stdout).strip()
            run.error("backup " + ("busy/locked" if is_busy(text) else "failed"), text)
            continue
        with run.lock:
            run.backups.append((target, started))


def edit_loop(vault: Path, every_s: float, stop: threading.Event, run: Run) -> None:
    """Hand edits of USER.md, as an editor saves them (write a temp file, rename it over)."""
    n = 0
    target = vault / "USER.md"
    while not stop.wait(every_s):
        n += 1
        content = (f"# USER\n\nHand edit {n} at {time.strftime('%H:%M:%S')} "
                   f"({uuid.uuid4().hex[:8]}): prefers tea; works late on Thursdays.\n")
        tmp = vault / f".USER.md.{n}.tmp"
        tmp.write_text(content, encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
        with run.lock:
            run.edits.append(content)


# -- verification -------------------------------------------------------------------------------
def ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)


def user_versions(db: Path) -> set[str]:
    conn = ro(db)
    try:
        return {r[0] for r in conn.execute("SELECT content FROM core_files WHERE name = 'USER.md'")}
    finally:
        conn.close()


def wait_for_edit(db: Path, content: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if content in user_versions(db):
                return True
        except sqlite3.Error:
            pass
        time.sleep(0.25)
    return False


def verify(home: Path, run: Run) -> dict[str, Any]:
    db = home / "memory.db"
    out: dict[str, Any] = {}
    check = memvault(home, "check", "--json")
    out["check_rc"] = check.returncode
    status = memvault(home, "status", "--json")
    try:
        report = json.loads(status.stdout)
        out["states"] = report["events"]
        out["terminal"] = report["batches"]["terminal"]
        out["retrying"] = report["batches"]["retrying"]
    except (json.JSONDecodeError, KeyError):
        out["states"], out["terminal"], out["retrying"] = {}, "?", []
    try:
        report = json.loads(check.stdout)
        out["check_problems"] = report.get("problems", [])
        out["check_warnings"] = report.get("warnings", [])
    except json.JSONDecodeError:
        out["check_problems"] = [check.stderr.strip()[-300:]]
        out["check_warnings"] = []
    conn = ro(db)
    try:
        by_id = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, key, text FROM events")}
        out["events_total"] = len(by_id)
        out["db_quick_check"] = conn.execute("PRAGMA quick_check").fetchone()[0]
    finally:
        conn.close()
    by_key = {key: (eid, text) for eid, (key, text) in by_id.items() if key is not None}
    lost: list[str] = []
    for eid, key, text, _ in run.mcp_acked:
        stored = by_id.get(eid)
        if stored is None:
            lost.append(f"mcp event {eid} ({key}) is missing")
        elif stored != (key, text):
            lost.append(f"mcp event {eid} ({key}) differs: stored key {stored[0]!r}, "
                        f"text {stored[1][:80]!r}")
    for ids, key, text, _ in run.cli_acked:
        found = by_key.get(key)
        if found is None:
            lost.append(f"cli event {key} is missing")
        elif found[1] != text or found[0] not in ids:
            lost.append(f"cli event {key} differs: stored as {found[0]} (reported {sorted(ids)})")
    out["lost"] = lost
    out["found"] = len(run.mcp_acked) + len(run.cli_acked) - len(lost)
    acked_times = ([(eid, text, t) for eid, _, text, t in run.mcp_acked]
                   + [(by_key[k][0] if k in by_key else -1, text, t)
                      for _, k, text, t in run.cli_acked])
    valid, invalid = 0, []
    for path, started in run.backups:
        try:
            conn = ro(path)
            try:
                quick = conn.execute("PRAGMA quick_check").fetchone()[0]
                texts = dict(conn.execute("SELECT id, text FROM events").fetchall())
            finally:
                conn.close()
        except sqlite3.Error as exc:
            invalid.append(f"{path.name}: {exc}")
            continue
        missing = [eid for eid, text, t in acked_times if t < started and texts.get(eid) != text]
        if quick != "ok":
            invalid.append(f"{path.name}: quick_check {quick}")
        elif missing:
            invalid.append(f"{path.name}: {len(missing)} events acknowledged before it began "
                           f"are not in it (e.g. {missing[:3]})")
        else:
            valid += 1
    out["backups_valid"] = valid
    out["backups_invalid"] = invalid
    versions = user_versions(db)
    out["edits_imported"] = sum(1 for c in run.edits if c in versions)
    return out


def worker_batches(log: Path) -> Counter[str]:
    """batch_committed / batch_failed / ... lines in serve's JSON log."""
    seen: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        if '"event": "batch_' in line:
            try:
                seen[json.loads(line)["event"]] += 1
            except (json.JSONDecodeError, KeyError):
                continue
    return seen


def daemon_faults(log: Path) -> list[str]:
    """Tracebacks and error-level lines in a daemon's log."""
    faults = []
    for line in log.read_text(errors="replace").splitlines():
        low = line.lower()
        if "traceback" in low or '"level": "error"' in low or '"level":"error"' in low \
                or '"level": "critical"' in low:
            faults.append(line[:300])
    return faults


# -- main ---------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="load duration (60)")
    parser.add_argument("--sessions", type=int, default=8, help="MCP sessions (8)")
    parser.add_argument("--home", help="a new home to use (must not exist); default: a temp dir")
    parser.add_argument("--socket", action="store_true",
                        help="serve on a Unix socket instead of loopback TCP with the token")
    parser.add_argument("--backup-every", type=float, default=5.0, help="seconds (5)")
    parser.add_argument("--edit-every", type=float, default=7.0, help="seconds (7)")
    parser.add_argument("--pause-ms", type=float, default=0.0,
                        help="mean think time between an agent's calls (0: as fast as answered)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="mvc", dir="/tmp"))  # short: a socket path fits
    os.chmod(root, 0o700)
    home = Path(args.home).absolute() if args.home else root / "home"
    if home.exists() and any(home.iterdir()):
        parser.error(f"--home {home} exists and is not empty: give a new folder")
    home.mkdir(parents=True, exist_ok=True)
    (home / "memvault.toml").write_text(CONFIG, encoding="utf-8")
    scratch, backups = root / "cli", root / "backups"
    scratch.mkdir()
    backups.mkdir()
    serve_log, watch_log = root / "serve.log", root / "watch.log"
    print(f"home {home}; scratch {root}; {args.sessions} sessions, {args.seconds:g} s, "
          f"{'Unix socket' if args.socket else 'TCP + token'}", flush=True)

    seed = scratch / "seed.jsonl"
    seed.write_text("".join(json.dumps({"text": turn(random.Random(i), i), "key": f"seed-{i}"},
                                       ensure_ascii=False) + "\n" for i in range(50)),
                    encoding="utf-8")
    for step in (["ingest", str(seed)], ["project-vault", "--all", "--quiet"]):
        done = memvault(home, *step)
        if done.returncode:
            raise SystemExit(f"setup `memvault {' '.join(step)}` failed: {done.stderr}")

    run = Run()
    stop = threading.Event()
    threads: list[threading.Thread] = []
    daemons: list[tuple[str, subprocess.Popen[bytes], Path]] = []
    rc: dict[str, int | None] = {}
    lost_edit_wait = False
    started = time.monotonic()
    try:
        where = ["--socket", str(root / "api.sock")] if args.socket else ["--port", "0"]
        serve = start_daemon(home, ["serve", *where, "--log-level", "info"], serve_log)
        daemons.append(("serve", serve, serve_log))
        watch = start_daemon(home, ["watch"], watch_log)
        daemons.append(("watch", watch, watch_log))
        if args.socket:
            wait_for_socket(serve, root / "api.sock", serve_log)
            endpoint = {"socket": str(root / "api.sock")}
        else:
            endpoint = {"url": wait_for_url(serve, serve_log),
                        "token": (home / "service.token").read_text().strip()}
        deadline = time.monotonic() + 60
        while "watching" not in watch_log.read_text(errors="replace"):
            if watch.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"memvault watch did not start; see {watch_log}")
            time.sleep(0.1)

        threads = [
            threading.Thread(target=cli_loop, args=(home, scratch, stop, run), daemon=True),
            threading.Thread(target=backup_loop, args=(home, backups, args.backup_every, stop,
                                                       run), daemon=True),
            threading.Thread(target=edit_loop, args=(home / "vault", args.edit_every, stop, run),
                             daemon=True),
        ]
        load_start = time.monotonic()
        for t in threads:
            t.start()
        run_sessions(args.sessions, endpoint, time.time() + args.seconds, run,
                     args.pause_ms / 1000)
        stop.set()
        for t in threads:
            t.join(CLI_TIMEOUT_S + 30)
        load_s = time.monotonic() - load_start
        if run.edits:  # give the watchers time to import the last edit
            lost_edit_wait = not wait_for_edit(home / "memory.db", run.edits[-1], 20)
        for name, proc, _ in daemons:
            alive = proc.poll() is None
            rc[name] = stop_daemon(proc)
            if not alive:
                run.error(f"{name} died", f"{name} exited {rc[name]} during the run")
    finally:
        stop.set()
        for name, proc, _ in daemons:
            if proc.poll() is None:
                rc[name] = stop_daemon(proc, grace_s=10)

    result = verify(home, run)
    faults = {name: daemon_faults(log) for name, _, log in daemons}
    batches = worker_batches(serve_log)

    mcp_calls, mcp_failed = sum(run.mcp_calls.values()), sum(run.mcp_failed.values())
    cli_runs, cli_failed = sum(run.cli_runs.values()), sum(run.cli_failed.values())
    lat = run.latency
    busy = sum(v for k, v in run.errors.items() if "busy/locked" in k)
    retried = sum(v for k, v in run.errors.items() if "retried ok" in k)
    other = sum(run.errors.values()) - busy - retried
    ms = 1000.0
    rows = [
        ("seconds of load", f"{load_s:.0f}"),
        ("MCP sessions", f"{args.sessions}"),
        ("acked events (MCP / CLI)", f"{len(run.mcp_acked)} / {len(run.cli_acked)}"),
        ("found with exact text", f"{result['found']}"),
        ("lost or changed", f"{len(result['lost'])}"),
        ("appends never acknowledged", f"{run.unacked}"),
        ("busy/locked answers (retried ok)", f"{busy} ({retried})"),
        ("other errors", f"{other}"),
        ("backups made / valid", f"{len(run.backups)} (of {run.backup_runs} runs) / "
                                 f"{result['backups_valid']}"),
        ("core edits imported", f"{result['edits_imported']} / {len(run.edits)}"),
        ("CLI commands run / failed", f"{cli_runs} / {cli_failed}"),
        ("MCP calls / failed", f"{mcp_calls} / {mcp_failed}"),
        ("memory_append p50 / p95 ms", f"{pct(lat.get('memory_append', []), .5) * ms:.1f} / "
                                       f"{pct(lat.get('memory_append', []), .95) * ms:.1f}"),
        ("memory_find p50 / p95 ms", f"{pct(lat.get('memory_find', []), .5) * ms:.1f} / "
                                     f"{pct(lat.get('memory_find', []), .95) * ms:.1f}"),
        ("events in the database", f"{result['events_total']}"),
        ("event states", ", ".join(f"{k} {v}" for k, v in result["states"].items()
                                   if k != "total")),
        ("worker batches committed / failed tries",
         f"{batches['batch_committed']} / {batches['batch_failed']}; terminal "
         f"{result['terminal']}, retrying {len(result['retrying'])}"),
        ("memvault check (exit)", f"{result['check_rc']}"),
        ("serve / watch exit", f"{rc.get('serve')} / {rc.get('watch')}"),
    ]
    width = max(len(k) for k, _ in rows)
    print()
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print("\nper kind:")
    kinds = ([(n, run.mcp_calls[n], run.mcp_failed[n], lat.get(n, []))
              for n in sorted(run.mcp_calls)]
             + [(f"cli {n}", run.cli_runs[n], run.cli_failed[n], lat.get(f"cli {n}", []))
                for n in sorted(run.cli_runs)])
    for name, calls, failed, values in kinds:
        print(f"  {name:<20} {calls:>6} calls {failed:>4} failed   p50 "
              f"{pct(values, .5) * ms:8.1f} ms  p95 {pct(values, .95) * ms:8.1f} ms")
    if run.errors:
        print("errors per kind (busy/locked ones are retried; 'retried ok' = acknowledged after a "
              "retry):")
        for kind, count in sorted(run.errors.items()):
            example = run.first_errors.get(kind, "")
            print(f"  {kind:<28} {count:>5}  {example}")
    problems = []
    for text in result["lost"][:20]:
        problems.append(f"LOST: {text}")
    for text in result["backups_invalid"]:
        problems.append(f"BACKUP INVALID: {text}")
    for text in result["check_problems"]:
        problems.append(f"CHECK: {text}")
    for name, lines in faults.items():
        for line in lines[:5]:
            problems.append(f"{name} log: {line}")
    if lost_edit_wait:
        problems.append("the last USER.md edit was not imported within 20 s")
    if len(run.edits) != result["edits_imported"]:
        problems.append(f"{len(run.edits) - result['edits_imported']} hand edit(s) of USER.md "
                        "never became a version")
    if result["db_quick_check"] != "ok":
        problems.append(f"memory.db quick_check: {result['db_quick_check']}")
    for text in result["check_warnings"][:5]:
        print(f"check warning: {text.get('detail', text) if isinstance(text, dict) else text}")
    for entry in result["retrying"][:5]:
        print(f"batch {entry.get('batch_id')} retrying ({entry.get('covers')}, "
              f"{entry.get('failures')} failures): {str(entry.get('error'))[:200]}")
    for text in problems:
        print(text)
    failed = bool(result["lost"] or result["backups_invalid"] or result["check_rc"])
    print(f"\n{'FAIL' if failed else 'OK'}: {len(result['lost'])} acknowledged events lost, "
          f"{len(result['backups_invalid'])} invalid backups; {time.monotonic() - started:.0f} s "
          f"in all; logs in {root if args.keep else '(removed; --keep keeps them)'}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
