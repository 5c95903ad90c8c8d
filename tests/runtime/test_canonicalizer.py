"""Grappler's canonical input order (``aiotf.runtime.canonicalizer``): which nodes it sorts, and
when grappler is on for a session's graph (each gate measured on TensorFlow 2.21 with the
broadcast error below; TensorFlow's own answers for AddN are in kernels/test_tf_graphs.py)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime.canonicalizer import applies, canonicalize
from aiotf.runtime.graph import Graph, Node

F32 = {"T": aiotf.float32}


def test_commutative_inputs_sort_by_their_input_strings_and_others_stay() -> None:
    g = Graph(
        [
            Node("p", lookup("Placeholder"), {"dtype": aiotf.float32}),
            Node("s", lookup("Split"), {"T": aiotf.float32, "num_split": 2}, [("d", 0), ("p", 0)]),
            # "s:1" < "s_b" < "sa" in byte order (':' 0x3a, '_' 0x5f, 'a' 0x61)
            Node("n", lookup("AddN"), {**F32, "N": 3}, [("sa", 0), ("s_b", 0), ("s", 1)]),
            Node("m", lookup("Mul"), F32, [("p", 0), ("n", 0)], ["z", "a", "z"]),
            Node("d", lookup("Sub"), F32, [("p", 0), ("n", 0)]),
            Node("q", lookup("Neg"), F32, [("p", 0)], ["z", "a"]),
        ]
    )
    canonicalize(g)
    assert g["n"].inputs == [("s", 1), ("s_b", 0), ("sa", 0)]
    assert g["m"].inputs == [("n", 0), ("p", 0)]
    assert g["d"].inputs == [("p", 0), ("n", 0)]  # Sub is not commutative
    assert g["m"].control_inputs == ["a", "z"] and g["q"].control_inputs == ["a", "z"]


def _config(**rewrite_options: Any) -> Any:
    return aiotf.ConfigProto(graph_options=aiotf.GraphOptions(rewrite_options=rewrite_options))


OFF = 2


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
async def test_grappler_sorts_a_sessions_graph_when_tensorflow_would(
    nodes: int, config: Any, sorted_: bool
) -> None:
    assert applies(config, nodes) == sorted_
    g = aiotf.Graph()
    with g.as_default():
        zz = aiotf.placeholder(aiotf.float32, name="zz")
        aa = aiotf.placeholder(aiotf.float32, name="aa")
        s = aiotf.add(zz, aa, name="s")
        for i in range(nodes - 3):
            aiotf.constant(1.0, name=f"unused{i}")
    words = re.escape("[2] vs. [3]" if sorted_ else "[3] vs. [2]")
    async with aiotf.Session(graph=g, config=config) as sess:
        with pytest.raises(
            aiotf.errors.InvalidArgumentError, match=f"Incompatible shapes: {words}"
        ):
            await sess.run(s, {zz: np.zeros(3, np.float32), aa: np.zeros(2, np.float32)})


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
