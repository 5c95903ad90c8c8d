"""Compiled loop frames (``runtime/loop_compiler.py``) against the frame schedule they replace.

Every graph runs twice: with its loops compiled, and with compilation switched off so the
executor's frame schedule (TensorFlow's executor, node by node) runs them. Both must give the
same values, the same errors and the same per-iteration contexts; tests also check which path a
frame took, so a compiled path cannot silently fall back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors
from aiotf.framework.op_def_registry import register_op
from aiotf.kernels.context import StepContext
from aiotf.kernels.registry import register_kernel
from aiotf.ops.op_helper import apply_op
from aiotf.runtime import executor as executor_module
from aiotf.runtime.executor import Executor

register_op(
    "_LCTestAsyncInc",
    inputs=["x: int32"],
    outputs=["y: int32"],
    shape_fn=lambda c: [c.input_shapes[0]],
)
register_op(
    "_LCTestFrameIter",
    inputs=["x: int32"],
    outputs=["y: int32"],
    shape_fn=lambda c: [c.input_shapes[0]],
    is_stateful=True,
)
register_op(
    "_LCTestFailAt",
    inputs=["x: int32"],
    outputs=["y: int32"],
    attrs=["at: int"],
    shape_fn=lambda c: [c.input_shapes[0]],
)
FRAME_ITERS: list[str] = []


@register_kernel("_LCTestAsyncInc")
async def _async_inc(x: Any) -> Any:
    return x + np.int32(1)


@register_kernel("_LCTestFrameIter")
def _frame_iter(ctx: StepContext, x: Any) -> Any:
    FRAME_ITERS.append(ctx.frame_iter)
    return x


@register_kernel("_LCTestFailAt")
def _fail_at(x: Any, *, at: int) -> Any:
    if int(x) == at:
        raise errors.InvalidArgumentError(None, None, f"reached {at}")
    return x


def _op(op_type: str, x: aiotf.Tensor, **attrs: Any) -> aiotf.Tensor:
    name = op_type.lstrip("_")
    return aiotf.get_default_graph().create_op(op_type, [x], attrs, name=name).outputs[0]


@pytest.fixture(params=["compiled", "frame schedule"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "frame schedule":
        monkeypatch.setattr(
            executor_module, "compile_loops", lambda items, frames: [None] * len(frames)
        )
    yield request.param


def _executors(sess: aiotf.Session) -> list[Executor]:
    impl: Any = sess._impl
    return [ex for bundle in impl._executors.values() for ex in bundle.executors]


def _compiled(sess: aiotf.Session) -> set[str]:
    """The frames the session's executors start as compiled programs."""
    return {info.name for ex in _executors(sess) for info in ex._frames if info.program}


async def _run(graph: aiotf.Graph, fetches: Any, feeds: Any = None) -> tuple[Any, set[str]]:
    async with aiotf.Session(graph=graph) as sess:
        return await sess.run(fetches, feeds), _compiled(sess)


def _expect_path(path: str, compiled: set[str], frames: set[str]) -> None:
    assert compiled == (frames if path == "compiled" else set())


async def test_a_scalar_loop_of_a_thousand_iterations(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [], name="x")
        n = aiotf.constant(1000, name="n")
        _, y = aiotf.while_loop(
            lambda i, y: i < n, lambda i, y: (i + 1, y + 1.0), [aiotf.constant(0), x], name="loop"
        )
    got, compiled = await _run(g, y, {x: 0.5})
    assert got == np.float32(1000.5)
    _expect_path(path, compiled, {"loop/while_context"})


@pytest.mark.parametrize("parallel_iterations", [1, 10])
async def test_ten_thousand_iterations(path: str, parallel_iterations: int) -> None:
    g = aiotf.Graph()
    with g.as_default():
        i, x = aiotf.while_loop(
            lambda k, x: k < 10000,
            lambda k, x: (k + 1, x * 0.5 + 1.0),
            [aiotf.constant(0), aiotf.constant(0.0)],
            parallel_iterations=parallel_iterations,
        )
    expected = np.float32(0.0)
    for _ in range(10000):
        expected = expected * np.float32(0.5) + np.float32(1.0)
    got, _ = await _run(g, [i, x])
    assert got == [10000, pytest.approx(expected)]


async def test_a_loop_that_runs_zero_times(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        out = aiotf.while_loop(lambda i: i < 0, lambda i: i + 1, [aiotf.constant(5)])
    assert (await _run(g, out))[0] == 5


async def test_four_nested_loops_compile_as_one_program(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():

        def level(depth: int, n: int, total: aiotf.Tensor) -> aiotf.Tensor:
            def body(i: aiotf.Tensor, t: aiotf.Tensor) -> Any:
                return i + 1, (t + i if depth == 1 else level(depth - 1, n, t + i))

            return aiotf.while_loop(
                lambda i, t: i < n, body, [aiotf.constant(0), total], name=f"l{depth}"
            )[1]

        out = level(4, 3, aiotf.constant(0))

    def expected(depth: int, total: int) -> int:
        for i in range(3):
            total = total + i if depth == 1 else expected(depth - 1, total + i)
        return total

    got, compiled = await _run(g, out)
    assert got == expected(4, 0)
    _expect_path(path, compiled, {"l4/while_context"})  # the inner loops run inside it


async def test_cond_inside_while_and_while_inside_cond(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        p = aiotf.placeholder(aiotf.bool, [], name="p")

        def body(i: aiotf.Tensor, s: aiotf.Tensor) -> Any:
            even = apply_op("Equal", [apply_op("FloorMod", [i, 2]).outputs[0], 0]).outputs[0]
            return i + 1, aiotf.cond(even, lambda: s + i, lambda: s - 1)

        def looping() -> aiotf.Tensor:
            return aiotf.while_loop(lambda i, s: i < 10, body, [aiotf.constant(0), 0])[1]

        out = aiotf.cond(p, looping, lambda: aiotf.constant(-1))
    async with aiotf.Session(graph=g) as sess:
        assert await sess.run(out, {p: True}) == sum(i if i % 2 == 0 else -1 for i in range(10))
        assert await sess.run(out, {p: False}) == -1  # every Enter dead: so is every Exit
        _expect_path(path, _compiled(sess), {"cond/while/while_context"})


async def test_an_async_kernel_keeps_its_frame_on_the_frame_schedule(path: str) -> None:
    """Only frames of cheap sync kernels compile: an outer loop with an async kernel in its body
    runs node by node and starts its compiled inner loop once per iteration; an inner loop with
    an async kernel keeps its parent uncompiled too."""
    g = aiotf.Graph()
    with g.as_default():

        def inner(t: aiotf.Tensor, name: str, slow: bool) -> aiotf.Tensor:
            step = (lambda j, u: (j + 1, _op("_LCTestAsyncInc", u))) if slow else None
            return aiotf.while_loop(
                lambda j, u: j < 3,
                step or (lambda j, u: (j + 1, u + 1)),
                [aiotf.constant(0), t],
                name=name,
            )[1]

        outer_async = aiotf.while_loop(
            lambda i, t: i < 4,
            lambda i, t: (i + 1, inner(_op("_LCTestAsyncInc", t), "inner", False)),
            [aiotf.constant(0), aiotf.constant(0)],
            name="outer",
        )[1]
        inner_async = aiotf.while_loop(
            lambda i, t: i < 4,
            lambda i, t: (i + 1, inner(t, "slow_inner", True)),
            [aiotf.constant(0), aiotf.constant(0)],
            name="outer2",
        )[1]
    got, compiled = await _run(g, [outer_async, inner_async])
    assert got == [16, 12]
    _expect_path(path, compiled, {"outer/inner/while_context"})


async def test_each_iteration_sees_its_own_frame_and_iteration(path: str) -> None:
    FRAME_ITERS.clear()
    g = aiotf.Graph()
    with g.as_default():

        def outer(i: aiotf.Tensor) -> aiotf.Tensor:
            inner = aiotf.while_loop(
                lambda j: j < 2, lambda j: _op("_LCTestFrameIter", j + 1), [aiotf.constant(0)]
            )
            return i + inner - 1

        out = aiotf.while_loop(lambda i: i < 3, outer, [aiotf.constant(0)], name="outer")
    got, compiled = await _run(g, out)
    assert got == 3
    frame = "0/0/outer/while_context/{}/outer/while/while_context:{}"
    assert sorted(FRAME_ITERS) == sorted(frame.format(i, j) for i in range(3) for j in range(2))
    _expect_path(path, compiled, {"outer/while_context"})


async def test_a_kernel_error_names_its_node_and_the_next_run_works(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        n = aiotf.placeholder(aiotf.int32, [], name="n")
        out = aiotf.while_loop(
            lambda i: i < n, lambda i: _op("_LCTestFailAt", i + 1, at=5), [aiotf.constant(0)]
        )
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="reached 5") as info:
            await sess.run(out, {n: 10})
        assert info.value.node_def.name == "while/LCTestFailAt"
        assert await sess.run(out, {n: 4}) == 4


async def test_reading_an_uninitialized_variable_in_a_loop_is_failed_precondition(
    path: str,
) -> None:
    g = aiotf.Graph()
    with g.as_default():
        v = aiotf.Variable(2, name="v")
        out = aiotf.while_loop(lambda i: i < 10, lambda i: i + v, [aiotf.constant(0)])
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value v"):
            await sess.run(out)
        await sess.run(v.initializer)
        assert await sess.run(out) == 10


async def test_a_stateful_op_gated_by_a_control_edge_runs_once_per_iteration(path: str) -> None:
    FRAME_ITERS.clear()
    g = aiotf.Graph()
    with g.as_default():

        def body(i: aiotf.Tensor) -> aiotf.Tensor:
            with aiotf.control_dependencies([_op("_LCTestFrameIter", i)]):
                return i + 1

        out = aiotf.while_loop(lambda i: i < 7, body, [aiotf.constant(0)])
    assert (await _run(g, out))[0] == 7
    assert sorted(FRAME_ITERS) == sorted(f"0/0/while/while_context:{k}" for k in range(7))


async def test_concurrent_runs_do_not_share_loop_state(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        n = aiotf.placeholder(aiotf.int32, [], name="n")
        total = aiotf.while_loop(
            lambda i, s: i < n, lambda i, s: (i + 1, s + i), [aiotf.constant(0), 0]
        )[1]
    async with aiotf.Session(graph=g) as sess:
        got = await asyncio.gather(*(sess.run(total, {n: k * 300}) for k in range(20)))
    assert list(got) == [sum(range(k * 300)) for k in range(20)]


async def test_a_long_loop_lets_the_event_loop_run(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        out = aiotf.while_loop(lambda i: i < 20000, lambda i: i + 1, [aiotf.constant(0)])
    async with aiotf.Session(graph=g) as sess:
        await sess.run(out)  # built: the timed run below is only the loop
        run = asyncio.ensure_future(sess.run(out))
        ticks = 0
        while not run.done():
            await asyncio.sleep(0)
            ticks += 1
        assert await run == 20000
    assert ticks > 2  # 20,000 iterations take far longer than the executor's time slice


async def test_cancelling_a_run_inside_a_compiled_loop(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        n = aiotf.placeholder(aiotf.int32, [], name="n")
        out = aiotf.while_loop(lambda i: i < n, lambda i: i + 1, [aiotf.constant(0)])
    async with aiotf.Session(graph=g) as sess:
        assert await sess.run(out, {n: 1}) == 1
        run = asyncio.ensure_future(sess.run(out, {n: 10**9}))
        for _ in range(3):
            await asyncio.sleep(0)  # the run is inside the loop, between time slices
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert await sess.run(out, {n: 3}) == 3
    assert asyncio.all_tasks() == {asyncio.current_task()}


# -- hand-built frames: dead and missing tensors, Merge's value_index, control outputs ----------


def _enter(x: aiotf.Tensor, name: str, constant: bool = False) -> aiotf.Tensor:
    g = aiotf.get_default_graph()
    attrs = {"frame_name": "f", "is_constant": constant, "parallel_iterations": 10}
    return g.create_op("Enter", [x], attrs, name=name).outputs[0]


def _two_counters() -> tuple[aiotf.Graph, aiotf.Tensor, aiotf.Tensor, aiotf.Operation]:
    """A hand-built frame: ``a`` counts 0..5; ``b`` doubles, but its NextIteration is fed
    through a Switch that kills it when ``a`` is odd. In the iteration after that, ``b``'s Merge
    never gets an input (not even a dead one): ``b`` stops there while ``a`` goes on, and its
    Exit never fires."""
    g = aiotf.Graph()
    with g.as_default():
        op = g.create_op

        def enter(x: aiotf.Tensor, name: str, constant: bool = False) -> aiotf.Tensor:
            attrs = {"frame_name": "f", "is_constant": constant, "parallel_iterations": 10}
            return op("Enter", [x], attrs, name=name).outputs[0]

        def binary(kind: str, x: aiotf.Tensor, y: aiotf.Tensor) -> aiotf.Tensor:
            return apply_op(kind, [x, y]).outputs[0]

        ea, eb = enter(aiotf.constant(0), "ea"), enter(aiotf.constant(1), "eb")
        limit = enter(aiotf.constant(5), "limit", constant=True)
        one, two = enter(aiotf.constant(1), "one", True), enter(aiotf.constant(2), "two", True)
        merge_a = op("Merge", [ea, ea], name="merge_a")
        merge_b = op("Merge", [eb, eb], name="merge_b")
        pred = op("LoopCond", [binary("Less", merge_a.outputs[0], limit)], name="cond")
        switch_a = op("Switch", [merge_a.outputs[0], pred.outputs[0]], name="switch_a")
        switch_b = op("Switch", [merge_b.outputs[0], pred.outputs[0]], name="switch_b")
        a = op("Identity", [switch_a.outputs[1]], name="a").outputs[0]
        b = _op("_LCTestFrameIter", op("Identity", [switch_b.outputs[1]], name="b").outputs[0])
        odd = binary("Equal", binary("FloorMod", a, two), one)
        keep_b = op("Switch", [binary("Mul", b, two), odd], name="keep_b")
        next_a = op("NextIteration", [binary("AddV2", a, one)], name="next_a")
        next_b = op("NextIteration", [keep_b.outputs[0]], name="next_b")
        merge_a._update_input(1, next_a.outputs[0])
        merge_b._update_input(1, next_b.outputs[0])
        exit_a = op("Exit", [switch_a.outputs[0]], name="exit_a").outputs[0]
        exit_b = op("Exit", [switch_b.outputs[0]], name="exit_b").outputs[0]
    return g, exit_a, exit_b, next_b


async def test_a_merge_whose_input_never_arrives_stops_its_variable(path: str) -> None:
    g, exit_a, exit_b, next_b = _two_counters()
    FRAME_ITERS.clear()
    async with aiotf.Session(graph=g) as sess:
        assert (await sess.run([exit_a, next_b]))[0] == 5
        assert sorted(FRAME_ITERS) == ["0/0/f:0", "0/0/f:1"]  # b ran in iterations 0 and 1
        with pytest.raises(errors.InvalidArgumentError, match=r"Retval\[0\] does not have value"):
            await sess.run(exit_b)
        _expect_path(path, _compiled(sess), {"f"})


async def test_merge_value_index_and_control_outputs_inside_a_loop(path: str) -> None:
    """``tf.case``-like wiring: a Merge's value_index feeds the body, and a NoOp inside the
    loop gates the update through a control edge."""
    g = aiotf.Graph()
    with g.as_default():

        def body(i: aiotf.Tensor, acc: aiotf.Tensor) -> Any:
            even = apply_op("Equal", [apply_op("FloorMod", [i, 2]).outputs[0], 0]).outputs[0]
            picked = aiotf.cond(even, lambda: aiotf.constant(10), lambda: aiotf.constant(20))
            index = picked.op.outputs[1]  # cond's Merge: which branch ran
            gate = aiotf.no_op(name="gate")
            with aiotf.control_dependencies([gate]):
                return i + 1, acc + picked + index

        out = aiotf.while_loop(lambda i, a: i < 6, body, [aiotf.constant(0), 0])[1]
    got, compiled = await _run(g, out)
    assert got == sum((10 + 1) if i % 2 == 0 else (20 + 0) for i in range(6))
    _expect_path(path, compiled, {"while/while_context"})


async def test_an_error_in_a_nested_loop_names_the_inner_node(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():

        def outer(i: aiotf.Tensor) -> aiotf.Tensor:
            inner = aiotf.while_loop(
                lambda j: j < 3,
                lambda j: _op("_LCTestFailAt", j + i + 1, at=4),
                [aiotf.constant(0)],
            )
            return i + inner - inner + 1

        out = aiotf.while_loop(lambda i: i < 5, outer, [aiotf.constant(0)], name="outer")
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="reached 4") as info:
            await sess.run(out)
        assert info.value.node_def.name == "outer/while/LCTestFailAt"


# -- the frame schedule around compiled loops: tasks, pool kernels, the inline prelude -----------


async def test_an_async_node_beside_a_long_compiled_loop(path: str) -> None:
    """The root frame starts a task, then runs a loop of many time slices: the task's result
    is picked up between slices and both reach the fetch."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.int32, [], name="x")
        slow = _op("_LCTestAsyncInc", _op("_LCTestAsyncInc", x))
        loop = aiotf.while_loop(lambda i: i < 20000, lambda i: i + 1, [x])
        out = slow + loop
    got, compiled = await _run(g, out, {x: 1})
    assert got == 3 + 20000
    _expect_path(path, compiled, {"while/while_context"})


async def test_a_costly_pool_kernel_in_a_cond_leaves_the_inline_prelude() -> None:
    """A frame-schedule step (a cond) runs inline until its MatMul is big enough for the pool:
    the MatMul becomes the first task, with the inputs it had already taken."""
    a = np.random.default_rng(7).standard_normal((128, 128)).astype(np.float32)
    g = aiotf.Graph()
    with g.as_default():
        p = aiotf.placeholder(aiotf.bool, [], name="p")
        m = aiotf.placeholder(aiotf.float32, [128, 128], name="m")
        out = aiotf.cond(p, lambda: aiotf.matmul(m, m), lambda: m + 1.0)
    async with aiotf.Session(graph=g) as sess:
        np.testing.assert_allclose(await sess.run(out, {p: True, m: a}), a @ a, rtol=1e-4)
        np.testing.assert_allclose(await sess.run(out, {p: False, m: a}), a + 1.0)


# -- pool kernels inside compiled loops ------------------------------------------------------------

BIG = 1 << 20  # elements: an elementwise kernel on this many goes to the device's pool


register_op(
    "_LCTestPoolFail",
    inputs=["x: float"],
    outputs=["y: float"],
    shape_fn=lambda c: [c.input_shapes[0]],
)


@register_kernel("_LCTestPoolFail", expensive=True)
def _pool_fail(x: Any) -> Any:
    if x.size >= BIG and float(x.flat[0]) >= 1.0:  # the second iteration's
        raise errors.InvalidArgumentError(None, None, "too big in the pool")
    return x


async def test_a_big_kernel_in_a_compiled_loop_runs_in_the_pool_then_the_frame_is_demoted(
    path: str,
) -> None:
    """Small iterations run inline; once an input is big enough, the loop hands the kernel to
    the executor, which runs it in the pool and resumes the loop with its outputs. From the next
    step on, that frame runs node by node, so its iterations can overlap in the pool."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None], name="x")
        _, out = aiotf.while_loop(
            lambda i, y: i < 3, lambda i, y: (i + 1, y + 1.0), [aiotf.constant(0), x]
        )
    small, big = np.zeros(4, np.float32), np.zeros(BIG, np.float32)
    async with aiotf.Session(graph=g) as sess:
        np.testing.assert_array_equal(await sess.run(out, {x: small}), small + 3)
        _expect_path(path, _compiled(sess), {"while/while_context"})
        np.testing.assert_array_equal(await sess.run(out, {x: big}), big + 3)
        assert _compiled(sess) == set()  # demoted by its first pool kernel
        np.testing.assert_array_equal(await sess.run(out, {x: big}), big + 3)


async def test_a_failing_pool_kernel_in_a_compiled_loop_names_its_node(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None], name="x")
        _, out = aiotf.while_loop(
            lambda i, y: i < 3,
            lambda i, y: (i + 1, _op("_LCTestPoolFail", y) + 1.0),
            [aiotf.constant(0), x],
        )
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="too big in the pool") as info:
            await sess.run(out, {x: np.zeros(BIG, np.float32)})
        assert info.value.node_def.name == "while/LCTestPoolFail"
        np.testing.assert_array_equal(await sess.run(out, {x: np.zeros(2, np.float32)}), [3, 3])


async def test_a_kernel_whose_cost_depends_on_small_values_is_estimated_again(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Tile's multiples decide its work as much as shapes do: in the second iteration the
    same shapes carry new multiples, and the Tile that was cheap goes to the pool."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.zeros([8, 8])

        def body(i: Any, s: Any) -> Any:
            k = 1 + i * 399  # 1, then 400: 10M elements, the pool's
            return i + 1, s + aiotf.reduce_sum(aiotf.tile(x, aiotf.stack([k, k])))

        _, out = aiotf.while_loop(
            lambda i, s: i < 2, body, [aiotf.constant(0), aiotf.constant(0.0)]
        )
    pooled: list[str] = []
    async with aiotf.Session(graph=g) as sess:
        device = sess._impl.device_mgr.client_device
        inner = device.run_in_pool

        async def spy(fn: Any, *args: Any, **kwargs: Any) -> Any:
            pooled.append(getattr(fn, "__name__", "?"))
            return await inner(fn, *args, **kwargs)

        monkeypatch.setattr(device, "run_in_pool", spy)
        assert await sess.run(out) == 0.0
    assert pooled.count("tile") == 1


async def test_a_failing_fast_call_in_a_loop_gives_the_kernel_s_words(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None], name="x")
        y = aiotf.placeholder(aiotf.float32, [None], name="y")
        _, out = aiotf.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, s + y), [0, x])
    async with aiotf.Session(graph=g) as sess:
        ones = np.ones(2, np.float32)
        np.testing.assert_array_equal(await sess.run(out, {x: ones, y: ones}), [3.0, 3.0])
        with pytest.raises(
            errors.InvalidArgumentError, match=r"Incompatible shapes: \[2\] vs. \[3\]"
        ):
            await sess.run(out, {x: ones, y: np.ones(3, np.float32)})


def _sources(sess: aiotf.Session) -> str:
    return "".join(
        info.program.source for ex in _executors(sess) for info in ex._frames if info.program
    )


@pytest.mark.parametrize(
    ("dtype", "start", "step"),
    [
        (aiotf.int32, 2**30, 2**30),  # wraps past 2**31 - 1, silently, as TensorFlow's int32
        (aiotf.float16, 0.1, 0.3),  # rounds to half after every add
        (aiotf.float32, 1e-3, 1e-7),
        (aiotf.int64, -5, 7),
    ],
)
async def test_scalar_arithmetic_in_a_loop_is_the_kernels(
    path: str, dtype: Any, start: Any, step: Any
) -> None:
    """Scalars of one real type meet Python's operators in a compiled loop (numpy's scalar
    arithmetic): the values, wraps and roundings of the kernels the frame schedule calls."""
    g = aiotf.Graph()
    with g.as_default():
        n = aiotf.constant(5, name="n")
        inc = aiotf.constant(step, dtype=dtype, name="inc")
        x0 = aiotf.constant(start, dtype=dtype, name="x0")
        i, x, y = aiotf.while_loop(
            lambda i, x, y: i < n,
            lambda i, x, y: (i + 1, x + inc, y * x - inc),
            [aiotf.constant(0), x0, x0],
            name="loop",
        )
    async with aiotf.Session(graph=g) as sess:
        got = await sess.run([i, x, y])
        source = _sources(sess)
    np_type = dtype.as_numpy_dtype
    with np.errstate(all="ignore"):
        want_x = want_y = np_type(start)
        for _ in range(5):
            want_x, want_y = want_x + np_type(step), want_y * want_x - np_type(step)
    assert got[0] == 5
    assert type(got[1]) is np_type and type(got[2]) is np_type
    assert (got[1], got[2]) == (want_x, want_y)
    if path == "compiled":  # the counter's limit and the increment made scalars once
        assert " < e" in source and "_scalar(e" in source


async def test_a_constant_enter_read_by_another_kernel_stays_an_array(path: str) -> None:
    g = aiotf.Graph()
    with g.as_default():
        n = aiotf.constant(3, name="n")
        i, s = aiotf.while_loop(
            lambda i, s: i < n,
            lambda i, s: (i + 1, s + aiotf.reshape(n, [1])),  # n: Less's and Reshape's
            [aiotf.constant(0), aiotf.constant([0])],
            name="loop",
        )
    async with aiotf.Session(graph=g) as sess:
        got = await sess.run([i, s])
        source = _sources(sess)
    assert got[0] == 3 and got[1].tolist() == [9]
    if path == "compiled":  # n's Enter stays an array; the Const 1, read by the add, does not
        assert "_scalar(e" not in source and "_scalar(c" in source
