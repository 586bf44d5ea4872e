"""The projector: batches, no rewrite of unchanged files, continuation pages, atomic writes,
merged and deleted objects, conflicts, core files, reproducible output."""

from __future__ import annotations

import os
from pathlib import Path

import frontmatter
import pytest
from helpers import add_evidence
from memvault.base.config import Config
from memvault.objects.corefiles import core_file_history, read_core_file
from memvault.objects.ids import RELATION_LABELS
from memvault.objects.records import add_relation
from memvault.store.connection import write
from memvault.vault import files as vault_files_module
from memvault.vault.bookkeeping import vault_status
from memvault.vault.paths import object_path, page_path
from memvault.vault.projector import ProjectionBusy, pending_owners, render_vault, vault_lock
from vault_support import (
    broken_links,
    open_memory,
    project,
    put_object,
    relate,
    tick,
    vault_files,
)


@pytest.fixture
def mem(tmp_path):
    with open_memory(tmp_path / "home") as memory:
        yield memory


def vault(mem) -> Path:
    return mem.config.vault_path


def read(mem, rel: str) -> str:
    return (vault(mem) / rel).read_text(encoding="utf-8")


def age_files(root: Path) -> None:
    """Set every file's mtime an hour back, so any rewrite shows in st_mtime_ns."""
    for p in root.rglob("*"):
        if p.is_file():
            st = p.stat()
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns - 3_600_000_000_000))


def mtimes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_mtime_ns
            for p in root.rglob("*") if p.is_file()}


# -- batches ---------------------------------------------------------------------------------
def test_a_run_renders_at_most_one_batch_oldest_first_and_the_next_run_continues(mem) -> None:
    for i in range(25):
        put_object(mem, f"task:t{i:02d}", f"Task {i}")
    put_object(mem, "task:t00", summary="touched last: now the newest")
    order = pending_owners(mem.conn)
    # The built-in project:daily was created when the memory opened: the oldest of all 26.
    assert order[:2] == ["project:daily", "task:t01"] and order[-1] == "task:t00"
    assert len(order) == 26

    first = project(mem, all=False)
    assert first.objects == 10
    assert {p for p in first.written if p.startswith("objects/task/")} == {
        object_path(f"task:t{i:02d}") for i in range(1, 10)}
    assert object_path("project:daily") in first.written
    assert first.remaining == 16
    assert project(mem, all=False).remaining == 6
    third = project(mem, all=False)
    assert third.objects == 6 and third.remaining == 0
    assert object_path("task:t00") in third.written
    assert project(mem, all=False).objects == 0


def test_batch_size_comes_from_the_config(mem) -> None:
    for i in range(7):
        put_object(mem, f"todo:x{i}", f"Todo {i}")
    config = Config(home=mem.config.home, values={"vault.objects_per_run": 3})
    result = render_vault(mem.conn, vault(mem), all=False, config=config)
    assert result.objects == 3 and result.remaining == 5  # 7 todos + the built-in project:daily


def test_relation_and_evidence_changes_mark_both_ends_dirty(mem) -> None:
    put_object(mem, "person:a", "Alice")
    put_object(mem, "person:b", "Bob")
    project(mem)
    assert pending_owners(mem.conn) == []
    relate(mem, "person:a", "knows", "person:b")
    assert set(pending_owners(mem.conn)) == {"person:a", "person:b"}
    project(mem)
    put_object(mem, "person:b", "Robert")  # a rename changes the link text in a's file
    assert set(pending_owners(mem.conn)) == {"person:a", "person:b"}
    project(mem)
    assert "[[" in read(mem, object_path("person:a")) and "|Robert]]" in read(
        mem, object_path("person:a"))
    event = mem.append_event("Alice met Robert", occurred_at="2026-10-05T10:00:00+08:00")
    with write(mem.conn):
        add_evidence(mem.conn, "person:a", event, 0, 5, tick(mem))
    assert pending_owners(mem.conn) == ["person:a"]
    project(mem)
    assert "2026-10-05T10:00:00+08:00 · event 1 · chars 0–5" in read(
        mem, object_path("person:a"))


# -- no rewrite ------------------------------------------------------------------------------
def test_unchanged_content_is_not_rewritten(mem) -> None:
    for i in range(5):
        put_object(mem, f"knowledge:k{i}", f"Fact {i}", body=f"body {i}")
    relate(mem, "knowledge:k0", "related_to", "knowledge:k1")
    project(mem)
    age_files(vault(mem))
    before = mtimes(vault(mem))

    again = project(mem, rebuild=True)
    assert again.written == [] and again.objects == 6  # 5 facts + the built-in project:daily
    assert mtimes(vault(mem)) == before

    put_object(mem, "knowledge:k3", body="changed")
    changed = project(mem)
    assert changed.written == [object_path("knowledge:k3")]
    after = mtimes(vault(mem))
    assert {k for k in after if after[k] != before[k]} == {object_path("knowledge:k3")}


def test_an_unchanged_run_touches_nothing(mem) -> None:
    put_object(mem, "person:a", "Alice")
    project(mem)
    age_files(vault(mem))
    before = mtimes(vault(mem))
    result = project(mem)
    assert (result.objects, result.written) == (0, [])
    assert mtimes(vault(mem)) == before


# -- continuation pages ----------------------------------------------------------------------
def _hub_with_relations(mem, count: int) -> None:
    put_object(mem, "project:hub", "Hub")
    targets = -(-count // len(RELATION_LABELS))
    for i in range(targets):
        put_object(mem, f"todo:n{i:03d}", f"Node {i}")
    n = 0
    with write(mem.conn):
        now = tick(mem)
        for i in range(targets):
            for label in RELATION_LABELS:
                if n < count:
                    add_relation(mem.conn, "project:hub", label, f"todo:n{i:03d}", now)
                    n += 1


def _links_on(text: str) -> int:
    return sum(1 for line in text.splitlines()
               if line.startswith("- ") and " → " in line)


def test_51_relations_make_one_continuation_page(mem) -> None:
    _hub_with_relations(mem, 51)
    project(mem)
    main = read(mem, object_path("project:hub"))
    page2 = read(mem, page_path("project:hub", 2))
    assert _links_on(main) == 50 and _links_on(page2) == 1
    assert f"[[{Path(page_path('project:hub', 2)).stem}|page 2]]" in main
    assert not (vault(mem) / page_path("project:hub", 3)).exists()
    assert frontmatter.loads(page2).metadata["page"] == 2
    assert broken_links(vault(mem)) == []


def test_500_relations_make_ten_pages_and_shrinking_removes_stale_pages(mem) -> None:
    _hub_with_relations(mem, 500)
    project(mem)
    pages = [read(mem, object_path("project:hub"))] + [
        read(mem, page_path("project:hub", n)) for n in range(2, 11)]
    assert [_links_on(p) for p in pages] == [50] * 10
    assert not (vault(mem) / page_path("project:hub", 11)).exists()
    meta = frontmatter.loads(pages[0]).metadata
    assert meta["relations"] == 500
    assert broken_links(vault(mem)) == []

    with write(mem.conn):
        mem.conn.execute("DELETE FROM relations WHERE src_id = 'project:hub' AND id > ("
                         "SELECT MIN(id) + 50 FROM relations WHERE src_id = 'project:hub')")
    result = project(mem)
    assert sorted(result.removed) == sorted(page_path("project:hub", n) for n in range(3, 11))
    assert _links_on(read(mem, page_path("project:hub", 2))) == 1
    assert not list(vault(mem).rglob("*.conflict*"))
    assert broken_links(vault(mem)) == []


def test_sources_count_toward_the_page_limit(mem) -> None:
    put_object(mem, "person:a", "Alice")
    event = mem.append_event("x" * 200, occurred_at="2026-10-05T10:00:00+08:00")
    with write(mem.conn):
        for i in range(60):
            add_evidence(mem.conn, "person:a", event, i, i + 1, tick(mem))
    project(mem)
    main = read(mem, object_path("person:a"))
    assert main.count("· event 1 ·") == 50
    assert read(mem, page_path("person:a", 2)).count("· event 1 ·") == 10
    assert frontmatter.loads(main).metadata["sources"] == 60


# -- atomic writes and failures --------------------------------------------------------------
def test_atomic_write_leaves_the_old_file_when_interrupted(tmp_path, monkeypatch) -> None:
    target = tmp_path / "f.md"
    target.write_bytes(b"old")

    def boom(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(vault_files_module.os, "fsync", boom)
    with pytest.raises(OSError):
        vault_files_module.atomic_write(target, b"new and longer")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"]


def test_atomic_write_names_its_temp_file_without_mkstemp(tmp_path, monkeypatch) -> None:
    """A counter names the temp file (mkstemp's random names cost a render more than
    the write); it is still created exclusively, never through a link, and private."""
    def no_mkstemp(*args, **kwargs):
        raise AssertionError("atomic_write must not use tempfile.mkstemp")

    monkeypatch.setattr("tempfile.mkstemp", no_mkstemp)
    opened: list[tuple[str, int, int]] = []
    real_open = os.open

    def spy_open(path, flags, mode=0o777, *args, **kwargs):
        opened.append((os.fspath(path), flags, mode))
        return real_open(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(vault_files_module.os, "open", spy_open)
    target = tmp_path / "f.md"
    vault_files_module.atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"]
    [(tmp, flags, mode)] = opened
    name = Path(tmp).name
    assert name.startswith(".f.md.") and name.endswith(".memvault-tmp")
    wanted = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0)
    assert flags & wanted == wanted and mode == 0o600


def test_atomic_write_skips_a_taken_temp_name_and_never_follows_a_link_there(
        tmp_path, monkeypatch) -> None:
    import itertools

    monkeypatch.setattr(vault_files_module, "_temp_counter", itertools.count())
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not yours")
    vault_dir = tmp_path / "v"
    vault_dir.mkdir()
    pid = os.getpid()
    (vault_dir / f".f.md.{pid}-0.memvault-tmp").symlink_to(outside)  # a planted link
    (vault_dir / f".f.md.{pid}-1.memvault-tmp").write_bytes(b"a leftover")
    vault_files_module.atomic_write(vault_dir / "f.md", b"new")
    assert (vault_dir / "f.md").read_bytes() == b"new"
    assert outside.read_bytes() == b"not yours"
    assert sorted(p.name for p in vault_dir.iterdir()) == [
        f".f.md.{pid}-0.memvault-tmp", f".f.md.{pid}-1.memvault-tmp", "f.md"]


def test_atomic_write_still_refuses_a_link_at_the_target(tmp_path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not yours")
    (tmp_path / "f.md").symlink_to(outside)
    with pytest.raises(vault_files_module.UnsafeFile):
        vault_files_module.atomic_write(tmp_path / "f.md", b"new")
    assert outside.read_bytes() == b"not yours"
    assert (tmp_path / "f.md").is_symlink()


def test_a_new_file_is_not_lstat_again_after_its_read(mem, monkeypatch) -> None:
    """put_file has just opened the file (O_NOFOLLOW) and found nothing; the write
    does not lstat it a second time. The folders on the way are still checked."""
    put_object(mem, "person:a", "Alice")
    root = vault(mem)
    target = os.path.join(root, *object_path("person:a").split("/"))
    seen: list[str] = []
    real_lstat = os.lstat

    def spy_lstat(path, *args, **kwargs):
        seen.append(os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(vault_files_module.os, "lstat", spy_lstat)
    project(mem)
    assert (root / object_path("person:a")).is_file()
    assert target not in seen
    assert os.path.join(root, "objects", "person") in seen  # its folder was checked


def test_a_failed_write_is_recorded_shown_and_retried(mem, monkeypatch) -> None:
    put_object(mem, "person:a", "Alice")
    put_object(mem, "person:b", "Bob")
    project(mem)
    put_object(mem, "person:a", summary="new")
    put_object(mem, "person:b", summary="new too")
    real_replace = os.replace

    def failing_replace(src, dst):
        if str(dst).endswith(Path(object_path("person:a")).name):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(vault_files_module.os, "replace", failing_replace)
    result = project(mem)
    assert [e["object_id"] for e in result.errors] == ["person:a"]
    assert "No space left" in result.errors[0]["error"]
    assert "_No summary._" in read(mem, object_path("person:a"))  # the old file, whole
    assert not [p for p in vault(mem).rglob("*") if p.name.endswith(".memvault-tmp")]
    status = vault_status(mem.conn)
    assert status["error_total"] == 1 and status["errors"][0]["object_id"] == "person:a"
    assert status["pending_objects"] == 1

    put_object(mem, "person:c", "Carol")
    assert pending_owners(mem.conn)[-1] == "person:a"  # a failing owner waits its turn

    monkeypatch.setattr(vault_files_module.os, "replace", real_replace)
    retry = project(mem)
    assert retry.errors == []
    assert "new" in read(mem, object_path("person:a"))
    assert vault_status(mem.conn)["error_total"] == 0


def test_overlapping_runs_are_refused(mem) -> None:
    with vault_lock(vault(mem)), pytest.raises(ProjectionBusy):
        project(mem)


# -- file content ----------------------------------------------------------------------------
def test_front_matter_is_one_block_with_obsidian_properties(mem) -> None:
    put_object(mem, "person:秦浩宇", "秦浩宇 😀", aliases=["浩宇", "qhy", "yes"],
               summary="---\nnot front matter", body="---\ntitle: fake\n---\ntext",
               cues=["谁是浩宇"])
    project(mem)
    text = read(mem, object_path("person:秦浩宇"))
    assert text.startswith("---\n")
    post = frontmatter.loads(text)
    assert not post.content.lstrip().startswith("---")  # exactly one front-matter block
    meta = post.metadata
    assert list(meta) == ["id", "type", "status", "aliases", "tags", "space", "updated",
                          "version", "relations", "sources"]
    assert all(k == k.lower() for k in meta)
    assert meta["id"] == "person:秦浩宇" and meta["aliases"] == ["秦浩宇 😀", "浩宇", "qhy", "yes"]
    assert meta["tags"] == ["memvault/person", "memvault/space/shared"]
    assert meta["space"] == "shared"
    assert meta["updated"].isoformat() == "2026-10-05T09:00:01"
    assert "title" not in meta and "# 秦浩宇 😀" in post.content
    assert "谁是浩宇" in post.content


def test_core_files_are_verbatim_without_front_matter(mem) -> None:
    content = "---\nnot: front matter\n---\r\nCRLF kept\n"
    mem.write_core_file("AGENTS.md", content)
    project(mem)
    assert (vault(mem) / "AGENTS.md").read_bytes() == content.encode()
    assert (vault(mem) / "SOUL.md").read_bytes() == b""
    assert (vault(mem) / "USER.md").exists()


def test_merged_and_deleted_objects_say_so(mem) -> None:
    put_object(mem, "person:old", "Old Name")
    put_object(mem, "person:new", "New Name")
    put_object(mem, "todo:gone", "Gone")
    project(mem)
    put_object(mem, "person:old", redirect_to="person:new")
    with write(mem.conn):
        mem.conn.execute("DELETE FROM object_versions WHERE object_id = 'todo:gone'")
        mem.conn.execute("DELETE FROM objects WHERE id = 'todo:gone'")
    project(mem)
    merged = read(mem, object_path("person:old"))
    meta = frontmatter.loads(merged).metadata
    assert meta["status"] == "merged" and "New Name" in meta["merged_into"]
    assert "merged into [[" in merged
    gone = read(mem, object_path("todo:gone"))
    assert frontmatter.loads(gone).metadata["status"] == "deleted"
    assert "no longer exists" in gone
    directory = read(mem, "objects/README.md")
    assert "Merged into another object" in directory and "Gone" not in directory
    assert broken_links(vault(mem)) == []
    assert project(mem).objects == 0


def test_render_is_reproducible(tmp_path) -> None:
    trees = []
    for n in range(2):
        with open_memory(tmp_path / f"home{n}") as memory:
            put_object(memory, "person:a", "Alice", body="b")
            put_object(memory, "todo:t", "Task | one")
            relate(memory, "todo:t", "assigned_to", "person:a")
            memory.write_core_file("USER.md", "user\n")
            tick(memory, 3600 * n)  # a different "now" must not show in any file
            project(memory)
            trees.append(vault_files(memory.config.vault_path))
    assert trees[0] == trees[1]


# -- hand edits without a watcher ------------------------------------------------------------
def test_a_hand_edit_is_kept_as_conflict_when_the_file_is_rewritten(mem) -> None:
    put_object(mem, "person:a", "Alice")
    project(mem)
    path = vault(mem) / object_path("person:a")
    path.write_text("my own notes\n", encoding="utf-8")
    put_object(mem, "person:a", body="new body")
    result = project(mem)
    # A Markdown name beside the file, so Obsidian lists it next to the object.
    conflict = path.with_name(path.stem + ".conflict-1.md")
    assert conflict.read_text(encoding="utf-8") == "my own notes\n"
    assert result.conflicts == [object_path('person:a').replace(".md", ".conflict-1.md")]
    assert "new body" in path.read_text(encoding="utf-8")
    assert vault_status(mem.conn)["conflicts"][0]["conflict_path"].endswith(".conflict-1.md")
    path.write_text("second edit\n", encoding="utf-8")
    project(mem, rebuild=True)
    assert path.with_name(path.stem + ".conflict-2.md").read_text() == "second edit\n"
    assert conflict.read_text(encoding="utf-8") == "my own notes\n"


def test_a_file_the_projector_never_wrote_is_not_overwritten_silently(mem) -> None:
    put_object(mem, "person:a", "Alice")
    path = vault(mem) / object_path("person:a")
    path.parent.mkdir(parents=True)
    path.write_text("was here first\n", encoding="utf-8")
    project(mem)
    assert path.with_name(path.stem + ".conflict-1.md").read_text() == "was here first\n"


def test_a_core_file_edit_is_imported_by_the_projector_too(mem) -> None:
    mem.write_core_file("SOUL.md", "v1\n")
    project(mem)
    (vault(mem) / "SOUL.md").write_text("edited by hand\n", encoding="utf-8")
    mem.write_core_file("SOUL.md", "v2 from the agent\n")
    result = project(mem)
    assert [c["action"] for c in result.core if c["name"] == "SOUL.md"] == ["imported"]
    assert read_core_file(mem.conn, "SOUL.md")["content"] == "edited by hand\n"
    assert [h["origin"] for h in core_file_history(mem.conn, "SOUL.md")] == ["api", "api", "hand"]
    assert (vault(mem) / "SOUL.md").read_text() == "edited by hand\n"


def test_directory_lists_by_type_then_name_with_counts(mem) -> None:
    put_object(mem, "person:z", "Zed")
    put_object(mem, "person:a", "amy")
    put_object(mem, "person:c", "Cleo", status="candidate")
    put_object(mem, "credential:gh", "GitHub token", body="in the keychain")
    project(mem)
    text = read(mem, "objects/README.md")
    assert text.index("## person") < text.index("## credential")
    people = text[text.index("## person"):text.index("## credential")]
    assert people.index("amy") < people.index("Cleo") < people.index("Zed")
    assert "| [[#person]] | 3 | active 2, candidate 1 |" in text
    assert broken_links(vault(mem)) == []
