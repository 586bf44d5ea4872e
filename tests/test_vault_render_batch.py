"""The projector reads a chunk of objects in a few batched queries, and the
batched reads render exactly what the per-object reads (`objects.links.object_links`) do."""

from __future__ import annotations

import sqlite3

import pytest
from helpers import add_evidence
from memvault.store.connection import write
from memvault.vault.render import Renderer
from vault_support import open_memory, project, put_object, relate, tick


@pytest.fixture
def mem(tmp_path):
    with open_memory(tmp_path / "home") as memory:
        yield memory


def _selects(conn: sqlite3.Connection) -> list[str]:
    seen: list[str] = []
    conn.set_trace_callback(lambda sql: seen.append(sql) if sql.lstrip().upper()
                            .startswith("SELECT") else None)
    return seen


def test_a_full_render_reads_a_chunk_of_objects_at_once_not_one_by_one(mem) -> None:
    n = 150  # two chunks
    for i in range(n):
        put_object(mem, f"task:t{i:03d}", f"Task {i}", summary=f"s{i}")
    for i in range(n - 1):
        relate(mem, f"task:t{i:03d}", "depends_on", f"task:t{i + 1:03d}")
    seen = _selects(mem.conn)
    try:
        result = project(mem)
    finally:
        mem.conn.set_trace_callback(None)
    assert result.objects >= n and not result.errors
    # per object it was ~6 reads (mark, recorded files x2, row, links x2); now a few a chunk
    assert len(seen) < n // 4, f"{len(seen)} SELECTs for {n} objects"


def _tricky_memory(mem) -> list[str]:
    """Objects whose links exercise every ordering and display rule."""
    ids = ["person:a", "person:b", "task:c", "project:d"]
    for oid in ids:
        put_object(mem, oid, f"Name | {oid} [x]")
    relate(mem, "person:a", "knows", "person:b")
    relate(mem, "person:b", "knows", "person:a")
    relate(mem, "person:a", "assigned_to", "task:c")
    relate(mem, "person:a", "about", "task:c")
    relate(mem, "task:c", "member_of", "project:d")
    relate(mem, "person:a", "knows", "person:a")  # a self-relation shows both ways
    with write(mem.conn):
        mem.conn.execute("UPDATE relations SET legacy = 1 WHERE label = 'assigned_to'")
        mem.conn.execute("UPDATE relations SET archived = 1 WHERE label = 'member_of'")
    now = tick(mem)
    events = [r[0] for r in mem.conn.execute("SELECT id FROM events ORDER BY id")]
    with write(mem.conn):
        for event in reversed(events):
            for start in (5, 0):
                add_evidence(mem.conn, "person:a", event, start, start + 3, now)
    put_object(mem, "person:b", redirect_to="person:a")  # merged: links to its survivor
    return ids


def test_batched_reads_render_the_same_bytes_as_per_object_reads(mem) -> None:
    from memvault import NewEvent

    mem.append_events([NewEvent("first event", tick(mem).isoformat()),
                       NewEvent("second event", tick(mem).isoformat())])
    ids = _tricky_memory(mem)
    for max_links in (1, 2, 50):
        renderer = Renderer(mem.conn, max_links)
        one_by_one = {oid: renderer.render_owner(oid) for oid in ids}
        renderer.preload(ids + ["person:gone"])
        batched = {oid: renderer.render_owner(oid) for oid in ids}
        assert renderer.render_owner("person:gone") is None
        renderer.preload([])
        for oid in ids:
            assert batched[oid] is not None and one_by_one[oid] is not None
            assert batched[oid].files == one_by_one[oid].files, (oid, max_links)
            assert batched[oid].pages == one_by_one[oid].pages


def test_an_object_file_renders_in_one_template_context(mem, monkeypatch) -> None:
    """No `{% include %}` in the object template (each costs a second context a
    file), and the render context is the variables themselves, not a copy with the globals."""
    import jinja2.environment

    put_object(mem, "person:a", "Alice")
    put_object(mem, "person:b", "Bob")
    relate(mem, "person:a", "knows", "person:b")
    contexts: list[bool] = []
    real = jinja2.environment.new_context

    def counting(*args, **kwargs):
        contexts.append(kwargs.get("shared", args[4] if len(args) > 4 else False))
        return real(*args, **kwargs)

    monkeypatch.setattr(jinja2.environment, "new_context", counting)
    from memvault.objects.records import ObjectRecord

    renderer = Renderer(mem.conn)
    row = mem.conn.execute("SELECT * FROM objects WHERE id = 'person:a'").fetchone()
    rendered = renderer.render_object(ObjectRecord.from_row(row))
    assert "## Relations (1)" in rendered.files[rendered.main_path].decode()
    assert contexts == [True]


def test_relations_and_sources_are_unpacked_not_looked_up(mem, monkeypatch) -> None:
    """The templates unpack each relation and source in their `for`, rather than
    reading `rel.label`, `src.event_id`... through jinja2's getattr (four calls a link)."""
    put_object(mem, "person:a", "Alice")
    put_object(mem, "person:b", "Bob")
    relate(mem, "person:a", "knows", "person:b")
    event = mem.append_event("Alice met Bob", occurred_at="2026-10-05T10:00:00+08:00")
    with write(mem.conn):
        add_evidence(mem.conn, "person:a", event, 0, 5, tick(mem))
    renderer = Renderer(mem.conn)
    looked_up: list[str] = []
    real = renderer.env.getattr

    def counting(obj, attribute):
        looked_up.append(attribute)
        return real(obj, attribute)

    monkeypatch.setattr(renderer.env, "getattr", counting)
    text = renderer.render_owner("person:a").files["objects/person/" + _stem("person:a")]
    assert "- knows → [[" in text.decode() and "· event 1 · chars 0–5" in text.decode()
    assert looked_up == []


def _stem(object_id: str) -> str:
    from memvault.vault.paths import object_hash

    return object_hash(object_id) + ".md"


def test_object_and_continuation_pages_keep_their_section_spacing(mem) -> None:
    """The Relations and Sources sections come from one macro (templates/links.md.j2) in both
    the main file and its continuation pages: each section is followed by exactly one blank
    line, never two, on every page."""
    from memvault import NewEvent

    mem.append_events([NewEvent("first event", tick(mem).isoformat())])
    ids = _tricky_memory(mem)
    renderer = Renderer(mem.conn, 1)
    pages = [data.decode() for oid in ids if (owner := renderer.render_owner(oid))
             for data in owner.files.values()]
    continuations = [page for page in pages if " · page " in page]
    assert continuations and len(pages) > len(continuations)
    for page in pages:
        assert "\n\n\n" not in page
        assert "## Relations (" in page and "\n\n## Sources (" in page
    for page in continuations:
        assert "\n\n---\n*Projected from memvault" in page
