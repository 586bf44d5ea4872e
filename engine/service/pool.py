"""`MemoryPool`: the `Memory` objects the MCP tools borrow, one call at a time each.

A sqlite3 connection is never used by two threads at once: a call borrows a Memory for its
duration. `borrow` waits for one (a worker thread may); `borrow_idle` never waits (the event
loop uses it for read-only calls, memvault.service.mcp_server).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from mcp.server.auth.middleware.auth_context import get_access_token

from ..base.clock import Clock
from ..base.errors import MemvaultError
from ..base.spaces import Spaces
from ..home.memory import Memory
from .auth import SPACE_SCOPE

DEFAULT_POOL_SIZE = 4


class MemoryPool:
    """Up to `size` `Memory` objects on one home, each lent to one call at a time.

    Opened lazily by `opener`; a call waits when all are lent. `MemoryPool.wrap(mem)` lends one
    existing Memory (tests, in-process use) and leaves it open on `close()`.
    """

    def __init__(self, opener: Callable[[], Memory], size: int = DEFAULT_POOL_SIZE,
                 owned: bool = True) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one connection")
        self._opener = opener
        self._size = size
        self._owned = owned
        self._idle: queue.LifoQueue[Memory] = queue.LifoQueue()
        self._all: list[Memory] = []
        self._opened = 0
        self._lock = threading.Lock()
        self._closed = False
        # A pool like this one bound to another space (for_home's pools know how to make one).
        self.bound_to: Callable[[str], MemoryPool] | None = None

    @classmethod
    def for_home(cls, home: str | Path | None, size: int = DEFAULT_POOL_SIZE,
                 clock: Clock | None = None, space: str | None = None) -> MemoryPool:
        """A pool opening `Memory.open(home)` connections (each its own sqlite3 connection),
        each bound to `space` (None: every space)."""
        Spaces.of(space)  # a bad name is refused now, not at the first call
        pool = cls(lambda: Memory.open(home, clock=clock, space=space), size)
        pool.bound_to = lambda other: cls.for_home(home, size, clock, other)
        return pool

    @classmethod
    def wrap(cls, mem: Memory) -> MemoryPool:
        """A pool of exactly `mem` (calls take turns on it); `close()` leaves it open."""
        pool = cls(lambda: mem, 1, owned=False)
        pool._all.append(mem)
        pool._opened = 1
        pool._idle.put(mem)
        return pool

    @contextmanager
    def borrow(self) -> Iterator[Memory]:
        """Lend one Memory for the duration of the block."""
        mem = self._take()
        try:
            yield mem
        finally:
            self._idle.put(mem)

    @contextmanager
    def borrow_idle(self) -> Iterator[Memory | None]:
        """Lend an already open, idle Memory for the block, or None when none is idle right
        now (never waits, never opens one: the caller then takes `borrow` on a thread)."""
        with self._lock:
            mem = self._idle_now()
        if mem is None:
            yield None
            return
        try:
            yield mem
        finally:
            self._idle.put(mem)

    def _idle_now(self) -> Memory | None:
        """An idle Memory, or None when none is idle now (call holding the lock)."""
        if self._closed:
            raise MemvaultError("the memory service is shutting down")
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return None

    def _take(self) -> Memory:
        with self._lock:
            mem = self._idle_now()
            if mem is not None:
                return mem
            grow = self._opened < self._size
            if grow:
                self._opened += 1  # reserve the slot; open outside the lock
        if not grow:
            return self._idle.get()
        try:
            mem = self._opener()
        except BaseException:
            with self._lock:
                self._opened -= 1
            raise
        with self._lock:
            self._all.append(mem)
        return mem

    def close(self) -> None:
        """Close every connection this pool opened; call it once the server has stopped."""
        with self._lock:
            self._closed = True
            opened, self._all = self._all, []
        if self._owned:
            for mem in opened:
                mem.close()


class SpacePools:
    """The pool each request's calls borrow from: `default`, or, for a request whose bearer
    token is bound to a space (memvault.service.auth), a pool of Memories bound to it, opened
    on first use. The binding comes from the token the service checked, never from an
    argument."""

    def __init__(self, default: MemoryPool) -> None:
        self.default = default
        self._bound: dict[str, MemoryPool] = {}
        self._lock = threading.Lock()

    def current(self) -> MemoryPool:
        """The pool of the request being served."""
        token = get_access_token()
        spaces = [s[len(SPACE_SCOPE):] for s in (token.scopes if token else [])
                  if s.startswith(SPACE_SCOPE)]
        if not spaces:
            return self.default
        with self._lock:
            pool = self._bound.get(spaces[0])
            if pool is None:
                if self.default.bound_to is None:
                    raise MemvaultError("this service cannot bind a call to a space")
                pool = self._bound[spaces[0]] = self.default.bound_to(spaces[0])
            return pool

    def close(self) -> None:
        """Close the pools opened for spaces (the default one is its owner's to close)."""
        with self._lock:
            pools, self._bound = list(self._bound.values()), {}
        for pool in pools:
            pool.close()
