"""The kinds of job: what a job does (its mode) and what queued it (its origin).

They sit apart from jobs/records.py because the claims, the modes and the scheduler name them
too, and records imports the claims.
"""

from __future__ import annotations

from enum import StrEnum


class JobMode(StrEnum):
    """What a job does to the memory (the spec's three modes)."""

    COMPACT = "compact"
    ORGANIZE = "organize"
    DEEP = "deep"


class JobOrigin(StrEnum):
    """What queued a job: a full timeline, a caller, the hour, the night."""

    THRESHOLD = "threshold"
    EXPLICIT = "explicit"
    HOURLY = "hourly"
    NIGHTLY = "nightly"
