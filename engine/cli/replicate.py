"""`memvault replicate [URL]`: the home's memory.db replicated continuously by Litestream, in
the foreground like `serve`; and the parts other commands borrow: status's replica lines,
forget's pause and fresh snapshot, `restore --from-replica`. The engine side is
engine/replica/; docs/devices.md is the guide."""

from __future__ import annotations

import signal
import threading
from dataclasses import asdict
from types import FrameType
from typing import Any

import click

from ..base.errors import InputError
from .app import LazyConsole, escape, open_memory

console = LazyConsole(highlight=False, soft_wrap=True, emoji=False)


def configured_target(mem: Any, url: str | None, key_path: str | None = None) -> Any:
    """The replica named by URL, else by memvault.toml's [replica] url (an sftp:// one with
    `key_path`, else [replica] sftp_key_path); InputError if none."""
    from ..replica.target import parse_target

    settings = mem.config.settings.replica
    chosen = url or settings.url
    if not chosen:
        raise InputError("no replica: give URL (memvault replicate file:///mnt/nas/memvault) "
                         "or set [replica] url in memvault.toml")
    key = (key_path or settings.sftp_key_path) if chosen.startswith("sftp:") else ""
    return parse_target(chosen, key)


@click.command()
@click.argument("url", required=False)
@click.option("--take-over", is_flag=True,
              help="Replicate into a replica another home wrote (that home must be gone).")
@click.pass_context
def replicate(ctx: click.Context, url: str | None, take_over: bool) -> None:
    """Replicate the home continuously by Litestream to URL (or [replica] url) until stopped.

    URL: file:///folder, sftp://user@host/path or s3://bucket/path; Ctrl-C or SIGTERM stops.
    Credentials come from the environment, never the URL (the config written to the home's
    replica/ folder is 0600 and holds none). One writer a replica: one a home writes is
    refused to another home unless --take-over. `memvault status` shows the replica, its last
    sync and lag; `memvault restore --from-replica URL` makes a new home from it.
    """
    from ..replica.litestream import binary_version, find_binary
    from ..replica.owner import claim
    from ..replica.supervisor import hold_lock, supervise

    with open_memory(ctx) as mem:
        target = configured_target(mem, url)
        binary = find_binary()
        version = binary_version(binary)
        home, db_path, clock = mem.config.home, mem.config.db_path, mem.clock
    lock = hold_lock(home)
    claim(home, target, clock.now(), take_over)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    click.echo(f"replicating {db_path} to {target.url} (Litestream {version}); Ctrl-C stops",
               err=True)
    try:
        final = supervise(home, db_path, target, binary, clock, stop,
                          lambda line: click.echo(line, err=True))
    finally:
        lock.close()
    click.echo(final.reason or "replication stopped", err=True)
    if not stop.is_set():
        ctx.exit(1)


def replica_status_lines(home: Any, now: Any) -> list[str]:
    """status's lines about the replica: none for a home never replicated."""
    from ..replica.state import read_state, view_state

    state = read_state(home)
    if state is None:
        return []
    view = view_state(state, now)
    lag = "-" if view.lag_s is None else f"{view.lag_s:.1f} s"
    line = (f"replica: {escape(view.url)}  {view.phase}  last sync: {view.last_sync_at or '-'}"
            f"  lag: {lag}")
    if not view.running:
        line = f"[red]{line}[/red]"
    return [line] + ([f"  {escape(view.note)}"] if view.note else [])


def replica_status(home: Any, now: Any) -> dict[str, Any] | None:
    """status --json's replica entry (engine/replica/state.py)."""
    from ..replica.state import read_state, view_state

    state = read_state(home)
    return None if state is None else asdict(view_state(state, now))


def print_status(home: Any, now: Any) -> None:
    """Print status's replica lines (none for a home never replicated)."""
    for line in replica_status_lines(home, now):
        console.print(line)


def restore_replica(mem: Any, url: str, timestamp: str | None,
                    key_path: str | None = None) -> dict[str, Any]:
    """`restore --from-replica`: the home filled from the replica, its vault rendered afresh."""
    from ..replica.litestream import find_binary
    from ..replica.restore import restore_from_replica
    report = restore_from_replica(mem, configured_target(mem, url, key_path), find_binary(),
                                  timestamp)
    report["vault"] = mem.render_vault(all=True).summary()
    return report


class ForgetReplica:
    """A forget's part in the replica: replication paused, Litestream's local copies removed
    before the home is scanned, the replica emptied and a fresh snapshot shipped after."""

    def __init__(self, mem: Any) -> None:
        from ..replica.state import read_state

        self.mem = mem
        state = read_state(mem.config.home)
        url = state.url if state is not None else mem.config.settings.replica.url
        self.target = None
        if url:
            self.target = configured_target(mem, url)

    def dry_run_note(self) -> dict[str, Any] | None:
        """What a dry run says about the replica (None: the home has none)."""
        if self.target is None:
            return None
        what = ("forget --yes empties it and ships a fresh snapshot" if self.target.local else
                "forget --yes ships a fresh snapshot; Litestream's retention removes the older "
                "data (empty it by hand to remove it at once)")
        return {"url": self.target.url, "note": f"the replica may hold the text: {what}"}

    def forget(self, run: Any, text: str) -> dict[str, Any]:
        """Run the forget of `text` (`run()`, returning its report) with replication paused;
        a file:// replica is then searched for the text too."""
        if self.target is None:
            report: dict[str, Any] = run()
            return report
        from ..home.forget import files_holding
        from ..replica.litestream import drop_local_state, find_binary
        from ..replica.pause import renew_replica, replication_paused

        home, db_path = self.mem.config.home, self.mem.config.db_path
        binary = find_binary()
        with replication_paused(home, self.mem.clock.now(), "forget rewrites the database"):
            drop_local_state(db_path)
            report = run()
            renewal = renew_replica(home, db_path, self.target, binary)
        entry = asdict(renewal)
        if self.target.path is not None:
            left = [str(p) for p in files_holding(self.target.path, text)]
            entry["residue"] = left
            report["residue"] = report["residue"] + [f"replica: {p}" for p in left]
        report["replica"] = entry
        return report
