"""How deep a JSON text nests, checked on its bytes before a parser reads them.

A parser that builds each nesting level's path (ijson's prefixes: "item.item.item...") holds
memory by the square of the depth: 40 KB of nested brackets once took 1 GB before the import
said "expected a conversation object". Nothing memvault reads nests deeply (an event's meta at
most 32 levels, a chat export's conversation about 10, a restored row 2), so every JSON that
comes from outside (`memvault import`, `ingest`, `restore`) is refused past MAX_DEPTH levels,
here, in constant memory, before the parser sees the bytes that go too deep.

`DepthGuard.feed` reads a text in pieces of any size (a stream's blocks) with C-speed bytes
operations only: escaped backslashes and quotes are dropped, then every byte but quotes and
brackets, and the brackets between quote pairs (inside strings) with them; a string cut by a
piece's end, or an escape cut after its backslash, is carried to the next piece as a flag. A
piece with fewer brackets than the room left is not walked at all. Malformed JSON is not
judged here: the parser names it; this only keeps the parser from going deep.
"""

from __future__ import annotations

from itertools import accumulate
from typing import IO

from .errors import InputError

MAX_DEPTH = 64  # nesting levels a JSON text may open (an array or object is one level)

_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256  # each bracket's step in depth
for _b in b"[{":
    _STEP[_b] = 1
for _b in b"]}":
    _STEP[_b] = -1
_WHITESPACE = b" \t\r\n"


class JsonTooDeep(InputError):
    """A JSON text nests more than its limit; `offset`: a stream does so before this byte."""

    def __init__(self, limit: int, offset: int | None = None) -> None:
        where = f" (before byte {offset:,})" if offset is not None else ""
        super().__init__(f"JSON nested more than {limit} levels deep{where}; nothing memvault "
                         "reads nests that deep")
        self.offset = offset


class DepthGuard:
    """The nesting depth of a JSON text read in pieces; `feed` raises JsonTooDeep."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        self.limit = limit
        self.depth = 0
        self.read = 0  # bytes fed so far
        self.first: int | None = None  # the first byte that is not whitespace (None: none yet)
        self._in_string = False
        self._escaped = False  # the piece before ended on a string's escaping backslash

    def feed(self, data: bytes) -> None:
        """Take the next piece of the text; raise JsonTooDeep once it nests past the limit."""
        if not data:
            return
        self.read += len(data)
        if self.first is None:
            body = data.lstrip(_WHITESPACE)
            if body:
                self.first = body[0]
        if self._escaped:  # the byte the backslash ending the last piece escapes
            data, self._escaped = data[1:], False
        # A backslash run pairs up from its start (a run never starts escaped): an odd run at
        # the end escapes the next piece's first byte.
        if (len(data) - len(data.rstrip(b"\\"))) % 2:
            data, self._escaped = data[:-1], True
        # Escaped backslashes and quotes go first, then every byte but quotes and brackets (a
        # backslash left escapes a letter): each quote left opens or closes a string.
        plain = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
        parts = plain.split(b'"')
        brackets = b"".join(parts[1::2] if self._in_string else parts[::2])
        if len(parts) % 2 == 0:  # an odd number of quotes: the piece ends in the other state
            self._in_string = not self._in_string
        opens = len(brackets) - brackets.count(b"]") - brackets.count(b"}")
        if self.depth + opens <= self.limit:  # cannot pass the limit: no walk
            self.depth += 2 * opens - len(brackets)
            return
        running = list(accumulate(map(_STEP.__getitem__, brackets), initial=self.depth))
        if max(running) > self.limit:
            raise JsonTooDeep(self.limit, self.read)
        self.depth = running[-1]


def check_depth(text: bytes | str, limit: int = MAX_DEPTH) -> None:
    """Raise JsonTooDeep when the whole JSON `text` (one line, one file) nests past `limit`;
    a text with fewer opening brackets than that is not walked."""
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= limit:
            return
        text = text.encode("utf-8", "surrogatepass")
    elif text.count(b"[") + text.count(b"{") <= limit:
        return
    guard = DepthGuard(limit)
    try:
        guard.feed(text)
    except JsonTooDeep:
        raise JsonTooDeep(limit) from None


class DepthCheckedStream:
    """A binary stream whose bytes pass a DepthGuard as they are read: a parser reading it
    never sees a byte that nests past the limit."""

    def __init__(self, stream: IO[bytes], limit: int = MAX_DEPTH) -> None:
        self.stream = stream
        self.guard = DepthGuard(limit)

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.guard.feed(data)
        return data

    def tell(self) -> int:
        return self.stream.tell()
