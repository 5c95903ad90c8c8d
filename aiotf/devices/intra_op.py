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

Helpers start late: a pool thread asleep takes 30-80 us to wake on a VM, a good part of a
0.3 ms product. A kernel that splits its work one part per thread (MatMul, AddN) gives the
calling thread, which starts at once, a first part (:func:`lead_bounds`) sized by how late this
pool's helpers have been starting (``PoolLoad.helper_delay``), how long the work will take (a
:class:`Rate` the kernel keeps) and how fast each thread has lately been running its parts (its
:class:`Pace`: on a shared host one vCPU can run a third slower than the other for seconds), so
that the helpers are done just before it and it never sleeps waiting for them: the longer part,
unless the calling thread has been the slower. The caller claims part 0 before it queues any
helper, so a helper that happens to be awake cannot take the caller's part.

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

import threading
import time
from collections.abc import Callable
from typing import Any

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

    def helpers_slowness(self, caller: Pace) -> float:
        """The average slowness of the pool's threads but ``caller``, those a split's helpers
        run on (1.0 when there are none yet)."""
        others = [pace.slowness for pace in self.paces if pace is not caller]
        return sum(others) / len(others) if others else 1.0

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
    if every_thread:
        load: PoolLoad | None = getattr(_local, "load", None)
        helpers = 0 if load is None else min(load.threads - 1, num_parts - 1)
    else:
        helpers = min(_idle_helpers(), num_parts - 1)
    if helpers <= 0:
        for i in range(num_parts):
            part(i)
        return
    parts = _Parts(num_parts, part)
    first = parts.claim()  # part 0 is the caller's: see lead_bounds
    submit: Submit = _local.submit
    for _ in range(helpers):
        if not submit(parts.help):  # the pool is shutting down: do the parts here
            break
    parts.run(first)
    parts.wait()


def lead_bounds(extent: int, parts: int, seconds: float, align: int = 1) -> list[int]:
    """Bounds ``[0, ..., extent]`` of ``parts`` ranges for :func:`parallel_for` (fewer when
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
        helper = seconds * load.helpers_slowness(pace) / (parts - 1)
        share = (LEAD_DELAYS * delay + helper) / (caller + helper)
        share = min(max(share, 1.0 / (parts + 1)), 2.0 / (parts + 1))
    first = min(extent - (parts - 1), max(1, round(extent * share)))
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

    def seconds(self, units: float) -> float:
        return units * self.seconds_per_unit

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
