"""Import boundaries: the engine never imports the vault (the vault renders what the engine stores,
never the other way round). The one exception is engine/cli/, the composition root of the
command line, which wires engine and vault together (demo, project-vault, watch, serve)."""

from __future__ import annotations

import ast
from pathlib import Path

import engine

ENGINE = Path(engine.__file__).resolve().parent
FORBIDDEN = "vault"


def package_of(path: Path) -> list[str]:
    """The package a file's relative imports start from, e.g. ['engine', 'cli']."""
    return ["engine", *path.relative_to(ENGINE).parent.parts]


def imported_modules(source: str, package: list[str]) -> list[tuple[int, str]]:
    """Absolute names of every module `source` imports (relative imports resolved)."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            found.append((node.lineno, prefix))
            found += [(node.lineno, f"{prefix}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and getattr(
            node.func, "attr", getattr(node.func, "id", "")
        ) in {"import_module", "__import__"}:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value))
    return found


def test_the_engine_does_not_import_the_vault() -> None:
    files = sorted(p for p in ENGINE.rglob("*.py") if "cli" not in p.relative_to(ENGINE).parts)
    assert len(files) > 10
    offenders = sorted({
        f"{path.relative_to(ENGINE.parent)}:{line} imports {FORBIDDEN}"
        for path in files
        for line, name in imported_modules(path.read_text(encoding="utf-8"), package_of(path))
        if name == FORBIDDEN or name.startswith(FORBIDDEN + ".")
    })
    assert offenders == []


def test_the_checker_sees_vault_imports() -> None:
    """The AST walk itself must catch each spelling of the import."""
    cases = ["import vault", "import vault.render as r", "from vault import render",
             "from vault.render import x", "import importlib\nimportlib.import_module('vault')",
             "__import__('vault.x')", "def f():\n    from vault import render_vault\n"]
    for source in cases:
        names = [n for _, n in imported_modules(source, ["engine", "cli"])]
        assert any(n == "vault" or n.startswith("vault.") for n in names), source
    names = [n for _, n in imported_modules("from .. import store\nfrom ..vaultish import y\n",
                                            ["engine", "cli"])]
    assert "engine.store" in names and "engine.vaultish" in names
    assert not any(n == "vault" or n.startswith("vault.") for n in names)
    assert package_of(ENGINE / "cli" / "demo.py") == ["engine", "cli"]
    assert package_of(ENGINE / "__init__.py") == ["engine"]
