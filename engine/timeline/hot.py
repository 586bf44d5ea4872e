"""The hot timeline: the agent's base context, raw fragments and summary heads in order.

Invariants: the active nodes, ordered by `seq`, are the timeline; a raw node is a slice of its
event (never a copy); a head replaces a contiguous run of nodes, which keep `parent_id` pointing
to it so `expand` walks back down to raw text. A view that cannot carry every node says so.

This module is the one writer of `hot_nodes` (tests/test_architecture.py checks it): ingest adds
raw fragments with `insert_raw_nodes`, compaction folds a run under a head with `add_head` and
`fold_under`; each runs inside the caller's write transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, TypedDict, cast

from ..base.clock import iso, parse_time
from ..base.errors import InputError, NotFound
from ..base.forgetting import Forgetting
from ..base.spaces import SEVERAL, SHARED, Spaces
from ..base.tokens import estimate_tokens
from ..store.forget_rows import forget_in_rows

NODE_COLUMNS = (
    "n.id, n.kind, n.level, n.seq, n.event_id, n.fragment_index, n.fragment_count, n.chars,"
    " n.est_tokens, n.first_at, n.last_at, n.active, n.parent_id, e.source,"
    " CASE WHEN n.kind = 'raw' THEN substr(e.text, n.start_char + 1, n.end_char - n.start_char)"
    " ELSE n.summary END AS text"
)


class NodeView(TypedDict):
    """One timeline node as an answer: the fields of `HotNode`, in its order."""

    id: int
    kind: str  # raw | summary
    level: int
    seq: int
    event_id: int | None
    fragment: str | None  # "3/16" for raw fragments
    chars: int
    est_tokens: int
    first_at: str
    last_at: str
    active: bool
    parent_id: int | None
    source: str | None  # a raw fragment's event's source
    text: str


@dataclass(frozen=True)
class HotNode:
    """One timeline node: a raw fragment of an event or a summary head."""

    id: int
    kind: str
    level: int
    seq: int
    event_id: int | None
    fragment: str | None  # "3/16" for raw fragments
    chars: int
    est_tokens: int
    first_at: str
    last_at: str
    active: bool
    parent_id: int | None
    source: str | None  # a raw fragment's event's source (None for a head)
    text: str

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> HotNode:
        fragment = (
            f"{row['fragment_index'] + 1}/{row['fragment_count']}" if row["kind"] == "raw" else None
        )
        return cls(
            id=row["id"], kind=row["kind"], level=row["level"], seq=row["seq"],
            event_id=row["event_id"], fragment=fragment, chars=row["chars"],
            est_tokens=row["est_tokens"], first_at=row["first_at"], last_at=row["last_at"],
            active=bool(row["active"]), parent_id=row["parent_id"], source=row["source"],
            text=row["text"],
        )

    def size_bytes(self) -> int:
        """Bytes this node costs in a view: its UTF-8 text plus a fixed header allowance."""
        return len(self.text.encode("utf-8")) + 64

    def to_dict(self) -> NodeView:
        """The node as `Memory.expand` and `memvault expand --json` show it (its fields, as
        NodeView declares them: tests/test_answer_types.py holds the two together)."""
        return cast(NodeView, asdict(self))


def active_nodes(conn: sqlite3.Connection, spaces: Spaces) -> list[HotNode]:
    """The active nodes `spaces` sees, in timeline order (the hot timeline read per space)."""
    seen, args = spaces.sql("n.space")
    rows = conn.execute(
        f"SELECT {NODE_COLUMNS} FROM hot_nodes n LEFT JOIN events e ON e.id = n.event_id"
        f" WHERE n.active = 1 AND {seen} ORDER BY n.seq", args,
    ).fetchall()
    return [HotNode.from_row(r) for r in rows]


def timeline_totals(conn: sqlite3.Connection, spaces: Spaces) -> dict[str, int]:
    """Active node count and estimated tokens of the hot timeline (of the nodes `spaces` sees:
    the compaction threshold reads it unbound, the whole timeline)."""
    seen, args = spaces.sql("space")
    row = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(est_tokens), 0) FROM hot_nodes WHERE active = 1"
        f" AND {seen}", args).fetchone()
    return {"nodes": int(row[0]), "est_tokens": int(row[1])}


# The oldest hot nodes a view left out: how many, which, when, how large (the functional
# form: `from` is a keyword).
TimelineCut = TypedDict("TimelineCut", {
    "count": int, "first_node": int, "last_node": int, "from": str, "to": str,
    "est_tokens": int,
})


class TimelineView(TypedDict):
    """The hot timeline as an agent sees it (memory_context's `timeline`)."""

    nodes: list[NodeView]
    total_nodes: int
    shown_nodes: int
    cut_nodes: int
    est_tokens: int  # of the nodes shown
    total_est_tokens: int
    bytes: int
    max_bytes: int
    cut: TimelineCut | None
    notice: str | None  # the cut in words


def timeline_view(conn: sqlite3.Connection, max_bytes: int,
                  spaces: Spaces) -> TimelineView:
    """The newest active nodes that fit in `max_bytes`, in order, with an account of the cut.

    Returns {"nodes": [...], "total_nodes", "shown_nodes", "cut_nodes", "cut": {...} | None,
    "est_tokens" (shown), "total_est_tokens", "bytes"}. When nodes are cut, `cut` names how many,
    their first/last node ids and the time range they span, and `notice` says it in words.
    Only the nodes `spaces` sees are in it, counted or cut.
    """
    if max_bytes < 1:
        raise InputError("max_bytes must be positive")
    nodes = active_nodes(conn, spaces)
    kept: list[HotNode] = []
    used = 0
    for node in reversed(nodes):
        cost = node.size_bytes()
        if used + cost > max_bytes:
            break
        kept.append(node)
        used += cost
    kept.reverse()
    cut = nodes[: len(nodes) - len(kept)]
    view = TimelineView(
        nodes=[n.to_dict() for n in kept],
        total_nodes=len(nodes),
        shown_nodes=len(kept),
        cut_nodes=len(cut),
        est_tokens=sum(n.est_tokens for n in kept),
        total_est_tokens=sum(n.est_tokens for n in nodes),
        bytes=used,
        max_bytes=max_bytes,
        cut=None,
        notice=None,
    )
    if cut:
        view["cut"] = {
            "count": len(cut), "first_node": cut[0].id, "last_node": cut[-1].id,
            "from": cut[0].first_at, "to": cut[-1].last_at,
            "est_tokens": sum(n.est_tokens for n in cut),
        }
        view["notice"] = (
            f"showing {len(kept)} of {len(nodes)} hot nodes: the oldest {len(cut)} "
            f"(nodes {cut[0].id}–{cut[-1].id}, {cut[0].first_at} to {cut[-1].last_at}) "
            f"did not fit in {max_bytes:,} bytes"
        )
    return view


def get_node(conn: sqlite3.Connection, node_id: int, spaces: Spaces) -> HotNode:
    """One node; NotFound when there is none or `spaces` does not see it."""
    seen, args = spaces.sql("n.space")
    row = conn.execute(
        f"SELECT {NODE_COLUMNS} FROM hot_nodes n LEFT JOIN events e ON e.id = n.event_id"
        f" WHERE n.id = ? AND {seen}",
        (node_id, *args),
    ).fetchone()
    if row is None:
        raise NotFound(f"no hot node {node_id}")
    return HotNode.from_row(row)


def expand(conn: sqlite3.Connection, node_id: int,
           spaces: Spaces) -> list[HotNode]:
    """The children a summary head replaced, in order (empty for a raw fragment), only those
    `spaces` sees (a head never folds two spaces, so that is all of them or none)."""
    get_node(conn, node_id, spaces)
    seen, args = spaces.sql("n.space")
    rows = conn.execute(
        f"SELECT {NODE_COLUMNS} FROM hot_nodes n LEFT JOIN events e ON e.id = n.event_id"
        f" WHERE n.parent_id = ? AND {seen} ORDER BY n.seq",
        (node_id, *args),
    ).fetchall()
    return [HotNode.from_row(r) for r in rows]


@dataclass(frozen=True)
class RangeNode:
    """A node of a seq range as a compaction scans it: the node, its space and the batch that
    made it (a head's; None for a raw fragment)."""

    node: HotNode
    space: str
    made_in_batch: int | None


def active_range(conn: sqlite3.Connection, lo: int, hi: int,
                 spaces: Spaces) -> Iterator[RangeNode]:
    """The active nodes with seq in lo..hi that `spaces` sees, in timeline order, read lazily:
    a scan that stops at its first run never reads a long timeline whole."""
    seen, args = spaces.sql("n.space")
    rows = conn.execute(
        f"SELECT {NODE_COLUMNS}, n.space AS node_space, n.batch_id FROM hot_nodes n"
        f" LEFT JOIN events e ON e.id = n.event_id"
        f" WHERE n.active = 1 AND n.seq BETWEEN ? AND ? AND {seen} ORDER BY n.seq",
        (lo, hi, *args))
    for row in rows:
        yield RangeNode(HotNode.from_row(row), row["node_space"], row["batch_id"])


def nodes_by_id(conn: sqlite3.Connection, node_ids: Sequence[int]) -> list[HotNode]:
    """The nodes `node_ids` (those that exist, active or not) in timeline order: a batch's
    claimed nodes, whose space its claim already chose."""
    marks = ",".join("?" * len(node_ids))
    rows = conn.execute(
        f"SELECT {NODE_COLUMNS} FROM hot_nodes n LEFT JOIN events e ON e.id = n.event_id"
        f" WHERE n.id IN ({marks}) ORDER BY n.seq", node_ids).fetchall()
    return [HotNode.from_row(r) for r in rows]


@dataclass(frozen=True)
class RunCheck:
    """What the active nodes of a seq range say of a claimed run: how many lie in the range,
    how many of them are the claimed ones, of how many spaces the claimed ones are, and one."""

    between: int
    claimed: int
    spaces: int
    space: str | None


def check_run(conn: sqlite3.Connection, node_ids: Sequence[int], first_seq: int,
              last_seq: int) -> RunCheck:
    """One statement: the active nodes of first_seq..last_seq against the claimed `node_ids`
    (a commit's check that its run is still whole, of one space)."""
    marks = ",".join("?" * len(node_ids))
    row = conn.execute(
        f"SELECT COUNT(*) AS between_, COALESCE(SUM(id IN ({marks})), 0) AS claimed,"
        f" COUNT(DISTINCT CASE WHEN id IN ({marks}) THEN space END) AS spaces,"
        f" MAX(CASE WHEN id IN ({marks}) THEN space END) AS space"
        " FROM hot_nodes WHERE active = 1 AND seq BETWEEN ? AND ?",
        (*node_ids, *node_ids, *node_ids, first_seq, last_seq),
    ).fetchone()
    return RunCheck(row["between_"], row["claimed"], row["spaces"], row["space"])


def next_node_id(conn: sqlite3.Connection) -> int:
    """The id the next node gets (MAX(id) + 1, as SQLite would choose): ingest numbers its
    fragments itself, so they go in with one executemany."""
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM hot_nodes").fetchone()[0])


def insert_raw_nodes(conn: sqlite3.Connection, nodes: Sequence[tuple[Any, ...]],
                     space: str = SHARED) -> None:
    """Add raw fragments, each (id, event id, fragment index, fragment count, start, end,
    estimated tokens, the event's time, created at), all of `space` (their events'), inside
    the caller's transaction."""
    # Numbered parameters: a raw node's seq is its id and its time span is its event's moment,
    # so each value is bound once.
    conn.executemany(
        "INSERT INTO hot_nodes (id, kind, level, seq, event_id, fragment_index, fragment_count,"
        " start_char, end_char, chars, est_tokens, first_at, last_at, created_at, space)"
        " VALUES (?1, 'raw', 0, ?1, ?2, ?3, ?4, ?5, ?6, ?6 - ?5, ?7, ?8, ?8, ?9, ?10)",
        [(*node, space) for node in nodes],
    )


def add_head(
    conn: sqlite3.Connection, level: int, seq: int, summary: str, est_tokens: int,
    first_at: str, last_at: str, now: datetime, batch_id: int | None, space: str = SHARED,
) -> int:
    """Insert a summary head at `seq` (its first child's) of `space` (its children's) and
    return its id; the caller folds the children under it (`fold_under`) in the same
    transaction."""
    head = conn.execute(
        "INSERT INTO hot_nodes (kind, level, seq, summary, chars, est_tokens, first_at, last_at,"
        " created_at, batch_id, space) VALUES ('head', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (level, seq, summary, len(summary), est_tokens, first_at, last_at, iso(now), batch_id,
         space),
    ).lastrowid
    assert head is not None
    return head


def move_event_nodes(conn: sqlite3.Connection, event_id: int, space: str) -> None:
    """An event's raw fragments follow it into `space` (`memvault space move`), and so does
    each head above them whose turns are now all of `space`; a head whose turns now belong to
    several spaces takes SEVERAL: its summary speaks of each, so no bound client reads it."""
    conn.execute("UPDATE hot_nodes SET space = ? WHERE event_id = ?", (space, event_id))
    heads = conn.execute(
        "WITH RECURSIVE up(id) AS (SELECT parent_id FROM hot_nodes WHERE event_id = ?"
        " AND parent_id IS NOT NULL UNION SELECT n.parent_id FROM hot_nodes n JOIN up"
        " ON n.id = up.id WHERE n.parent_id IS NOT NULL) SELECT id FROM up", (event_id,),
    ).fetchall()
    for (head,) in heads:
        spaces = {row[0] for row in conn.execute(
            "WITH RECURSIVE down(id, kind, space) AS (SELECT id, kind, space FROM hot_nodes"
            " WHERE parent_id = ? UNION ALL SELECT n.id, n.kind, n.space FROM hot_nodes n"
            " JOIN down ON n.parent_id = down.id) SELECT DISTINCT space FROM down"
            " WHERE kind = 'raw'", (head,))}
        conn.execute("UPDATE hot_nodes SET space = ? WHERE id = ?",
                     (spaces.pop() if len(spaces) == 1 else SEVERAL, head))


def fold_under(conn: sqlite3.Connection, head: int, node_ids: Sequence[int]) -> None:
    """Take `node_ids` off the timeline, each keeping `head` as its parent (for `expand`)."""
    marks = ",".join("?" * len(node_ids))
    conn.execute(f"UPDATE hot_nodes SET active = 0, parent_id = ? WHERE id IN ({marks})",
                 (head, *node_ids))


def forget_in_heads(conn: sqlite3.Connection, forgetting: Forgetting,
                    rewritten: Sequence[int] = ()) -> None:
    """Replace the forgotten text in summary heads (raw fragments are slices of their event,
    so forgetting it in the event is enough); inside the caller's write transaction. The
    estimated tokens of the heads changed, and of the raw fragments of the `rewritten` events,
    are estimated again from their new text (a marker of X's counts otherwise than the words
    it replaced), so the timeline's totals stay true and a restore derives the same."""
    found = forget_in_rows(conn, forgetting, "hot_nodes", ("summary",), key="id")
    if not forgetting.apply:
        return
    conn.executemany("UPDATE hot_nodes SET est_tokens = ? WHERE id = ?",
                     [(estimate_tokens(forgetting.replace(old["summary"])), node_id)
                      for node_id, old in found])
    fragments = conn.execute(
        "SELECT n.id, substr(e.text, n.start_char + 1, n.end_char - n.start_char)"
        " FROM hot_nodes n JOIN events e ON e.id = n.event_id"
        " WHERE n.kind = 'raw' AND n.event_id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(rewritten)),)).fetchall()
    conn.executemany("UPDATE hot_nodes SET est_tokens = ? WHERE id = ?",
                     [(estimate_tokens(text), node_id) for node_id, text in fragments])


# -- what the scheduler and the job chain ask of the hot timeline --------------------------------
def newest_node_id(conn: sqlite3.Connection, spaces: Spaces) -> int:
    """The largest node id `spaces` sees (active or not), 0 for none."""
    seen, args = spaces.sql("space")
    return int(conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM hot_nodes WHERE {seen}",
                            args).fetchone()[0])


def newest_active_seq(conn: sqlite3.Connection, spaces: Spaces) -> int:
    """The largest seq among the active nodes `spaces` sees, 0 for none."""
    seen, args = spaces.sql("space")
    return int(conn.execute(
        f"SELECT COALESCE(MAX(seq), 0) FROM hot_nodes WHERE active = 1 AND {seen}",
        args).fetchone()[0])


def has_active_raw_up_to(conn: sqlite3.Connection, limit: int, spaces: Spaces) -> bool:
    """Whether an active raw fragment `spaces` sees has seq <= `limit` (a raw node's seq is
    its id, so this bounds the same nodes and uses the index of active nodes)."""
    seen, args = spaces.sql("space")
    return conn.execute(
        f"SELECT 1 FROM hot_nodes WHERE active = 1 AND kind = 'raw' AND seq <= ? AND {seen}"
        " LIMIT 1", (limit, *args)).fetchone() is not None


def active_raw_count(conn: sqlite3.Connection, spaces: Spaces) -> int:
    """How many raw fragments `spaces` sees are on the hot timeline now."""
    seen, args = spaces.sql("space")
    return int(conn.execute(
        f"SELECT COUNT(*) FROM hot_nodes WHERE active = 1 AND kind = 'raw' AND {seen}",
        args).fetchone()[0])


def newest_raw_before(conn: sqlite3.Connection, cutoff: datetime, spaces: Spaces) -> int | None:
    """The newest raw node `spaces` sees that entered the hot timeline before `cutoff` (its
    id; raw ids grow with ingestion), or None. Walks back from the newest fragment, so it
    reads only the fragments younger than `cutoff` and one more; times are compared parsed,
    as their offsets may differ (a daylight-saving change)."""
    seen, args = spaces.sql("space")
    for node_id, created_at in conn.execute(
        f"SELECT id, created_at FROM hot_nodes WHERE kind = 'raw' AND {seen} ORDER BY id DESC",
        args,
    ):
        if parse_time(created_at) < cutoff:
            return int(node_id)
    return None
