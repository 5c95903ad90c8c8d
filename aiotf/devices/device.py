"""The Device base class: a name, attributes, an allocator, a resource manager and a thread pool.

Sync kernels that are expensive run in the device's thread pool through :meth:`Device.run_in_pool`,
awaited with the one bounded helper for thread work (:mod:`aiotf.devices.threads`): if the
awaiting task is cancelled, it waits for the thread to finish before re-raising, so no buffer is
released while a thread still reads it.

The pool is the device's only source of parallelism: its threads run independent kernels side
by side, and a kernel may split its own work across the pool's idle threads
(:mod:`aiotf.devices.intra_op`). BLAS does not fan out a second time: while a pool job runs,
OpenBLAS uses one thread (:mod:`aiotf.devices.blas`). A pool of one thread per CPU binds each
thread to its own CPU (:func:`pool_cpus`).
"""

from __future__ import annotations

import functools
import os
import secrets
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from aiotf.devices import blas, intra_op
from aiotf.devices.allocator import TrackingAllocator
from aiotf.devices.resource_mgr import ResourceMgr
from aiotf.devices.threads import Cancel, run_in
from aiotf.devices.workers import WorkerPool, process_cpus
from aiotf.framework.device_spec import DeviceSpec
from aiotf.proto import DeviceAttributes


class Device:
    """One device. Subclasses set the type; a factory creates instances (see ``factory.py``)."""

    device_type = ""

    def __init__(
        self, name: str, memory_limit: int, num_threads: int, description: str = ""
    ) -> None:
        self.name = name
        self.parsed_name = DeviceSpec.from_string(name)
        self.incarnation = secrets.randbits(63) | 1
        self.attributes = DeviceAttributes(
            name=name,
            device_type=self.device_type,
            memory_limit=memory_limit,
            incarnation=self.incarnation,
            physical_device_desc=description,
        )
        self.allocator = TrackingAllocator(
            f"{self.device_type.lower()}_{self.parsed_name.device_index}"
        )
        self.resource_manager = ResourceMgr()
        self._num_threads = max(1, num_threads)
        self._load = intra_op.PoolLoad(self._num_threads)  # jobs queued or running in the pool
        self._pool: WorkerPool | None = None
        self._pool_lock = threading.Lock()  # sessions may start runs from several threads

    @property
    def num_threads(self) -> int:
        return self._num_threads

    def _get_pool(self) -> WorkerPool:
        pool = self._pool
        if pool is not None:  # made already: no lock on every hop
            return pool
        with self._pool_lock:
            if self._pool is None:
                self._pool = WorkerPool(
                    self._num_threads,
                    f"aiotf-{self.name.rsplit('/', 1)[-1]}",
                    initializer=_start_worker,
                    initargs=(self._help, self._load),
                    cpus=_claim_cpus(self),
                )
            return self._pool

    def _submit(self, pool: WorkerPool, job: Callable[[], None], call: _Call | None = None) -> None:
        """``job()`` queued on ``pool`` (run by ``call``, ``_call_counted`` by default),
        counted in the pool's load until it has run."""
        load = self._load
        load.enter()
        try:  # a partial, not a lambda: no Python frame of its own on the pool thread
            pool.submit(functools.partial(call or _call_counted, load, job))
        except BaseException:
            load.exit()
            raise

    def _help(self, fn: Callable[[], None]) -> bool:
        """Queue a kernel's helper job (``intra_op``) on the pool; False once it is closed."""
        pool = self._pool
        if pool is None:
            return False
        try:
            self._submit(pool, fn, _call_helping)
        except RuntimeError:  # shutting down: the kernel's own thread does the work
            return False
        return True

    async def run_in_pool(
        self,
        fn: Callable[..., Any],
        *args: Any,
        cancel: Cancel | None = None,
        relayed: bool = False,
    ) -> Any:
        """``fn(*args)`` in this device's thread pool; on cancel, waits for the thread first.

        The wait outlasts further cancellations (a failing step cancels its kernels, then the
        run's deadline or caller cancels the step again): the first ``CancelledError`` is
        re-raised once the thread has finished, never before. ``cancel``, if given, is set
        before that wait, for a long ``fn`` that looks at it to stop early. ``relayed``:
        ``fn(reply, *args)``, which may hand its answer on to another thread
        (``threads.run_in``).
        """
        return await run_in(self._queue, fn, *args, cancel=cancel, relayed=relayed)

    def _queue(self, job: Callable[[], None]) -> None:
        self._submit(self._get_pool(), job)

    def close(self) -> None:
        """Stop the thread pool (its threads are idle once every step has finished)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()
            _release_cpus(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


PIN_ENV = "AIOTF_PIN_POOL_THREADS"


def pool_cpus(threads: int) -> list[int] | None:
    """The CPUs a pool of ``threads`` threads binds them to, one each: every CPU this process
    may run on (``workers.process_cpus``), where the pool has a thread for each (as by default:
    ``cpu.py``). None for any other pool, where the platform cannot bind threads, or with
    ``$AIOTF_PIN_POOL_THREADS`` 0. Only one device's pool at a time is bound (``_claim_cpus``).

    Unbound, the scheduler wakes a pool thread where the thread that woke it runs, and after an
    idle spell it left both pool threads on one vCPU for the next ~50 ms: a plain script's two
    threads, multiplying side by side, ran as if one after the other; the cnn's first six steps
    after 0.25 s idle took 7.7-8.3 ms against 5.1-5.6 once balanced, and 4.7-5.3 bound
    (``docs/performance-log.md``, eleventh session). A bound thread cannot leave a CPU that
    another process keeps busy; a split kernel's parts follow each thread's pace, and a helper
    that has not started leaves its part to the caller (``intra_op``)."""
    if os.environ.get(PIN_ENV, "1").strip() == "0" or (cpus := process_cpus()) is None:
        return None
    return sorted(cpus) if len(cpus) == threads > 1 else None


# The device whose pool is bound (``pool_cpus``): one at a time, since each would bind its
# thread i to the same CPU, and two pools' busy threads could then share one CPU while another
# is idle (two sessions, or two CPU devices); the others are left to the scheduler.
_bound_device: weakref.ref[Device] | None = None
_bound_lock = threading.Lock()


def _claim_cpus(device: Device) -> list[int] | None:
    """``pool_cpus`` for ``device``'s new pool, unless another device's pool is bound."""
    global _bound_device
    cpus = pool_cpus(device.num_threads)
    if cpus is None:
        return None
    with _bound_lock:
        holder = _bound_device() if _bound_device is not None else None
        if holder is not None and holder is not device:
            return None
        _bound_device = weakref.ref(device)
    return cpus


def _release_cpus(device: Device) -> None:
    """``device``'s pool has stopped: the next pool may bind its threads."""
    global _bound_device
    with _bound_lock:
        if _bound_device is not None and _bound_device() is device:
            _bound_device = None


def _start_worker(submit: intra_op.Submit, load: intra_op.PoolLoad) -> None:
    """A pool thread's initializer. numpy's floating-point errors are ignored in it for good,
    as on the loop while a step runs (``Executor.run``): kernels check what TensorFlow checks.
    Set once, not around each job: an ``errstate`` costs a job ~5 us in cold caches, and a step
    takes a job for its hop and one for each helper of a split. (A kernel that changes the state
    restores it: ``py_func`` runs the user's function inside an ``errstate``.)"""
    np.seterr(all="ignore")
    intra_op.bind_worker(submit, load)


def _call_counted(load: intra_op.PoolLoad, job: Callable[[], None]) -> None:
    blas.hold_single_threaded()
    try:
        job()
    finally:
        blas.release_single_threaded()
        load.exit()


def _call_helping(load: intra_op.PoolLoad, job: Callable[[], None]) -> None:
    """A kernel's helper job. It runs parts only while the kernel's own pool job waits for them
    (``intra_op.parallel_for`` returns once every claimed part is done), and that job holds
    OpenBLAS single-threaded meanwhile: the helper need not count itself in. (A relay's helper,
    which may carry a step on after that job has ended, holds it itself: ``intra_op.Relay``.)"""
    try:
        job()
    finally:
        load.exit()


_Call = Callable[[intra_op.PoolLoad, Callable[[], None]], None]
