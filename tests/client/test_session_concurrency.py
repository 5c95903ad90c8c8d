"""Sessions in real programs: long runs never stall the loop; concurrent runs truly overlap."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework.op_def_registry import register_op
from aiotf.kernels.registry import register_kernel

# Generous: this is a shared 2-core box. A stalled loop is late by a whole kernel or more.
MAX_LATENESS_S = 0.050


class Barrier:
    """Counts async kernels that reached their wait; releases them all at once."""

    def __init__(self, expected: int = 0) -> None:
        self.expected = expected
        self.arrived = 0
        self.all_arrived = asyncio.Event()
        self.release = asyncio.Event()


BARRIER = Barrier()
register_op("_SessConcWait", inputs=["x: float"], outputs=["y: float"], is_stateful=True)


@register_kernel("_SessConcWait")
async def _wait(x: Any) -> Any:
    BARRIER.arrived += 1
    if BARRIER.arrived == BARRIER.expected:
        BARRIER.all_arrived.set()
    await BARRIER.release.wait()
    return x + np.float32(1)


def _matmul_chain(n: int, size: int) -> tuple[aiotf.Graph, aiotf.Tensor]:
    g = aiotf.Graph()
    with g.as_default():
        eye = np.eye(size, dtype=np.float32)
        w = aiotf.constant(eye, name="w")
        x = aiotf.placeholder(aiotf.float32, shape=[size, size], name="x")
        h = x
        for i in range(n):
            h = aiotf.matmul(h, w, name=f"mm{i}")
    return g, h


def _inline_chain(n: int) -> tuple[aiotf.Graph, aiotf.Tensor]:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[64], name="x")
        h = x
        for i in range(n):
            h = aiotf.add(h, aiotf.constant(np.float32(1), name=f"one{i}"), name=f"add{i}")
    return g, h


@pytest.mark.parametrize("size", [512])
async def test_a_long_matmul_run_never_stalls_the_loop(size: int, heartbeat_lateness: Any) -> None:
    graph, out = _matmul_chain(160, size)
    x = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    async with aiotf.Session(graph=graph) as sess:
        await sess.run(out, {"x:0": x})  # build first: only the run is measured

        async def work() -> None:
            np.testing.assert_allclose(await sess.run(out, {"x:0": x}), x, rtol=1e-5)

        worst, elapsed, ticks = await heartbeat_lateness(work)
    print(f"matmul chain: {elapsed * 1e3:.0f} ms, {ticks} ticks, max lateness {worst * 1e3:.2f} ms")
    assert elapsed > 0.05  # the run was long enough to mean something
    assert worst < MAX_LATENESS_S


async def test_a_long_inline_run_never_stalls_the_loop(heartbeat_lateness: Any) -> None:
    graph, out = _inline_chain(20000)
    x = np.zeros(64, np.float32)
    config = aiotf.ConfigProto(
        graph_options=aiotf.GraphOptions(
            optimizer_options=aiotf.OptimizerOptions(opt_level=aiotf.OptimizerOptions.L0)
        )
    )  # no constant folding: every Add runs
    async with aiotf.Session(graph=graph, config=config) as sess:
        await sess.run(out, {"x:0": x})

        async def work() -> None:
            np.testing.assert_allclose(await sess.run(out, {"x:0": x}), x + 20000)

        worst, elapsed, ticks = await heartbeat_lateness(work)
    print(f"inline chain: {elapsed * 1e3:.0f} ms, {ticks} ticks, max lateness {worst * 1e3:.2f} ms")
    assert elapsed > 0.02
    assert worst < MAX_LATENESS_S


async def test_concurrent_runs_truly_overlap() -> None:
    global BARRIER
    n = 16
    BARRIER = Barrier(n)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[], name="x")
        y = g.create_op("_SessConcWait", [x], name="wait").outputs[0]
    async with aiotf.Session(graph=g) as sess:
        runs = [asyncio.create_task(sess.run(y, {x: float(i)})) for i in range(n)]
        await BARRIER.all_arrived.wait()  # every run reached the wait before any is released
        assert not any(r.done() for r in runs)
        BARRIER.release.set()
        results = await asyncio.gather(*runs)
    assert results == [np.float32(i + 1) for i in range(n)]


@pytest.mark.parametrize("nodes", [10, 300])
async def test_a_large_graph_is_placed_and_built_off_the_event_loop(nodes: int) -> None:
    """Placing and building costs tens of microseconds a node: past a few dozen nodes it is done
    in a worker thread so the loop keeps serving; small graphs stay on the loop (no thread hop)."""
    from aiotf.runtime.direct_session import OFF_LOOP_NODES

    threads: dict[str, threading.Thread] = {}

    def record(name: str) -> Any:
        def pass_(options: Any) -> bool:
            threads[name] = threading.current_thread()
            return False

        return pass_

    placing = aiotf.register_optimization(
        aiotf.OptimizationPassGrouping.PRE_PLACEMENT, 0, record("place")
    )
    building = aiotf.register_optimization(
        aiotf.OptimizationPassGrouping.POST_PARTITIONING, 0, record("build")
    )
    try:
        g = aiotf.Graph()
        with g.as_default():
            x = aiotf.placeholder(aiotf.float32, [2], name="x")
            y = x
            for _ in range(nodes // 2):
                y = y * x + x
        async with aiotf.Session(graph=g) as sess:
            out = await sess.run(y, {x: [0.0, 0.0]})
    finally:
        aiotf.unregister_optimization(placing)
        aiotf.unregister_optimization(building)
    np.testing.assert_array_equal(out, [0.0, 0.0])
    loop_thread = threading.current_thread()
    large = nodes >= OFF_LOOP_NODES
    assert (threads["place"] is not loop_thread) == large
    assert (threads["build"] is not loop_thread) == large


async def test_extending_a_large_graph_by_one_op_happens_off_the_loop() -> None:
    """An extension places the whole graph again (as TensorFlow's does): what decides where it
    runs is the graph's size, not how many ops are new."""
    from aiotf.runtime.direct_session import OFF_LOOP_NODES

    threads: list[threading.Thread] = []

    def record(options: Any) -> bool:
        threads.append(threading.current_thread())
        return False

    placing = aiotf.register_optimization(aiotf.OptimizationPassGrouping.PRE_PLACEMENT, 0, record)
    try:
        g = aiotf.Graph()
        with g.as_default():
            x = aiotf.placeholder(aiotf.float32, [2], name="x")
            y = x
            for _ in range(OFF_LOOP_NODES):
                y = y + x
        async with aiotf.Session(graph=g) as sess:
            await sess.run(y, {x: [0.0, 0.0]})
            threads.clear()
            with g.as_default():
                z = y * 2.0  # one new op
            np.testing.assert_array_equal(await sess.run(z, {x: [1.0, 1.0]}), [130.0, 130.0])
    finally:
        aiotf.unregister_optimization(placing)
    assert threads and all(t is not threading.current_thread() for t in threads)
