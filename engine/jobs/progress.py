"""What the worker is doing and why it is stuck, in words: the batch in flight, the batches
retrying after a failure (with the failure's cause) and the last terminal one.

Read by `memvault status` / `memory_status` and by `memvault organize` / `compact` while they
wait, so a model that cannot be reached is named within seconds of its first failed call, not
after the five retries have run out. Reads only. The errors shown are the stored ones, which the
worker redacted (redact_secrets) before storing; they are redacted again here in case an older
version stored one unredacted.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, TypedDict

from ..secrets.detector import redact_secrets
from .claims import StoredClaim, read_claim

SHOWN = 5  # retrying batches a report lists
_BATCH_SQL = (
    "SELECT b.id, b.job_id, j.mode, j.origin, b.claim, b.failures, b.error, b.claimed_at,"
    " b.next_attempt_at FROM batches b JOIN jobs j ON j.id = b.job_id"
)


def describe_claim(conn: sqlite3.Connection, claim: StoredClaim) -> str:
    """What a batch covers: `nodes 4–11`, `event 12 chars 0–8,000 of 19,204`, `objects …`."""
    return claim.covers(conn)


def _covers(conn: sqlite3.Connection, mode: str, stored: str) -> str:
    """What a stored claim covers; a claim that does not read back (a hand-edited row) is
    said to be unreadable, not allowed to break the status report."""
    try:
        claim = read_claim(mode, json.loads(stored))
    except ValueError:  # json.JSONDecodeError is one too
        return "an unreadable claim"
    return describe_claim(conn, claim)


def _row(conn: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
    error = row["error"]
    return {"batch_id": row["id"], "job_id": row["job_id"], "mode": row["mode"],
            "origin": row["origin"], "covers": _covers(conn, row["mode"], row["claim"]),
            "failures": row["failures"],
            "error": redact_secrets(error) if error else None,
            "claimed_at": row["claimed_at"], "retry_at": row["next_attempt_at"]}


def batch_row(conn: sqlite3.Connection, batch_id: int) -> dict[str, Any]:
    """One batch as `batch_report` lists it."""
    return _row(conn, conn.execute(f"{_BATCH_SQL} WHERE b.id = ?", (batch_id,)).fetchone())


class BatchReport(TypedDict):
    """The worker's batches now (status's `batches`); each batch a `batch_row`."""

    in_flight: dict[str, Any] | None  # the newest claimed batch not backing off
    retrying: list[dict[str, Any]]  # failed, waiting out their backoff, newest failure first
    terminal: int  # terminal batches of jobs not done
    last_terminal: dict[str, Any] | None


def batch_report(conn: sqlite3.Connection) -> BatchReport:
    """The worker's batches now: `in_flight` (claimed and not backing off: running, or left by
    a worker that died), `retrying` (failed, waiting out their backoff; newest failure first,
    ≤ SHOWN), `terminal` (how many batches of jobs not done went terminal: a done job has
    none) and `last_terminal`.

    Cheap at any history (memory_status runs every turn): the claimed batches come through the
    partial index batches_open, the terminal ones job by job through batches_job, never a scan
    of every batch ever run (`bench/status_batches.py`, 200,000 batches: 0.2 ms median,
    against 36 ms for plain scans)."""
    claimed = [_row(conn, r) for r in conn.execute(f"{_BATCH_SQL} WHERE b.state = 'claimed'")]
    running = [b for b in claimed if b["retry_at"] is None]
    retrying = sorted((b for b in claimed if b["retry_at"] is not None),
                      key=lambda b: (b["retry_at"], b["batch_id"]), reverse=True)
    # CROSS JOIN: jobs first (few), so each looks its terminal batches up by index.
    terminal, last = conn.execute(
        "SELECT COUNT(*), MAX(b.id) FROM jobs j CROSS JOIN batches b ON b.job_id = j.id"
        " AND b.state = 'terminal' WHERE j.state != 'done'").fetchone()
    return BatchReport(in_flight=max(running, key=lambda b: b["batch_id"]) if running else None,
                       retrying=retrying[:SHOWN],
                       terminal=terminal,
                       last_terminal=batch_row(conn, last) if last is not None else None)


def failure_line(batch: dict[str, Any], max_failures: int | None = None) -> str:
    """One line for people: `organize batch 7 (event 3 …) failed 2 of 5 times: CAUSE; next
    try at TIME` (a `batch_report` row)."""
    of = f" of {max_failures}" if max_failures else ""
    line = (f"{batch['mode']} batch {batch['batch_id']} ({batch['covers']}) failed "
            f"{batch['failures']}{of} time(s): {batch['error'] or 'no cause recorded'}")
    if batch.get("retry_at"):
        line += f"; next try at {batch['retry_at']}"
    return line


def report_lines(report: BatchReport) -> list[str]:
    """`batch_report` for people: what runs, what keeps failing and why (nothing when all is
    quiet and nothing ever went terminal)."""
    lines = []
    if (batch := report.get("in_flight")) is not None:
        lines.append(f"batch in flight: {batch['mode']} batch {batch['batch_id']} "
                     f"({batch['covers']}), claimed {batch['claimed_at']}")
    lines += ["model failing: " + failure_line(b) for b in report.get("retrying", [])]
    if (last := report.get("last_terminal")) is not None:
        lines.append(f"terminal batches: {report['terminal']}; the last: " + failure_line(last))
    return lines
