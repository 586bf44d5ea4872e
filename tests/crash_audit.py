"""The invariants the crash harness (tests/crash_harness.py) checks after every SIGKILL.

Each check returns a list of problems (strings); an empty list is a pass. What they assert, and
where in the engine the guarantee comes from:

- storage: PRAGMA integrity_check is 'ok' (WAL + one BEGIN IMMEDIATE transaction per write).
- events (engine/timeline/events.py: event and fragments in one transaction): every event's text is
  exactly the harness text its header names, no text was stored twice, and its raw hot nodes tile
  the text exactly as split_fragments cuts it (no event with a partial set of fragments).
- acks: every id a child was told about (append/ingest returned) exists with that text; every job id
  a request returned exists.
- receipts (engine/jobs/mode.py commit_proposal, engine/jobs/records.py save_receipt): a batch is
  committed iff it has exactly one receipt; the receipt carries the batch's claim token, job, batch
  and revision; revisions are distinct, grow in commit order, and the last is the graph revision.
- no half-committed batch: no row of hot_nodes, object_versions, relations, evidence, core_files,
  archive_queue (enqueued_by) or reviewed deep_snapshot names a batch that is not committed; a
  committed compact batch has exactly its one head (the receipt's), every claimed node folded under
  it and exactly the receipt's events enqueued by it (engine/jobs/modes/compact.py); a committed
  organize batch's event cursor reached its page end and a final outcome is the queue state
  (engine/jobs/modes/organize.py); a committed deep batch marked every claimed position reviewed by
  itself (engine/jobs/modes/deep.py); a committed organize or deep batch wrote exactly the object
  versions, relations, evidence and core files its receipt counts (engine/objects/graph_write.py).
- claims (engine/jobs/claims.py): every batch's stored claim reads back as its mode's typed claim
  and is written again byte for byte.
- jobs (engine/jobs/records.py, engine/jobs/worker.py): at most one claimed batch per job; a claimed
  batch belongs to a running job; a queued job has no batch; a finished job has no claimed batch and
  is partial iff it has a terminal batch or (organize) its note names events still blocked; a
  blocked event names a terminal batch that claimed it.
- failed batches: every failure a worker reported (an `F` line, or the final resume's ticks) is an
  injected garbage answer or one of two known engine/jobs/modes/compact.py bugs
  (crash_child.FAILURE_KINDS).
- recall (engine/recall/index.py): the event watermark is at most the newest event, and the
  FTS table holds exactly the events up to it.
- home/check.py check_memory: no problem except `stale_claim` (a killed worker's claim is stale
  until the next worker takes it over; the final check allows none).

Events, acks, receipts and committed batches never change afterwards, so after a kill only the
new ones are checked; the final check covers all of them again. The rest runs in full each time.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

from crash_child import ACKS, event_text, text_number
from memvault.base.clock import iso
from memvault.home.check import check_memory
from memvault.jobs.claims import read_claim
from memvault.timeline.fragments import split_fragments

EFFECTS = (  # (table, column naming a batch, extra condition): rows only a commit may write
    ("hot_nodes", "batch_id", ""),
    ("object_versions", "batch_id", ""),
    ("relations", "batch_id", ""),
    ("evidence", "batch_id", ""),
    ("core_files", "batch_id", ""),
    ("archive_queue", "enqueued_by", ""),
    ("deep_snapshot", "batch_id", "AND x.reviewed_at IS NOT NULL"),
)


def ids(conn: sqlite3.Connection, sql: str, *params: object) -> list[object]:
    """First column of every row; `params` is one dict (named) or positional values."""
    args = params[0] if len(params) == 1 and isinstance(params[0], dict) else params
    return [row[0] for row in conn.execute(sql, args)]


def problem(what: str, found: list[object]) -> list[str]:
    return [f"{what}: {found[:10]}{' ...' if len(found) > 10 else ''}"] if found else []


def integrity(conn: sqlite3.Connection) -> list[str]:
    result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    return [] if result == ["ok"] else [f"integrity_check: {result[:5]}"]


RECENT = "julianday(b.committed_at) >= julianday(:since)"  # batches committed since a time


def receipts(conn: sqlite3.Connection, since: str, after_rowid: int) -> tuple[list[str], int]:
    """A batch is committed iff it has one receipt, and the receipt is the batch's; receipt
    revisions grow in commit order up to the graph revision. Checks batches committed since
    `since` and receipts after `after_rowid`; returns the problems and the last receipt rowid."""
    found = problem("committed batches without exactly one receipt", ids(
        conn, "SELECT b.id FROM batches b LEFT JOIN receipts r ON r.batch_id = b.id"
        f" WHERE b.state = 'committed' AND {RECENT} GROUP BY b.id HAVING COUNT(r.token) != 1",
        {"since": since}))
    found += problem("receipts of uncommitted or other batches", ids(
        conn, "SELECT r.token FROM receipts r LEFT JOIN batches b ON b.id = r.batch_id"
        " WHERE r.rowid > ? AND (b.state IS NOT 'committed'"
        " OR r.token != json_extract(b.claim, '$.token') OR r.job_id != b.job_id"
        " OR json_extract(r.receipt, '$.batch_id') != b.id"
        " OR json_extract(r.receipt, '$.token') != r.token"
        " OR json_extract(r.receipt, '$.revision') != r.revision)", after_rowid))
    rows = conn.execute("SELECT rowid, revision FROM receipts WHERE rowid >= ? ORDER BY rowid",
                        (after_rowid,)).fetchall()
    revisions = [row[1] for row in rows]
    if any(a >= b for a, b in pairwise(revisions)):
        found.append(f"receipt revisions repeated or out of commit order: {revisions[:20]}")
    graph = int(conn.execute(
        "SELECT value FROM state WHERE key = 'graph_revision'").fetchone()[0])
    if revisions and revisions[-1] != graph:
        found.append(f"last receipt revision {revisions[-1]} != graph revision {graph}")
    return found, rows[-1][0] if rows else after_rowid


def half_commits(conn: sqlite3.Connection, since: str) -> list[str]:
    """No effect of an uncommitted batch (all rows); every batch committed since `since` has
    all of its effects."""
    found: list[str] = []
    for table, column, extra in EFFECTS:
        found += problem(f"{table} rows of uncommitted batches", ids(
            conn, f"SELECT DISTINCT b.id FROM {table} x JOIN batches b ON b.id = x.{column}"
            f" WHERE b.state != 'committed' {extra}"))
    found += problem("committed compact batches missing part of their fold",
                     ids(conn, COMPACT_EFFECTS, {"since": since}))
    found += problem("committed organize batches missing part of their write",
                     ids(conn, ORGANIZE_EFFECTS, {"since": since}))
    found += problem("committed graph writes whose rows disagree with their receipt",
                     ids(conn, GRAPH_EFFECTS, {"since": since}))
    found += problem("committed deep batches with unreviewed positions",
                     ids(conn, DEEP_EFFECTS, {"since": since}))
    return found


COMPACT_EFFECTS = f"""
    WITH heads AS (SELECT batch_id, COUNT(*) AS n, MAX(id) AS id FROM hot_nodes
                    WHERE batch_id IS NOT NULL GROUP BY batch_id),
         queued AS (SELECT enqueued_by, COUNT(*) AS n FROM archive_queue
                     WHERE enqueued_by IS NOT NULL GROUP BY enqueued_by)
    SELECT b.id FROM batches b JOIN jobs j ON j.id = b.job_id
      JOIN receipts r ON r.batch_id = b.id
      LEFT JOIN heads h ON h.batch_id = b.id
      LEFT JOIN queued q ON q.enqueued_by = b.id
     WHERE j.mode = 'compact' AND b.state = 'committed' AND {RECENT} AND (
           h.n IS NOT 1 OR h.id IS NOT json_extract(r.receipt, '$.head_id')
        OR (SELECT COUNT(*) FROM json_each(b.claim, '$.node_ids') c
              JOIN hot_nodes n ON n.id = c.value WHERE n.active = 0 AND n.parent_id = h.id)
           != json_array_length(b.claim, '$.node_ids')
        OR (SELECT COUNT(*) FROM hot_nodes n WHERE n.parent_id = h.id)
           != json_array_length(b.claim, '$.node_ids')
        OR json_extract(r.receipt, '$.covered') != json_array_length(b.claim, '$.node_ids')
        OR COALESCE(q.n, 0) != json_array_length(r.receipt, '$.enqueued'))"""

ORGANIZE_EFFECTS = f"""
    SELECT b.id FROM batches b JOIN jobs j ON j.id = b.job_id
      JOIN receipts r ON r.batch_id = b.id
      LEFT JOIN archive_queue q ON q.event_id = json_extract(b.claim, '$.event_id')
     WHERE j.mode = 'organize' AND b.state = 'committed' AND {RECENT} AND (
           json_extract(r.receipt, '$.event_id') IS NOT json_extract(b.claim, '$.event_id')
        OR q.event_id IS NULL OR q.page_cursor < json_extract(b.claim, '$.page_end')
        OR (json_extract(r.receipt, '$.outcome') != 'continue'
            AND q.state != json_extract(r.receipt, '$.outcome')))"""


def _per_batch(table: str) -> str:
    return (f"{table}_n AS (SELECT batch_id, COUNT(*) AS n FROM {table}"
            " WHERE batch_id IS NOT NULL GROUP BY batch_id)")


# A graph write (organize, deep; engine/objects/graph_write.py apply_write) left exactly what its
# receipt counts: one object version per changed object (and per merged loser), each new relation
# and evidence row (a merge adds a supersedes relation and copies evidence), each changed core file.
GRAPH_EFFECTS = f"""
    WITH {_per_batch("object_versions")}, {_per_batch("relations")}, {_per_batch("evidence")},
         {_per_batch("core_files")}
    SELECT b.id FROM batches b JOIN jobs j ON j.id = b.job_id
      JOIN receipts r ON r.batch_id = b.id
      LEFT JOIN object_versions_n ov ON ov.batch_id = b.id
      LEFT JOIN relations_n rel ON rel.batch_id = b.id
      LEFT JOIN evidence_n ev ON ev.batch_id = b.id
      LEFT JOIN core_files_n cf ON cf.batch_id = b.id
     WHERE j.mode IN ('organize', 'deep') AND b.state = 'committed' AND {RECENT} AND (
           COALESCE(ov.n, 0) != json_extract(r.receipt, '$.objects_changed')
                                + json_array_length(r.receipt, '$.merged')
        OR COALESCE(rel.n, 0) - json_extract(r.receipt, '$.relations_added')
           NOT BETWEEN 0 AND json_array_length(r.receipt, '$.merged')
        OR COALESCE(ev.n, 0) < json_extract(r.receipt, '$.evidence_added')
        OR (json_array_length(r.receipt, '$.merged') = 0
            AND COALESCE(ev.n, 0) != json_extract(r.receipt, '$.evidence_added'))
        OR COALESCE(cf.n, 0) != json_extract(r.receipt, '$.core_files'))"""

DEEP_EFFECTS = f"""
    SELECT DISTINCT b.id FROM batches b JOIN jobs j ON j.id = b.job_id
      JOIN json_each(b.claim, '$.positions') p
      LEFT JOIN deep_snapshot s ON s.job_id = b.job_id AND s.position = p.value
     WHERE j.mode = 'deep' AND b.state = 'committed' AND {RECENT}
       AND (s.batch_id IS NOT b.id OR s.reviewed_at IS NULL)"""


def claims_read_back(conn: sqlite3.Connection) -> list[str]:
    """Every batch's claim reads back as its mode's typed claim, which writes it again byte for
    byte (records.new_batch's form: the token first, then the claim)."""
    unread: list[object] = []
    for batch_id, mode, text in conn.execute(
            "SELECT b.id, j.mode, b.claim FROM batches b JOIN jobs j ON j.id = b.job_id"):
        stored = json.loads(text)
        try:
            again = {"token": stored["token"], **read_claim(mode, stored).to_json()}
        except (KeyError, ValueError):
            again = None
        if json.dumps(again, ensure_ascii=False) != text:
            unread.append(batch_id)
    return problem("batch claims their typed claim does not give back byte for byte", unread)


def jobs_coherent(conn: sqlite3.Connection) -> list[str]:
    """Job, batch and blocked-event states agree with each other."""
    found = problem("jobs with more than one claimed batch", ids(
        conn, "SELECT job_id FROM batches WHERE state = 'claimed' GROUP BY job_id"
        " HAVING COUNT(*) > 1"))
    found += problem("claimed batches of jobs not running", ids(
        conn, "SELECT b.id FROM batches b JOIN jobs j ON j.id = b.job_id"
        " WHERE b.state = 'claimed' AND j.state != 'running'"))
    found += problem("queued jobs with batches", ids(
        conn, "SELECT DISTINCT j.id FROM jobs j JOIN batches b ON b.job_id = j.id"
        " WHERE j.state = 'queued'"))
    # partial: a batch of its own went terminal, or (organize) events it was asked about were
    # still blocked when it ended, which its note names; done: neither.
    found += problem("finished jobs whose state disagrees with their terminal batches", ids(
        conn, "SELECT j.id FROM (SELECT id, state, EXISTS (SELECT 1 FROM batches b"
        " WHERE b.job_id = jobs.id AND b.state = 'terminal') AS terminal,"
        " (mode = 'organize' AND error LIKE '%still blocked%') AS blocked FROM jobs) j"
        " WHERE (j.state = 'done' AND (j.terminal OR j.blocked))"
        " OR (j.state = 'partial' AND NOT j.terminal AND NOT j.blocked)"))
    found += problem("blocked events without their terminal batch", ids(
        conn, "SELECT q.event_id FROM archive_queue q LEFT JOIN batches b ON b.id = q.blocked_batch"
        " WHERE q.state = 'blocked' AND (b.state IS NOT 'terminal'"
        " OR json_extract(b.claim, '$.event_id') != q.event_id)"))
    return found


def recall_index(conn: sqlite3.Connection) -> list[str]:
    """The FTS table holds exactly the events up to the watermark."""
    stats = dict(conn.execute("SELECT key, value FROM recall_state").fetchall())
    mark, docs = stats.get("events_indexed_to", 0), stats.get("events_docs", 0)
    newest = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
    below = conn.execute("SELECT COUNT(*) FROM events WHERE id <= ?", (mark,)).fetchone()[0]
    indexed = conn.execute("SELECT COUNT(*) FROM recall_events_fts").fetchone()[0]
    if mark > newest or not below == docs == indexed:
        return [f"recall index: watermark {mark} (newest event {newest}), {below} events below"
                f" it, events_docs {docs}, {indexed} indexed"]
    return []


def engine_check(conn: sqlite3.Connection, now: datetime, final: bool) -> list[str]:
    """memvault.home.check's problems; mid-run a stale claim (the killed worker's) is expected."""
    report = check_memory(conn, now)
    return [f"check: {p['kind']}: {p['detail']}" for p in report["problems"]
            if final or p["kind"] != "stale_claim"]


class Audit:
    """Checks a home after each kill. Events are immutable, raw fragments are never deleted,
    receipts are never changed and a committed batch's effects stay: after a kill only the new
    ones are checked, and every one again at the end; the rest is checked in full every time."""

    def __init__(self, home: Path, seed: int) -> None:
        self.home, self.seed = home, seed
        self.verified_to = 0  # events up to this id are verified
        self.numbers: dict[int, int] = {}  # text number -> event id
        self.ack_offset = 0
        self.acked: dict[int, int] = {}  # acknowledged event id -> text number
        self.acked_jobs: set[int] = set()
        self.torn_acks = 0
        self.failures: Counter[str] = Counter()  # failed batches by kind (crash_child)
        self.receipt_rowid = 0  # receipts up to this rowid are checked

    def check(self, conn: sqlite3.Connection, now: datetime,
              since: datetime | None = None) -> list[str]:
        """Every invariant; what was checked after an earlier kill is skipped unless `since` is
        None (the final check: everything, and no stale claim allowed)."""
        if since is None:
            self.verified_to, self.numbers, self.receipt_rowid = 0, {}, 0
        found = integrity(conn)
        found += self.new_events(conn)
        found += self.new_acks(conn, every=since is None)
        recent = iso(since or datetime(1970, 1, 1, tzinfo=UTC))
        new, self.receipt_rowid = receipts(conn, recent, self.receipt_rowid)
        found += new
        found += half_commits(conn, recent)
        found += claims_read_back(conn)
        found += jobs_coherent(conn)
        found += recall_index(conn)
        found += engine_check(conn, now, final=since is None)
        return found

    def new_events(self, conn: sqlite3.Connection) -> list[str]:
        found: list[str] = []
        rows = conn.execute("SELECT id, text FROM events WHERE id > ? ORDER BY id",
                            (self.verified_to,)).fetchall()
        for event_id, text in rows:
            n = text_number(text, self.seed)
            if n is None or text != event_text(self.seed, n):
                found.append(f"event {event_id}: text is not the harness text it names")
            elif n in self.numbers:
                found.append(f"event {event_id}: text {n} stored twice (also {self.numbers[n]})")
            else:
                self.numbers[n] = event_id
            found += fragments(conn, event_id, text)
            self.verified_to = event_id
        return found

    def new_acks(self, conn: sqlite3.Connection, every: bool = False) -> list[str]:
        """Check the ack lines written since the last check (`every`: all acks so far)."""
        new = self._read_acks()
        events = self.acked if every else {int(p[1]): int(p[2]) for p in new if p[0] == "E"}
        jobs = self.acked_jobs if every else {int(p[1]) for p in new if p[0] == "J"}
        found = [f"acked event {event_id} (text {n}) missing or holding another text"
                 for event_id, n in events.items() if self.numbers.get(n) != event_id]
        found += [f"acked job {job_id} missing" for job_id in jobs
                  if not conn.execute("SELECT 1 FROM jobs WHERE id = ?", (job_id,)).fetchone()]
        for parts in new:
            if parts[0] == "F":
                found += self.failure(parts[1], parts[2])
        return found

    def _read_acks(self) -> list[list[str]]:
        """Parse the lines appended since the last read; close a torn last line (the child died
        mid-write) and count it, with any other malformed line, as torn."""
        path = self.home / ACKS
        if not path.exists():
            return []
        with open(path, "r+b") as handle:
            handle.seek(self.ack_offset)
            data = handle.read()
            if data and not data.endswith(b"\n"):
                handle.write(b"\n")
                data += b"\n"
        self.ack_offset += len(data)
        lines = []
        for parts in (line.split() for line in data.decode(errors="replace").splitlines()):
            if parts and (parts[0], len(parts)) in (("E", 3), ("J", 2), ("F", 3)):
                lines.append(parts)
            else:
                self.torn_acks += 1
        for parts in lines:
            if parts[0] == "E":
                self.acked[int(parts[1])] = int(parts[2])
            elif parts[0] == "J":
                self.acked_jobs.add(int(parts[1]))
        return lines

    def failure(self, batch_id: object, kind: str) -> list[str]:
        """Count a failed batch a worker reported; an unexpected kind is a problem."""
        self.failures[kind] += 1
        return [f"batch {batch_id} failed: {kind}"] if kind.startswith("unexpected") else []


def fragments(conn: sqlite3.Connection, event_id: int, text: str) -> list[str]:
    """The event's raw nodes are exactly split_fragments(text), each knowing the count."""
    rows = conn.execute(
        "SELECT fragment_index, fragment_count, start_char, end_char FROM hot_nodes"
        " WHERE event_id = ? AND kind = 'raw' ORDER BY fragment_index", (event_id,)).fetchall()
    want = split_fragments(text)
    got = [(r[2], r[3]) for r in rows]
    if got != want or [r[0] for r in rows] != list(range(len(want))) or any(
            r[1] != len(want) for r in rows):
        return [f"event {event_id}: {len(rows)} fragments stored, {len(want)} expected"]
    return []
