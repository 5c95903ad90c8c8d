"""The GraphOptimizer's rewrites on the compiler IR: folding, push-down, CSE, identities, dead nodes,
which of them the options turn on, and the fixpoint bound."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import dtypes
from aiotf.framework.op_def_registry import ArgDef, AttrDef, OpDef, lookup
from aiotf.kernels import registry as kernel_registry
from aiotf.proto import RewriterConfig
from aiotf.runtime import graph_optimizer
from aiotf.runtime.constant_folding import fold_constants
from aiotf.runtime.constant_push_down import push_down_constants
from aiotf.runtime.cse import eliminate_common_subexpressions
from aiotf.runtime.graph import Graph, Node, parse_tensor_name
from aiotf.runtime.graph_optimizer import (
    MAX_ROUNDS,
    enabled_passes,
    optimize,
    remove_dead_nodes,
    remove_identity_nodes,
)

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
F32 = dtypes.float32
NOTHING: frozenset[str] = frozenset()
CF_NAME = re.compile(r"^(?P<node>.+)/_(?P<n>\d+)__cf__(?P<m>\d+)$")


def add(
    g: Graph,
    name: str,
    op: str | OpDef,
    inputs: Iterable[str] = (),
    controls: Iterable[str] = (),
    device: str = CPU0,
    **attrs: Any,
) -> Node:
    op_def = lookup(op) if isinstance(op, str) else op
    all_attrs = op_def.default_attrs()
    all_attrs.update(attrs)
    edges = [parse_tensor_name(i) for i in inputs]
    return g.add(Node(name, op_def, all_attrs, edges, list(controls), device, device))


def const(g: Graph, name: str, value: Any, controls: Iterable[str] = (), **kw: Any) -> Node:
    array = np.asarray(value, dtype=kw.pop("np_dtype", np.float32))
    dtype = dtypes.as_dtype(array.dtype)
    return add(g, name, "Const", controls=controls, value=array, dtype=dtype, **kw)


def placeholder(g: Graph, name: str = "x", dtype: dtypes.DType = F32) -> Node:
    return add(g, name, "Placeholder", dtype=dtype)


def folded(g: Graph) -> list[Node]:
    return [n for n in g if CF_NAME.match(n.name)]


# -- constant folding ------------------------------------------------------------------------------


def test_folds_a_constant_subgraph_into_one_const_per_boundary_tensor() -> None:
    g = Graph()
    x = placeholder(g)
    const(g, "c1", [1.0, 2.0])
    const(g, "c2", [3.0, 4.0])
    add(g, "s", "AddV2", ["c1", "c2"], T=F32)
    add(g, "n", "Neg", ["s"], T=F32)
    add(g, "out", "AddV2", [x.name, "n"], T=F32)
    assert fold_constants(g)
    (cf,) = folded(g)
    match = CF_NAME.match(cf.name)
    assert match is not None and match["node"] == "n" and match["n"] == "0"
    assert cf.op == "Const" and cf.attrs["dtype"] is F32
    np.testing.assert_array_equal(cf.attrs["value"], [-4.0, -6.0])
    assert g["out"].inputs == [("x", 0), (cf.name, 0)]
    assert cf.assigned_device == CPU0 and cf.requested_device == CPU0
    assert cf.control_inputs == []


def test_folded_names_count_per_graph_and_per_process() -> None:
    g = Graph()
    x = placeholder(g)
    const(g, "c", 1.0)
    add(g, "a", "Neg", ["c"], T=F32)
    add(g, "b", "Square", ["c"], T=F32)
    add(g, "out_a", "AddV2", [x.name, "a"], T=F32)
    add(g, "out_b", "AddV2", [x.name, "b"], T=F32)
    assert fold_constants(g)
    parts = sorted(
        (m["node"], int(m["n"]), int(m["m"])) for n in folded(g) if (m := CF_NAME.match(n.name))
    )
    assert [(node, n) for node, n, _ in parts] == [("a", 0), ("b", 1)]
    assert parts[1][2] == parts[0][2] + 1  # TensorFlow's UniqueConstantId: one counter per process


def test_folded_const_keeps_the_control_dependencies_tensorflow_keeps() -> None:
    g = Graph()
    x = placeholder(g)
    init = add(g, "init", "NoOp")
    const(g, "c0", 1.0)
    const(g, "c1", 2.0, controls=[x.name])  # a non-constant control source: kept
    const(g, "c2", 3.0, controls=["c0"])  # a constant control source: replaced by its own (none)
    add(g, "s", "AddV2", ["c1", "c2"], controls=[init.name], T=F32)
    add(g, "t", "Neg", ["c2"], T=F32)
    add(g, "out", "AddN", [x.name, "s", "t"], T=F32, N=3)
    assert fold_constants(g)
    by_node = {m["node"]: n for n in folded(g) if (m := CF_NAME.match(n.name))}
    assert sorted(by_node["s"].control_inputs) == ["init", "x"]
    assert by_node["t"].control_inputs == []
    np.testing.assert_array_equal(by_node["s"].attrs["value"], 5.0)


def test_folded_const_is_on_the_device_of_the_node_it_replaces() -> None:
    g = Graph()
    const(g, "c", [1.0], device=CPU1)
    add(g, "n", "Neg", ["c"], device=CPU1, T=F32)
    add(g, "send", "_Send", ["n"], device=CPU1, T=F32, tensor_name="n:0", send_device=CPU1,
        send_device_incarnation=1, recv_device=CPU0)  # fmt: skip
    assert fold_constants(g)
    (cf,) = folded(g)
    assert cf.assigned_device == CPU1 and g["send"].inputs == [(cf.name, 0)]


def test_nothing_to_fold_when_only_constants_and_non_foldable_nodes() -> None:
    g = Graph()
    x = placeholder(g)
    const(g, "c", 1.0)
    add(g, "out", "AddV2", [x.name, "c"], T=F32)
    assert not fold_constants(g)
    assert [n.name for n in g] == ["x", "c", "out"]


def test_stateful_nodes_and_what_they_feed_are_not_folded() -> None:
    g = Graph()
    add(g, "v", "VariableV2", shape=aiotf.TensorShape([2]), dtype=F32)
    add(g, "read", "Identity", ["v"], T=F32)
    add(g, "n", "Neg", ["read"], T=F32)
    add(g, "arg", "_Arg", T=F32, index=0)
    add(g, "m", "Neg", ["arg"], T=F32)
    add(g, "out", "AddV2", ["n", "m"], T=F32)
    assert not fold_constants(g)
    assert folded(g) == []


@pytest.mark.parametrize("op", ["Enter", "Exit", "NextIteration"])
def test_control_flow_nodes_are_not_folded(op: str) -> None:
    g = Graph()
    const(g, "c", 1.0)
    attrs: dict[str, Any] = {"frame_name": "loop"} if op == "Enter" else {}
    add(g, "cf", op, ["c"], T=F32, **attrs)
    add(g, "n", "Neg", ["cf"], T=F32)
    add(g, "out", "Identity", ["n"], T=F32)
    assert not fold_constants(g)


def test_switch_and_merge_of_constants_are_not_folded() -> None:
    g = Graph()
    const(g, "c", 1.0)
    const(g, "p", True, np_dtype=np.bool_)
    add(g, "sw", "Switch", ["c", "p"], T=F32)
    add(g, "m", "Merge", ["sw", "sw:1"], T=F32, N=2)
    add(g, "cond", "LoopCond", ["p"])
    add(g, "out", "Neg", ["m"], T=F32)
    add(g, "out2", "LogicalNot", ["cond"])
    assert not fold_constants(g)


def test_a_node_whose_kernel_raises_is_left_to_fail_at_run_time() -> None:
    g = Graph()
    x = placeholder(g, dtype=dtypes.int32)
    const(g, "c", [1.0, 2.0, 3.0])
    const(g, "shape", [2, 2], np_dtype=np.int32)
    add(g, "bad", "Reshape", ["c", "shape"], T=F32, Tshape=dtypes.int32)
    add(g, "after", "Neg", ["bad"], T=F32)
    add(g, "ok", "Neg", ["shape"], T=dtypes.int32)
    add(g, "out", "AddN", [x.name, "ok"], T=dtypes.int32, N=2)
    add(g, "out2", "Identity", ["after"], T=F32)
    assert fold_constants(g)
    assert [m["node"] for n in folded(g) if (m := CF_NAME.match(n.name))] == ["ok"]
    assert g["bad"].inputs == [("c", 0), ("shape", 0)] and g["out2"].inputs == [("after", 0)]


def test_oversized_results_are_not_folded() -> None:
    g = Graph()
    x = placeholder(g)
    const(g, "c", np.ones(16))
    add(g, "n", "Neg", ["c"], T=F32)
    add(g, "out", "AddV2", [x.name, "n"], T=F32)
    assert not fold_constants(g, max_bytes=63)
    assert fold_constants(g, max_bytes=64)


def test_max_folded_constant_in_bytes_reaches_the_folding_pass() -> None:
    g = Graph()
    x = placeholder(g)
    const(g, "c", np.ones(16))
    add(g, "n", "Neg", ["c"], T=F32)
    add(g, "out", "AddV2", [x.name, "n"], T=F32)
    options = aiotf.OptimizerOptions(max_folded_constant_in_bytes=32)
    assert not optimize(g, enabled_passes(options))
    assert optimize(g, enabled_passes(aiotf.OptimizerOptions()))


@pytest.fixture
def scratch_kernels(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Kernel registrations made in the test vanish after it."""
    monkeypatch.setattr(kernel_registry, "_REGISTRY", dict(kernel_registry._REGISTRY))
    yield


def _unary_op(name: str) -> OpDef:
    t = ArgDef("x", type_attr="T")
    return OpDef(name, (t,), (ArgDef("y", type_attr="T"),), {"T": AttrDef("T", "type")})


@pytest.mark.usefixtures("scratch_kernels")
@pytest.mark.parametrize("kind", ["async", "ctx"])
def test_kernels_that_are_async_or_want_the_step_context_are_not_folded(kind: str) -> None:
    op = _unary_op(f"TestFold{kind.title()}")
    calls: list[str] = []
    if kind == "async":

        async def kernel(x: Any) -> Any:
            calls.append("ran")
            return x

        kernel_registry.register_kernel(op.name)(kernel)
    else:

        def kernel_ctx(ctx: Any, x: Any) -> Any:
            calls.append("ran")
            return x

        kernel_registry.register_kernel(op.name)(kernel_ctx)
    g = Graph()
    x = placeholder(g)
    const(g, "c", 1.0)
    add(g, "k", op, ["c"], T=F32)
    add(g, "out", "AddV2", [x.name, "k"], T=F32)
    assert not fold_constants(g)
    assert calls == []


def test_ref_and_resource_edges_are_not_folded() -> None:
    ref_op = OpDef("TestRefOut", (ArgDef("x", type_attr="T"),),
                   (ArgDef("y", type_attr="T", is_ref=True),), {"T": AttrDef("T", "type")})  # fmt: skip
    g = Graph()
    const(g, "c", 1.0)
    add(g, "r", ref_op, ["c"], T=F32)
    add(g, "h", "Const", value=np.array(b"h", object), dtype=dtypes.resource)
    add(g, "out", "Identity", ["r"], T=F32)
    add(g, "out2", "Identity", ["h"], T=dtypes.resource)
    assert not fold_constants(g)


def test_fold_does_not_pull_a_node_out_of_its_loop_frame() -> None:
    """A Const in a while body waits for the pivot; so does the Const that replaces its consumer."""
    g = Graph()
    const(g, "i0", 0.0)
    add(g, "enter", "Enter", ["i0"], T=F32, frame_name="loop")
    add(g, "merge", "Merge", ["enter", "next"], T=F32, N=2)
    const(g, "limit", 3.0, controls=["merge"])
    add(g, "less", "Less", ["merge", "limit"], T=F32)
    add(g, "cond", "LoopCond", ["less"])
    add(g, "switch", "Switch", ["merge", "cond"], T=F32)
    add(g, "pivot", "Identity", ["switch:1"], T=F32)
    const(g, "step", 0.5, controls=["pivot"])
    add(g, "two_steps", "Mul", ["step", "step"], T=F32)  # foldable: 0.25, still in the frame
    add(g, "body", "AddV2", ["pivot", "two_steps"], T=F32)
    add(g, "next", "NextIteration", ["body"], T=F32)
    add(g, "exit", "Exit", ["switch"], T=F32)
    assert fold_constants(g)
    (cf,) = folded(g)
    assert cf.control_inputs == ["pivot"]
    assert g["body"].inputs == [("pivot", 0), (cf.name, 0)]
    np.testing.assert_array_equal(cf.attrs["value"], 0.25)


# -- constant push-down ----------------------------------------------------------------------------


def chain(
    g: Graph, n: int, op: str = "AddV2", dtype: dtypes.DType = F32, shape: tuple[int, ...] = (4,)
) -> str:
    """x -> ((x op c0) op c1) ... op c<n-1>; returns the last node's name."""
    x = placeholder(g, dtype=dtype)
    prev = x.name
    rng = np.random.default_rng(0)
    for i in range(n):
        const(g, f"c{i}", rng.standard_normal(shape), np_dtype=dtype.np_dtype)
        prev = add(g, f"a{i}", op, [prev, f"c{i}"], T=dtype).name
    return prev


def test_push_down_turns_a_chain_into_x_plus_one_constant_after_folding() -> None:
    g = Graph()
    last = chain(g, 5)
    add(g, "out", "Identity", [last], T=F32)
    consts = [g[f"c{i}"].attrs["value"] for i in range(5)]
    optimize(g, enabled_passes(None), frozenset({"out"}))
    assert sorted(n.op for n in g) == ["AddV2", "Const", "Identity", "Placeholder"]
    assert g["a4"].inputs[0] == ("x", 0)
    (cf,) = folded(g)
    np.testing.assert_allclose(cf.attrs["value"], sum(consts), rtol=1e-6)


def test_push_down_works_for_mul_and_integers_exactly() -> None:
    g = Graph()
    last = chain(g, 4, op="Mul", dtype=dtypes.int32)
    add(g, "out", "Identity", [last], T=dtypes.int32)
    assert push_down_constants(g)
    assert g["a3"].inputs[0] == ("x", 0)


@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.bfloat16, dtypes.bool])
def test_push_down_leaves_low_precision_and_non_numeric_chains(dtype: dtypes.DType) -> None:
    g = Graph()
    x = placeholder(g, dtype=dtype)
    const(g, "c0", 1, np_dtype=dtype.np_dtype)
    const(g, "c1", 1, np_dtype=dtype.np_dtype)
    op = OpDef(
        "AddV2", lookup("AddV2").inputs, lookup("AddV2").outputs, {"T": AttrDef("T", "type")}
    )
    add(g, "a0", op, [x.name, "c0"], T=dtype)
    add(g, "a1", op, ["a0", "c1"], T=dtype)
    assert not push_down_constants(g)


def test_push_down_leaves_a_child_with_other_consumers_or_kept() -> None:
    g = Graph()
    last = chain(g, 2)
    add(g, "other", "Neg", ["a0"], T=F32)
    add(g, "out", "AddV2", [last, "other"], T=F32)
    assert not push_down_constants(g)
    g2 = Graph()
    chain(g2, 2)
    assert not push_down_constants(g2, frozenset({"a0"}))


def test_push_down_needs_matching_ops_and_dtypes() -> None:
    g = Graph()
    x = placeholder(g)
    const(g, "c0", 1.0)
    const(g, "c1", 2.0)
    add(g, "a0", "AddV2", [x.name, "c0"], T=F32)
    add(g, "a1", "Mul", ["a0", "c1"], T=F32)
    assert not push_down_constants(g)


@pytest.mark.parametrize(
    ("c1_shape", "c2_shape", "pushed"),
    [
        ((4,), (4,), True),
        ((), (4,), True),  # c1 all ones: the failure stays where it was
        ((1, 4), (3, 1), False),  # both widen: x (2, 4) could fail at either node
        ((4,), (), True),
        ((4,), (2, 4), False),  # c2 would widen c1: an x of shape (3, 4) fails elsewhere
        ((4,), (3,), False),
    ],
)
def test_push_down_keeps_shapes_and_failures(
    c1_shape: tuple[int, ...], c2_shape: tuple[int, ...], pushed: bool
) -> None:
    g = Graph()
    x = placeholder(g)
    const(g, "c0", np.ones(c1_shape))
    const(g, "c1", np.ones(c2_shape))
    add(g, "a0", "AddV2", [x.name, "c0"], T=F32)
    add(g, "a1", "AddV2", ["a0", "c1"], T=F32)
    assert push_down_constants(g) is pushed


def test_push_down_reaches_a_fixpoint() -> None:
    g = Graph()
    chain(g, 6)
    assert push_down_constants(g)
    assert not push_down_constants(g)


# -- common subexpression elimination --------------------------------------------------------------


def test_cse_merges_duplicates_and_redirects_their_consumers() -> None:
    g = Graph()
    x = placeholder(g)
    add(g, "n1", "Neg", [x.name], T=F32)
    add(g, "n2", "Neg", [x.name], T=F32)
    add(g, "s1", "AddV2", ["n1", "x"], T=F32)
    add(g, "s2", "AddV2", ["x", "n2"], T=F32)  # commutative: the same sum
    add(g, "out", "Sub", ["s1", "s2"], controls=["n2"], T=F32)
    assert eliminate_common_subexpressions(g)
    assert "n2" not in g and "s2" not in g
    assert g["out"].inputs == [("s1", 0), ("s1", 0)] and g["out"].control_inputs == ["n1"]
    assert not eliminate_common_subexpressions(g)


def test_cse_respects_order_for_non_commutative_ops() -> None:
    g = Graph()
    x, y = placeholder(g, "x"), placeholder(g, "y")
    add(g, "d1", "Sub", [x.name, y.name], T=F32)
    add(g, "d2", "Sub", [y.name, x.name], T=F32)
    assert not eliminate_common_subexpressions(g)


def test_cse_compares_control_inputs_as_a_set_and_device() -> None:
    g = Graph()
    x = placeholder(g)
    placeholder(g, "a")  # placeholders: never merged with each other
    placeholder(g, "b")
    add(g, "n1", "Neg", [x.name], controls=["a", "b"], T=F32)
    add(g, "n2", "Neg", [x.name], controls=["b", "a"], T=F32)
    add(g, "n3", "Neg", [x.name], controls=["a"], T=F32)
    add(g, "n4", "Neg", [x.name], controls=["a", "b"], device=CPU1, T=F32)
    assert eliminate_common_subexpressions(g)
    assert "n2" not in g and {"n1", "n3", "n4"} <= {n.name for n in g}


def test_cse_merges_no_ops_with_the_same_control_inputs() -> None:
    g = Graph()
    x = placeholder(g)
    add(g, "a", "NoOp", controls=[x.name])
    add(g, "b", "NoOp", controls=[x.name])
    add(g, "out", "Neg", [x.name], controls=["b"], T=F32)
    assert eliminate_common_subexpressions(g)
    assert "b" not in g and g["out"].control_inputs == ["a"]


def test_cse_merges_equal_constants_bitwise() -> None:
    g = Graph()
    const(g, "a", [1.0, np.nan])
    const(g, "b", [1.0, np.nan])
    const(g, "c", [1.0, 2.0])
    const(g, "d", [1.0, 2.0], np_dtype=np.float64)
    assert eliminate_common_subexpressions(g)
    assert [n.name for n in g] == ["a", "c", "d"]


def test_cse_never_merges_stateful_nodes_ref_reads_or_placeholders() -> None:
    g = Graph()
    for v in ("v1", "v2"):
        add(g, v, "VariableV2", shape=aiotf.TensorShape([2]), dtype=F32)
    add(g, "r1", "Identity", ["v1"], T=F32)
    add(g, "r2", "Identity", ["v1"], T=F32)
    placeholder(g, "p1")
    placeholder(g, "p2")
    assert not eliminate_common_subexpressions(g)


def test_cse_never_removes_a_kept_node() -> None:
    g = Graph()
    x = placeholder(g)
    add(g, "n1", "Neg", [x.name], T=F32)
    add(g, "n2", "Neg", [x.name], T=F32)
    assert not eliminate_common_subexpressions(g, frozenset({"n2"}))


# -- identity and dead-node removal ----------------------------------------------------------------


def test_identity_removal_rewires_data_and_control_consumers() -> None:
    g = Graph()
    x = placeholder(g)
    add(g, "n", "Neg", [x.name], T=F32)
    add(g, "i", "Identity", ["n"], T=F32)
    add(g, "j", "Identity", ["i"], T=F32)
    add(g, "out", "Square", ["j"], controls=["i"], T=F32)
    assert remove_identity_nodes(g, NOTHING)
    assert "i" not in g and "j" not in g
    assert g["out"].inputs == [("n", 0)] and g["out"].control_inputs == ["n"]


def test_identity_removal_keeps_ref_reads_kept_controlled_and_unconsumed_identities() -> None:
    g = Graph()
    x = placeholder(g)
    add(g, "v", "VariableV2", shape=aiotf.TensorShape([2]), dtype=F32)
    add(g, "deref", "Identity", ["v"], T=F32)
    add(g, "kept", "Identity", [x.name], T=F32)
    add(g, "ctl", "Identity", [x.name], controls=["kept"], T=F32)
    add(g, "fetched", "Identity", [x.name], T=F32)  # no consumers: it names a fetch
    add(g, "out", "AddN", ["deref", "kept", "ctl"], T=F32, N=3)
    assert not remove_identity_nodes(g, frozenset({"kept"}))


def test_identity_after_switch_or_recv_stays() -> None:
    g = Graph()
    x = placeholder(g)
    p = placeholder(g, "p", dtypes.bool)
    add(g, "sw", "Switch", [x.name, p.name], T=F32)
    add(g, "pivot", "Identity", ["sw:1"], T=F32)
    add(g, "recv", "_Recv", tensor_type=F32, tensor_name="t", send_device=CPU1,
        send_device_incarnation=1, recv_device=CPU0)  # fmt: skip
    add(g, "after_recv", "Identity", ["recv"], T=F32)
    add(g, "out", "AddV2", ["pivot", "after_recv"], T=F32)
    assert not remove_identity_nodes(g, NOTHING)


def test_dead_node_removal_sweeps_whole_dead_chains_but_keeps_what_must_stay() -> None:
    g = Graph()
    x = placeholder(g)
    add(g, "a", "Neg", [x.name], T=F32)
    add(g, "b", "Neg", ["a"], T=F32)
    add(g, "c", "Neg", ["b"], T=F32)
    add(g, "kept", "Neg", [x.name], T=F32)
    add(g, "exit", "Exit", [x.name], T=F32)
    add(g, "v", "VariableV2", shape=aiotf.TensorShape([2]), dtype=F32)
    add(g, "init", "NoOp")
    assert remove_dead_nodes(g, frozenset({"kept"}))
    assert [n.name for n in g] == ["x", "kept", "exit", "v", "init"]


# -- options and the fixpoint ----------------------------------------------------------------------


def names(passes: list[graph_optimizer.Rewrite]) -> list[str]:
    return [p.__name__ for p in passes]


FOLD, CSE = "constant_folding", "eliminate_common_subexpressions"
DEAD, IDENTITY = "remove_dead_nodes", "remove_identity_nodes"
POOLS = "fuse_pools"
PAIRS = "fuse_matmul_pairs"
SUMS = "fuse_matmul_sums"
LAYOUTS = "mark_any_layouts"


def test_remapping_off_leaves_the_remappers_fusions_out() -> None:
    assert names(enabled_passes(None, remapper=False)) == [FOLD, CSE, LAYOUTS]
    config = aiotf.ConfigProto()
    assert graph_optimizer.remapping(config) and graph_optimizer.remapping(None)
    config.graph_options.rewrite_options.remapping = RewriterConfig.ON
    assert graph_optimizer.remapping(config)
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    assert not graph_optimizer.remapping(config)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (None, [FOLD, CSE, POOLS, PAIRS, SUMS, LAYOUTS]),
        ({}, [FOLD, CSE, POOLS, PAIRS, SUMS, LAYOUTS]),
        ({"opt_level": aiotf.OptimizerOptions.L1}, [FOLD, CSE, POOLS, PAIRS, SUMS, LAYOUTS]),
        # L1 forces both on: the flags cannot turn them off (TensorFlow's GraphOptimizer)
        (
            {"do_constant_folding": False, "do_common_subexpression_elimination": False},
            [FOLD, CSE, POOLS, PAIRS, SUMS, LAYOUTS],
        ),
        # L0 runs the ops as written: the remapper's fusion and the layouts only at L1
        ({"opt_level": aiotf.OptimizerOptions.L0}, []),
        ({"opt_level": aiotf.OptimizerOptions.L0, "do_constant_folding": True}, [FOLD]),
        (
            {"opt_level": aiotf.OptimizerOptions.L0, "do_common_subexpression_elimination": True},
            [CSE],
        ),
        ({"opt_level": aiotf.OptimizerOptions.L0, "do_function_inlining": True}, [DEAD, IDENTITY]),
        ({"do_function_inlining": True}, [DEAD, IDENTITY, FOLD, CSE, POOLS, PAIRS, SUMS, LAYOUTS]),
    ],
)
def test_enabled_passes_combine_level_and_flags_like_tensorflow(
    options: dict[str, Any] | None, expected: list[str]
) -> None:
    opts = None if options is None else aiotf.OptimizerOptions(**options)
    assert names(enabled_passes(opts)) == expected


def counting(changes: Callable[[int], bool]) -> tuple[graph_optimizer.Rewrite, list[int]]:
    calls: list[int] = []

    def rewrite(graph: Graph, keep: frozenset[str]) -> bool:
        calls.append(len(calls))
        return changes(len(calls))

    return rewrite, calls


def test_fixpoint_stops_after_a_round_without_change() -> None:
    rewrite, calls = counting(lambda n: n <= 2)
    assert optimize(Graph(), [rewrite])
    assert len(calls) == 3


def test_fixpoint_is_bounded_at_ten_rounds() -> None:
    rewrite, calls = counting(lambda n: True)
    assert optimize(Graph(), [rewrite])
    assert len(calls) == MAX_ROUNDS == 10


def test_nothing_changes_nothing() -> None:
    rewrite, calls = counting(lambda n: False)
    assert not optimize(Graph(), [rewrite])
    assert len(calls) == 1
