"""Chat exports read as a stream of conversations, each a list of messages ready to store.

Neither vendor publishes a schema. The structures read here follow the public descriptions of
the exports and the well-used open-source parsers that read them (TomzxCode/
llm-conversations-viewer `docs/formats.md`, mitkury/chatgpt-export-parser
`docs/chatgpt-data-export-format.md`):

- `chatgpt`: `conversations.json` is a JSON array of conversations {id (or conversation_id),
  title, create_time (Unix seconds), mapping, current_node}. `mapping` holds message nodes
  {id, message, parent, children}; a message has {id, author.role, create_time, content
  {content_type, parts}}. Edits and regenerations are branches of that tree: only the path from
  `current_node` up through `parent` links is what the person saw last; the other branches'
  messages are dropped and counted. Parts that are not text (an image's asset pointer) are
  left out; a message with no text part left is empty. Hidden messages, tool calls
  (`recipient` other than "all") and content types other than text/multimodal_text are
  scaffolding, like system and tool messages.
- `claude`: `conversations.json` is a JSON array of conversations {uuid, name, created_at
  (ISO), chat_messages}; a message has {uuid, sender ("human" or "assistant"), text,
  created_at}, newer exports also `content` [{type: "text", text}] (read when `text` is empty),
  and `attachments` / `files`, which are not text of the message.
- `jsonl`: memvault's own JSONL (memvault.timeline.ingest), read line by line as one
  conversation; a line without a key gets one from a hash of its time, source and text.
- `claude-code`, `codex`: an agent host's session transcript, one file one conversation, read
  by memvault.timeline.transcripts with the keys its capture hooks use.

Invariants: the file is read as a stream (ijson), never whole, so memory stays bounded by one
conversation; nesting past 64 levels is refused before ijson reads it (memvault.base.json_depth);
a file that is not a JSON array of conversations is refused, never taken as an empty export;
each message keeps its own time, else its conversation's (and says so in meta); system and
tool messages, empty messages and dropped branches are counted, never stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import ijson

from ..base.errors import InputError
from ..base.json_depth import DepthCheckedStream, JsonTooDeep
from .events import NewEvent
from .ingest import bounded_lines, parse_line
from .messages import message_events, message_key, message_time
from .transcripts import HOSTS, Progress, read_transcript, session_from_path

FORMATS = ("chatgpt", "claude", "jsonl", *HOSTS)
JSONL_CONVERSATION = 1_000  # lines of a JSONL file stored as one transaction
TITLE_MAX_CHARS = 1_000  # a title is carried in every message's meta (16 KiB at most)
_ROLES = {"user": "user", "human": "user", "assistant": "assistant"}


@dataclass
class Conversation:
    """One conversation of an export: its messages as events (with keys), and what was left out."""

    id: str
    title: str
    events: list[NewEvent] = field(default_factory=list)
    skipped_roles: int = 0  # system / tool scaffolding
    skipped_empty: int = 0  # no text (attachment-only, empty parts)
    dropped_branch: int = 0  # edited/regenerated branches off the current path
    conversation_time: int = 0  # messages that took the conversation's time
    no_time: int = 0  # messages with neither time: stored at import time


class ExportError(InputError):
    """A chat export that cannot be read: names the conversation (its position and id);
    position 0 is the file as a whole."""

    def __init__(self, reason: str, position: int, conversation_id: str | None) -> None:
        where = f"conversation {position}" + (f" ({conversation_id})" if conversation_id else "")
        super().__init__(f"{where}: {reason}" if position else reason)
        self.position = position
        self.conversation_id = conversation_id


def read_conversations(fmt: str, stream: IO[bytes]) -> Iterator[Conversation]:
    """Yield the conversations of an export file, one at a time. Raises ExportError."""
    if fmt == "jsonl":
        yield from _jsonl(stream)
        return
    if fmt in HOSTS:
        yield _transcript(fmt, stream)
        return
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    parse = _chatgpt if fmt == "chatgpt" else _claude
    position = 0
    # Every byte passes the depth guard before ijson reads it: ijson's memory grows with the
    # square of the depth (memvault.base.json_depth).
    checked = DepthCheckedStream(stream)
    items = ijson.items(checked, "item", use_float=True)
    while True:
        position += 1
        try:
            raw = next(items)
        except StopIteration:
            if checked.guard.first != ord("["):  # {"not": "a list"} holds no item at all
                raise ExportError(f"not a {fmt} export: its conversations.json is a JSON "
                                  "array of conversations, and this file is not one",
                                  0, None) from None
            return
        except JsonTooDeep as exc:
            raise ExportError(str(exc), position, None) from None
        except ijson.JSONError as exc:
            raise ExportError(f"broken JSON: {exc}", position, None) from None
        except UnicodeDecodeError as exc:
            raise ExportError(f"not UTF-8 text (byte {exc.start})", position, None) from None
        if not isinstance(raw, dict):
            raise ExportError(f"expected a conversation object, got {type(raw).__name__}",
                              position, None)
        conv_id = raw.get("id") or raw.get("conversation_id") or raw.get("uuid")
        if not isinstance(conv_id, str) or not conv_id:
            raise ExportError("no conversation id", position, None)
        try:
            yield parse(raw, conv_id)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ExportError(f"unexpected structure: {type(exc).__name__} {exc}",
                              position, conv_id) from None


def _chatgpt(raw: dict[str, Any], conv_id: str) -> Conversation:
    mapping: dict[str, Any] = raw.get("mapping") or {}
    if not isinstance(mapping, dict):
        raise TypeError("mapping is not an object")
    conv = Conversation(conv_id, str(raw.get("title") or "")[:TITLE_MAX_CHARS])
    path = _current_path(mapping, raw.get("current_node"))
    on_path = set(path)
    conv.dropped_branch = sum(1 for node_id, node in mapping.items()
                              if node_id not in on_path and _has_message(node))
    for node_id in path:
        message = mapping[node_id].get("message")
        if not message:
            continue  # the tree's root holds no message
        role = (message.get("author") or {}).get("role")
        content = message.get("content") or {}
        parts = content.get("parts") or []
        text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
        # Scaffolding, not a turn the person had: messages hidden from them (custom
        # instructions), a model's call to a tool (recipient other than "all", e.g. code for
        # "python"), and content other than text (thoughts, browsing results, tool output).
        scaffolding = (
            bool((message.get("metadata") or {}).get("is_visually_hidden_from_conversation"))
            or message.get("recipient", "all") != "all"
            or content.get("content_type") not in (None, "text", "multimodal_text"))
        _add(conv, "chatgpt", role, text, message.get("id") or node_id,
             message.get("create_time"), raw.get("create_time"), hidden=scaffolding)
    return conv


def _has_message(node: Any) -> bool:
    return isinstance(node, dict) and bool(node.get("message"))


def _current_path(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root down to `current_node` (the branch the person saw last).

    Without a current node (some older exports), the path follows each node's last child:
    the newest edit or regeneration. Linear in the path's length: a node already on it is
    looked up in a set (a list made a conversation of 100,000 messages quadratic)."""
    path: list[str] = []
    seen: set[str] = set()
    if not isinstance(current, str) or current not in mapping:
        roots = [k for k, n in mapping.items() if not n.get("parent")]
        node_id = roots[0] if roots else None
        while node_id is not None and node_id in mapping and node_id not in seen:
            path.append(node_id)
            seen.add(node_id)
            children = mapping[node_id].get("children") or []
            node_id = children[-1] if children else None
        return path
    node_id = current
    while node_id is not None and node_id in mapping:
        if node_id in seen:
            raise ValueError(f"the parent links loop at node {node_id}")
        path.append(node_id)
        seen.add(node_id)
        node_id = mapping[node_id].get("parent")
    return path[::-1]


def _claude(raw: dict[str, Any], conv_id: str) -> Conversation:
    conv = Conversation(conv_id, str(raw.get("name") or "")[:TITLE_MAX_CHARS])
    messages = raw.get("chat_messages") or []
    if not isinstance(messages, list):
        raise TypeError("chat_messages is not a list")
    for number, message in enumerate(messages):
        text = message.get("text") or ""
        if not text.strip():
            text = "\n".join(c.get("text") or "" for c in message.get("content") or []
                             if isinstance(c, dict) and c.get("type") == "text").strip()
        _add(conv, "claude", message.get("sender"), text, message.get("uuid") or str(number),
             message.get("created_at"), raw.get("created_at"))
    return conv


def _add(conv: Conversation, fmt: str, role: Any, text: str, message_id: str, own_time: Any,
         conversation_time: Any, hidden: bool = False) -> None:
    """Append one message as events (several when longer than an event holds), or count why
    it was skipped."""
    source = _ROLES.get(role) if isinstance(role, str) else None
    if source is None or hidden:
        conv.skipped_roles += 1
        return
    if not text.strip():
        conv.skipped_empty += 1
        return
    when, time_from = message_time(own_time), "message"
    if when is None:
        when, time_from = message_time(conversation_time), "conversation"
        conv.conversation_time += when is not None
    if when is None:
        time_from = "import"
        conv.no_time += 1
    meta = {"import": fmt, "conversation": {"id": conv.id, "title": conv.title},
            "message_id": message_id, "time_from": time_from}
    conv.events += message_events(text, when, source, meta, message_key(fmt, conv.id,
                                                                         message_id))


def _transcript(host: str, stream: IO[bytes]) -> Conversation:
    """An agent host's transcript file (memvault.timeline.transcripts) as one conversation,
    keyed as its hook captures it, so a session both imported and captured is stored once. A
    line that is not JSON stops it naming the line; a torn last line counts as empty."""
    name = getattr(stream, "name", None)
    session = session_from_path(name) if isinstance(name, str) else None
    try:
        part = read_transcript(host, stream, Progress(), session=session, final=True,
                               strict=True)
    except InputError as exc:
        raise ExportError(str(exc), 1, session) from None
    conv = Conversation(part.progress.session or session or host, "", part.events,
                        skipped_roles=part.left_out,
                        skipped_empty=part.empty + part.unreadable + part.too_long)
    conv.no_time = sum(event.occurred_at is None for event in part.events)
    return conv


def _jsonl(stream: IO[bytes]) -> Iterator[Conversation]:
    conv = Conversation("jsonl", "")
    # bounded_lines, as ingest reads: a line past 256 KiB is refused by number, never held whole.
    for number, line in enumerate(bounded_lines(stream), start=1):
        try:
            event = parse_line(line, number)
        except InputError as exc:
            raise ExportError(str(exc), 1 + (number - 1) // JSONL_CONVERSATION, None) from None
        if event is None:
            continue
        if event.key is None and isinstance(event.text, str):
            digest = hashlib.sha256(
                f"{event.occurred_at}\x00{event.source}\x00{event.text}".encode(
                    "utf-8", "surrogatepass")).hexdigest()
            event.key = f"jsonl:{digest}"
        conv.events.append(event)
        if len(conv.events) >= JSONL_CONVERSATION:
            yield conv
            conv = Conversation("jsonl", "")
    if conv.events:
        yield conv
