"""memvault's engine: the SQLite store, timeline, objects, modes, recall and worker."""

from .clock import ManualClock, SystemClock
from .errors import InputError, MemvaultError, NotFound
from .events import NewEvent
from .memory import Memory

__all__ = ["ManualClock", "Memory", "MemvaultError", "InputError", "NewEvent", "NotFound",
           "SystemClock"]
