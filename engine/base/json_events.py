"""A JSON text read as ijson's event stream, a value at a time, so a reader of a large document
holds only what it keeps of it, never the document's whole tree.

`JsonEvents` builds the values a reader wants (`value`: what ijson.items builds, floats as
float, a repeated key keeping its last value), skips the others without building them (`skip`),
and walks a large object or array member by member (`members`), each member built and handed
over before the next is read. Errors are the parser's (ijson.JSONError) and the stream's
(e.g. memvault.base.json_depth.JsonTooDeep); nothing here judges malformed JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import ijson

_STARTS = frozenset(("start_map", "start_array"))
_ENDS = frozenset(("end_map", "end_array"))


class Readable(Protocol):
    """What the parser reads from: a binary file, or a wrapper of one (DepthCheckedStream)."""

    def read(self, size: int = -1, /) -> bytes: ...


class JsonEvents:
    """One JSON text's events (ijson.basic_parse), read by value."""

    def __init__(self, stream: Readable) -> None:
        self._events: Iterator[tuple[str, Any]] = ijson.basic_parse(stream, use_float=True)

    def next(self) -> tuple[str, Any] | None:
        """The next event (name, value), or None past the end of the text."""
        return next(self._events, None)

    def value(self, event: str, value: Any) -> Any:
        """The whole value that begins with this event, built as ijson.items builds it (a
        repeated key keeps its last value). Inlined, not ijson.ObjectBuilder: a method call
        per event made reading an export twice as slow."""
        if event not in _STARTS:
            return value
        root: Any = {} if event == "start_map" else []
        open_: list[Any] = [root]
        top, key = root, None
        for event, value in self._events:
            if event == "map_key":
                key = value
                continue
            if event in _ENDS:
                open_.pop()
                if not open_:
                    break
                top = open_[-1]
                continue
            if event == "start_map":
                value = {}
            elif event == "start_array":
                value = []
            if type(top) is list:
                top.append(value)
            else:
                top[key] = value
            if event in _STARTS:
                open_.append(value)
                top = value
        return root

    def skip(self, event: str) -> None:
        """Read past the value that begins with this event without building it."""
        if event not in _STARTS:
            return
        depth = 1
        for event, _ in self._events:
            if event in _STARTS:
                depth += 1
            elif event in _ENDS:
                depth -= 1
                if not depth:
                    return

    def members(self) -> Iterator[tuple[str | None, str, Any]]:
        """The members of the object or array just opened: (its key, None in an array; the
        event its value begins with; that event's value). The caller reads each member's value
        (`value` or `skip`) before asking for the next."""
        for event, value in self._events:
            if event in _ENDS:
                return
            if event == "map_key":
                first, first_value = next(self._events)
                yield value, first, first_value
            else:
                yield None, event, value

    def rest(self) -> None:
        """Read to the end of the text: the parser refuses anything after its one value."""
        for _ in self._events:
            pass
