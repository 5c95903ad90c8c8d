"""Contenders and interleaved timing.

A :class:`Contender` is one way of computing a workload's result: aiotf (``await sess.run``),
the straight-line numpy reference, or TensorFlow (``tf.compat.v1.Session.run``). Each is timed
in the same process and interleaved: each round times a batch of every contender, so drift in
the machine's speed (other tenants, thermal, frequency) falls on all of them alike. The order is
shuffled every round (seeded): a rotation would always put the same contender after the same
other one. Before each batch the loop sleeps ``SETTLE_S``, so that the threads a contender
leaves spinning (OpenBLAS's workers after numpy's matmuls spin for about 2**28 cycles;
TensorFlow's Eigen pools spin too) have gone to sleep and do not take a core from the next
one. The short probe that sizes each contender's first batch settles first too: probed right
after numpy's matmuls, aiotf's wide16 ran on one core and got half the runs a batch of the
others, so a larger share of its runs were a batch's first, which are the slowest; each later
batch is sized by the median run of the one before. Every run is timed on its own with ``perf_counter``;
statistics are over all runs of all rounds.

Sync contenders (numpy, TensorFlow) are called straight from the loop; TensorFlow's ``run``
blocks the event loop while it runs, exactly as it would in an asyncio program.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import gc
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

import aiotf
from aiotf.bench.workloads import Array, Built, Reference

FIRST_RUN_TIMEOUT = 120.0  # seconds; a hanging first run is reported, never waited on forever
TF_POOL_THREADS = 8
SETTLE_S = 0.25  # seconds of quiet before each timed batch (see the module docstring)


@dataclasses.dataclass
class Contender:
    label: str
    call: Callable[[], Any] | None = None  # a sync run
    acall: Callable[[], Awaitable[Any]] | None = None  # an async run
    close: Callable[[], Awaitable[None]] | None = None

    async def once(self) -> Any:
        if self.acall is not None:
            return await self.acall()
        assert self.call is not None
        return self.call()

    async def time_batch(self, n: int, samples: list[float]) -> None:
        clock = time.perf_counter
        if self.acall is not None:
            acall = self.acall
            for _ in range(n):
                start = clock()
                await acall()
                samples.append(clock() - start)
        else:
            call = self.call
            assert call is not None
            for _ in range(n):
                start = clock()
                call()
                samples.append(clock() - start)


def numpy_contender(reference: Reference, feeds: Sequence[Array]) -> Contender:
    """The straight-line reference; for ``requests`` workloads it serves them one by one."""
    return Contender("numpy", call=lambda: reference(feeds))


def aiotf_contender(
    label: str, built: Built, feeds: Sequence[Array], requests: int, config: Any = None
) -> Contender:
    sess = aiotf.Session(graph=built.graph, config=config)
    fetch = built.fetch
    if requests:
        (x,) = built.feeds
        feed_dicts = [{x: f} for f in feeds]

        async def run_all() -> Any:
            return await asyncio.gather(*(sess.run(fetch, fd) for fd in feed_dicts))

        return Contender(label, acall=run_all, close=sess.close)
    feed_dict = dict(zip(built.feeds, feeds, strict=True))
    return Contender(label, acall=lambda: sess.run(fetch, feed_dict), close=sess.close)


def tf_contender(tf: Any, built: Built, feeds: Sequence[Array], requests: int) -> Contender:
    sess = tf.compat.v1.Session(graph=built.graph)
    fetch = built.fetch
    if requests:
        (x,) = built.feeds
        feed_dicts = [{x: f} for f in feeds]
        pool = concurrent.futures.ThreadPoolExecutor(TF_POOL_THREADS)

        def run_all() -> Any:
            return list(pool.map(lambda fd: sess.run(fetch, fd), feed_dicts))

        async def close_pool() -> None:
            pool.shutdown(wait=True)
            sess.close()

        return Contender("tensorflow", call=run_all, close=close_pool)
    feed_dict = dict(zip(built.feeds, feeds, strict=True))

    async def close() -> None:
        sess.close()

    return Contender("tensorflow", call=lambda: sess.run(fetch, feed_dict), close=close)


async def first_run(contender: Contender) -> Any:
    async with asyncio.timeout(FIRST_RUN_TIMEOUT):
        return await contender.once()


def compare(got: Any, want: Any, rtol: float, atol: float) -> dict[str, Any]:
    """Whether ``got`` matches ``want`` within ``atol + rtol * |want|``, and by how much not."""
    try:
        g = np.asarray(np.concatenate(got) if isinstance(got, list) else got, np.float64)
        w = np.asarray(np.concatenate(want) if isinstance(want, list) else want, np.float64)
    except (TypeError, ValueError) as e:
        return {"ok": False, "detail": f"not comparable: {e}"}
    if g.shape != w.shape:
        return {"ok": False, "detail": f"shape {list(g.shape)} != reference {list(w.shape)}"}
    err = np.abs(g - w)
    max_abs = float(err.max()) if err.size else 0.0
    ok = bool(np.all(err <= atol + rtol * np.abs(w))) and bool(np.isfinite(g).all())
    result: dict[str, Any] = {"ok": ok, "max_abs_err": max_abs, "rtol": rtol, "atol": atol}
    if not ok:
        result["detail"] = f"max abs error {max_abs:.3g} exceeds atol {atol:g} + rtol {rtol:g}"
    return result


async def time_interleaved(
    contenders: Sequence[Contender],
    rounds: int,
    budget: float,
    settle: float = SETTLE_S,
    max_batch: int = 100_000,
) -> dict[str, list[float]]:
    """Per-run times of every contender, ``rounds`` interleaved batches of ~budget/rounds each,
    in a shuffled order every round, ``settle`` seconds of quiet before each batch.

    A batch's size follows the median run of its contender's batch before (the first batch's,
    the quicker of two probe runs): sized once by the probe, a contender whose two probe runs
    both came out slow ran every batch short, so more of its runs were a batch's first, which
    are the slowest (wide16's aiotf once got 2 runs a batch against TensorFlow's 5; its first run
    of a batch is ~5% slower than the next, TensorFlow's ~2%)."""
    batch: dict[str, int] = {}
    per_batch = budget / rounds

    def size(seconds: float) -> int:
        return max(1, min(max_batch, int(per_batch / max(seconds, 1e-7))))

    for c in contenders:
        probe: list[float] = []
        await asyncio.sleep(settle)  # sized on quiet cores, as it is timed: not on what the
        await c.time_batch(2, probe)  # contender before left spinning
        batch[c.label] = size(min(probe))
    samples: dict[str, list[float]] = {c.label: [] for c in contenders}
    order = list(contenders)
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for c in order:
            await asyncio.sleep(settle)
            runs = samples[c.label]
            await c.time_batch(batch[c.label], runs)
            batch[c.label] = size(float(np.median(runs[-batch[c.label] :])))
        gc.collect()
    return samples


def summarize(samples: Sequence[float]) -> dict[str, float | int]:
    p10, median, p90 = np.percentile(np.asarray(samples), [10, 50, 90])
    return {
        "median_s": float(median),
        "p10_s": float(p10),
        "p90_s": float(p90),
        "runs": len(samples),
    }
