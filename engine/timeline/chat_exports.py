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

Invariants: the file is read as ijson's event stream (memvault.base.json_events), never whole,
and no conversation is built whole either: a ChatGPT mapping node or a Claude message is built
one at a time and reduced to what ordering and its events need (a record: parent, last child,
role, kept text, id, time), so memory is bounded by one conversation's kept text and a small
record per node, not by its JSON (a 100,000-message conversation peaked at 320 MB built whole);
fields no reader uses are skipped unbuilt; nesting past 64 levels is refused before ijson reads
it (memvault.base.json_depth);
a file that is not a JSON array of conversations is refused, never taken as an empty export;
each message keeps its own time, else its conversation's (and says so in meta); system and
tool messages, empty messages and dropped branches are counted, never stored.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import ijson

from ..base.errors import InputError
from ..base.json_depth import DepthCheckedStream, JsonTooDeep
from ..base.json_events import JsonEvents
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
    # {id, title} in every message's meta: one dict for them all (a conversation of 100,000
    # messages held 100,000 copies); meta is only ever read (encoded), never changed.
    about: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.about = {"id": self.id, "title": self.title}


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
    reader = _CHATGPT if fmt == "chatgpt" else _CLAUDE
    # Every byte passes the depth guard before ijson reads it: ijson's memory grows with the
    # square of the depth (memvault.base.json_depth).
    events = JsonEvents(DepthCheckedStream(stream))
    position = 1
    while True:
        try:
            raw = _next_conversation(events, fmt, position, reader)
        except JsonTooDeep as exc:
            raise ExportError(str(exc), position, None) from None
        except ijson.JSONError as exc:
            raise ExportError(f"broken JSON: {exc}", position, None) from None
        except UnicodeDecodeError as exc:
            raise ExportError(f"not UTF-8 text (byte {exc.start})", position, None) from None
        if raw is None:
            return
        conv_id = raw.get("id") or raw.get("conversation_id") or raw.get("uuid")
        if not isinstance(conv_id, str) or not conv_id:
            raise ExportError("no conversation id", position, None)
        try:
            conversation = reader.build(raw, conv_id)
        except _STRUCTURE as exc:
            raise ExportError(f"unexpected structure: {type(exc).__name__} {exc}",
                              position, conv_id) from None
        # Neither the records (the events hold what is kept of them) nor, while the next
        # conversation is read, this one stays held here.
        del raw
        yield conversation
        del conversation
        position += 1


@dataclass(frozen=True)
class _Reader:
    """How one format's conversation is read from the event stream: the fields it reads whole,
    the member it walks one item at a time (`streamed`, when it is an object or array as
    `container` says: a ChatGPT mapping's nodes, a Claude conversation's messages), what it
    keeps of each item (`keep`, into a record made by `records`) and how the kept fields and
    records become a Conversation (`build`)."""

    fields: frozenset[str]
    streamed: str
    container: str
    records: Callable[[], Any]
    keep: Callable[[Any, str | None, Any], None]
    build: Callable[[dict[str, Any], str], Conversation]


def _next_conversation(events: JsonEvents, fmt: str, position: int,
                       reader: _Reader) -> dict[str, Any] | None:
    """The next conversation's kept fields (its streamed member as records), or None after
    the last one."""
    if position == 1:
        _open_array(events, fmt)
    event, value = events.next() or ("end_array", None)  # (the parser names a cut file)
    if event == "end_array":
        events.rest()
        return None
    if event != "start_map":
        kind = "list" if event == "start_array" else type(value).__name__
        raise ExportError(f"expected a conversation object, got {kind}", position, None)
    raw: dict[str, Any] = {}
    for key, event, value in events.members():
        if key == reader.streamed and event == reader.container:
            records = raw[key] = reader.records()
            for item_key, item_event, item_value in events.members():
                reader.keep(records, item_key, events.value(item_event, item_value))
        elif key in reader.fields or key == reader.streamed:
            raw[key] = events.value(event, value)
        else:
            events.skip(event)  # nothing read: never built
    return raw


def _open_array(events: JsonEvents, fmt: str) -> None:
    """Read the export's opening bracket; refuse a file that is not a JSON array (once the
    parser has read all of it: broken JSON is named as such)."""
    first = events.next()
    if first is not None and first[0] == "start_array":
        return
    if first is not None:
        events.skip(first[0])
        events.rest()
    raise ExportError(f"not a {fmt} export: its conversations.json is a JSON array of "
                      "conversations, and this file is not one", 0, None)


@dataclass(slots=True)
class _Message:
    """The fields of one message its events are made of. The text of a message skipped
    wherever it stands (scaffolding, a role not kept) is not kept."""

    role: Any
    text: str
    message_id: Any
    own_time: Any
    hidden: bool = False


@dataclass(slots=True)
class _Node:
    """What ordering needs of one ChatGPT mapping node, and its message. What reading the node
    raised is kept, not raised, until the node is read on the path (off it, it did no harm): a
    node that is not an object (`not_object`: its type), its children, its message."""

    parent: Any = None
    last_child: Any = None  # or the exception reading the children raised
    message: _Message | Exception | None = None
    not_object: str | None = None

    def read(self) -> _Node:
        """The node, read as an object (raises as reading it as one did)."""
        if self.not_object is not None:
            raise AttributeError(f"'{self.not_object}' object has no attribute 'get'")
        return self

    def next_child(self) -> Any:
        """The node's last child: the newest edit or regeneration."""
        if isinstance(self.read().last_child, Exception):
            raise self.last_child
        return self.last_child


_STRUCTURE = (KeyError, TypeError, ValueError, AttributeError)  # a conversation's odd shape


def _chatgpt(raw: dict[str, Any], conv_id: str) -> Conversation:
    nodes: dict[str, _Node] = raw.get("mapping") or {}
    if not isinstance(nodes, dict):
        raise TypeError("mapping is not an object")
    conv = Conversation(conv_id, str(raw.get("title") or "")[:TITLE_MAX_CHARS])
    path = _current_path(nodes, raw.get("current_node"))
    on_path = set(path)
    conv.dropped_branch = sum(1 for node_id, node in nodes.items()
                              if node_id not in on_path and node.message is not None)
    for node_id in path:
        message = nodes[node_id].message
        if message is None:
            continue  # the tree's root holds no message
        if isinstance(message, Exception):
            raise message
        _add(conv, "chatgpt", message.role, message.text, message.message_id,
             message.own_time, raw.get("create_time"), hidden=message.hidden)
    return conv


def _keep_node(nodes: dict[str, _Node], node_id: str | None, node: Any) -> None:
    """Keep what the path and the events need of one mapping node, as it is read. Ids are
    interned: a node's id, its children's parent links and its parent's children are one
    string, not three."""
    node_id = sys.intern(str(node_id))
    if not isinstance(node, dict):
        nodes[node_id] = _Node(not_object=type(node).__name__)
        return
    kept = _Node(_interned(node.get("parent")))
    try:
        children = node.get("children") or []
        kept.last_child = _interned(children[-1]) if children else None
    except _STRUCTURE as exc:
        kept.last_child = exc
    if node.get("message"):
        try:
            kept.message = _chatgpt_message(node["message"], node_id)
        except _STRUCTURE as exc:
            kept.message = exc
    nodes[node_id] = kept


def _chatgpt_message(message: Any, node_id: str) -> _Message:
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
    kept_text = text if _source(role) and not scaffolding else ""
    return _Message(role, kept_text, _interned(message.get("id") or node_id),
                    message.get("create_time"), scaffolding)


def _interned(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value


def _current_path(nodes: dict[str, _Node], current: Any) -> list[str]:
    """Node ids from the root down to `current_node` (the branch the person saw last).

    Without a current node (some older exports), the path follows each node's last child:
    the newest edit or regeneration. Linear in the path's length: a node already on it is
    looked up in a set (a list made a conversation of 100,000 messages quadratic)."""
    path: list[str] = []
    seen: set[str] = set()
    if not isinstance(current, str) or current not in nodes:
        roots = [k for k, n in nodes.items() if not n.read().parent]
        node_id = roots[0] if roots else None
        while node_id is not None and node_id in nodes and node_id not in seen:
            path.append(node_id)
            seen.add(node_id)
            node_id = nodes[node_id].next_child()
        return path
    node_id = current
    while node_id is not None and node_id in nodes:
        if node_id in seen:
            raise ValueError(f"the parent links loop at node {node_id}")
        path.append(node_id)
        seen.add(node_id)
        node_id = nodes[node_id].read().parent
    return path[::-1]


def _claude(raw: dict[str, Any], conv_id: str) -> Conversation:
    conv = Conversation(conv_id, str(raw.get("name") or "")[:TITLE_MAX_CHARS])
    messages = raw.get("chat_messages") or []
    if not isinstance(messages, list):
        raise TypeError("chat_messages is not a list")
    for message in messages:
        if isinstance(message, Exception):
            raise message
        _add(conv, "claude", message.role, message.text, message.message_id,
             message.own_time, raw.get("created_at"))
    return conv


def _keep_claude_message(messages: list[_Message | Exception], _key: str | None,
                         message: Any) -> None:
    """Keep the fields of one message as it is read (or what reading it raised, raised in
    its turn)."""
    try:
        text = message.get("text") or ""
        if not text.strip():
            text = "\n".join(c.get("text") or "" for c in message.get("content") or []
                             if isinstance(c, dict) and c.get("type") == "text").strip()
        role = message.get("sender")
        messages.append(_Message(role, text if _source(role) else "",
                                 message.get("uuid") or str(len(messages)),
                                 message.get("created_at")))
    except _STRUCTURE as exc:
        messages.append(exc)


_CONVERSATION_ID = frozenset(("id", "conversation_id", "uuid"))
_CHATGPT = _Reader(_CONVERSATION_ID | {"title", "create_time", "current_node"}, "mapping",
                   "start_map", dict, _keep_node, _chatgpt)
_CLAUDE = _Reader(_CONVERSATION_ID | {"name", "created_at"}, "chat_messages", "start_array",
                  list, _keep_claude_message, _claude)


def _source(role: Any) -> str | None:
    """The source a message's role is stored as; None: a role not kept (system, tool)."""
    return _ROLES.get(role) if isinstance(role, str) else None


def _add(conv: Conversation, fmt: str, role: Any, text: str, message_id: str, own_time: Any,
         conversation_time: Any, hidden: bool = False) -> None:
    """Append one message as events (several when longer than an event holds), or count why
    it was skipped."""
    source = _source(role)
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
    meta = {"import": fmt, "conversation": conv.about,
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
