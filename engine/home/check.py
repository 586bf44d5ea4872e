"""`memvault check`: does the database hold together? Reads only; safe while the worker runs.

Each finding is {kind, severity, detail, ids}. `problems` are states the engine never produces
on its own (corruption, orphans, lost events, contradictory queue states, abandoned batches,
projection failures, a home others can read); `warnings` are normal but worth seeing (the vault
projection lagging behind). A finding's severity is "error" or "warning"; `ok` is false, and
`memvault check` exits 1, only when some finding is an error. A stale claim is a problem of
severity warning: nothing is lost, the next worker to take the lease claims the batch again.

Kinds of problem:
- integrity: PRAGMA integrity_check is not ok;
- foreign_key: PRAGMA foreign_key_check rows (table, rowid, parent table);
- orphan_evidence / orphan_relation / orphan_redirect: links to missing objects or events;
- redirect_cycle: merged objects whose redirects loop;
- queued_while_hot: an archive_queue row whose event still has an active hot fragment;
- lost_event: no active fragment, no queue row and not covered by an active head;
- linked_without_target: a linked event with no evidence and no core file written for it;
- archive_only_with_evidence: an archive_only event that objects cite;
- cursor_beyond_event: page_cursor larger than the event's length;
- stale_claim (warning): a batch claimed longer than a lease ago (not waiting for a retry) while
  no valid worker lease exists, so no live worker can be finishing it;
- projection_error: the vault projector's recorded failures;
- permissions: the home, or a file or folder in it, that group or others may access (given
  `home`; a writing open tightens it, see memvault.base.config.tighten_home);
- owner: the home, its settings, database or vault owned by another user (given `home`; every
  writing command refuses such a home, see memvault.base.home_trust).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..base.config import exposed_paths
from ..base.home_trust import describe_foreign, foreign_parts
from ..jobs.leases import lease_is_live
from ..vault.bookkeeping import vault_status

DEFAULT_LEASE_S = 360.0  # batch.timeout_s + worker.lease_extra_s by default
MAX_IDS = 50  # ids listed per finding; the detail always carries the full count
ERROR, WARNING = "error", "warning"
# Problems that need no repair: the engine recovers from them by itself.
WARNING_KINDS = frozenset({"stale_claim"})


def _finding(kind: str, detail: str, ids: list[Any], severity: str = ERROR) -> dict[str, Any]:
    return {"kind": kind, "severity": severity, "detail": detail, "ids": ids[:MAX_IDS]}


def _ids(conn: sqlite3.Connection, sql: str, *params: Any) -> list[Any]:
    return [row[0] for row in conn.execute(sql, params)]


def check_memory(
    conn: sqlite3.Connection, now: datetime | None = None, lease_s: float = DEFAULT_LEASE_S,
    home: Path | None = None,
) -> dict[str, Any]:
    """Run every check; return {ok, errors, problems, warnings, checked_at}. Reads only.

    `ok` is true when no finding has severity error; `errors` counts those that do. With
    `home`, the home's permissions are checked too.
    """
    now = now or datetime.now(UTC)
    problems: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []

    def add(kind: str, detail: str, find: Callable[[], list[Any]]) -> None:
        try:
            ids = find()
        except sqlite3.DatabaseError as exc:  # a damaged file: report it, run the other checks
            problems.append(_finding(kind, f"could not check: {exc}", []))
            return
        if ids:
            severity = WARNING if kind in WARNING_KINDS else ERROR
            problems.append(_finding(kind, f"{len(ids)} {detail}", ids, severity))

    try:
        integrity = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        integrity = [str(exc)]
    if integrity != ["ok"]:
        problems.append(_finding("integrity", "; ".join(integrity[:20]), []))

    try:
        fk = [tuple(row) for row in conn.execute("PRAGMA foreign_key_check")]
    except sqlite3.DatabaseError as exc:
        problems.append(_finding("foreign_key", f"could not check: {exc}", []))
        fk = []
    if fk:
        tables = sorted({f"{t}->{parent}" for t, _, parent, _ in fk})
        problems.append(_finding(
            "foreign_key", f"{len(fk)} rows reference missing parents ({', '.join(tables)})",
            [f"{t}:{rowid}" for t, rowid, _, _ in fk]))

    add("orphan_evidence", "evidence rows point at a missing object or event", lambda: _ids(
        conn, "SELECT v.id FROM evidence v WHERE NOT EXISTS (SELECT 1 FROM objects o"
        " WHERE o.id = v.object_id) OR NOT EXISTS (SELECT 1 FROM events e"
        " WHERE e.id = v.event_id) ORDER BY v.id"))
    add("orphan_relation", "relations point at a missing object", lambda: _ids(
        conn, "SELECT r.id FROM relations r WHERE NOT EXISTS (SELECT 1 FROM objects o"
        " WHERE o.id = r.src_id) OR NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = r.dst_id)"
        " ORDER BY r.id"))
    add("orphan_redirect", "objects redirect to a missing object", lambda: _ids(
        conn, "SELECT o.id FROM objects o WHERE o.redirect_to IS NOT NULL AND NOT EXISTS"
        " (SELECT 1 FROM objects t WHERE t.id = o.redirect_to) ORDER BY o.id"))
    add("redirect_cycle", "objects are on a redirect cycle", lambda: _redirect_cycles(conn))

    add("queued_while_hot", "queued events still have an active hot fragment", lambda: _ids(
        conn, "SELECT DISTINCT n.event_id FROM hot_nodes n JOIN archive_queue q"
        " ON q.event_id = n.event_id WHERE n.active = 1 ORDER BY n.event_id"))
    add("lost_event", "events are neither hot, queued nor covered by an active head",
        lambda: _lost_events(conn))
    add("linked_without_target", "linked events have no evidence and no core file",
        lambda: _ids(conn, "SELECT q.event_id FROM archive_queue q WHERE q.state = 'linked'"
        " AND NOT EXISTS (SELECT 1 FROM evidence v WHERE v.event_id = q.event_id)"
        " AND NOT EXISTS (SELECT 1 FROM core_files c JOIN batches b ON b.id = c.batch_id"
        "   WHERE json_valid(b.claim) AND json_extract(b.claim, '$.event_id') = q.event_id)"
        " ORDER BY q.event_id"))
    add("archive_only_with_evidence", "archive_only events are cited as evidence", lambda: _ids(
        conn, "SELECT q.event_id FROM archive_queue q WHERE q.state = 'archive_only'"
        " AND EXISTS (SELECT 1 FROM evidence v WHERE v.event_id = q.event_id)"
        " ORDER BY q.event_id"))
    add("cursor_beyond_event", "queue rows have page_cursor beyond the event's length",
        lambda: _ids(conn, "SELECT q.event_id FROM archive_queue q"
        " JOIN events e ON e.id = q.event_id"
        " WHERE q.page_cursor > e.chars OR q.page_cursor < 0 ORDER BY q.event_id"))
    add("stale_claim", f"batches claimed over {lease_s:g} s ago with no valid worker lease",
        lambda: _stale_claims(conn, now, lease_s))

    try:
        vault = vault_status(conn)
    except sqlite3.DatabaseError as exc:
        problems.append(_finding("projection_error", f"could not check: {exc}", []))
        vault = {"error_total": 0, "pending_objects": 0}
    if vault["error_total"]:
        problems.append(_finding(
            "projection_error", f"{vault['error_total']} vault projection errors "
            f"(latest: {vault['errors'][0]['error'] if vault['errors'] else '?'})",
            [e["object_id"] or e["path"] for e in vault["errors"]]))
    if vault["pending_objects"]:
        warnings.append(_finding(
            "projection_lag", f"{vault['pending_objects']} objects wait to be rendered "
            "into the vault", [], WARNING))
    if home is not None:
        problems += _permission_findings(home)
        problems += _owner_findings(home)
    errors = sum(1 for p in problems if p["severity"] == ERROR)
    return {"ok": not errors, "errors": errors, "problems": problems, "warnings": warnings,
            "checked_at": now.isoformat()}


def _permission_findings(home: Path) -> list[dict[str, Any]]:
    """One `permissions` error listing the home's parts that group or others may access."""
    exposed = exposed_paths(home)
    if not exposed:
        return []
    parts = [f"{path if path == home else path.relative_to(home).as_posix()} {mode:04o}"
             for path, mode in exposed[:10]]
    if len(exposed) > 10:
        parts.append(f"and {len(exposed) - 10} more")
    return [_finding(
        "permissions", f"{len(exposed)} paths in the home are open to group or others "
        f"({', '.join(parts)}); any writing command (e.g. `memvault migrate`) makes them "
        "0700/0600, or chmod them", [str(path) for path, _ in exposed])]


def _owner_findings(home: Path) -> list[dict[str, Any]]:
    """One `owner` error listing the home's parts another user owns."""
    parts = foreign_parts(home)
    if not parts:
        return []
    return [_finding(
        "owner", f"{len(parts)} parts of the home belong to another user "
        f"({describe_foreign(home, parts)}): writing commands refuse it; chown it to yourself, "
        "or run them with --allow-other-owner if you administer it",
        [str(path) for path, _ in parts])]


def _redirect_cycles(conn: sqlite3.Connection) -> list[str]:
    """Ids on a redirect cycle (a self-redirect included), each listed once."""
    redirect = dict(conn.execute(
        "SELECT id, redirect_to FROM objects WHERE redirect_to IS NOT NULL").fetchall())
    on_cycle: set[str] = set()
    settled: set[str] = set()
    for start in redirect:
        path: list[str] = []
        seen: dict[str, int] = {}
        node: str | None = start
        while node is not None and node in redirect and node not in settled:
            if node in seen:
                on_cycle.update(path[seen[node]:])
                break
            seen[node] = len(path)
            path.append(node)
            node = redirect[node]
        settled.update(path)
    return sorted(on_cycle)


def _lost_events(conn: sqlite3.Connection) -> list[int]:
    """Events with no active fragment and no queue row whose fragments reach no active head."""
    return _ids(conn, """
        WITH RECURSIVE up (event_id, node_id, active) AS (
            SELECT n.event_id, n.id, n.active FROM hot_nodes n WHERE n.kind = 'raw'
               AND NOT EXISTS (SELECT 1 FROM archive_queue q WHERE q.event_id = n.event_id)
            UNION
            SELECT up.event_id, p.id, p.active FROM up
              JOIN hot_nodes c ON c.id = up.node_id
              JOIN hot_nodes p ON p.id = c.parent_id
        )
        SELECT e.id FROM events e
         WHERE NOT EXISTS (SELECT 1 FROM archive_queue q WHERE q.event_id = e.id)
           AND NOT EXISTS (SELECT 1 FROM up WHERE up.event_id = e.id AND up.active = 1)
         ORDER BY e.id""")


def _stale_claims(conn: sqlite3.Connection, now: datetime, lease_s: float) -> list[int]:
    """Claimed batches older than a lease that no live worker can be finishing: no unexpired
    lease covers them, or the one that does belongs to a process on this host that is gone
    (its lease would be taken over at once, see leases.lease_is_live)."""
    covered: set[int | None] = {
        lease["batch_id"] for lease in conn.execute(
            "SELECT holder, batch_id, expires_us FROM leases") if lease_is_live(lease, now)}
    if None in covered:  # a live worker between batches may be about to finish any of them
        return []
    old = _ids(conn, "SELECT b.id FROM batches b WHERE b.state = 'claimed'"
               " AND b.next_attempt_at IS NULL"  # a failed claim waiting for its retry is fine
               " AND (julianday(?) - julianday(b.claimed_at)) * 86400.0 > ? ORDER BY b.id",
               now.isoformat(), lease_s)
    return [batch_id for batch_id in old if batch_id not in covered]
