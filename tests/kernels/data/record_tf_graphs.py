"""Write the TensorFlow-built graphs ``test_tf_graphs.py`` imports: run with TensorFlow 2.21
(``tf.compat.v1``, graph mode, v1 control flow), never by the tests.

Each case is ``<name>.pbtxt`` (the GraphDef as text) and an entry of ``cases.json``: the fetch,
and per step the feeds (in ``<name>.npz`` as ``<step>/<tensor>``) with TensorFlow's answer
(``<step>/expect``) or its error class and words.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.simplefilter("ignore")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf1.disable_control_flow_v2()
HERE = Path(__file__).parent
RNG = np.random.default_rng(2021)


def atrous_depthwise_dynamic() -> tuple[Any, list[dict[str, Any]]]:
    x = tf1.placeholder(tf.float32, [None, None, None, 3], name="x")
    w = tf.constant(RNG.standard_normal((3, 3, 3, 2)).astype(np.float32), name="w")
    y = tf1.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[2, 2], name="atrous")
    steps = [
        {"x:0": RNG.standard_normal(s).astype(np.float32)} for s in ((2, 9, 9, 3), (1, 6, 5, 3))
    ]
    return y, steps


def atrous_depthwise_valid() -> tuple[Any, list[dict[str, Any]]]:
    x = tf1.placeholder(tf.float32, [2, 9, 9, 3], name="x")
    w = tf.constant(RNG.standard_normal((3, 3, 3, 2)).astype(np.float32), name="w")
    y = tf1.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", rate=[2, 3], name="atrous")
    return y, [{"x:0": RNG.standard_normal((2, 9, 9, 3)).astype(np.float32)}]


def sparse_xent_unknown_shapes() -> tuple[Any, list[dict[str, Any]]]:
    labels = tf1.placeholder(tf.int32, name="labels")
    logits = tf1.placeholder(tf.float32, name="logits")
    loss = tf1.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    f32, i32 = np.float32, np.int32
    steps = [
        {
            "logits:0": RNG.standard_normal((2, 3, 4)).astype(f32),
            "labels:0": np.array([[0, 3, 1], [2, 2, 0]], i32),
        },
        {
            "logits:0": RNG.standard_normal((4, 5)).astype(f32),
            "labels:0": np.array([4, 0, 1, 3], i32),
        },
        {
            "logits:0": RNG.standard_normal((2, 3, 4)).astype(f32),
            "labels:0": np.array([[0, 3], [2, 2]], i32),
        },
        {"logits:0": RNG.standard_normal((2, 4)).astype(f32), "labels:0": np.array([1, 7], i32)},
    ]
    return loss, steps


def softmax_xent_unknown_shapes() -> tuple[Any, list[dict[str, Any]]]:
    labels = tf1.placeholder(tf.float32, name="labels")
    logits = tf1.placeholder(tf.float32, name="logits")
    loss = tf1.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    p = RNG.random((2, 3, 4)).astype(np.float32)
    steps = [
        {
            "logits:0": RNG.standard_normal((2, 3, 4)).astype(np.float32),
            "labels:0": p / p.sum(-1, keepdims=True),
        }
    ]
    return loss, steps


def assert_guard() -> tuple[Any, list[dict[str, Any]]]:
    x = tf1.placeholder(tf.float32, name="x")
    check = tf1.Assert(tf.reduce_all(x > 0), ["x must be positive:", x], summarize=4, name="check")
    with tf1.control_dependencies([check]):
        y = tf.identity(x * 2, name="y")
    steps = [
        {"x:0": np.array([1.5, 2, 3], np.float32)},
        {"x:0": np.array([1.5, -2, 3, 4, 5], np.float32)},
    ]
    return y, steps


def add_n_sorted() -> tuple[Any, list[dict[str, Any]]]:
    """Sixteen inputs whose names sort in another order (grappler sorts them: the sum's bits
    follow), of many magnitudes, so that the order shows in the last bits."""
    xs = [tf1.placeholder(tf.float32, [64], name=f"x{i}") for i in range(16)]
    total = tf.math.add_n(xs[::-1], name="total")
    return total, [
        {f"x{i}:0": (RNG.standard_normal(64) * 10 ** (i % 5)).astype(np.float32) for i in range(16)}
    ]


def add_incompatible() -> tuple[Any, list[dict[str, Any]]]:
    """A broadcast error in a graph of four nodes: grappler sorts the Add's inputs first."""
    z = tf1.placeholder(tf.float32, name="zz")
    a = tf1.placeholder(tf.float32, name="aa")
    tf.constant(1.0, name="unused")
    return tf.add(z, a, name="s"), [
        {"zz:0": np.zeros(3, np.float32), "aa:0": np.zeros(2, np.float32)}
    ]


def add_incompatible_small() -> tuple[Any, list[dict[str, Any]]]:
    """The same error in a graph of three nodes, too small for grappler: the inputs as built."""
    z = tf1.placeholder(tf.float32, name="zz")
    a = tf1.placeholder(tf.float32, name="aa")
    return tf.add(z, a, name="s"), [
        {"zz:0": np.zeros(3, np.float32), "aa:0": np.zeros(2, np.float32)}
    ]


def error_words(e: Any) -> str:
    """The error's own words: the line after ``Node: '...'``, before ``[[{{node``."""
    lines = e.message.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("Node: ")) + 1
    end = next(i for i, line in enumerate(lines) if line.startswith("\t [["))
    return "\n".join(lines[start:end])


def winograd_convolutions() -> None:
    """``winograd_tf.npz``: TensorFlow's Conv2D (oneDNN, direct) on shapes aiotf computes by
    Winograd's method, as ``<case>/x``, ``<case>/w`` and ``<case>/expect``."""
    rng = np.random.default_rng(2026)
    arrays: dict[str, Any] = {}
    for case, xs, ws, padding in (
        ("3x3_same", (2, 9, 10, 16), (3, 3, 16, 16), "SAME"),
        ("5x5_same", (2, 12, 12, 16), (5, 5, 16, 32), "SAME"),
        ("5x3_valid", (2, 13, 11, 16), (5, 3, 16, 16), "VALID"),
    ):
        x = rng.standard_normal(xs).astype(np.float32)
        w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[:3]))).astype(np.float32)
        g = tf.Graph()
        with g.as_default(), tf1.Session(graph=g) as sess:
            out = tf1.nn.conv2d(tf.constant(x), tf.constant(w), [1, 1, 1, 1], padding)
            arrays.update({f"{case}/x": x, f"{case}/w": w, f"{case}/expect": sess.run(out)})
    np.savez(HERE / "winograd_tf.npz", **arrays)


def main() -> None:
    cases: dict[str, Any] = {}
    for build in (atrous_depthwise_dynamic, atrous_depthwise_valid, sparse_xent_unknown_shapes,
                  softmax_xent_unknown_shapes, assert_guard, add_n_sorted, add_incompatible,
                  add_incompatible_small):  # fmt: skip
        name = build.__name__
        g = tf.Graph()
        with g.as_default():
            out, steps = build()
        arrays: dict[str, Any] = {}
        record = []
        with tf1.Session(graph=g) as sess:
            for i, feeds in enumerate(steps):
                arrays.update({f"{i}/{k}": v for k, v in feeds.items()})
                try:
                    arrays[f"{i}/expect"] = sess.run(out, feeds)
                    record.append({"feeds": sorted(feeds)})
                except tf.errors.OpError as e:
                    record.append(
                        {"feeds": sorted(feeds), "error": type(e).__name__, "words": error_words(e)}
                    )
        (HERE / f"{name}.pbtxt").write_text(str(g.as_graph_def()))
        np.savez(HERE / f"{name}.npz", **arrays)
        cases[name] = {"fetch": out.name, "steps": record}
    (HERE / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    winograd_convolutions()


if __name__ == "__main__":
    main()
