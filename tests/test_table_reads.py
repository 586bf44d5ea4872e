"""Who reads each table: the feature that owns it, and a short list of readers of every table.

A feature owns its tables' reads as it owns their writes (tests/test_architecture.py,
TABLE_OWNERS): a module of another feature calls the owner's read and gets its typed rows, so
a column renamed is one feature's change and a space filter is applied where the rows are
read. The scan reads the SQL in a module's string literals (FROM and JOIN of a known table);
READ_EVERY_TABLE and READ_EXEMPT name the readers that must see other features' tables, each
with why; NOT_YET_MOVED lists the reads still to be moved behind their owner, and may only
shrink (an entry no longer needed fails too).
"""

from __future__ import annotations

import ast
import re

from test_architecture import TABLE_OWNERS, feature_of, source_files, sql_literals

# The tables whose rows carry a space (memvault.base.spaces): every owner read of them takes
# the reader's `spaces`, with no default, so a new reader cannot forget the filter.
SCOPED_TABLES = {"events", "hot_nodes", "objects"}
# Owner functions that read a scoped table without `spaces`, by what they serve: the writers
# themselves (a row checked or moved inside the write that already checked its space), and
# the lookups by id that the commit of a batch, a correction or the vault make after the
# claim or the caller chose what is visible.
UNSCOPED_OWNER_READS = {
    # writers
    "memvault.objects.records.save_object", "memvault.objects.records.move_object",
    "memvault.objects.records.forget_in_objects", "memvault.timeline.events.insert_events",
    "memvault.timeline.events.move_event", "memvault.timeline.hot.next_node_id",
    "memvault.timeline.hot.move_event_nodes", "memvault.timeline.hot.forget_in_heads",
    "memvault.timeline.keys.stored_keys", "memvault.timeline.queue.enqueue_departed",
    # by id, after what is visible was decided
    "memvault.objects.records.get_object", "memvault.objects.records.object_exists",
    "memvault.objects.records.object_rows", "memvault.objects.records.merged_ids",
    "memvault.objects.records.resolve_redirect", "memvault.objects.records.redirect_targets",
    "memvault.timeline.hot.nodes_by_id", "memvault.timeline.hot.check_run",
    "memvault.objects.records.object_spaces",
}

# Modules that read every table by what they are: the integrity check, export, restore (an
# export read back and checked), forget (every copy of a text), the migration runner and the
# one-off upgrade of a database of the original design.
READ_EVERY_TABLE = {
    "memvault.home.check", "memvault.home.export", "memvault.home.restore",
    "memvault.home.restore_rows", "memvault.home.forget", "memvault.store.migrations",
    "memvault.legacy.upgrade",
}
# Recall joins the full-text index with the rows it indexes, in the same statement: a hit's
# event or object, its evidence and relations, the turns around it, what masking must see,
# and the rebuild of the index counting what it indexes.
_RECALL_JOINS = {"events", "objects", "evidence", "relations", "hot_nodes"}
READ_EXEMPT: dict[str, set[str]] = {
    **{module: _RECALL_JOINS for module in (
        "memvault.recall.query", "memvault.recall.index", "memvault.recall.rank",
        "memvault.recall.context", "memvault.recall.masking", "memvault.recall.schema")},
    # the template m003's triggers expand: a relation's ends marked dirty as it changes
    "memvault.vault.schema": {"relations"},
    # the vault's books (projection, vault_dirty) held against the objects they project, in
    # one statement each: which pages are stale or gone. The projection's counterpart of
    # recall's index joins; what a page shows is read through the owners.
    "memvault.vault.bookkeeping": {"objects"},
    "memvault.vault.projector": {"objects"},
    # evidence counted as memory_evidence shows it: a link counts when its cited event's
    # space is seen, in the one statement that counts
    "memvault.objects.counts": {"events"},
}
# Reads still written against another feature's table; each goes behind its owner in turn.
NOT_YET_MOVED: dict[str, set[str]] = {}
_READ_SQL = re.compile(r"(?<![\w.])(?:FROM|JOIN)\s+[\"`\[]?(\w+)", re.IGNORECASE)


def sql_reads(source: str) -> list[tuple[int, str]]:
    """(line, table) of every known table a statement in `source` reads (FROM or JOIN)."""
    return sorted((line, m.group(1)) for line, text in sql_literals(source)
                  for m in _READ_SQL.finditer(text) if m.group(1) in TABLE_OWNERS)


def foreign_reads(module: str, source: str) -> dict[str, list[int]]:
    """Table -> lines, for the tables `module` reads that another feature owns and no list
    lets it read."""
    if module in READ_EVERY_TABLE:
        return {}
    found: dict[str, list[int]] = {}
    for line, table in sql_reads(source):
        if feature_of(TABLE_OWNERS[table]) == feature_of(module):
            continue
        if table in READ_EXEMPT.get(module, set()):
            continue
        found.setdefault(table, []).append(line)
    return found


def test_only_the_owning_feature_reads_a_table() -> None:
    offenders, moved = [], []
    for module, path in source_files().items():
        reads = foreign_reads(module, path.read_text(encoding="utf-8"))
        pending = NOT_YET_MOVED.get(module, set())
        offenders += [f"{module}:{lines[0]} reads {table}, owned by "
                      f"{feature_of(TABLE_OWNERS[table])}: call the owner's read"
                      for table, lines in sorted(reads.items()) if table not in pending]
        moved += [f"{module} no longer reads {table}: drop it from NOT_YET_MOVED"
                  for table in sorted(pending - set(reads))]
    assert offenders == [] and moved == []


def test_every_listed_reader_exists() -> None:
    modules = set(source_files())
    assert READ_EVERY_TABLE <= modules
    assert set(READ_EXEMPT) <= modules and set(NOT_YET_MOVED) <= modules


def test_the_read_check_sees_every_spelling_of_a_read() -> None:
    """The scanner on sample sources, among them the reads organize held of the timeline."""
    old_organize = (
        'def pending(conn, n):\n'
        '    """SELECT * FROM events, said in a docstring, is no read."""\n'
        '    return conn.execute(\n'
        '        "SELECT q.event_id, e.text FROM archive_queue q"\n'
        '        " JOIN events e ON e.id = q.event_id WHERE q.state = \'pending\'").fetchall()\n'
        'def cited(conn, marks):\n'
        '    return conn.execute(f"select event_id from  evidence WHERE x IN ({marks})")\n'
        '"CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1 FROM objects; END"\n'
        '"DELETE FROM from_clause_words"\n'
    )
    assert sql_reads(old_organize) == [(4, "archive_queue"), (4, "events"), (7, "evidence")]
    assert foreign_reads("memvault.jobs.modes.organize", old_organize) == {
        "archive_queue": [4], "events": [4], "evidence": [7]}
    assert foreign_reads("memvault.timeline.queue", old_organize) == {"evidence": [7]}
    assert foreign_reads("memvault.home.check", old_organize) == {}
    assert foreign_reads("memvault.recall.query", old_organize) == {"archive_queue": [4]}


def owner_reads_without_spaces(module: str, source: str) -> list[str]:
    """The public functions of `module` that read a scoped table it owns and take no
    `spaces`, or give it a default, in words."""
    tree = ast.parse(source)
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        body = ast.get_source_segment(source, node) or ""
        owned = {t for _, t in sql_reads(body)
                 if t in SCOPED_TABLES and feature_of(TABLE_OWNERS[t]) == feature_of(module)}
        name = f"{module}.{node.name}"
        if not owned or name in UNSCOPED_OWNER_READS:
            continue
        args = node.args
        positional = args.posonlyargs + args.args
        required = positional[:len(positional) - len(args.defaults)] + [
            a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
            if d is None]
        if "spaces" not in {a.arg for a in required}:
            found.append(f"{name} reads {', '.join(sorted(owned))} without a required spaces")
    return found


def test_every_owner_read_of_a_scoped_table_takes_spaces_without_default() -> None:
    offenders = [offence for module, path in source_files().items()
                 for offence in owner_reads_without_spaces(
                     module, path.read_text(encoding="utf-8"))]
    assert offenders == []
    assert {name.rsplit(".", 1)[0] for name in UNSCOPED_OWNER_READS} <= set(source_files())


def test_the_spaces_check_sees_a_default_and_a_missing_parameter() -> None:
    source = (
        'def listed(conn, spaces=EVERY_SPACE):\n    conn.execute("SELECT * FROM events")\n'
        'def unscoped(conn):\n    conn.execute("SELECT * FROM hot_nodes")\n'
        'def keyword(conn, *, spaces):\n    conn.execute("SELECT * FROM events")\n'
        'def positional(conn, spaces, n=1):\n    conn.execute("SELECT * FROM events")\n'
        'def _inner(conn):\n    conn.execute("SELECT * FROM events")\n'
        'def jobs(conn):\n    conn.execute("SELECT * FROM jobs")\n'
    )
    assert owner_reads_without_spaces("memvault.timeline.x", source) == [
        "memvault.timeline.x.listed reads events without a required spaces",
        "memvault.timeline.x.unscoped reads hot_nodes without a required spaces"]
    assert owner_reads_without_spaces("memvault.home.x", source) == []
