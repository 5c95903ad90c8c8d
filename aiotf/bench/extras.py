"""What the suite reports besides per-workload latency.

- ``lateness``: the worst (and 99th percentile) lateness of a 1 ms heartbeat task while aiotf
  runs are in flight, against the same heartbeat on an idle loop. A kernel that runs on the
  loop thread for 20 ms shows up here as ~20 ms.
- ``build_scaling``: chains of 1,000 and 10,000 nodes (alternating Mul and AddV2 of the fed x): graph construction, the first run
  of the signature (which builds the executor) and the per-run cost, each also per node; the
  heartbeat's worst lateness during the build; TensorFlow's figures when it is present.
- ``import_time``: ``import aiotf`` in a fresh interpreter (and ``import tensorflow``).
- ``peak_memory``: tracemalloc's peak over one run of mlp and cnn, the device allocator's peak
  over a traced run (live tensor bytes the interpreted executor charged: compiled steps keep
  no books), and the numpy reference's tracemalloc peak.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import numpy as np

import aiotf
from aiotf.bench.workloads import WORKLOADS, Workload

HEARTBEAT = 0.001
CHAIN_FEED = 0.5
CHAIN_LIMIT = 1.0  # y -> y * 0.5 + 0.5 converges to 1.0 exactly in float32


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


async def run_extras(which: frozenset[str], quick: bool, tf: Any) -> dict[str, Any]:
    jobs: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
        ("lateness", "lateness", lambda: loop_lateness(quick)),
        ("build", "build_scaling", lambda: build_scaling(quick, tf)),
        ("import", "import_time", lambda: import_time(quick, tf)),
        ("memory", "peak_memory", peak_memory),
    ]
    report: dict[str, Any] = {}
    for key, field, job in jobs:
        if key in which:
            try:
                report[field] = await job()
            except Exception as e:  # an extra that fails is reported, never fatal
                report[field] = {"status": f"unsupported: {_one_line(e)}"}
    return report


# -- heartbeat -------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def heartbeat() -> AsyncIterator[list[float]]:
    """A task that sleeps 1 ms at a time and records how late each wake-up was (seconds)."""
    late: list[float] = []
    stop = asyncio.Event()

    async def beat() -> None:
        clock = time.perf_counter
        while not stop.is_set():
            due = clock() + HEARTBEAT
            await asyncio.sleep(HEARTBEAT)
            late.append(max(0.0, clock() - due))

    task = asyncio.create_task(beat())
    await asyncio.sleep(0)
    try:
        yield late
    finally:
        stop.set()
        await task  # ends within one beat


def _lateness_stats(late: list[float]) -> dict[str, float | int]:
    if not late:
        return {"beats": 0, "max_ms": float("nan"), "p99_ms": float("nan")}
    return {
        "beats": len(late),
        "max_ms": max(late) * 1e3,
        "p99_ms": float(np.percentile(late, 99)) * 1e3,
    }


def _session_for(workload: Workload) -> tuple[aiotf.Session, Any, dict[Any, Any], list[Any]]:
    params = workload.make_params(np.random.default_rng(0))
    built = workload.build(params)
    feeds = workload.feeds()
    sess = aiotf.Session(graph=built.graph)
    if workload.requests:
        (x,) = built.feeds
        return sess, built.fetch, {}, [{x: f} for f in feeds]
    return sess, built.fetch, dict(zip(built.feeds, feeds, strict=True)), []


async def loop_lateness(quick: bool) -> dict[str, Any]:
    duration = 0.05 if quick else 1.0
    async with heartbeat() as late:
        await asyncio.sleep(duration)
    report: dict[str, Any] = {"idle": _lateness_stats(late)}
    for name in ("mlp", "cnn", "concurrent"):
        report[name] = await _lateness_during(WORKLOADS[name], duration)
    for name in ("cnn", "concurrent"):
        report[f"{name}, GC frozen"] = await _lateness_during(WORKLOADS[name], duration, True)
    return report


async def _lateness_during(
    workload: Workload, duration: float, freeze: bool = False
) -> dict[str, Any]:
    """The heartbeat's lateness while ``workload`` runs; ``freeze``: with the objects that
    exist once the session is built frozen out of the garbage collector, as ``aiotf serve``
    runs (a full collection walks every object of the process, holding the GIL)."""
    sess, fetch, feed_dict, requests = _session_for(workload)
    async with sess:

        async def one() -> Any:
            if requests:
                return await asyncio.gather(*(sess.run(fetch, fd) for fd in requests))
            return await asyncio.gather(*(sess.run(fetch, feed_dict) for _ in range(4)))

        await one()  # build the executor outside the measurement
        if freeze:
            gc.collect()
            gc.freeze()
        runs = 0
        try:
            async with heartbeat() as late:
                end = time.perf_counter() + duration
                while time.perf_counter() < end or runs == 0:
                    await (one() if runs % 2 else sess.run(fetch, feed_dict or requests[0]))
                    runs += 1
        finally:
            if freeze:
                gc.unfreeze()
    return {"runs": runs, **_lateness_stats(late)}


# -- executor build scaling --------------------------------------------------------------------


def _chain_graph(n: int) -> tuple[aiotf.Graph, aiotf.Tensor, aiotf.Tensor]:
    """``y = y * x + x``, n nodes: no constant to fold or push down, no add chain to fuse."""
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[], name="x")
        y = x
        for _ in range(n // 2):
            y = aiotf.add(aiotf.multiply(y, x), x)
    return graph, x, y


async def build_scaling(quick: bool, tf: Any) -> list[dict[str, Any]]:
    sizes = (1000,) if quick else (1000, 10_000)
    runs = 3 if quick else 15
    rows = []
    for n in sizes:
        row: dict[str, Any] = {"nodes": n, "aiotf": await _aiotf_chain(n, runs)}
        if tf is not None:
            row["tensorflow"] = _tf_chain(tf, n, runs)
        rows.append(row)
    return rows


async def _aiotf_chain(n: int, runs: int) -> dict[str, Any]:
    start = time.perf_counter()
    graph, x, y = _chain_graph(n)
    construct = time.perf_counter() - start
    feed = {x: np.float32(CHAIN_FEED)}
    async with aiotf.Session(graph=graph) as sess:
        async with heartbeat() as late:
            start = time.perf_counter()
            value = await sess.run(y, feed)
            first = time.perf_counter() - start
        if abs(float(value) - CHAIN_LIMIT) > 1e-6:
            raise AssertionError(f"chain of {n} computed {value}, not {CHAIN_LIMIT}")
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            await sess.run(y, feed)
            times.append(time.perf_counter() - start)
    return _chain_row(n, construct, first, times) | {"build_max_lateness_ms": max(late) * 1e3}


def _tf_chain(tf: Any, n: int, runs: int) -> dict[str, Any]:
    start = time.perf_counter()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[], name="x")
        y = x
        for _ in range(n // 2):
            y = tf.add(tf.multiply(y, x), x)
    construct = time.perf_counter() - start
    with tf.compat.v1.Session(graph=graph) as sess:
        start = time.perf_counter()
        sess.run(y, {x: CHAIN_FEED})
        first = time.perf_counter() - start
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            sess.run(y, {x: CHAIN_FEED})
            times.append(time.perf_counter() - start)
    return _chain_row(n, construct, first, times)


def _chain_row(n: int, construct: float, first: float, times: list[float]) -> dict[str, Any]:
    per_run = statistics.median(times)
    return {
        "construct_s": construct,
        "first_run_s": first,
        "run_median_s": per_run,
        "build_us_per_node": (first - per_run) / n * 1e6,
        "run_us_per_node": per_run / n * 1e6,
    }


# -- import time -----------------------------------------------------------------------------------

_TIMED_IMPORT = "import time; t = time.perf_counter(); import {}; print(time.perf_counter() - t)"


def _import_seconds(module: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _TIMED_IMPORT.format(module)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return float(out.stdout.strip().splitlines()[-1])


async def import_time(quick: bool, tf: Any) -> dict[str, Any]:
    times = [await asyncio.to_thread(_import_seconds, "aiotf") for _ in range(1 if quick else 5)]
    report: dict[str, Any] = {"aiotf_s": min(times), "aiotf_median_s": statistics.median(times)}
    if tf is not None and not quick:
        report["tensorflow_s"] = await asyncio.to_thread(_import_seconds, "tensorflow")
    return report


# -- peak memory -----------------------------------------------------------------------------------


async def peak_memory() -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name in ("mlp", "cnn"):
        workload = WORKLOADS[name]
        sess, fetch, feed_dict, _ = _session_for(workload)
        async with sess:
            await sess.run(fetch, feed_dict)
            tracemalloc.start()
            try:
                await sess.run(fetch, feed_dict)
                traced = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            # The allocator keeps books on interpreted steps only: a traced step is one.
            devices = list(sess._impl.device_mgr)
            for d in devices:
                d.allocator.reset_peak()
            options = aiotf.RunOptions(trace_level=aiotf.RunOptions.FULL_TRACE)
            await sess.run(fetch, feed_dict, options=options, run_metadata=aiotf.RunMetadata())
            allocator_peak = max(d.allocator.peak_bytes_in_use for d in devices)
        reference = workload.reference(workload.make_params(np.random.default_rng(0)))
        feeds = list(feed_dict.values())
        tracemalloc.start()
        try:
            reference(feeds)
            numpy_peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        report[name] = {
            "aiotf_tracemalloc_peak_bytes": traced,
            "aiotf_allocator_peak_bytes": allocator_peak,
            "numpy_tracemalloc_peak_bytes": numpy_peak,
        }
    return report
