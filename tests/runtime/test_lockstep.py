"""Steps crowded on one loop run their compiled program in lockstep (``loop_turns.lockstep``,
``executor._program_deadline``): each pauses after each pool kernel, so the loop runs a kernel
for every step of the turn before the next kernel, with an iteration of the loop (timers, I/O,
other tasks) between; what each run returns or raises is what it would alone."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors
from aiotf.kernels import products
from aiotf.runtime import graph_optimizer, loop_turns


class Model(NamedTuple):
    graph: aiotf.Graph
    x: aiotf.Tensor
    y: aiotf.Tensor  # relu(x @ w1) @ w2
    w1: np.ndarray[Any, Any]
    w2: np.ndarray[Any, Any]


@pytest.fixture
def m() -> Model:
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((4, 8)).astype(np.float32)
    w2 = rng.standard_normal((8, 3)).astype(np.float32)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[None, None], name="x")
        h = aiotf.nn.relu(aiotf.matmul(x, aiotf.constant(w1)))
        y = aiotf.matmul(h, aiotf.constant(w2), name="y")
    return Model(g, x, y, w1, w2)


@pytest.fixture
async def sess(m: Model, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[aiotf.Session]:
    """A session running the model's two MatMuls as two kernels (the remapper would pair them
    into one, ``kernels/fused_products.py``): two pauses a step."""
    monkeypatch.setattr(graph_optimizer, "fuse_matmul_pairs", lambda graph, keep: False)
    async with aiotf.Session(graph=m.graph) as session:
        yield session


def feed(i: int) -> np.ndarray[Any, Any]:
    return np.full((2, 4), i - 3.5, np.float32) * np.arange(1, 5, dtype=np.float32)


def record_products(monkeypatch: pytest.MonkeyPatch, m: Model) -> list[tuple[int, int]]:
    """Every product the MatMuls make, as ``(layer, loop ticks then)``: layer 1 or 2."""
    calls: list[tuple[int, int]] = []
    real = products.product

    def product(a: Any, b: Any, how: Any = None, any_layout: bool = False) -> Any:
        calls.append((1 if b.shape == m.w1.shape else 2, ticks))
        return real(a, b, how, any_layout)

    monkeypatch.setattr(products, "product", product)
    return calls


ticks = 0  # a ticker task's count of loop iterations (see ticking)


async def ticking(body: Any) -> Any:
    """Await ``body`` with a task counting the loop's iterations beside it."""
    global ticks
    ticks = 0
    stop = False

    async def ticker() -> None:
        global ticks
        while not stop:
            await asyncio.sleep(0)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        return await body
    finally:
        stop = True
        await task


def crowd(monkeypatch: pytest.MonkeyPatch, n: int) -> Any:
    """A wrapper making the runs of a gather of ``n`` a crowd: the first run's turn starts no
    other (no time per turn), and then, once all the others wait, the next turn lets them all
    go together (time enough)."""
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.0)

    async def run(i: int, coro: Any) -> Any:
        if i == n - 1:  # the last task to start: the others already wait
            monkeypatch.setattr(loop_turns, "TURN_SECONDS", 10.0)
        return await coro

    return run


async def test_a_crowd_runs_its_program_kernel_by_kernel(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = [await sess.run(m.y, {m.x: feed(i)}) for i in range(8)]
    calls = record_products(monkeypatch, m)
    run = crowd(monkeypatch, 8)
    outs = await ticking(asyncio.gather(*(run(i, sess.run(m.y, {m.x: feed(i)})) for i in range(8))))
    for out, want in zip(outs, alone, strict=True):
        np.testing.assert_array_equal(out, want)  # the same bits
    # The first run had its turn to itself; the seven after it, let go together, ran the
    # first layer each, then the second layer each, the loop turning in between.
    assert [layer for layer, _ in calls] == [1, 2] + [1] * 7 + [2] * 7
    first, second = calls[2:9], calls[9:]
    assert len({t for _, t in first}) == 1 and len({t for _, t in second}) == 1
    assert second[0][1] > first[0][1]


async def test_runs_one_after_another_never_pause(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task running steps in a row, each within the same turn: no crowd, no pauses."""
    verdicts: list[bool] = []
    real = loop_turns.lockstep

    def lockstep() -> bool:
        verdicts.append(real())
        return verdicts[-1]

    monkeypatch.setattr(loop_turns, "lockstep", lockstep)
    for i in range(6):
        np.testing.assert_allclose(
            await sess.run(m.y, {m.x: feed(i)}),
            np.maximum(feed(i) @ m.w1, 0) @ m.w2,
            rtol=1e-5,
        )
    assert verdicts and not any(verdicts)


async def test_a_failing_step_in_lockstep_fails_alone(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = [await sess.run(m.y, {m.x: feed(i)}) for i in range(6)]
    calls = record_products(monkeypatch, m)
    run = crowd(monkeypatch, 6)
    bad = np.ones((2, 5), np.float32)  # 5 columns against w1's 4 rows
    coros = [run(i, sess.run(m.y, {m.x: bad if i == 3 else feed(i)})) for i in range(6)]
    outs = await ticking(asyncio.gather(*coros, return_exceptions=True))
    assert isinstance(outs[3], errors.InvalidArgumentError)
    assert "Matrix size-incompatible" in str(outs[3]) and "MatMul" in str(outs[3])
    for i in (0, 1, 2, 4, 5):
        np.testing.assert_array_equal(outs[i], alone[i])
    assert [layer for layer, _ in calls] == [1, 2] + [1] * 5 + [2] * 4
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.002)
    np.testing.assert_array_equal(await sess.run(m.y, {m.x: feed(3)}), alone[3])


async def test_a_step_cancelled_in_lockstep_leaves_the_others_be(
    sess: aiotf.Session, m: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = [await sess.run(m.y, {m.x: feed(i)}) for i in range(6)]
    tasks: list[asyncio.Task[Any]] = []
    real = products.product
    second_layers = 0

    def product(a: Any, b: Any, how: Any = None, any_layout: bool = False) -> Any:
        nonlocal second_layers
        if b.shape == m.w2.shape:
            second_layers += 1
            if second_layers == 2:  # the group's second round: run 4 waits to resume
                tasks[4].cancel()
        return real(a, b, how, any_layout)

    monkeypatch.setattr(products, "product", product)
    run = crowd(monkeypatch, 6)
    tasks.extend(asyncio.create_task(run(i, sess.run(m.y, {m.x: feed(i)}))) for i in range(6))
    outs = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(outs[4], asyncio.CancelledError)
    for i in (0, 1, 2, 3, 5):
        np.testing.assert_array_equal(outs[i], alone[i])
    # The turn is over: a lone run after it starts and ends as ever.
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.002)
    monkeypatch.setattr(products, "product", real)
    np.testing.assert_array_equal(await sess.run(m.y, {m.x: feed(4)}), alone[4])


async def test_a_turn_holds_its_waiters_no_longer_than_hold_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step that keeps pausing in lockstep (much more to do than the others) holds its turn's
    waiters for HOLD_SECONDS at most: then they start beside it."""
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.0)
    monkeypatch.setattr(loop_turns, "HOLD_SECONDS", 0.02)
    start = time.perf_counter()  # before the turn begins: its hold is timed from then
    assert loop_turns.admit() is None  # this task's step begins a turn
    waiter = loop_turns.admit()  # the next is past the turn's deadline: it waits
    assert waiter is not None
    while not waiter.done():  # the first step pauses round after round
        loop_turns.hold()
        await asyncio.sleep(0)
        assert time.perf_counter() - start < 5.0, "the waiter was never let go"
    assert time.perf_counter() - start >= 0.02


async def test_a_turn_is_crowded_by_steps_of_two_tasks_not_by_one_tasks_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``crowded``: a task's steps one after another in a turn, even a turn it was let into
    alone from the waiting line, are no crowd; another task's step in the turn makes one."""
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 0.0)
    assert loop_turns.admit() is None  # this task's step begins a turn
    assert not loop_turns.crowded()
    waiter = loop_turns.admit()  # its next step: past the turn's deadline, it waits
    assert waiter is not None
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 10.0)
    await waiter  # let go alone: a turn of its own
    assert not loop_turns.crowded()
    assert loop_turns.admit() is None  # this task's next step, in the same turn
    assert not loop_turns.crowded()

    async def other() -> None:
        assert loop_turns.admit() is None

    loop_turns.hold()  # the turn goes on into the next iteration, where the other task starts
    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    await task
    assert loop_turns.crowded()


async def test_a_crowd_of_several_programs_and_big_steps_answers_as_alone(
    sess: aiotf.Session, m: Model
) -> None:
    """Runs of several signatures (other fetches: other programs, some with a product, some
    without) and of a batch big enough for the device's pool, 200 of them gathered with the
    turns as they are: each answers what it answers alone."""
    big = np.random.default_rng(3).standard_normal((4096, 4)).astype(np.float32)
    h = m.graph.get_tensor_by_name("Relu:0")
    calls: list[tuple[Any, Any]] = []
    for i in range(200):
        fetch = (m.y, h, [m.y, h], m.x)[i % 4]
        calls.append((fetch, {m.x: big if i % 50 == 7 else feed(i % 9)}))
    alone = [await sess.run(fetch, fd) for fetch, fd in calls]
    outs = await asyncio.gather(*(sess.run(fetch, fd) for fetch, fd in calls))
    for out, want in zip(outs, alone, strict=True):
        np.testing.assert_equal(out, want)


async def test_work_spent_for_later_shortens_the_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """``spend``: a step's share of a crowd's stacked run, to come later in the turn, counts
    against the turn's time now, so fewer steps start in it."""
    monkeypatch.setattr(loop_turns, "TURN_SECONDS", 10.0)
    assert loop_turns.admit() is None  # begins a turn of 10 s
    assert loop_turns.admit() is None
    loop_turns.spend(4.0)
    assert loop_turns.admit() is None  # 6 s left
    loop_turns.spend(7.0)
    waiter = loop_turns.admit()  # none left: the next step waits for the next turn
    assert waiter is not None
    await waiter


async def test_a_turn_over_keeps_no_task() -> None:
    """The task of a turn's first step (``crowded``'s bookkeeping) is let go with the turn:
    a finished run's task, and the result it holds, are not kept until the next run."""

    async def step() -> list[int]:
        assert loop_turns.admit() is None
        return [1, 2, 3]

    task = asyncio.create_task(step())
    await task
    await asyncio.sleep(0)  # the turn's end
    await asyncio.sleep(0)
    gone = weakref.ref(task)
    del task
    gc.collect()
    assert gone() is None
