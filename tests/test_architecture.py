"""The shape of the code: features, what each may use, who writes each table, one import name.

The engine (the repository folder engine/, installed as `memvault`) and the vault (vault/,
installed as `memvault.vault`) are grouped by feature: `memvault.<feature>.…`. USES says which
features each one may import; every import counts, a function-level (lazy) one too, and no
import circle is allowed between modules. Each table has one owner module, the only code whose
SQL writes it (TABLE_OWNERS); everything else calls the owner. docs/architecture.md draws the
same map.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import memvault

ENGINE = Path(memvault.__file__).resolve().parent
REPO = ENGINE.parent
VAULT = REPO / "vault"

# Which features each feature may import (besides itself). A feature is memvault.<name>; the
# vault (memvault.vault) is "vault", memvault/__init__.py is "root".
_KERNEL = {"base", "store"}
USES: dict[str, set[str]] = {
    "base": set(),                     # clock, errors, tokens, settings, home trust, display
    "store": {"base"},                 # SQLite plumbing: connection, migration registry
    "secrets": {"base"},               # the secret detector
    "dates": {"base"},                 # the one date reader: words, calendar, patterns
    "timeline": _KERNEL,               # events, keys, ingest, the hot timeline, archive queue
    "objects": _KERNEL | {"secrets", "timeline"},  # objects, relations, evidence, core files
    "recall": _KERNEL | {"secrets", "timeline", "objects", "dates"},  # index, terms, ranking
    "vault": _KERNEL | {"secrets", "objects"},  # the Markdown projection, the core-file watcher
    "legacy": _KERNEL | {"timeline", "objects"},  # a database of the original design
    "models": {"base", "secrets", "objects", "dates"},  # providers behind one protocol
    "jobs": _KERNEL | {"secrets", "timeline", "objects", "recall", "models"},  # jobs and modes
    "home": _KERNEL | {"secrets", "timeline", "objects", "recall", "legacy", "models", "jobs",
                       "vault"},       # Memory: one home as a library
    "service": {"base", "secrets", "timeline", "jobs", "home"},  # MCP tools, the server
    "replica": _KERNEL | {"home"},     # Litestream replication, a home from a replica
    "root": {"base", "timeline", "home"},  # memvault/__init__.py: the public API
    "cli": {"base", "store", "secrets", "timeline", "objects", "recall", "vault", "legacy",
            "models", "jobs", "home", "service", "replica"},  # the composition root
}
# The one migration registry lists every feature's migrations, so it imports the module each
# feature keeps them in; it sits in home/, above the features (store/ only runs a registry it
# is handed). The schema modules import only the kernel and their own feature.
REGISTRY = "memvault.home.migrations"
SCHEMA_MODULES = {"memvault.timeline.schema", "memvault.objects.schema",
                  "memvault.jobs.schema", "memvault.recall.schema", "memvault.vault.schema",
                  "memvault.home.schema"}

# Each table's one writer: the only module whose SQL may INSERT, UPDATE, DELETE or REPLACE its
# rows; every other module calls the owner's functions. docs/architecture.md draws the same map.
_RECORDS, _VAULT_BOOKS = "memvault.objects.records", "memvault.vault.bookkeeping"
TABLE_OWNERS: dict[str, str] = {
    "event_moves": "memvault.timeline.events",
    "events": "memvault.timeline.events",
    "hot_nodes": "memvault.timeline.hot",
    "archive_queue": "memvault.timeline.queue",
    "objects": _RECORDS, "object_versions": _RECORDS, "relations": _RECORDS,
    "evidence": _RECORDS,
    "object_names": "memvault.objects.schema",  # kept by m004's triggers only
    "core_files": "memvault.objects.corefiles",
    "corrections": "memvault.objects.corrections",
    "deep_snapshot": "memvault.jobs.modes.deep",
    "jobs": "memvault.jobs.records", "batches": "memvault.jobs.records",
    "receipts": "memvault.jobs.records",
    "leases": "memvault.jobs.leases",
    "model_calls": "memvault.jobs.ledger",
    "forget_audit": "memvault.home.forget_audit",
    "state": "memvault.store.connection",
    "_migrations": "memvault.store.migrations",
    **dict.fromkeys(("recall_events_fts", "recall_objects_fts", "recall_object_keys",
                     "recall_dirty", "recall_vocab", "recall_state", "recall_objects_vocab"),
                    "memvault.recall.index"),
    **dict.fromkeys(("projection", "projection_pages", "projection_errors", "vault_reports",
                     "vault_dirty", "projection_intents"), _VAULT_BOOKS),
}
# Modules that may write any table: the migration registry (m001 and the runner's record), and
# the two that load whole tables by name: the one-off conversion of a database of the original
# design, and restore (an export read back into an empty home).
WRITE_EXEMPT = {"memvault.store.migrations", "memvault.legacy.upgrade", "memvault.home.restore"}
# Besides those, schema code elsewhere: a string inside a migration function (m002_...) or one
# that creates a trigger; and this template, which m003's triggers expand (part of their text).
SCHEMA_WRITES = {("memvault.vault.schema", "vault_dirty")}
# Functions that write whatever table their caller names: each call must name, as a literal, a
# table its caller owns.
TABLE_ARGUMENT_WRITERS = {"forget_in_rows": 2}  # the table is the third argument
# Calls of those that name no literal table, each with why it writes nothing it does not own.
TABLE_ARGUMENT_EXEMPT = {
    ("memvault.home.forget", "copies_left"): "a dry run over every table: it only counts",
}
_WRITE_SQL = re.compile(
    r"(?<!\w)(?<!DO )(?<!BEFORE )(?<!AFTER )(?<!INSTEAD OF )"
    r"(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)"
    r"\s+[\"`\[]?([\w{}]+)", re.IGNORECASE)
_MIGRATION_FUNCTION = re.compile(r"m\d{3}_\w+")


def source_files() -> dict[str, Path]:
    """Every module of the installed package, by its dotted name under `memvault`."""
    files: dict[str, Path] = {}
    for top, prefix in ((ENGINE, "memvault"), (VAULT, "memvault.vault")):
        for path in sorted(top.rglob("*.py")):
            parts = list(path.relative_to(top).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join([prefix, *parts])] = path
    return files


def package_of(module: str, path: Path) -> list[str]:
    """The package a module's relative imports start from."""
    parts = module.split(".")
    return parts if path.name == "__init__.py" else parts[:-1]


def _type_only(tree: ast.AST) -> set[int]:
    """The nodes inside `if TYPE_CHECKING:` blocks: imports made for type hints only."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(inner) for part in node.body for inner in ast.walk(part))
    return inside


def imported_modules(source: str, package: list[str],
                     modules: set[str] | frozenset[str] | None = None,
                     runtime_only: bool = False) -> list[tuple[int, str]]:
    """Absolute names of every module `source` imports (relative imports resolved). Without
    `modules` (the names that are modules), `from X import name` counts as both X and X.name.
    `runtime_only`: leave out imports made for type hints only (under TYPE_CHECKING)."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(source)
    skipped = _type_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            # `from X import a` imports X.a when that is a module, else X (for its name a).
            subs = [f"{prefix}.{alias.name}" for alias in node.names]
            if modules is None:
                found += [(node.lineno, prefix)] + [(node.lineno, sub) for sub in subs]
            else:
                found += [(node.lineno, sub if sub in modules else prefix) for sub in subs]
        elif isinstance(node, ast.Call) and node.args and getattr(
            node.func, "attr", getattr(node.func, "id", "")
        ) in {"import_module", "__import__"}:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value))
    return found


def feature_of(module: str) -> str:
    """The feature a module belongs to: memvault.X.* -> X; memvault itself -> root."""
    parts = module.split(".")
    if len(parts) == 1:
        return "root"
    return parts[1]


def import_graph(runtime_only: bool = False) -> dict[str, dict[str, int]]:
    """module -> {imported memvault module: first line}, for modules that exist; with
    `runtime_only`, without the imports made for type hints only."""
    files = source_files()
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        edges: dict[str, int] = {}
        for line, name in imported_modules(path.read_text(encoding="utf-8"),
                                           package_of(module, path), set(files),
                                           runtime_only):
            if name in files and name != module:
                edges.setdefault(name, line)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import circle, as a closed path of module names, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_every_feature_has_a_row() -> None:
    features = {feature_of(module) for module in source_files()}
    assert features <= set(USES), f"features with no row in USES: {sorted(features - set(USES))}"
    assert all(used <= set(USES) for used in USES.values())


def allowed_import(module: str, target: str) -> bool:
    """May `module` import `target`? Its own feature and the features USES gives it; a schema
    module only the kernel and its feature."""
    here, there = feature_of(module), feature_of(target)
    if module in SCHEMA_MODULES:
        return here == there or there == "base" or target == "memvault.store.script"
    return here == there or there in USES[here]


def test_each_feature_imports_only_what_it_may_use() -> None:
    offenders = [f"{module}:{line} ({feature_of(module)}) imports {target} ({feature_of(target)})"
                 for module, edges in import_graph().items()
                 for target, line in edges.items() if not allowed_import(module, target)]
    assert offenders == []


def test_the_feature_packages_import_without_a_circle() -> None:
    """No feature package imports, at a module's top, one that imports it back: the migration
    registry that lists every feature's schema sits above them (home/migrations.py)."""
    packages: dict[str, dict[str, int]] = {}
    for module, edges in import_graph(runtime_only=True).items():
        for target, line in edges.items():
            if feature_of(target) != feature_of(module):
                packages.setdefault(feature_of(module), {})[feature_of(target)] = line
    assert find_cycle(packages) is None
    assert REGISTRY in source_files()


def test_there_is_no_import_circle() -> None:
    """No module imports, when it runs, a module that imports it back (a type hint's import
    under TYPE_CHECKING runs only for the type checker, which reads circles fine)."""
    assert find_cycle(import_graph(runtime_only=True)) is None


# Modules that may import inside a function, and why; everywhere else imports stand at the top.
# Figures: cumulative `python -X importtime` on top of `import memvault` (c33d67e+, 2 cores).
LAZY_IMPORTS: dict[str, str] = {
    "memvault.cli": "a command loads what it runs when it runs, so `import memvault.cli` and a "
                    "read command stay light (tests/test_cli_first_hour.py; "
                    "bench/cli_startup.py)",
    "memvault.home.memory": "`import memvault` stays light: jobs.worker 315 ms and "
                            "objects.corrections 186 ms (pydantic), home.runs 266 ms (jinja2), "
                            "recall.masking 34 ms, jobs.requests 24 ms, recall.query 12 ms",
    "memvault.home.capture": "the secret detector only to redact a failure's log line: a "
                             "hook that stores its turns never loads it (bench/cli_startup.py)",
    "memvault.base.config": "pydantic-core (about 25 ms) checks memvault.toml only when the "
                            "file sets a value; a new home's file sets none; tempfile and "
                            "zoneinfo (about 4 ms) when a file is written or a zone set "
                            "(bench/cli_startup.py)",
    "memvault.recall.masking": "hashlib (OpenSSL, about 4 ms) only to make a clean mark: "
                               "`memvault find` and the other reads never load it",
    "memvault.home.reveals": "logging (about 2.5 ms) only when the reveal log cannot be "
                             "written",
    "memvault.models": "third-party libraries of one provider: openai, jieba (a second), "
                       "pypinyin, loaded when that provider runs",
    "memvault.jobs.worker": "`memvault.models` looked up when a provider is built, so a test "
                            "that wraps make_provider is the one used",
    "memvault.service.client": "the mcp SDK's client (about a second) for `open_client` only",
    "memvault.base.home_trust": "pwd: POSIX only",
    "memvault.vault.files": "fcntl: POSIX only, behind an ImportError guard",
    "memvault.service.stdio_frames": "fcntl: POSIX only, behind a platform check",
}


def lazy_imports(source: str) -> list[int]:
    """Lines of the imports made inside a function (TYPE_CHECKING blocks are module level)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines += [inner.lineno for inner in ast.walk(node)
                      if isinstance(inner, (ast.Import, ast.ImportFrom))]
    return sorted(set(lines))


def test_imports_stand_at_the_top_unless_start_up_needs_them_late() -> None:
    offenders = [f"{module}:{line}" for module, path in source_files().items()
                 if not any(module == m or module.startswith(m + ".") for m in LAZY_IMPORTS)
                 for line in lazy_imports(path.read_text(encoding="utf-8"))]
    assert offenders == []
    assert lazy_imports("import a\ndef f():\n    import b\n    from c import d\n") == [3, 4]


def test_nothing_imports_the_repository_folders_by_their_own_names() -> None:
    """`engine` and `vault` are folder names only; code imports `memvault` (the installed name),
    or a stray second copy of every module would load from the checkout."""
    files = {path: package_of(module, path) for module, path in source_files().items()}
    for folder in (REPO / "tests", REPO / "bench"):
        files.update({path: [folder.name] for path in sorted(folder.rglob("*.py"))})
    offenders = [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for path, package in files.items()
        for line, name in imported_modules(path.read_text(encoding="utf-8"), package)
        if name.split(".")[0] in {"engine", "vault"}
    ]
    assert offenders == []


def test_the_checkers_see_every_spelling() -> None:
    cases = ["import memvault.cli", "import memvault.cli.app as r", "from memvault import cli",
             "from memvault.cli.app import x",
             "import importlib\nimportlib.import_module('memvault.cli')",
             "__import__('memvault.cli.x')", "def f():\n    from memvault.cli import app\n"]
    for source in cases:
        names = [n for _, n in imported_modules(source, ["memvault", "store"])]
        assert any(n.startswith("memvault.cli") for n in names), source
    names = [n for _, n in imported_modules("from .. import base\nfrom ..cli.app import y\n",
                                            ["memvault", "store"])]
    assert "memvault.base" in names and "memvault.cli.app" in names
    assert feature_of("memvault") == "root" and feature_of("memvault.vault.render") == "vault"
    assert allowed_import("memvault.home.migrations", "memvault.vault.schema")
    assert not allowed_import("memvault.store.migrations", "memvault.vault.schema")
    assert not allowed_import("memvault.vault.schema", "memvault.objects.records")
    assert not allowed_import("memvault.timeline.events", "memvault.objects.records")
    assert find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}, "c": {"a": 1}}) is None
    hinted = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from memvault.cli import app\n")
    store = ["memvault", "store"]
    assert [n for _, n in imported_modules(hinted, store)][-1] == "memvault.cli.app"
    assert imported_modules(hinted, store, runtime_only=True) == [
        (1, "typing"), (1, "typing.TYPE_CHECKING")]
    modules = {"memvault.cli", "memvault.cli.app"}
    assert imported_modules("from . import app\n", ["memvault", "cli"], modules) == [
        (1, "memvault.cli.app")]
    assert imported_modules("from .app import main\n", ["memvault", "cli"], modules) == [
        (1, "memvault.cli.app")]
    assert imported_modules("from . import main\n", ["memvault", "cli"], modules) == [
        (1, "memvault.cli")]


def sql_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal of `source` that may hold SQL: an f-string read
    whole (its placeholders as "{}"); docstrings, trigger definitions and strings inside a
    migration function (m002_...) left out."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))  # a docstring
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                _MIGRATION_FUNCTION.fullmatch(node.name):
            skipped.update(id(inner) for inner in ast.walk(node))
        if isinstance(node, ast.JoinedStr):  # read whole, not part by part
            skipped.update(id(part) for part in node.values)
    texts = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(str(part.value) if isinstance(part, ast.Constant) else "{}"
                           for part in node.values)
        else:
            continue
        if "CREATE TRIGGER" not in text.upper():
            texts.append((node.lineno, text))
    return texts


def sql_writes(source: str) -> list[tuple[int, str]]:
    """(line, table) of every write statement in the string literals of `source` (as
    `sql_literals` gives them): INSERT / REPLACE INTO, UPDATE, DELETE FROM, across lines and
    f-strings; a table named by a placeholder (`{table}`) is reported as "{}". Neither the
    UPDATE of an upsert (ON CONFLICT DO UPDATE) nor a trigger's event (AFTER UPDATE ON)
    counts."""
    return [(line, "{}" if "{" in m.group(1) else m.group(1))
            for line, text in sql_literals(source) for m in _WRITE_SQL.finditer(text)]


def _enclosing_functions(tree: ast.AST) -> dict[int, str]:
    """id(node) -> the name of the outermost function it lies in."""
    inside: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in inside:
            inside.update((id(inner), node.name) for inner in ast.walk(node))
    return inside


def table_argument_writes(module: str, source: str) -> list[str]:
    """Calls of a function that writes the table its caller names (forget_in_rows) that name
    a table the caller does not own, or no literal table at all, in words."""
    tree = ast.parse(source)
    inside = _enclosing_functions(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        if name not in TABLE_ARGUMENT_WRITERS:
            continue
        position = TABLE_ARGUMENT_WRITERS[name]
        arg = next((k.value for k in node.keywords if k.arg == "table"),
                   node.args[position] if len(node.args) > position else None)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if TABLE_OWNERS.get(arg.value) != module:
                found.append(f"{module}:{node.lineno} has {name} write {arg.value}, whose "
                             f"owner is {TABLE_OWNERS.get(arg.value)}")
        elif (module, inside.get(id(node), "")) not in TABLE_ARGUMENT_EXEMPT:
            found.append(f"{module}:{node.lineno} has {name} write a table it does not name")
    return found


def foreign_writes(module: str, source: str) -> list[str]:
    """The writes in `source` (module `module`) to a table it does not own, in words."""
    if module in WRITE_EXEMPT:
        return []
    # sqlite-utils writes with method calls (table.insert(...)), not SQL text this scan reads;
    # it is a test dependency only, and the package must not start writing through it.
    found = [f"{module}:{line} imports sqlite_utils, whose writes the owner check cannot see"
             for line in sorted({line for line, name in imported_modules(source, module.split("."))
                                 if name.split(".")[0] == "sqlite_utils"})]
    owns_tables = module in set(TABLE_OWNERS.values())
    writes_named_tables = module == "memvault.store.forget_rows"  # each call checked, below
    for line, table in sql_writes(source):
        if table == "{}":
            if not (owns_tables or writes_named_tables):
                found.append(f"{module}:{line} writes a table named by a placeholder, and owns "
                             "no table")
            continue
        owner = TABLE_OWNERS.get(table)
        if owner == module or (module, table) in SCHEMA_WRITES:
            continue
        found.append(f"{module}:{line} writes {table}, whose owner is {owner}" if owner else
                     f"{module}:{line} writes {table}, which has no owner in TABLE_OWNERS")
    return found + table_argument_writes(module, source)


def test_only_the_owner_writes_a_table() -> None:
    offenders = [offence for module, path in source_files().items()
                 for offence in foreign_writes(module, path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_every_table_has_one_owner(tmp_path: Path) -> None:
    """Every table of a fresh home is in TABLE_OWNERS (FTS5's own shadow tables aside), and
    each owner is a module that exists."""
    from memvault.home.migrations import open_home_db

    conn = open_home_db(tmp_path / "memory.db")
    try:
        tables = {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    finally:
        conn.close()
    fts = {t for t in tables if t.endswith("_fts")}
    tables -= {t for t in tables for f in fts if t.startswith(f + "_")}
    assert tables == set(TABLE_OWNERS)
    assert set(TABLE_OWNERS.values()) <= set(source_files())


def test_the_owner_check_sees_every_spelling_of_a_write() -> None:
    """The scanner on sample sources, among them the SQL two modes held before the archive
    queue had one owner."""
    old_compact = (
        'def enqueue_departed(conn):\n'
        '    """Queue each event; UPDATE archive_queue is said here, in a docstring."""\n'
        '    conn.execute(\n'
        '        "INSERT OR IGNORE INTO archive_queue (event_id, state, enqueued_at, updated_at,"\n'
        '        " enqueued_by) SELECT value, \'pending\', ?, ?, ? FROM json_each(?)")\n'
    )
    assert foreign_writes("memvault.jobs.modes.compact", old_compact) == [
        "memvault.jobs.modes.compact:4 writes archive_queue,"
        " whose owner is memvault.timeline.queue"]
    assert foreign_writes("memvault.timeline.queue", old_compact) == []
    old_organize = (
        'def on_terminal(conn, marks):\n'
        '    conn.execute("""\n        UPDATE archive_queue\n        SET state = \'blocked\'""")\n'
        '    conn.execute(f"DELETE FROM hot_nodes WHERE id IN ({marks})")\n'
        '    conn.execute("replace into evidence VALUES (1)")\n'
    )
    assert [table for _, table in sql_writes(old_organize)] == [
        "archive_queue", "hot_nodes", "evidence"]
    assert len(foreign_writes("memvault.jobs.modes.organize", old_organize)) == 3
    not_writes = (
        'import sqlite3\n'
        '"INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = 1"\n'
        '"CREATE TRIGGER t AFTER INSERT ON x BEGIN INSERT INTO recall_dirty VALUES (1); END"\n'
        'def m011_new(conn):\n    conn.execute("UPDATE objects SET version = 1")\n'
        'def helper(conn, table):\n    conn.execute(f"UPDATE {table} SET x = 1")\n'
        '"SELECT id FROM events WHERE kind = \'update\'"\n'
    )
    # the upsert's INSERT, and a placeholder table
    assert sql_writes(not_writes) == [(2, "state"), (7, "{}")]
    assert foreign_writes("memvault.jobs.records", 'x = "DELETE FROM shadow_table"') == [
        "memvault.jobs.records:1 writes shadow_table, which has no owner in TABLE_OWNERS"]
    placeholder = 'def f(conn, table):\n    conn.execute(f"DELETE FROM {table}")\n'
    assert foreign_writes("memvault.home.status", placeholder) == [
        "memvault.home.status:2 writes a table named by a placeholder, and owns no table"]
    assert foreign_writes("memvault.timeline.events", placeholder) == []
    borrowed = ('def forget_in_x(conn, f, t):\n    forget_in_rows(conn, f, "objects", ("name",))\n'
                '    forget_in_rows(conn, f, "events", ("text",))\n'
                '    forget_in_rows(conn, f, t, ("text",))\n')
    assert foreign_writes("memvault.timeline.events", borrowed) == [
        "memvault.timeline.events:2 has forget_in_rows write objects, whose owner is "
        "memvault.objects.records",
        "memvault.timeline.events:4 has forget_in_rows write a table it does not name"]
    assert foreign_writes("memvault.home.export", "from sqlite_utils import Database\n") == [
        "memvault.home.export:1 imports sqlite_utils, whose writes the owner check cannot see"]


def test_pyproject_lists_every_package() -> None:
    """setuptools installs only the packages pyproject.toml names: a new folder must be listed.
    The two folders of data files (templates, the demo's data) are listed so their files
    install as package data."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    listed = set(config["setuptools"]["packages"])
    on_disk = {m for m, p in source_files().items() if p.name == "__init__.py"}
    assert on_disk | {"memvault.vault.templates", "memvault.data"} == listed


def test_the_wheel_installs_only_the_memvault_name(tmp_path: Path) -> None:
    """Built offline from this checkout: every file lies under memvault/ (or its metadata), so
    the wheel cannot clash with another distribution's top-level `vault` or `engine`."""
    source = tmp_path / "source"  # a copy: an in-tree build would leave build/ in the checkout
    for name in ("engine", "vault", "templates"):
        shutil.copytree(REPO / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path), str(source)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("memvault-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"memvault", next(t for t in tops if t.endswith(".dist-info"))}
    assert "memvault/vault/templates/object.md.j2" in names
    assert "memvault/data/sample_events.jsonl" in names
    assert "memvault/py.typed" in names  # PEP 561: a user's type checker reads our hints
    assert "memvault/cli/vault.py" in names and "memvault/vault/render.py" in names
