"""One message of a conversation as events, the same for every reader of a chat or transcript
(memvault.timeline.chat_exports, memvault.timeline.transcripts): its key
`format:conversation:message` (hashed past the 200-char key limit), its time, and keyed parts
when it is longer than an event holds (32,000 chars).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from .events import NewEvent
from .fragments import EVENT_MAX_CHARS


def message_events(text: str, when: str | datetime | None, source: str, meta: dict[str, Any],
                   key: str) -> list[NewEvent]:
    """One message as events: one, or keyed parts (`key#2`, … and `meta.part`) when it is
    longer than an event holds."""
    pieces = range(0, len(text), EVENT_MAX_CHARS)
    events = []
    for number, start in enumerate(pieces):
        piece_key = key if number == 0 else f"{key}#{number + 1}"
        piece_meta = meta if len(pieces) == 1 else {**meta, "part": [number + 1, len(pieces)]}
        events.append(NewEvent(text[start:start + EVENT_MAX_CHARS], when, source, "message",
                               piece_meta, piece_key))
    return events


def message_time(value: Any) -> str | datetime | None:
    """A message time: Unix seconds (ChatGPT) or ISO text (Claude); None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(float(value), UTC)
    if isinstance(value, str):
        return value.replace("Z", "+00:00") if value.endswith("Z") else value
    raise ValueError(f"a time that is neither a number nor text: {value!r}")


def message_key(fmt: str, conv_id: str, message_id: str) -> str:
    """format:conversation:message, hashed when it would pass the 200-char key limit."""
    key = f"{fmt}:{conv_id}:{message_id}"
    if len(key) <= 190:
        return key
    return f"{fmt}:sha256:{hashlib.sha256(key.encode()).hexdigest()}"
