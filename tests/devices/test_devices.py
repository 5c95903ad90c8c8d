"""Devices: names and counts, incarnations, allocator books, the thread pool, resources, DeviceMgr."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import aiotf
from aiotf.devices import DeviceMgr, ResourceMgr, TrackingAllocator, add_devices, factory
from aiotf.devices import device as device_module
from aiotf.devices.cpu import CPUDevice
from aiotf.devices.device import Device
from aiotf.devices.threads import RELAYED, Reply
from aiotf.devices.workers import WorkerPool
from aiotf.framework import errors
from aiotf.framework.device_spec import DeviceSpec
from tests.devices.test_workers import two_cpus

TASK = "/job:localhost/replica:0/task:0"


@pytest.fixture
def devices() -> Iterator[list[Device]]:
    devs = add_devices(aiotf.ConfigProto(device_count={"CPU": 3}), TASK)
    yield devs
    for d in devs:
        d.close()


def test_names_and_count(devices: list[Device]) -> None:
    assert [d.name for d in devices] == [f"{TASK}/device:CPU:{i}" for i in range(3)]
    assert all(d.device_type == "CPU" and isinstance(d, CPUDevice) for d in devices)
    assert [d.parsed_name.device_index for d in devices] == [0, 1, 2]
    assert devices[2].parsed_name == DeviceSpec("localhost", 0, 0, "CPU", 2)


@pytest.mark.parametrize("config", [None, aiotf.ConfigProto()])
def test_default_is_one_cpu(config: Any) -> None:
    devs = add_devices(config, "/job:worker/replica:0/task:3")
    assert [d.name for d in devs] == ["/job:worker/replica:0/task:3/device:CPU:0"]


def test_attributes(devices: list[Device]) -> None:
    attrs = devices[1].attributes
    assert attrs.name == devices[1].name
    assert attrs.device_type == "CPU"
    assert attrs.memory_limit > 0
    assert attrs.incarnation == devices[1].incarnation


def test_incarnations_nonzero_and_distinct(devices: list[Device]) -> None:
    more = add_devices(aiotf.ConfigProto(device_count={"CPU": 3}), TASK)
    incarnations = [d.incarnation for d in devices + more]
    assert all(0 < i < 2**64 for i in incarnations)
    assert len(set(incarnations)) == len(incarnations)


def test_inter_op_threads_size_each_device_pool(devices: list[Device]) -> None:
    config = aiotf.ConfigProto(device_count={"CPU": 2}, inter_op_parallelism_threads=3)
    assert [d.num_threads for d in add_devices(config, TASK)] == [3, 3]
    assert devices[0].num_threads >= 1
    negative = add_devices(aiotf.ConfigProto(inter_op_parallelism_threads=-1), TASK)
    assert negative[0].num_threads == 1  # TensorFlow's "caller's thread": one at a time
    intra = add_devices(aiotf.ConfigProto(intra_op_parallelism_threads=3), TASK)
    assert intra[0].num_threads == devices[0].num_threads  # threads inside an op: not the pool


def test_allocator_accounting() -> None:
    allocator = TrackingAllocator("cpu_0")
    assert allocator.bytes_in_use == 0 and allocator.peak_bytes_in_use == 0
    allocator.allocate(100)
    allocator.allocate(300)
    assert allocator.bytes_in_use == 400
    allocator.deallocate(100)
    assert allocator.bytes_in_use == 300
    allocator.allocate(50)
    assert allocator.peak_bytes_in_use == 400
    assert allocator.stats.num_allocs == 3
    assert allocator.stats.largest_alloc_size == 300
    allocator.reset_peak()
    assert allocator.peak_bytes_in_use == 350
    allocator.deallocate(350)
    assert allocator.bytes_in_use == 0
    assert allocator.peak_bytes_in_use == 350


def test_each_device_has_its_own_allocator_and_resources(devices: list[Device]) -> None:
    assert len({id(d.allocator) for d in devices}) == 3
    assert len({id(d.resource_manager) for d in devices}) == 3
    assert [d.allocator.name for d in devices] == ["cpu_0", "cpu_1", "cpu_2"]


async def test_run_in_pool_result(devices: list[Device]) -> None:
    device = devices[0]

    def work(a: int, b: int) -> tuple[int, str]:
        return a * b, threading.current_thread().name

    value, thread_name = await device.run_in_pool(work, 6, 7)
    assert value == 42
    assert thread_name != threading.current_thread().name
    assert thread_name.startswith("aiotf-")


async def test_run_in_pool_error(devices: list[Device]) -> None:
    def fail() -> None:
        raise ZeroDivisionError("inside the pool")

    with pytest.raises(ZeroDivisionError, match="inside the pool"):
        await devices[0].run_in_pool(fail)


async def test_a_relayed_job_answers_by_whichever_thread_holds_its_reply(
    devices: list[Device],
) -> None:
    device = devices[0]
    relayed: list[threading.Thread] = []

    def job(reply: Reply, value: object, failure: BaseException | None) -> object:
        if value == "here":
            return "answered here"
        thread = threading.Thread(target=reply, args=(value, failure))
        relayed.append(thread)
        thread.start()
        return RELAYED

    assert await device.run_in_pool(job, "here", None, relayed=True) == "answered here"
    assert await device.run_in_pool(job, "there", None, relayed=True) == "there"
    with pytest.raises(ZeroDivisionError, match="relayed"):
        await device.run_in_pool(job, None, ZeroDivisionError("relayed"), relayed=True)
    assert len(relayed) == 2
    for thread in relayed:
        thread.join()


async def test_cancel_waits_for_the_thread(devices: list[Device]) -> None:
    device = devices[0]
    started = threading.Event()
    release = threading.Event()
    thread_done = threading.Event()

    def hold() -> str:
        started.set()
        release.wait()
        thread_done.set()
        return "finished"

    task = asyncio.create_task(device.run_in_pool(hold))
    done_with_thread_finished: list[bool] = []
    task.add_done_callback(lambda _: done_with_thread_finished.append(thread_done.is_set()))
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    for _ in range(20):  # give the cancellation every chance to (wrongly) complete the task
        await asyncio.sleep(0)
    assert not task.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert done_with_thread_finished == [True]


async def test_close_and_reuse(devices: list[Device]) -> None:
    device = devices[0]
    assert await device.run_in_pool(sum, [1, 2, 3]) == 6
    device.close()
    device.close()  # idempotent
    assert await device.run_in_pool(sum, [4, 5]) == 9  # a new pool on demand


def test_resource_manager() -> None:
    rm = ResourceMgr()
    created: list[str] = []

    def make(tag: str) -> Any:
        def create() -> dict[str, str]:
            created.append(tag)
            return {"tag": tag}

        return create

    first = rm.lookup_or_create("", "v", make("first"))
    again = rm.lookup_or_create("localhost", "v", make("second"))  # "" is the default container
    assert first is again and created == ["first"]
    other = rm.lookup_or_create("other", "v", make("third"))
    assert other is not first and created == ["first", "third"]
    assert rm.lookup("", "v") is first
    assert rm.lookup("other", "v") is other
    assert rm.lookup("other", "missing") is None
    assert rm.lookup("nope", "v") is None
    assert rm.delete("other", "v") is other and rm.lookup("other", "v") is None
    assert rm.delete("other", "v") is None
    rm.lookup_or_create("other", "v", make("again"))
    rm.cleanup("other")
    assert rm.lookup("other", "v") is None
    assert rm.lookup("", "v") is first
    rm.lookup_or_create("c2", "w", make("fourth"))
    rm.clear(["c2"])
    assert rm.lookup("c2", "w") is None and rm.lookup("", "v") is first
    rm.clear()
    assert rm.lookup("", "v") is None


class FakeDevice(Device):
    device_type = "FAKE"  # no factory: the lowest priority


def test_device_mgr_ordering_and_lookup() -> None:
    cpu = [CPUDevice(f"{TASK}/device:CPU:{i}", 1, 1) for i in range(3)]
    fake = FakeDevice(f"{TASK}/device:FAKE:0", 1, 1)
    mgr = DeviceMgr([fake, cpu[2], cpu[0], cpu[1]])
    assert [d.name for d in mgr] == [d.name for d in [*cpu, fake]]
    assert mgr.devices == [*cpu, fake]
    assert mgr.client_device is cpu[0]
    assert mgr.lookup(f"{TASK}/device:CPU:2") is cpu[2]
    with pytest.raises(KeyError):
        mgr.lookup("/device:CPU:2")  # lookup takes full names
    assert mgr.matching(DeviceSpec.from_string("/device:CPU:1")) == [cpu[1]]
    assert mgr.matching(DeviceSpec.from_string("/job:localhost")) == [*cpu, fake]
    assert mgr.matching(DeviceSpec.from_string("/device:FAKE:*")) == [fake]
    assert mgr.matching(DeviceSpec.from_string("/device:GPU:0")) == []


def test_device_mgr_sorts_index_numerically() -> None:
    cpus = [CPUDevice(f"{TASK}/device:CPU:{i}", 1, 1) for i in (10, 2, 1)]
    assert [d.parsed_name.device_index for d in DeviceMgr(cpus)] == [1, 2, 10]


def test_device_mgr_needs_a_device() -> None:
    with pytest.raises(ValueError, match="at least one device"):
        DeviceMgr([])


def test_factory_priorities(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(factory, "_FACTORIES", dict(factory._FACTORIES))
    assert "CPU" in factory.registered_device_types()

    def make(kind: str) -> Any:
        def create(config: Any, prefix: str) -> list[Device]:
            return [FakeDevice(f"{prefix}/device:FAKE:0", 1, 1, kind)]

        return create

    low, high = make("low"), make("high")
    factory.register_device_factory("FAKE", low, priority=10)
    factory.register_device_factory("FAKE", high, priority=20)
    factory.register_device_factory("FAKE", low, priority=5)  # lower priority: ignored
    with pytest.raises(ValueError, match="same priority 20"):
        factory.register_device_factory("FAKE", make("clash"), priority=20)
    assert factory.device_priority("FAKE") == 20
    assert factory.registered_device_types() == ["CPU", "FAKE"]  # CPU's priority is 50
    devs = add_devices(None, TASK)
    assert [d.attributes.physical_device_desc for d in devs if d.device_type == "FAKE"] == ["high"]
    assert DeviceMgr(devs).client_device.device_type == "CPU"
    factory.register_device_factory("FAKE", high, priority=100)
    assert factory.registered_device_types() == ["FAKE", "CPU"]
    mgr = DeviceMgr(add_devices(None, TASK))
    assert mgr.client_device.device_type == "FAKE"  # the default device: highest priority type
    assert [d.device_type for d in mgr] == ["FAKE", "CPU"]


def test_pool_is_created_once_when_threads_race(
    devices: list[Device], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: two threads starting runs at once each created a pool, leaking one."""
    created: list[int] = []

    class SlowPool(WorkerPool):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            created.append(1)
            time.sleep(0.02)  # widen the window between the check and the assignment
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(device_module, "WorkerPool", SlowPool)
    device = devices[0]
    barrier = threading.Barrier(8)
    pools: list[Any] = []

    def grab() -> None:
        barrier.wait()
        pools.append(device._get_pool())

    threads = [threading.Thread(target=grab) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(p) for p in pools}) == 1
    assert len(created) == 1


def test_no_cpu_devices_is_not_found() -> None:
    """TF 2.21 refuses ``device_count={"CPU": 0}`` when the session is made."""
    with pytest.raises(
        errors.NotFoundError, match="^No CPU devices are available in this process$"
    ):
        add_devices(aiotf.ConfigProto(device_count={"CPU": 0}), TASK)


def test_pool_cpus_one_each_only_for_a_pool_of_a_thread_a_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(device_module.os, "sched_getaffinity", lambda pid: {3, 1, 2, 0})
    monkeypatch.delenv(device_module.PIN_ENV, raising=False)
    assert device_module.pool_cpus(4) == [0, 1, 2, 3]
    assert device_module.pool_cpus(2) is None  # fewer threads than CPUs: left to the scheduler
    assert device_module.pool_cpus(8) is None
    monkeypatch.setenv(device_module.PIN_ENV, "0")
    assert device_module.pool_cpus(4) is None
    monkeypatch.setattr(device_module.os, "sched_getaffinity", lambda pid: {5})
    monkeypatch.delenv(device_module.PIN_ENV)
    assert device_module.pool_cpus(1) is None  # one thread on one CPU: nothing to balance


@pytest.fixture
def binding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pools bind as by default, and no device's pool is bound yet (whatever other tests left
    open)."""
    monkeypatch.delenv(device_module.PIN_ENV, raising=False)
    monkeypatch.setattr(device_module, "_bound_device", None)


@two_cpus
def test_a_default_pool_runs_each_thread_on_a_cpu_of_its_own(binding: None) -> None:
    allowed = os.sched_getaffinity(0)
    device = CPUDevice("/job:localhost/replica:0/task:0/device:CPU:0", 1 << 20, len(allowed))
    barrier = threading.Barrier(len(allowed) + 1, timeout=30)
    bound: list[set[int]] = []

    def job() -> None:
        bound.append(os.sched_getaffinity(0))
        barrier.wait()  # each thread holds one job, so every thread reports

    try:
        pool = device._get_pool()
        for _ in allowed:
            pool.submit(job)
        barrier.wait()
    finally:
        device.close()
    assert sorted(min(cpus) for cpus in bound) == sorted(allowed)
    assert all(len(cpus) == 1 for cpus in bound)


def test_one_device_pool_at_a_time_is_bound(binding: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pools bound alike could run their busy threads on one CPU while another idles (two
    sessions, two CPU devices): the first binds, the others are left to the scheduler until it
    is closed or gone."""
    monkeypatch.setattr(device_module, "pool_cpus", lambda threads: [0, 1])
    first, second, third = (CPUDevice(f"{TASK}/device:CPU:{i}", 1, 2) for i in range(3))
    assert device_module._claim_cpus(first) == [0, 1]
    assert device_module._claim_cpus(second) is None
    assert device_module._claim_cpus(first) == [0, 1]  # its pool made again after a close
    device_module._release_cpus(second)  # not the bound one: nothing changes
    assert device_module._claim_cpus(third) is None
    device_module._release_cpus(first)
    assert device_module._claim_cpus(second) == [0, 1]
    del second
    assert device_module._claim_cpus(third) == [0, 1]  # the bound device was freed


@two_cpus
def test_a_second_devices_pool_is_not_bound_and_a_closed_ones_cpus_are_free_again(
    binding: None,
) -> None:
    allowed = os.sched_getaffinity(0)
    first, second = (CPUDevice(f"{TASK}/device:CPU:{i}", 1 << 20, len(allowed)) for i in (0, 1))

    def cpus_of_pool(device: Device) -> set[int]:
        seen: list[set[int]] = []
        done = threading.Event()
        pool = device._get_pool()
        pool.submit(lambda: seen.append(os.sched_getaffinity(0)))
        pool.submit(done.set)
        assert done.wait(30)
        return seen[0]

    try:
        assert len(cpus_of_pool(first)) == 1
        assert cpus_of_pool(second) == allowed
        first.close()
        second.close()
        assert len(cpus_of_pool(second)) == 1
    finally:
        first.close()
        second.close()
