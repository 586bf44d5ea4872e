"""`sample_vault/` is committed: it is the vault `memvault demo` renders from the bundled
sample on a new home. This test runs the demo and fails on any difference.

To accept a deliberate change (templates, the builtin model, the sample):
    MEMVAULT_UPDATE_SAMPLE=1 pytest tests/test_vault_sample.py
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import frontmatter
from click.testing import CliRunner
from memvault.cli import main
from memvault.vault.paths import object_path
from vault_support import broken_links, vault_files

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


def test_sample_vault_is_what_the_demo_renders(tmp_path) -> None:
    home = tmp_path / "home"
    result = CliRunner().invoke(main, ["--home", str(home), "demo"])
    assert result.exit_code == 0, result.output
    fresh = vault_files(home / "vault")
    if os.environ.get("MEMVAULT_UPDATE_SAMPLE") == "1":
        shutil.rmtree(SAMPLE, ignore_errors=True)
        shutil.copytree(home / "vault", SAMPLE)
    committed = vault_files(SAMPLE) if SAMPLE.is_dir() else {}
    differ = sorted(p for p in set(fresh) | set(committed) if fresh.get(p) != committed.get(p))
    assert differ == [], (
        "sample_vault/ differs from what `memvault demo` renders (rerun with "
        f"MEMVAULT_UPDATE_SAMPLE=1 to accept): {differ}"
    )


def test_sample_vault_reads_well_in_obsidian() -> None:
    assert broken_links(SAMPLE) == []
    stems = [p.stem for p in SAMPLE.rglob("*.md")]
    assert len(stems) == len(set(stems)), "base names must be unique for [[hash]] links"
    for path in (SAMPLE / "objects").rglob("*.md"):
        if path.name == "README.md":
            continue
        post = frontmatter.loads(path.read_text(encoding="utf-8"))
        assert post.metadata["id"] and isinstance(post.metadata["tags"], list)
        assert "aliases" not in post.metadata or isinstance(post.metadata["aliases"], list)
    qhy = frontmatter.loads((SAMPLE / object_path("person:秦浩宇")).read_text(encoding="utf-8"))
    assert qhy.metadata["aliases"][:2] == ["秦浩宇", "浩宇"]
    for name in ("AGENTS.md", "SOUL.md", "USER.md"):
        assert not (SAMPLE / name).read_text(encoding="utf-8").startswith("---")
