"""Intra-op parallelism: a pool kernel's parts on the idle threads of its device's pool."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

import aiotf
from aiotf.devices import DeviceMgr, add_devices, intra_op
from aiotf.devices.device import Device

TASK = "/job:localhost/replica:0/task:0"
STALL_S = 30.0  # generous: only a hang reaches it


@pytest.fixture
def device() -> Iterator[Device]:
    config = aiotf.ConfigProto(device_count={"CPU": 1}, inter_op_parallelism_threads=2)
    mgr = DeviceMgr(add_devices(config, TASK))
    yield mgr.client_device
    mgr.close()


def test_outside_a_pool_the_parts_run_in_the_caller_in_order() -> None:
    seen: list[tuple[int, str]] = []
    assert intra_op.workers() == 1
    intra_op.parallel_for(4, lambda i: seen.append((i, threading.current_thread().name)))
    assert seen == [(i, threading.current_thread().name) for i in range(4)]


async def test_an_idle_pool_thread_takes_parts(device: Device) -> None:
    both = threading.Barrier(2, timeout=STALL_S)  # passes only if two parts run at once
    threads: set[str] = set()

    def kernel() -> int:
        assert intra_op.workers() == 2

        def part(i: int) -> None:
            threads.add(threading.current_thread().name)
            both.wait()

        intra_op.parallel_for(2, part)
        return intra_op.workers()

    assert await device.run_in_pool(kernel) == 2  # the helper has finished: idle again
    assert len(threads) == 2


async def test_a_busy_pool_runs_a_kernel_whole_in_its_own_thread(device: Device) -> None:
    release = threading.Event()
    started = threading.Event()

    def blocker() -> None:  # keeps the pool's other thread busy
        started.set()
        release.wait(STALL_S)

    def kernel() -> tuple[int, set[str]]:
        threads: set[str] = set()
        intra_op.parallel_for(3, lambda i: threads.add(threading.current_thread().name))
        return intra_op.workers(), threads

    blocking = asyncio.ensure_future(device.run_in_pool(blocker))
    await asyncio.to_thread(started.wait, STALL_S)
    workers, threads = await device.run_in_pool(kernel)
    release.set()
    await blocking
    assert workers == 1 and len(threads) == 1  # no helper: nothing idle to help


async def test_a_failing_part_is_raised_and_stops_the_claiming(device: Device) -> None:
    ran: list[int] = []

    def part(i: int) -> None:
        ran.append(i)
        if i == 0:
            raise ValueError("part 0 failed")

    def kernel() -> None:
        intra_op.parallel_for(50, part)

    with pytest.raises(ValueError, match="part 0 failed"):
        await device.run_in_pool(kernel)
    assert 0 in ran and len(ran) < 50
