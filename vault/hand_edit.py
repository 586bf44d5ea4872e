"""Reading a hand-edited object file as a person's correction (`memvault accept-edit FILE`).

Hand edits of object files are never imported by themselves (docs/spec.md section 6): this runs only
when a person names one file. It reads that file, works out which profile fields the person
changed, and hands them back as an objects.corrections.ProfileEdit; the caller commits it.

How the changed fields are found: the file is compared with what the projector rendered for the
version its front matter names (rendered again from that version's row), both parsed the same
way. A field whose parsed text equals the rendering's is unchanged and keeps the stored value
exactly (so whatever rendering does to a field, such as folding whitespace, is never
written back); a field that differs is taken from the file.

Invariants:
- the file must be inside the vault, under `objects/<type>/`, a regular file reached through real
  folders (no symlink followed, no FIFO or device opened: files.read_file), at most `max_bytes`.
- the id comes from the front matter (parsed with python-frontmatter) and must be the object
  whose hash names the file: the file of another object is refused.
- a front matter that names a key twice is refused (YAML would keep the last one unseen), and
  one nesting more than MAX_FRONT_MATTER_DEPTH levels (PyYAML composes a level by recursion:
  5,000 brackets in 10 KB ended in a RecursionError).
- nothing here writes anything.
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

from ..base.errors import InputError
from ..objects.corrections import ProfileEdit
from ..objects.ids import check_object_id
from ..objects.records import get_object
from ..objects.versions import record_at
from .files import read_file, sha256, vault_file
from .paths import OBJECTS_DIR, conflict_original, object_hash, relative
from .render import Renderer, with_unknown_lines

# Levels of nesting a front matter may have (a key, its list, an item is three): the vault
# writes no more than that, and past this the file is refused before PyYAML recurses deeper.
MAX_FRONT_MATTER_DEPTH = 16
_META_LINE = re.compile(r"`[^`\n]+` · ")
_EMPTY = {"summary": "_No summary._", "body": "_Empty._"}


@dataclass(frozen=True)
class HandEdit:
    """What a person changed in one object file."""

    object_id: str
    rel_path: str  # vault-relative path of the file read
    is_copy: bool  # a conflict copy (not the object's own file)
    version: int  # the version the file was rendered from (its front matter)
    edit: ProfileEdit
    changed: tuple[str, ...]  # the profile fields the person changed
    digest: str  # sha256 of the bytes read


@dataclass(frozen=True)
class _Parsed:
    name: str
    aliases: tuple[str, ...]
    summary: str
    body: str
    cues: tuple[str, ...]
    state: str | None = None  # front matter `state:` (a schedule's or todo's)


def vault_relative(vault: Path, path: str | Path) -> str:
    """The vault-relative path of `path` (absolute, or relative to the working folder) of an
    object file or a conflict copy of one; InputError for anything else."""
    given = Path(os.path.abspath(path))
    rel = relative(Path(os.path.abspath(vault)), given)
    if rel is None:  # the folders may be named through a link (/tmp -> /private/tmp)
        try:
            folder = relative(vault.resolve(), given.parent.resolve())
        except OSError:
            folder = None
        rel = None if folder is None else f"{folder}/{given.name}".lstrip("/")
    if rel is None:
        raise InputError(f"{path} is not inside the vault {vault}: accept-edit only takes an "
                         "object file of this home's vault (or a conflict copy beside one)")
    parts = rel.split("/")
    name = parts[-1]
    original = conflict_original(name) or name
    if len(parts) != 3 or parts[0] != OBJECTS_DIR or not re.fullmatch(r"[0-9a-f]{16}\.md",
                                                                       original):
        raise InputError(f"{rel} is not an object file: accept-edit takes "
                         "objects/<type>/<hash>.md or a conflict copy of one "
                         "(<hash>.conflict-1.md); a continuation page holds no profile")
    return rel


def read_hand_edit(conn: sqlite3.Connection, vault: Path, path: str | Path, *,
                   max_links: int, max_bytes: int) -> HandEdit:
    """Read and compare one hand-edited object file (see the module docstring)."""
    rel = vault_relative(vault, path)
    data = read_file(vault_file(vault, rel), limit=max_bytes)
    if data is None:
        raise InputError(f"{rel}: no such file in the vault")
    if len(data) > max_bytes:
        raise InputError(f"{rel}: larger than {max_bytes:,} bytes; not an object file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{rel}: not valid UTF-8 (byte {exc.start}); nothing changed") from None
    meta, content = _front_matter(rel, text)
    object_id, version = _identity(rel, meta)
    get_object(conn, object_id)  # NotFound: no such object (any more)
    base_record = record_at(conn, object_id, version)
    base_file = Renderer(conn, max_links).render_object(base_record).files
    base_meta, base_content = _front_matter(rel, next(iter(base_file.values())).decode("utf-8"))
    mine, base = _parse(rel, meta, content), _parse(rel, base_meta, base_content)
    edit, changed = _edit(mine, base, base_record.name)
    if edit.body is not None:  # the page hides the body's unknown lines: keep them
        edit = replace(edit, body=with_unknown_lines(edit.body, base_record.body))
    name = rel.rsplit("/", 1)[-1]
    return HandEdit(object_id, rel, conflict_original(name) is not None, version, edit,
                    changed, sha256(data))


class _DuplicateKey(Exception):
    def __init__(self, key: object, lines: tuple[int, int]) -> None:
        super().__init__(key)
        self.key, self.lines = key, lines


class _TooDeep(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader, refusing a mapping that names one key twice (YAML keeps the last
    silently, so `id:` or `aliases:` written twice would take one of the two unseen) and a
    node nested more than MAX_FRONT_MATTER_DEPTH levels deep."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_FRONT_MATTER_DEPTH:
                raise _TooDeep(self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line)
            except TypeError:  # an unhashable key: SafeLoader refuses it itself
                continue
            if first != key_node.start_mark.line:
                raise _DuplicateKey(key, (first + 1, key_node.start_mark.line + 1))
        return super().construct_mapping(node, deep=deep)


class _UniqueKeyYAML(YAMLHandler):
    def load(self, fm: str, **kwargs: object) -> Any:
        return yaml.load(fm, Loader=_UniqueKeyLoader)


def _front_matter(rel: str, text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        raise InputError(f"{rel}: no front matter (the file must start with the `---` block "
                         "the vault wrote); nothing changed")
    try:
        post = frontmatter.loads(text, handler=_UniqueKeyYAML())
    except _DuplicateKey as exc:
        raise InputError(f"{rel}: the front matter names `{str(exc.key)[:60]}` twice (lines "
                         f"{exc.lines[0]} and {exc.lines[1]}); keep one; nothing "
                         "changed") from None
    except _TooDeep as exc:
        raise InputError(f"{rel}: the front matter nests more than {MAX_FRONT_MATTER_DEPTH} "
                         f"levels deep (at line {exc.line}); nothing changed") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise InputError(f"{rel}: the front matter is not valid YAML{line}; nothing "
                         "changed") from None
    except (TypeError, ValueError):  # YAML, but a list or a scalar where keys belong
        raise InputError(f"{rel}: the front matter is not a block of `key: value` lines; "
                         "nothing changed") from None
    if not isinstance(post.metadata, dict) or not post.metadata:
        raise InputError(f"{rel}: the front matter is empty or unreadable; nothing changed")
    return dict(post.metadata), post.content


def _identity(rel: str, meta: dict[str, Any]) -> tuple[str, int]:
    """The id and version the front matter names, checked against the file's name."""
    object_id, version = meta.get("id"), meta.get("version")
    if not isinstance(object_id, str):
        raise InputError(f"{rel}: the front matter has no `id:` (type:slug)")
    try:
        check_object_id(object_id)
    except InputError as exc:
        raise InputError(f"{rel}: front matter `id`: {exc}") from None
    stem = (conflict_original(rel.rsplit("/", 1)[-1]) or rel.rsplit("/", 1)[-1])[:-3]
    if object_hash(object_id) != stem or rel.split("/")[1] != object_id.partition(":")[0]:
        raise InputError(f"{rel}: its front matter names {object_id}, whose file is "
                         f"objects/{object_id.partition(':')[0]}/{object_hash(object_id)}.md, "
                         "not this one: a file of one object cannot correct another")
    if type(version) is not int or version < 1:
        raise InputError(f"{rel}: the front matter has no `version:` (a whole number)")
    return object_id, version


def _parse(rel: str, meta: dict[str, Any], content: str) -> _Parsed:
    """The profile fields of an object file's Markdown (as render.py lays it out)."""
    lines = content.split("\n")
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    if title is None:
        raise InputError(f"{rel}: no `# name` title line; nothing changed")
    meta_line = next((i for i in range(title + 1, len(lines))
                      if _META_LINE.match(lines[i])), None)
    body_at = _heading(lines, "## Body", meta_line or title, first=True)
    cues_at = _heading(lines, "## Cues", body_at or title, first=False)
    if meta_line is None or body_at is None or cues_at is None:
        missing = ("the `id` line under the title" if meta_line is None else
                   "the `## Body` heading" if body_at is None else "the `## Cues` heading")
        raise InputError(f"{rel}: {missing} is missing; keep the layout the vault wrote and "
                         "change only the text; nothing changed")
    cues_end = next((i for i in range(cues_at + 1, len(lines))
                     if lines[i].startswith("## ") or lines[i] == "---"), len(lines))
    cues = []
    for line in lines[cues_at + 1:cues_end]:
        if line.startswith("- "):
            cues.append(line[2:].strip())
        elif line.strip() not in ("", "_None._"):
            raise InputError(f"{rel}: under `## Cues` each cue is one `- ` line; found "
                             f"{line[:60]!r}")
    aliases = meta.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InputError(f"{rel}: front matter `aliases` must be a list of names")
    state = meta.get("state")
    if state is not None and not isinstance(state, str):
        raise InputError(f"{rel}: front matter `state` must be one word (cancelled, done, …)")
    return _Parsed(
        name=lines[title][2:].strip(), aliases=tuple(aliases),
        summary=_field("summary", lines[meta_line + 1:body_at]),
        body=_field("body", lines[body_at + 1:cues_at]), cues=tuple(c for c in cues if c),
        state=state)


def _heading(lines: list[str], heading: str, after: int, first: bool) -> int | None:
    found = [i for i in range(after + 1, len(lines)) if lines[i].rstrip() == heading]
    if not found:
        return None
    return found[0] if first else found[-1]


def _field(name: str, lines: list[str]) -> str:
    text = "\n".join(lines).strip()
    return "" if text == _EMPTY[name] else text


def _edit(mine: _Parsed, base: _Parsed, base_name: str) -> tuple[ProfileEdit, tuple[str, ...]]:
    """The fields `mine` changes from `base`, as a ProfileEdit (unchanged fields left None)."""
    changed = tuple(f for f in ("name", "aliases", "summary", "body", "cues")
                    if getattr(mine, f) != getattr(base, f))
    # A state taken out of the front matter is no state to set: only a new one counts.
    if mine.state is not None and mine.state != base.state:
        changed += ("state",)
    name = mine.name if "name" in changed else None
    aliases = None
    if "aliases" in changed:
        # The front matter lists the name first among the aliases (for Obsidian): not an alias.
        listed = list(mine.aliases)
        if listed and listed[0] == base_name:
            listed = listed[1:]
        aliases = tuple(a for a in listed if a != (name or base_name))
    return ProfileEdit(
        name=name, aliases=aliases,
        summary=mine.summary if "summary" in changed else None,
        body=mine.body if "body" in changed else None,
        cues=mine.cues if "cues" in changed else None,
        state=mine.state if "state" in changed else None), changed
