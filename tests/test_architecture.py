"""The shape of the code: a layer table, no import circles, one installed import name.

Data flows events -> hot timeline -> archive queue -> objects -> vault; the packages follow it.
Each package of `memvault` (the repository folder engine/) and the vault (vault/) has a rank
in LAYERS; a module may import its own package and packages of lower rank, never a higher one.
Every import counts, a function-level (lazy) one too. docs/architecture.md draws the same table.
"""

from __future__ import annotations

import ast
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
    ("timeline",),    # events, fragments, ingest, the hot timeline
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
