"""Grappler's canonical input order (``aiotf.runtime.canonicalizer``): which nodes it sorts, and
when grappler is on for a session's graph. TensorFlow's own answers for these (an AddN's bits,
broadcast errors' words under each gate) are recorded in kernels/test_tf_graphs.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework.op_def_registry import lookup
from aiotf.proto.rewriter_config_pb2 import RewriterConfig
from aiotf.runtime.canonicalizer import applies, canonicalize
from aiotf.runtime.graph import Graph, Node


def test_commutative_inputs_sort_by_their_input_strings_and_others_stay() -> None:
    def node(name: str, op: str, inputs: list[str], controls: list[str] | None = None) -> Node:
        edges = [(i.split(":")[0], int(i.split(":")[1]) if ":" in i else 0) for i in inputs]
        attrs: dict[str, Any] = {"T": aiotf.string if name == "strings" else aiotf.float32}
        if op == "AddN":
            attrs["N"] = len(inputs)
        return Node(name, lookup(op), attrs, edges, controls)

    g = Graph(
        [
            # by input string, byte order: "s:1" < "s_b" < "sa" (':' 0x3a, '_' 0x5f, 'a' 0x61),
            # "s:10" < "s:2"
            node("n", "AddN", ["sa", "s_b", "s:2", "s:10", "s:1"]),
            node("m", "Mul", ["p", "n"], ["z", "a", "z"]),
            node("v1", "Add", ["p", "n"]),  # not marked commutative, but grappler takes it so
            node("strings", "Add", ["p", "n"]),  # ... unless it concatenates strings
            node("d", "Sub", ["p", "n"]),
            node("x", "Maximum", ["p", "n"]),  # not marked commutative in TensorFlow either
            node("q", "Neg", ["p"], ["z", "a"]),
        ]
    )
    canonicalize(g)
    assert g["n"].inputs == [("s", 1), ("s", 10), ("s", 2), ("s_b", 0), ("sa", 0)]
    assert g["m"].inputs == g["v1"].inputs == [("n", 0), ("p", 0)]
    for name in ("strings", "d", "x"):
        assert g[name].inputs == [("p", 0), ("n", 0)], name
    assert g["m"].control_inputs == ["a", "z"] and g["q"].control_inputs == ["a", "z"]


def _config(**rewrite_options: Any) -> Any:
    return aiotf.ConfigProto(graph_options=aiotf.GraphOptions(rewrite_options=rewrite_options))


OFF = RewriterConfig.OFF


@pytest.mark.parametrize(
    ("nodes", "config", "sorted_"),
    [
        (3, None, False),  # under grappler's least graph size
        (4, None, True),
        (3, _config(min_graph_nodes=-1), True),
        (3, _config(min_graph_nodes=3), True),
        (4, _config(min_graph_nodes=5), False),
        (5, _config(min_graph_nodes=5), True),
        (4, _config(disable_meta_optimizer=True), False),
        (4, _config(common_subgraph_elimination=OFF), False),
        (4, _config(arithmetic_optimization=OFF), False),
        (4, _config(optimizers=["constfold"]), False),
        (4, _config(optimizers=["common_subgraph_elimination"]), True),
        (4, aiotf.ConfigProto(graph_options=aiotf.GraphOptions(place_pruned_graph=True)), False),
        (4, aiotf.ConfigProto(), True),
    ],
)
def test_grappler_runs_on_a_sessions_graph_when_tensorflow_would(
    nodes: int, config: Any, sorted_: bool
) -> None:
    # What sessions make of these is checked against TensorFlow's recorded words in
    # kernels/test_tf_graphs.py (the add_incompatible_* cases).
    assert applies(config, nodes) == sorted_


async def test_a_graph_that_grows_past_the_least_size_is_sorted_from_then_on() -> None:
    g = aiotf.Graph()
    with g.as_default():
        zz = aiotf.placeholder(aiotf.float32, name="zz")
        aa = aiotf.placeholder(aiotf.float32, name="aa")
        s = aiotf.add(zz, aa, name="s")
    feeds = {zz: np.zeros(3, np.float32), aa: np.zeros(2, np.float32)}
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(aiotf.errors.InvalidArgumentError, match=r"\[3\] vs. \[2\]"):
            await sess.run(s, feeds)
        with g.as_default():
            t = aiotf.negative(s, name="t")  # the fourth node: the session's graph is extended
        with pytest.raises(aiotf.errors.InvalidArgumentError, match=r"\[2\] vs. \[3\]"):
            await sess.run(t, feeds)
        with g.as_default():
            u = aiotf.add(zz, aa, name="u")  # added to a graph already in order
        with pytest.raises(aiotf.errors.InvalidArgumentError, match=r"\[2\] vs. \[3\]"):
            await sess.run(u, feeds)
        assert g.get_operation_by_name("s").inputs[0].name == "zz:0"  # the user's graph as built


async def test_a_function_built_before_the_graph_was_sorted_is_built_again() -> None:
    # TensorFlow 2.21's graph of a call to a function adding zz_in and aa_in, without its
    # fourth node: three nodes, too few for grappler, until the session's graph grows.
    from google.protobuf import text_format

    data = Path(__file__).parents[1] / "kernels" / "data" / "function_incompatible.pbtxt"
    graph_def = text_format.Parse(data.read_text(), aiotf.GraphDef())
    kept = [n for n in graph_def.node if n.name != "unused"]
    del graph_def.node[:]
    graph_def.node.extend(kept)
    g = aiotf.Graph()
    with g.as_default():
        aiotf.import_graph_def(graph_def, name="")
    call = g.get_operation_by_name("PartitionedCall").outputs[0]
    feeds = {"zz:0": np.zeros(3, np.float32), "aa:0": np.zeros(2, np.float32)}
    async with aiotf.Session(graph=g) as sess:
        with pytest.raises(aiotf.errors.InvalidArgumentError, match=r"\[3\] vs. \[2\]"):
            await sess.run(call, feeds)
        with g.as_default():
            aiotf.constant(1.0, name="fourth")
        with pytest.raises(aiotf.errors.InvalidArgumentError, match=r"\[2\] vs. \[3\]"):
            await sess.run(call, feeds)
