"""The hot timeline: newest nodes kept, an explicit account of what a view cut, and summary heads
that expand level by level back to raw fragments."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import T0, write_config
from memvault import ManualClock, Memory, NewEvent
from memvault.base.errors import InputError, NotFound
from memvault.base.spaces import EVERY_SPACE
from memvault.base.tokens import estimate_tokens
from memvault.store.connection import write
from memvault.timeline.hot import active_nodes, expand, timeline_totals, timeline_view


def make_head(conn: sqlite3.Connection, child_ids: list[int], summary: str) -> int:
    """Simulate a compaction by hand: a head replaces `child_ids` (contiguous active nodes)."""
    with write(conn):
        rows = conn.execute(
            f"SELECT * FROM hot_nodes WHERE id IN ({','.join('?' * len(child_ids))})"
            " ORDER BY seq", child_ids,
        ).fetchall()
        level = 1 + max(r["level"] for r in rows)
        head_id = conn.execute(
            "INSERT INTO hot_nodes (kind, level, seq, summary, chars, est_tokens, first_at,"
            " last_at, created_at) VALUES ('head', ?, ?, ?, ?, ?, ?, ?, ?)",
            (level, rows[0]["seq"], summary, len(summary), estimate_tokens(summary),
             rows[0]["first_at"], rows[-1]["last_at"], T0.isoformat()),
        ).lastrowid
        conn.execute(
            f"UPDATE hot_nodes SET parent_id = ?, active = 0 WHERE id IN "
            f"({','.join('?' * len(child_ids))})", (head_id, *child_ids),
        )
    return int(head_id)


def seed(mem: Memory, n: int, chars: int = 100) -> list[int]:
    events = [
        NewEvent(f"{i:04d}" + "m" * (chars - 4), occurred_at=f"2026-10-05T{8 + i // 60:02d}:"
                 f"{i % 60:02d}:00+08:00")
        for i in range(n)
    ]
    return mem.append_events(events)


def test_a_view_that_fits_shows_every_node_in_order(mem: Memory) -> None:
    seed(mem, 5)
    mem.append_event("长" * 4_500)  # three fragments
    view = mem.timeline_view()
    assert view["total_nodes"] == view["shown_nodes"] == 8
    assert view["cut_nodes"] == 0 and view["cut"] is None and view["notice"] is None
    assert [n["seq"] for n in view["nodes"]] == sorted(n["seq"] for n in view["nodes"])
    assert [n["fragment"] for n in view["nodes"][-3:]] == ["1/3", "2/3", "3/3"]
    assert "".join(n["text"] for n in view["nodes"][-3:]) == "长" * 4_500
    assert view["nodes"][0]["text"].startswith("0000")
    assert view["est_tokens"] == view["total_est_tokens"] == sum(
        n["est_tokens"] for n in view["nodes"]
    )
    assert view["bytes"] <= view["max_bytes"] == 350_000


def test_a_view_keeps_the_newest_nodes_and_says_what_it_cut(mem: Memory) -> None:
    ids = seed(mem, 20, chars=100)  # ASCII: each node costs 100 bytes + 64 header
    view = mem.timeline_view(max_bytes=164 * 6 + 50)
    assert view["shown_nodes"] == 6
    assert view["cut_nodes"] == 14 and view["total_nodes"] == 20
    shown = [n["event_id"] for n in view["nodes"]]
    assert shown == ids[-6:]
    cut = view["cut"]
    nodes = active_nodes(mem.conn, EVERY_SPACE)
    assert cut["count"] == 14
    assert (cut["first_node"], cut["last_node"]) == (nodes[0].id, nodes[13].id)
    assert cut["from"] == "2026-10-05T08:00:00+08:00"
    assert cut["to"] == "2026-10-05T08:13:00+08:00"
    assert cut["est_tokens"] == sum(n.est_tokens for n in nodes[:14])
    assert view["est_tokens"] + cut["est_tokens"] == view["total_est_tokens"]
    assert view["bytes"] == 164 * 6 <= view["max_bytes"]
    notice = view["notice"]
    assert "showing 6 of 20 hot nodes" in notice
    assert "oldest 14" in notice
    assert "2026-10-05T08:00:00+08:00 to 2026-10-05T08:13:00+08:00" in notice
    assert "1,034 bytes" in notice


def test_the_cut_is_measured_in_utf8_bytes(mem: Memory) -> None:
    mem.append_event("汉" * 100)  # 300 bytes + 64
    mem.append_event("a" * 100)  # 100 bytes + 64
    assert mem.timeline_view(max_bytes=364 + 164)["cut_nodes"] == 0
    view = mem.timeline_view(max_bytes=364 + 163)
    assert view["cut_nodes"] == 1 and view["nodes"][0]["text"] == "a" * 100


def test_a_view_never_skips_an_old_node_to_fit_an_older_one(mem: Memory) -> None:
    mem.append_event("a" * 10)
    mem.append_event("b" * 1_000)
    mem.append_event("c" * 10)
    view = mem.timeline_view(max_bytes=200)
    assert [n["text"] for n in view["nodes"]] == ["c" * 10]
    assert view["cut"]["count"] == 2


def test_a_view_too_small_for_the_newest_node_shows_nothing_and_says_so(mem: Memory) -> None:
    seed(mem, 3)
    view = mem.timeline_view(max_bytes=10)
    assert view["nodes"] == [] and view["cut_nodes"] == 3
    assert "showing 0 of 3 hot nodes" in view["notice"]


def test_an_empty_timeline(mem: Memory) -> None:
    view = mem.timeline_view()
    assert view["nodes"] == [] and view["total_nodes"] == 0 and view["cut"] is None
    assert timeline_totals(mem.conn, EVERY_SPACE) == {"nodes": 0, "est_tokens": 0}


def test_max_bytes_must_be_positive(mem: Memory) -> None:
    with pytest.raises(InputError, match="max_bytes"):
        timeline_view(mem.conn, 0, EVERY_SPACE)


def test_the_default_view_size_comes_from_config(home: Path) -> None:
    write_config(home, "[timeline]\nview_max_bytes = 1000\n")
    with Memory.open(home, clock=ManualClock(T0)) as mem:
        seed(mem, 10)
        view = mem.timeline_view()
        assert view["max_bytes"] == 1_000
        assert view["shown_nodes"] == 6 and view["cut_nodes"] == 4


def test_a_head_replaces_its_children_and_expands_back_to_them(mem: Memory) -> None:
    seed(mem, 6)
    nodes = active_nodes(mem.conn, EVERY_SPACE)
    head = make_head(mem.conn, [n.id for n in nodes[1:4]], "第1–3条的摘要")
    view = mem.timeline_view()
    kinds = [(n["kind"], n["id"]) for n in view["nodes"]]
    assert kinds == [("raw", nodes[0].id), ("head", head), ("raw", nodes[4].id),
                     ("raw", nodes[5].id)]
    head_node = view["nodes"][1]
    assert head_node["text"] == "第1–3条的摘要" and head_node["level"] == 1
    assert head_node["fragment"] is None and head_node["event_id"] is None
    assert head_node["first_at"] == nodes[1].first_at and head_node["last_at"] == nodes[3].last_at
    children = mem.expand(head)
    assert [c["id"] for c in children] == [n.id for n in nodes[1:4]]
    assert [c["text"] for c in children] == [n.text for n in nodes[1:4]]
    assert all(c["parent_id"] == head and not c["active"] for c in children)
    assert timeline_totals(mem.conn, EVERY_SPACE)["nodes"] == 4


def test_heads_expand_level_by_level_down_to_raw_text(mem: Memory) -> None:
    mem.append_event("x" * 5_000)  # nodes 1-3
    seed(mem, 2)  # nodes 4-5
    nodes = active_nodes(mem.conn, EVERY_SPACE)
    low = make_head(mem.conn, [nodes[0].id, nodes[1].id], "low summary")
    high = make_head(mem.conn, [low, nodes[2].id, nodes[3].id], "high summary")
    view = mem.timeline_view()
    assert [(n["kind"], n["level"]) for n in view["nodes"]] == [("head", 2), ("raw", 0)]
    first = expand(mem.conn, high, EVERY_SPACE)
    assert [(n.kind, n.level) for n in first] == [("head", 1), ("raw", 0), ("raw", 0)]
    second = expand(mem.conn, first[0].id, EVERY_SPACE)
    assert [n.fragment for n in second] == ["1/3", "2/3"]
    text = "".join(n.text for n in second) + first[1].text
    assert text == "x" * 5_000
    assert expand(mem.conn, nodes[4].id, EVERY_SPACE) == []  # a raw fragment has no children
    with pytest.raises(NotFound, match="no hot node 999"):
        expand(mem.conn, 999, EVERY_SPACE)


def test_new_events_after_a_head_append_after_it(mem: Memory) -> None:
    seed(mem, 3)
    nodes = active_nodes(mem.conn, EVERY_SPACE)
    head = make_head(mem.conn, [n.id for n in nodes], "all three")
    new = mem.append_event("after the head")
    view = mem.timeline_view()
    assert [n["id"] for n in view["nodes"]][0] == head
    assert view["nodes"][-1]["event_id"] == new
