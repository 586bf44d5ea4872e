"""Rendering: SQLite rows in, Markdown bytes out, through the jinja2 templates in `templates/`.

Invariants:
- rendering only reads the store, writes nothing, and depends on stored data and the day it
  is given alone: no wall clock, no locale, no dict or set order. The same database renders
  the same bytes anywhere on the same day. The day makes a one-off schedule whose day has
  gone read `past` (objects/states.py), as every other read shows it; without one (a hand
  edit's comparison, `Renderer(conn)`), the stored state is shown.
- every object file has exactly one front-matter block, built here with a safe YAML dumper
  (lowercase keys, `aliases`/`tags` as lists, ISO datetimes) and never taken from text an
  object holds. Core files are projected verbatim, without front matter.
- a file shows at most `max_links` relations and sources (relations first, as
  `objects/links.py` object_links orders them); the rest go to continuation pages linked from it.
- every wikilink targets a hash (`[[<hash>|Name]]`), so renames never break links.
- each source shows the span it cites, read from the event as the file is rendered, never from
  an object (`page_links.py` reads the texts, `quotes.py` makes the line safe).
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import jinja2

from ..base.display import for_markdown
from ..base.spaces import EVERY_SPACE
from ..objects.corefiles import CORE_FILES, read_core_file
from ..objects.ids import OBJECT_TYPES, ObjectStatus
from ..objects.records import ObjectRecord, object_headings, object_records, resolve_redirect
from ..objects.states import is_current, shown_state
from .bookkeeping import projected_owners
from .page_links import (
    Relation,
    Source,
    one_line,
    read_links,
    read_objects,
)
from .paths import (
    DIRECTORY_PATH,
    link_text,
    object_link,
    object_path,
    object_type,
    page_path,
    page_stem,
    wikilink,
)
from .schema import DIRECTORY_KEY

README_SUMMARY_CHARS = 120


def template_dir() -> Path:
    """The templates: `vault/templates` in a wheel, `<repo>/templates` in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "object.md.j2").is_file():
            return candidate
    raise FileNotFoundError(
        f"memvault's vault templates are missing (looked in {here / 'templates'} and "
        f"{here.parent / 'templates'}); reinstall memvault"
    )


@functools.lru_cache(maxsize=4)
def make_environment(directory: Path | None = None) -> jinja2.Environment:
    """The jinja2 environment every vault file is rendered with (Markdown, no autoescape).

    Cached: compiling the templates costs more than a whole run that has nothing to do.
    """
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory or template_dir())),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        # The templates ship with the package and do not change under a run: no stat of the
        # template file at every `{% include %}` (one an object file) to see if it did.
        auto_reload=False,
    )


_PLAIN = re.compile(r"[^\W\d_][\w./:-]*")
_KEY = re.compile(r"[a-z_]+")
_RESERVED = {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}
# Characters YAML may not hold raw (non-printable, or line breaks of YAML 1.1) and surrogates.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


# Scalars already written: types, statuses, tags recur in every file (bounded: ids do not).
_SCALARS: dict[str, str] = {}


def yaml_scalar(value: str | int | datetime) -> str:
    """One YAML scalar: ints and datetimes plain, strings plain only when that is unambiguous.

    Other strings are JSON-quoted, which is a valid YAML double-quoted scalar once the few
    characters YAML forbids raw are escaped too.
    """
    if type(value) is not str:  # most values are strings: one check for them
        if isinstance(value, bool):
            raise TypeError("no booleans in front matter")
        if isinstance(value, int):
            return str(value)
        if isinstance(value, datetime):
            return value.isoformat()
    cached = _SCALARS.get(value)
    if cached is not None:
        return cached
    if _PLAIN.fullmatch(value) and not value.endswith(":") and value.lower() not in _RESERVED:
        scalar = value
    else:
        quoted = json.dumps(value, ensure_ascii=False)
        scalar = _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)
    if len(_SCALARS) < 4096:
        _SCALARS[value] = scalar
    return scalar


_GOOD_KEYS: set[str] = set()  # keys already checked: a handful, in every file


def _check_key(key: str) -> None:
    if not _KEY.fullmatch(key):
        raise ValueError(f"front matter key {key!r}: lowercase letters and _ only")
    if len(_GOOD_KEYS) < 64:  # bounded, though the keys come from code, not from data
        _GOOD_KEYS.add(key)


def front_matter(fields: dict[str, Any]) -> str:
    """The YAML between the `---` lines (ends with a newline): flat keys, lists as blocks.

    Written here rather than by a YAML library: PyYAML's pure-Python emitter cost more than the
    rest of a render, and its C emitter is not everywhere, so output could differ by machine.
    Tests check that PyYAML reads back exactly `fields`.
    """
    lines = []
    for key, value in fields.items():
        if key not in _GOOD_KEYS:
            _check_key(key)
        if isinstance(value, list):
            if not value:
                lines.append(f"{key}: []")
                continue
            lines.append(f"{key}:")
            lines.extend([f"- {yaml_scalar(item)}" for item in value])
        elif type(value) is int:  # counts and versions: no call for them
            lines.append(f"{key}: {value}")
        else:
            lines.append(f"{key}: {yaml_scalar(value)}")
    return "\n".join(lines) + "\n"


def obsidian_datetime(stamp: str) -> datetime | str:
    """A stored ISO time as Obsidian's datetime property wants it: local wall time, seconds."""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    return when.replace(tzinfo=None, microsecond=0)


# A body line that says only that a fact is unknown ("- traits: unknown", "目标 Goal: unknown.").
_UNKNOWN_LINE = re.compile(
    r"^\s*(?:[-*]\s+)?(?P<label>[^:：\n]{1,60}?)\s*[:：]\s*(?:unknown|未知)\s*[.。]?\s*$", re.I)
_LABELLED = re.compile(r"^\s*(?:[-*]\s+)?(?P<label>[^:：\n]{1,60}?)\s*[:：]")


def shown_body(body: str) -> str:
    """An object's body as its vault page shows it: without the lines that say only that a
    fact is unknown. The stored body keeps them (a model writes unknown facts as unknown, never
    guessed); a page of "traits: unknown" lines reads as padding."""
    return "\n".join(line for line in body.split("\n") if not _UNKNOWN_LINE.match(line))


def with_unknown_lines(edited: str, stored: str) -> str:
    """A body edited on its vault page, with the stored body's unknown lines the page did not
    show put back at its end: each one whose label the edit does not now give a value."""
    labels = {m.group("label").casefold() for line in edited.split("\n")
              if (m := _LABELLED.match(line))}
    hidden = [line for line in stored.split("\n")
              if (m := _UNKNOWN_LINE.match(line)) and m.group("label").casefold() not in labels]
    return "\n".join([edited.rstrip("\n"), *hidden]) if hidden else edited


def _render(template: jinja2.Template, variables: dict[str, Any]) -> str:
    """`template.render(**variables)` in a shared context: `variables` as they are, not copied
    with the environment's globals (a ChainMap) for every file. The templates use no globals."""
    context = template.new_context(variables, shared=True)
    try:
        return template.environment.concat(template.root_render_func(context))
    except Exception:
        template.environment.handle_exception()  # raises, with the template's line numbers


def _finish(text: str) -> bytes:
    """Normalise the end of a rendered file to one newline; escape bidi overrides and control
    characters (a page shows what is stored, never what it would do to a terminal); encode."""
    return (for_markdown(text).rstrip("\n") + "\n").encode("utf-8")


# What the templates read as `page.link`, `page.first`: plain attributes, since
# jinja2 tries getattr before the item lookup and a dict's failed getattr costs an exception.
# Not frozen: a frozen dataclass sets each field by object.__setattr__, slow for one a link.
@dataclass(slots=True)
class _Page:
    number: int
    first: int
    last: int
    link: str


@dataclass
class Rendered:
    """The files of one owner (an object, a core file or the directory), main file first."""

    owner: str
    version: int
    files: dict[str, bytes] = field(default_factory=dict)
    pages: dict[str, int] = field(default_factory=dict)  # continuation page path -> number

    @property
    def main_path(self) -> str:
        return next(iter(self.files))


class Renderer:
    """Renders vault files from one connection. Cheap to create; holds the templates."""

    def __init__(self, conn: sqlite3.Connection, max_links: int = 50,
                 env: jinja2.Environment | None = None, today: date | None = None) -> None:
        if max_links < 1:
            raise ValueError("max_links must be >= 1")
        self.conn = conn
        self.max_links = max_links
        self.today = today  # the day a schedule's state is shown as of (None: as stored)
        self.env = env or make_environment()
        self._object = self.env.get_template("object.md.j2")
        self._page = self.env.get_template("continuation.md.j2")
        self._tombstone = self.env.get_template("tombstone.md.j2")
        self._directory = self.env.get_template("directory.md.j2")
        # Rows and links read ahead for a chunk of owners (`preload`), inside the caller's
        # read snapshot; an owner not in `_preloaded` is read on its own.
        self._preloaded: set[str] = set()
        self._records: dict[str, ObjectRecord] = {}
        self._links: dict[str, list[Relation | Source]] = {}

    def preload(self, owners: list[str]) -> None:
        """Read the object rows and links of `owners` in a few queries, for the next
        `render_owner` calls of the same read snapshot. `preload([])` forgets them.

        If the batched read fails, nothing is kept: each owner is then read (and fails, and is
        recorded) on its own.
        """
        self._preloaded, self._records, self._links = set(), {}, {}
        ids = [o for o in dict.fromkeys(owners) if o != DIRECTORY_KEY and o not in CORE_FILES]
        if not ids:
            return
        try:
            rows, links = read_objects(self.conn, ids)
        except sqlite3.Error:
            return
        self._preloaded, self._records, self._links = set(ids), rows, links

    # -- owners -------------------------------------------------------------------------------
    def render_owner(self, owner: str) -> Rendered | None:
        """What the projector would write now for `owner`; None if it would write nothing."""
        if owner == DIRECTORY_KEY:
            return self.render_directory()
        if owner in CORE_FILES:
            return self.render_core(owner)
        if owner in self._preloaded:
            record = self._records.get(owner)
        else:
            record = object_records(self.conn, [owner]).get(owner)
        if record is not None:
            return self.render_object(record)
        if self.conn.execute("SELECT 1 FROM projection WHERE object_id = ?", (owner,)).fetchone():
            return self.render_tombstone(owner)
        return None

    def render_core(self, name: str) -> Rendered:
        """A core file exactly as stored (empty if it was never written), no front matter."""
        current = read_core_file(self.conn, name)
        content = current["content"] if current else ""
        return Rendered(name, current["version"] if current else 0,
                        {name: content.encode("utf-8")})

    # -- objects ------------------------------------------------------------------------------
    def render_object(self, obj: ObjectRecord) -> Rendered:
        """An object's main file and its continuation pages."""
        links = (self._links.get(obj.id, []) if obj.id in self._preloaded
                 else self._read_links(obj.id))
        n_relations = sum(1 for link in links if type(link) is Relation)
        n_sources = len(links) - n_relations
        chunks = [links[i:i + self.max_links] for i in range(0, len(links), self.max_links)]
        chunks = chunks or [[]]
        pages = [
            _Page(
                number=n,
                first=(n - 1) * self.max_links + 1,
                last=(n - 1) * self.max_links + len(chunk),
                link=wikilink(page_stem(obj.id, n), f"page {n}"),
            )
            for n, chunk in enumerate(chunks, start=1)
        ]
        merged_into = None
        status = obj.status
        if obj.redirect_to:
            survivor = resolve_redirect(self.conn, obj.id)
            survivor_record = object_records(self.conn, [survivor]).get(survivor)
            merged_into = object_link(survivor, survivor_record.name if survivor_record else None)
            status = "merged"
        aliases = list(dict.fromkeys([obj.name, *obj.aliases]))
        state = shown_state(obj.type, obj.state, obj.body, obj.summary, self.today)
        fields: dict[str, Any] = {
            "id": obj.id,
            "type": obj.type,
            "status": status,
            **({"state": state} if state else {}),
            "aliases": aliases,
            # the space as a tag too: Obsidian's tag pane and search filter by it
            "tags": [f"memvault/{obj.type}", f"memvault/space/{obj.space}"],
            "space": obj.space,
            "updated": obsidian_datetime(obj.updated_at),
            "version": obj.version,
            "relations": n_relations,
            "sources": n_sources,
        }
        if merged_into:
            fields["merged_into"] = merged_into
        common = {
            "id": obj.id,
            "type": obj.type,
            "title": link_text(obj.name),
            "n_relations": n_relations,
            "n_sources": n_sources,
            "pages": pages,
            "total_links": len(links),
        }
        files: dict[str, bytes] = {}
        files[object_path(obj.id)] = _finish(_render(self._object, dict(
            **common,
            **self._page_links(chunks[0]),
            front_matter=front_matter(fields),
            merged_into=merged_into,
            status=status,
            state=state or "",
            version=obj.version,
            updated_at=obj.updated_at,
            summary=obj.summary.strip(),
            body=shown_body(obj.body).strip("\n"),
            cues=[one_line(c) for c in obj.cues if c.strip()],
            shown=len(chunks[0]),
            page_number=1,
        )))
        owner_link = object_link(obj.id, obj.name)
        numbers: dict[str, int] = {}
        for page, chunk in zip(pages[1:], chunks[1:], strict=True):
            page_fields = {
                "id": obj.id,
                "type": obj.type,
                "page": page.number,
                "pages": len(pages),
                "tags": [f"memvault/{obj.type}", "memvault/continuation"],
            }
            numbers[page_path(obj.id, page.number)] = page.number
            files[page_path(obj.id, page.number)] = _finish(_render(self._page, dict(
                **common,
                **self._page_links(chunk),
                front_matter=front_matter(page_fields),
                owner_link=owner_link,
                page_number=page.number,
                first=page.first,
                last=page.last,
            )))
        return Rendered(obj.id, obj.version, files, numbers)

    def _read_links(self, object_id: str) -> list[Relation | Source]:
        """The links of one object not preloaded, as the templates show them."""
        return read_links(self.conn, [object_id]).get(object_id, [])

    @staticmethod
    def _page_links(chunk: list[Relation | Source]) -> dict[str, Any]:
        return {"relations": [link for link in chunk if type(link) is Relation],
                "sources": [link for link in chunk if type(link) is Source]}

    def render_tombstone(self, object_id: str) -> Rendered:
        """The file of an object that is gone from the store: it says so."""
        fields = {
            "id": object_id,
            "type": object_type(object_id),
            "status": "deleted",
            "tags": [f"memvault/{object_type(object_id)}"],
        }
        text = self._tombstone.render(
            front_matter=front_matter(fields), id=object_id, title=link_text(object_id),
        )
        return Rendered(object_id, -1, {object_path(object_id): _finish(text)})

    # -- the directory ------------------------------------------------------------------------
    def render_directory(self) -> Rendered:
        """objects/README.md: every object by type, then name; only files that exist are linked."""
        rows = object_headings(self.conn, EVERY_SPACE)  # the vault shows every space
        projected = projected_owners(self.conn)
        names = {row.id: row.name for row in rows}
        groups = []
        pending = 0
        for type_ in OBJECT_TYPES:
            of_type = [r for r in rows if r.type == type_]
            if not of_type:
                continue
            of_type.sort(key=lambda r: (r.name.casefold(), r.name, r.id))
            counts: dict[str, int] = {}
            entries, merged = [], []
            for row in of_type:
                state = "merged" if row.redirect_to else row.status
                counts[state] = counts.get(state, 0) + 1
                if row.id not in projected:
                    pending += 1
                    continue
                link = object_link(row.id, row.name)
                if row.redirect_to:
                    survivor = resolve_redirect(self.conn, row.id)
                    merged.append({"link": link,
                                   "survivor": object_link(survivor, names.get(survivor))})
                    continue
                summary = one_line(row.summary)
                if len(summary) > README_SUMMARY_CHARS:
                    summary = summary[:README_SUMMARY_CHARS - 1].rstrip() + "…"
                plan = shown_state(row.type, row.state, row.body, row.summary,
                                   self.today)
                entries.append({
                    "link": link,
                    "id": row.id,
                    "space": row.space,
                    "status": "" if row.status == ObjectStatus.ACTIVE else f" ({row.status})",
                    # a plan no longer ahead reads `— cancelled` (`— past`) before its summary
                    "state": "" if is_current(plan) else f" — {plan}",
                    "summary": summary,
                })
            groups.append({
                "type": type_,
                "total": len(of_type),
                "statuses": ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
                "entries": entries,
                "merged": merged,
            })
        spaces: dict[str, int] = {}
        for row in rows:
            if not row.redirect_to:
                spaces[row.space] = spaces.get(row.space, 0) + 1
        text = self._directory.render(groups=groups, total=len(rows), pending=pending,
                                      spaces=sorted(spaces.items()))
        return Rendered(DIRECTORY_KEY, 0, {DIRECTORY_PATH: _finish(text)})
