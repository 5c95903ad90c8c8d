"""The device's pool threads: jobs run in order, shutdown drains the queue, a broken job is
reported and the thread carries on, threads given CPUs bind to them."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from aiotf.devices.workers import WorkerPool

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
