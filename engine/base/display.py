"""Showing stored text to a person without letting it take over the screen.

Raw events keep whatever was said, terminal escapes included, and older objects may hold text
from before proposals refused control characters. Two hazards:
- bidi overrides and isolates (U+202A-U+202E, U+2066-U+2069) make text read in another order
  than it is stored ("Trojan Source"): escaped as `\\u202e` wherever text is shown, in the
  terminal and in the vault's Markdown pages (`escape_bidi`, or `for_markdown`, which also
  escapes control characters);
- control characters (ESC sequences that clear the screen, set the title or write the
  clipboard; carriage returns and backspaces that overwrite a line): escaped as `\\x1b` in a
  terminal. Styling memvault itself prints (rich's SGR colour sequences, `ESC[...m`) passes.

ZWJ, ZWNJ and the LRM/RLM marks are kept: real scripts and emoji need them and they cannot
reorder text. Output that is not a terminal (a pipe, a file) is left byte for byte as it is.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
# C0 controls but tab and newline, DEL, C1 controls; an ESC that starts a plain SGR sequence
# (colour, bold: what rich writes) is let through.
_CONTROL = re.compile(r"\x1b(?!\[[0-9;]*m)|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_bidi(text: str) -> str:
    """`text` with each bidi override or isolate written as `\\u202e`; nothing else changed.
    For the vault's Markdown (and any output that keeps other characters as they are)."""
    return _BIDI.sub(_escaped, text)


# Every C0 control but tab and newline, DEL and the C1 controls, ESC included: a file gets no
# styling, so no escape sequence is let through.
_ANY_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def for_markdown(text: str) -> str:
    """`text` as a rendered vault page shows it: bidi controls and control characters (but
    newline and tab) escaped, so `cat` or an editor shows what is stored. Not for the core
    files, whose vault copy is the stored content byte for byte (hand edits are found by it)."""
    return _ANY_CONTROL.sub(_escaped, _BIDI.sub(_escaped, text))


def for_terminal(text: str) -> str:
    """`text` safe to write to a terminal: bidi controls and control characters (but newline,
    tab and SGR styling) escaped as `\\u202e` / `\\x1b`."""
    return _CONTROL.sub(_escaped, _BIDI.sub(_escaped, text))


class TerminalGuard:
    """A text stream that passes everything written through `for_terminal` to `stream`; every
    other attribute is the stream's own (isatty, fileno, encoding: rich and click ask)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(for_terminal(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def unguarded(stream: TextIO) -> TextIO:
    """The stream under a TerminalGuard (or `stream` itself): for a live progress display, which
    moves the cursor itself and is handed only text memvault made (or for_terminal's)."""
    return stream.stream if isinstance(stream, TerminalGuard) else stream


def guard_terminal(stream: TextIO) -> TextIO:
    """`stream` wrapped in a TerminalGuard when it is a terminal (once); else `stream`."""
    if isinstance(stream, TerminalGuard):
        return stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return stream
    return TerminalGuard(stream) if tty else stream  # type: ignore[return-value]
