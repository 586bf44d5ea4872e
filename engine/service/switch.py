"""The GIL switch interval while a Service serves.

Python switches threads every 5 ms by default: a busy worker thread then holds each of the
API's thread hops for up to 5 ms. A Service lowers the interval while it serves; the process's
own value comes back when the last Service stops (runs in threads, as in tests, may overlap).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator


class _SwitchInterval:
    """The lowered GIL switch interval, shared by every Service of the process: the first to
    start saves the process's value, the last to stop puts it back (runs may overlap)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.original = 0.0

    @contextlib.contextmanager
    def lowered(self, seconds: float) -> Iterator[None]:
        with self.lock:
            if self.users == 0:
                self.original = sys.getswitchinterval()
            self.users += 1
            sys.setswitchinterval(min(self.original, seconds))
        try:
            yield
        finally:
            with self.lock:
                self.users -= 1
                if self.users == 0:
                    sys.setswitchinterval(self.original)


_SWITCH = _SwitchInterval()


def switch_interval(seconds: float) -> contextlib.AbstractContextManager[None]:
    """Lower the GIL switch interval to `seconds` (never raise it) while the block runs; the
    process's own value comes back when the last such block ends (Services in threads, in
    tests, leave no trace even when their runs overlap)."""
    return _SWITCH.lowered(seconds)
