"""Write the TensorFlow-built graphs ``test_tf_graphs.py`` imports: run with TensorFlow 2.21
(``tf.compat.v1``, graph mode, v1 control flow), never by the tests.

Each case is ``<name>.pbtxt`` (the GraphDef as text) and an entry of ``cases.json``: the fetch,
the session's ``graph_options`` where not the defaults, and per step the feeds (in
``<name>.npz`` as ``<step>/<tensor>``) with TensorFlow's answer (``<step>/expect``) or its
error class and words.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.simplefilter("ignore")
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework import op_def_registry  # noqa: E402

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


Build = Callable[[], tuple[Any, list[dict[str, Any]]]]


def function_incompatible() -> tuple[Any, list[dict[str, Any]]]:
    """A broadcast error inside a function the graph calls (a ``PartitionedCall``): TensorFlow
    inlines the call before grappler sorts."""

    @tf.function
    def add(zz_in: Any, aa_in: Any) -> Any:
        return tf.raw_ops.AddV2(x=zz_in, y=aa_in)

    z = tf1.placeholder(tf.float32, name="zz")
    a = tf1.placeholder(tf.float32, name="aa")
    tf.constant(1.0, name="unused")
    return add(z, a), [{"zz:0": np.zeros(3, np.float32), "aa:0": np.zeros(2, np.float32)}]


def incompatible(op: str, nodes: int = 4, dtype: Any = np.float32) -> Build:
    """A broadcast error of ``op`` (``tf.raw_ops``) on ``zz`` and ``aa``, in a graph of
    ``nodes`` nodes: grappler, when it runs, sorts a commutative op's inputs by name first, and
    the error names the shapes in that order."""

    def build() -> tuple[Any, list[dict[str, Any]]]:
        tf_dtype = tf.as_dtype(dtype)
        z = tf1.placeholder(tf_dtype, name="zz")
        a = tf1.placeholder(tf_dtype, name="aa")
        for i in range(nodes - 3):
            tf.constant(1.0, name=f"unused{i}")
        out = getattr(tf.raw_ops, op)(x=z, y=a, name="s")
        return out, [{"zz:0": np.zeros(3, dtype), "aa:0": np.zeros(2, dtype)}]

    return build


def at_run(values: dict[str, Any], build: Callable[[dict[str, Any]], Any]) -> Build:
    """A kernel's error at run time: ``build`` on placeholders of unknown shape named and
    typed after ``values``, which one step feeds."""

    def case() -> tuple[Any, list[dict[str, Any]]]:
        fed = {k: tf1.placeholder(tf.as_dtype(v.dtype), name=k) for k, v in values.items()}
        return build(fed), [{f"{k}:0": v for k, v in values.items()}]

    return case


def _f(*shape: int) -> Any:
    return np.arange(math.prod(shape), dtype=np.float32).reshape(shape)


def _i(*values: Any) -> Any:
    return np.array(values, dtype=np.int32)


raw = tf.raw_ops
# Not here: a MaxPool window larger than its input (VALID) kills TensorFlow 2.21's process
# (SIGFPE in oneDNN); Softmax of a scalar is an AbortedError of oneDNN's words, or Eigen's
# InvalidArgumentError without oneDNN (aiotf's); GatherV2 with a fed axis out of range says
# its shape function's words at run time, not its kernel's (aiotf's).
KERNEL_ERRORS: dict[str, Build] = {
    "matmul_sizes": at_run(
        {"a": _f(2, 3), "b": _f(4, 5)}, lambda p: raw.MatMul(a=p["a"], b=p["b"])
    ),
    "batch_matmul_batches": at_run(
        {"a": _f(2, 2, 3), "b": _f(3, 3, 4)}, lambda p: raw.BatchMatMulV2(x=p["a"], y=p["b"])
    ),
    "reshape_values": at_run(
        {"x": _f(2, 3), "shape": _i(4, 2)}, lambda p: raw.Reshape(tensor=p["x"], shape=p["shape"])
    ),
    "concat_dims": at_run(
        {"a": _f(2, 3), "b": _f(4, 5)}, lambda p: raw.ConcatV2(values=[p["a"], p["b"]], axis=0)
    ),
    "gather_index": at_run(
        {"params": _f(5, 3), "indices": _i(1, 7)},
        lambda p: raw.GatherV2(params=p["params"], indices=p["indices"], axis=0),
    ),
    "gather_nd_index": at_run(
        {"params": _f(2, 2), "indices": _i([3, 0])},
        lambda p: raw.GatherNd(params=p["params"], indices=p["indices"]),
    ),
    "slice_bounds": at_run(
        {"x": _f(5), "begin": _i(3), "size": _i(4)},
        lambda p: raw.Slice(input=p["x"], begin=p["begin"], size=p["size"]),
    ),
    "transpose_perm": at_run(
        {"x": _f(2, 3), "perm": _i(0, 0)}, lambda p: raw.Transpose(x=p["x"], perm=p["perm"])
    ),
    "bias_add_biases": at_run(
        {"x": _f(2, 3), "bias": _f(4)}, lambda p: raw.BiasAdd(value=p["x"], bias=p["bias"])
    ),
    "conv2d_depth": at_run(
        {"x": _f(1, 5, 5, 4), "w": _f(3, 3, 3, 6)},
        lambda p: raw.Conv2D(input=p["x"], filter=p["w"], strides=[1, 1, 1, 1], padding="SAME"),
    ),
    "pad_paddings": at_run(
        {"x": _f(2, 3), "paddings": _i([1, 1])},
        lambda p: raw.Pad(input=p["x"], paddings=p["paddings"]),
    ),
    "one_hot_depth": at_run(
        {"indices": _i(1, 2), "depth": np.int32(-1)},
        lambda p: raw.OneHot(indices=p["indices"], depth=p["depth"], on_value=1.0, off_value=0.0),
    ),
    "range_order": at_run(
        {"start": np.int32(5), "limit": np.int32(1)},
        lambda p: raw.Range(start=p["start"], limit=p["limit"], delta=1),
    ),
    "tile_multiples": at_run(
        {"x": _f(2, 3), "multiples": _i(2)},
        lambda p: raw.Tile(input=p["x"], multiples=p["multiples"]),
    ),
    "split_uneven": at_run({"x": _f(5)}, lambda p: raw.Split(axis=0, value=p["x"], num_split=3)),
    "squeeze_dim": at_run({"x": _f(2, 3)}, lambda p: raw.Squeeze(input=p["x"], axis=[0])),
    "expand_dims_axis": at_run(
        {"x": _f(2), "axis": np.int32(5)}, lambda p: raw.ExpandDims(input=p["x"], axis=p["axis"])
    ),
    "sum_axis": at_run(
        {"x": _f(2, 3), "axis": _i(2)}, lambda p: raw.Sum(input=p["x"], axis=p["axis"])
    ),
    "arg_max_axis": at_run(
        {"x": _f(2, 3), "axis": np.int32(3)},
        lambda p: raw.ArgMax(input=p["x"], dimension=p["axis"]),
    ),
    "fill_dims": at_run(
        {"dims": _i(-1, 2)}, lambda p: raw.Fill(dims=p["dims"], value=np.float32(1))
    ),
    "floor_div_zero": at_run(
        {"x": _i(4, 5), "y": _i(2, 0)}, lambda p: raw.FloorDiv(x=p["x"], y=p["y"])
    ),
    "select_sizes": at_run(
        {"c": np.array([True, False]), "x": _f(3), "y": _f(3)},
        lambda p: raw.Select(condition=p["c"], x=p["x"], y=p["y"]),
    ),
    "select_batches": at_run(
        {"c": np.array([True, False]), "x": _f(3, 2), "y": _f(3, 2)},
        lambda p: raw.Select(condition=p["c"], x=p["x"], y=p["y"]),
    ),
    "select_scalar": at_run(
        {"c": np.array(True), "x": _f(2), "y": _f(3)},
        lambda p: raw.Select(condition=p["c"], x=p["x"], y=p["y"]),
    ),
    "add_n_shapes": at_run(
        {"a": _f(2), "b": _f(2), "c": _f(3)},
        lambda p: tf.math.add_n([p["a"], p["b"], p["c"]], name="my_sum"),
    ),
    "sparse_xent_label": at_run(
        {"logits": _f(2, 3), "labels": _i(1, 5)},
        lambda p: raw.SparseSoftmaxCrossEntropyWithLogits(features=p["logits"], labels=p["labels"]),
    ),
    "cumsum_axis": at_run(
        {"x": _f(2, 3), "axis": np.int32(2)}, lambda p: raw.Cumsum(x=p["x"], axis=p["axis"])
    ),
    "pad_negative": at_run(
        {"x": _f(2, 3), "paddings": _i([1, -1], [0, 0])},
        lambda p: raw.Pad(input=p["x"], paddings=p["paddings"]),
    ),
    "mirror_pad_too_large": at_run(
        {"x": _f(2, 3), "paddings": _i([0, 0], [3, 0])},
        lambda p: raw.MirrorPad(input=p["x"], paddings=p["paddings"], mode="REFLECT"),
    ),
    "space_to_batch_block": at_run(  # the block and pads constants: their shape is checked first
        {"x": _f(1, 5, 4, 1)},
        lambda p: raw.SpaceToBatchND(
            input=p["x"], block_shape=_i(2, 2), paddings=_i([0, 0], [0, 0])
        ),
    ),
    "batch_to_space_batch": at_run(
        {"x": _f(3, 2, 2, 1)},
        lambda p: raw.BatchToSpaceND(input=p["x"], block_shape=_i(2, 2), crops=_i([0, 0], [0, 0])),
    ),
    "unpack_num": at_run({"x": _f(2, 3)}, lambda p: raw.Unpack(value=p["x"], num=3, axis=0)),
    "split_v_sizes": at_run(
        {"x": _f(5), "sizes": _i(1, 2)},
        lambda p: raw.SplitV(value=p["x"], size_splits=p["sizes"], axis=0, num_split=2),
    ),
    "squeeze_unknown_not_one": at_run(
        {"x": _f(3, 1)}, lambda p: raw.Squeeze(input=p["x"], axis=[0])
    ),
    "reverse_duplicate_axis": at_run(
        {"x": _f(2, 3), "axis": _i(0, 0)}, lambda p: raw.ReverseV2(tensor=p["x"], axis=p["axis"])
    ),
    "tile_negative": at_run(
        {"x": _f(2, 3), "multiples": _i(1, -1)},
        lambda p: raw.Tile(input=p["x"], multiples=p["multiples"]),
    ),
    "transpose_perm_range": at_run(
        {"x": _f(2, 3), "perm": _i(0, 2)}, lambda p: raw.Transpose(x=p["x"], perm=p["perm"])
    ),
    "slice_negative_size": at_run(
        {"x": _f(5), "begin": _i(1), "size": _i(-2)},
        lambda p: raw.Slice(input=p["x"], begin=p["begin"], size=p["size"]),
    ),
    "strided_slice_shrink_bounds": at_run(
        {"x": _f(5), "begin": _i(7), "end": _i(8), "strides": _i(1)},
        lambda p: raw.StridedSlice(
            input=p["x"], begin=p["begin"], end=p["end"], strides=p["strides"], shrink_axis_mask=1
        ),
    ),
    "range_zero_delta": at_run(
        {"delta": np.int32(0)}, lambda p: raw.Range(start=0, limit=5, delta=p["delta"])
    ),
    "reshape_two_unknown": at_run(
        {"x": _f(2, 3), "shape": _i(-1, -1)}, lambda p: raw.Reshape(tensor=p["x"], shape=p["shape"])
    ),
    "conv2d_batch_stride": at_run(
        {"x": _f(2, 5, 5, 1), "w": _f(3, 3, 1, 2)},
        lambda p: raw.Conv2D(input=p["x"], filter=p["w"], strides=[2, 1, 1, 1], padding="SAME"),
    ),
    "max_pool_batch_window": at_run(
        {"x": _f(2, 4, 4, 1)},
        lambda p: raw.MaxPool(
            input=p["x"], ksize=[2, 2, 2, 1], strides=[1, 1, 1, 1], padding="VALID"
        ),
    ),
    "fused_batch_norm_scale": at_run(
        {"x": _f(1, 2, 2, 3), "scale": _f(2), "offset": _f(3)},
        lambda p: raw.FusedBatchNormV3(
            x=p["x"],
            scale=p["scale"],
            offset=p["offset"],
            mean=np.zeros(0, np.float32),
            variance=np.zeros(0, np.float32),
            is_training=True,
        )[0],
    ),
    "sparse_xent_ranks": at_run(
        {"logits": _f(2, 3), "labels": _i(1, 2, 0)},
        lambda p: raw.SparseSoftmaxCrossEntropyWithLogits(features=p["logits"], labels=p["labels"])[
            0
        ],
    ),
    "concat_axis_at_run": at_run(
        {"a": _f(2, 3), "b": _f(2, 3), "axis": np.int32(2)},
        lambda p: raw.ConcatV2(values=[p["a"], p["b"]], axis=p["axis"]),
    ),
    "pack_shapes_at_run": at_run(
        {"a": _f(2), "b": _f(3)}, lambda p: raw.Pack(values=[p["a"], p["b"]], axis=0)
    ),
    "strided_slice_stride": at_run(
        {"x": _f(5), "begin": _i(0), "end": _i(3), "strides": _i(0)},
        lambda p: raw.StridedSlice(
            input=p["x"], begin=p["begin"], end=p["end"], strides=p["strides"]
        ),
    ),
}

_EDGES = np.array([-np.inf, -3.5, -2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 1e30, np.inf, np.nan])
_F32_EDGES = _EDGES.astype(np.float32)
_INTS = np.array([-7, -6, -1, 0, 1, 5, 7], np.int32)
_DIVISORS = np.array([2, -4, 3, -3, 5, -2, 4], np.int32)
_NAN_ROWS = np.array(
    [[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [-np.inf, 2.0, np.inf]], np.float32
)


def _unary(op: str, x: Any = _F32_EDGES) -> Build:
    (arg,) = op_def_registry.get(op).input_arg  # x, or features
    return at_run({"x": x}, lambda p: getattr(raw, op)(**{arg.name: p["x"]}))


def _binary(op: str, x: Any = _INTS, y: Any = _DIVISORS) -> Build:
    return at_run({"x": x, "y": y}, lambda p: getattr(raw, op)(x=p["x"], y=p["y"]))


# Values at the edges (signed zeros, halves, infinities, NaN, negative integer division):
# what each kernel answers there, element for element.
KERNEL_VALUES: dict[str, Build] = {
    **{
        op.lower(): _unary(op)
        for op in (
            "Round",
            "Sign",
            "Floor",
            "Ceil",
            "Rsqrt",
            "Reciprocal",
            "Sigmoid",
            "Tanh",
            "Softplus",
            "Elu",
            "Selu",
            "Exp",
            "Expm1",
            "Log",
            "Log1p",
            "Sqrt",
            "Square",
            "Abs",
            "Neg",
            "IsFinite",
            "IsNan",
            "Relu",
            "Relu6",
        )
    },  # fmt: skip
    "leaky_relu": at_run({"x": _F32_EDGES}, lambda p: raw.LeakyRelu(features=p["x"], alpha=0.1)),
    "sign_int": _unary("Sign", _INTS),
    "abs_int_min": _unary("Abs", np.array([-(2**31), -1, 3], np.int32)),
    "floor_div": _binary("FloorDiv"),
    "floor_mod": _binary("FloorMod"),
    "truncate_div": _binary("TruncateDiv"),
    "truncate_mod": _binary("TruncateMod"),
    "floor_mod_float": _binary(
        "FloorMod",
        np.array([-7.5, 7.5, -0.0, 3.0], np.float32),
        np.array([2.0, -2.0, 3.0, -0.0], np.float32),
    ),
    "div_int": _binary("Div"),
    "real_div_zero": _binary(
        "RealDiv",
        np.array([1.0, -1.0, 0.0, 0.0], np.float32),
        np.array([0.0, 0.0, 0.0, -0.0], np.float32),
    ),
    "div_no_nan": _binary(
        "DivNoNan",
        np.array([1.0, np.nan, 0.0, 2.0], np.float32),
        np.array([0.0, 0.0, 0.0, 4.0], np.float32),
    ),
    "pow_int": _binary("Pow", np.array([2, -3, 0, 5], np.int32), np.array([3, 3, 0, 1], np.int32)),
    "pow_float": _binary(
        "Pow",
        np.array([-8.0, 0.0, 2.0, np.nan], np.float32),
        np.array([1 / 3, -1.0, 0.5, 0.0], np.float32),
    ),
    "maximum_nan": _binary("Maximum", _F32_EDGES, _F32_EDGES[::-1].copy()),
    "minimum_nan": _binary("Minimum", _F32_EDGES, _F32_EDGES[::-1].copy()),
    "squared_difference_int": _binary("SquaredDifference"),
    "cast_to_int": at_run(
        {"x": np.array([-2.7, -0.5, 0.5, 2.7, 3e9, -3e9], np.float32)},
        lambda p: raw.Cast(x=p["x"], DstT=tf.int32),
    ),
    "cast_to_uint8": at_run(
        {"x": np.array([-1, 255, 256, 300], np.int32)}, lambda p: raw.Cast(x=p["x"], DstT=tf.uint8)
    ),
    "cast_to_bool": at_run(
        {"x": np.array([0.0, -0.0, 0.5, np.nan], np.float32)},
        lambda p: raw.Cast(x=p["x"], DstT=tf.bool),
    ),
    "max_rows_nan": at_run(
        {"x": _NAN_ROWS, "axis": np.int32(1)}, lambda p: raw.Max(input=p["x"], axis=p["axis"])
    ),
    "min_rows_nan": at_run(
        {"x": _NAN_ROWS, "axis": np.int32(1)}, lambda p: raw.Min(input=p["x"], axis=p["axis"])
    ),
    "arg_max_nan": at_run(
        {"x": _NAN_ROWS, "axis": np.int32(1)},
        lambda p: raw.ArgMax(input=p["x"], dimension=p["axis"]),
    ),
    "arg_min_ties": at_run(
        {"x": np.array([[3, 1, 1], [2, 2, 2]], np.int32), "axis": np.int32(1)},
        lambda p: raw.ArgMin(input=p["x"], dimension=p["axis"]),
    ),
    "mean_int": at_run(
        {"x": np.array([[1, 2], [2, 2], [-3, 0]], np.int32), "axis": np.int32(1)},
        lambda p: raw.Mean(input=p["x"], axis=p["axis"]),
    ),
    "sum_empty": at_run(
        {"x": np.zeros((0, 3), np.float32), "axis": np.int32(0)},
        lambda p: raw.Sum(input=p["x"], axis=p["axis"]),
    ),
    "max_empty": at_run(
        {"x": np.zeros((0, 3), np.float32), "axis": np.int32(0)},
        lambda p: raw.Max(input=p["x"], axis=p["axis"]),
    ),
    "prod_int_overflow": at_run(
        {"x": np.array([65536, 65536, 3], np.int32), "axis": np.int32(0)},
        lambda p: raw.Prod(input=p["x"], axis=p["axis"]),
    ),
    "cumsum_exclusive_reverse": at_run(
        {"x": np.array([1.0, 2.0, 3.0, 4.0], np.float32), "axis": np.int32(0)},
        lambda p: raw.Cumsum(x=p["x"], axis=p["axis"], exclusive=True, reverse=True),
    ),
    "softmax_inf_row": at_run(
        {"x": np.array([[np.inf, 1.0], [-np.inf, -np.inf], [1.0, 2.0]], np.float32)},
        lambda p: raw.Softmax(logits=p["x"]),
    ),
    "log_softmax_inf_row": at_run(
        {"x": np.array([[np.inf, 1.0], [1.0, 2.0]], np.float32)},
        lambda p: raw.LogSoftmax(logits=p["x"]),
    ),
    "range_float": at_run(
        {"start": np.float32(0.1), "limit": np.float32(1.0), "delta": np.float32(0.3)},
        lambda p: raw.Range(start=p["start"], limit=p["limit"], delta=p["delta"]),
    ),
    "one_hot_negative_index": at_run(
        {"i": np.array([0, -1, 3, 2], np.int32)},
        lambda p: raw.OneHot(indices=p["i"], depth=3, on_value=5.0, off_value=-1.0),
    ),
    "l2_loss": at_run(
        {"x": np.array([3.0, -4.0, 0.5], np.float32)}, lambda p: raw.L2Loss(t=p["x"])
    ),
    # array ops at their edges
    "tile_zero": at_run({"x": _f(2, 3)}, lambda p: raw.Tile(input=p["x"], multiples=_i(0, 2))),
    "slice_to_end": at_run(
        {"x": _f(3, 4)}, lambda p: raw.Slice(input=p["x"], begin=_i(1, 1), size=_i(-1, 2))
    ),
    "strided_slice_backwards": at_run(
        {"x": _f(6)},
        lambda p: raw.StridedSlice(input=p["x"], begin=_i(-1), end=_i(-7), strides=_i(-2)),
    ),
    "strided_slice_masks": at_run(
        {"x": _f(3, 4, 5)},
        lambda p: raw.StridedSlice(
            input=p["x"],
            begin=_i(0, 1, 0),
            end=_i(0, 3, 0),
            strides=_i(1, 1, 2),
            begin_mask=5,
            end_mask=5,
        ),
    ),
    "gather_nd_scalar_index": at_run(
        {"x": _f(3, 4), "i": _i(2, 1)}, lambda p: raw.GatherNd(params=p["x"], indices=p["i"])
    ),
    "gather_v2_batch": at_run(
        {"x": _f(2, 3, 4), "i": _i([2, 0], [1, 1])},
        lambda p: raw.GatherV2(params=p["x"], indices=p["i"], axis=1, batch_dims=1),
    ),
    "one_hot_axis0": at_run(
        {"i": _i([0, 2], [1, -1])},
        lambda p: raw.OneHot(indices=p["i"], depth=3, on_value=1.0, off_value=0.0, axis=0),
    ),
    "where_order": at_run(
        {"c": np.array([[True, False, True], [False, True, True]])},
        lambda p: raw.Where(condition=p["c"]),
    ),
    "cumprod_exclusive": at_run(
        {"x": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)},
        lambda p: raw.Cumprod(x=p["x"], axis=1, exclusive=True, reverse=False),
    ),
    "reverse_two_axes": at_run(
        {"x": _f(2, 3, 2)}, lambda p: raw.ReverseV2(tensor=p["x"], axis=_i(0, 2))
    ),
    "transpose_4d": at_run(
        {"x": _f(2, 3, 4, 5)}, lambda p: raw.Transpose(x=p["x"], perm=_i(3, 1, 0, 2))
    ),
    "range_negative_float": at_run(
        {"s": np.float32(1.0)},
        lambda p: raw.Range(start=p["s"], limit=np.float32(-1.0), delta=np.float32(-0.3)),
    ),
    "split_v_inferred": at_run(
        {"x": _f(7, 2)},
        lambda p: raw.SplitV(value=p["x"], size_splits=_i(2, -1, 1), axis=0, num_split=3)[1],
    ),
    "mirror_pad_symmetric": at_run(
        {"x": _f(2, 3)},
        lambda p: raw.MirrorPad(input=p["x"], paddings=_i([1, 2], [2, 0]), mode="SYMMETRIC"),
    ),
    "space_to_batch_padded": at_run(
        {"x": _f(1, 3, 2, 1)},
        lambda p: raw.SpaceToBatchND(
            input=p["x"], block_shape=_i(2, 2), paddings=_i([1, 0], [0, 0])
        ),
    ),
    "batch_to_space_cropped": at_run(
        {"x": _f(4, 2, 2, 1)},
        lambda p: raw.BatchToSpaceND(input=p["x"], block_shape=_i(2, 2), crops=_i([1, 0], [0, 1])),
    ),
    "unpack_axis1": at_run({"x": _f(2, 3)}, lambda p: raw.Unpack(value=p["x"], num=3, axis=1)[2]),
    "concat_empty": at_run(
        {"a": np.zeros((0, 3), np.float32), "b": _f(2, 3)},
        lambda p: raw.ConcatV2(values=[p["a"], p["b"]], axis=0),
    ),
    "pad_v2_value": at_run(
        {"x": _f(2, 2)},
        lambda p: raw.PadV2(
            input=p["x"], paddings=_i([1, 0], [0, 1]), constant_values=np.float32(-9)
        ),
    ),
    "expand_dims_negative": at_run(
        {"x": _f(2, 3)}, lambda p: raw.ExpandDims(input=p["x"], axis=-1)
    ),
    "squeeze_all_ones": at_run({"x": _f(1, 3, 1, 1)}, lambda p: raw.Squeeze(input=p["x"], axis=[])),
    "arg_max_int32_out": at_run(
        {"x": np.array([[1, 5, 5], [7, 7, 0]], np.int32)},
        lambda p: raw.ArgMax(input=p["x"], dimension=1, output_type=tf.int32),
    ),
}


def assign_shapes() -> tuple[Any, list[dict[str, Any]]]:
    """A resource variable of shape [2] assigned [2] (initializing it), then [3]."""
    handle = raw.VarHandleOp(dtype=tf.float32, shape=[2], shared_name="v", name="v")
    x = tf1.placeholder(tf.float32, name="x")
    assign = raw.AssignVariableOp(resource=handle, value=x, validate_shape=True, name="assign")
    with tf1.control_dependencies([assign]):
        out = raw.ReadVariableOp(resource=handle, dtype=tf.float32, name="read")
    return out, [{"x:0": np.ones(2, np.float32)}, {"x:0": np.ones(3, np.float32)}]


def resource_read_uninitialized() -> tuple[Any, list[dict[str, Any]]]:
    handle = raw.VarHandleOp(dtype=tf.float32, shape=[2], shared_name="w", name="w")
    out = raw.ReadVariableOp(resource=handle, dtype=tf.float32, name="read")
    x = tf1.placeholder(tf.float32, name="x")  # a feed for the step; read does not need it
    return tf.identity(out + x, name="out"), [{"x:0": np.float32(1)}]


def queue_closed_empty() -> tuple[Any, list[dict[str, Any]]]:
    q = tf1.FIFOQueue(2, tf.float32, name="q")
    x = tf1.placeholder(tf.float32, name="x")
    with tf1.control_dependencies([q.close()]):
        out = q.dequeue(name="dequeue") + x
    return out, [{"x:0": np.float32(1)}]


def queue_component_shape() -> tuple[Any, list[dict[str, Any]]]:
    q = tf1.FIFOQueue(2, tf.float32, shapes=[[2]], name="q")
    x = tf1.placeholder(tf.float32, name="x")
    with tf1.control_dependencies([q.enqueue(x)]):
        out = tf.identity(x, name="out")
    return out, [{"x:0": np.ones(3, np.float32)}]


# name: (build, graph options); each a session of its own.
CASES: dict[str, tuple[Build, dict[str, Any]]] = {
    "atrous_depthwise_dynamic": (atrous_depthwise_dynamic, {}),
    "atrous_depthwise_valid": (atrous_depthwise_valid, {}),
    "sparse_xent_unknown_shapes": (sparse_xent_unknown_shapes, {}),
    "softmax_xent_unknown_shapes": (softmax_xent_unknown_shapes, {}),
    "assert_guard": (assert_guard, {}),
    "add_n_sorted": (add_n_sorted, {}),
    # grappler's gates, on AddV2
    "add_incompatible": (incompatible("AddV2"), {}),
    "add_incompatible_small": (incompatible("AddV2", nodes=3), {}),
    "add_incompatible_small_any_size": (
        incompatible("AddV2", nodes=3),
        {"rewrite_options": {"min_graph_nodes": -1}},
    ),
    "add_incompatible_below_min_nodes": (
        incompatible("AddV2", nodes=4),
        {"rewrite_options": {"min_graph_nodes": 5}},
    ),
    "add_incompatible_no_meta_optimizer": (
        incompatible("AddV2"),
        {"rewrite_options": {"disable_meta_optimizer": True}},
    ),
    "add_incompatible_cse_off": (
        incompatible("AddV2"),
        {"rewrite_options": {"common_subgraph_elimination": "OFF"}},
    ),
    "add_incompatible_arithmetic_off": (
        incompatible("AddV2"),
        {"rewrite_options": {"arithmetic_optimization": "OFF"}},
    ),
    "add_incompatible_other_optimizers": (
        incompatible("AddV2"),
        {"rewrite_options": {"optimizers": ["constfold"]}},
    ),
    "add_incompatible_cse_named": (
        incompatible("AddV2"),
        {"rewrite_options": {"optimizers": ["common_subgraph_elimination"]}},
    ),
    "add_incompatible_pruned_placement": (incompatible("AddV2"), {"place_pruned_graph": True}),
    "function_incompatible": (function_incompatible, {}),
    "assign_shapes": (assign_shapes, {}),
    "resource_read_uninitialized": (resource_read_uninitialized, {}),
    "queue_closed_empty": (queue_closed_empty, {}),
    "queue_component_shape": (queue_component_shape, {}),
    **{f"at_run_{name}": (build, {}) for name, build in KERNEL_ERRORS.items()},
    **{f"values_{name}": (build, {}) for name, build in KERNEL_VALUES.items()},
    # which ops grappler takes for commutative
    "add_v1_incompatible": (incompatible("Add"), {}),
    "add_v1_strings_incompatible": (incompatible("Add", dtype=np.bytes_), {}),
    "mul_incompatible": (incompatible("Mul"), {}),
    "squared_difference_incompatible": (incompatible("SquaredDifference"), {}),
    "maximum_incompatible": (incompatible("Maximum"), {}),
    "sub_incompatible": (incompatible("Sub"), {}),
}


def error_words(e: Any) -> str:
    """The error's own words: the line after ``Node: '...'`` (after the header's blank line
    where there is none: a node inside a function), before ``[[{{node``."""
    lines = e.message.split("\n")
    heads = [i for i, line in enumerate(lines) if line.startswith("Node: ")] or [lines.index("")]
    start = heads[0] + 1
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
    for name, (build, graph_options) in CASES.items():
        g = tf.Graph()
        with g.as_default():
            out, steps = build()
        if isinstance(out, list | tuple):  # several outputs (Split): the first
            out = out[0]
        arrays: dict[str, Any] = {}
        record = []
        config = tf1.ConfigProto(graph_options=graph_options)
        with tf1.Session(graph=g, config=config) as sess:
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
        if graph_options:
            cases[name]["graph_options"] = graph_options
    (HERE / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    winograd_convolutions()


if __name__ == "__main__":
    main()
