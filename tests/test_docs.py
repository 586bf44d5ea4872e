"""The README and docs refer only to files in this repository, and those files exist: every
path, module and command (with its options) they name, every relative link read from its own
folder (an anchor to a heading of its page). The README is the front door: a few hundred lines
that link every page of docs/, and its two quick-start commands are the demo and what `.ci/run`
runs."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import click
from memvault.cli import main as cli_main

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


# -- links: every relative link resolves, the README reaches every page -----------------------
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*```")


def prose_lines(text: str) -> list[str]:
    """The lines of a Markdown text outside its fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def heading_anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a document's headings: lower case, punctuation dropped,
    spaces as hyphens (`## Bringing your history in, taking everything out` is
    #bringing-your-history-in-taking-everything-out)."""
    anchors = set()
    for line in prose_lines(doc.read_text("utf-8")):
        if heading := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            anchors.add(re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-"))
    return anchors


def broken_link(doc: Path, target: str) -> str | None:
    """Why a Markdown link of `doc` leads nowhere, or None: a relative path is read from the
    document's own folder (as GitHub and editors read it), must stay inside the repository
    and name a file or folder there; an anchor must be a heading of the page it points at."""
    if re.match(r"[a-z]+:", target):  # https:, mailto:
        return None
    path, _, anchor = target.partition("#")
    place = (doc.parent / path).resolve() if path else doc
    if not place.is_relative_to(REPO) or not place.exists():
        return f"{path}: no such file in the repository"
    if anchor and place.suffix == ".md" and anchor not in heading_anchors(place):
        return f"#{anchor}: no such heading in {place.relative_to(REPO)}"
    return None


def test_every_relative_link_resolves_to_a_file_of_the_repository() -> None:
    broken = [f"{doc.relative_to(REPO)}: ({target}) {why}" for doc in DOCS
              for line in prose_lines(doc.read_text("utf-8")) for target in _LINK.findall(line)
              if (why := broken_link(doc, target))]
    assert broken == []


def test_the_link_checker_reads_links_from_their_own_folder() -> None:
    page = REPO / "docs" / "recall.md"
    assert broken_link(page, "spec.md") is None
    assert broken_link(page, "docs/spec.md") is not None  # docs/docs/spec.md
    assert broken_link(page, "../bench/README.md") is None
    assert broken_link(page, "../../outside.md") is not None
    assert broken_link(page, "#speed") is None and broken_link(page, "#no-such") is not None
    assert "bringing-your-history-in-taking-everything-out" in heading_anchors(
        REPO / "docs" / "import-export.md")


def readme_links() -> set[str]:
    return {target.partition("#")[0]
            for line in prose_lines((REPO / "README.md").read_text("utf-8"))
            for target in _LINK.findall(line)}


def test_the_readme_links_every_docs_page() -> None:
    """The README is the front door: every page of docs/ is one link away from it."""
    pages = {f"docs/{page.name}" for page in (REPO / "docs").glob("*.md")}
    assert pages - readme_links() == set()


# -- the README is a front door ---------------------------------------------------------------
README_MAX_LINES = 400


def test_the_readme_stays_a_front_door() -> None:
    """A few hundred lines: what memvault is, the two commands, connecting a host, reading the
    vault; the detail lives in docs/ (the pages above)."""
    text = (REPO / "README.md").read_text("utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    headings = [line for line in prose_lines(text) if line.startswith("## ")]
    for section in ("## Quick start", "## Connecting an agent host", "## Reading the vault",
                    "## Where to go next"):
        assert any(h.startswith(section) for h in headings), section


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def test_the_quick_start_runs_the_demo_and_the_tests_as_ci_does() -> None:
    """Two commands on a fresh machine: the first installs and runs the demo (on the builtin
    model: no model is named), the second installs the test extra and runs the tests exactly
    as `.ci/run` does."""
    demo, tests = shell_blocks((REPO / "README.md").read_text("utf-8"))[:2]
    assert demo.strip().startswith("python3 -m venv") and demo.strip().endswith(" demo")
    assert "pip install -e ." in demo and "--model" not in demo
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text("utf-8").splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    installs = [re.sub(r"\s-q\b", "", line).replace("python -m pip", "pip")
                for line in ci if "install" in line and "-e" in line]
    assert installs == ['pip install -e ".[test]"']
    assert installs[0] in tests and tests.strip().endswith(ci[-1]) and ci[-1] == "python -m pytest"


# -- every command a doc shows exists, with the options it is shown with ----------------------
# `memvault ARGS` at the start of a backticked span or of a code line (after a `$ ` prompt and
# VAR=value settings), after a shell's `|` or `&&`, or after a slash (a path to the
# program); not the word in a sentence or an error message ("memvault does not follow links"),
# nor `memvault.toml`.
_INVOCATION = re.compile(r"(?:^(?:\$\s+)?(?:\w+=\S*\s+)*|/|(?:\||&&)\s*)"
                         r"memvault((?:[ \t]+[^\s`\"|;&#)>]+)+)")
_COMMAND_WORD = re.compile(r"[a-z][a-z-]*(?:\|[a-z][a-z-]*)*")


def shown_invocations(text: str) -> list[str]:
    """The argument words of every `memvault …` a Markdown text shows (`\\|` read as `|`)."""
    spans = re.findall(r"`([^`\n]+)`", "\n".join(prose_lines(text)))
    blocks = [body for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)
              if lang != "python"]
    lines = [*spans, *(line for block in blocks for line in block.splitlines())]
    return [m.group(1) for line in lines
            for m in _INVOCATION.finditer(line.replace("\\|", "|").strip())]


def option_names(command: click.Command) -> set[str]:
    return {name for p in command.params if isinstance(p, click.Option)
            for name in (*p.opts, *p.secondary_opts)} | {"--help"}


def invocation_faults(words: list[str]) -> list[str]:
    """What does not exist in `memvault WORDS`: a command (each of `a|b`), a subcommand of a
    group, an option of the command it is given to (or of `memvault` itself). Placeholders
    (FILE, …) and arguments are not read."""
    commands: list[click.Command] = [cli_main]  # what the next word is given to
    faults: list[str] = []
    for word in (w.strip("[]") for w in words):
        groups = [c for c in commands if isinstance(c, click.Group)]
        if word.startswith("--"):
            name = word.split("=")[0]
            faults += [f"{name} on {c.name}" for c in commands
                       if name not in option_names(c) | option_names(cli_main)]
        elif len(groups) == len(commands):
            if not _COMMAND_WORD.fullmatch(word):
                break  # `memvault …`, `memvault COMMAND`: no command named
            found: list[click.Command] = []
            for group in groups:
                for name in word.split("|"):
                    sub = group.get_command(click.Context(group), name)
                    found += [sub] if sub else []
                    faults += [] if sub else [f"no command {name!r}"]
            if not found:
                break
            commands = found
    return faults


def test_every_command_a_doc_shows_exists_with_its_options() -> None:
    shown = [(doc.relative_to(REPO), words) for doc in DOCS
             for words in shown_invocations(doc.read_text("utf-8"))]
    assert len(shown) > 100, "the docs show commands as `memvault …`"
    faults = [f"{doc}: memvault{words}: {fault}" for doc, words in shown
              for fault in invocation_faults(words.split())]
    assert faults == []


def test_the_command_checker_knows_a_wrong_command_from_a_right_one() -> None:
    assert invocation_faults("--home H hook claude-code|codex --print-config".split()) == []
    assert invocation_faults("import --space home chatgpt FILE --yes".split()) == []
    assert invocation_faults("core show|set|history NAME".split()) == []
    assert invocation_faults(["…"]) == []
    assert invocation_faults("hook claude-code|gemini".split()) == ["no command 'gemini'"]
    assert invocation_faults("organize --retry".split()) == ["--retry on organize"]
    assert invocation_faults("statuss".split()) == ["no command 'statuss'"]
    assert shown_invocations("run `memvault find x --json` or\n```sh\n$ memvault status\n```\n"
                             "see memvault.toml, `from memvault import Memory`, "
                             "`a memvault does not follow`, `x | memvault ingest -`") == [
        " find x --json", " ingest -", " status"]
