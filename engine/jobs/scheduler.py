"""When jobs are created automatically (docs/spec.md section 4.1), on an injectable clock.

- threshold: the hot timeline's estimated tokens pass compact.threshold_tokens -> a compact job
  over the nodes present now (nodes arriving later are left alone);
- hourly: the check time is persisted; an organize job is created only when events are pending
  and no hourly job is in flight, so an empty queue never calls the model;
- nightly: deep at deep.nightly_at local time after deep.quiet_minutes without conversation,
  once per local date, postponed while not quiet, made up once when started later that day;
- quiet time, with the nightly job: the raw fragments that entered the hot timeline more than
  compact.max_age_hours ago (0 = never) are compacted, then organized, then the nightly deep
  review runs (a chain, engine/jobs/chain.py), so a day's conversation becomes objects without
  waiting for the threshold.
After a threshold failure, all automatic creation pauses worker.cooldown_s (the reference's rule);
after another automatic failure (hourly, nightly) only that kind pauses, so an organize or deep
failure never stops threshold compaction. Explicit requests never pause.
Every job created here records the provider it runs on: the configured one (model.provider), or
the `--model` of the worker process whose scheduler made it.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, time, timedelta, tzinfo

from ..base.clock import iso, parse_time
from ..base.config import Config
from ..base.spaces import EVERY_SPACE
from ..models.spec import ProviderSpec
from ..store.connection import get_state, set_state, write
from ..timeline.append import LAST_ACTIVITY_KEY
from ..timeline.hot import newest_active_seq, timeline_totals
from ..timeline.queue import any_waiting
from .chain import last_raw_before, raw_compaction, then
from .kinds import JobMode, JobOrigin
from .records import Job, create_job, open_jobs

HOURLY_KEY = "scheduler.hourly_checked_at"
NIGHTLY_KEY = "scheduler.nightly_date"
PAUSE_KEY = "scheduler.auto_paused_until"


def _time(conn: sqlite3.Connection, key: str) -> datetime | None:
    value = get_state(conn, key)
    return parse_time(value) if value else None


def pause_key(origin: str) -> str:
    """The state key pausing after a failure of `origin`: a threshold failure pauses all."""
    return PAUSE_KEY if origin == "threshold" else f"{PAUSE_KEY}.{origin}"


def auto_paused(conn: sqlite3.Connection, now: datetime, origin: str = "threshold") -> bool:
    """Whether creating an automatic job of `origin` is paused now (all are, after a threshold
    failure)."""
    for key in dict.fromkeys((PAUSE_KEY, pause_key(origin))):
        until = _time(conn, key)
        if until is not None and now < until:
            return True
    return False


def pause_automatic(conn: sqlite3.Connection, now: datetime, seconds: float,
                    origin: str = "threshold") -> None:
    """Suppress automatic job creation after a failed `origin` job (inside the caller's
    transaction): all of it after a threshold failure, else only that origin's."""
    set_state(conn, pause_key(origin), iso(now + timedelta(seconds=seconds)))


class Scheduler:
    """Creates threshold, hourly and nightly jobs; call `check(now)` every worker poll."""

    def __init__(self, conn: sqlite3.Connection, config: Config, tz: tzinfo | None,
                 provider: ProviderSpec | None = None) -> None:
        self.conn = conn
        self.config = config
        self.tz = tz
        self._provider = provider  # None: the configured one, read when a job is created

    @property
    def provider(self) -> dict[str, object]:
        """The spec record the jobs created now run on."""
        return (self._provider or ProviderSpec.configured(self.config)).record()

    def check(self, now: datetime) -> list[Job]:
        """Create whatever jobs are due now; return them. A poll with nothing due takes no
        write transaction: reads rule that out first, and whenever something may be due the
        whole decision is made again under the write lock (two processes never both act)."""
        if not self._maybe_due(now):
            return []
        created: list[Job] = []
        with write(self.conn):
            if not auto_paused(self.conn, now):
                created += self._threshold(now)
            created += self._hourly(now, auto_paused(self.conn, now, "hourly"))
            if not auto_paused(self.conn, now, "nightly"):
                created += self._nightly(now)
        return created

    def _maybe_due(self, now: datetime) -> bool:
        """False only when no job can be due and no check time needs storing; conservative
        (the nightly job's quiet condition is left to the locked check)."""
        if self._hourly_due(now):
            return True  # the hourly check stores its time even when it creates nothing
        if auto_paused(self.conn, now):
            return False  # a threshold failure pauses every kind
        nightly = not auto_paused(self.conn, now, "nightly") and self._nightly_window(now)
        return nightly or self._threshold_due()

    def _hourly_due(self, now: datetime) -> bool:
        """worker.hourly_s passed since the hourly check last ran (or it never ran)."""
        last = _time(self.conn, HOURLY_KEY)
        return last is None or (now - last).total_seconds() >= self.config.settings.worker.hourly_s

    def _threshold_due(self) -> bool:
        """The hot timeline is over compact.threshold_tokens and no threshold job is open."""
        if open_jobs(self.conn, JobMode.COMPACT, JobOrigin.THRESHOLD):
            return False
        threshold = self.config.settings.compact.threshold_tokens
        return timeline_totals(self.conn, EVERY_SPACE)["est_tokens"] > threshold

    def _nightly_window(self, now: datetime) -> bool:
        """Past today's deep.nightly_at (local) and today's nightly job not made yet."""
        local = now.astimezone(self.tz) if self.tz else now.astimezone()
        if get_state(self.conn, NIGHTLY_KEY) == local.date().isoformat():
            return False
        hh, mm = (int(x) for x in self.config.settings.deep.nightly_at.split(":"))
        return local.time() >= time(hh, mm)

    def _threshold(self, now: datetime) -> list[Job]:
        if not self._threshold_due():
            return []
        max_seq = newest_active_seq(self.conn, EVERY_SPACE)
        return [create_job(self.conn, JobMode.COMPACT, JobOrigin.THRESHOLD, now,
                           params={"max_seq": max_seq}, provider=self.provider)]

    def _hourly(self, now: datetime, paused: bool) -> list[Job]:
        if not self._hourly_due(now):
            return []
        set_state(self.conn, HOURLY_KEY, iso(now))
        if paused or open_jobs(self.conn, JobMode.ORGANIZE, JobOrigin.HOURLY):
            return []
        if not any_waiting(self.conn):
            return []
        return [create_job(self.conn, JobMode.ORGANIZE, JobOrigin.HOURLY, now,
                           provider=self.provider)]

    def _nightly(self, now: datetime) -> list[Job]:
        if not self._nightly_window(now):
            return []
        local = now.astimezone(self.tz) if self.tz else now.astimezone()
        today = local.date().isoformat()
        last = _time(self.conn, LAST_ACTIVITY_KEY)
        quiet = timedelta(minutes=self.config.settings.deep.quiet_minutes)
        if last is not None and now - last < quiet:
            return []  # postponed: the conversation is still going
        set_state(self.conn, NIGHTLY_KEY, today)
        chain = self._quiet_time(now)
        if chain:  # the review comes after what the night's organize job files
            return [*chain, then(self.conn, chain[-1], JobMode.DEEP, JobOrigin.NIGHTLY, now,
                                 local_date=today, provider=self.provider)]
        return [create_job(self.conn, JobMode.DEEP, JobOrigin.NIGHTLY, now, local_date=today,
                           provider=self.provider)]

    def _quiet_time(self, now: datetime) -> list[Job]:
        """The quiet-time rule: a compact job over the raw fragments hot for longer than
        compact.max_age_hours, and the organize job that files what it queues; [] when off or
        when no fragment is that old."""
        hours = self.config.settings.compact.max_age_hours
        if not hours:
            return []
        up_to = last_raw_before(self.conn, now - timedelta(hours=hours))
        compact = raw_compaction(self.conn, JobOrigin.NIGHTLY, now, up_to,
                                 f"quiet time: raw nodes older than {hours} h",
                                 self.provider) if up_to else None
        if compact is None:
            return []
        return [compact, then(self.conn, compact, JobMode.ORGANIZE, JobOrigin.NIGHTLY, now,
                              provider=self.provider)]
