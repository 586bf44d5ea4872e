"""Where things live in the vault, and how names are written into links.

Invariants:
- an object's file name is a hash of its id, never of its name: `sha256(id as UTF-8)`, first
  16 hex digits. Ids are unique, so names can be anything (Chinese, emoji, `|`, `/`) without a
  clash or a path problem, and a rename never moves a file. The function is frozen: changing it
  would orphan every vault; tests pin known values.
- continuation pages are `<hash>-p<N>.md` (N >= 2); '-' is not a hex digit, so no page name can
  equal another object's hash.
- every path handed around is vault-relative and '/'-separated; the writer joins it to the vault.
- a name shown in Markdown never breaks a wikilink: `|`, `[` and `]` become their full-width
  forms and whitespace runs become one space.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from ..objects.corefiles import CORE_FILES
from ..objects.ids import OBJECT_TYPES
from .schema import DIRECTORY_KEY

HASH_CHARS = 16
OBJECTS_DIR = "objects"
DIRECTORY_PATH = DIRECTORY_KEY  # objects/README.md
TEMP_SUFFIX = ".memvault-tmp"
CONFLICT_SUFFIX = ".conflict"  # the old-style copy `<file>.conflict`, `<file>.<n>.conflict`
# A conflict copy: `<stem>.conflict-<n>.md` (Markdown, so Obsidian shows it), or old-style.
_CONFLICT_NAME = re.compile(
    r"(?P<stem>.+)\.conflict-[1-9]\d*\.md|(?P<old>.+\.md)(?:\.[1-9]\d*)?\.conflict")

_LINK_SAFE = str.maketrans({"|": "｜", "[": "［", "]": "］"})


@functools.lru_cache(maxsize=1 << 16)  # a render hashes each id once per link to it
def object_hash(object_id: str) -> str:
    """The stable file stem of an object: the first 16 hex digits of sha256 of its id."""
    return hashlib.sha256(object_id.encode("utf-8")).hexdigest()[:HASH_CHARS]


def object_type(object_id: str) -> str:
    """The type part of an id (`person` of `person:qhy`)."""
    return object_id.partition(":")[0]


def object_path(object_id: str) -> str:
    """`objects/<type>/<hash>.md`."""
    return f"{OBJECTS_DIR}/{object_type(object_id)}/{object_hash(object_id)}.md"


def page_path(object_id: str, page: int) -> str:
    """Continuation page `page` (2, 3, ...) of an object: `objects/<type>/<hash>-p<page>.md`."""
    if page < 2:
        raise ValueError("continuation pages start at 2")
    return f"{OBJECTS_DIR}/{object_type(object_id)}/{object_hash(object_id)}-p{page}.md"


def page_stem(object_id: str, page: int) -> str:
    """The link target of a page: the hash for page 1, `<hash>-p<N>` after."""
    return object_hash(object_id) if page == 1 else f"{object_hash(object_id)}-p{page}"


def is_object_file(rel_path: str) -> bool:
    """True for `objects/<type>/<name>.md` (a projected object file or page), not for a
    conflict copy kept beside one."""
    parts = rel_path.split("/")
    return (
        len(parts) == 3 and parts[0] == OBJECTS_DIR and parts[1] in OBJECT_TYPES
        and parts[2].endswith(".md") and not is_conflict_copy(parts[2])
    )


def conflict_name(name: str, n: int) -> str:
    """The `n`th conflict copy of the file `name`: `<stem>.conflict-<n>.md` (`abc.md` ->
    `abc.conflict-1.md`); a name without `.md` keeps its whole name as the stem."""
    stem = name[:-3] if name.endswith(".md") else name
    return f"{stem}.conflict-{n}.md"


def is_conflict_copy(name: str) -> bool:
    """True for a conflict copy's file name, new-style (`<stem>.conflict-<n>.md`) or old-style
    (`<file>.md.conflict`, `<file>.md.<n>.conflict`)."""
    return _CONFLICT_NAME.fullmatch(name) is not None


def conflict_original(name: str) -> str | None:
    """The name of the file a conflict copy was kept beside (`abc.conflict-2.md` and
    `abc.md.2.conflict` -> `abc.md`), or None when `name` is not a conflict copy."""
    match = _CONFLICT_NAME.fullmatch(name)
    if match is None:
        return None
    return match["old"] or f"{match['stem']}.md"


def is_core_file(rel_path: str) -> bool:
    """True for AGENTS.md, SOUL.md or USER.md at the vault root."""
    return rel_path in CORE_FILES


def is_temp_name(name: str) -> bool:
    """A temporary file of the projector (`.<name>.<pid>-<n>.memvault-tmp`)."""
    return name.endswith(TEMP_SUFFIX)


@functools.lru_cache(maxsize=1 << 16)  # a name is shown in every file that links to it
def link_text(name: str) -> str:
    """A name made safe for the display part of a wikilink (and for headings)."""
    text = " ".join(name.split()).translate(_LINK_SAFE)
    return text or "?"


def wikilink(target_stem: str, name: str) -> str:
    """`[[<stem>|<name>]]` with the name escaped."""
    return f"[[{target_stem}|{link_text(name)}]]"


@functools.lru_cache(maxsize=1 << 16)  # every file linking to an object writes the same link
def object_link(object_id: str, name: str | None) -> str:
    """A wikilink to an object's main file showing its name (its id if the name is unknown)."""
    return wikilink(object_hash(object_id), name if name else object_id)


def relative(vault: Path, path: str | Path) -> str | None:
    """The vault-relative '/' path of `path`, or None if it is outside the vault."""
    try:
        rel = Path(path).relative_to(vault)
    except ValueError:
        try:
            rel = Path(path).resolve().relative_to(vault.resolve())
        except (ValueError, OSError):
            return None
    return "/".join(rel.parts)
