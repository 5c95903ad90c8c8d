"""Intra-op parallelism: a kernel in a device's pool thread splits its work into parts.

A kernel running in a device's pool (an expensive kernel on large inputs) may call
:func:`parallel_for` with a number of independent parts. The calling thread claims parts one at
a time from a shared counter, and queues helper jobs on the same pool, one per idle pool
thread; a helper that starts while parts remain claims them too, one that starts late finds
none and returns at once. The caller then waits only for parts that a helper has claimed, that
is, work already running: it never waits on a job queued behind other kernels. So a chain of
big kernels (a CNN) uses every pool thread for each kernel, and nothing can deadlock. A pool
busy with independent kernels (sixteen MatMuls side by side) has no idle thread: there
:func:`workers` is 1 and each kernel runs whole in its own thread, with no parts and no helper
jobs. Outside a pool thread (an inline kernel, a direct call) the parts run one after another
in the caller.

State: ``_local.submit``/``_local.load`` are set once per pool thread (:func:`bind_worker`, the
pool's thread initializer). A :class:`PoolLoad` counts the jobs submitted to one pool and not
yet finished (``active``, queued or running); the device keeps it. A :class:`_Parts` is one
call's shared state: ``next`` (the first unclaimed part), ``finished`` (parts done), ``error``
(the first failure; no part is claimed after it). Invariant: a part is claimed exactly once,
under the lock, and the caller returns only when ``finished`` equals the number of parts
claimed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

Submit = Callable[[Callable[[], None]], Any]

_local = threading.local()


class PoolLoad:
    """The jobs submitted to one pool of ``threads`` threads and not finished yet."""

    __slots__ = ("_lock", "active", "threads")

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.active = 0
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            self.active += 1

    def exit(self) -> None:
        with self._lock:
            self.active -= 1

    def idle(self) -> int:
        """Threads with nothing to do now (a running job counts itself as active)."""
        return max(0, self.threads - self.active)


def bind_worker(submit: Submit, load: PoolLoad) -> None:
    """Make this thread a pool thread: ``submit(fn)`` queues ``fn`` on its pool, whose jobs
    ``load`` counts."""
    _local.submit = submit
    _local.load = load


def _idle_helpers() -> int:
    load: PoolLoad | None = getattr(_local, "load", None)
    return 0 if load is None else load.idle()


def workers() -> int:
    """How many threads may work on this thread's parts now: itself, and the pool's idle
    threads (1 outside a pool thread)."""
    return _idle_helpers() + 1


def parallel_for(num_parts: int, part: Callable[[int], None]) -> None:
    """Run ``part(i)`` for every ``i`` in ``range(num_parts)``, on this thread and idle pool
    threads; return when all have run, raising the first exception a part raised."""
    helpers = min(_idle_helpers(), num_parts - 1)
    if helpers <= 0:
        for i in range(num_parts):
            part(i)
        return
    parts = _Parts(num_parts, part)
    submit: Submit = _local.submit
    for _ in range(helpers):
        if not submit(parts.run):  # the pool is shutting down: do the parts here
            break
    parts.run()
    parts.wait()


class _Parts:
    __slots__ = ("_done", "_error", "_finished", "_lock", "_next", "_num", "_part")

    def __init__(self, num_parts: int, part: Callable[[int], None]) -> None:
        self._num = num_parts
        self._part = part
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._next = 0
        self._finished = 0
        self._error: BaseException | None = None

    def _claim(self) -> int:
        """The next unclaimed part, or -1 when none is left (or a part failed)."""
        with self._lock:
            if self._next >= self._num or self._error is not None:
                return -1
            self._next += 1
            return self._next - 1

    def run(self) -> None:
        """Claim and run parts until none is left (the caller and every helper)."""
        while (i := self._claim()) >= 0:
            try:
                self._part(i)
            except BaseException as exc:  # re-raised by the caller in wait()
                with self._lock:
                    if self._error is None:
                        self._error = exc
            with self._lock:
                self._finished += 1
                self._done.notify_all()

    def wait(self) -> None:
        """Block until every claimed part has finished; raise the first failure."""
        with self._lock:
            while self._finished < self._next:
                self._done.wait()
            error = self._error
        if error is not None:
            raise error
