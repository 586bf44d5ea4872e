"""`memvault hook claude-code` / `memvault hook codex`: capture an agent host's conversation from
its hooks (memvault.home.capture). A hook always exits 0 and writes nothing to stdout: what
goes wrong is logged to capture.log in the home."""

from __future__ import annotations

import json
import os
import select
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import click

from ..base.config import resolve_home
from ..base.errors import MemvaultError
from .app import SPACE_KEY, space_option

PAYLOAD_MAX_BYTES = 16 * 1024 * 1024  # a Stop hook carries the last reply; never more than this
HOOK_TIMEOUT_S = 10  # what the printed configs give the host: a backstop, the hook ends sooner
CLAUDE_CODE_EVENTS = ("Stop", "PreCompact", "SessionEnd")


@click.group()
def hook() -> None:
    """Capture an agent host's conversation as it happens (hooks that need no agent help).

    Each call reads the host's transcript on from where the last call stopped and stores the
    new user and assistant messages on the hot timeline with their own times, keyed by
    session and message (stored once, whoever stores it first). Tool calls and their output,
    memvault's own included, are left out. A call does a bounded step and returns within a
    second; a backlog goes on at the next call. It always exits 0 and prints nothing: errors
    go to capture.log in the home.
    """


def remote_options(f: Any) -> Any:
    """--remote URL, --token-env VAR, --ca-cert F: the hook sends to a remote home."""
    f = click.option("--ca-cert", type=click.Path(dir_okay=False), default=None,
                     help="With --remote: the CA certificate (PEM) to trust for its HTTPS.")(f)
    f = click.option("--token-env", metavar="VAR", default=None,
                     help="With --remote: the environment variable holding its bearer token.")(f)
    return click.option(
        "--remote", metavar="URL", default=None,
        help="Send the turns to the memvault serve at URL (https://host:8765/mcp) through a "
             "local outbox, instead of storing them in this home (docs/devices.md).")(f)


def _remote_args(remote: str | None, token_env: str | None, ca_cert: str | None) -> list[str]:
    """The remote options as a printed config repeats them (the variable's name, never its
    value; the CA file's absolute path)."""
    if remote is None:
        return []
    return (["--remote", remote] + (["--token-env", token_env] if token_env else [])
            + (["--ca-cert", str(Path(ca_cert).expanduser().absolute())] if ca_cert else []))


def _send_remote(home: Path, host: str, raw: bytes | str | None, started: float,
                 remote: str, token_env: str | None, ca_cert: str | None) -> None:
    from ..home.outbox import Remote, run_remote_hook

    token = os.environ.get(token_env) if token_env else None
    run_remote_hook(home, host, raw, started, Remote(
        remote, token or None, Path(ca_cert).expanduser() if ca_cert else None))


@hook.command("claude-code")
@space_option
@remote_options
@click.option("--print-config", "print_config", is_flag=True,
              help="Print the hooks block for Claude Code's settings.json (Stop, PreCompact, "
                   "SessionEnd; absolute paths) and exit.")
@click.pass_context
def claude_code(ctx: click.Context, print_config: bool, remote: str | None,
                token_env: str | None, ca_cert: str | None) -> None:
    """Claude Code's hook: reads the hook's JSON (session_id, transcript_path, …) on stdin.

    Install: `memvault --home ~/.memvault hook claude-code --print-config` and merge its
    "hooks" into ~/.claude/settings.json.
    """
    started = time.monotonic()
    home, space = _home(ctx, print_config), ctx.meta.get(SPACE_KEY)
    if home is None:
        return
    extra = _remote_args(remote, token_env, ca_cert)
    if print_config:
        _echo_json({"hooks": {event: [{"hooks": [_command_hook(home, "claude-code", space,
                                                               extra)]}]
                              for event in CLAUDE_CODE_EVENTS}})
        return
    from ..home.capture import STEP_SECONDS, run_hook

    raw = read_payload(started + STEP_SECONDS)
    if remote is not None:
        _send_remote(home, "claude-code", raw, started, remote, token_env, ca_cert)
        return
    run_hook(home, "claude-code", raw, started, space=ctx.meta.get(SPACE_KEY))


@hook.command("codex")
@space_option
@click.argument("payload", required=False)
@click.option("--print-config", "print_config", is_flag=True,
              help="Print the `notify` line for ~/.codex/config.toml (absolute paths) and exit.")
@click.option("--print-hooks-config", "print_hooks", is_flag=True,
              help="Print the Stop hook for ~/.codex/hooks.json instead, for Codex versions "
                   "with lifecycle hooks, and exit.")
@remote_options
@click.pass_context
def codex(ctx: click.Context, payload: str | None, print_config: bool,
          print_hooks: bool, remote: str | None, token_env: str | None,
          ca_cert: str | None) -> None:
    """Codex CLI's hook: its `notify` program (the JSON comes as the last argument) or its Stop
    hook (the JSON on stdin). Reads the session's rollout file under $CODEX_HOME (~/.codex).

    Install: `memvault --home ~/.memvault hook codex --print-config` and put the printed line
    in ~/.codex/config.toml (or `--print-hooks-config` into ~/.codex/hooks.json).
    """
    started = time.monotonic()
    home, space = _home(ctx, print_config or print_hooks), ctx.meta.get(SPACE_KEY)
    if home is None:
        return
    extra = _remote_args(remote, token_env, ca_cert)
    if print_config or print_hooks:
        if print_hooks:
            _echo_json({"hooks": {"Stop": [{"hooks": [_command_hook(home, "codex", space,
                                                                    extra)]}]}})
        else:  # a JSON array of strings is a TOML array too
            click.echo("notify = " + json.dumps(_argv(home, "codex", space, extra),
                                                 ensure_ascii=False))
        return
    from ..home.capture import STEP_SECONDS, run_hook

    raw = payload if payload is not None else read_payload(started + STEP_SECONDS)
    if remote is not None:
        _send_remote(home, "codex", raw, started, remote, token_env, ca_cert)
        return
    run_hook(home, "codex", raw, started, space=ctx.meta.get(SPACE_KEY))


def _home(ctx: click.Context, printing: bool) -> Path | None:
    """The home the hook writes to. A hook that cannot name one (an empty --home) says so on
    stderr and ends with 0 like any other hook failure; printing a config raises as usual."""
    try:
        return resolve_home(ctx.find_root().obj["home"]).absolute()
    except MemvaultError as exc:
        if printing:
            raise
        click.echo(f"memvault hook: {exc}", err=True)
        return None


def _argv(home: Path, host: str, space: str | None = None,
          extra: list[str] | None = None) -> list[str]:
    """The absolute command a host runs: the memvault beside this interpreter (as `memvault
    mcp --print-config` prints it), this home, the hook (bound to `space` when given)."""
    from .serve import stdio_command

    bound = ["--space", space] if space else []
    return [*stdio_command(), "--home", str(home), "hook", host, *bound, *(extra or [])]


def _command_hook(home: Path, host: str, space: str | None = None,
                  extra: list[str] | None = None) -> dict[str, Any]:
    return {"type": "command", "command": shlex.join(_argv(home, host, space, extra)),
            "timeout": HOOK_TIMEOUT_S}


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def read_payload(deadline: float) -> bytes | None:
    """The hook's JSON on stdin: read until it parses, stdin ends, PAYLOAD_MAX_BYTES, or
    `deadline` (time.monotonic()), whichever comes first: a host may leave stdin open. None on
    a terminal (nobody is piping a hook's input)."""
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (an embedding program)
        data = stream.read(PAYLOAD_MAX_BYTES)
        return data.encode() if isinstance(data, str) else data
    if os.isatty(fd):
        return None
    data = b""
    while len(data) < PAYLOAD_MAX_BYTES:
        left = deadline - time.monotonic()
        if left <= 0 or (os.name == "posix" and not select.select([fd], [], [], left)[0]):
            break
        chunk = os.read(fd, min(1 << 16, PAYLOAD_MAX_BYTES - len(data)))
        if not chunk:
            break
        data += chunk
        if data.rstrip().endswith(b"}") and _parses(data):
            break
    return data


def _parses(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True
