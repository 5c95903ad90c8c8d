"""The runtime's light graph form (``aiotf.runtime.graph``)."""

from __future__ import annotations

import aiotf
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime.graph import Node


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
