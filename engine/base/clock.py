"""Time for the engine, injectable so tests of hourly and nightly runs never sleep.

Every timestamp the engine stores is an aware datetime rendered as ISO 8601 with an offset.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from typing import Protocol


class Clock(Protocol):
    """Anything that can tell the current aware time."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real wall clock, in the given zone (the machine's local zone by default)."""

    def __init__(self, tz: tzinfo | None = None) -> None:
        self.tz = tz

    def now(self) -> datetime:
        now = datetime.now(UTC)
        return now.astimezone(self.tz) if self.tz else now.astimezone()


class ManualClock:
    """A clock that only moves when told to: for tests and simulations."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        """Move forward by a timedelta given as keywords (seconds=, minutes=, hours=, days=)."""
        self._now = self._now + timedelta(**delta)
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_micros(when: datetime) -> int:
    """UTC microseconds since the epoch: the sortable form stored beside ISO text.

    Raises OverflowError for a time whose UTC form falls outside years 1–9999.
    """
    if when.tzinfo is None:
        raise ValueError("naive datetime")
    return (when.astimezone(UTC) - _EPOCH) // _MICROSECOND


def iso(when: datetime) -> str:
    """ISO 8601 with offset, seconds precision unless microseconds are set."""
    return when.isoformat()  # timespec 'auto': exactly that rule


def parse_time(text: str, default_tz: tzinfo | None = None) -> datetime:
    """Parse an ISO 8601 time; a time without offset is taken in `default_tz` (local if None).

    Raises ValueError with a message that names the bad value.
    """
    raw = text.strip()
    if raw.endswith("Z"):
        raw = raw[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(
            f"not an ISO 8601 time: {text!r} (expected e.g. 2026-10-13T12:30:00+08:00)"
        ) from None
    try:
        if when.tzinfo is None:
            when = when.replace(tzinfo=default_tz) if default_tz else when.astimezone()
        when.astimezone(UTC)
    except (OverflowError, OSError):
        raise ValueError(f"time out of range: {text!r}") from None
    return when
