"""`memvault import`: a chat export's conversations stored as events straight in the archive queue.

Imported history is old: it never enters the hot timeline (the agent's base context), so it
neither floods it nor triggers a compaction. Each conversation is stored in ONE transaction:
its new events without hot nodes (timeline.keys.append_rows with hot=False) and their queue
rows as `pending` (timeline.queue.enqueue_departed, the queue's owner: an event with no active
fragment is queued), so `memvault check` finds them queued, not lost, and the hourly organize
picks them up. A message's key (format:conversation:message) is stored once: importing the same
or a newer export again stores only what is new. A bad conversation stops the import naming
it; the conversations before it stay stored. The file is opened by `open_export`: a regular
file only, never through a symbolic link (opening a FIFO would block the import forever).
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import stat
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO

from ..base.errors import InputError
from ..base.spaces import EVERY_SPACE
from ..base.tokens import estimate_tokens
from ..store.connection import write
from ..timeline import events
from ..timeline.chat_exports import Conversation, ExportError, read_conversations
from ..timeline.keys import append_rows, check_key, keys_stored
from ..timeline.queue import enqueue_departed
from .memory import Memory

_log = logging.getLogger(__name__)


@dataclass
class ImportReport:
    """What an import stored and left out (counts), in the order the summary says them."""

    conversations: int = 0
    events: int = 0  # new events stored
    already_stored: int = 0  # keys stored by an earlier import
    skipped_roles: int = 0
    skipped_empty: int = 0
    dropped_branch: int = 0
    conversation_time: int = 0
    no_time: int = 0
    chars: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ImportStopped(InputError):
    """A bad conversation stopped the import; `report` says what was stored before it."""

    def __init__(self, path: str, error: ExportError, report: ImportReport) -> None:
        stored = (f"the {report.events} new event(s) of the {report.conversations} "
                  "conversation(s) before it are stored" if report.events
                  else "nothing new was stored")
        super().__init__(f"{path}: {error}. Stopped there; {stored}. Run the import again "
                         "after fixing the file: what is stored already is skipped by key.")
        self.position = error.position
        self.conversation_id = error.conversation_id
        self.report = report


@dataclass
class Estimate:
    """The organize work an import would add: new events, their chars and estimated tokens."""

    conversations: int = 0
    events: int = 0
    chars: int = 0
    tokens: int = 0


def open_export(path: str | Path) -> BinaryIO:
    """The export file at `path`, opened for reading. Refused (InputError) unless it is a
    regular file reached without a symbolic link: a FIFO would make the open wait for a writer
    forever (it is opened without blocking, then checked), a device or socket is no export."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{path} is a symbolic link; import reads a regular file only, "
                             "never through a link: give the file itself") from None
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(f"{path} is {_file_kind(mode)}, not a regular file: import reads "
                             "a saved export file (save it to a file first)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISDIR, "a folder"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def estimate_import(memory: Memory, fmt: str, stream: IO[bytes]) -> Estimate:
    """Read the export once without storing: what organize would have to read (keys already
    stored are not counted)."""
    found = Estimate()
    for conversation in read_conversations(fmt, stream):
        keys = [check_key(e.key) for e in conversation.events]
        stored = _stored(memory, [k for k in keys if k])
        new = [e for e, k in zip(conversation.events, keys, strict=True) if k not in stored]
        found.conversations += bool(new)
        found.events += len(new)
        found.chars += sum(len(e.text) for e in new)
        found.tokens += sum(estimate_tokens(e.text) for e in new)
    return found


def _stored(memory: Memory, keys: list[str]) -> set[str]:
    return keys_stored(memory.conn, keys, EVERY_SPACE)


def import_export(
    memory: Memory, fmt: str, stream: IO[bytes], path: str,
    progress: Callable[[], None] | None = None,
) -> ImportReport:
    """Store every conversation of the export, one transaction each; then index for recall.

    Raises ImportStopped naming the path and conversation on a bad one (what came before
    stays stored); `progress` is called after each conversation."""
    report = ImportReport()
    try:
        _store_all(memory, read_conversations(fmt, stream), report, progress)
    except ExportError as exc:
        raise ImportStopped(path, exc, report) from None
    finally:
        if report.events:
            _index(memory)
    return report


def _index(memory: Memory) -> None:
    """Index the imported events for recall. They are committed already: a failure here (a
    full disk, a busy database) is logged, never raised, so nobody imports them twice; recall
    scans unindexed events and the worker's poll (or `memvault reindex`) indexes them."""
    try:
        memory.sync_recall_index(max_events=None)
    except sqlite3.Error as exc:
        _log.warning("events imported; indexing them for recall is deferred (%s)", exc)


def _store_all(memory: Memory, conversations: Iterable[Conversation], report: ImportReport,
               progress: Callable[[], None] | None) -> None:
    position = 0
    for conversation in conversations:
        position += 1
        try:
            _store_one(memory, conversation, report)
        except ExportError:
            raise  # already names its conversation
        except InputError as exc:  # an event refused (a bad time, a key conflict): name it
            raise ExportError(str(exc).removesuffix(" Nothing was stored."), position,
                              conversation.id) from None
        if progress is not None:
            progress()
        del conversation  # stored: not held while the next one is read


def _store_one(memory: Memory, conversation: Conversation, report: ImportReport) -> None:
    """One conversation in one transaction: new events off the timeline, queued pending."""
    now, tz = memory.clock.now(), memory.tz
    rows = [events.validate_event(e, now, tz) for e in conversation.events]
    keys = [check_key(e.key) for e in conversation.events]
    if rows:
        with write(memory.conn):
            appended = append_rows(memory.conn, rows, keys, now, hot=False,
                                   space=memory.spaces.writes)
            enqueue_departed(memory.conn, set(appended.new), None, now)
        new = set(appended.new)
        report.events += len(new)
        report.already_stored += len(appended.skipped)
        report.chars += sum(len(row[-1]) for row, i in zip(rows, appended.ids, strict=True)
                            if i in new)
        report.conversations += 1
    report.skipped_roles += conversation.skipped_roles
    report.skipped_empty += conversation.skipped_empty
    report.dropped_branch += conversation.dropped_branch
    report.conversation_time += conversation.conversation_time
    report.no_time += conversation.no_time
