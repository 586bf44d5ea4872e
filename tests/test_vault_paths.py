"""File names, link text and front matter: stable hashes of ids, safe for any name."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given
from hypothesis import strategies as st
from memvault.vault.paths import (
    link_text,
    object_hash,
    object_link,
    object_path,
    page_path,
    page_stem,
    relative,
)

# Frozen: a change here would orphan every existing vault.
KNOWN = {
    "person:qhy": "9df6dea012a8abca",
    "person:秦浩宇": "c5ffda445fbe48fd",
    "knowledge:🥜-allergy": "652bbc7e6bda4936",
    "project:daily": "1d47ac655fd19cff",
}


def test_hash_is_frozen_sha256_of_the_id() -> None:
    for object_id, expected in KNOWN.items():
        assert object_hash(object_id) == expected
        assert hashlib.sha256(object_id.encode()).hexdigest().startswith(expected)


def test_paths_are_by_type_and_hash() -> None:
    assert object_path("person:qhy") == "objects/person/9df6dea012a8abca.md"
    assert page_path("person:qhy", 2) == "objects/person/9df6dea012a8abca-p2.md"
    assert page_stem("person:qhy", 1) == "9df6dea012a8abca"
    assert page_stem("person:qhy", 7) == "9df6dea012a8abca-p7"


@given(st.text(min_size=1, max_size=60))
def test_any_name_gives_a_plain_hex_file_name(slug: str) -> None:
    name = object_path(f"person:{slug}").rsplit("/", 1)[1]
    assert re.fullmatch(r"[0-9a-f]{16}\.md", name)


def test_names_that_look_alike_do_not_clash() -> None:
    ids = ["person:浩宇", "person:浩宇 ", "person:hao-yu", "person:haoyu", "person:😀",
           "person:😃", "person:Ａ", "person:A", "person:a"]
    assert len({object_hash(i) for i in ids}) == len(ids)


def test_link_text_cannot_break_a_wikilink() -> None:
    text = link_text("A|B ]] [[C]]\nD")
    assert "|" not in text and "[" not in text and "]" not in text and "\n" not in text
    assert text == "A｜B ］］ ［［C］］ D"
    assert object_link("person:qhy", "a|b") == "[[9df6dea012a8abca|a｜b]]"
    assert object_link("person:qhy", None) == "[[9df6dea012a8abca|person:qhy]]"
    assert link_text("  ") == "?"


def test_relative_gives_the_vault_relative_slash_path(tmp_path) -> None:
    disk = tmp_path / "objects" / "person" / "x.md"
    assert relative(tmp_path, disk) == "objects/person/x.md"
    assert relative(tmp_path / "sub", tmp_path / "other.md") is None


@given(st.text(max_size=40), st.lists(st.text(max_size=20), max_size=4), st.integers(0, 10**6))
def test_front_matter_reads_back_exactly(text: str, items: list[str], number: int) -> None:
    import yaml
    from memvault.vault.render import front_matter

    fields = {"id": text, "aliases": items, "version": number}
    assert yaml.safe_load(front_matter(fields)) == fields
