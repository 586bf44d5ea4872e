"""The bundled sample memory that `memvault demo` (and the benches) load: events as JSONL, and a
starter AGENTS.md."""

from __future__ import annotations

from importlib import resources

from ..store.connection import get_state, set_state, write
from .memory import Memory

SAMPLE_MARK = "demo.sample_ingested"  # a state key: the sample is loaded once per home


def sample_lines() -> list[bytes]:
    """The bundled sample memory, one JSONL event a line."""
    data = resources.files("memvault") / "data" / "sample_events.jsonl"
    return data.read_bytes().splitlines()


def ingest_sample(mem: Memory) -> int:
    """Ingest the sample once per home; return how many events were added now."""
    if get_state(mem.conn, SAMPLE_MARK) is not None:
        return 0
    ids = mem.ingest(sample_lines()).new
    with write(mem.conn):
        set_state(mem.conn, SAMPLE_MARK, str(len(ids)))
    mem.sync_recall_index(max_events=None)
    if mem.read_core_file("AGENTS.md") is None:
        starter = (resources.files("memvault") / "data" / "AGENTS.starter.md").read_text("utf-8")
        mem.write_core_file("AGENTS.md", starter, origin="demo")
    return len(ids)
