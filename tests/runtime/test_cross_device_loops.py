"""v1 while loops whose frame spans two devices: TensorFlow's control loops in the partitions.

Each loop is run with its body split over ``/cpu:0`` and ``/cpu:1`` and compared with the same
graph on one device and with plain Python; the partition graphs are compared with the ones
TensorFlow 2.21 wrote for the same loops (recorded below).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime.graph import Graph, Node, node_from_def
from aiotf.runtime.partition import partition

TASK = "/job:localhost/replica:0/task:0"
CPU0 = f"{TASK}/device:CPU:0"
CPU1 = f"{TASK}/device:CPU:1"
TWO_DEVICES = ("/cpu:0", "/cpu:1")
ONE_DEVICE = ("/cpu:0", "/cpu:0")
INCARNATIONS = {CPU0: 0x1111, CPU1: 0x2222}

# Recorded from TensorFlow 2.21 (tf.compat.v1, v2 behaviour off, ConfigProto(device_count={"CPU":
# 2}), grappler off, opt_level L0, RunOptions(output_partition_graphs=True)); graphs built by
# _simple_loop and _nested_loops. Each node: "Op(inputs)". TensorFlow receives the LoopCond with
# ``_HostRecv`` (Switch takes its predicate in host memory); aiotf's CPU has one memory: ``_Recv``.
TF_SIMPLE: dict[str, dict[str, str]] = {
    CPU0: {
        "_arg_x_0_0": "_Arg()",
        "_clooploop/mul/_5": "Enter(loop/mul/_9)",
        "_clooploop/mul/_6": "Merge(_clooploop/mul/_5, _clooploop/mul/_8)",
        "_clooploop/mul/_7": "Switch(_clooploop/mul/_6, loop/LoopCond)",
        "_clooploop/mul/_8": "NextIteration(_clooploop/mul/_7:1)",
        "_retval_loop/Exit_0_0": "_Retval(loop/Exit)",
        "_retval_loop/Exit_1_0_1": "_Retval(loop/Exit_1)",
        "i0": "Const()",
        "loop/Enter": "Enter(i0)",
        "loop/Enter_1": "Enter(_arg_x_0_0)",
        "loop/Exit": "Exit(loop/Switch)",
        "loop/Exit_1": "Exit(loop/Switch_1)",
        "loop/Identity": "Identity(loop/Switch:1)",
        "loop/Identity_1": "Identity(loop/Switch_1:1)",
        "loop/Identity_1/_10": "_Send(loop/Identity_1)",
        "loop/Less": "Less(loop/Merge, loop/Less/y)",
        "loop/Less/y": "Const(^loop/Merge)",
        "loop/LoopCond": "LoopCond(loop/Less)",
        "loop/LoopCond/_14": "_Send(loop/LoopCond)",
        "loop/Merge": "Merge(loop/Enter, loop/NextIteration)",
        "loop/Merge_1": "Merge(loop/Enter_1, loop/NextIteration_1)",
        "loop/NextIteration": "NextIteration(loop/add)",
        "loop/NextIteration_1": "NextIteration(loop/mul)",
        "loop/Switch": "Switch(loop/Merge, loop/LoopCond)",
        "loop/Switch_1": "Switch(loop/Merge_1, loop/LoopCond)",
        "loop/add": "AddV2(loop/Identity, loop/add/y)",
        "loop/add/y": "Const(^loop/Identity)",
        "loop/mul": "Mul(loop/sq/_13, loop/mul/y)",
        "loop/mul/_9": "Const()",
        "loop/mul/y": "Const(^loop/Identity)",
        "loop/sq/_13": "_Recv(^_clooploop/mul/_6)",
    },
    CPU1: {
        "_clooploop/sq/_0": "Enter(loop/sq/_4)",
        "_clooploop/sq/_1": "Merge(_clooploop/sq/_0, _clooploop/sq/_3)",
        "_clooploop/sq/_2": "Switch(_clooploop/sq/_1, loop/LoopCond/_15)",
        "_clooploop/sq/_3": "NextIteration(_clooploop/sq/_2:1)",
        "loop/Identity_1/_11": "_Recv(^_clooploop/sq/_1)",
        "loop/LoopCond/_15": "_HostRecv(^_clooploop/sq/_1)",
        "loop/sq": "Square(loop/Identity_1/_11)",
        "loop/sq/_12": "_Send(loop/sq)",
        "loop/sq/_4": "Const()",
    },
}
TF_NESTED: dict[str, dict[str, str]] = {
    CPU0: {
        "_arg_n_0_0": "_Arg()",
        "_cloopouter/inner/add_1/_10": "Merge(_cloopouter/inner/add_1/_9, _cloopouter/inner/add_1/_12)",
        "_cloopouter/inner/add_1/_11": "Switch(_cloopouter/inner/add_1/_10, outer/inner/LoopCond)",
        "_cloopouter/inner/add_1/_12": "NextIteration(_cloopouter/inner/add_1/_11:1)",
        "_cloopouter/inner/add_1/_13": "Enter(outer/inner/add_1/_17)",
        "_cloopouter/inner/add_1/_14": "Merge(_cloopouter/inner/add_1/_13, _cloopouter/inner/add_1/_16)",
        "_cloopouter/inner/add_1/_15": "Switch(_cloopouter/inner/add_1/_14, outer/LoopCond)",
        "_cloopouter/inner/add_1/_16": "NextIteration(_cloopouter/inner/add_1/_15:1)",
        "_cloopouter/inner/add_1/_9": "Enter(_cloopouter/inner/add_1/_14)",
        "_retval_outer/Exit_0_0": "_Retval(outer/Exit)",
        "_retval_outer/Exit_1_0_1": "_Retval(outer/Exit_1)",
        "a0": "Const()",
        "i0": "Const()",
        "outer/Enter": "Enter(i0)",
        "outer/Enter_1": "Enter(a0)",
        "outer/Exit": "Exit(outer/Switch)",
        "outer/Exit_1": "Exit(outer/Switch_1)",
        "outer/Identity": "Identity(outer/Switch:1)",
        "outer/Identity_1": "Identity(outer/Switch_1:1)",
        "outer/Less": "Less(outer/Merge, outer/Less/Enter)",
        "outer/Less/Enter": "Enter(_arg_n_0_0)",
        "outer/LoopCond": "LoopCond(outer/Less)",
        "outer/LoopCond/_26": "_Send(outer/LoopCond)",
        "outer/Merge": "Merge(outer/Enter, outer/NextIteration)",
        "outer/Merge_1": "Merge(outer/Enter_1, outer/NextIteration_1)",
        "outer/NextIteration": "NextIteration(outer/add)",
        "outer/NextIteration_1": "NextIteration(outer/inner/Exit_1)",
        "outer/Switch": "Switch(outer/Merge, outer/LoopCond)",
        "outer/Switch_1": "Switch(outer/Merge_1, outer/LoopCond)",
        "outer/add": "AddV2(outer/Identity, outer/add/y)",
        "outer/add/y": "Const(^outer/Identity)",
        "outer/inner/Enter": "Enter(outer/j0)",
        "outer/inner/Enter_1": "Enter(outer/Identity_1)",
        "outer/inner/Exit_1": "Exit(outer/inner/Switch_1)",
        "outer/inner/Identity": "Identity(outer/inner/Switch:1)",
        "outer/inner/Identity/_20": "_Send(outer/inner/Identity)",
        "outer/inner/Identity_1": "Identity(outer/inner/Switch_1:1)",
        "outer/inner/Less": "Less(outer/inner/Merge, outer/inner/Less/Enter)",
        "outer/inner/Less/Enter": "Enter(outer/Identity)",
        "outer/inner/Less/Enter/_18": "_Send(outer/inner/Less/Enter)",
        "outer/inner/LoopCond": "LoopCond(outer/inner/Less)",
        "outer/inner/LoopCond/_24": "_Send(outer/inner/LoopCond)",
        "outer/inner/Merge": "Merge(outer/inner/Enter, outer/inner/NextIteration)",
        "outer/inner/Merge_1": "Merge(outer/inner/Enter_1, outer/inner/NextIteration_1)",
        "outer/inner/NextIteration": "NextIteration(outer/inner/add)",
        "outer/inner/NextIteration_1": "NextIteration(outer/inner/add_1)",
        "outer/inner/Switch": "Switch(outer/inner/Merge, outer/inner/LoopCond)",
        "outer/inner/Switch_1": "Switch(outer/inner/Merge_1, outer/inner/LoopCond)",
        "outer/inner/add": "AddV2(outer/inner/Identity, outer/inner/add/y)",
        "outer/inner/add/y": "Const(^outer/inner/Identity)",
        "outer/inner/add_1": "AddV2(outer/inner/Identity_1, outer/inner/prod/_23)",
        "outer/inner/add_1/_17": "Const()",
        "outer/inner/prod/_23": "_Recv(^_cloopouter/inner/add_1/_10)",
        "outer/j0": "Const(^outer/Identity)",
    },
    CPU1: {
        "_cloopouter/inner/prod/_0": "Enter(_cloopouter/inner/prod/_5)",
        "_cloopouter/inner/prod/_1": "Merge(_cloopouter/inner/prod/_0, _cloopouter/inner/prod/_3)",
        "_cloopouter/inner/prod/_2": "Switch(_cloopouter/inner/prod/_1, outer/inner/LoopCond/_25)",
        "_cloopouter/inner/prod/_3": "NextIteration(_cloopouter/inner/prod/_2:1)",
        "_cloopouter/inner/prod/_4": "Enter(outer/inner/prod/_8)",
        "_cloopouter/inner/prod/_5": "Merge(_cloopouter/inner/prod/_4, _cloopouter/inner/prod/_7)",
        "_cloopouter/inner/prod/_6": "Switch(_cloopouter/inner/prod/_5, outer/LoopCond/_27)",
        "_cloopouter/inner/prod/_7": "NextIteration(_cloopouter/inner/prod/_6:1)",
        "outer/LoopCond/_27": "_HostRecv(^_cloopouter/inner/prod/_5)",
        "outer/inner/Identity/_21": "_Recv(^_cloopouter/inner/prod/_1)",
        "outer/inner/Less/Enter/_19": "_Recv(^_cloopouter/inner/prod/_1)",
        "outer/inner/LoopCond/_25": "_HostRecv(^_cloopouter/inner/prod/_1)",
        "outer/inner/prod": "Mul(outer/inner/Less/Enter/_19, outer/inner/Identity/_21)",
        "outer/inner/prod/_22": "_Send(outer/inner/prod)",
        "outer/inner/prod/_8": "Const()",
    },
}
# Two consumers on /cpu:1 of one tensor from /cpu:0, inside the loop (_shared_recv_loop): the
# second reuses the first one's _Recv and keeps the control edge from the control loop's Merge.
TF_SHARED_RECV_CPU1 = {
    "_clooploop/p/_0": "Enter(loop/p/_4)",
    "_clooploop/p/_1": "Merge(_clooploop/p/_0, _clooploop/p/_3)",
    "_clooploop/p/_2": "Switch(_clooploop/p/_1, loop/LoopCond/_15)",
    "_clooploop/p/_3": "NextIteration(_clooploop/p/_2:1)",
    "loop/Identity_1/_11": "_Recv(^_clooploop/p/_1)",
    "loop/LoopCond/_15": "_HostRecv(^_clooploop/p/_1)",
    "loop/p": "Square(loop/Identity_1/_11)",
    "loop/p/_4": "Const()",
    "loop/q": "Neg(loop/Identity_1/_11, ^_clooploop/p/_1)",
    "loop/r": "AddV2(loop/p, loop/q)",
    "loop/r/_12": "_Send(loop/r)",
}

# A cond across devices (_cross_device_cond): each Switch moves to its data input's device
# (OptimizeControlFlowColocation), so x's Switches run on /cpu:0.
TF_COND = {
    CPU0: {
        "_arg_x_0_0": "_Arg()",
        "_arg_x_0_0/_0": "_Send(_arg_x_0_0)",
        "_retval_c/Merge_0_0": "_Retval(c/Merge/_9)",
        "c/Merge/_9": "_Recv()",
        "c/f/Switch": "Switch(_arg_x_0_0, c/pred_id/_3)",
        "c/f/Switch/_6": "_Send(c/f/Switch)",
        "c/pred_id/_3": "_HostRecv()",
        "c/t/Switch_1": "Switch(_arg_x_0_0, c/pred_id/_3)",
        "c/t/Switch_1/_4": "_Send(c/t/Switch_1:1)",
    },
    CPU1: {
        "_arg_x_0_0/_1": "_Recv()",
        "c/Merge": "Merge(c/f, c/t)",
        "c/Merge/_8": "_Send(c/Merge)",
        "c/Switch": "Switch(p, p)",
        "c/f": "Mul(c/f/Switch/_7, c/f/y)",
        "c/f/Switch/_7": "_Recv()",
        "c/f/y": "Const(^c/switch_f)",
        "c/pred_id": "Identity(p)",
        "c/pred_id/_2": "_Send(c/pred_id)",
        "c/switch_f": "Identity(c/Switch)",
        "c/t": "AddV2(c/t/Switch:1, c/t/Switch_1/_5)",
        "c/t/Switch": "Switch(y, c/pred_id)",
        "c/t/Switch_1/_5": "_Recv()",
        "p": "Less(y, p/y)",
        "p/y": "Const()",
        "y": "Square(_arg_x_0_0/_1)",
    },
}

# An op on /cpu:1 fed only by a loop invariant (_invariant_loop): its control input from the
# pivot crosses devices inside the loop (dummy Const, Send, Recv under the control loop, Identity);
# the invariant's Enter moves to its consumer's device and takes a root-frame Recv.
TF_INVARIANT_CPU1 = {
    "_arg_c_0_0/_11": "_Recv()",
    "_clooploop/k/_0": "Enter(loop/k/_4)",
    "_clooploop/k/_1": "Merge(_clooploop/k/_0, _clooploop/k/_3)",
    "_clooploop/k/_2": "Switch(_clooploop/k/_1, loop/LoopCond/_19)",
    "_clooploop/k/_3": "NextIteration(_clooploop/k/_2:1)",
    "loop/Identity/_14": "_Recv(^_clooploop/k/_1)",
    "loop/Identity/_15": "Identity(loop/Identity/_14)",
    "loop/LoopCond/_19": "_HostRecv(^_clooploop/k/_1)",
    "loop/k": "Mul(loop/k/Enter, loop/k/Enter, ^loop/Identity/_15)",
    "loop/k/Enter": "Enter(_arg_c_0_0/_11)",
    "loop/k/_16": "_Send(loop/k)",
    "loop/k/_4": "Const()",
}

Build = Callable[[str, str], tuple[Any, dict[Any, Any]]]


def _config(opt_level: int = 0, grappler: bool = True) -> Any:
    options = aiotf.GraphOptions(
        optimizer_options=aiotf.OptimizerOptions(opt_level=opt_level),
        rewrite_options={"disable_meta_optimizer": not grappler},
    )
    return aiotf.ConfigProto(device_count={"CPU": 2}, graph_options=options)


def _graph(build: Build, devices: tuple[str, str]) -> tuple[aiotf.Graph, Any, dict[Any, Any]]:
    g = aiotf.Graph()
    with g.as_default():
        fetches, feeds = build(*devices)
    return g, fetches, feeds


async def _run(build: Build, devices: tuple[str, str], opt_level: int = 0) -> Any:
    """Run ``build``'s graph on ``devices``; a split graph must have gained control loops."""
    g, fetches, feeds = _graph(build, devices)
    metadata = aiotf.RunMetadata()
    async with aiotf.Session(graph=g, config=_config(opt_level)) as sess:
        value = await sess.run(
            fetches,
            feeds,
            options=aiotf.RunOptions(output_partition_graphs=True),
            run_metadata=metadata,
        )
    cloops = [n.name for gd in metadata.partition_graphs for n in gd.node if "_cloop" in n.name]
    assert len(metadata.partition_graphs) == len(set(devices))
    assert bool(cloops) == (devices == TWO_DEVICES)
    return value


async def _split_and_whole(build: Build) -> tuple[Any, Any]:
    return await _run(build, TWO_DEVICES), await _run(build, ONE_DEVICE)


# -- the loops ---------------------------------------------------------------------------------


def _sum_loop(d0: str, d1: str, parallel_iterations: int = 10) -> tuple[Any, aiotf.Tensor]:
    """``s += i`` for ``i < n``: each step goes /cpu:1 -> /cpu:0 -> /cpu:1 and back."""
    n = aiotf.placeholder(aiotf.int32, [], name="n")

    def body(i: Any, s: Any) -> Any:
        with aiotf.device(d1):
            a = aiotf.multiply(i, 2, name="a")
        with aiotf.device(d0):
            b = aiotf.add(a, s, name="b")
        with aiotf.device(d1):
            c = aiotf.subtract(b, i, name="c")
        return i + 1, c

    loop = aiotf.while_loop(
        lambda i, s: i < n,
        body,
        [aiotf.constant(0), aiotf.constant(0)],
        parallel_iterations=parallel_iterations,
        name="loop",
    )
    return loop, n


@pytest.mark.parametrize("parallel_iterations", [1, 10])
async def test_sum_to_1000_with_the_body_alternating_devices(parallel_iterations: int) -> None:
    def build(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
        loop, n = _sum_loop(d0, d1, parallel_iterations)
        return loop, {n: 1000}

    split, whole = await _split_and_whole(build)
    assert split == whole == (1000, sum(range(1000)))


async def test_a_loop_that_runs_zero_times() -> None:
    def build(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
        loop, n = _sum_loop(d0, d1)
        return loop, {n: 0}

    split, whole = await _split_and_whole(build)
    assert split == whole == (0, 0)


async def test_two_loop_vars_computed_on_different_devices() -> None:
    def build(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
        def body(x: Any, y: Any) -> Any:
            with aiotf.device(d1):
                x2 = aiotf.add(x, y, name="x2")
            with aiotf.device(d0):
                y2 = aiotf.multiply(y, 1.5, name="y2")
            return x2, y2

        start = [aiotf.constant(1.0, aiotf.float64), aiotf.constant(0.25, aiotf.float64)]
        return aiotf.while_loop(lambda x, y: x < 1000.0, body, start, name="loop"), {}

    x, y = 1.0, 0.25
    while x < 1000.0:
        x, y = x + y, y * 1.5
    split, whole = await _split_and_whole(build)
    assert split == whole == (x, y)


def _nested_loops(d1: str) -> tuple[aiotf.Tensor, Any]:
    """``acc += i * j`` for ``j < i < n``; only the inner body's product is on ``d1``."""
    n = aiotf.placeholder(aiotf.int32, [], name="n")

    def outer_body(i: Any, acc: Any) -> Any:
        def inner_body(j: Any, a: Any) -> Any:
            with aiotf.device(d1):
                p = aiotf.multiply(i, j, name="prod")
            return j + 1, a + p

        start = [aiotf.constant(0, name="j0"), acc]
        _, acc2 = aiotf.while_loop(lambda j, a: j < i, inner_body, start, name="inner")
        return i + 1, acc2

    start = [aiotf.constant(0, name="i0"), aiotf.constant(0, name="a0")]
    return n, aiotf.while_loop(lambda i, a: i < n, outer_body, start, name="outer")


async def test_nested_loops_where_only_the_inner_body_crosses_devices() -> None:
    def build(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
        n, loop = _nested_loops(d1)
        return loop, {n: 12}

    split, whole = await _split_and_whole(build)
    assert split == whole == (12, sum(i * j for i in range(12) for j in range(i)))


async def test_a_cond_inside_a_cross_device_loop() -> None:
    def build(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
        def body(i: Any, s: Any) -> Any:
            def even() -> Any:
                with aiotf.device(d1):
                    return aiotf.add(s, i * i, name="up")

            def odd() -> Any:
                with aiotf.device(d0):
                    return aiotf.subtract(s, 1, name="down")

            with aiotf.device(d1):
                is_even = aiotf.equal(aiotf.floormod(i, 2), 0, name="is_even")
            return i + 1, aiotf.cond(is_even, even, odd)

        start = [aiotf.constant(0), aiotf.constant(0)]
        return aiotf.while_loop(lambda i, s: i < 30, body, start, name="loop"), {}

    s = 0
    for i in range(30):
        s = s + i * i if i % 2 == 0 else s - 1
    split, whole = await _split_and_whole(build)
    assert split == whole == (30, s)


async def test_twenty_concurrent_runs_of_one_cross_device_loop() -> None:
    g = aiotf.Graph()
    with g.as_default():
        loop, n = _sum_loop(*TWO_DEVICES)
    async with aiotf.Session(graph=g, config=_config()) as sess:
        results = await asyncio.gather(*(sess.run(loop, {n: 50 + k}) for k in range(20)))
    assert results == [(50 + k, sum(range(50 + k))) for k in range(20)]


async def test_an_error_on_the_remote_device_names_the_node_and_the_next_run_works() -> None:
    tasks_before = asyncio.all_tasks()
    g = aiotf.Graph()
    with g.as_default():
        n = aiotf.placeholder(aiotf.int32, [], name="n")
        table = aiotf.constant(np.arange(5, dtype=np.int32) * 10, name="table")

        def body(i: Any, s: Any) -> Any:
            with aiotf.device("/cpu:1"):
                value = aiotf.gather(table, i, name="lookup")  # fails once i reaches 5
            return i + 1, s + value

        start = [aiotf.constant(0), aiotf.constant(0)]
        loop = aiotf.while_loop(lambda i, s: i < n, body, start, name="loop")
    async with aiotf.Session(graph=g, config=_config()) as sess:
        with pytest.raises(errors.InvalidArgumentError) as caught:
            await sess.run(loop, {n: 8})
        assert caught.value.node_def.name == "loop/lookup"
        assert caught.value.node_def.device == CPU1
        assert "loop/lookup" in caught.value.message
        assert await sess.run(loop, {n: 5}) == (5, 100)
        assert await sess.run(loop, {n: 3}) == (3, 30)
    assert asyncio.all_tasks() == tasks_before


async def test_no_task_outlives_the_runs() -> None:
    tasks_before = asyncio.all_tasks()
    g = aiotf.Graph()
    with g.as_default():
        n, loop = _nested_loops("/cpu:1")
    async with aiotf.Session(graph=g, config=_config()) as sess:
        for k in (0, 1, 6):
            assert (await sess.run(loop, {n: k}))[0] == k
        assert asyncio.all_tasks() - tasks_before == set()
    assert asyncio.all_tasks() == tasks_before


# -- the partitions, against TensorFlow's ------------------------------------------------------


def _simple_loop(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
    x = aiotf.placeholder(aiotf.float32, [], name="x")

    def body(i: Any, acc: Any) -> Any:
        with aiotf.device(d1):
            y = aiotf.square(acc, name="sq")
        return i + 1, y * 0.5

    loop = aiotf.while_loop(
        lambda i, a: i < 3, body, [aiotf.constant(0, name="i0"), x], name="loop"
    )
    return loop, {x: 1.5}


def _shared_recv_loop(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
    x = aiotf.placeholder(aiotf.float32, [], name="x")

    def body(i: Any, acc: Any) -> Any:
        with aiotf.device(d1):
            p = aiotf.square(acc, name="p")
            q = aiotf.negative(acc, name="q")
            r = aiotf.add(p, q, name="r")
        return i + 1, r

    loop = aiotf.while_loop(
        lambda i, a: i < 3, body, [aiotf.constant(0, name="i0"), x], name="loop"
    )
    return loop, {x: 1.5}


def _nested_build(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
    n, loop = _nested_loops(d1)
    return loop, {n: 5}


async def _partitions(build: Build) -> tuple[Any, dict[str, dict[str, str]]]:
    """The value and the partition graphs of ``build``'s graph, as TF_* records them."""
    g, fetches, feeds = _graph(build, TWO_DEVICES)
    metadata = aiotf.RunMetadata()
    config = _config(opt_level=-1, grappler=False)  # as recorded
    async with aiotf.Session(graph=g, config=config) as sess:
        value = await sess.run(
            fetches,
            feeds,
            options=aiotf.RunOptions(output_partition_graphs=True),
            run_metadata=metadata,
        )
    parts: dict[str, dict[str, str]] = {}
    tensors: dict[str, set[tuple[str, str, str]]] = {"_Send": set(), "_Recv": set()}
    for graph_def in metadata.partition_graphs:
        (device,) = {node.device for node in graph_def.node}
        parts[device] = {n.name: f"{n.op}({', '.join(n.input)})" for n in graph_def.node}
        for node in graph_def.node:
            if node.op in tensors:
                tensor = node.attr["tensor_name"].s.decode()
                src = re.fullmatch(r"edge_\d+_(.+)", tensor)
                assert src is not None and node.name.startswith(f"{src.group(1)}/_"), node.name
                ends = node.attr["send_device"].s.decode(), node.attr["recv_device"].s.decode()
                tensors[node.op].add((tensor, *ends))
    assert tensors["_Send"] == tensors["_Recv"]  # every Send has its Recv
    return value, parts


def _as_ours(recorded: dict[str, str]) -> dict[str, str]:
    return {name: node.replace("_HostRecv(", "_Recv(") for name, node in recorded.items()}


async def test_a_loop_partitions_as_tensorflows() -> None:
    value, parts = await _partitions(_simple_loop)
    assert value == (3, pytest.approx(0.20022583))  # TensorFlow's answer
    assert parts == {device: _as_ours(nodes) for device, nodes in TF_SIMPLE.items()}


async def test_nested_loops_partition_as_tensorflows() -> None:
    value, parts = await _partitions(_nested_build)
    assert value == (5, 35)
    assert parts == {device: _as_ours(nodes) for device, nodes in TF_NESTED.items()}


async def test_a_reused_recv_leaves_the_control_edge_on_its_consumer() -> None:
    value, parts = await _partitions(_shared_recv_loop)
    assert value == (3, pytest.approx(0.22265625))  # TensorFlow's answer
    assert parts[CPU1] == _as_ours(TF_SHARED_RECV_CPU1)


def _cross_device_cond(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
    x = aiotf.placeholder(aiotf.float32, [], name="x")
    with aiotf.device(d1):
        y = aiotf.square(x, name="y")
        p = aiotf.less(y, 10.0, name="p")
        r = aiotf.cond(
            p,
            lambda: aiotf.add(y, x, name="t"),
            lambda: aiotf.multiply(x, 2.0, name="f"),
            name="c",
        )
    return r, {x: 2.0}


def _canonical(nodes: dict[str, str]) -> dict[str, str]:
    """``nodes`` with each new node ``<prefix>/_<n>`` named ``<prefix>/_<Op>`` (``n`` follows
    the order edges are visited in, which differs from TensorFlow's)."""
    label: dict[str, str] = {}
    for name, node in nodes.items():
        prefix, sep, number = name.rpartition("/_")
        if sep and number.isdigit():
            label[name] = f"{prefix}/_{node.partition('(')[0]}"
    assert len(set(label.values())) == len(label), label

    def rename(ref: str) -> str:
        caret = "^" if ref.startswith("^") else ""
        name, colon, port = ref.lstrip("^").partition(":")
        return f"{caret}{label.get(name, name)}{colon}{port}"

    out = {}
    for name, node in nodes.items():
        op, _, rest = node.partition("(")
        refs = rest[:-1].split(", ") if rest != ")" else []
        out[label.get(name, name)] = f"{op}({', '.join(map(rename, refs))})"
    return out


async def test_a_cross_device_cond_partitions_as_tensorflows() -> None:
    value, parts = await _partitions(_cross_device_cond)
    assert value == 6.0
    assert {d: _canonical(nodes) for d, nodes in parts.items()} == {
        d: _canonical(_as_ours(nodes)) for d, nodes in TF_COND.items()
    }


def _invariant_loop(d0: str, d1: str) -> tuple[Any, dict[Any, Any]]:
    c = aiotf.placeholder(aiotf.float32, [], name="c")

    def body(i: Any, s: Any) -> Any:
        with aiotf.device(d1):
            k = aiotf.multiply(c, c, name="k")
        return i + 1, s + k

    start = [aiotf.constant(0, name="i0"), aiotf.constant(0.0, name="s0")]
    return aiotf.while_loop(lambda i, s: i < 3, body, start, name="loop"), {c: 2.0}


async def test_an_op_fed_only_by_loop_invariants_runs_every_iteration_on_the_remote_device() -> (
    None
):
    """while_loop gives it a control input from the pivot (TensorFlow's
    ``_MaybeAddControlDependency``), so its device gets a control loop too."""
    split, whole = await _split_and_whole(_invariant_loop)
    assert split == whole == (3, 12.0)  # TensorFlow's answer
    value, parts = await _partitions(_invariant_loop)
    assert value == (3, 12.0)
    assert _canonical(parts[CPU1]) == _canonical(_as_ours(TF_INVARIANT_CPU1))


# -- partitioning, unit by unit ----------------------------------------------------------------


def _placed(g: aiotf.Graph, remote: set[str]) -> Graph:
    """``g`` as the compiler's graph: the nodes in ``remote`` on /cpu:1, the rest on /cpu:0."""
    graph = Graph(node_from_def(nd) for nd in g.as_graph_def().node)
    for node in graph:
        node.assigned_device = CPU1 if node.name in remote else CPU0
    return graph


def test_a_frame_on_one_device_gets_no_control_loop() -> None:
    g = aiotf.Graph()
    with g.as_default():
        _, total = aiotf.while_loop(
            lambda i, s: i < 3, lambda i, s: (i + 1, s + i), [0, 0], name="loop"
        )
        aiotf.negative(total, name="remote")
    graph = _placed(g, {"remote"})
    before = graph.to_graph_def().SerializeToString()
    parts = partition(graph, INCARNATIONS)
    assert not [n.name for part in parts.values() for n in part if "_cloop" in n.name]
    (recv,) = [n for n in parts[CPU1] if n.op == "_Recv"]
    assert recv.control_inputs == []  # a root-frame edge: its Recv runs once
    assert graph.to_graph_def().SerializeToString() == before  # the input graph is untouched


def test_a_cross_device_frame_without_a_loop_cond_is_an_error() -> None:
    def node(name: str, op: str, inputs: list[str], device: str, **attrs: Any) -> Node:
        op_def = lookup(op)
        attrs = {**op_def.default_attrs(), **attrs}
        return Node(name, op_def, attrs, [(i, 0) for i in inputs], assigned_device=device)

    graph = Graph(
        [
            node("c", "Const", [], CPU0, value=np.float32(1), dtype=aiotf.float32),
            node("e", "Enter", ["c"], CPU0, T=aiotf.float32, frame_name=b"f"),
            node("local", "Identity", ["e"], CPU0, T=aiotf.float32),
            node("remote", "Neg", ["local"], CPU1, T=aiotf.float32),
        ]
    )
    with pytest.raises(errors.InvalidArgumentError, match="must have a pivot predicate: f$"):
        partition(graph, INCARNATIONS)
