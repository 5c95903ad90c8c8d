"""Executor promises not covered elsewhere: the Ref variants of the v1 control-flow ops, a
variable updated inside a while loop, and ``parallel_iterations`` bounding the iterations in
flight. Expected values were recorded with TensorFlow 2.21 (``tf.compat.v1``, v2 behaviour
disabled) running the same graphs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import attr_value, dtypes
from aiotf.framework.op_def_registry import register_op
from aiotf.kernels.registry import register_kernel
from aiotf.proto import NodeDef

F32, I32 = dtypes.float32, dtypes.int32
STALL_S = 30.0


def _node(name: str, op: str, inputs: tuple[str, ...] = (), **attrs: Any) -> Any:
    out = NodeDef(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        out.attr[key].CopyFrom(attr_value.encode(value))
    return out


def _const(name: str, value: Any, dt: Any, *inputs: str) -> Any:
    return _node(name, "Const", inputs, value=np.asarray(value, dt.np_dtype), dtype=dt)


def ref_loop_graph_def() -> Any:
    """A hand-written v1 loop that carries a variable's ref through RefEnter, RefMerge,
    RefSwitch, RefNextIteration and RefExit, adding 1 to it in each of 3 iterations."""
    frame = {"frame_name": "L", "parallel_iterations": 10}
    gd = aiotf.GraphDef()
    gd.node.extend(
        [
            _node("v", "VariableV2", shape=aiotf.TensorShape([]), dtype=F32),
            _const("zero", 0, F32),
            _node("init", "Assign", ("v", "zero"), T=F32),
            _const("n", 3, I32),
            _const("i0", 0, I32),
            _node("enter_i", "Enter", ("i0",), T=I32, is_constant=False, **frame),
            _node("enter_v", "RefEnter", ("v",), T=F32, is_constant=False, **frame),
            _node("enter_n", "Enter", ("n",), T=I32, is_constant=True, **frame),
            _node("merge_i", "Merge", ("enter_i", "next_i"), T=I32, N=2),
            _node("merge_v", "RefMerge", ("enter_v", "next_v"), T=F32, N=2),
            _node("less", "Less", ("merge_i", "enter_n"), T=I32),
            _node("cond", "LoopCond", ("less",)),
            _node("switch_i", "Switch", ("merge_i", "cond"), T=I32),
            _node("switch_v", "RefSwitch", ("merge_v", "cond"), T=F32),
            _node("body_i", "Identity", ("switch_i:1",), T=I32),
            _const("one_i", 1, I32, "^body_i"),
            _node("add_i", "AddV2", ("body_i", "one_i"), T=I32),
            _node("next_i", "NextIteration", ("add_i",), T=I32),
            _const("one_f", 1, F32, "^body_i"),
            _node("bump", "AssignAdd", ("switch_v:1", "one_f"), T=F32),
            _node("next_v", "RefNextIteration", ("bump",), T=F32),
            _node("exit_i", "Exit", ("switch_i",), T=I32),
            _node("exit_v", "RefExit", ("switch_v",), T=F32),
            _node("out", "Identity", ("exit_v",), T=F32),
        ]
    )
    return gd


async def test_the_ref_variants_carry_a_variable_through_a_loop() -> None:
    g = aiotf.Graph()
    with g.as_default():
        aiotf.import_graph_def(ref_loop_graph_def(), name="")
    async with aiotf.Session(graph=g) as sess:
        await sess.run("init")
        assert await sess.run(["out:0", "exit_i:0"]) == [np.float32(3), np.int32(3)]
        assert await sess.run("out:0") == np.float32(6)  # the variable, updated in place
        assert await sess.run("v:0") == np.float32(6)


async def test_a_variable_updated_in_a_while_body_enters_as_a_ref() -> None:
    g = aiotf.Graph()
    with g.as_default():
        v = aiotf.Variable(0.0, name="v")

        def body(i: aiotf.Tensor) -> aiotf.Tensor:
            with aiotf.control_dependencies([aiotf.assign_add(v, 1.0)]):
                return i + 1

        out = aiotf.while_loop(lambda i: i < 5, body, [aiotf.constant(0)])
        init = aiotf.global_variables_initializer()
    ref_enter = g.get_operation_by_name("while/AssignAdd/RefEnter")  # TensorFlow's node
    assert ref_enter.type == "RefEnter" and ref_enter.get_attr("is_constant")
    assert [t.name for t in ref_enter.inputs] == ["v:0"]
    assert g.get_operation_by_name("while/AssignAdd").inputs[0] is ref_enter.outputs[0]
    async with aiotf.Session(graph=g) as sess:
        await sess.run(init)
        assert await sess.run(out) == 5
        assert await sess.run(v) == np.float32(5.0)


# -- parallel_iterations ------------------------------------------------------------------------


class Gate:
    """Counts the body kernels in flight (one per iteration) and holds them until opened."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.opened = asyncio.Event()


GATE = Gate()
register_op("_AuditGate", inputs=["i: int32"], outputs=["y: int32"], is_stateful=True)


@register_kernel("_AuditGate")
async def _gate(i: Any) -> Any:
    GATE.active += 1
    GATE.peak = max(GATE.peak, GATE.active)
    try:
        await GATE.opened.wait()
    finally:
        GATE.active -= 1
    return i


@pytest.mark.parametrize("parallel_iterations", [1, 4])
async def test_parallel_iterations_bounds_the_iterations_in_flight(
    parallel_iterations: int,
) -> None:
    global GATE
    GATE = Gate()
    g = aiotf.Graph()
    with g.as_default():
        _, total = aiotf.while_loop(
            lambda i, acc: i < 20,
            lambda i, acc: (i + 1, acc + g.create_op("_AuditGate", [i]).outputs[0]),
            [aiotf.constant(0), aiotf.constant(0)],
            parallel_iterations=parallel_iterations,
        )
    async with aiotf.Session(graph=g) as sess:
        run = asyncio.create_task(sess.run(total))
        async with asyncio.timeout(STALL_S):
            while GATE.active < parallel_iterations:  # noqa: ASYNC110 - counted, not announced
                await asyncio.sleep(0)
        for _ in range(100):  # every iteration that may start has started
            await asyncio.sleep(0)
        assert GATE.active == parallel_iterations  # the oldest iteration holds the others back
        GATE.opened.set()
        async with asyncio.timeout(STALL_S):
            assert await run == sum(range(20))
    assert GATE.peak == parallel_iterations


async def test_a_read_of_a_ref_variable_sees_later_updates_as_in_tensorflow() -> None:
    """``v/read`` aliases the variable's buffer in TF 1.x, so a read consumed after an update
    sees it. TF 2.21 (``tf.compat.v1``): 5.0, 5.0, and 62.0 for the loop (2+4+8+16+32)."""
    g = aiotf.Graph()
    with g.as_default():
        v = aiotf.Variable(0.0, name="v")
        bump = aiotf.assign_add(v, 5.0)
        with aiotf.control_dependencies([bump]):
            ident = aiotf.identity(v)
            plus = v + 0.0
        w = aiotf.Variable(1.0, name="w")

        def body(i: Any, s: Any) -> Any:
            return i + 1, s + aiotf.assign(w, w * 2.0)

        _, total = aiotf.while_loop(lambda i, s: i < 5, body, [0, 0.0], parallel_iterations=1)
        u = aiotf.Variable([1.0, 2.0], name="u")
        bump_u = aiotf.assign_add(u, [1.0, 1.0])
        init = aiotf.global_variables_initializer()
    async with aiotf.Session(graph=g) as sess:
        for fetch, want in ((ident, 5.0), (plus, 5.0), (total, 62.0)):
            await sess.run(init)
            assert await sess.run(fetch) == want
        fetched = await sess.run(u)  # a fetched value is the client's own copy
        await sess.run(bump_u)
        np.testing.assert_array_equal(fetched, [1.0, 2.0])
        np.testing.assert_array_equal(await sess.run(u), [2.0, 3.0])
