"""Intra-op parallelism: a pool kernel's parts on the idle threads of its device's pool."""

from __future__ import annotations

import asyncio
import functools
import itertools
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

import aiotf
from aiotf.devices import DeviceMgr, add_devices, intra_op
from aiotf.devices.device import Device

TASK = "/job:localhost/replica:0/task:0"
STALL_S = 30.0  # generous: only a hang reaches it
_T = TypeVar("_T")


@pytest.fixture
def device() -> Iterator[Device]:
    config = aiotf.ConfigProto(device_count={"CPU": 1}, inter_op_parallelism_threads=2)
    mgr = DeviceMgr(add_devices(config, TASK))
    yield mgr.client_device
    mgr.close()


@pytest.fixture
def offers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads that offered their core (``intra_op.offer_core``), by name, in order."""
    seen: list[str] = []
    monkeypatch.setattr(
        intra_op, "offer_core", lambda: seen.append(threading.current_thread().name)
    )
    return seen


def test_outside_a_pool_the_parts_run_in_the_caller_in_order(offers: list[str]) -> None:
    seen: list[tuple[int, str]] = []
    assert intra_op.workers() == 1
    intra_op.parallel_for(4, lambda i: seen.append((i, threading.current_thread().name)))
    assert seen == [(i, threading.current_thread().name) for i in range(4)]
    assert offers == []  # an inline kernel's thread (the event loop's) keeps its core


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


@pytest.mark.parametrize("how", ["parallel_for", "split"])
async def test_the_caller_returns_only_once_a_helpers_part_has_finished(
    device: Device, how: str
) -> None:
    helper_started = threading.Event()
    finished: list[int] = []

    def part(i: int) -> None:
        if i == 0:  # the caller's: done at once, once the helper holds part 1
            assert helper_started.wait(STALL_S)
        else:
            helper_started.set()
            time.sleep(0.05)  # the caller sleeps on the waiter meanwhile
        finished.append(i)

    def kernel() -> list[int]:
        if how == "parallel_for":
            intra_op.parallel_for(2, part)
        else:  # two ranges of one: part 0 here, part 1 on the helper
            assert intra_op.split(2, 2, intra_op.Rate(1e-9), 2.0, lambda lo, hi: part(lo))
        return list(finished)

    assert await device.run_in_pool(kernel) == [0, 1]


async def test_a_busy_pool_runs_a_kernel_whole_in_its_own_thread(
    device: Device, offers: list[str]
) -> None:
    release = threading.Event()
    started = threading.Event()

    def blocker() -> None:  # keeps the pool's other thread busy
        started.set()
        release.wait(STALL_S)

    def kernel() -> tuple[int, set[str], bool]:
        threads: set[str] = set()
        intra_op.parallel_for(3, lambda i: threads.add(threading.current_thread().name))
        split = intra_op.split(10, 2, intra_op.Rate(1e-9), 10.0, lambda lo, hi: None)
        return intra_op.workers(), threads, split

    blocking = asyncio.ensure_future(device.run_in_pool(blocker))
    await asyncio.to_thread(started.wait, STALL_S)
    workers, threads, split = await device.run_in_pool(kernel)
    release.set()
    await blocking
    assert workers == 1 and len(threads) == 1  # no helper: nothing idle to help
    assert not split  # split runs nothing, the kernel runs its work whole
    assert offers == list(threads) * 3  # the core offered after each part all the same


@pytest.mark.parametrize("how", ["parallel_for", "split", "relay"])
async def test_a_pool_thread_offers_its_core_between_parts_and_before_carrying_on(
    device: Device, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """So that a thread waiting for a core (the event loop's, woken by its timer while both
    pool threads compute) gets one when a part ends, not when a time slice does; but not after
    a helper's last part, when it is about to return to the pool."""
    both = threading.Barrier(2, timeout=STALL_S)  # passes only if two parts run at once
    events: list[tuple[str, str]] = []  # (thread, "part" or "offer"), in order
    carried: list[str] = []

    def note(what: str) -> None:
        events.append((threading.current_thread().name, what))

    monkeypatch.setattr(intra_op, "offer_core", lambda: note("offer"))

    def part(i: int) -> None:
        if i < 2:
            both.wait()
        note("part")

    def kernel() -> str:
        if how == "parallel_for":
            intra_op.parallel_for(5, part)
        elif how == "split":
            assert intra_op.split(2, 2, intra_op.Rate(1e-9), 2.0, lambda lo, hi: part(lo))
        else:
            relay = intra_op.Relay([functools.partial(part, i) for i in range(5)], list)
            done = threading.Event()

            def then() -> None:
                carried.append(threading.current_thread().name)
                done.set()

            if relay.run(then):
                then()
            assert done.wait(STALL_S)
        return threading.current_thread().name

    caller = await device.run_in_pool(kernel)
    by_thread = {name: [what for n, what in events if n == name] for name, _ in events}
    assert len(by_thread) == 2  # both threads ran parts
    for name, seen in by_thread.items():
        assert seen[0] == "part" and all(a != b for a, b in itertools.pairwise(seen))
        ends_with_offer = seen[-1] == "offer"
        if how == "parallel_for":  # each goes on after its last part: to wait, or to the pool
            assert not ends_with_offer
        elif how == "split":  # the caller's range, then its offer; the helper's range alone
            assert seen == (["part", "offer"] if name == caller else ["part"])
        else:  # only the thread that carries the step on offers after its last part
            assert ends_with_offer == (carried == [name])


@pytest.mark.parametrize("how", ["parallel_for", "split", "relay"])
async def test_a_helper_done_is_idle_for_the_callers_next_kernel(
    device: Device, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A helper offered its core after its last part (the GIL released, the core maybe given
    away for a while) still counted as busy, and the caller's next kernel ran whole (found by
    review: ``test_an_idle_pool_thread_takes_parts`` failed 7 times in 1,500 runs)."""
    caller: list[threading.Thread] = []

    def offer() -> None:  # a yield that gave the core away: back 50 ms later
        if threading.current_thread() is not caller[0]:
            time.sleep(0.05)

    monkeypatch.setattr(intra_op, "offer_core", offer)
    helper_done = threading.Event()

    def part(i: int) -> None:
        if i == 0:  # the caller's, ended once the helper's has
            assert helper_done.wait(STALL_S)
        else:
            helper_done.set()

    def kernel() -> int:
        caller.append(threading.current_thread())
        if how == "parallel_for":
            intra_op.parallel_for(2, part)
        elif how == "split":
            assert intra_op.split(2, 2, intra_op.Rate(1e-9), 2.0, lambda lo, hi: part(lo))
        else:
            relay = intra_op.Relay([lambda: part(0), lambda: part(1)], list)
            assert relay.run(lambda: pytest.fail("the caller ends last"))
        return intra_op.workers()

    assert await device.run_in_pool(kernel) == 2  # the next kernel may split again


async def test_a_failing_part_is_raised_and_stops_the_claiming(device: Device) -> None:
    ran: list[int] = []
    lock = threading.Lock()

    def part(i: int) -> None:
        with lock:
            ran.append(i)
            first = len(ran) == 1
        if first:  # the caller's part 0, or a helper's part run before it
            raise ValueError("the first part failed")

    def kernel() -> None:
        intra_op.parallel_for(50, part)

    with pytest.raises(ValueError, match="the first part failed"):
        await device.run_in_pool(kernel)
    assert len(ran) < 50  # parts claimed before the failure ran; none after it


def _in_a_pool_thread(load: intra_op.PoolLoad, fn: Callable[[], _T], submit: intra_op.Submit) -> _T:
    """``fn()`` in a fresh thread bound as a pool thread of ``load`` (jobs go to ``submit``)."""
    result: list[_T] = []

    def body() -> None:
        intra_op.bind_worker(submit, load)
        result.append(fn())

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(STALL_S)
    assert result, "the pool thread failed"
    return result[0]


def _no_pool(fn: Callable[[], None]) -> bool:
    return False  # a pool shutting down: the caller does every part


def test_without_a_measured_delay_the_ranges_are_equal() -> None:
    assert intra_op.lead_bounds(10, 2, 1e-3) == [0, 5, 10]  # not a pool thread
    load = intra_op.PoolLoad(2)
    assert _in_a_pool_thread(load, lambda: intra_op.lead_bounds(9, 3, 1e-3), _no_pool) == [
        0,
        3,
        6,
        9,
    ]


def test_the_callers_range_is_longer_by_the_helpers_start_delay() -> None:
    load = intra_op.PoolLoad(2)
    load.helper_delay = 50e-6
    # 1 ms of work, helpers 50 us late: the caller ends at (1000 + 2 * 50) / 2 = 550 us.
    bounds = _in_a_pool_thread(load, lambda: intra_op.lead_bounds(1000, 2, 1e-3), _no_pool)
    assert bounds == [0, 550, 1000]
    # Three threads: the caller ends at (1000 + 2 * 2 * 50) / 3 = 400 us, helpers 300 us each.
    bounds = _in_a_pool_thread(load, lambda: intra_op.lead_bounds(1000, 3, 1e-3), _no_pool)
    assert bounds == [0, 400, 700, 1000]
    # In whole blocks: 550 is nearer 544 than 560; 400 and 700 nearer 400 and 704.
    bounds = _in_a_pool_thread(load, lambda: intra_op.lead_bounds(1000, 2, 1e-3, 16), _no_pool)
    assert bounds == [0, 544, 1000]
    bounds = _in_a_pool_thread(load, lambda: intra_op.lead_bounds(1000, 3, 1e-3, 16), _no_pool)
    assert bounds == [0, 400, 704, 1000]
    # Too short to align: rounding 5 to 0 would leave the caller nothing to do.
    bounds = _in_a_pool_thread(load, lambda: intra_op.lead_bounds(10, 2, 1e-3, 16), _no_pool)
    assert bounds == [0, 6, 10]
    # A delay as long as the work: the caller's share stops at two thirds (for two threads).
    load.helper_delay = 1e-3
    bounds = _in_a_pool_thread(load, lambda: intra_op.lead_bounds(300, 2, 1e-3), _no_pool)
    assert bounds == [0, 200, 300]


def test_each_threads_share_follows_its_pace() -> None:
    """The vCPUs of a shared host run at different speeds: a split gives the slower thread less."""
    load = intra_op.PoolLoad(2)
    load.helper_delay = 50e-6
    helper = intra_op.Pace()
    load.paces.append(helper)  # the pool's other thread

    def bounds(caller_slowness: float) -> list[int]:
        intra_op._local.pace.slowness = caller_slowness
        return intra_op.lead_bounds(1000, 2, 1e-3)

    # A helper 1.5x slower: the caller's share is (100 + 1500) / (1000 + 1500) us of work.
    helper.slowness = 1.5
    assert _in_a_pool_thread(load, lambda: bounds(1.0), _no_pool) == [0, 640, 1000]
    # A caller 2x slower than the helper gets less than half: (100 + 1000) / (2000 + 1000).
    helper.slowness = 1.0
    assert _in_a_pool_thread(load, lambda: bounds(2.0), _no_pool) == [0, 367, 1000]
    # ... but never less than a third.
    assert _in_a_pool_thread(load, lambda: bounds(4.0), _no_pool) == [0, 333, 1000]


def test_a_rate_notes_each_pool_threads_pace() -> None:
    rate = intra_op.Rate(1e-9)

    def note_slow_parts() -> float:
        for _ in range(100):
            rate.seconds_per_unit = 1e-9  # the kernel's average, held still
            rate.note(1000, 3e-6)  # this thread: three times as long
        pace: intra_op.Pace = intra_op._local.pace
        return pace.slowness

    assert 2.9 < _in_a_pool_thread(intra_op.PoolLoad(2), note_slow_parts, _no_pool) <= 3.0
    rate.note(1000, 1e-6)  # not a pool thread: no pace, the average alone
    assert rate.seconds_per_unit > 1e-9


def test_no_range_is_empty_or_reversed() -> None:
    """Regression (found by review): a long helper delay gave three images to three threads as
    [0, 2, 2, 3], and a split pool failed on its empty part; and an inner bound rounded up to a
    block could pass the next one."""
    load = intra_op.PoolLoad(4)
    helper = intra_op.Pace()
    load.paces.append(helper)

    def all_bounds() -> list[tuple[int, int, int, list[int]]]:
        found = []
        for delay in (0.0, 20e-6, 1e-4, 1e-3, 1e-2):
            load.helper_delay = delay
            for caller, other in ((1.0, 1.0), (0.25, 4.0), (4.0, 0.25)):  # paces too
                intra_op._local.pace.slowness, helper.slowness = caller, other
                for extent in range(1, 80):
                    for parts in range(1, 6):
                        for align in (1, 3, 16):
                            bounds = intra_op.lead_bounds(extent, parts, 1e-3, align)
                            found.append((extent, parts, align, bounds))
        return found

    for extent, parts, align, bounds in _in_a_pool_thread(load, all_bounds, _no_pool):
        assert bounds[0] == 0 and bounds[-1] == extent, (extent, parts, align, bounds)
        assert len(bounds) - 1 == min(parts, extent), (extent, parts, align, bounds)
        assert all(a < b for a, b in zip(bounds[:-1], bounds[1:], strict=True)), bounds


def test_the_caller_runs_part_0_and_a_helper_notes_its_delay() -> None:
    load = intra_op.PoolLoad(2)
    in_helper = threading.local()
    ran: list[tuple[int, bool]] = []

    def eager(fn: Callable[[], None]) -> bool:  # a helper that starts at once, before the caller
        in_helper.yes = True
        try:
            fn()
        finally:
            in_helper.yes = False
        return True

    def kernel() -> None:
        intra_op.parallel_for(3, lambda i: ran.append((i, getattr(in_helper, "yes", False))))

    _in_a_pool_thread(load, lambda: kernel(), eager)
    assert sorted(ran) == [(0, False), (1, True), (2, True)]  # the helper took all but part 0
    assert load.helper_delay > 0.0


def test_a_rate_averages_its_samples() -> None:
    rate = intra_op.Rate(1e-9)
    assert 1000 * rate.seconds_per_unit == pytest.approx(1e-6)
    for _ in range(100):
        rate.note(1000, 2e-6)
    assert 1000 * rate.seconds_per_unit == pytest.approx(2e-6, rel=1e-3)
    rate.note(0, 1.0)  # no work: no sample
    assert 1000 * rate.seconds_per_unit == pytest.approx(2e-6, rel=1e-3)


def test_one_late_helper_moves_the_delay_average_by_at_most_three_eighths() -> None:
    # A helper whose vCPU the host held for 1.8 ms, among ones starting 45 us late: unclamped,
    # it took the average to ~270 us and the callers' parts to their cap for dozens of splits.
    load = intra_op.PoolLoad(2)
    for _ in range(100):
        load.note_helper_delay(45e-6)
    assert load.helper_delay == pytest.approx(45e-6, rel=1e-3)
    load.note_helper_delay(1.8e-3)
    assert load.helper_delay == pytest.approx(45e-6 * (1 + 3 / 8), rel=1e-3)
    for _ in range(40):  # a lasting change still shows
        load.note_helper_delay(1.8e-3)
    assert load.helper_delay == pytest.approx(1.8e-3, rel=0.05)


def test_a_rate_clamps_an_outlier_and_a_first_delay_comes_in_unclamped() -> None:
    rate = intra_op.Rate(1e-9)
    rate.note(1000, 1.0)  # a part that took a second: at most four times the average
    assert 1000 * rate.seconds_per_unit == pytest.approx(1e-6 * (1 + 3 / 8))
    load = intra_op.PoolLoad(2)  # no delay seen yet: the first sample comes in unclamped
    load.note_helper_delay(1e-3)
    assert load.helper_delay == pytest.approx(1e-3 * intra_op.AVERAGE_WEIGHT)


# -- split: a kernel's ranges, two of them without parallel_for's parts ------------------------


def test_outside_a_pool_split_runs_nothing_and_says_so() -> None:
    ran: list[tuple[int, int]] = []
    rate = intra_op.Rate(1e-9)
    assert not intra_op.split(100, 2, rate, 1e6, lambda lo, hi: ran.append((lo, hi)))
    assert ran == [] and rate.seconds_per_unit == 1e-9  # the caller does the work, untimed


async def test_split_runs_two_ranges_at_once_and_times_each(device: Device) -> None:
    both = threading.Barrier(2, timeout=STALL_S)  # passes only if the two ranges run at once
    ran: list[tuple[int, int, str]] = []
    rate = intra_op.Rate(1.0)  # a first guess far off: any range's time moves it

    def work(lo: int, hi: int) -> None:
        ran.append((lo, hi, threading.current_thread().name))
        both.wait()

    def kernel() -> bool:
        return intra_op.split(1000, 8, rate, 1000.0, work, align=16)

    assert await device.run_in_pool(kernel)
    (lo0, cut, caller), (lo1, end, helper) = sorted(ran)
    assert (lo0, end) == (0, 1000) and lo1 == cut and cut % 16 == 0  # one range each, no gap
    assert caller != helper
    assert rate.seconds_per_unit < 1.0  # two samples of well under a second per unit


class _Late:
    """A pool's submit whose helper jobs start only when :meth:`run` says: after the caller."""

    def __init__(self) -> None:
        self.jobs: list[Callable[[], None]] = []

    def __call__(self, fn: Callable[[], None]) -> bool:
        self.jobs.append(fn)
        return True

    def run(self) -> None:
        for job in self.jobs:
            job()


def test_a_late_helper_finds_both_ranges_run_and_keeps_nothing_alive(offers: list[str]) -> None:
    import gc
    import weakref

    class Inputs:  # what a kernel's work closes over: its arrays
        pass

    load = intra_op.PoolLoad(2)
    late = _Late()
    ran: list[tuple[int, int, str]] = []

    def kernel() -> weakref.ref[Inputs]:
        inputs = Inputs()

        def work(lo: int, hi: int, inputs: Inputs = inputs) -> None:
            ran.append((lo, hi, threading.current_thread().name))

        assert intra_op.split(100, 2, intra_op.Rate(1e-9), 100.0, work)
        return weakref.ref(inputs)

    kept = _in_a_pool_thread(load, kernel, late)
    gc.collect()
    assert kept() is None  # the queued helper job holds no reference to the work
    assert [(lo, hi) for lo, hi, _ in ran] == [(0, 50), (50, 100)]
    assert len({name for _, _, name in ran}) == 1  # both in the caller
    assert offers == [name for _, _, name in ran]  # the core offered after each range
    late.run()  # the helper starts at last: nothing left to run
    assert len(ran) == 2 and len(offers) == 2
    assert load.helper_delay > 0.0  # ... but its delay is noted, the long ones most of all


def test_a_failure_in_either_range_is_raised_by_the_caller_once_both_are_done() -> None:
    load = intra_op.PoolLoad(2)
    order: list[str] = []

    def eager(fn: Callable[[], None]) -> bool:  # the helper runs at once, before the caller
        fn()
        return True

    def failing_helper_range(lo: int, hi: int) -> None:
        order.append(f"{lo}")
        if lo > 0:
            raise ValueError("the helper's range failed")

    def run(work: Callable[[int, int], None], submit: intra_op.Submit) -> str:
        def kernel() -> str:
            try:
                intra_op.split(10, 2, intra_op.Rate(1e-9), 10.0, work)
            except ValueError as e:
                order.append("raised")
                return str(e)
            return "no error"

        return _in_a_pool_thread(load, kernel, submit)

    assert run(failing_helper_range, eager) == "the helper's range failed"
    assert order == ["5", "0", "raised"]  # the caller ran its own range, then raised

    order.clear()
    late = _Late()

    def failing_first_range(lo: int, hi: int) -> None:
        order.append(f"{lo}")
        if lo == 0:
            raise ValueError("the caller's range failed")

    assert run(failing_first_range, late) == "the caller's range failed"
    late.run()
    assert order == ["0", "raised"]  # the second range never runs after the failure


def test_split_in_a_pool_shutting_down_runs_the_work_whole_here() -> None:
    ran: list[tuple[int, int]] = []

    def kernel() -> bool:
        return intra_op.split(
            100, 2, intra_op.Rate(1e-9), 100.0, lambda lo, hi: ran.append((lo, hi))
        )

    assert _in_a_pool_thread(intra_op.PoolLoad(2), kernel, _no_pool)
    assert ran == [(0, 100)]


def test_split_in_more_ranges_covers_the_extent_in_whole_steps() -> None:
    load = intra_op.PoolLoad(4)
    ran: list[tuple[int, int]] = []
    lock = threading.Lock()

    def eager(fn: Callable[[], None]) -> bool:
        fn()
        return True

    def work(lo: int, hi: int) -> None:
        with lock:
            ran.append((lo, hi))

    def kernel() -> bool:
        return intra_op.split(100, 3, intra_op.Rate(1e-9), 100.0, work, step=8)

    assert _in_a_pool_thread(load, kernel, eager)
    ranges = sorted(ran)
    assert len(ranges) == 3 and ranges[0][0] == 0 and ranges[-1][1] == 100
    # no gap or overlap
    assert all(a[1] == b[0] for a, b in zip(ranges[:-1], ranges[1:], strict=True))
    assert all(lo % 8 == 0 for lo, _ in ranges)  # whole steps: row stacks or panels


def test_no_range_is_narrower_than_least_its_neighbour_takes_it() -> None:
    narrow = intra_op._no_narrow_parts
    assert narrow([0, 16, 17], 16) == [0, 17]  # a lone last row: one range
    assert narrow([0, 16, 32, 40], 16) == [0, 16, 40]
    assert narrow([0, 8, 32, 48], 16) == [0, 32, 48]
    assert narrow([0, 16, 32, 48], 16) == [0, 16, 32, 48]
    assert narrow([0, 1, 2, 3], 1) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("extent", "align", "least", "splits"),
    [(17, 16, 1, False), (40, 16, 1, True), (40, 16, 24, False), (100, 1, 60, False)],
)
def test_split_makes_no_range_narrower_than_align_or_least(
    extent: int, align: int, least: int, splits: bool
) -> None:
    """(found by review: a product of 17 rows split at 16 made its last row as a GEMV, other
    bits than the whole product's, run to run on a pool of four threads)"""
    load = intra_op.PoolLoad(4)
    ran: list[tuple[int, int]] = []

    def eager(fn: Callable[[], None]) -> bool:
        fn()
        return True

    def kernel() -> bool:
        rate = intra_op.Rate(1e-9)
        return intra_op.split(extent, 4, rate, 1e6, lambda lo, hi: ran.append((lo, hi)), align,
                              least=least)  # fmt: skip

    assert _in_a_pool_thread(load, kernel, eager) == splits
    if splits:
        assert sorted(ran)[0][0] == 0 and max(hi for _, hi in ran) == extent
        assert all(hi - lo >= max(align, least) for lo, hi in ran)
    else:
        assert ran == []  # the caller does the work whole


async def test_a_relay_is_carried_on_by_the_helper_that_ends_the_last_part(
    device: Device,
) -> None:
    """The caller, done with its part first, returns False and the helper calls ``then``:
    the relay's outputs, made there, are the parts' whichever thread ran them."""
    helper_started = threading.Event()
    made: dict[int, str] = {}
    carried: list[tuple[str, list[str]]] = []
    done = threading.Event()

    def part(i: int) -> None:
        if i == 0:  # the caller's: ends once the helper holds part 1
            assert helper_started.wait(STALL_S)
        else:
            helper_started.set()
            time.sleep(0.05)
        made[i] = threading.current_thread().name

    relay = intra_op.Relay([lambda: part(0), lambda: part(1)], lambda: [made[0], made[1]])

    def then() -> None:
        carried.append((threading.current_thread().name, relay.outputs()))
        done.set()

    def kernel() -> tuple[bool, str]:
        return relay.run(then), threading.current_thread().name

    last, caller = await device.run_in_pool(kernel)
    assert not last  # the caller returned while the helper ran part 1
    assert await asyncio.to_thread(done.wait, STALL_S)
    ((thread, outputs),) = carried
    assert thread != caller and outputs == [caller, thread]


async def test_a_relay_whose_helper_starts_late_is_the_callers_alone(device: Device) -> None:
    """A helper queued behind another job finds every part claimed: the caller ran them and
    carries on; the late helper neither runs a part nor calls ``then``, nor keeps them."""
    release = threading.Event()
    started = threading.Event()
    ran: list[str] = []

    def blocker() -> None:  # queued first: the helper waits behind it
        started.set()
        release.wait(STALL_S)

    class Big:  # what a part holds: gone once the relay ends, though the helper is queued
        pass

    big = Big()
    held = weakref.ref(big)

    def part(x: Big) -> None:
        ran.append(threading.current_thread().name)

    relay = intra_op.Relay([functools.partial(part, big), functools.partial(part, big)], list)
    del big

    def kernel() -> bool:
        load: intra_op.PoolLoad = intra_op._local.load
        load.active -= 1  # the blocker looks idle: a helper is queued behind it
        try:
            return relay.run(lambda: pytest.fail("then called though the caller ended last"))
        finally:
            load.active += 1

    blocking = asyncio.ensure_future(device.run_in_pool(blocker))
    await asyncio.to_thread(started.wait, STALL_S)
    assert await device.run_in_pool(kernel)
    assert len(set(ran)) == 1 and len(ran) == 2  # both parts on the caller's thread
    assert held() is None  # the queued helper holds the relay, not what its parts held
    release.set()
    await blocking
    assert relay.outputs() == []


def test_a_relay_outside_a_pool_runs_its_parts_here_in_order(offers: list[str]) -> None:
    seen: list[int] = []
    relay = intra_op.Relay([lambda: seen.append(0), lambda: seen.append(1)], lambda: seen)
    assert relay.run(lambda: pytest.fail("no helper to carry on"))
    assert relay.outputs() == [0, 1]
    assert offers == []  # not a pool thread: it keeps its core


async def test_a_relays_failure_is_raised_by_its_outputs_and_stops_the_claiming(
    device: Device,
) -> None:
    ran: list[int] = []
    lock = threading.Lock()
    carried = threading.Event()
    errors: list[BaseException] = []

    def part(i: int) -> None:
        with lock:
            ran.append(i)
            first = len(ran) == 1
        if first:
            raise ValueError("a part failed")

    relay = intra_op.Relay([functools.partial(part, i) for i in range(50)], lambda: "made")

    def outputs() -> None:
        try:
            relay.outputs()
        except ValueError as exc:
            errors.append(exc)

    def then() -> None:
        outputs()
        carried.set()

    def kernel() -> None:
        if relay.run(then):
            outputs()
            carried.set()

    await device.run_in_pool(kernel)
    assert await asyncio.to_thread(carried.wait, STALL_S)
    assert [str(e) for e in errors] == ["a part failed"]
    assert len(ran) < 50  # parts claimed before the failure ran; none after it
