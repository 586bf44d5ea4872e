"""Reveals: the owner's explicit ask to see secret-looking values in one read, and its log.

Every read of `Memory` masks secret-looking values ([secret: kind], memvault.recall.masking)
unless the caller passes a `Reveal` (or `reveal=True` from Python). A read that shows what its
masked answer would hide is logged, without the values, as one JSON line in the home's
reveals.log (0600, never through a symlink); a read that hides nothing logs nothing. The
`Reveal` the caller passed says afterwards what happened, so a command line can tell its
person ("secrets revealed by find for ..." or "nothing revealed").
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..base.clock import iso
from ..base.config import append_private_line

REVEAL_LOG = "reveals.log"  # in the home: one JSON line per reveal, never a value
MAX_LOGGED_RECORDS = 200



@dataclass
class Reveal:
    """An ask to see secret values in one read, named by what asked (`command`, e.g. "find"
    or "core show"). After the read: `records` it revealed (empty when nothing was hidden),
    and `log_error` when the home's reveal log could not be written (a read-only home)."""

    command: str
    records: list[str] = field(default_factory=list)
    log_error: str | None = None

    @property
    def revealed(self) -> bool:
        """Whether the read showed anything its masked answer hides."""
        return bool(self.records)


RevealArg = Reveal | bool  # what a read takes: False masks, True is a Reveal("python")


def as_reveal(value: RevealArg, command: str) -> Reveal | None:
    """The Reveal a read works with: None to mask, the caller's own, or one named `command`
    for a library caller's plain `True`."""
    if isinstance(value, Reveal):
        return value
    return Reveal(command) if value else None


def record_reveal(home: Path, now: datetime, reveal: Reveal, records: list[str]) -> None:
    """Log that `reveal` showed secrets of `records`: when, who, which command and records,
    never a value. Fills `reveal.records` (and `reveal.log_error` if the log is not
    writable: the read still answers, the caller says so)."""
    reveal.records = list(records) or ["(unnamed)"]
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = f"uid {os.getuid()}"
    entry = {"at": iso(now), "who": who, "command": reveal.command,
             "records": reveal.records[:MAX_LOGGED_RECORDS]}
    path = home / REVEAL_LOG
    try:
        append_private_line(path, entry)
    except OSError as exc:
        reveal.log_error = f"could not write {path}: {exc.strerror or exc}"
        import logging  # only here: logging costs every process ~2.5 ms to import

        logging.getLogger(__name__).warning("%s", reveal.log_error)
