"""Spaces: which agent's part of one memory a row belongs to, and what a client may see.

A space is a short name (`work`, `home`, `research`); `shared` is built in and holds
everything written before spaces existed, `project:daily` and the core files. Every event,
hot node and object records its space. A client is bound to one space where it connects
(`memvault mcp --space work`, a service token, `ingest --space`); it sees its own space and
`shared`, and nothing it passes as an argument widens that. The owner's command line, bound
to nothing, sees every space.

`Spaces` is the value each read is handed explicitly (never a global): its `sql` gives the
condition a query filters by, so a read filters where it happens, not a page afterwards.
This is not `memory_organize`'s `scope`, which is a retrieval hint and filters nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InputError

SHARED = "shared"
# The space of a summary head whose turns a person's `space move` split between spaces: its
# summary speaks of both, so no bound client reads it (no client can bind to this name: it is
# no valid space name); the owner, bound to nothing, still does.
SEVERAL = "(several)"
SPACE_MAX_CHARS = 32
_SPACE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")


def check_space(name: object) -> str:
    """`name` if it is a space name (1-32 chars of a-z, 0-9, _ and -, starting with a letter
    or digit); InputError saying why otherwise."""
    if not isinstance(name, str) or not name:
        raise InputError("a space name must be non-empty text, e.g. work, home or research")
    if len(name) > SPACE_MAX_CHARS or not _SPACE_NAME.fullmatch(name):
        raise InputError(
            f"bad space name {name[:40]!r}: use at most {SPACE_MAX_CHARS} chars of a-z, 0-9, "
            "_ and -, starting with a letter or digit (e.g. work, home, research)")
    return name


@dataclass(frozen=True)
class Spaces:
    """What one client sees: bound to `bound` (its own space and `shared`), or, with `bound`
    None, every space (the owner's command line)."""

    bound: str | None = None

    def __post_init__(self) -> None:
        if self.bound is not None:
            check_space(self.bound)

    @classmethod
    def of(cls, name: str | None) -> Spaces:
        """Bound to `name` (checked), or every space for None."""
        return cls(None if name is None else check_space(name))

    @property
    def visible(self) -> tuple[str, ...] | None:
        """The spaces seen, or None for every space."""
        if self.bound is None:
            return None
        return (SHARED,) if self.bound == SHARED else (self.bound, SHARED)

    @property
    def writes(self) -> str:
        """The space this client's writes are stamped with (`shared` when unbound)."""
        return self.bound or SHARED

    def sees(self, space: str) -> bool:
        """Whether a row of `space` is visible."""
        visible = self.visible
        return visible is None or space in visible

    def sql(self, column: str) -> tuple[str, tuple[str, ...]]:
        """A condition on `column` (e.g. "e.space") and its parameters: "1" when every space
        is visible, so the unbound owner's queries keep their plans."""
        visible = self.visible
        if visible is None:
            return "1", ()
        return f"{column} IN ({', '.join('?' * len(visible))})", visible


EVERY_SPACE = Spaces()
