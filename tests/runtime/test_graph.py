"""The runtime's light graph form (``aiotf.runtime.graph``)."""

from __future__ import annotations

import aiotf
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime.graph import Graph, Node


def test_input_dtypes_follow_each_nodes_own_attrs_and_survive_a_copy() -> None:
    # Worked out once per node and kept: nodes of one op with different attrs must not share.
    f32 = Node("a", lookup("AddN"), {"T": aiotf.float32, "N": 3}, [("x", 0)] * 3)
    i32 = Node("b", lookup("AddN"), {"T": aiotf.int32, "N": 2}, [("y", 0)] * 2)
    mixed = Node("c", lookup("IdentityN"), {"T": [aiotf.int64, aiotf.string]}, [("z", 0)] * 2)
    assign = Node("d", lookup("Assign"), {"T": aiotf.float64}, [("v", 0), ("w", 0)])

    assert f32.input_dtypes() == (aiotf.float32,) * 3
    assert i32.input_dtypes() == (aiotf.int32,) * 2
    assert mixed.input_dtypes() == (aiotf.int64, aiotf.string)
    assert assign.input_dtypes() == (aiotf.float64._as_ref, aiotf.float64)
    assert f32.input_dtypes() is f32.input_dtypes()  # kept, not worked out again
    for node in (f32, i32, mixed, assign):
        assert node.copy().input_dtypes() == node.input_dtypes()
    fresh = Node("e", lookup("AddN"), {"T": aiotf.float32, "N": 2}, [("x", 0)] * 2)
    assert fresh.copy().input_dtypes() == (aiotf.float32,) * 2  # copied before first asked


def _node(name: str, op: str, inputs: list[str], controls: list[str] | None = None) -> Node:
    attrs: dict[str, object] = {"T": aiotf.float32}
    if op == "Const":
        attrs = {"dtype": aiotf.float32, "value": None}
    elif op == "Merge":
        attrs["N"] = len(inputs)
    elif op == "Enter":
        attrs.update(frame_name="f", is_constant=False, parallel_iterations=10)
    return Node(name, lookup(op), attrs, [(s, 0) for s in inputs], controls or [])


def test_topological_order_counts_every_edge_and_skips_only_loop_back_edges() -> None:
    # Inserted consumers first. ``double`` waits for both its edges from x (x + x) and for its
    # control edge from ``neg``: counted once each, it would come before ``neg``.
    graph = Graph(
        [
            _node("sum", "AddV2", ["double", "neg"]),
            _node("double", "AddV2", ["x", "x"], controls=["neg"]),
            _node("neg", "Neg", ["x"]),
            _node("x", "Const", []),
        ]
    )
    assert [n.name for n in graph.topological_order()] == ["x", "neg", "double", "sum"]

    # A loop: Merge takes Enter and the NextIteration of its own body; that back edge does not
    # hold Merge back. A cycle without one comes last, in insertion order.
    loop = Graph(
        [
            _node("a", "Neg", ["b"]),
            _node("b", "Neg", ["a"]),
            _node("merge", "Merge", ["enter", "next"]),
            _node("body", "Neg", ["merge"]),
            _node("next", "NextIteration", ["body"]),
            _node("enter", "Enter", ["x"]),
            _node("x", "Const", []),
        ]
    )
    order = [n.name for n in loop.topological_order()]
    assert order == ["x", "enter", "merge", "body", "next", "a", "b"]
