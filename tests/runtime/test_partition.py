"""Partitioning by device with ``_Send``/``_Recv`` pairs (``aiotf.runtime.partition``)."""

from __future__ import annotations

from typing import Any

import numpy as np

import aiotf
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime.graph import Graph, Node
from aiotf.runtime.partition import partition

TASK = "/job:localhost/replica:0/task:0"
CPU0 = f"{TASK}/device:CPU:0"
CPU1 = f"{TASK}/device:CPU:1"
INCARNATIONS = {CPU0: 0x1111, CPU1: 0x2222}


def const(name: str, device: str, dtype: aiotf.DType = aiotf.float32) -> Node:
    return Node(
        name,
        lookup("Const"),
        {"value": np.zeros((2,), dtype.np_dtype), "dtype": dtype},
        assigned_device=device,
    )


def unary(op: str, name: str, src: str, device: str, dtype: aiotf.DType = aiotf.float32) -> Node:
    return Node(name, lookup(op), {"T": dtype}, [(src, 0)], assigned_device=device)


def of_op(g: Graph, op: str) -> list[Node]:
    return [n for n in g if n.op == op]


def test_same_device_graph_has_no_send_recv() -> None:
    g = Graph([const("a", CPU0), unary("Neg", "b", "a", CPU0), unary("Identity", "c", "b", CPU0)])
    parts = partition(g, INCARNATIONS)
    assert list(parts) == [CPU0]
    assert [n.name for n in parts[CPU0]] == ["a", "b", "c"]
    assert parts[CPU0]["c"].inputs == [("b", 0)]
    assert g["c"] is not parts[CPU0]["c"]  # partitions hold copies


def test_one_pair_per_tensor_and_destination() -> None:
    g = Graph(
        [
            const("a", CPU0),
            unary("Neg", "b", "a", CPU1),
            unary("Identity", "c", "a", CPU1),
            Node(
                "m", lookup("Mul"), {"T": aiotf.float32}, [("a", 0), ("a", 0)], assigned_device=CPU1
            ),
            unary("Neg", "local", "a", CPU0),
        ]
    )
    parts = partition(g, INCARNATIONS)
    assert set(parts) == {CPU0, CPU1}
    sends, recvs = of_op(parts[CPU0], "_Send"), of_op(parts[CPU1], "_Recv")
    assert len(sends) == 1 and len(recvs) == 1
    assert of_op(parts[CPU1], "_Send") == [] and of_op(parts[CPU0], "_Recv") == []
    send, recv = sends[0], recvs[0]
    assert send.inputs == [("a", 0)]
    for consumer in ("b", "c"):
        assert parts[CPU1][consumer].inputs == [(recv.name, 0)]
    assert parts[CPU1]["m"].inputs == [(recv.name, 0), (recv.name, 0)]
    assert parts[CPU0]["local"].inputs == [("a", 0)]
    assert "a" not in parts[CPU1]
    assert {"b", "c", "m"}.isdisjoint(n.name for n in parts[CPU0])


def test_send_recv_attrs() -> None:
    g = Graph([const("a", CPU0, aiotf.int32), unary("Neg", "b", "a", CPU1, aiotf.int32)])
    parts = partition(g, INCARNATIONS)
    (send,) = of_op(parts[CPU0], "_Send")
    (recv,) = of_op(parts[CPU1], "_Recv")
    for node in (send, recv):
        assert node.attrs["tensor_name"] == b"edge_1_a"
        assert node.attrs["send_device"] == CPU0.encode()
        assert node.attrs["recv_device"] == CPU1.encode()
        assert node.attrs["send_device_incarnation"] == 0x1111
        assert node.attrs["client_terminated"] is False
    assert send.attrs["T"] is aiotf.int32
    assert recv.attrs["tensor_type"] is aiotf.int32
    assert recv.output_dtypes == (aiotf.int32,)
    assert send.assigned_device == CPU0 and recv.assigned_device == CPU1
    assert send.name.startswith("a/_") and recv.name.startswith("a/_")
    assert send.name != recv.name


def test_distinct_tensors_get_distinct_tensor_names() -> None:
    g = Graph(
        [
            const("a", CPU0),
            const("b", CPU1),
            unary("Neg", "na", "a", CPU1),
            unary("Neg", "nb", "b", CPU0),
        ]
    )
    parts = partition(g, INCARNATIONS)
    (send_a,) = of_op(parts[CPU0], "_Send")
    (send_b,) = of_op(parts[CPU1], "_Send")
    names = {send_a.attrs["tensor_name"], send_b.attrs["tensor_name"]}
    assert len(names) == 2
    assert send_b.attrs["send_device_incarnation"] == 0x2222
    assert send_b.attrs["recv_device"] == CPU0.encode()


def test_one_pair_per_destination_device() -> None:
    cpu2 = f"{TASK}/device:CPU:2"
    g = Graph([const("a", CPU0), unary("Neg", "b", "a", CPU1), unary("Neg", "c", "a", cpu2)])
    parts = partition(g, {**INCARNATIONS, cpu2: 0x3333})
    sends = of_op(parts[CPU0], "_Send")
    assert len(sends) == 2
    assert {s.attrs["recv_device"] for s in sends} == {CPU1.encode(), cpu2.encode()}


def test_cross_device_control_edge() -> None:
    noop = lookup("NoOp")
    g = Graph(
        [
            const("x", CPU0),
            Node("y", noop, {}, control_inputs=["x"], assigned_device=CPU1),
            Node("z", noop, {}, control_inputs=["x"], assigned_device=CPU1),
        ]
    )
    parts = partition(g, INCARNATIONS)
    (dummy,) = [n for n in of_op(parts[CPU0], "Const") if n.name != "x"]
    assert dummy.control_inputs == ["x"]
    assert dummy.attrs["value"].size == 0
    assert dummy.assigned_device == CPU0
    (send,) = of_op(parts[CPU0], "_Send")
    assert send.inputs == [(dummy.name, 0)]
    (recv,) = of_op(parts[CPU1], "_Recv")
    assert send.attrs["tensor_name"] == recv.attrs["tensor_name"]
    (identity,) = of_op(parts[CPU1], "Identity")  # TensorFlow's: the control input is its output
    assert identity.inputs == [(recv.name, 0)]
    assert parts[CPU1]["y"].control_inputs == [identity.name]
    assert parts[CPU1]["z"].control_inputs == [identity.name]
    assert parts[CPU1]["y"].inputs == []
    assert dummy.name == "x/ctrl/_0"
    assert [send.name, recv.name, identity.name] == ["x/_1", "x/_2", "x/_3"]


Partitions = dict[str, dict[str, tuple[str, list[str], str | None]]]


async def _partitions(
    g: aiotf.Graph, fetches: Any, feeds: dict[Any, Any]
) -> tuple[Any, Partitions]:
    """Run ``g`` on two CPUs (no optimizations); its partitions: device -> name -> (op, inputs,
    tensor_name of a _Send/_Recv)."""
    options = aiotf.GraphOptions(
        optimizer_options=aiotf.OptimizerOptions(opt_level=-1),
        rewrite_options={"disable_meta_optimizer": True},  # grappler off, as recorded
    )
    config = aiotf.ConfigProto(device_count={"CPU": 2}, graph_options=options)
    metadata = aiotf.RunMetadata()
    async with aiotf.Session(graph=g, config=config) as sess:
        value = await sess.run(
            fetches,
            feeds,
            options=aiotf.RunOptions(output_partition_graphs=True),
            run_metadata=metadata,
        )
    parts: Partitions = {}
    for graph_def in metadata.partition_graphs:
        (device,) = {node.device for node in graph_def.node}
        parts[device] = {
            node.name: (
                node.op,
                list(node.input),
                node.attr["tensor_name"].s.decode() if "tensor_name" in node.attr else None,
            )
            for node in graph_def.node
        }
    return value, parts


# Recorded from TensorFlow 2.21 (tf.compat.v1 graph mode, ConfigProto(device_count={"CPU": 2}),
# grappler off, opt_level L0, RunOptions(output_partition_graphs=True)): names, ops, inputs and
# tensor names, whose numbers are the edges' ids in TF's client graph.


async def test_partition_graphs_read_like_tensorflows() -> None:
    """A two-device graph with a cross-device control edge, partitioned as TensorFlow 2.21 does."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [2], name="x")
        a = aiotf.negative(x, name="a")
        with aiotf.device("/cpu:1"):
            b = aiotf.square(a, name="b")
            with aiotf.control_dependencies([a]):
                n = aiotf.no_op(name="n")
        with aiotf.control_dependencies([n]):
            c = aiotf.add(b, a, name="c")
    value, parts = await _partitions(g, c, {x: [1.0, 2.0]})
    np.testing.assert_allclose(value, [0.0, 2.0])
    assert parts == {
        CPU0: {
            "b/_7": ("_Recv", [], "edge_5_b"),
            "n/_10": ("_Recv", [], "edge_7_n"),
            "n/_11": ("Identity", ["n/_10"], None),
            "_arg_x_0_0": ("_Arg", [], None),
            "a": ("Neg", ["_arg_x_0_0"], None),
            "a/_0": ("_Send", ["a"], "edge_3_a"),
            "a/ctrl/_2": ("Const", ["^a"], None),
            "a/_3": ("_Send", ["a/ctrl/_2"], "edge_4_a"),
            "c": ("AddV2", ["b/_7", "a", "^n/_11"], None),
            "_retval_c_0_0": ("_Retval", ["c"], None),
        },
        CPU1: {
            "a/_1": ("_Recv", [], "edge_3_a"),
            "b": ("Square", ["a/_1"], None),
            "a/_4": ("_Recv", [], "edge_4_a"),
            "a/_5": ("Identity", ["a/_4"], None),
            "n": ("NoOp", ["^a/_5"], None),
            "b/_6": ("_Send", ["b"], "edge_5_b"),
            "n/ctrl/_8": ("Const", ["^n"], None),
            "n/_9": ("_Send", ["n/ctrl/_8"], "edge_7_n"),
        },
    }


async def test_shared_pairs_and_sorted_fetches_number_as_tensorflows() -> None:
    """Two outputs of one node, pairs shared by consumers, control edges from several nodes and
    fetches given out of order (TF builds with the sorted signature)."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [4], name="x")
        s0, s1 = aiotf.split(x, 2, name="s")
        with aiotf.device("/cpu:1"):
            p = aiotf.add(s1, s0, name="p")
            q = aiotf.multiply(s1, s1, name="q")
            with aiotf.control_dependencies([s0.op]):
                r = aiotf.identity(q, name="r")
        u = aiotf.add(p, r, name="u")
        with aiotf.control_dependencies([p.op, q.op]):
            w = aiotf.identity(u, name="w")
    value, parts = await _partitions(g, [w, p], {x: np.arange(4, dtype=np.float32)})
    np.testing.assert_allclose(value[0], [6.0, 13.0])
    assert parts == {
        CPU0: {
            "s/split_dim": ("Const", [], None),
            "p/_9": ("_Recv", [], "edge_10_p"),
            "r/_11": ("_Recv", [], "edge_11_r"),
            "u": ("AddV2", ["p/_9", "r/_11"], None),
            "p/_14": ("_Recv", [], "edge_13_p"),
            "p/_15": ("Identity", ["p/_14"], None),
            "q/_18": ("_Recv", [], "edge_14_q"),
            "q/_19": ("Identity", ["q/_18"], None),
            "w": ("Identity", ["u", "^p/_15", "^q/_19"], None),
            "_arg_x_0_0": ("_Arg", [], None),
            "s": ("Split", ["s/split_dim", "_arg_x_0_0"], None),
            "s/_0": ("_Send", ["s:1"], "edge_4_s"),
            "s/_2": ("_Send", ["s"], "edge_5_s"),
            "s/ctrl/_4": ("Const", ["^s"], None),
            "s/_5": ("_Send", ["s/ctrl/_4"], "edge_9_s"),
            "_retval_p_0_0": ("_Retval", ["p/_9"], None),
            "_retval_w_0_1": ("_Retval", ["w"], None),
        },
        CPU1: {
            "s/_1": ("_Recv", [], "edge_4_s"),
            "s/_3": ("_Recv", [], "edge_5_s"),
            "p": ("AddV2", ["s/_1", "s/_3"], None),
            "q": ("Mul", ["s/_1", "s/_1"], None),
            "s/_6": ("_Recv", [], "edge_9_s"),
            "s/_7": ("Identity", ["s/_6"], None),
            "r": ("Identity", ["q", "^s/_7"], None),
            "p/_8": ("_Send", ["p"], "edge_10_p"),
            "r/_10": ("_Send", ["r"], "edge_11_r"),
            "p/ctrl/_12": ("Const", ["^p"], None),
            "p/_13": ("_Send", ["p/ctrl/_12"], "edge_13_p"),
            "q/ctrl/_16": ("Const", ["^q"], None),
            "q/_17": ("_Send", ["q/ctrl/_16"], "edge_14_q"),
        },
    }


async def test_a_cross_device_cond_numbers_as_tensorflows() -> None:
    """v1 cond: GraphConstructor's order (not GraphDef order) numbers nodes and edges, and a fed
    tensor's new edges come after every edge of the graph."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [], name="x")
        with aiotf.device("/cpu:1"):
            y = aiotf.square(x, name="y")
            p = aiotf.less(y, 10.0, name="p")
            r = aiotf.cond(
                p,
                lambda: aiotf.add(y, x, name="t"),
                lambda: aiotf.multiply(x, 2.0, name="f"),
                name="c",
            )
    value, parts = await _partitions(g, r, {x: 2.0})
    assert value == 6.0
    assert parts == {
        CPU1: {
            "_arg_x_0_0/_1": ("_Recv", [], "edge_23__arg_x_0_0"),
            "y": ("Square", ["_arg_x_0_0/_1"], None),
            "p/y": ("Const", [], None),
            "p": ("Less", ["y", "p/y"], None),
            "c/Switch": ("Switch", ["p", "p"], None),
            "c/switch_f": ("Identity", ["c/Switch"], None),
            "c/pred_id": ("Identity", ["p"], None),
            "c/t/Switch": ("Switch", ["y", "c/pred_id"], None),
            "c/pred_id/_2": ("_Send", ["c/pred_id"], "edge_11_c/pred_id"),
            "c/t/Switch_1/_5": ("_Recv", [], "edge_13_c/t/Switch_1"),
            "c/t": ("AddV2", ["c/t/Switch:1", "c/t/Switch_1/_5"], None),
            "c/f/y": ("Const", ["^c/switch_f"], None),
            "c/f/Switch/_7": ("_Recv", [], "edge_16_c/f/Switch"),
            "c/f": ("Mul", ["c/f/Switch/_7", "c/f/y"], None),
            "c/Merge": ("Merge", ["c/f", "c/t"], None),
            "c/Merge/_8": ("_Send", ["c/Merge"], "edge_26_c/Merge"),
        },
        CPU0: {
            "c/pred_id/_3": ("_Recv", [], "edge_11_c/pred_id"),
            "_arg_x_0_0": ("_Arg", [], None),
            "_arg_x_0_0/_0": ("_Send", ["_arg_x_0_0"], "edge_23__arg_x_0_0"),
            "c/t/Switch_1": ("Switch", ["_arg_x_0_0", "c/pred_id/_3"], None),
            "c/t/Switch_1/_4": ("_Send", ["c/t/Switch_1:1"], "edge_13_c/t/Switch_1"),
            "c/f/Switch": ("Switch", ["_arg_x_0_0", "c/pred_id/_3"], None),
            "c/f/Switch/_6": ("_Send", ["c/f/Switch"], "edge_16_c/f/Switch"),
            "c/Merge/_9": ("_Recv", [], "edge_26_c/Merge"),
            "_retval_c/Merge_0_0": ("_Retval", ["c/Merge/_9"], None),
        },
    }


def test_same_device_control_edge_is_kept() -> None:
    g = Graph(
        [
            const("x", CPU1),
            Node("y", lookup("NoOp"), {}, control_inputs=["x"], assigned_device=CPU1),
        ]
    )
    parts = partition(g, INCARNATIONS)
    assert list(parts) == [CPU1]
    assert parts[CPU1]["y"].control_inputs == ["x"]
    assert of_op(parts[CPU1], "_Recv") == []
