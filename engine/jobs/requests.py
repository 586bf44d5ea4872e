"""Explicit requests from the agent or a person: they only enqueue, and return a receipt.

retry_blocked=True unblocks the blocked events once per request: the request's token (given by
the caller, or derived from the request and the newest blocking) is recorded on each event it
unblocked, and a request with a token already seen returns its old receipt and unblocks nothing.

An organize request compacts first (`compact_first`, the default): in the same transaction it
queues a compact job over the raw fragments hot now, and the organize job waits for it
(engine/jobs/chain.py), so objects come from the latest conversation too. A replayed request
queues no second compaction.
"""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from ..store.connection import write
from ..timeline.queue import newest_blocking_batch, unblock_all
from .chain import AFTER_JOB, raw_compaction, then
from .kinds import JobMode, JobOrigin
from .records import JobParams, create_job


class JobReceipt(TypedDict):
    """What an explicit request answers (memory_organize, `memvault compact|organize|deep`)."""

    job_id: int
    mode: str  # a JobMode value: the receipt is an answer, plain JSON
    scope: str | None
    state: str  # the job's state (a JobState) when the receipt was made
    enqueued_at: str
    request_token: str | None
    replayed: bool  # the token was seen before: this is that request's job, nothing new queued
    unblocked: int  # blocked events this request put back in the queue
    compact_job_id: NotRequired[int | None]  # organize/deep: the compaction run first, if any


def request_job(
    conn: sqlite3.Connection, mode: JobMode, now: datetime, scope: str | None = None,
    retry_blocked: bool = False, request_token: str | None = None,
    params: JobParams | None = None, compact_first: bool = False,
    provider: dict[str, Any] | None = None,
) -> JobReceipt:
    """Queue an explicit job; return only the enqueue receipt. With `compact_first` (organize
    requests) a compact job over the raw fragments hot now runs before it; the receipt names
    it (`compact_job_id`, None when nothing was hot)."""
    with write(conn):
        if retry_blocked and request_token is None:
            newest = newest_blocking_batch(conn)
            seed = f"{mode}\x00{scope or ''}\x00retry\x00{newest}"
            request_token = "auto-" + hashlib.sha256(seed.encode()).hexdigest()[:24]
        seen = request_token is not None and conn.execute(
            "SELECT 1 FROM jobs WHERE request_token = ?", (request_token,)
        ).fetchone() is not None
        unblocked = 0
        if retry_blocked and not seen:
            unblocked = unblock_all(conn, request_token, now)
        compaction = (raw_compaction(conn, JobOrigin.EXPLICIT, now, provider=provider)
                      if compact_first and not seen else None)
        if compaction is not None:
            job = then(conn, compaction, mode, JobOrigin.EXPLICIT, now, scope, params,
                       request_token, provider=provider)
        else:
            job = create_job(conn, mode, JobOrigin.EXPLICIT, now, scope, params, request_token,
                             provider=provider)
    receipt = JobReceipt(
        job_id=job.id, mode=job.mode, scope=job.scope, state=job.state,
        enqueued_at=job.created_at, request_token=job.request_token,
        replayed=seen, unblocked=unblocked,
    )
    if mode != JobMode.COMPACT:
        receipt["compact_job_id"] = job.params.get(AFTER_JOB)
    return receipt
