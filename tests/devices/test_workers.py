"""The device's pool threads: jobs run in order, shutdown drains the queue, a broken job is
reported and the thread carries on, threads given CPUs bind to them and pass none on."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

from aiotf.devices.workers import WorkerPool, process_cpus, unbound

STALL_S = 30.0  # generous: only a hang reaches it


def test_jobs_run_in_order_on_the_pool_threads_after_the_initializer() -> None:
    seen: list[tuple[str, int]] = []
    initialized: list[str] = []
    done = threading.Event()
    pool = WorkerPool(1, "w", initializer=lambda tag: initialized.append(tag), initargs=("x",))
    try:
        for i in range(50):
            pool.submit(lambda i=i: seen.append((threading.current_thread().name, i)))
        pool.submit(done.set)
        assert done.wait(STALL_S)
    finally:
        pool.shutdown()
    assert initialized == ["x"]
    assert seen == [("w_0", i) for i in range(50)]


def test_every_thread_takes_jobs() -> None:
    barrier = threading.Barrier(3, timeout=STALL_S)  # two pool threads and this one
    names: set[str] = set()

    def job() -> None:
        names.add(threading.current_thread().name)
        barrier.wait()  # each thread holds one job: the other job must go to the other thread

    pool = WorkerPool(2, "w")
    try:
        pool.submit(job)
        pool.submit(job)
        barrier.wait()
    finally:
        pool.shutdown()
    assert names == {"w_0", "w_1"}


def test_shutdown_runs_what_was_queued_then_refuses_and_joins() -> None:
    release = threading.Event()
    ran: list[int] = []
    pool = WorkerPool(1, "w")
    pool.submit(lambda: release.wait(STALL_S))
    for i in range(3):
        pool.submit(lambda i=i: ran.append(i))
    threading.Timer(0.05, release.set).start()
    pool.shutdown()  # waits for the blocked job and the three behind it
    assert ran == [0, 1, 2]
    assert not any(t.name.startswith("w_") and t.is_alive() for t in threading.enumerate())
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(lambda: None)
    pool.shutdown()  # a second shutdown does nothing


def test_a_job_that_raises_is_reported_and_the_thread_carries_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reported: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", reported.append)
    done = threading.Event()

    def broken() -> None:
        raise KeyError("broken job")

    pool = WorkerPool(1, "w")
    try:
        pool.submit(broken)
        pool.submit(done.set)
        assert done.wait(STALL_S)
    finally:
        pool.shutdown()
    (args,) = reported
    assert args.exc_type is KeyError and args.thread.name == "w_0"


_binds = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="the platform cannot bind threads to CPUs"
)


@_binds
def test_threads_bind_to_their_cpus_before_the_initializer() -> None:
    cpu = min(os.sched_getaffinity(0))
    bound: dict[str, set[int]] = {}

    def record() -> None:
        bound[threading.current_thread().name] = os.sched_getaffinity(0)

    pool = WorkerPool(2, "w", initializer=record, cpus=[cpu, cpu])
    pool.shutdown()
    assert bound == {"w_0": {cpu}, "w_1": {cpu}}


@_binds
def test_a_cpu_it_cannot_bind_to_leaves_the_thread_unbound() -> None:
    allowed = os.sched_getaffinity(0)
    bound: list[set[int]] = []
    done = threading.Event()
    pool = WorkerPool(1, "w", cpus=[max(allowed) + 4096])  # no such CPU: EINVAL
    try:
        pool.submit(lambda: bound.append(os.sched_getaffinity(0)))
        pool.submit(done.set)
        assert done.wait(STALL_S)
    finally:
        pool.shutdown()
    assert bound == [allowed]


def test_cpus_must_be_one_a_thread() -> None:
    with pytest.raises(ValueError, match="^2 threads bound to 1 CPUs: one a thread$"):
        WorkerPool(2, "w", cpus=[0])


# For tests of binding (here, the devices' and py_func's): two CPUs a thread can be bound to.
two_cpus = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two CPUs the platform lets a thread bind to",
)


def _in_bound_thread(probe: Callable[[], Any]) -> Any:
    """``probe()`` run as a job of a pool whose one thread is bound to one of the CPUs."""
    got: list[Any] = []
    pool = WorkerPool(1, "bound", cpus=[min(os.sched_getaffinity(0))])
    try:
        pool.submit(lambda: got.append(probe()))
    finally:
        pool.shutdown()
    return got[0]


def _started_thread_cpus() -> set[int]:
    """The CPUs of a plain thread started here."""
    seen: list[set[int]] = []
    thread = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
    thread.start()
    thread.join(STALL_S)
    return seen[0]


@two_cpus
def test_a_pool_started_from_a_bound_thread_runs_on_the_process_cpus() -> None:
    """A bound thread's one CPU is not passed on to another pool's threads (a nested session's
    pool, made in a bound thread, would otherwise run all its threads on that CPU)."""

    def probe() -> tuple[set[int], set[int]]:
        inner: list[set[int]] = []
        nested = WorkerPool(2, "nested")
        try:
            for _ in range(2):
                nested.submit(lambda: inner.append(os.sched_getaffinity(0)))
        finally:
            nested.shutdown()
        return os.sched_getaffinity(0), inner[0] | inner[1]

    own, nested = _in_bound_thread(probe)
    assert len(own) == 1 and nested == process_cpus()


@two_cpus
def test_unbound_runs_user_code_on_the_process_cpus_then_binds_again() -> None:
    """Threads started by user code in a bound thread (a py_func's) may run on any CPU."""

    def probe() -> tuple[set[int], set[int], set[int], set[int]]:
        outside = _started_thread_cpus()
        with unbound():
            inside, started = os.sched_getaffinity(0), _started_thread_cpus()
        return outside, inside, started, os.sched_getaffinity(0)

    outside, inside, started, after = _in_bound_thread(probe)
    cpu = {min(os.sched_getaffinity(0))}
    assert outside == cpu and after == cpu
    assert inside == started == process_cpus()


def test_unbound_outside_a_bound_thread_changes_nothing() -> None:
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    with unbound():
        inside = os.sched_getaffinity(0) if before is not None else None
    assert inside == before
