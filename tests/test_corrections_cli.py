"""`memvault edit | merge | archive | accept-edit` and `object --versions` on a real home with a
vault; conflict copies Obsidian shows. Hand-edited files are taken only when a person names one,
and every bad file is one clear error with nothing changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.objects.records import get_object
from memvault.vault.bookkeeping import vault_status
from memvault.vault.paths import conflict_original, is_conflict_copy, is_object_file, object_path
from memvault.vault.watcher import VaultWatcher
from vault_support import broken_links, open_memory, project, put_object

SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"


@pytest.fixture
def vhome(home: Path) -> Path:
    """A home with two people, rendered into its vault."""
    mem = open_memory(home)
    try:
        put_object(mem, "person:sarah", "Sarah Chen", summary="designer on Aurora",
                   body="- role: designer", cues=["who designs Aurora"])
        put_object(mem, "person:sc", "S. Chen", aliases=["SC"])
        project(mem)
    finally:
        mem.close()
    return home


def opened(home: Path) -> Memory:
    return Memory.open(home)


def file_of(home: Path, object_id: str) -> Path:
    return home / "vault" / object_path(object_id)


def state(home: Path) -> tuple:
    """The objects, their versions and the corrections: what a refusal must leave alone."""
    with opened(home) as mem:
        return tuple(tuple(tuple(r) for r in mem.conn.execute(f"SELECT * FROM {table}"))
                     for table in ("objects", "object_versions", "corrections"))


def typed(path: Path, old: str, new: str) -> bytes:
    """Edit a vault file as a person would; return its new bytes."""
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path.read_bytes()


# -- edit, merge, archive --------------------------------------------------------------------


def test_edit_corrects_fields_and_rerenders_the_vault_file(vhome: Path,
                                                          runner: CliRunner) -> None:
    result = run_cli(runner, "edit", "Sarah Chen", "--summary", "lead designer on Aurora",
                     "--add-alias", "Sarah", "--remove-cue", "who designs Aurora")
    assert "corrected by you (edit)" in result.output
    assert "person:sarah: version 2" in result.output
    text = file_of(vhome, "person:sarah").read_text(encoding="utf-8")
    assert "lead designer on Aurora" in text and "version: 2" in text
    assert "who designs Aurora" not in text
    with opened(vhome) as mem:
        sarah = get_object(mem.conn, "person:sarah")
        assert sarah.aliases == ["Sarah"] and sarah.cues == []


def test_edit_reads_a_body_file_and_a_token_makes_it_safe_to_resend(
    vhome: Path, runner: CliRunner, tmp_path: Path,
) -> None:
    body = tmp_path / "body.md"
    body.write_text("- role: lead designer\n- 喜欢: 茶\n", encoding="utf-8")
    first = json.loads(run_cli(runner, "edit", "person:sarah", "--body-file", str(body),
                               "--token", "t-1", "--json").stdout)
    again = json.loads(run_cli(runner, "edit", "person:sarah", "--body", "other",
                               "--token", "t-1", "--json").stdout)
    assert again == {**first, "replayed": True}
    with opened(vhome) as mem:
        assert get_object(mem.conn, "person:sarah").body == "- role: lead designer\n- 喜欢: 茶\n"


def test_merge_and_archive_from_the_command_line(vhome: Path, runner: CliRunner) -> None:
    run_cli(runner, "merge", "SC", "Sarah Chen")
    run_cli(runner, "archive", "person:sarah")
    with opened(vhome) as mem:
        assert get_object(mem.conn, "person:sc").redirect_to == "person:sarah"
        sarah = get_object(mem.conn, "person:sarah")
        assert sarah.status == "archived" and "S. Chen" in sarah.aliases
    assert "Merged" in file_of(vhome, "person:sc").read_text(encoding="utf-8")
    assert "Archived" in file_of(vhome, "person:sarah").read_text(encoding="utf-8")


def test_object_versions_shows_who_made_each_version(vhome: Path, runner: CliRunner) -> None:
    run_cli(runner, "edit", "Sarah Chen", "--name", "Sarah C. Chen")
    rows = json.loads(run_cli(runner, "object", "Sarah C. Chen", "--versions",
                              "--json").stdout)["versions"]
    assert [(r["version"], r["origin"], r["changed"]) for r in rows][1] == (2, "person",
                                                                           ["name"])
    text = run_cli(runner, "object", "person:sarah", "--versions").output
    assert "person" in text and "model" in text and "made by" in text


@pytest.mark.parametrize(("args", "message"), [
    (("edit", "nobody", "--summary", "x"), "no object has that name or alias"),
    (("edit", "person:sarah", "--summary", f"key {SECRET}"), "summary: holds what looks like"),
    (("edit", "person:sarah", "--summary", "x" * 401), "at most 400 characters"),
    (("edit", "person:sarah"), "nothing to change"),
    (("edit", "person:sarah", "--name", "S. Chen"), "name: 'S. Chen' already names person:sc"),
    (("edit", "Sarah Chen", "--add-alias", "sc"), "aliases: 'sc' already names person:sc"),
    (("edit", "person:sarah", "--body", "a", "--body-file", "-"), "not both"),
    (("merge", "person:sarah", "Sarah Chen"), "cannot be merged into itself"),
    (("archive", "person:nobody"), "no object person:nobody"),
])
def test_bad_corrections_are_one_line_and_change_nothing(
    vhome: Path, runner: CliRunner, args: tuple[str, ...], message: str,
) -> None:
    before = state(vhome)
    result = run_cli(runner, *args, code=2 if "not both" in message else 1)
    assert message in result.output and SECRET not in result.output
    assert state(vhome) == before


def test_a_body_file_that_is_not_utf8_is_refused(vhome: Path, runner: CliRunner,
                                                 tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_bytes(b"\xff\xfe b")
    before = state(vhome)
    result = run_cli(runner, "edit", "person:sarah", "--body-file", str(body), code=1)
    assert "not valid UTF-8 (byte 0)" in result.output
    assert state(vhome) == before


# -- accept-edit ---------------------------------------------------------------------------


def test_a_page_leaves_out_unknown_lines_that_an_accepted_edit_keeps(
    home: Path, runner: CliRunner,
) -> None:
    """The body says "unknown" for facts nobody gave (as a model must write them); the vault
    page leaves those lines out. A person's edit of the page changes what it shows, and the
    body keeps its unknown lines unless the edit now gives that fact."""
    body = ("- identity: Tom is our DevOps lead\n- role: DevOps lead\n- traits: unknown\n"
            "- how to work with them: unknown\n- 特点：未知")
    mem = open_memory(home)
    try:
        put_object(mem, "person:tom", "Tom Becker", summary="DevOps lead", body=body)
        project(mem)
    finally:
        mem.close()
    path = file_of(home, "person:tom")
    page = path.read_text(encoding="utf-8")
    assert "- role: DevOps lead" in page and "unknown" not in page and "未知" not in page
    typed(path, "- role: DevOps lead\n", "- role: platform lead\n- traits: patient\n")
    run_cli(runner, "accept-edit", str(path))
    with opened(home) as mem:
        assert get_object(mem.conn, "person:tom").body == (
            "- identity: Tom is our DevOps lead\n- role: platform lead\n- traits: patient\n"
            "- how to work with them: unknown\n- 特点：未知")


def test_accept_edit_takes_the_changed_fields_of_the_object_file(
    vhome: Path, runner: CliRunner,
) -> None:
    path = file_of(vhome, "person:sarah")
    typed(path, "designer on Aurora\n", "lead designer on Aurora\n")
    typed(path, '- "Sarah Chen"\n', '- "Sarah Chen"\n- Sarah\n')
    typed(path, "- who designs Aurora\n", "- who designs Aurora\n- who leads design\n")
    result = run_cli(runner, "accept-edit", str(path))
    assert "corrected by you (accept edit)" in result.output
    with opened(vhome) as mem:
        sarah = get_object(mem.conn, "person:sarah")
        assert (sarah.summary, sarah.aliases, sarah.cues, sarah.body) == (
            "lead designer on Aurora", ["Sarah"], ["who designs Aurora", "who leads design"],
            "- role: designer")
        # The accepted file is rendered again, not kept as a conflict: it is memory now.
        assert vault_status(mem.conn)["conflicts"] == []
    assert not [p for p in path.parent.iterdir() if is_conflict_copy(p.name)]
    assert "version: 2" in path.read_text(encoding="utf-8")
    again = run_cli(runner, "accept-edit", str(path))
    assert "nothing to accept" in again.output


def test_accept_edit_takes_a_conflict_copy_and_the_same_copy_twice_is_one_correction(
    vhome: Path, runner: CliRunner,
) -> None:
    path = file_of(vhome, "person:sarah")
    edited = typed(path, "# Sarah Chen", "# Sarah Chen-Li")
    with opened(vhome) as mem:  # the watcher reports it, the projection keeps it aside
        [outcome] = VaultWatcher.for_config(mem.config).handle(mem.conn, [object_path(
            "person:sarah")])
        assert outcome.action == "hand_edit" and "accept-edit" in outcome.message
        project(mem)
    copy = path.with_name(path.stem + ".conflict-1.md")
    assert copy.read_bytes() == edited
    first = json.loads(run_cli(runner, "accept-edit", str(copy), "--json").stdout)
    again = json.loads(run_cli(runner, "accept-edit", str(copy), "--json").stdout)
    assert again == {**first, "replayed": True}
    with opened(vhome) as mem:
        assert get_object(mem.conn, "person:sarah").name == "Sarah Chen-Li"
    assert "# Sarah Chen-Li" in path.read_text(encoding="utf-8")
    assert copy.read_bytes() == edited  # a person's file: left for them to delete


def test_accept_edit_of_an_outdated_file_is_refused_unless_forced(
    vhome: Path, runner: CliRunner,
) -> None:
    path = file_of(vhome, "person:sarah")
    old = path.read_text(encoding="utf-8")
    run_cli(runner, "edit", "person:sarah", "--add-cue", "who sketches")
    path.write_text(old.replace("designer on Aurora\n", "principal designer\n", 1),
                    encoding="utf-8")
    before = state(vhome)
    result = run_cli(runner, "accept-edit", str(path), code=1)
    assert "changed since version 1" in result.output and "version 2 (person" in result.output
    assert ": cues" in result.output and "--force" in result.output
    assert state(vhome) == before
    run_cli(runner, "accept-edit", str(path), "--force")
    with opened(vhome) as mem:
        sarah = get_object(mem.conn, "person:sarah")
        # Only the field the person changed is taken; the newer cue stays.
        assert sarah.summary == "principal designer"
        assert sarah.cues == ["who designs Aurora", "who sketches"]


def _outside(home: Path, tmp_path: Path) -> str:
    other = tmp_path / "elsewhere.md"
    other.write_bytes(file_of(home, "person:sarah").read_bytes())
    return str(other)


def _symlink(home: Path, tmp_path: Path) -> str:
    target = tmp_path / "target.md"
    target.write_bytes(file_of(home, "person:sarah").read_bytes().replace(b"designer", b"x"))
    link = file_of(home, "person:sarah").with_name(
        file_of(home, "person:sarah").stem + ".conflict-1.md")
    link.symlink_to(target)
    return str(link)


def _fifo(home: Path, tmp_path: Path) -> str:
    fifo = file_of(home, "person:sarah").with_name(
        file_of(home, "person:sarah").stem + ".conflict-1.md")
    os.mkfifo(fifo)
    return str(fifo)


def _mangled(home: Path, tmp_path: Path) -> str:
    path = file_of(home, "person:sarah")
    path.write_text("---\nid: [unclosed\n---\n# Sarah\n", encoding="utf-8")
    return str(path)


def _deeply_nested(home: Path, tmp_path: Path) -> str:
    path = file_of(home, "person:sarah")  # 5,000 levels in 10 KB: past Python's recursion
    typed(path, "\nversion:", "\nnotes: " + "[" * 5_000 + "]" * 5_000 + "\nversion:")
    return str(path)


def _no_front_matter(home: Path, tmp_path: Path) -> str:
    path = file_of(home, "person:sarah")
    path.write_text("# Sarah Chen\n\njust notes\n", encoding="utf-8")
    return str(path)


def _other_object(home: Path, tmp_path: Path) -> str:
    path = file_of(home, "person:sarah")
    path.write_bytes(file_of(home, "person:sc").read_bytes().replace(b"S. Chen", b"Sarah"))
    return str(path)


def _duplicate_key(home: Path, tmp_path: Path) -> str:
    path = file_of(home, "person:sarah")
    typed(path, "\nversion:", "\naliases:\n- Sarah\n- Chen\nversion:")
    return str(path)


def _layout_broken(home: Path, tmp_path: Path) -> str:
    path = file_of(home, "person:sarah")
    typed(path, "## Body\n", "## Notes\n")
    return str(path)


def _not_an_object_file(home: Path, tmp_path: Path) -> str:
    return str(home / "vault" / "objects" / "README.md")


def _continuation_page(home: Path, tmp_path: Path) -> str:
    page = file_of(home, "person:sarah").with_name(
        file_of(home, "person:sarah").stem + "-p2.md")
    page.write_bytes(file_of(home, "person:sarah").read_bytes())
    return str(page)


def _secret(home: Path, tmp_path: Path) -> str:
    path = file_of(home, "person:sarah")
    typed(path, "- role: designer", f"- role: designer, key {SECRET}")
    return str(path)


@pytest.mark.parametrize(("make", "message"), [
    (_outside, "is not inside the vault"),
    (_symlink, "is a symbolic link"),
    (_fifo, "is a FIFO, not a regular file"),
    (_mangled, "the front matter is not valid YAML at line"),
    (_deeply_nested, "the front matter nests more than 16 levels deep"),
    (_no_front_matter, "no front matter"),
    (_other_object, "names person:sc, whose file is"),
    (_duplicate_key, "the front matter names `aliases` twice (lines"),
    (_layout_broken, "the `## Body` heading is missing"),
    (_not_an_object_file, "is not an object file"),
    (_continuation_page, "a continuation page holds no profile"),
    (_secret, "body: holds what looks like"),
])
def test_bad_files_for_accept_edit_are_one_line_and_change_nothing(
    vhome: Path, runner: CliRunner, tmp_path: Path, make, message: str,
) -> None:
    path = make(vhome, tmp_path)
    before = state(vhome)
    result = run_cli(runner, "accept-edit", path, code=1)
    assert message in result.output and SECRET not in result.output
    assert state(vhome) == before


def test_accept_edit_takes_an_old_style_conflict_copy(vhome: Path, runner: CliRunner) -> None:
    path = file_of(vhome, "person:sarah")
    old_style = path.with_name(path.name + ".conflict")  # as memvault named copies before
    old_style.write_text(path.read_text(encoding="utf-8").replace(
        "designer on Aurora\n", "art director\n", 1), encoding="utf-8")
    run_cli(runner, "accept-edit", str(old_style))
    with opened(vhome) as mem:
        assert get_object(mem.conn, "person:sarah").summary == "art director"


# -- conflict copies Obsidian shows ----------------------------------------------------------


def test_conflict_copies_are_markdown_beside_the_file_and_never_taken_for_object_files(
    home: Path,
) -> None:
    mem = open_memory(home)
    try:
        put_object(mem, "person:a", "Alice")
        project(mem)
        path = file_of(home, "person:a")
        path.write_text(path.read_text(encoding="utf-8") + "\nmy note\n", encoding="utf-8")
        put_object(mem, "person:a", summary="changed")
        result = project(mem)
        copy = path.with_name(path.stem + ".conflict-1.md")
        assert result.conflicts == [f"objects/person/{copy.name}"] and copy.exists()
        rel = f"objects/person/{copy.name}"
        assert not is_object_file(rel) and conflict_original(copy.name) == path.name
        # The watcher leaves a person's conflict copy alone: not reported, not imported.
        copy.write_text(copy.read_text(encoding="utf-8") + "more\n", encoding="utf-8")
        assert VaultWatcher.for_config(mem.config).handle(mem.conn, [rel]) == []
        assert vault_status(mem.conn)["hand_edits"] == []
        # Its links resolve like the object file's, so it is no broken note in Obsidian.
        assert broken_links(home / "vault") == []
        project(mem, rebuild=True)
        assert copy.read_text(encoding="utf-8").endswith("more\n")  # never overwritten
    finally:
        mem.close()


def test_old_style_conflict_copies_are_still_recognised() -> None:
    for name in ("0123456789abcdef.md.conflict", "0123456789abcdef.md.2.conflict"):
        assert is_conflict_copy(name) and conflict_original(name) == "0123456789abcdef.md"
    assert not is_conflict_copy("0123456789abcdef.md")
    assert not is_conflict_copy("0123456789abcdef.conflict-0.md")


# -- add -----------------------------------------------------------------------------------------


def test_add_creates_an_object_by_hand_that_find_then_finds(home: Path, runner: CliRunner) -> None:
    result = run_cli(runner, "add", "person", "Mia Park", "--summary", "my sister, teaches piano",
                     "--alias", "Mia", "--cue", "who teaches piano", "--json")
    receipt = json.loads(result.stdout)
    assert (receipt["kind"], receipt["objects"], receipt["changed"]) == (
        "create", ["person:mia-park"], True)
    with opened(home) as mem:
        mia = get_object(mem.conn, "person:mia-park")
        assert (mia.name, mia.aliases, mia.summary, mia.status) == (
            "Mia Park", ["Mia"], "my sister, teaches piano", "active")
        origin = mem.conn.execute("SELECT origin FROM object_versions WHERE object_id = ?",
                                  ("person:mia-park",)).fetchone()[0]
        assert origin == "person"
        assert mem.find("piano teacher sister")["hits"][0]["id"] == "person:mia-park"


def test_add_refuses_a_name_its_type_already_has_and_writes_nothing(
        home: Path, runner: CliRunner) -> None:
    run_cli(runner, "add", "person", "Mia Park")
    before = state(home)
    for name in ("mia park", "Mia"):  # the name, and an alias below
        if name == "Mia":
            run_cli(runner, "edit", "person:mia-park", "--add-alias", "Mia")
            before = state(home)
        result = run_cli(runner, "add", "person", name, code=1)
        assert "person:mia-park already exists with that name" in result.output
        assert state(home) == before
    run_cli(runner, "add", "todo", "Mia Park")  # another type may share the name


def test_add_makes_a_project_a_candidate_and_refuses_a_secret_in_a_credential(
        home: Path, runner: CliRunner) -> None:
    run_cli(runner, "add", "project", "Garden shed", "--summary", "build it by May")
    result = run_cli(runner, "add", "credential", "GitHub token", "--body",
                     f"the token is {SECRET}", code=1)
    assert "looks like" in result.output and SECRET not in result.output
    with opened(home) as mem:
        assert get_object(mem.conn, "project:garden-shed").status == "candidate"
        assert not mem.conn.execute(
            "SELECT 1 FROM objects WHERE type = 'credential'").fetchone()


def test_add_with_a_token_sent_twice_creates_once(home: Path, runner: CliRunner) -> None:
    first = json.loads(run_cli(runner, "add", "knowledge", "Wifi at the cabin", "--token",
                               "t-1", "--json").stdout)
    again = json.loads(run_cli(runner, "add", "knowledge", "Wifi at the cabin", "--token",
                               "t-1", "--json").stdout)
    assert again["replayed"] is True and again["correction_id"] == first["correction_id"]
    with opened(home) as mem:
        assert mem.conn.execute("SELECT count(*) FROM objects WHERE type = 'knowledge'"
                                ).fetchone()[0] == 1
