"""memvault's engine: the SQLite store, timeline, objects, modes, recall and worker.

    from memvault import Memory, NewEvent

The names below load on first use (PEP 562), so a command that needs none of them (`memvault
--help`, a capture hook) does not pay for the library at start-up (bench/cli_startup.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base.clock import ManualClock, SystemClock
    from .base.errors import InputError, MemvaultError, NotFound
    from .home.memory import Memory
    from .timeline.events import NewEvent

# name -> the module defining it
_FACE = {"ManualClock": ".base.clock", "SystemClock": ".base.clock",
         "InputError": ".base.errors", "MemvaultError": ".base.errors", "NotFound": ".base.errors",
         "Memory": ".home.memory", "NewEvent": ".timeline.events"}

__all__ = ["ManualClock", "Memory", "MemvaultError", "InputError", "NewEvent", "NotFound",
           "SystemClock"]


def __getattr__(name: str) -> Any:
    if name not in _FACE:
        raise AttributeError(f"module 'memvault' has no attribute {name!r}")
    value = getattr(importlib.import_module(_FACE[name], __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
