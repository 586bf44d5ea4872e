"""`memvault demo`: the main job on the built-in offline model, on the bundled sample."""

from __future__ import annotations

from importlib import resources

import click

from ..store import get_state, set_state, write
from . import main, open_memory
from .inspect import console, render_status


def sample_lines() -> list[bytes]:
    """The bundled sample memory, one JSONL event a line."""
    data = resources.files("engine") / "data" / "sample_events.jsonl"
    return data.read_bytes().splitlines()


@main.command()
@click.pass_context
def demo(ctx: click.Context) -> None:
    """Ingest the bundled sample memory (once per home) and print status."""
    with open_memory(ctx) as mem:
        if get_state(mem.conn, "demo.sample_ingested") is None:
            ids = mem.ingest_jsonl(sample_lines())
            with write(mem.conn):
                set_state(mem.conn, "demo.sample_ingested", str(len(ids)))
            console.print(f"ingested {len(ids)} sample events into {mem.config.home}")
        else:
            console.print("sample already ingested in this home")
        render_status(mem.status())
