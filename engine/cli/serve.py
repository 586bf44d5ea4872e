"""`memvault serve` and `memvault mcp`: the agent's API, with the worker and the vault beside it.

This module is the composition root of the service: it builds the worker from `--model`, the
vault projector heartbeat and the core-file watcher, and hands them to
`memvault.service.host.Service`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..base.config import Config, load_config
from ..home.memory import Memory
from .app import SPACE_KEY, space_option
from .work import make_worker, model_option

if TYPE_CHECKING:  # the service (the mcp SDK, ~1 s) and the vault (~36 ms) load when serving
    from ..jobs.worker import TickResult, Worker
    from ..service.host import BackgroundTask, WorkerFactory
    from ..vault.watcher import WatchOutcome

log = logging.getLogger("memvault.serve")

LOG_LEVELS = click.Choice(["debug", "info", "warning", "error"])


def log_level_option(f: Any) -> Any:
    return click.option("--log-level", type=LOG_LEVELS, default="info", show_default=True,
                        help="Least severe log line written (JSON lines on stderr).")(f)


def _config(ctx: click.Context) -> Config:
    return load_config(ctx.find_root().obj["home"], create=True)


def _worker_factory(model: str | None) -> WorkerFactory:
    """Build the worker in its own thread, on that thread's Memory (`--model` as for
    `memvault worker`)."""

    def build(mem: Memory, on_tick: Callable[[TickResult], None]) -> Worker:
        return make_worker(mem, model, on_tick=on_tick)

    return build


def _token(config: Config) -> str | None:
    """The bearer token from the environment variable named by service.token_env, if set."""

    name = config.settings.service.token_env
    return (os.environ.get(name) or None) if name else None


# -- the vault's background tasks ---------------------------------------------------------------
def vault_tasks(config: Config) -> list[BackgroundTask]:
    """The projector heartbeat and the core-file watcher, run beside the service."""
    from ..service.host import BackgroundTask

    return [BackgroundTask("projector", projector_loop(config)),
            BackgroundTask("watcher", watcher_loop(config))]


def projector_loop(config: Config) -> Callable[[threading.Event], None]:
    """Render one bounded batch (vault.objects_per_run objects) every
    service.projector_interval_s until stopped."""
    from ..service.host import log_event
    from ..vault.projector import ProjectionBusy

    interval = config.settings.service.projector_interval_s

    def run(stop: threading.Event) -> None:
        mem = Memory.open(config.home)
        try:
            while not stop.is_set():
                try:
                    result = mem.render_vault()
                except ProjectionBusy as exc:
                    log_event(log, "projection_busy", logging.DEBUG, error=str(exc))
                else:
                    if result.written or result.errors:
                        log_event(log, "projection", **result.summary())
                stop.wait(interval)
        finally:
            mem.close()

    return run


def watcher_loop(config: Config) -> Callable[[threading.Event], None]:
    """Run the vault watcher (core-file imports, hand-edit reports) until stopped."""
    from ..service.host import log_event
    from ..vault.watcher import VaultWatcher

    def on_batch(outcomes: list[WatchOutcome]) -> None:
        for o in outcomes:
            if o.action in ("own_write", "unchanged"):
                continue
            level = logging.WARNING if o.action in ("refused", "error") else logging.INFO
            log_event(log, "vault_" + o.action, level, path=o.path, object_id=o.object_id,
                      message=o.message)

    def run(stop: threading.Event) -> None:
        VaultWatcher.for_config(config, on_batch=on_batch).run(stop)

    return run


# -- host configs -------------------------------------------------------------------------------
def stdio_command() -> list[str]:
    """The absolute command that starts this memvault: the `memvault` script beside the
    running interpreter (a venv's bin/), else the interpreter itself running the CLI. Never a
    bare `memvault`: a host without the venv on its PATH fails with `spawn memvault ENOENT`."""
    script = Path(sys.executable).parent / "memvault"  # not resolved: a venv's python links out
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-c",
            "import sys; from memvault.cli import main; sys.exit(main())"]


def stdio_host_config(home: Path, background: bool,
                      space: str | None = None) -> dict[str, Any]:
    """The mcpServers entry that starts `memvault mcp` over stdio on `home` (bound to `space`
    when given)."""
    command = stdio_command()
    args = [*command[1:], "--home", str(home.absolute()), "mcp"]
    if space:
        args += ["--space", space]
    if background:
        args.append("--background")
    return {"mcpServers": {"memvault": {"command": command[0], "args": args}}}


def http_host_config(url: str, token: str | None) -> dict[str, Any]:
    """The mcpServers entry for a running `memvault serve` at `url` (streamable HTTP)."""
    entry: dict[str, Any] = {"type": "http", "url": url}
    if token:
        entry["headers"] = {"Authorization": f"Bearer {token}"}
    return {"mcpServers": {"memvault": entry}}


def _print_config(config: dict[str, Any], form: str = "json") -> None:
    """A host config as the host reads it: the mcpServers JSON (Claude Code, Cursor and most
    hosts) or, for Codex, the [mcp_servers.memvault] table of its config.toml."""
    click.echo(codex_toml(config) if form == "codex" else
               json.dumps(config, indent=2, ensure_ascii=False))


def codex_toml(config: dict[str, Any]) -> str:
    """The mcpServers entry as Codex's config.toml table: command and args (stdio), or url and
    http_headers (a running serve). JSON strings are valid TOML basic strings."""
    entry = config["mcpServers"]["memvault"]
    lines = ["[mcp_servers.memvault]"]
    if "command" in entry:
        lines.append(f"command = {json.dumps(entry['command'])}")
        lines.append(f"args = [{', '.join(json.dumps(a) for a in entry['args'])}]")
    else:
        lines.append(f"url = {json.dumps(entry['url'])}")
        headers = entry.get("headers", {})
        if headers:
            pairs = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in headers.items())
            lines.append(f"http_headers = {{ {pairs} }}")
    return "\n".join(lines)


def config_format_option(f: Any) -> Any:
    return click.option(
        "--config-format", "config_form", type=click.Choice(["json", "codex"]), default="json",
        show_default=True,
        help="With --print-config: json (mcpServers: Claude Code, Cursor, ...) or codex (a "
             "table for ~/.codex/config.toml).")(f)


def _serve_token(config: Config, tcp: bool, no_auth: bool) -> str | None:
    """The bearer token this serve requires: none with --no-auth; on TCP the variable's or else
    the home's own (made on first use); on a Unix socket only the variable's."""
    if no_auth:
        return None
    from ..service.auth import home_token

    return _token(config) or (home_token(config.home) if tcp else None)


# -- commands -----------------------------------------------------------------------------------
@click.command()
@click.option("--socket", "socket_path", type=click.Path(dir_okay=False), is_flag=False,
              flag_value="", default=None,
              help="Serve on a Unix socket instead of TCP: PATH, or alone service.socket in "
                   "the home (file permissions are its auth).")
@click.option("--host", default=None, help="Loopback address to serve on (127.0.0.1, the "
                                           "default, or ::1).")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="TCP port (default service.port = 8765; 0: any free port, logged at start).")
@click.option("--no-auth", is_flag=True,
              help="Serve TCP without a token: every local user can then read and write this "
                   "memory (a loud warning is logged).")
@click.option("--print-config", "print_config", is_flag=True,
              help="Print the host config (mcpServers entry: url and the Authorization header "
                   "with the token) and exit without serving.")
@click.option("--tls-cert", type=click.Path(dir_okay=False), default=None,
              help="Serve HTTPS with this certificate (PEM chain); with --tls-key.")
@click.option("--tls-key", type=click.Path(dir_okay=False), default=None,
              help="The certificate's private key (PEM, 0600).")
@click.option("--plain-http-off-loopback", "plain_http", is_flag=True,
              help="Allow plain HTTP on a non-loopback --host (a reverse proxy in front does "
                   "TLS); refused otherwise.")
@config_format_option
@model_option
@click.option("--worker/--no-worker", "with_worker", default=True, show_default=True,
              help="Run the worker here (--no-worker when a separate `memvault worker` runs).")
@click.option("--vault/--no-vault", "with_vault", default=True, show_default=True,
              help="Run the vault projector heartbeat and the core-file watcher here.")
@space_option
@click.option("--token-env", "token_envs", multiple=True, metavar="NAME=SPACE",
              help="One more bearer token, read from the environment variable NAME, whose "
                   "calls are bound to SPACE (repeat it: one token for each agent).")
@log_level_option
@click.pass_context
def serve(ctx: click.Context, socket_path: str | None, host: str | None, port: int | None,
          no_auth: bool, print_config: bool, tls_cert: str | None, tls_key: str | None,
          plain_http: bool, config_form: str, model: str | None, with_worker: bool,
          with_vault: bool, token_envs: tuple[str, ...], log_level: str) -> None:
    """Run the memory service: the agent's MCP API (streamable HTTP at /mcp on 127.0.0.1:8765,
    or on a Unix socket), the worker, the vault projector and watcher. SIGINT/SIGTERM stop it
    cleanly.

    TCP needs a bearer token (`Authorization: Bearer <token>`): $MEMVAULT_TOKEN (the variable
    named by service.token_env) when set, else the home's service.token, made on first start.
    `--print-config` prints the host config that carries it. With --space NAME every API call
    is bound to that space (it and shared are seen; appends are written there). Each
    `--token-env NAME=SPACE` adds a token (the value of $NAME) whose calls are bound to SPACE:
    several agents, one service, each seeing only its own space and shared.

    A --host off loopback (another device's clients) needs HTTPS (--tls-cert F --tls-key F)
    or, behind a reverse proxy that does TLS, --plain-http-off-loopback; never --no-auth.
    """
    if socket_path is not None and (host or port is not None or tls_cert or tls_key):
        raise click.UsageError("give --socket or --host/--port/--tls-*, not both")
    from ..service.host import (
        Listen,
        Service,
        check_host,
        check_tls_files,
        configure_logging,
        is_loopback,
    )

    config = _config(ctx)
    tcp = socket_path is None
    if tcp:
        tls = check_tls_files(tls_cert, tls_key)
        where = check_host(host or "127.0.0.1", tls, plain_http)
        remote = not is_loopback(where)
        if remote and no_auth:
            raise click.UsageError("--no-auth off loopback would open this memory to the "
                                   "network: give each client a token")
        listen = Listen(host=where, port=config.settings.service.port if port is None else port,
                        tls=tls, off_loopback=remote)
    else:
        default = Path(config.settings.service.socket).expanduser()
        path = Path(socket_path).expanduser() if socket_path else config.home / default
        listen = Listen(socket=path.absolute())
    token = _serve_token(config, tcp, no_auth)
    from ..service.auth import space_tokens_from_env

    space_tokens = space_tokens_from_env(token_envs, os.environ)
    if token and token in space_tokens:
        raise click.UsageError("a --token-env variable holds the service's own token: give "
                               "each agent a token of its own")
    if print_config:
        if not tcp:
            raise click.UsageError("a host config needs a URL: a Unix socket has none (use TCP, "
                                   "the default, or `memvault mcp --print-config` for stdio)")
        if listen.port == 0:
            raise click.UsageError("--print-config needs a fixed --port, not 0")
        _print_config(http_host_config(listen.url, token), config_form)
        return
    configure_logging(log_level)
    service = Service(
        config.home, listen,
        worker=_worker_factory(model) if with_worker else None,
        tasks=vault_tasks(config) if with_vault else [],
        bearer_token=token,
        pool_size=config.settings.service.api_connections,
        shutdown_grace_s=config.settings.service.shutdown_grace_s,
        space=ctx.meta.get(SPACE_KEY), space_tokens=space_tokens,
    )
    ctx.exit(service.run())


@click.command("mcp")
@space_option
@click.option("--background", is_flag=True,
              help="Also run the worker in this process (as `serve` does): compaction and "
                   "organizing; leave it off when `memvault serve` or `memvault worker` runs.")
@click.option("--print-config", "print_config", is_flag=True,
              help="Print the host config (mcpServers entry with absolute paths, --background "
                   "included) and exit.")
@config_format_option
@model_option
@log_level_option
@click.pass_context
def mcp_stdio(ctx: click.Context, background: bool, print_config: bool, config_form: str,
              model: str | None, log_level: str) -> None:
    """Serve the agent's MCP API on stdin/stdout, for agent hosts that start it.

    The vault is kept rendered batch by batch, and hand edits of the core files imported, while
    it runs (the projector takes a lock, so a `memvault serve` for the same home never renders
    at the same time). Logs go to stderr as JSON lines; stdout carries only the protocol.

    With --space NAME the agent is bound to that space: it sees that space and shared, its
    appends are written there, and no tool argument widens it.
    """
    config = _config(ctx)
    space = ctx.meta.get(SPACE_KEY)
    if print_config:
        _print_config(stdio_host_config(config.home, background=True, space=space), config_form)
        click.echo("(drop \"--background\" from args when `memvault serve` runs for this home)",
                   err=True)
        return
    from ..service.host import Listen, Service, configure_logging

    configure_logging(log_level)
    service = Service(
        config.home, Listen(stdio=True),
        worker=_worker_factory(model) if background else None,
        tasks=vault_tasks(config),
        pool_size=config.settings.service.api_connections,
        shutdown_grace_s=config.settings.service.shutdown_grace_s,
        space=space,
    )
    ctx.exit(service.run())
