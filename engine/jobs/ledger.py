"""The usage ledger: every model call, with tokens as the provider reported them.

Invariant: a row is written for every call, failed ones included, before the next call starts
and before its batch ends, so a batch that later fails still leaves its cost on record: in its
own small transaction, except the call that proposed a commit, whose row goes into that commit's
transaction (or into its own at once when the commit is refused; a process killed inside that
commit loses the row with it, and the batch is claimed again), and a call that failed its
batch, whose row goes into the failure record's transaction. Keys and prompts are never
stored.

Token figures come from a server and are not trusted. No call reads or writes more than the
largest context a home may set (model.context_tokens <= 10,000,000), so a figure that is
negative, unreadable or past that is no count at all: it is stored as MAX_TOKENS, the ceiling
no real call reaches, which marks the row as bad. One absurd answer (10**30, -7) neither
crashes the write nor overflows a sum, and usage_summary counts bad rows apart and leaves their
figures out of its sums (a home that stored 2**40 for them before reads the same way), so
totals never grow into trillions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from ..base.clock import iso
from ..base.forgetting import Forgetting
from ..store.forget_rows import forget_in_rows

# The top of model.context_tokens' range: a call's input and output fit in its context. A
# stored figure at or past it marks a bad row (an older home stored 2**40 for one).
MAX_TOKENS = 10_000_000


def clamp_tokens(value: object) -> int:
    """A reported token count as the ledger stores it: the count when it is one a call can
    have used (0 <= n < MAX_TOKENS), else MAX_TOKENS, the bad row's mark."""
    try:
        number = int(value)  # type: ignore[call-overload]
    except (OverflowError, TypeError, ValueError):  # inf, None, NaN, text
        return MAX_TOKENS
    return number if 0 <= number < MAX_TOKENS else MAX_TOKENS


def _clamp_latency(value: object) -> int:
    """Milliseconds as measured here (never a server's figure): 0 for a negative one."""
    try:
        return min(max(int(value), 0), 2**40)  # type: ignore[call-overload]
    except (OverflowError, TypeError, ValueError):
        return 0


@dataclass
class CallRecord:
    job_id: int | None
    batch_id: int | None
    mode: str | None
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    estimated: bool
    latency_ms: int
    outcome: str


def insert_call(conn: sqlite3.Connection, call: CallRecord, now: datetime) -> None:
    """Write one call's row inside the caller's write transaction (the worker writes the row of
    the call that proposed a commit inside that commit, and on its own if the commit fails)."""
    conn.execute(
        "INSERT INTO model_calls (job_id, batch_id, mode, provider, model, input_tokens,"
        " output_tokens, estimated, latency_ms, outcome, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (call.job_id, call.batch_id, call.mode, call.provider, call.model,
         clamp_tokens(call.input_tokens), clamp_tokens(call.output_tokens), int(call.estimated),
         _clamp_latency(call.latency_ms), call.outcome, iso(now)),
    )


def insert_calls(conn: sqlite3.Connection,
                 calls: Iterable[tuple[CallRecord, datetime]]) -> None:
    """`insert_call` for each (call, time) pair, inside the caller's write transaction."""
    for call, when in calls:
        insert_call(conn, call, when)


class UsageTotal(TypedDict):
    calls: int
    input_tokens: int  # of the calls that are not bad
    output_tokens: int
    estimated_calls: int  # calls whose tokens were estimated, not reported by the provider
    bad_calls: int  # calls whose provider reported a count no call can have (left out)


class UsageDay(TypedDict):
    """One day's model calls of one mode."""

    day: str  # YYYY-MM-DD, as the calls were stamped
    mode: str | None  # None: calls made outside a job
    calls: int
    input_tokens: int
    output_tokens: int
    estimated: int  # calls whose tokens were estimated
    latency_ms: int
    failed: int  # calls whose outcome was not ok
    bad: int  # calls with a token count no call can have: their tokens are left out


class UsageSummary(TypedDict):
    """Model usage (`Memory.usage`, status's `usage`)."""

    per_day: list[UsageDay]
    total: UsageTotal


# A bad row (either figure at the mark, or past it in an older home) and the sums that leave
# its figures out.
_BAD = f"(input_tokens >= {MAX_TOKENS} OR output_tokens >= {MAX_TOKENS})"
_SUMS = (f"COALESCE(SUM(CASE WHEN {_BAD} THEN 0 ELSE input_tokens END), 0) AS input_tokens,"
         f" COALESCE(SUM(CASE WHEN {_BAD} THEN 0 ELSE output_tokens END), 0) AS output_tokens,"
         f" COALESCE(SUM({_BAD}), 0) AS bad")


def usage_summary(conn: sqlite3.Connection, days: int = 30) -> UsageSummary:
    """Totals per day and per mode (and overall); `estimated` counts calls with guessed tokens,
    `bad` calls whose reported tokens no call can have, which the sums leave out."""
    per_day = [
        UsageDay(day=r["day"], mode=r["mode"], calls=r["calls"], input_tokens=r["input_tokens"],
                 output_tokens=r["output_tokens"], estimated=r["estimated"],
                 latency_ms=r["latency_ms"], failed=r["failed"], bad=r["bad"])
        for r in conn.execute(
            "SELECT substr(created_at, 1, 10) AS day, mode, COUNT(*) AS calls, " + _SUMS + ","
            " SUM(estimated) AS estimated, SUM(latency_ms) AS latency_ms,"
            " SUM(outcome != 'ok') AS failed"
            " FROM model_calls GROUP BY day, mode ORDER BY day DESC, mode LIMIT ?",
            (days * 3,),
        )
    ]
    total = conn.execute(
        "SELECT COUNT(*) AS calls, " + _SUMS + ","
        " COALESCE(SUM(estimated), 0) AS estimated_calls FROM model_calls"
    ).fetchone()
    return UsageSummary(per_day=per_day, total=UsageTotal(
        calls=total["calls"], input_tokens=total["input_tokens"],
        output_tokens=total["output_tokens"], estimated_calls=total["estimated_calls"],
        bad_calls=total["bad"]))


def forget_in_ledger(conn: sqlite3.Connection, forgetting: Forgetting) -> None:
    """Replace the forgotten text in the usage ledger's text columns (a provider's outcome
    may quote what it was sent); inside the caller's write transaction."""
    forget_in_rows(conn, forgetting, "model_calls", ("mode", "provider", "model", "outcome"),
                   key="id")
