"""A compaction, then the job that files what it queued: how memory forms without anyone
running `memvault compact` first (docs/spec.md section 2, "Boundary").

organize reads only events that left the hot timeline, so two things compact first:
- an explicit organize request (`memory_organize`, `memvault organize`): a compact job over the
  raw fragments hot when the request was made, then the organize job;
- the quiet-time rule (`compact.max_age_hours`, before the nightly review): a compact job over
  the raw fragments that entered the timeline more than that many hours ago, then an organize
  job, then the nightly deep review.

Invariants: the jobs of one chain are created in ONE transaction, each later job naming its
predecessor in `params.after_job`; the worker claims nothing for a job whose predecessor is
still open (queued or running), so the organize job's first claim sees every event the
compaction queued. Each batch still commits on its own with its receipt, so a crash anywhere
loses nothing: the open compact job resumes, and the organize job waits for it as before.
A terminal compaction batch ends its job `partial` and the chain goes on (its nodes stay hot).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any, Final

from ..base.spaces import EVERY_SPACE
from ..timeline.hot import (
    active_raw_count,
    has_active_raw_up_to,
    newest_node_id,
    newest_raw_before,
)
from .kinds import JobMode, JobOrigin
from .records import Job, JobParams, create_job

AFTER_JOB: Final = "after_job"  # params key: the id of the job that must finish first


def raw_compaction(
    conn: sqlite3.Connection, origin: JobOrigin, now: datetime, up_to: int | None = None,
    scope: str | None = None, provider: dict[str, Any] | None = None,
) -> Job | None:
    """Queue (inside the caller's transaction) a compact job over the raw fragments now on the
    hot timeline with node id ≤ `up_to` (default: every one); None, and no job, when there is
    none. Heads are left alone (params raw_only): they have no event left to queue. The job
    runs on `provider` (a spec record), as the jobs chained after it do."""
    newest = newest_node_id(conn, EVERY_SPACE)
    limit = newest if up_to is None else min(up_to, newest)
    # Heads made later have larger ids and are outside max_node_id.
    if not has_active_raw_up_to(conn, limit, EVERY_SPACE):
        return None
    params = JobParams(min_seq=0, max_seq=limit, max_node_id=limit, raw_only=True)
    return create_job(conn, JobMode.COMPACT, origin, now, scope or f"raw nodes 0:{limit}", params,
                      provider=provider)


def hot_raw_nodes(conn: sqlite3.Connection) -> int:
    """How many raw fragments are on the hot timeline now."""
    return active_raw_count(conn, EVERY_SPACE)


def then(conn: sqlite3.Connection, first: Job, mode: JobMode, origin: JobOrigin, now: datetime,
         scope: str | None = None, params: JobParams | None = None,
         request_token: str | None = None, local_date: str | None = None,
         provider: dict[str, Any] | None = None) -> Job:
    """Queue a job that the worker starts only after `first` has finished, on `provider`."""
    return create_job(conn, mode, origin, now, scope, {**(params or {}), AFTER_JOB: first.id},
                      request_token, local_date, provider)


def waits_for(conn: sqlite3.Connection, job: Job) -> int | None:
    """The id of the open job `job` must wait for, or None when it may run."""
    after = job.params.get(AFTER_JOB)
    if after is None:
        return None
    row = conn.execute(
        "SELECT 1 FROM jobs WHERE id = ? AND state IN ('queued', 'running')", (after,)
    ).fetchone()
    return int(after) if row else None


def last_raw_before(conn: sqlite3.Connection, cutoff: datetime) -> int | None:
    """The newest raw node that entered the hot timeline before `cutoff` (its id; raw ids grow
    with ingestion), or None (timeline.hot.newest_raw_before, over every space)."""
    return newest_raw_before(conn, cutoff, EVERY_SPACE)
