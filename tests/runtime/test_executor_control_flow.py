"""The executor's frame schedule: v1 loops and conds, dead tensors, frames and iterations.

Graphs are built with ``aiotf.while_loop``/``aiotf.cond`` (TensorFlow 1.x's v1 primitives) and
run through a Session; expected values are plain Python/numpy loops.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors
from aiotf.framework.op_def_registry import register_op
from aiotf.kernels.registry import register_kernel
from aiotf.ops.op_helper import apply_op

# An async op (awaits between iterations) and an op that counts its executions.
register_op(
    "_CFTestAsyncInc",
    inputs=["x: int32"],
    outputs=["y: int32"],
    shape_fn=lambda ctx: [ctx.input_shapes[0]],
)
EXECUTED: list[int] = []
register_op(
    "_CFTestRecord",
    inputs=["x: int32"],
    outputs=["y: int32"],
    shape_fn=lambda ctx: [ctx.input_shapes[0]],
    is_stateful=True,
)


@register_kernel("_CFTestAsyncInc")
async def _async_inc(x: Any) -> Any:
    await asyncio.sleep(0)
    return x + np.int32(1)


@register_kernel("_CFTestRecord")
def _record(x: Any) -> Any:
    EXECUTED.append(int(x))
    return x


def _op(op_type: str, x: aiotf.Tensor) -> aiotf.Tensor:
    return aiotf.get_default_graph().create_op(op_type, [x], name=op_type).outputs[0]


async def _run(graph: aiotf.Graph, fetches: Any, feeds: Any = None, **kw: Any) -> Any:
    async with aiotf.Session(graph=graph, **kw) as sess:
        return await sess.run(fetches, feeds)


async def test_while_sum_matches_python() -> None:
    g = aiotf.Graph()
    with g.as_default():
        n = aiotf.placeholder(aiotf.int32, [], name="n")
        _, total = aiotf.while_loop(
            lambda i, s: i <= n, lambda i, s: (i + 1, s + i), [aiotf.constant(1), 0]
        )
    async with aiotf.Session(graph=g) as sess:
        for value in (0, 1, 10, 100):
            assert await sess.run(total, {n: value}) == sum(range(1, value + 1))


async def test_ten_thousand_iterations() -> None:
    g = aiotf.Graph()
    with g.as_default():
        i = aiotf.while_loop(lambda i: i < 10000, lambda i: i + 1, [aiotf.constant(0)])
        x = aiotf.while_loop(
            lambda k, x: k < 10000,
            lambda k, x: (k + 1, x * 0.5 + 1.0),
            [aiotf.constant(0), aiotf.constant(0.0)],
        )[1]
    expected = 0.0
    for _ in range(10000):
        expected = np.float32(expected * np.float32(0.5) + np.float32(1.0))
    got = await _run(g, [i, x])
    assert got[0] == 10000
    assert got[1] == pytest.approx(expected)


async def test_loop_invariant_read_in_every_iteration() -> None:
    g = aiotf.Graph()
    with g.as_default():
        k = aiotf.placeholder(aiotf.float32, [3], name="k")
        out = aiotf.while_loop(
            lambda i, a: i < 4, lambda i, a: (i + 1, a * k), [0, aiotf.constant([1.0, 1.0, 1.0])]
        )[1]
    k_value = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(await _run(g, out, {k: k_value}), k_value**4)


async def test_nested_loops() -> None:
    g = aiotf.Graph()
    with g.as_default():

        def outer_body(i: aiotf.Tensor, total: aiotf.Tensor) -> Any:
            inner = aiotf.while_loop(
                lambda j, t: j < i, lambda j, t: (j + 1, t + j), [aiotf.constant(0), total]
            )[1]
            return i + 1, inner

        total = aiotf.while_loop(lambda i, t: i < 6, outer_body, [aiotf.constant(0), 0])[1]
    assert await _run(g, total) == sum(j for i in range(6) for j in range(i))


async def test_cond_inside_while() -> None:
    g = aiotf.Graph()
    with g.as_default():

        def body(i: aiotf.Tensor, s: aiotf.Tensor) -> Any:
            remainder = apply_op("FloorMod", [i, 2]).outputs[0]
            even = apply_op("Equal", [remainder, 0]).outputs[0]
            return i + 1, aiotf.cond(even, lambda: s + i, lambda: s - 1)

        total = aiotf.while_loop(lambda i, s: i < 10, body, [aiotf.constant(0), 0])[1]
    assert await _run(g, total) == sum(i if i % 2 == 0 else -1 for i in range(10))


@pytest.mark.parametrize("taken", [True, False])
async def test_untaken_branch_never_runs(taken: bool) -> None:
    EXECUTED.clear()
    g = aiotf.Graph()
    with g.as_default():
        p = aiotf.placeholder(aiotf.bool, [], name="p")
        x = aiotf.constant(5)
        out = aiotf.cond(p, lambda: _op("_CFTestRecord", x + 1), lambda: x - 1)
    assert await _run(g, out, {p: taken}) == (6 if taken else 4)
    assert EXECUTED == ([6] if taken else [])  # noqa: SIM300 - the record is the subject


async def test_while_loop_in_untaken_branch_is_dead_throughout() -> None:
    """A loop whose Enters are dead: every Exit is dead and reaches the Merge at frame end."""
    EXECUTED.clear()
    g = aiotf.Graph()
    with g.as_default():
        p = aiotf.placeholder(aiotf.bool, [], name="p")

        def looping() -> aiotf.Tensor:
            return aiotf.while_loop(
                lambda i: i < 3, lambda i: _op("_CFTestRecord", i + 1), [aiotf.constant(0)]
            )

        out = aiotf.cond(p, looping, lambda: aiotf.constant(-1))
    async with aiotf.Session(graph=g) as sess:
        assert await sess.run(out, {p: False}) == -1
        assert EXECUTED == []
        assert await sess.run(out, {p: True}) == 3
        assert EXECUTED == [1, 2, 3]


async def test_fetching_a_dead_tensor_is_tensorflows_error_and_session_survives() -> None:
    g = aiotf.Graph()
    with g.as_default():
        p = aiotf.placeholder(aiotf.bool, [], name="p")
        x = aiotf.constant(2.0)
        inside: list[aiotf.Tensor] = []

        def true_fn() -> aiotf.Tensor:
            inside.append(x * 3.0)
            return inside[0]

        out = aiotf.cond(p, true_fn, lambda: x)
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"Retval\[0\] does not have value"):
            await sess.run(inside[0], {p: False})
        assert await sess.run([out, inside[0]], {p: True}) == [6.0, 6.0]


@pytest.mark.parametrize("parallel_iterations", [1, 2, 10])
async def test_parallel_iterations_bound_keeps_results(parallel_iterations: int) -> None:
    g = aiotf.Graph()
    with g.as_default():
        out = aiotf.while_loop(
            lambda i, acc: i < 50,
            lambda i, acc: (i + 1, _op("_CFTestAsyncInc", acc) + i),
            [aiotf.constant(0), aiotf.constant(0)],
            parallel_iterations=parallel_iterations,
        )[1]
    assert await _run(g, out) == sum(i + 1 for i in range(50))


async def test_concurrent_runs_of_one_loop_do_not_share_frames() -> None:
    g = aiotf.Graph()
    with g.as_default():
        n = aiotf.placeholder(aiotf.int32, [], name="n")
        total = aiotf.while_loop(
            lambda i, s: i < n,
            lambda i, s: (i + 1, _op("_CFTestAsyncInc", s)),
            [aiotf.constant(0), aiotf.constant(0)],
        )[1]
    async with aiotf.Session(graph=g) as sess:
        got = await asyncio.gather(*(sess.run(total, {n: k}) for k in range(20)))
    assert list(got) == list(range(20))


async def test_maximum_iterations_stops_the_loop() -> None:
    g = aiotf.Graph()
    with g.as_default():
        out = aiotf.while_loop(lambda i: i < 100, lambda i: i + 1, [0], maximum_iterations=7)
    assert await _run(g, out) == 7


def test_while_loop_names_its_nodes_as_tensorflow() -> None:
    """Names and wiring recorded from TensorFlow 2.21's v1 while_loop and cond."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [], name="x")
        k = aiotf.constant(2.0, name="k")
        i0 = aiotf.constant(0)
        r = aiotf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * k + 1.0), [i0, x])
        c = aiotf.cond(x > 0, lambda: x * k, lambda: aiotf.constant(7.0))
    ops = {op.name: op for op in g.get_operations()}

    def wiring(name: str) -> tuple[str, list[str], list[str]]:
        op = ops[name]
        return op.type, [t.name for t in op.inputs], [o.name for o in op.control_inputs]

    assert wiring("while/Enter") == ("Enter", ["Const:0"], [])
    assert wiring("while/Merge_1") == ("Merge", ["while/Enter_1:0", "while/NextIteration_1:0"], [])
    assert wiring("while/Less/y") == ("Const", [], ["while/Merge"])
    assert wiring("while/LoopCond") == ("LoopCond", ["while/Less:0"], [])
    assert wiring("while/Switch_1") == ("Switch", ["while/Merge_1:0", "while/LoopCond:0"], [])
    assert wiring("while/Identity") == ("Identity", ["while/Switch:1"], [])
    assert wiring("while/add/y") == ("Const", [], ["while/Identity"])
    assert wiring("while/mul") == ("Mul", ["while/Identity_1:0", "while/mul/Enter:0"], [])
    assert wiring("while/mul/Enter") == ("Enter", ["k:0"], [])
    assert ops["while/mul/Enter"].get_attr("is_constant") is True
    assert ops["while/Enter"].get_attr("frame_name") in (
        "while/while_context",
        b"while/while_context",
    )
    assert wiring("while/NextIteration_1") == ("NextIteration", ["while/add_1:0"], [])
    assert wiring("while/Exit_1") == ("Exit", ["while/Switch_1:0"], [])
    assert wiring("cond/Switch") == ("Switch", ["Greater:0", "Greater:0"], [])
    assert wiring("cond/switch_t") == ("Identity", ["cond/Switch:1"], [])
    assert wiring("cond/pred_id") == ("Identity", ["Greater:0"], [])
    assert wiring("cond/mul") == ("Mul", ["cond/mul/Switch:1", "cond/mul/Switch_1:1"], [])
    assert wiring("cond/mul/Switch_1") == ("Switch", ["k:0", "cond/pred_id:0"], [])
    assert wiring("cond/Const") == ("Const", [], ["cond/switch_f"])
    assert wiring("cond/Merge") == ("Merge", ["cond/Const:0", "cond/mul:0"], [])
    assert [t.name for t in r] == ["while/Exit:0", "while/Exit_1:0"]
    assert c.name == "cond/Merge:0"


def test_cond_and_while_reject_bad_arguments() -> None:
    with aiotf.Graph().as_default():
        p = aiotf.constant(True)
        with pytest.raises(TypeError, match="true_fn must be callable"):
            aiotf.cond(p, 1, lambda: 1)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="must have the same type"):
            aiotf.cond(p, lambda: aiotf.constant(1), lambda: aiotf.constant(1.0))
        with pytest.raises(ValueError, match="true_fn must have a return value"):
            aiotf.cond(p, lambda: None, lambda: 1)
        with pytest.raises(ValueError, match="has type float32 after 1 iteration"):
            aiotf.while_loop(lambda i: i < 3, lambda i: aiotf.cast(i, aiotf.float32), [0])


async def test_inputs_from_different_frames_is_an_error_naming_the_node() -> None:
    """A node fed from inside a loop and from outside it (without an Exit) is malformed."""
    gd = aiotf.GraphDef()
    gd.ParseFromString(_malformed_frames_graph())
    g = aiotf.Graph()
    with g.as_default():
        aiotf.import_graph_def(gd, name="")
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="'bad' has inputs from different"):
            await sess.run("bad:0")


def _malformed_frames_graph() -> bytes:
    g = aiotf.Graph()
    with g.as_default():
        c = aiotf.constant(1, name="c")
        enter = g.create_op(
            "Enter", [c], {"frame_name": "f", "is_constant": False}, name="enter"
        ).outputs[0]
        aiotf.add(enter, c, name="bad")
    return g.as_graph_def().SerializeToString()


async def test_control_dependencies_from_outside_a_loop_enter_through_its_frame() -> None:
    """TF 1.x moves a control input from outside the loop onto an Identity of its value inside
    the frame (and drops one whose op has no outputs); the loop then runs."""
    g = aiotf.Graph()
    with g.as_default():
        v = aiotf.Variable(0.0, name="v")
        bump = aiotf.assign_add(v, 1.0)
        ready = aiotf.no_op(name="ready")

        def body(i: aiotf.Tensor) -> aiotf.Tensor:
            with aiotf.control_dependencies([bump, ready]):
                return i + 1

        out = aiotf.while_loop(lambda i: i < 3, body, [aiotf.constant(0)])
    # Recorded from TF 2.21 (v2 behaviour off): the Const built in the block gets the loop's
    # Identity (its pivot) and an Identity pulling AssignAdd's value in; "ready" is dropped.
    step = g.get_operation_by_name("while/add/y")
    assert sorted(c.name for c in step.control_inputs) == ["while/Identity", "while/add/Identity"]
    assert not g.get_operation_by_name("while/add").control_inputs  # dominated by while/add/y
    pulled = g.get_operation_by_name("while/add/Identity")
    # AssignAdd's output is a ref: it enters the frame through TF's "while/add/Identity/RefEnter"
    assert pulled.inputs[0].op.name == "while/add/Identity/RefEnter"
    assert pulled.inputs[0].op.type == "RefEnter" and pulled.inputs[0].op.inputs[0].op is bump.op
    async with aiotf.Session(graph=g) as sess:
        await sess.run(v.initializer)
        assert await sess.run(out) == 3
        assert await sess.run(v) == 1.0  # the update ran once, before the loop took it in


async def test_an_outside_tensor_used_under_control_dependencies_in_a_body() -> None:
    """The Enter (or Switch) that brings an outside tensor in is built without the control
    dependencies of the op that asked for it, as TensorFlow's AddValue; TF 2.21 gives
    ``[4, 24.0]`` and ``15.0``."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.constant(3.0)

        def body(i: Any, s: Any) -> Any:
            with aiotf.control_dependencies([s]):
                y = x * 2.0
            return i + 1, s + y

        out = aiotf.while_loop(lambda i, s: i < 4, body, [0, 0.0])
        pred = aiotf.placeholder(aiotf.bool, [])

        def true_fn() -> Any:
            with aiotf.control_dependencies([pred]):
                return x * 5.0

        picked = aiotf.cond(pred, true_fn, lambda: x)
    assert not g.get_operation_by_name("while/mul/Enter").control_inputs
    async with aiotf.Session(graph=g) as sess:
        assert await sess.run(out) == (4, 24.0)
        assert await sess.run(picked, {pred: True}) == 15.0


def test_cond_refuses_a_python_bool() -> None:
    with aiotf.Graph().as_default():
        t = aiotf.constant(3)
        with pytest.raises(TypeError, match="'pred' must not be a Python bool."):
            aiotf.cond(t == 1, lambda: t, lambda: t)  # Tensor == is identity, as in TF 1.x
