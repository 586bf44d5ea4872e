"""Regular expressions compiled on first use, not at import.

Compiling memvault's patterns (the date reader's, the secret detector's and its values',
recall's) at import cost about 20 ms of every process, mostly for patterns the command never
runs: `memvault find` compiles the dozen its query and its snippets need, a capture hook the
few its transcript's lines need (bench/cli_startup.py). `lazy_compile(source, flags)` stands
where `re.compile(source, flags)` stood and answers the same methods; the first method asked
for compiles the pattern (once per source and flags: `compiled` is cached) and puts the
compiled pattern's own bound methods on the object, so every later call costs what a compiled
pattern's does.

Only the pattern's methods and attributes are offered (match, search, fullmatch, finditer,
findall, sub, subn, split, scanner, pattern, flags, groups, groupindex): a lazy pattern is no
`re.Pattern` to `isinstance` or to `re.sub(pattern, ...)`; hand such code `.compiled()`.
"""

from __future__ import annotations

import functools
import re
from typing import Any, cast

_DELEGATED = ("match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split",
              "scanner", "flags", "groups", "groupindex")


@functools.cache
def compiled(source: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(source, flags)`, once per source and flags."""
    return re.compile(source, flags)


class LazyPattern:
    """A pattern compiled when first used (see the module's docstring)."""

    # Slots: a slot's lookup is the quickest an attribute has, so a compiled method is reached
    # about as fast as through the pattern itself; an empty slot falls to __getattr__.
    __slots__ = ("pattern", "_flags", *_DELEGATED)

    def __init__(self, source: str, flags: int = 0) -> None:
        self.pattern, self._flags = source, flags

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern itself."""
        return compiled(self.pattern, self._flags)

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name the object does not hold yet: the first use of a method.
        if name not in _DELEGATED:
            raise AttributeError(name)
        pattern = self.compiled()
        for attr in _DELEGATED:
            setattr(self, attr, getattr(pattern, attr))
        return getattr(pattern, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r}, {self._flags!r})"


def lazy_compile(source: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:
    """A pattern that compiles `source` with `flags` when first used; typed as the compiled
    pattern it stands for."""
    return cast(re.Pattern[str], LazyPattern(source, int(flags)))
