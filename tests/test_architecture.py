"""The shape of the code: a layer table, no import circles, one installed import name.

Data flows events -> hot timeline -> archive queue -> objects -> vault; the packages follow it.
Each package of `memvault` (the repository folder engine/) and the vault (vault/) has a rank
in LAYERS; a module may import its own package and packages of lower rank, never a higher one.
Every import counts, a function-level (lazy) one too. docs/architecture.md draws the same table.
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

# Lowest first. A package may import only packages listed before it (and itself).
LAYERS: list[tuple[str, ...]] = [
    ("base",),        # clock, errors, tokens, config
    ("store",),       # SQLite: connection, migrations, tables, job queue, lease, ledger
    ("timeline",),    # events, fragments, ingest, the hot timeline, the archive queue
    ("objects",),     # objects, relations, evidence, projects, core files, graph writes
    ("recall",),      # the FTS5 index and the three recall queries
    ("legacy",),      # upgrading a database of the original design
    ("models",),      # model providers behind one protocol
    ("modes",),       # the batch loop, compact, organize, deep, browse
    ("jobs",),        # requests, scheduler, the worker
    ("home",),        # Memory: one home as a library; its status
    ("service",),     # MCP tools and the serving process
    ("vault",),       # the Markdown projection and the core-file watcher
    ("root",),        # memvault/__init__.py: the public API
    ("cli",),         # the command line: the composition root
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
# What the vault may use of the engine: it renders the store and imports core files, nothing more.
VAULT_MAY_IMPORT = {"base", "store", "timeline", "objects", "vault"}
# Packages with room for one more concept each; past this a folder needs splitting.
MAX_MODULES_PER_FOLDER = 12
MAX_LINES_PER_MODULE = 500

# Each table's one writer: the only module whose SQL may INSERT, UPDATE, DELETE or REPLACE its
# rows; every other module calls the owner's functions. docs/architecture.md draws the same map.
_RECORDS, _VAULT_BOOKS = "memvault.objects.records", "memvault.vault.bookkeeping"
TABLE_OWNERS: dict[str, str] = {
    "events": "memvault.timeline.events",
    "hot_nodes": "memvault.timeline.hot",
    "archive_queue": "memvault.timeline.queue",
    "objects": _RECORDS, "object_versions": _RECORDS, "relations": _RECORDS,
    "evidence": _RECORDS,
    "object_names": "memvault.store.migrations",  # kept by m004's triggers only
    "core_files": "memvault.objects.corefiles",
    "corrections": "memvault.objects.corrections",
    "deep_snapshot": "memvault.modes.deep",
    "jobs": "memvault.store.jobs", "batches": "memvault.store.jobs",
    "receipts": "memvault.store.jobs",
    "leases": "memvault.store.leases",
    "model_calls": "memvault.store.ledger", "forget_audit": "memvault.store.ledger",
    "state": "memvault.store.connection",
    "_migrations": "memvault.store.migrations",
    **dict.fromkeys(("recall_events_fts", "recall_objects_fts", "recall_object_keys",
                     "recall_dirty", "recall_vocab", "recall_state", "recall_objects_vocab"),
                    "memvault.store.recall_index"),
    **dict.fromkeys(("projection", "projection_pages", "projection_errors", "vault_reports",
                     "vault_dirty", "projection_intents"), _VAULT_BOOKS),
}
# Modules that may write any table: the schema itself, and the one-off conversion of a
# database of the original design (its tables have no owner here).
WRITE_EXEMPT = {"memvault.store.migrations", "memvault.legacy.upgrade"}
# Besides those, schema code elsewhere: a string inside a migration function (m002_...) or
# one that creates a trigger. And this template, which m003's triggers expand (it is part of
# their text, never run on its own).
SCHEMA_WRITES = {("memvault.store.vault_tables", "vault_dirty")}
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


def imported_modules(source: str, package: list[str],
                     modules: set[str] | frozenset[str] | None = None) -> list[tuple[int, str]]:
    """Absolute names of every module `source` imports (relative imports resolved). Without
    `modules` (the names that are modules), `from X import name` counts as both X and X.name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
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


def layer_of(module: str) -> str:
    """The LAYERS entry a module belongs to: memvault.X.* -> X; memvault itself -> root."""
    parts = module.split(".")
    if len(parts) == 1:
        return "root"
    return parts[1]


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported memvault module: first line}, for modules that exist."""
    files = source_files()
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        edges: dict[str, int] = {}
        for line, name in imported_modules(path.read_text(encoding="utf-8"),
                                           package_of(module, path), set(files)):
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


def test_every_package_has_a_layer() -> None:
    layers = {layer_of(module) for module in source_files()}
    assert layers <= set(RANK), f"packages with no row in LAYERS: {sorted(layers - set(RANK))}"


def test_lower_layers_never_import_higher_ones() -> None:
    offenders = []
    for module, edges in import_graph().items():
        here = layer_of(module)
        for target, line in edges.items():
            there = layer_of(target)
            allowed = RANK[there] <= RANK[here]
            if here == "vault":
                allowed = there in VAULT_MAY_IMPORT
            if there == "root" and here != "root":
                allowed = here == "cli"  # only the composition root uses the public API
            if not allowed:
                offenders.append(f"{module}:{line} ({here}) imports {target} ({there})")
    assert offenders == []


def test_there_is_no_import_circle() -> None:
    assert find_cycle(import_graph()) is None


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


def test_folders_and_modules_stay_small() -> None:
    folders: dict[Path, int] = {}
    long_modules = []
    for path in source_files().values():
        folders[path.parent] = folders.get(path.parent, 0) + (path.name != "__init__.py")
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_LINES_PER_MODULE:
            long_modules.append(f"{path.relative_to(REPO)}: {lines} lines")
    crowded = {str(p.relative_to(REPO)): n for p, n in folders.items()
               if n > MAX_MODULES_PER_FOLDER}
    assert long_modules == [] and crowded == {}


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
    assert layer_of("memvault") == "root" and layer_of("memvault.vault.render") == "vault"
    assert find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}, "c": {"a": 1}}) is None
    modules = {"memvault.cli", "memvault.cli.app"}
    assert imported_modules("from . import app\n", ["memvault", "cli"], modules) == [
        (1, "memvault.cli.app")]
    assert imported_modules("from .app import main\n", ["memvault", "cli"], modules) == [
        (1, "memvault.cli.app")]
    assert imported_modules("from . import main\n", ["memvault", "cli"], modules) == [
        (1, "memvault.cli")]


def sql_writes(source: str) -> list[tuple[int, str]]:
    """(line, table) of every write statement in the string literals of `source`: INSERT /
    REPLACE INTO, UPDATE, DELETE FROM, across lines and f-strings. Docstrings, trigger
    definitions, strings inside a migration function (m002_...) and a table named by a
    placeholder (`{table}`: a generic helper its owners call) do not count; neither do the
    UPDATE of an upsert (ON CONFLICT DO UPDATE) or a trigger's event (AFTER UPDATE ON)."""
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
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(part.value if isinstance(part, ast.Constant) else "{}"
                           for part in node.values)
        else:
            continue
        if "CREATE TRIGGER" in text.upper():
            continue
        found += [(node.lineno, m.group(1)) for m in _WRITE_SQL.finditer(text)
                  if "{" not in m.group(1)]
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
    for line, table in sql_writes(source):
        owner = TABLE_OWNERS.get(table)
        if owner == module or (module, table) in SCHEMA_WRITES:
            continue
        found.append(f"{module}:{line} writes {table}, whose owner is {owner}" if owner else
                     f"{module}:{line} writes {table}, which has no owner in TABLE_OWNERS")
    return found


def test_only_the_owner_writes_a_table() -> None:
    offenders = [offence for module, path in source_files().items()
                 for offence in foreign_writes(module, path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_every_table_has_one_owner(tmp_path: Path) -> None:
    """Every table of a fresh home is in TABLE_OWNERS (FTS5's own shadow tables aside), and
    each owner is a module that exists."""
    from memvault.store.connection import open_db

    conn = open_db(tmp_path / "memory.db")
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
    assert foreign_writes("memvault.modes.compact", old_compact) == [
        "memvault.modes.compact:4 writes archive_queue, whose owner is memvault.timeline.queue"]
    assert foreign_writes("memvault.timeline.queue", old_compact) == []
    old_organize = (
        'def on_terminal(conn, marks):\n'
        '    conn.execute("""\n        UPDATE archive_queue\n        SET state = \'blocked\'""")\n'
        '    conn.execute(f"DELETE FROM hot_nodes WHERE id IN ({marks})")\n'
        '    conn.execute("replace into evidence VALUES (1)")\n'
    )
    assert [table for _, table in sql_writes(old_organize)] == [
        "archive_queue", "hot_nodes", "evidence"]
    assert len(foreign_writes("memvault.modes.organize", old_organize)) == 3
    not_writes = (
        'import sqlite3\n'
        '"INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = 1"\n'
        '"CREATE TRIGGER t AFTER INSERT ON x BEGIN INSERT INTO recall_dirty VALUES (1); END"\n'
        'def m011_new(conn):\n    conn.execute("UPDATE objects SET version = 1")\n'
        'def helper(conn, table):\n    conn.execute(f"UPDATE {table} SET x = 1")\n'
        '"SELECT id FROM events WHERE kind = \'update\'"\n'
    )
    assert sql_writes(not_writes) == [(2, "state")]  # the upsert's INSERT
    assert foreign_writes("memvault.store.jobs", 'x = "DELETE FROM shadow_table"') == [
        "memvault.store.jobs:1 writes shadow_table, which has no owner in TABLE_OWNERS"]
    assert foreign_writes("memvault.home.export", "from sqlite_utils import Database\n") == [
        "memvault.home.export:1 imports sqlite_utils, whose writes the owner check cannot see"]


def test_pyproject_lists_every_package() -> None:
    """setuptools installs only the packages pyproject.toml names: a new folder must be listed."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    listed = set(config["setuptools"]["packages"])
    on_disk = {m for m, p in source_files().items() if p.name == "__init__.py"}
    assert on_disk | {"memvault.vault.templates"} == listed


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
