"""A device's pool threads: a fixed set of threads taking jobs from one queue.

Why not ``concurrent.futures.ThreadPoolExecutor``: nothing here wants its futures. A hop from
the event loop brings its result back through its own loop future (:mod:`aiotf.devices.threads`)
and a kernel's helper jobs report through the kernel's shared parts (:mod:`aiotf.devices.intra_op`).
The executor's ``submit`` makes a future and a work item, takes two locks and may start a thread,
and its worker sets the future running and then done, notifying under a condition: ~10 us of
Python around every job, on the path of every step's hop and every split kernel's helper. Here
a job is one ``SimpleQueue.put`` (C, no Python lock) and one ``get``.

Jobs must not raise: each is wrapped by its submitter (``Device._submit``) or catches its own
failures (``_Handoff.run``, ``_Parts.help``). One that does is reported through
``threading.excepthook`` and the thread carries on.

The threads start with the pool, each first calling ``initializer(*initargs)``; they are daemon
threads, so a pool nobody closed does not keep the interpreter from exiting. :meth:`shutdown`
stops queueing, lets the threads finish every job already queued, and joins them.

Given ``cpus``, one a thread, thread ``i`` first binds itself to CPU ``cpus[i]`` (see
``device.pool_cpus`` for why). A thread inherits the CPUs of the thread that starts it, so the
threads of any other pool started from a bound thread are first given back all of
:func:`process_cpus`, and user code in a bound thread runs :func:`unbound` (``PyFunc``), so
that the threads and processes it starts are not confined to one CPU.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

Job = Callable[[], Any]

_bound = threading.local()  # .cpu: the CPU a bound pool thread runs on


def process_cpus() -> set[int] | None:
    """The CPUs this process may run on, as its main thread may (a bound pool thread's own are
    one); None where the platform has no CPU affinity."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    try:
        return os.sched_getaffinity(os.getpid())  # the main thread's id is the process's
    except OSError:  # the main thread is gone
        return os.sched_getaffinity(0)


@contextlib.contextmanager
def unbound() -> Iterator[None]:
    """The body on any of the process's CPUs when this is a bound pool thread, then back on its
    own: for user code, whose threads and subprocesses would inherit the one CPU."""
    cpu: int | None = getattr(_bound, "cpu", None)
    cpus = process_cpus() if cpu is not None else None
    if cpu is None or not cpus:
        yield
        return
    _set_cpus(cpus)
    try:
        yield
    finally:
        _set_cpus({cpu})


def _set_cpus(cpus: set[int]) -> None:
    with contextlib.suppress(OSError):  # a CPU gone from the process's since: left as it is
        os.sched_setaffinity(0, cpus)


class WorkerPool:
    """``threads`` threads running the jobs :meth:`submit` queues, in order."""

    __slots__ = ("_closed", "_lock", "_queue", "_threads")

    def __init__(
        self,
        threads: int,
        name: str,
        initializer: Callable[..., Any] | None = None,
        initargs: tuple[Any, ...] = (),
        cpus: list[int] | None = None,
    ) -> None:
        if cpus is not None and len(cpus) != threads:
            raise ValueError(f"{threads} threads bound to {len(cpus)} CPUs: one a thread")
        # Each thread's CPUs: its own one; or, started from a bound thread (whose one CPU they
        # would inherit), the process's; else as inherited (None).
        restored = process_cpus() if getattr(_bound, "cpu", None) is not None else None
        places = [{cpu} for cpu in cpus] if cpus is not None else [restored] * threads
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()  # orders submit's closed check against shutdown
        self._closed = False
        self._threads = [
            threading.Thread(
                target=self._work,
                args=(places[i], cpus is not None, initializer, initargs),
                name=f"{name}_{i}",
                daemon=True,
            )
            for i in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, job: Job) -> None:
        """Queue ``job``; RuntimeError once the pool is shutting down."""
        if self._closed:  # unlocked first: the common case pays no lock
            raise RuntimeError("cannot schedule new jobs after shutdown")
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new jobs after shutdown")
            self._queue.put(job)

    def shutdown(self) -> None:
        """Run every job queued so far, then stop and join the threads (not the calling one,
        when a pool thread shuts its own pool down)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in self._threads:
                self._queue.put(None)  # after every job: each thread takes one and stops
        me = threading.current_thread()
        for thread in self._threads:
            if thread is not me:
                thread.join()

    def _work(
        self,
        cpus: set[int] | None,
        bound: bool,
        initializer: Callable[..., Any] | None,
        initargs: tuple[Any, ...],
    ) -> None:
        if cpus:
            _set_cpus(cpus)
            if bound:
                (_bound.cpu,) = cpus
        if initializer is not None:
            initializer(*initargs)
        get = self._queue.get
        while (job := get()) is not None:
            try:
                job()
            except BaseException:  # a job that broke its promise: report it, keep the thread
                exc_type, exc, tb = sys.exc_info()
                assert exc_type is not None
                threading.excepthook(
                    threading.ExceptHookArgs((exc_type, exc, tb, threading.current_thread()))
                )
            del job
