"""The vault's bookkeeping rows: what was written where, dirty marks, errors and reports.

The one writer of `projection`, `projection_pages`, `projection_errors`, `vault_reports` and
(besides the schema's triggers, which mark) `vault_dirty` (tests/test_architecture.py checks
it). Every function runs inside the caller's write transaction
(`memvault.store.connection.write`).

Invariants:
- `projection` holds, per owner (object id, core file name or the directory), the main file's
  path, the sha256 of the bytes last written there and the version they showed;
  `projection_pages` the same for continuation pages. A file is only ever overwritten when its
  bytes on disk are these (or a conflict copy was kept first).
- a dirty mark is cleared only if it is still the mark the rendering saw.
- one open report per (path, kind); resolving keeps the row, with the time and the conflict copy.
- a write intent (`projection_intents`) is committed before its file is renamed into place and
  deleted with the record of that write: bytes matching it are the projector's own, even when a
  kill came between the rename and the record.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ..base.clock import iso
from ..base.forgetting import Forgetting
from ..objects.records import citers_of
from ..store.connection import get_state
from ..store.forget_rows import forget_in_rows
from .schema import MARK_DIRTY


def record_owner(
    conn: sqlite3.Connection, owner: str, path: str, digest: str, version: int, now: datetime,
) -> None:
    """Record what the projector wrote (or found already right) as an owner's main file."""
    record_owners(conn, [(owner, path, digest, version)], now)


def record_pages(
    conn: sqlite3.Connection, owner: str, pages: dict[str, tuple[int, str]], now: datetime,
) -> None:
    """Make `projection_pages` of an owner exactly `pages` ({path: (page number, sha256)})."""
    known = {r[0] for r in conn.execute(
        "SELECT path FROM projection_pages WHERE object_id = ?", (owner,)
    )}
    for path in known - set(pages):
        conn.execute("DELETE FROM projection_pages WHERE path = ?", (path,))
    for path, (number, digest) in pages.items():
        conn.execute(
            "INSERT INTO projection_pages (path, object_id, page, sha256, written_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET object_id ="
            " excluded.object_id, page = excluded.page, sha256 = excluded.sha256,"
            " written_at = excluded.written_at",
            (path, owner, number, digest, iso(now)),
        )


def placeholders(n: int) -> str:
    """`?, ?, ...` for an IN list of `n` values (callers keep n to a chunk, far below SQLite's
    limit on bound parameters)."""
    return ", ".join("?" * n)


def recorded_files_many(
    conn: sqlite3.Connection, owners: Sequence[str],
    intended: dict[str, dict[str, set[str]]] | None = None,
) -> dict[str, dict[str, str]]:
    """{owner: {path: sha256}} of every file last written for each owner (main file first,
    then the pages by number), in two queries; an owner with none written gets {}. With
    `intended`, also fills it with each owner's open write intents {path: {sha256}} (read by
    the first of the two queries)."""
    files: dict[str, dict[str, str]] = {owner: {} for owner in owners}
    if not owners:
        return files
    marks = placeholders(len(owners))
    for owner, path, digest, intent in conn.execute(
        f"SELECT object_id, path, sha256, 0 FROM projection WHERE object_id IN ({marks})"
        f" UNION ALL SELECT object_id, path, sha256, 1 FROM projection_intents"
        f" WHERE object_id IN ({marks})", [*owners, *owners],
    ).fetchall():
        if intent:
            if intended is not None:
                intended.setdefault(owner, {}).setdefault(path, set()).add(digest)
        else:
            files[owner][path] = digest
    for owner, path, digest in conn.execute(
        f"SELECT object_id, path, sha256 FROM projection_pages WHERE object_id IN ({marks})"
        " ORDER BY object_id, page", owners,
    ).fetchall():
        files[owner][path] = digest
    return files


def dirty_marks(conn: sqlite3.Connection, owners: Sequence[str]) -> dict[str, int]:
    """{owner: mark} of the owners in `owners` that are marked dirty (one query)."""
    if not owners:
        return {}
    return dict(conn.execute(
        f"SELECT object_id, mark FROM vault_dirty WHERE object_id IN"
        f" ({placeholders(len(owners))})", owners,
    ).fetchall())


def projected_owners(conn: sqlite3.Connection) -> set[str]:
    """Every owner with a main file recorded."""
    return {row[0] for row in conn.execute("SELECT object_id FROM projection")}


def owners_with_pages(conn: sqlite3.Connection, owners: Sequence[str]) -> set[str]:
    """The owners in `owners` that have continuation pages recorded."""
    if not owners:
        return set()
    return {r[0] for r in conn.execute(
        f"SELECT DISTINCT object_id FROM projection_pages WHERE object_id IN"
        f" ({placeholders(len(owners))})", owners,
    )}


def open_report_paths(conn: sqlite3.Connection, paths: Sequence[str]) -> set[str]:
    """The paths in `paths` that have an open (unresolved) report."""
    found: set[str] = set()
    for start in range(0, len(paths), 500):  # bounded IN lists
        part = paths[start:start + 500]
        found.update(r[0] for r in conn.execute(
            f"SELECT path FROM vault_reports WHERE resolved_at IS NULL AND path IN"
            f" ({placeholders(len(part))})", part,
        ))
    return found


def record_owners(
    conn: sqlite3.Connection, rows: Iterable[tuple[str, str, str, int]], now: datetime,
) -> None:
    """Record what the projector wrote (or found already right) as the main file of each
    (owner, path, sha256, version) row, in one statement."""
    stamp = iso(now)
    conn.executemany(
        "INSERT INTO projection (object_id, path, sha256, version, written_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (object_id) DO UPDATE SET path = excluded.path,"
        " sha256 = excluded.sha256, version = excluded.version, written_at = excluded.written_at",
        [(owner, path, digest, version, stamp) for owner, path, digest, version in rows],
    )


def clear_dirty_many(conn: sqlite3.Connection, seen: Iterable[tuple[str, int]]) -> None:
    """Clear each owner's dirty mark if it is still the mark its rendering saw (nothing marked
    it again since), for many (owner, mark seen) pairs in one statement."""
    conn.executemany("DELETE FROM vault_dirty WHERE object_id = ? AND mark = ?", list(seen))


def clear_errors_many(conn: sqlite3.Connection, owners: Sequence[str]) -> None:
    """`clear_errors` for several owners in one statement."""
    if owners:
        conn.execute(f"DELETE FROM projection_errors WHERE object_id IN"
                     f" ({placeholders(len(owners))})", owners)


def drop_vanished_marks(conn: sqlite3.Connection) -> None:
    """Drop the dirty marks of objects that are gone and never had a main file."""
    conn.execute(
        "DELETE FROM vault_dirty WHERE NOT EXISTS (SELECT 1 FROM objects o"
        " WHERE o.id = vault_dirty.object_id) AND NOT EXISTS (SELECT 1 FROM projection p"
        " WHERE p.object_id = vault_dirty.object_id)"
    )


def record_intents(
    conn: sqlite3.Connection, rows: Iterable[tuple[str, str, str]], now: datetime,
) -> None:
    """Record (path, owner, sha256) write intents, one statement; commit them before the
    renames they announce."""
    conn.executemany(
        "INSERT OR IGNORE INTO projection_intents (path, object_id, sha256, created_at)"
        " VALUES (?, ?, ?, ?)",
        [(path, owner, digest, iso(now)) for path, owner, digest in rows],
    )


def clear_intents_many(conn: sqlite3.Connection, owners: Sequence[str]) -> None:
    """Drop the write intents of owners whose writes are now recorded (one statement)."""
    if owners:
        conn.execute(f"DELETE FROM projection_intents WHERE object_id IN"
                     f" ({placeholders(len(owners))})", owners)


def is_intended(conn: sqlite3.Connection, path: str, digest: str) -> bool:
    """Whether the projector meant to put bytes of `digest` at `path` (a write not recorded
    yet: in flight, or cut off by a kill)."""
    return conn.execute("SELECT 1 FROM projection_intents WHERE path = ? AND sha256 = ?",
                        (path, digest)).fetchone() is not None


def owner_of(conn: sqlite3.Connection, path: str) -> tuple[str, str] | None:
    """(owner, sha256 last written) of a projected vault path, or None if it is not one."""
    row = conn.execute(
        "SELECT object_id, sha256 FROM projection WHERE path = ?", (path,)
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT object_id, sha256 FROM projection_pages WHERE path = ?", (path,)
        ).fetchone()
    return (row[0], row[1]) if row else None


def mark_dirty(conn: sqlite3.Connection, object_id: str, reason: str) -> None:
    """Ask the next projection to render an object again."""
    conn.execute(
        "INSERT INTO vault_dirty (object_id, mark, reason) VALUES (?, 1, ?)"
        " ON CONFLICT (object_id) DO UPDATE SET mark = mark + 1, reason = excluded.reason",
        (object_id, reason),
    )


def record_error(
    conn: sqlite3.Connection, owner: str, path: str | None, error: str, now: datetime,
) -> None:
    """Keep the latest failure of an owner (shown by status until a run succeeds)."""
    conn.execute("DELETE FROM projection_errors WHERE object_id = ?", (owner,))
    conn.execute(
        "INSERT INTO projection_errors (object_id, path, error, created_at) VALUES (?, ?, ?, ?)",
        (owner, path, error, iso(now)),
    )


def clear_errors(conn: sqlite3.Connection, owner: str) -> None:
    conn.execute("DELETE FROM projection_errors WHERE object_id = ?", (owner,))


def open_report(
    conn: sqlite3.Connection, path: str, owner: str | None, kind: str, detail: str,
    digest: str | None, now: datetime,
) -> None:
    """Open (or refresh) the report of `kind` about `path`."""
    row = conn.execute(
        "SELECT id FROM vault_reports WHERE path = ? AND kind = ? AND resolved_at IS NULL",
        (path, kind),
    ).fetchone()
    if row:
        conn.execute(
            "UPDATE vault_reports SET object_id = ?, detail = ?, sha256 = ?, detected_at = ?"
            " WHERE id = ?",
            (owner, detail, digest, iso(now), row[0]),
        )
    else:
        conn.execute(
            "INSERT INTO vault_reports (path, object_id, kind, detail, sha256, detected_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (path, owner, kind, detail, digest, iso(now)),
        )


def resolve_reports(
    conn: sqlite3.Connection, path: str, now: datetime, conflict: str | None = None,
    owner: str | None = None,
) -> None:
    """Close the open reports about `path`; note where a hand edit was kept, if anywhere.

    A conflict copy with no open report (the projector found the edit itself) gets a new,
    already resolved report, so status can still list it.
    """
    cur = conn.execute(
        "UPDATE vault_reports SET resolved_at = ?, conflict_path = COALESCE(?, conflict_path)"
        " WHERE path = ? AND resolved_at IS NULL",
        (iso(now), conflict, path),
    )
    if conflict and cur.rowcount == 0:
        conn.execute(
            "INSERT INTO vault_reports (path, object_id, kind, detail, detected_at, resolved_at,"
            " conflict_path) VALUES (?, ?, 'hand_edit', ?, ?, ?, ?)",
            (path, owner, "found by the projector before rewriting the file", iso(now),
             iso(now), conflict),
        )


PENDING_SQL = """
    SELECT o.id FROM objects o
      LEFT JOIN projection p ON p.object_id = o.id
      LEFT JOIN vault_dirty d ON d.object_id = o.id
     WHERE d.object_id IS NOT NULL OR p.object_id IS NULL OR p.version != o.version
        OR EXISTS (SELECT 1 FROM projection_errors e WHERE e.object_id = o.id)
    UNION ALL
    SELECT d.object_id FROM vault_dirty d
      JOIN projection p ON p.object_id = d.object_id
     WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = d.object_id)
"""


def vault_status(conn: sqlite3.Connection, recent: int = 20) -> dict[str, Any]:
    """The vault's part of `memvault status`: backlog, failures, hand edits, watcher heartbeat.

    Reads only; cheap enough for every status call (one scan of objects for the backlog).
    """
    pending = conn.execute(f"SELECT COUNT(*) FROM ({PENDING_SQL})").fetchone()[0]
    files = conn.execute(
        "SELECT (SELECT COUNT(*) FROM projection) + (SELECT COUNT(*) FROM projection_pages)"
    ).fetchone()[0]
    errors = [
        dict(r) for r in conn.execute(
            "SELECT object_id, path, error, created_at FROM projection_errors"
            " ORDER BY id DESC LIMIT ?", (recent,),
        )
    ]
    error_total = conn.execute("SELECT COUNT(*) FROM projection_errors").fetchone()[0]
    open_reports = [
        dict(r) for r in conn.execute(
            "SELECT path, object_id, kind, detail, detected_at FROM vault_reports"
            " WHERE resolved_at IS NULL ORDER BY detected_at, id LIMIT ?", (recent,),
        )
    ]
    conflicts = [
        dict(r) for r in conn.execute(
            "SELECT path, object_id, conflict_path, resolved_at FROM vault_reports"
            " WHERE conflict_path IS NOT NULL ORDER BY id DESC LIMIT ?", (recent,),
        )
    ]
    heartbeat = get_state(conn, "vault.watcher_heartbeat")
    age = None
    if heartbeat:
        row = conn.execute(
            "SELECT CAST(round((julianday('now') - julianday(?)) * 86400) AS INTEGER)",
            (heartbeat,),
        ).fetchone()
        age = row[0]
    return {
        "pending_objects": pending,
        "files": files,
        "errors": errors,
        "error_total": error_total,
        "hand_edits": open_reports,
        "conflicts": conflicts,
        "last_run": get_state(conn, "vault.last_run"),
        "watcher_heartbeat": heartbeat,
        "watcher_heartbeat_age_s": age,
    }


def forget_in_vault_tables(conn: sqlite3.Connection, forgetting: Forgetting) -> None:
    """Replace the forgotten text in the vault's bookkeeping (recorded projection errors and
    watcher reports, which may quote a file); inside the caller's write transaction."""
    forget_in_rows(conn, forgetting, "projection_errors", ("path", "error"), key="id")
    forget_in_rows(conn, forgetting, "vault_reports", ("path", "detail", "conflict_path"),
                   key="id")


def mark_citers_dirty(conn: sqlite3.Connection, event_ids: list[int]) -> int:
    """Mark every projected object citing one of `event_ids` for re-rendering (its files quote
    the event); inside the caller's write transaction. Returns how many objects were marked.
    An object with no file yet needs no mark: its first rendering reads the text as it is."""
    citers = citers_of(conn, event_ids)
    source = ("SELECT object_id, 1, 'evidence' FROM projection"
              " WHERE object_id IN (SELECT value FROM json_each(?))")
    cur = conn.execute(MARK_DIRTY.format(source=source), (json.dumps(citers),))
    return cur.rowcount
