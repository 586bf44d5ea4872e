"""Jobs and batches: a job (mode, scope, origin) advances batch after batch.

Invariants: a batch is committed at most once (its receipt token makes a replay return the
original receipt); a failed batch keeps its claim and is retried with backoff up to
worker.max_failed_claims times, then becomes terminal; a success resets the count.
Job states: queued -> running -> done | partial (some batch terminal) | failed.
A job records the provider it was queued with (`provider`, a JSON spec: name, model, base URL,
the NAME of the key's variable; never a key value) and runs on it whoever runs the worker; NULL
for jobs an older memvault queued (m011_job_provider).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Generic, TypedDict, TypeVar

from ..base.clock import iso, to_micros
from ..base.errors import InputError, NotFound
from ..base.forgetting import Forgetting
from ..store.connection import GRAPH_REVISION_SQL
from ..store.forget_rows import forget_in_rows
from ..timeline.queue import blocked_event_ids
from .claims import JsonObject, StoredClaim
from .kinds import JobMode, JobOrigin
from .leases import LEASE, LEASE_VALID_SQL

BLOCKED_SHOWN = 50  # blocked event ids a partial job's note and summary list


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    PARTIAL = "partial"
    FAILED = "failed"


class BatchState(StrEnum):
    CLAIMED = "claimed"
    COMMITTED = "committed"
    TERMINAL = "terminal"


class JobParams(TypedDict, total=False):
    """A job's parameters (the params column, JSON): each key only for the jobs it concerns."""

    min_seq: int  # compact: the hot-timeline seqs it covers, min_seq..max_seq
    max_seq: int
    max_node_id: int  # explicit compact: the newest node when asked (newer ones are not its)
    raw_only: bool  # compact: fold raw fragments only, never heads
    after_job: int  # a chained job: the job that must finish first (jobs/chain.py)


@dataclass
class Job:
    id: int
    mode: JobMode
    origin: JobOrigin
    scope: str | None
    params: JobParams
    state: JobState
    request_token: str | None
    created_at: str
    last_claim_at: str | None
    provider: dict[str, Any] | None = None  # the provider spec it was queued with (None: old)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Job:
        recorded = row["provider"] if "provider" in row.keys() else None
        return cls(row["id"], JobMode(row["mode"]), JobOrigin(row["origin"]), row["scope"],
                   json.loads(row["params"]), JobState(row["state"]), row["request_token"],
                   row["created_at"], row["last_claim_at"],
                   json.loads(recorded) if recorded is not None else None)


C_co = TypeVar("C_co", covariant=True)  # what a batch's claim is read as
C = TypeVar("C")
SC = TypeVar("SC", bound=StoredClaim)
K = TypeVar("K", JobMode, JobOrigin)  # a kind of job (named_kind)


@dataclass(frozen=True)
class Batch(Generic[C_co]):
    """A batch row. Its `claim` column is one JSON object: the receipt `token` first, then the
    mode's claim. Read here, `claim` is that object without the token (`Batch[JsonObject]`);
    the batch's mode reads it as its own claim type (`typed`)."""

    id: int
    job_id: int
    state: BatchState
    token: str  # the receipt token a commit of this batch is saved (and replayed) under
    claim: C_co
    base_revision: int
    failures: int
    next_attempt_at: str | None

    @staticmethod
    def from_row(row: sqlite3.Row) -> Batch[JsonObject]:
        """A batch as stored (a row of batches; the rotation passes the same columns read as
        one JSON object)."""
        claim = json.loads(row["claim"])
        return Batch(row["id"], row["job_id"], BatchState(row["state"]), str(claim.pop("token")),
                     claim, row["base_revision"], row["failures"], row["next_attempt_at"])

    def typed(self: Batch[JsonObject], read: Callable[[JsonObject], C]) -> Batch[C]:
        """This batch with its claim read by its mode (`read`: the claim type's from_json)."""
        return Batch(self.id, self.job_id, self.state, self.token, read(self.claim),
                     self.base_revision, self.failures, self.next_attempt_at)


def create_job(
    conn: sqlite3.Connection, mode: JobMode | str, origin: JobOrigin | str, now: datetime,
    scope: str | None = None,
    params: JobParams | None = None, request_token: str | None = None,
    local_date: str | None = None, provider: dict[str, Any] | None = None,
) -> Job:
    """Queue a job inside the caller's transaction, recording the `provider` spec it is to run
    on. A known request token returns its job (with the provider it was queued with)."""
    mode, origin = named_kind(JobMode, mode, "mode"), named_kind(JobOrigin, origin, "origin")
    if request_token:
        row = conn.execute("SELECT * FROM jobs WHERE request_token = ?",
                           (request_token,)).fetchone()
        if row:
            return Job.from_row(row)
    cur = conn.execute(
        "INSERT INTO jobs (mode, origin, scope, params, state, request_token, local_date,"
        " created_at, provider) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
        (mode, origin, scope, json.dumps(params or {}, ensure_ascii=False), request_token,
         local_date, iso(now), json.dumps(provider) if provider is not None else None),
    )
    return get_job(conn, int(cur.lastrowid or 0))


def named_kind(kind: type[K], name: K | str, what: str) -> K:
    """The member of `kind` (JobMode, JobOrigin) that `name` names; InputError listing them,
    `what` ("mode", "origin") saying which, when it names none."""
    try:
        return kind(name)
    except ValueError:
        raise InputError(f"{what} must be one of {', '.join(kind)}, got {name!r}") from None


def job_state_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """How many jobs are in each state (only the states some job is in)."""
    return dict(conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())


def get_job(conn: sqlite3.Connection, job_id: int) -> Job:
    row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None:
        raise NotFound(f"no job {job_id}")
    return Job.from_row(row)


def open_jobs(conn: sqlite3.Connection, mode: JobMode | None = None,
              origin: JobOrigin | None = None) -> list[Job]:
    sql = "SELECT * FROM jobs WHERE state IN ('queued', 'running')"
    args: list[str] = []
    if mode:
        sql += " AND mode = ?"
        args.append(mode)
    if origin:
        sql += " AND origin = ?"
        args.append(origin)
    return [Job.from_row(r) for r in conn.execute(sql + " ORDER BY id", args)]


def rotation(conn: sqlite3.Connection, now: datetime) -> list[Job]:
    """Open jobs in the order the worker tries them: never-claimed first (explicit before
    automatic), then by least recent claim, so a stream of compactions cannot starve the
    nightly job. Jobs whose pending batch is backing off are left out."""
    return [job for job, _ in rotation_with_pending(conn, now)]


# A job's pending batch (`pending_batch`) as one JSON object, read with the job.
_PENDING_JSON = (
    "(SELECT json_object('id', b.id, 'job_id', b.job_id, 'state', b.state, 'claim', b.claim,"
    " 'base_revision', b.base_revision, 'failures', b.failures,"
    " 'next_attempt_at', b.next_attempt_at) FROM batches b"
    " WHERE b.job_id = j.id AND b.state = 'claimed' ORDER BY b.id LIMIT 1)")


def rotation_with_pending(conn: sqlite3.Connection,
                          now: datetime) -> list[tuple[Job, Batch[JsonObject] | None]]:
    """`rotation`, each job with its pending batch (`pending_batch`), in one read: the claim
    walks these instead of reading each job's pending batch again (call inside the claim's
    transaction: a job's batches change only by its own claim)."""
    rows = conn.execute(
        f"SELECT j.*, {_PENDING_JSON} AS pending FROM jobs j"
        " WHERE j.state IN ('queued', 'running') AND NOT EXISTS ("
        "  SELECT 1 FROM batches b WHERE b.job_id = j.id AND b.state = 'claimed'"
        "  AND b.next_attempt_at IS NOT NULL AND b.next_attempt_at > ?)"
        " ORDER BY j.last_claim_at IS NOT NULL,"
        "  CASE WHEN j.last_claim_at IS NULL THEN j.origin != 'explicit' ELSE 0 END,"
        "  j.last_claim_at, j.id",
        (iso(now),),
    ).fetchall()
    return [(Job.from_row(r), _pending(r["pending"])) for r in rows]


def _pending(text: str | None) -> Batch[JsonObject] | None:
    return None if text is None else Batch.from_row(json.loads(text))


def pending_batch(conn: sqlite3.Connection, job_id: int) -> Batch[JsonObject] | None:
    """The job's claimed-but-uncommitted batch (after a failure or a crash), if any."""
    row = conn.execute(
        "SELECT * FROM batches WHERE job_id = ? AND state = 'claimed' ORDER BY id LIMIT 1",
        (job_id,),
    ).fetchone()
    return Batch.from_row(row) if row else None


def new_batch(conn: sqlite3.Connection, job_id: int, claim: SC, now: datetime) -> Batch[SC]:
    """Record a new claim (inside the caller's transaction), with a fresh receipt token."""
    token = uuid.uuid4().hex
    # The graph revision is read by the insert itself (one statement, same transaction).
    row = conn.execute(
        "INSERT INTO batches (job_id, state, claim, base_revision, claimed_at)"
        f" VALUES (?, 'claimed', ?, {GRAPH_REVISION_SQL}, ?) RETURNING *",
        (job_id, _claim_text(token, claim), iso(now)),
    ).fetchone()
    mark_claimed(conn, job_id, now)
    return _written(row, token, claim)


def reclaim_batch(conn: sqlite3.Connection, batch: Batch[SC], now: datetime,
                  claim: SC | None = None) -> Batch[SC]:
    """Claim a pending batch again (maybe shrunk to `claim`), against the current graph
    revision."""
    claim = batch.claim if claim is None else claim
    row = conn.execute(
        f"UPDATE batches SET claim = ?, base_revision = {GRAPH_REVISION_SQL}, claimed_at = ?,"
        " next_attempt_at = NULL WHERE id = ? RETURNING *",
        (_claim_text(batch.token, claim), iso(now), batch.id),
    ).fetchone()
    mark_claimed(conn, batch.job_id, now)
    return _written(row, batch.token, claim)


def _claim_text(token: str, claim: StoredClaim) -> str:
    """The claim column: the token first, then the mode's claim (as stored since m001)."""
    return json.dumps({"token": token, **claim.to_json()}, ensure_ascii=False)


def _written(row: sqlite3.Row, token: str, claim: SC) -> Batch[SC]:
    """The batch row just written with `token` and `claim` (not read back from its JSON)."""
    return Batch(row["id"], row["job_id"], BatchState(row["state"]), token, claim,
                 row["base_revision"], row["failures"], row["next_attempt_at"])


def mark_claimed(conn: sqlite3.Connection, job_id: int, now: datetime) -> None:
    stamp = iso(now)
    conn.execute(
        "UPDATE jobs SET state = 'running', last_claim_at = ?, started_at = COALESCE(started_at, ?)"
        " WHERE id = ?",
        (stamp, stamp, job_id),
    )


def mark_stopped(conn: sqlite3.Connection, job_id: int) -> None:
    """A running job whose run stopped at a failure waiting will not heal is queued again (its
    failed batch keeps its cause and its backoff): nothing runs it until a worker does."""
    conn.execute("UPDATE jobs SET state = 'queued' WHERE id = ? AND state = 'running'",
                 (job_id,))


def get_batch(conn: sqlite3.Connection, batch_id: int) -> Batch[JsonObject]:
    row = conn.execute("SELECT * FROM batches WHERE id = ?", (batch_id,)).fetchone()
    if row is None:
        raise NotFound(f"no batch {batch_id}")
    return Batch.from_row(row)


def batch_events(conn: sqlite3.Connection, batch_ids: Sequence[int]) -> dict[int, int]:
    """The event each batch of `batch_ids` read (organize's; a batch of another mode is left
    out), in one statement."""
    cur = conn.cursor()
    cur.row_factory = None
    return dict(cur.execute(
        "SELECT b.id, json_extract(b.claim, '$.event_id') FROM json_each(?) j"
        " JOIN batches b ON b.id = j.value"
        " WHERE json_extract(b.claim, '$.event_id') IS NOT NULL",
        (json.dumps(list(batch_ids)),)).fetchall())


def record_failure(
    conn: sqlite3.Connection, batch: Batch[object], error: str, now: datetime, max_failures: int,
    backoff_s: float,
) -> bool:
    """Count a failed claim inside the caller's transaction; True when it became terminal."""
    failures = batch.failures + 1
    # A provider's message may carry a lone surrogate, which SQLite cannot store as text.
    error = error[:2000].encode("utf-8", "backslashreplace").decode("utf-8")
    if failures >= max_failures:
        conn.execute(
            "UPDATE batches SET state = 'terminal', failures = ?, error = ? WHERE id = ?",
            (failures, error, batch.id),
        )
        return True
    retry_at = now + timedelta(seconds=backoff_s * 2 ** (failures - 1))
    conn.execute(
        "UPDATE batches SET failures = ?, error = ?, next_attempt_at = ? WHERE id = ?",
        (failures, error, iso(retry_at), batch.id),
    )
    return False


def finish_job(conn: sqlite3.Connection, job_id: int, now: datetime) -> str:
    """Close a job that has no more work: done, or partial when any batch went terminal or
    (organize) any event it was asked about is still blocked; the note says which."""
    terminal = conn.execute(
        "SELECT COUNT(*) AS n FROM batches WHERE job_id = ? AND state = 'terminal'", (job_id,)
    ).fetchone()["n"]
    blocked = blocked_events(conn, get_job(conn, job_id))
    state = JobState.PARTIAL if terminal or blocked else JobState.DONE
    conn.execute("UPDATE jobs SET state = ?, finished_at = ?, error = ? WHERE id = ?",
                 (str(state), iso(now), _partial_note(terminal, blocked), job_id))
    return str(state)


def blocked_events(conn: sqlite3.Connection, job: Job) -> list[int]:
    """Events an organize job was asked about that are still blocked, oldest first.

    scope is a goal, not a filter: an organize job is asked about every queued event, so a
    blocked event anywhere in the queue (whichever job's batch blocked it) keeps it partial:
    a scope with blocked events is never reported complete.
    """
    if job.mode is not JobMode.ORGANIZE:
        return []
    return blocked_event_ids(conn)


def _partial_note(terminal: int, blocked: list[int]) -> str | None:
    """Why a job is partial, in one line (None when it is done)."""
    parts = []
    if terminal:
        parts.append(f"{terminal} batch(es) went terminal")
    if blocked:
        shown = ", ".join(str(e) for e in blocked[:BLOCKED_SHOWN])
        more = f" and {len(blocked) - BLOCKED_SHOWN} more" if len(blocked) > BLOCKED_SHOWN else ""
        parts.append(f"events still blocked: {shown}{more} (retry them with retry_blocked=True)")
    return "partial: " + "; ".join(parts) if parts else None


@dataclass(frozen=True)
class CommitState:
    """What a commit checks first, read in one statement (see `commit_state`)."""

    receipt: JsonObject | None  # the stored receipt of this token: the commit is a replay
    lease_valid: bool  # the holder still holds an unexpired lease
    revision: int  # the graph revision now


def commit_state(
    conn: sqlite3.Connection, token: str, holder: str, now: datetime
) -> CommitState:
    """The receipt of `token`, whether `holder`'s lease is valid (leases.LEASE_VALID_SQL)
    and the graph revision, in ONE read (call inside the commit's write transaction, so all
    three still hold when it writes)."""
    row = conn.execute(
        f"SELECT (SELECT receipt FROM receipts WHERE token = ?) AS receipt,"
        f" {LEASE_VALID_SQL} AS lease_valid, {GRAPH_REVISION_SQL} AS revision",
        (token, LEASE, holder, to_micros(now)),
    ).fetchone()
    receipt = row["receipt"]
    return CommitState(json.loads(receipt) if receipt is not None else None,
                       bool(row["lease_valid"]), int(row["revision"]))


def save_receipt(
    conn: sqlite3.Connection, batch: Batch[object], revision: int, receipt: JsonObject,
    now: datetime,
) -> None:
    """Save the commit's receipt under the batch's token and mark the batch committed (inside
    the commit's transaction)."""
    stamp = iso(now)
    conn.execute(
        "INSERT INTO receipts (token, batch_id, job_id, revision, receipt, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (batch.token, batch.id, batch.job_id, revision, json.dumps(receipt, ensure_ascii=False),
         stamp),
    )
    conn.execute(
        "UPDATE batches SET state = 'committed', committed_at = ?, failures = 0, error = NULL"
        " WHERE id = ?",
        (stamp, batch.id),
    )


class JobSummary(TypedDict):
    """A job's state and batch counts (`job_summary`)."""

    job_id: int
    mode: str
    origin: str
    scope: str | None
    state: JobState
    batches: dict[str, int]  # batch state -> how many of the job's batches are in it
    note: str | None  # why a partial job is partial
    blocked_events: list[int]  # events it was asked about that are still blocked


def job_summary(conn: sqlite3.Connection, job_id: int) -> JobSummary:
    """A job's state and batch counts; a partial job says why (`note`) and which events it was
    asked about are still blocked now (`blocked_events`)."""
    job = get_job(conn, job_id)
    counts = {r["state"]: r["n"] for r in conn.execute(
        "SELECT state, COUNT(*) AS n FROM batches WHERE job_id = ? GROUP BY state", (job_id,))}
    note = conn.execute("SELECT error FROM jobs WHERE id = ?", (job_id,)).fetchone()["error"]
    return JobSummary(job_id=job.id, mode=job.mode, origin=job.origin, scope=job.scope,
                      state=job.state, batches=counts, note=note,
                      blocked_events=blocked_events(conn, job)[:BLOCKED_SHOWN])


def forget_in_jobs(conn: sqlite3.Connection, forgetting: Forgetting) -> None:
    """Replace the forgotten text in jobs (scope, params, notes), batches (claims, stored
    errors) and receipts; JSON columns are matched in their escaped forms too. Inside the
    caller's write transaction."""
    forget_in_rows(conn, forgetting, "jobs", ("scope", "params", "error"), key="id")
    forget_in_rows(conn, forgetting, "batches", ("claim", "error"), key="id")
    forget_in_rows(conn, forgetting, "receipts", ("receipt",), key="token")
