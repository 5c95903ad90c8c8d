"""Graphs TensorFlow 2.21 built with ``tf.compat.v1`` that need Assert, SpaceToBatchND and
BatchToSpaceND: an atrous depthwise convolution (``rate=[2, 2]``, input shape unknown, and a
known-shape VALID one), the sparse and dense softmax cross entropies with unknown static shapes
(the sparse one checks its shapes with an ``assert_equal``), and a guarded ``tf.Assert``; and
graphs whose answer depends on grappler's sorting of commutative inputs: an AddN of sixteen
(bit for bit), and a broadcast error's words for each of grappler's gates (the graph's size,
its options) and for ops it takes for commutative or not; kernels' errors at run time
(``at_run_*``: inputs of unknown static shape, fed values TensorFlow's kernels refuse); and
kernels' values at the edges (``values_*``, bit for bit: signed zeros, halves, infinities,
NaN, negative integer division, overflow).

``data/`` holds each GraphDef as text and, per step, the feeds and TensorFlow's answer or error
words (written by ``data/record_tf_graphs.py``); the steps of a case run in order in one session.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format

import aiotf as tf

DATA = Path(__file__).parent / "data"
CASES: dict[str, Any] = json.loads((DATA / "cases.json").read_text())
BIT_FOR_BIT = {"add_n_sorted"}  # sums whose rounding is part of TensorFlow's answer
# values_* cases of functions TensorFlow's kernels approximate (not correctly rounded)
APPROXIMATE = {
    f"values_{op}"
    for op in (
        "elu", "exp", "expm1", "log1p", "reciprocal", "rsqrt", "selu", "sigmoid", "softplus",
        "tanh", "softmax_inf_row", "log_softmax_inf_row",
    )
}  # fmt: skip


def load(name: str) -> tf.Graph:
    graph_def = text_format.Parse((DATA / f"{name}.pbtxt").read_text(), tf.GraphDef())
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(graph_def, name="")
    return g


@pytest.mark.parametrize("name", sorted(CASES))
async def test_tensorflow_graph_runs_with_tensorflows_answers(name: str) -> None:
    case = CASES[name]
    with np.load(DATA / f"{name}.npz", allow_pickle=False) as npz:
        arrays = dict(npz)  # the file closed now, not when a collection finds it
    config = tf.ConfigProto(graph_options=case.get("graph_options", {}))
    async with tf.Session(graph=load(name), config=config) as sess:
        for i, step in enumerate(case["steps"]):
            feeds = {key: arrays[f"{i}/{key}"] for key in step["feeds"]}
            if "error" in step:
                with pytest.raises(getattr(tf.errors, step["error"])) as info:
                    await sess.run(case["fetch"], feeds)
                # a private queue's id counts the queues the process made before it
                got = re.sub(r"'_\d+_", "'_N_", info.value.message)
                assert got.startswith(re.sub(r"'_\d+_", "'_N_", step["words"]) + "\n"), got
                continue
            got = await sess.run(case["fetch"], feeds)
            want = arrays[f"{i}/expect"]
            assert got.dtype == want.dtype and got.shape == want.shape
            if name in BIT_FOR_BIT:
                np.testing.assert_array_equal(got, want)
            elif name.startswith("values_"):
                _same_values(got, want, approximate=name in APPROXIMATE)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _same_values(got: np.ndarray, want: np.ndarray, approximate: bool) -> None:
    """TensorFlow's NaNs, infinities and signed zeros where it has them; the other values
    equal, or within float32's last bits where its kernel approximates (Eigen's vectorised
    exp, tanh, reciprocal... are not correctly rounded)."""
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    exact = (np.isinf(want) | (want == 0)) & ~nan  # a NaN's sign is no one's business
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
    exact |= nan
    if approximate:
        np.testing.assert_allclose(got[~exact], want[~exact], rtol=1e-6, atol=0)
    else:
        np.testing.assert_array_equal(got[~exact], want[~exact])


def test_the_sum_recorded_is_by_eights_of_the_inputs_sorted_by_name() -> None:
    # TensorFlow's answer is the two eights of the inputs in name order (x0, x1, x10, ...,
    # x15, x2, ...), each left to right; in the order built (x15 ... x0) or by index, left to
    # right or by eights, it comes out otherwise, so the bits pin the order down.
    with np.load(DATA / "add_n_sorted.npz", allow_pickle=False) as npz:
        xs = {f"x{i}": npz[f"0/x{i}:0"] for i in range(16)}
        want = npz["0/expect"]

    def eights(order: list[np.ndarray]) -> np.ndarray:
        return sum(order[1:8], order[0]) + sum(order[9:], order[8])

    assert np.array_equal(eights([xs[k] for k in sorted(xs)]), want)
    for order in ([xs[f"x{i}"] for i in range(16)], [xs[f"x{i}"] for i in range(15, -1, -1)]):
        assert not np.array_equal(sum(order[1:], order[0]), want)
        assert not np.array_equal(eights(order), want)


def test_the_graphs_use_the_new_ops() -> None:
    ops = {name: {op.type for op in load(name).get_operations()} for name in CASES}
    assert {"SpaceToBatchND", "BatchToSpaceND"} <= ops["atrous_depthwise_dynamic"]
    assert "Assert" in ops["sparse_xent_unknown_shapes"]
    assert {"Assert", "Switch", "Merge"} <= ops["assert_guard"]
