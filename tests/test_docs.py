"""The README and docs refer only to files in this repository, and those files exist."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "tests" / "README.md", REPO / "bench" / "README.md",
        *sorted((REPO / "docs").glob("*.md"))]
TOP_FOLDERS = ("engine/", "tests/", "bench/", "docs/", "templates/", "sample_vault/", ".ci/")
_OUTSIDE = re.compile(r"\.\./shared|\bSPEC\.md|FIELD-NOTES|design-original")
# A path in backticks or a Markdown link target, e.g. `engine/base/tokens.py` or (docs/spec.md).
_REFERENCE = re.compile(r"`([^`\s]+)`|\]\(([^)\s]+)\)")


def references(text: str) -> list[str]:
    """Every backticked word or link target of a Markdown text."""
    return [a or b for a, b in _REFERENCE.findall(text)]


def test_docs_exist() -> None:
    for name in ("spec.md", "architecture.md", "builtin-model.md"):
        assert (REPO / "docs" / name).is_file(), name


def test_no_doc_points_outside_the_repository() -> None:
    """The reference spec and field notes live outside the repository: docs/spec.md tells the
    behaviour in this project's words, so no document sends a reader elsewhere."""
    outside = [f"{doc.name}: {line.strip()}" for doc in DOCS
               for line in doc.read_text("utf-8").splitlines() if _OUTSIDE.search(line)]
    assert outside == []


def resolve(doc: Path, ref: str) -> list[Path]:
    """Where a reference points: a Markdown link relative to its document; a path from the
    repository root when it starts with a top folder (`vault/` is one); any other module path
    under engine/, the package `memvault` (docs name modules by their package path:
    `jobs/worker.py` is engine/jobs/worker.py, and nowhere else)."""
    path = ref.split("#")[0].rstrip(".,;")
    if "/" not in path:  # a bare name (`worker.py` in a table row) is read in its context
        return []
    if ref.startswith(("http", "~", "/", "$", "../")) or any(c in path for c in "*<>{}$ "):
        return []
    if path.startswith(TOP_FOLDERS) or path.startswith("vault/") and path.endswith(".py"):
        return [REPO / path]
    if path.endswith(".md") and (doc.parent / path).exists():
        return [doc.parent / path]
    if path.endswith(".py"):
        return [REPO / "engine" / path]
    return []


def test_every_repository_path_a_doc_names_exists() -> None:
    missing = [f"{doc.relative_to(REPO)}: {ref}" for doc in DOCS
               for ref in references(doc.read_text("utf-8"))
               if (places := resolve(doc, ref)) and not any(p.exists() for p in places)]
    assert missing == []


# Packages of data files only (no module to import), from pyproject.toml's package-dir.
_PACKAGE_DIRS = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"][
    "setuptools"]["package-dir"]
_DATA_PACKAGES = {name: folder for name, folder in _PACKAGE_DIRS.items()
                  if not (REPO / folder / "__init__.py").exists()}


def dotted_name_exists(name: str) -> bool:
    """`memvault.timeline.keys` or `memvault.home.runs.JobRun`: a module of the package, or
    a name defined in one."""
    parts = name.rstrip(".,;").split(".")
    for cut in range(len(parts), 1, -1):
        module = ".".join(parts[:cut])
        try:
            found = importlib.import_module(module)
        except ImportError:
            if cut == len(parts) and module in _DATA_PACKAGES:
                return (REPO / _DATA_PACKAGES[module]).is_dir()
            continue
        for attr in parts[cut:]:
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return True
    return False


# In backticks: `memvault.home.runs`, `memvault.home.runs.JobRun`, `memvault.x.f(conn, …)`;
# not a file name (memvault.toml, memvault.sock).
_DOTTED = re.compile(r"`(memvault\.(?!(?:toml|sock)\b)\w+(?:\.\w+)*)")


def test_every_module_a_doc_names_by_its_dotted_name_exists() -> None:
    named = [name for doc in DOCS for name in _DOTTED.findall(doc.read_text("utf-8"))]
    assert named, "the docs name modules as memvault.x.y somewhere"
    assert [ref for ref in named if not dotted_name_exists(ref)] == []


_ROW_FOLDER = re.compile(r"^\| `(\w+)/`")


def test_each_feature_row_lists_exactly_the_modules_of_its_feature() -> None:
    """docs/architecture.md's feature table names modules bare (`worker.py`) in the row of
    their feature (`jobs/`): each is in that feature's folder, or a folder under it, and every
    module of the feature is named there."""
    doc = REPO / "docs" / "architecture.md"
    missing = []
    rows = [line for line in doc.read_text("utf-8").splitlines() if _ROW_FOLDER.match(line)]
    assert len(rows) >= 10, "the feature table is where the test expects it"
    for line in rows:
        folder = _ROW_FOLDER.match(line).group(1)  # type: ignore[union-attr]
        root = REPO / "vault" if folder == "vault" else REPO / "engine" / folder
        here = {p.name for p in root.rglob("*.py")}
        listed = set(re.findall(r"`(\w+\.py)`", line))
        missing += [f"{folder}/: {name}" for name in sorted(listed - here)]
        # and the other way: every module of the feature has its words in the row (the
        # builtin model's own modules are docs/builtin-model.md's)
        unnamed = {p.name for p in root.rglob("*.py") if p.name != "__init__.py"
                   and "builtin" not in p.relative_to(root).parts} - listed
        missing += [f"{folder}/: {name} is not in its row" for name in sorted(unnamed)]
    assert missing == []


def test_the_reference_finder_sees_both_spellings() -> None:
    assert references("see `engine/base/tokens.py` and [spec](docs/spec.md)") == [
        "engine/base/tokens.py", "docs/spec.md"]
    assert resolve(REPO / "docs" / "architecture.md", "jobs/worker.py") == [
        REPO / "engine" / "jobs" / "worker.py"]
    assert resolve(REPO / "docs" / "architecture.md", "vault/render.py") == [
        REPO / "vault" / "render.py"]
    assert dotted_name_exists("memvault.timeline.keys")
    assert dotted_name_exists("memvault.home.runs.JobRun")
    assert not dotted_name_exists("memvault.store.recall_index")
    assert resolve(REPO / "README.md", "vault/objects/README.md") == []
    assert _OUTSIDE.search("see ../shared/SPEC.md") and not _OUTSIDE.search("docs/spec.md")
