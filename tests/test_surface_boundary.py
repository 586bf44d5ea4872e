"""The command line and the MCP server call `Memory` and print: no module of engine/cli or
engine/service touches a database connection or runs SQL, so every read they show passes the
library's one masking policy and its spaces."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "engine"
SURFACES = ("cli", "service")
SQL_CALLS = {"execute", "executemany", "executescript"}


def surface_modules() -> list[Path]:
    return sorted(p for name in SURFACES for p in (ENGINE / name).rglob("*.py"))


def connection_uses(tree: ast.AST) -> list[str]:
    """`x.conn` attributes, SQL calls and sqlite3 connects in a module, by line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "conn":
            found.append(f"line {node.lineno}: .conn")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in SQL_CALLS or _is_sqlite_connect(node.func)):
            found.append(f"line {node.lineno}: .{node.func.attr}()")
    return found


def _is_sqlite_connect(func: ast.Attribute) -> bool:
    return (func.attr == "connect" and isinstance(func.value, ast.Name)
            and func.value.id == "sqlite3")


@pytest.mark.timeout(60)
def test_the_cli_and_the_server_hold_no_connection_and_no_sql() -> None:
    offenders = {str(path.relative_to(ENGINE)): uses for path in surface_modules()
                 if (uses := connection_uses(ast.parse(path.read_text(encoding="utf-8"))))}
    assert offenders == {}


@pytest.mark.timeout(60)
def test_the_boundary_check_sees_a_connection_and_a_statement() -> None:
    sample = ("def f(mem):\n    mem.conn.execute('SELECT 1')\n    db.executemany(q, rows)\n"
              "    sqlite3.connect(p)\n    sock.connect(addr)\n")
    assert sorted(connection_uses(ast.parse(sample))) == [
        "line 2: .conn", "line 2: .execute()", "line 3: .executemany()", "line 4: .connect()"]
