"""A database of the original design, as the one-phase memory left it (see
engine/legacy/upgrade.py).

`build_legacy_db` writes a small but complete one: 32 events in Chinese and English (one split
in three parts), a hot timeline where events 1–14 were compacted under two summary heads and a
level-2 head, event 15 half compacted, events 16–30 still raw, events 31–32 with no node at all
(pruned long ago); six objects with sources (one dangling, one body over the limit, one unknown
status), version history, relations with short and long-sentence labels (and one dangling);
AGENTS.md with content and an empty SOUL.md; snapshots of the old protocol: two running, three
done, two failed (one over compacted events 3 and 9, one over still-hot event 20); receipts and
a lease.

EXPECTED holds what the upgrade must produce from it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

LEGACY_SCHEMA = """
CREATE TABLE timeline (id TEXT PRIMARY KEY, occurred_at TEXT, created_at TEXT NOT NULL,
                       role TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE hot_timeline (id TEXT PRIMARY KEY, kind TEXT NOT NULL, event_id TEXT, part INTEGER,
                           parts INTEGER, text TEXT, parent_id TEXT, level INTEGER,
                           position INTEGER, active INTEGER NOT NULL, created_at TEXT);
CREATE TABLE memory_objects (id TEXT PRIMARY KEY, type TEXT, name TEXT, aliases TEXT,
                             summary TEXT, body TEXT, cues TEXT, status TEXT, version INTEGER,
                             sources TEXT, created_at TEXT, updated_at TEXT);
CREATE TABLE memory_object_versions (object_id TEXT, version INTEGER, summary TEXT, body TEXT,
                                     created_at TEXT);
CREATE TABLE memory_relations (src TEXT, relation TEXT, dst TEXT, created_at TEXT);
CREATE TABLE core_documents (name TEXT PRIMARY KEY, content TEXT, updated_at TEXT);
CREATE TABLE memory_snapshots (id INTEGER PRIMARY KEY, protocol INTEGER, mode TEXT, status TEXT,
                               payload TEXT, claimed_at TEXT, finished_at TEXT, error TEXT);
CREATE TABLE memory_receipts (token TEXT PRIMARY KEY, snapshot_id INTEGER, created_at TEXT);
CREATE TABLE memory_lease (name TEXT PRIMARY KEY, holder TEXT, expires_at INTEGER);
"""

DAY = "2026-10-{day:02d}T{hour:02d}:15:00+08:00"
LONG_EVENT = 15  # the event in three parts
PARTS = (2000, 2000, 700)

EXPECTED = {
    "events": 32, "hot_nodes": 32 + 4, "active_nodes": 1 + 1 + 1 + 15,
    "objects": 6, "object_versions": 6 + 3, "relations": 3, "legacy_relations": 1,
    "evidence": 9, "core_files": 1,
    # events 1–14 and 31–32 left the timeline; 3 and 9 were in a failed old batch
    "pending": 14, "blocked": 2, "done": 0,
    "dangling_sources": 1, "dangling_relations": 1, "released": 2,
}


def event_id(n: int) -> str:
    return f"evt_{n:04d}"


def event_text(n: int) -> str:
    """Deterministic text of old event n (Chinese on even numbers)."""
    if n == LONG_EVENT:
        return "".join(chr(ord("a") + i) * size for i, size in enumerate(PARTS))
    if n % 2 == 0:
        return f"第{n}条：和秦浩宇讨论了项目进度，约好周五交付第{n}版草稿。"
    return f"Event {n}: reminded Lin Mei to renew the car inspection before the {n}th."


def _events(conn: sqlite3.Connection) -> None:
    for n in range(1, 33):
        occurred = None if n == 7 else DAY.format(day=1 + n // 3, hour=8 + n % 10)
        conn.execute("INSERT INTO timeline VALUES (?, ?, ?, ?, ?)",
                     (event_id(n), occurred, DAY.format(day=1 + n // 3, hour=9 + n % 10),
                      "user" if n % 3 else "assistant", event_text(n)))


def _nodes(conn: sqlite3.Connection) -> None:
    position = 0

    def node(ident: str, kind: str, event: str | None, part: int | None, parts: int | None,
             text: str, parent: str | None, level: int, active: int) -> None:
        nonlocal position
        position += 1
        conn.execute("INSERT INTO hot_timeline VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                     (ident, kind, event, part, parts, text, parent, level, position, active,
                      "2026-10-10T10:00:00+08:00"))

    # level-2 head C over heads A (events 1–8) and B (events 9–14), all inactive but C
    node("sum_C", "summary", None, None, None, "十月上旬：项目进度与车辆年检。", None, 2, 1)
    node("sum_A", "summary", None, None, None, "Events 1–8: progress and reminders.", "sum_C",
         1, 0)
    node("sum_B", "summary", None, None, None, "事件 9–14：进度讨论。", "sum_C", 1, 0)
    for n in range(1, 15):
        node(f"raw_{n}", "raw", event_id(n), 0, 1, event_text(n), "sum_A" if n <= 8 else "sum_B",
             0, 0)
    # event 15: parts 0 and 1 under the active head D, part 2 still raw and active
    node("sum_D", "summary", None, None, None, "A long letter, first two pages.", None, 1, 1)
    text, start = event_text(LONG_EVENT), 0
    for part, size in enumerate(PARTS):
        node(f"raw_15_{part}", "raw", event_id(LONG_EVENT), part, len(PARTS),
             text[start:start + size], "sum_D" if part < 2 else None, 0, 1 if part == 2 else 0)
        start += size
    for n in range(16, 31):
        node(f"raw_{n}", "raw", event_id(n), 0, 1, event_text(n), None, 0, 1)


def _objects(conn: sqlite3.Connection) -> None:
    rows = [
        ("person:qhy", "person", "秦浩宇", ["浩宇", "Qin Haoyu"], "项目负责人", "身份：同事。",
         ["谁负责项目"], "active", 3, [event_id(2), event_id(4), event_id(20)]),
        ("person:lin-mei", "person", "Lin Mei", ["Mei"], "Friend", "Friend; car owner.",
         [], "active", 1, [event_id(1)]),
        ("todo:car-inspection", "todo", "车辆年检", [], "年检待办", "状态：未完成。", [],
         "active", 2, [event_id(1), event_id(3), "evt_9999"]),
        ("project:draft", "project", "草稿项目", [], "Drafts", "范围：草稿。", [], "active", 1,
         [event_id(2)]),
        ("knowledge:long-notes", "knowledge", "Long notes", [], "Notes", "x" * 16_500, [],
         "active", 1, [event_id(16)]),
        ("knowledge:old-rule", "knowledge", "Old rule", [], "Stale", "Superseded rule.", [],
         "deleted", 1, [event_id(31)]),
    ]
    for oid, kind, name, aliases, summary, body, cues, status, version, sources in rows:
        conn.execute("INSERT INTO memory_objects VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                     (oid, kind, name, json.dumps(aliases, ensure_ascii=False), summary, body,
                      json.dumps(cues, ensure_ascii=False), status, version,
                      json.dumps(sources), "2026-10-05T10:00:00+08:00",
                      "2026-10-12T10:00:00+08:00"))
    for oid, version in [("person:qhy", 1), ("person:qhy", 2), ("todo:car-inspection", 1)]:
        conn.execute("INSERT INTO memory_object_versions VALUES (?,?,?,?,?)",
                     (oid, version, f"v{version}", f"body v{version}",
                      "2026-10-06T10:00:00+08:00"))
    relations = [
        ("person:qhy", "member_of", "project:draft"),
        ("todo:car-inspection", "assigned_to", "person:lin-mei"),
        ("person:qhy", "knows", "person:lin-mei"),
        ("person:qhy", "是林梅的同事，也一起处理草稿项目", "person:lin-mei"),
        ("person:qhy", "knows", "person:ghost"),
    ]
    for src, label, dst in relations:
        conn.execute("INSERT INTO memory_relations VALUES (?,?,?,?)",
                     (src, label, dst, "2026-10-07T10:00:00+08:00"))


def _jobs(conn: sqlite3.Connection, lease_expires_ms: int) -> None:
    snapshots = [
        (1, "done", {"node_ids": ["raw_1", "raw_2"]}, None),
        (2, "done", {"node_ids": ["raw_4"]}, None),
        (3, "done", {"event_ids": [event_id(5)]}, None),
        (4, "failed", {"node_ids": ["raw_3"], "event_ids": [event_id(9)]}, "model timeout"),
        (5, "failed", {"event_ids": [event_id(20)]}, "proposal rejected"),
        (6, "running", {"node_ids": ["raw_16", "raw_17"]}, None),
        (7, "running", {"event_ids": [event_id(12)]}, None),
    ]
    for ident, status, payload, error in snapshots:
        conn.execute("INSERT INTO memory_snapshots VALUES (?,?,?,?,?,?,?,?)",
                     (ident, 1, "memory", status, json.dumps(payload),
                      "2026-10-13T10:00:00+08:00",
                      None if status == "running" else "2026-10-13T10:05:00+08:00", error))
    for ident in (1, 2, 3):
        conn.execute("INSERT INTO memory_receipts VALUES (?,?,?)",
                     (f"receipt-{ident}", ident, "2026-10-13T10:05:00+08:00"))
    conn.execute("INSERT INTO memory_lease VALUES ('memory', 'deskpaw-agent', ?)",
                 (lease_expires_ms,))


def build_legacy_db(path: Path, lease_expires_ms: int = 0) -> Path:
    """Write the old-shape database at `path` (its lease expiring at `lease_expires_ms`)."""
    conn = sqlite3.connect(path)
    with conn:
        conn.executescript(LEGACY_SCHEMA)
        _events(conn)
        _nodes(conn)
        _objects(conn)
        conn.execute("INSERT INTO core_documents VALUES ('AGENTS.md', ?, ?)",
                     ("# Agent\n记住用户的习惯。\n", "2026-10-01T10:00:00+08:00"))
        conn.execute("INSERT INTO core_documents VALUES ('SOUL.md', '', ?)",
                     ("2026-10-01T10:00:00+08:00",))
        _jobs(conn, lease_expires_ms)
    conn.close()
    return path
