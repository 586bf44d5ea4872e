"""The README and docs refer only to files in this repository, and those files exist."""

from __future__ import annotations

import re
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
    """Where a reference may point: a link relative to its document; a path from the repository
    root; a module path from engine/ or vault/ (docs name modules by their package path)."""
    path = ref.split("#")[0].rstrip(".,;")
    if "/" not in path:  # a bare name (`worker.py` in a table row) is read in its context
        return []
    if ref.startswith(("http", "~", "/", "$", "../")) or any(c in path for c in "*<>{}$ "):
        return []
    if path.startswith(TOP_FOLDERS):
        return [REPO / path]
    if path.endswith(".py"):
        return [doc.parent / path, REPO / path, REPO / "engine" / path, REPO / "vault" / path]
    return []


def test_every_repository_path_a_doc_names_exists() -> None:
    missing = [f"{doc.relative_to(REPO)}: {ref}" for doc in DOCS
               for ref in references(doc.read_text("utf-8"))
               if (places := resolve(doc, ref)) and not any(p.exists() for p in places)]
    assert missing == []


def test_the_reference_finder_sees_both_spellings() -> None:
    assert references("see `engine/base/tokens.py` and [spec](docs/spec.md)") == [
        "engine/base/tokens.py", "docs/spec.md"]
    assert resolve(REPO / "docs" / "architecture.md", "jobs/worker.py")[2] == (
        REPO / "engine" / "jobs" / "worker.py")
    assert resolve(REPO / "README.md", "vault/objects/README.md") == []
    assert _OUTSIDE.search("see ../shared/SPEC.md") and not _OUTSIDE.search("docs/spec.md")
