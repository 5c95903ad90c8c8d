"""Intra-op parallelism: a kernel in a device's pool thread splits its work into parts.

A kernel running in a device's pool (an expensive kernel on large inputs) may call
:func:`parallel_for` with a number of independent parts. The calling thread claims parts one at
a time from a shared counter, and queues helper jobs on the same pool, one per idle pool
thread; a helper that starts while parts remain claims them too, one that starts late finds
none and returns at once. The caller then waits only for parts that a helper has claimed, that
is, work already running: it never waits on a job queued behind other kernels. So a chain of
big kernels (a CNN) uses every pool thread for each kernel, and nothing can deadlock. A pool
busy with independent kernels (sixteen MatMuls side by side) has no idle thread: there
:func:`workers` is 1 and each kernel runs in its own thread, its parts one after another, with
no helper jobs. Outside a pool thread (an inline kernel, a direct call) the parts run one after
another in the caller. A kernel whose work is a range of rows, columns or images to cut in parts
(MatMul, AddN, a fused pool) calls :func:`split`, which sizes the parts (:func:`lead_bounds`),
times each into the kernel's :class:`Rate`, and runs the most common case, two parts on a pool
of two threads, without ``parallel_for``'s bookkeeping.

Helpers start late: a pool thread asleep takes 30-80 us to wake on a VM, a good part of a
0.3 ms product. A kernel that splits its work one part per thread (MatMul, AddN) gives the
calling thread, which starts at once, a first part (:func:`lead_bounds`) sized by how late this
pool's helpers have been starting (``PoolLoad.helper_delay``), how long the work will take (a
:class:`Rate` the kernel keeps) and how fast each thread has lately been running its parts (its
:class:`Pace`: on a shared host one vCPU can run a third slower than the other for seconds), so
that the helpers are done just before it and it never sleeps waiting for them: the longer part,
unless the calling thread has been the slower. The caller claims part 0 before it queues any
helper, so a helper that happens to be awake cannot take the caller's part.

A pool job that runs a compiled step (``Executor._finish_program``) hands a kernel whose work is
a few independent parts (``register_kernel``'s ``parts``: a dense pair's two halves) to a
:class:`Relay` instead: the same claims, but whichever thread ends the last part makes the
kernel's outputs and carries the rest of the step on, so that a caller done first returns to
the pool instead of sleeping until the helper ends and then waking (~50 us here).

A pool thread offers its core (:data:`offer_core`) whenever it goes on from a part to more
work of its own, another part or the rest of its job, so that a thread waiting for one, the
event loop's above all, runs then and not when a time slice ends. A helper that has ended its
last part does not: it is about to return to the pool, and until it does its job counts as
busy, so an offer there (the GIL released) could let the caller's next kernel find no idle
thread and run whole.

State: ``_local.submit``/``_local.load``/``_local.pace`` are set once per pool thread
(:func:`bind_worker`, the pool's thread initializer). A :class:`PoolLoad` counts the jobs
submitted to one pool and not yet finished (``active``, queued or running), averages its
helpers' start delays and lists its threads' paces; the device keeps it. A :class:`_Parts` is
one call's shared state: ``next`` (the first unclaimed part), ``finished`` (parts done),
``error`` (the first failure; no part is claimed after it), ``waiter`` (a lock the caller
sleeps on while helpers finish parts it could not claim).
Invariant: a part is claimed exactly once, under the lock, and the caller returns only when
``finished`` equals the number of parts claimed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from aiotf.devices import blas

Submit = Callable[[Callable[[], None]], Any]

_local = threading.local()

# Weight of the newest sample in the running averages (helper delays, rates): about the last
# eight matter, so a change of load shows within a few steps and one outlier moves little.
AVERAGE_WEIGHT = 0.125
# A sample counts at most this many times the average it joins. On a VM a helper now and then
# starts 1-2 ms late (its vCPU held by the host) where it usually takes ~45 us: unclamped, one
# such sample added ~200 us to mlp's delay average, the callers' parts grew to their cap (336
# of 512 columns where 272-288 ran fastest) and stayed there for dozens of products. A lasting
# change still shows: each clamped sample moves the average up by 3/8.
OUTLIER_RATIO = 4.0
# How many helper start delays the caller's part of a split outlasts the helpers' (lead_bounds):
# one for the helpers' late start, one for the caller's own wake-up had it finished first and
# slept. Measured on mlp: 0, 1, 1.5, 2 and 3 delays took 1006, 972, 950, 933 and 978 us a run.
LEAD_DELAYS = 2.0


def _keep_core() -> None:
    """Where the system has no ``sched_yield``: nothing to offer."""


# Between parts, a pool thread offers its core to any thread waiting for one (``sched_yield``,
# the GIL released, so another thread may take that too): the event loop's, woken by its timer
# or a socket while both pool threads compute, otherwise often waits for a thread's time slice
# to end (Linux pre-empts a computing thread for a woken one of equal priority only now and
# then). On the 2-vCPU machine, during cnn runs, a 1 ms heartbeat's p99 lateness went from
# 2.4-2.6 to 1.4-1.5 ms and its worst in a second from 4.0-4.5 to 2.6-3.2 ms, the runs as fast
# (``docs/performance.md``, *Pool threads offer their core*). With no thread waiting for the
# core, it returns at once.
offer_core: Callable[[], None] = getattr(os, "sched_yield", _keep_core)


class Pace:
    """How slowly one pool thread has been running its parts lately: the running average of
    each part's seconds per unit over its kernel's average (:class:`Rate`), 1.0 when on par.

    The two vCPUs of the benchmark machine are not equal, nor steady: a 512^3 product takes
    1.9-2.0 ms on one and 2.6-3.1 on the other, which one is slow changing from second to
    second (the host's other tenants), so a split sized for equal threads ended unequal more
    often than not. Only its own thread writes ``slowness``."""

    __slots__ = ("slowness",)

    def __init__(self) -> None:
        self.slowness = 1.0


class PoolLoad:
    """The jobs submitted to one pool of ``threads`` threads and not finished yet, how late its
    helper jobs start (``helper_delay``: seconds from queueing to starting, averaged) and each
    of its threads' :class:`Pace`."""

    __slots__ = ("_lock", "active", "helper_delay", "paces", "threads")

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.active = 0
        self.helper_delay = 0.0
        self.paces: list[Pace] = []
        self._lock = threading.Lock()

    def note_helper_delay(self, seconds: float) -> None:
        # Unlocked: two helpers noting at once may lose one sample of an average.
        self.helper_delay = _averaged(self.helper_delay, seconds)

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
    _local.pace = Pace()
    with load._lock:
        load.paces.append(_local.pace)


def _idle_helpers() -> int:
    load: PoolLoad | None = getattr(_local, "load", None)
    return 0 if load is None else load.idle()


def workers() -> int:
    """How many threads may work on this thread's parts now: itself, and the pool's idle
    threads (1 outside a pool thread)."""
    return _idle_helpers() + 1


def parallel_for(num_parts: int, part: Callable[[int], None], every_thread: bool = False) -> None:
    """Run ``part(i)`` for every ``i`` in ``range(num_parts)``, on this thread and idle pool
    threads; return when all have run, raising the first exception a part raised.

    With ``every_thread``, a helper is queued for each other pool thread, idle or not: a busy
    one claims what is left once it is free. For parts that may wait on one another (a group
    of independent kernels, ``executor._side_by_side``: a ``py_func`` waiting for its sibling
    would wait for ever on a caller that runs the parts one after another), and that should
    not lose a thread that frees up while they run."""
    load: PoolLoad | None = getattr(_local, "load", None)
    if load is None:  # outside a pool: here, in order
        for i in range(num_parts):
            part(i)
        return
    helpers = min(load.threads - 1 if every_thread else load.idle(), num_parts - 1)
    if helpers <= 0:  # a busy pool: here, in order, offering the core after each part
        for i in range(num_parts):  # (the job goes on after the last)
            part(i)
            offer_core()
        return
    parts = _Parts(num_parts, part)
    first = parts.claim()  # part 0 is the caller's: see lead_bounds
    submit: Submit = _local.submit
    for _ in range(helpers):
        if not submit(parts.help):  # the pool is shutting down: do the parts here
            break
    parts.run(first)
    parts.wait()


class Relay:
    """A pool kernel's work as independent ``parts``, and ``outputs()`` making its outputs of
    what they left: run by :meth:`run` on this pool thread and the idle ones, each part claimed
    once (none after one fails), and the thread that ends the last part carries on.

    Invariant: exactly one thread sees the last part end (``_finished == _num`` under the
    lock); the other threads return having touched nothing after their parts. The last clears
    what the parts hold, so a helper job queued late keeps none of the kernel alive."""

    __slots__ = ("_error", "_finished", "_lock", "_next", "_num", "_outputs", "_parts", "_then")

    def __init__(self, parts: Sequence[Callable[[], None]], outputs: Callable[[], Any]) -> None:
        self._parts = parts
        self._outputs: Callable[[], Any] | None = outputs
        self._lock = threading.Lock()
        self._num = len(parts)
        self._next = 0
        self._finished = 0
        self._error: BaseException | None = None
        self._then: Callable[[], None] | None = None

    def run(self, then: Callable[[], None]) -> bool:
        """Run the parts here and on the pool's idle threads (a helper job for each, up to the
        parts beyond this thread's first). True when this thread ended the last part, and so
        carries on itself; False when a helper did or will: that helper calls ``then()``
        (which must not raise), holding OpenBLAS to one thread as the step's own job did."""
        helpers = min(_idle_helpers(), self._num - 1)
        first = self._claim()  # the caller's, before any helper can take it
        if helpers > 0:
            self._then = then
            submit: Submit = _local.submit
            for _ in range(helpers):
                if not submit(self._help):  # the pool is shutting down: the parts here
                    break
        if not self._work(first, offer=getattr(_local, "load", None) is not None):
            return False
        self._then = None  # a helper queued late finds nothing to claim
        return True

    def outputs(self) -> Any:
        """The kernel's outputs, once the last part has ended; the first part's failure
        raised instead."""
        make, self._outputs = self._outputs, None
        if self._error is not None:
            raise self._error
        assert make is not None, "a relay's outputs taken twice"
        return make()

    def _help(self) -> None:
        blas.hold_single_threaded()  # the step's job may end while this carries the step on
        try:
            if self._work(self._claim(), offer=True):
                then, self._then = self._then, None
                assert then is not None
                then()
        finally:
            blas.release_single_threaded()

    def _claim(self) -> int:
        with self._lock:
            if self._next >= self._num:
                return -1
            self._next += 1
            return self._next - 1

    def _work(self, i: int, offer: bool) -> bool:
        """Run part ``i`` and those claimed after it; True when this thread ended the last.
        With ``offer`` (a pool thread), offer the core before each further part and before
        carrying on; not before returning to the pool (see the module docstring)."""
        while i >= 0:
            try:
                self._parts[i]()
            except BaseException as exc:  # raised by outputs(), in the thread that carries on
                with self._lock:
                    if self._error is None:
                        self._error = exc
                    self._num = self._next  # no part claimed after a failure
            with self._lock:
                self._finished += 1
                last = self._finished == self._num
                if last:
                    self._parts = ()
            if last:
                if offer:
                    offer_core()
                return True
            i = self._claim()
            if i >= 0 and offer:
                offer_core()
        return False


def split(
    extent: int,
    parts: int,
    rate: Rate,
    units: float,
    work: Callable[[int, int], None],
    align: int = 1,
    step: int = 1,
    least: int = 1,
) -> bool:
    """``work(lo, hi)`` over ranges covering ``range(extent)`` on this thread and idle pool
    threads: at most ``parts`` ranges (one per idle thread and this one), sized by
    :func:`lead_bounds` for ``units`` of work at ``rate``, every inner bound a multiple of
    ``step`` (whole row stacks or panels of a product), or else the nearest multiple of
    ``align``, no range narrower than ``align`` or ``least`` (:func:`_no_narrow_parts`); each
    range's time goes into ``rate``. False, having run nothing, where that would be one range
    (outside a pool thread, no thread idle, ``parts`` 1, or ranges that narrow): the caller does
    the work whole, untimed (the rate is of ranges run while other threads work).

    The split kernels (MatMul, AddN, a fused pool) mostly run two ranges, on a pool of two
    threads. Those run here, not through ``parallel_for``, with :class:`_Parts`'s guarantees:
    the second range goes to whichever of the helper (on starting) and the caller (on finishing
    the first) takes its lock first; the caller waits only for a range the helper took, then
    raises the first failure; a late helper job keeps nothing of the kernel alive. In a step's
    cold caches each Python call on this path costs about a microsecond: without the claims
    and finishes under a lock and the calls of ``parallel_for`` and ``_Parts``, mlp's two
    split MatMuls took ~20 us less a run (``docs/performance-log.md``, sixth session)."""
    load: PoolLoad | None = getattr(_local, "load", None)
    if load is None:
        return False
    count = -(-extent // step)
    parts = min(parts, count, load.threads - load.active + 1)
    if parts <= 1:
        return False
    seconds = units * rate.seconds_per_unit
    if step > 1:
        bounds = [min(extent, b * step) for b in lead_bounds(count, parts, seconds)]
    else:
        bounds = _no_narrow_parts(lead_bounds(extent, parts, seconds, align), max(align, least))
        parts = len(bounds) - 1
        if parts <= 1:
            return False
    clock = time.perf_counter
    if parts > 2:

        def timed(i: int) -> None:
            lo, hi = bounds[i], bounds[i + 1]
            start = clock()
            work(lo, hi)
            rate.note(units * (hi - lo) / extent, clock() - start)

        parallel_for(parts, timed)
        return True
    cut = bounds[1]
    second = threading.Lock()  # held by whoever runs the second range
    done = threading.Lock()  # released when the helper's second range has ended
    done.acquire()
    failed: list[BaseException] = []
    kept = [work]  # emptied once the caller holds the second range
    queued = clock()

    def helper() -> None:
        load.note_helper_delay(clock() - queued)
        if not second.acquire(blocking=False):
            return  # started late: the caller ran it
        try:
            start = clock()
            kept[0](cut, extent)
            rate.note(units * (extent - cut) / extent, clock() - start)
        except BaseException as exc:  # re-raised by the caller
            failed.append(exc)
        finally:
            done.release()

    if not _local.submit(helper):  # the pool is shutting down: the whole work here
        kept.clear()
        work(0, extent)
        return True
    try:
        start = clock()
        work(0, cut)
        rate.note(units * cut / extent, clock() - start)
        offer_core()
    finally:
        mine = second.acquire(blocking=False)
        if mine:
            kept.clear()
        else:  # the helper has it: wait, even when the first range failed
            done.acquire()
    if mine:
        start = clock()
        work(cut, extent)
        rate.note(units * (extent - cut) / extent, clock() - start)
        offer_core()
    elif failed:
        raise failed[0]
    return True


def _no_narrow_parts(bounds: list[int], least: int) -> list[int]:
    """``bounds`` without the inner bounds that leave a range narrower than ``least`` (its
    range joins its neighbour's). A product's part too narrow runs in another BLAS routine
    than the whole product (numpy multiplies one row as a GEMV; OpenBLAS a product of at most
    ``products.SMALL_GEMM_VOLUME`` multiply-adds by its small kernels), whose bits differ, so
    the answer would change with the split: a lone row at the end of 17 did, from run to run on
    a pool of four threads (``math_kernels.least_part``)."""
    if least <= 1:
        return bounds
    kept = [bounds[0]]
    for bound in bounds[1:-1]:
        if bound - kept[-1] >= least and bounds[-1] - bound >= least:
            kept.append(bound)
    kept.append(bounds[-1])
    return kept


def lead_bounds(extent: int, parts: int, seconds: float, align: int = 1) -> list[int]:
    """Bounds ``[0, ..., extent]`` of ``parts`` ranges for :func:`split` (fewer when
    ``extent`` is smaller: none is empty), the first (the calling thread's) sized so that all
    end at about the same time; every inner bound the nearest multiple of ``align`` unless that
    would leave a part empty.

    ``seconds`` is how long the whole work would take one thread while the others work too. A
    helper starts ``delay`` late (this pool's average); a caller that finishes first sleeps
    until the helpers are done and takes about as long again to wake. So the helpers are planned
    to finish ``delay`` before the caller, and each thread's share is scaled by its
    :class:`Pace`: with ``k`` parts, ``lead = LEAD_DELAYS * delay``, the caller's slowness
    ``c`` and the helpers' ``h``, the caller's share ``w`` of the work ends when each helper's
    ``(1 - w) / (k - 1)`` does, ``lead`` later: ``w = (lead + s h / (k - 1)) / (s c + s h /
    (k - 1))`` for ``s`` seconds; it is kept within ``1 / (k + 1)`` and ``2 / (k + 1)`` (a
    third and two thirds for two threads). Without a measured delay (outside a pool, or none
    seen yet) the ranges are equal.
    """
    parts = min(parts, extent)  # no part left empty (a kernel's part may not expect one)
    if parts <= 1:
        return [0, extent]
    load: PoolLoad | None = getattr(_local, "load", None)
    delay = 0.0 if load is None else load.helper_delay
    share = 1.0 / parts
    if load is not None and seconds > 0.0 and delay > 0.0:
        pace: Pace = _local.pace
        caller = seconds * pace.slowness
        others, helpers = 0.0, 0  # the helpers' average slowness (a loop: no call)
        for other in load.paces:
            if other is not pace:
                others += other.slowness
                helpers += 1
        helper = seconds * (others / helpers if helpers else 1.0) / (parts - 1)
        share = (LEAD_DELAYS * delay + helper) / (caller + helper)
        share = min(max(share, 1.0 / (parts + 1)), 2.0 / (parts + 1))
    first = min(extent - (parts - 1), max(1, round(extent * share)))
    if parts == 2:  # the loop below, for its one bound
        aligned = round(first / align) * align
        return [0, aligned if 0 < aligned < extent else first, extent]
    rest = extent - first
    bounds = [0]
    for i in range(parts - 1):
        bound = first + rest * i // (parts - 1)
        aligned = round(bound / align) * align
        room = extent - (parts - 1 - i)  # each later part gets at least one
        if bounds[-1] < aligned <= room:
            bound = aligned
        bounds.append(min(max(bound, bounds[-1] + 1), room))
    bounds.append(extent)
    return bounds


class Rate:
    """A running average of seconds per unit of work (a kernel's flops), from its parts' times:
    what :func:`lead_bounds` needs to know how long a split will take."""

    __slots__ = ("seconds_per_unit",)

    def __init__(self, seconds_per_unit: float) -> None:
        self.seconds_per_unit = seconds_per_unit  # the first guess, until parts have been timed

    def note(self, units: float, seconds: float) -> None:
        """A part of ``units`` took ``seconds``: into the average, and into the calling pool
        thread's :class:`Pace` as its time over the average's (clamped to OUTLIER_RATIO)."""
        if units > 0:  # unlocked, as PoolLoad.note_helper_delay
            per_unit = seconds / units
            pace: Pace | None = getattr(_local, "pace", None)
            if pace is not None and self.seconds_per_unit > 0.0:
                ratio = min(max(per_unit / self.seconds_per_unit, 1 / OUTLIER_RATIO), OUTLIER_RATIO)
                pace.slowness += (ratio - pace.slowness) * AVERAGE_WEIGHT
            self.seconds_per_unit = _averaged(self.seconds_per_unit, per_unit)


def _averaged(average: float, sample: float) -> float:
    """The running ``average`` with ``sample`` in, clamped to OUTLIER_RATIO times the average
    (an average of 0, none yet, takes its first sample unclamped)."""
    if average > 0.0:
        sample = min(sample, OUTLIER_RATIO * average)
    return average + (sample - average) * AVERAGE_WEIGHT


class _Parts:
    __slots__ = ("_error", "_finished", "_lock", "_next", "_num", "_part", "_queued", "_waiter")

    def __init__(self, num_parts: int, part: Callable[[int], None]) -> None:
        self._num = num_parts
        self._part = part
        self._lock = threading.Lock()
        # Held while the caller sleeps in wait(); the part that finishes last releases it (a
        # lock is ~30x cheaper to make than a Condition, and one per call is all it takes).
        self._waiter: threading.Lock | None = None
        self._next = 0
        self._finished = 0
        self._error: BaseException | None = None
        self._queued = time.perf_counter()  # when the helpers were (about to be) queued

    def claim(self) -> int:
        """The next unclaimed part, or -1 when none is left (or a part failed)."""
        with self._lock:
            if self._next >= self._num or self._error is not None:
                return -1
            self._next += 1
            return self._next - 1

    def help(self) -> None:
        """A helper job: note how late it started (``PoolLoad.helper_delay``), then claim parts."""
        load: PoolLoad | None = getattr(_local, "load", None)
        if load is not None:
            load.note_helper_delay(time.perf_counter() - self._queued)
        self.run()

    def run(self, first: int = -1) -> None:
        """Run ``first`` (a part already claimed, if not -1), then claim and run parts until
        none is left (the caller and every helper)."""
        i = first if first >= 0 else self.claim()
        while i >= 0:
            try:
                self._part(i)
            except BaseException as exc:  # re-raised by the caller in wait()
                with self._lock:
                    if self._error is None:
                        self._error = exc
            with self._lock:
                self._finished += 1
                waiter = self._waiter
                if waiter is not None and self._finished == self._next:
                    self._waiter = None
                    waiter.release()
            i = self.claim()
            if i >= 0:
                offer_core()

    def wait(self) -> None:
        """Block until every claimed part has finished; raise the first failure. Called by the
        caller once it can claim no more, so no part is claimed after it: ``_next`` is final."""
        waiter = None
        with self._lock:
            if self._finished < self._next:
                waiter = self._waiter = threading.Lock()
                waiter.acquire()
        if waiter is not None:
            waiter.acquire()  # released by the last part to finish
        # No part can be claimed now. A helper job still queued holds this object until its
        # thread wakes: it must not keep the kernel's closure, and so its inputs, alive.
        self._part = _no_part
        if self._error is not None:
            raise self._error


def _no_part(i: int) -> None:
    raise AssertionError(f"part {i} claimed after the call returned")
