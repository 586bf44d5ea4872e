"""memvault's engine: the SQLite store, timeline, objects, modes, recall and worker."""

from .base.clock import ManualClock, SystemClock
from .base.errors import InputError, MemvaultError, NotFound
from .home.memory import Memory
from .timeline.events import NewEvent

__all__ = ["ManualClock", "Memory", "MemvaultError", "InputError", "NewEvent", "NotFound",
           "SystemClock"]
