"""``aiotf.nn`` building functions against TensorFlow 1.x: the nodes, names and static shapes
``tf.compat.v1.nn`` (TensorFlow 2.21, graph mode) builds for the same calls, recorded below as
literals, and values through a real ``aiotf.Session`` against numpy references.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiotf as tf


def P(tf: Any, dt: str = "float32", shape: Any = (2, 3), name: str = "x") -> Any:
    return tf.placeholder(getattr(tf, dt), shape, name=name)


def build_nn_conv(tf: Any) -> Any:
    img = tf.placeholder(tf.float32, [1, 5, 5, 2], name="img")
    w = tf.placeholder(tf.float32, [3, 3, 2, 4], name="w")
    d = tf.placeholder(tf.float32, [3, 3, 2, 2], name="d")
    return [
        tf.nn.conv2d(img, w, [1, 1, 1, 1], "SAME"),
        tf.nn.conv2d(img, w, strides=2, padding="VALID"),
        tf.nn.conv2d(img, w, strides=[1, 1], padding="SAME", dilations=2),
        tf.nn.conv2d(img, w, [1, 1, 1, 1], [[0, 0], [1, 1], [1, 1], [0, 0]]),
        tf.nn.depthwise_conv2d_native(img, d, [1, 1, 1, 1], "SAME"),
        tf.nn.depthwise_conv2d(img, d, [1, 1, 1, 1], "SAME"),
        tf.nn.max_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
        tf.nn.max_pool(img, 2, 2, "SAME"),
        tf.nn.avg_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
    ]


def build_nn_act(tf: Any) -> Any:
    x = P(tf)
    return [
        tf.nn.log_softmax(x),
        tf.nn.relu6(x),
        tf.nn.elu(x),
        tf.nn.selu(x),
        tf.nn.leaky_relu(x),
        tf.nn.leaky_relu(x, alpha=0.1),
        tf.nn.softplus(x),
        tf.nn.l2_loss(x),
        tf.nn.sigmoid(x),
        tf.nn.tanh(x),
        tf.nn.relu(x),
        tf.nn.softmax(x),
        tf.nn.bias_add(x, [1.0, 2.0, 3.0]),
    ]


def build_nn_softmax_axis(tf: Any) -> Any:
    x = P(tf)
    y = P(tf, shape=[2, 3, 4], name="y")
    return [tf.nn.softmax(x, axis=0), tf.nn.log_softmax(y, axis=-2), tf.nn.softmax(y, axis=1)]


def build_nn_xent(tf: Any) -> Any:
    x = P(tf)
    labels = tf.placeholder(tf.int32, [2], name="l")
    y = P(tf, shape=[2, 4, 3], name="y")
    l2 = tf.placeholder(tf.int64, [2, 4], name="l2")
    return [
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x),
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=l2, logits=y, name="loss"),
    ]


# What tf.compat.v1 (TensorFlow 2.21, graph mode) builds for each builder above:
# 'node = OpType(inputs)'.
TF_NODES: dict[str, list[str]] = {
    "nn_conv": [
        "img = Placeholder()",
        "w = Placeholder()",
        "d = Placeholder()",
        "Conv2D = Conv2D(img:0, w:0)",
        "Conv2D_1 = Conv2D(img:0, w:0)",
        "Conv2D_2 = Conv2D(img:0, w:0)",
        "Conv2D_3 = Conv2D(img:0, w:0)",
        "DepthwiseConv2dNative = DepthwiseConv2dNative(img:0, d:0)",
        "depthwise/Shape = Const()",
        "depthwise/dilation_rate = Const()",
        "depthwise = DepthwiseConv2dNative(img:0, d:0)",
        "MaxPool = MaxPool(img:0)",
        "MaxPool_1 = MaxPool(img:0)",
        "AvgPool = AvgPool(img:0)",
    ],
    "nn_act": [
        "x = Placeholder()",
        "LogSoftmax = LogSoftmax(x:0)",
        "Relu6 = Relu6(x:0)",
        "Elu = Elu(x:0)",
        "Selu = Selu(x:0)",
        "LeakyRelu = LeakyRelu(x:0)",
        "LeakyRelu_1 = LeakyRelu(x:0)",
        "Softplus = Softplus(x:0)",
        "L2Loss = L2Loss(x:0)",
        "Sigmoid = Sigmoid(x:0)",
        "Tanh = Tanh(x:0)",
        "Relu = Relu(x:0)",
        "Softmax = Softmax(x:0)",
        "BiasAdd/bias = Const()",
        "BiasAdd = BiasAdd(x:0, BiasAdd/bias:0)",
    ],
    "nn_softmax_axis": [
        "x = Placeholder()",
        "y = Placeholder()",
        "Rank = Const()",
        "Rank_1 = Const()",
        "Sub/y = Const()",
        "Sub = Sub(Rank_1:0, Sub/y:0)",
        "range/start = Const()",
        "range/limit = Const()",
        "range/delta = Const()",
        "range = Range(range/start:0, range/limit:0, range/delta:0)",
        "range_1/start = Const()",
        "range_1/delta = Const()",
        "range_1 = Range(range_1/start:0, Sub:0, range_1/delta:0)",
        "concat/values_1 = Pack(Sub:0)",
        "concat/values_3 = Const()",
        "concat/axis = Const()",
        "concat = ConcatV2(range:0, concat/values_1:0, range_1:0, concat/values_3:0, concat/axis:0)",
        "transpose = Transpose(x:0, concat:0)",
        "Softmax = Softmax(transpose:0)",
        "Sub_1/y = Const()",
        "Sub_1 = Sub(Rank_1:0, Sub_1/y:0)",
        "range_2/start = Const()",
        "range_2/limit = Const()",
        "range_2/delta = Const()",
        "range_2 = Range(range_2/start:0, range_2/limit:0, range_2/delta:0)",
        "range_3/start = Const()",
        "range_3/delta = Const()",
        "range_3 = Range(range_3/start:0, Sub_1:0, range_3/delta:0)",
        "concat_1/values_1 = Pack(Sub_1:0)",
        "concat_1/values_3 = Const()",
        "concat_1/axis = Const()",
        "concat_1 = ConcatV2(range_2:0, concat_1/values_1:0, range_3:0, concat_1/values_3:0, concat_1/axis:0)",
        "transpose_1 = Transpose(Softmax:0, concat_1:0)",
        "Rank_2 = Const()",
        "add/x = Const()",
        "add = AddV2(add/x:0, Rank_2:0)",
        "Rank_3 = Const()",
        "mod/y = Const()",
        "mod = FloorMod(add:0, mod/y:0)",
        "Sub_2/y = Const()",
        "Sub_2 = Sub(Rank_3:0, Sub_2/y:0)",
        "range_4/start = Const()",
        "range_4/delta = Const()",
        "range_4 = Range(range_4/start:0, mod:0, range_4/delta:0)",
        "add_1/y = Const()",
        "add_1 = AddV2(mod:0, add_1/y:0)",
        "range_5/delta = Const()",
        "range_5 = Range(add_1:0, Sub_2:0, range_5/delta:0)",
        "concat_2/values_1 = Pack(Sub_2:0)",
        "concat_2/values_3 = Pack(mod:0)",
        "concat_2/axis = Const()",
        "concat_2 = ConcatV2(range_4:0, concat_2/values_1:0, range_5:0, concat_2/values_3:0, concat_2/axis:0)",
        "transpose_2 = Transpose(y:0, concat_2:0)",
        "LogSoftmax = LogSoftmax(transpose_2:0)",
        "Sub_3/y = Const()",
        "Sub_3 = Sub(Rank_3:0, Sub_3/y:0)",
        "range_6/start = Const()",
        "range_6/delta = Const()",
        "range_6 = Range(range_6/start:0, mod:0, range_6/delta:0)",
        "add_2/y = Const()",
        "add_2 = AddV2(mod:0, add_2/y:0)",
        "range_7/delta = Const()",
        "range_7 = Range(add_2:0, Sub_3:0, range_7/delta:0)",
        "concat_3/values_1 = Pack(Sub_3:0)",
        "concat_3/values_3 = Pack(mod:0)",
        "concat_3/axis = Const()",
        "concat_3 = ConcatV2(range_6:0, concat_3/values_1:0, range_7:0, concat_3/values_3:0, concat_3/axis:0)",
        "transpose_3 = Transpose(LogSoftmax:0, concat_3:0)",
        "Rank_4 = Const()",
        "Rank_5 = Const()",
        "Sub_4/y = Const()",
        "Sub_4 = Sub(Rank_5:0, Sub_4/y:0)",
        "range_8/start = Const()",
        "range_8/limit = Const()",
        "range_8/delta = Const()",
        "range_8 = Range(range_8/start:0, range_8/limit:0, range_8/delta:0)",
        "range_9/start = Const()",
        "range_9/delta = Const()",
        "range_9 = Range(range_9/start:0, Sub_4:0, range_9/delta:0)",
        "concat_4/values_1 = Pack(Sub_4:0)",
        "concat_4/values_3 = Const()",
        "concat_4/axis = Const()",
        "concat_4 = ConcatV2(range_8:0, concat_4/values_1:0, range_9:0, concat_4/values_3:0, concat_4/axis:0)",
        "transpose_4 = Transpose(y:0, concat_4:0)",
        "Softmax_1 = Softmax(transpose_4:0)",
        "Sub_5/y = Const()",
        "Sub_5 = Sub(Rank_5:0, Sub_5/y:0)",
        "range_10/start = Const()",
        "range_10/limit = Const()",
        "range_10/delta = Const()",
        "range_10 = Range(range_10/start:0, range_10/limit:0, range_10/delta:0)",
        "range_11/start = Const()",
        "range_11/delta = Const()",
        "range_11 = Range(range_11/start:0, Sub_5:0, range_11/delta:0)",
        "concat_5/values_1 = Pack(Sub_5:0)",
        "concat_5/values_3 = Const()",
        "concat_5/axis = Const()",
        "concat_5 = ConcatV2(range_10:0, concat_5/values_1:0, range_11:0, concat_5/values_3:0, concat_5/axis:0)",
        "transpose_5 = Transpose(Softmax_1:0, concat_5:0)",
    ],
    "nn_xent": [
        "x = Placeholder()",
        "l = Placeholder()",
        "y = Placeholder()",
        "l2 = Placeholder()",
        "SparseSoftmaxCrossEntropyWithLogits/Shape = Const()",
        "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits = SparseSoftmaxCrossEntropyWithLogits(x:0, l:0)",
        "loss/Shape = Const()",
        "loss/Shape_1 = Const()",
        "loss/Rank = Const()",
        "loss/sub/y = Const()",
        "loss/sub = Sub(loss/Rank:0, loss/sub/y:0)",
        "loss/add/y = Const()",
        "loss/add = AddV2(loss/sub:0, loss/add/y:0)",
        "loss/strided_slice/stack = Pack(loss/sub:0)",
        "loss/strided_slice/stack_1 = Pack(loss/add:0)",
        "loss/strided_slice/stack_2 = Const()",
        "loss/strided_slice = StridedSlice(loss/Shape_1:0, loss/strided_slice/stack:0, loss/strided_slice/stack_1:0, loss/strided_slice/stack_2:0)",
        "loss/Reshape/shape/0 = Const()",
        "loss/Reshape/shape = Pack(loss/Reshape/shape/0:0, loss/strided_slice:0)",
        "loss/Reshape = Reshape(y:0, loss/Reshape/shape:0)",
        "loss/Reshape_1/shape = Const()",
        "loss/Reshape_1 = Reshape(l2:0, loss/Reshape_1/shape:0)",
        "loss/loss = SparseSoftmaxCrossEntropyWithLogits(loss/Reshape:0, loss/Reshape_1:0)",
        "loss/Reshape_2 = Reshape(loss/loss:0, loss/Shape:0)",
    ],
}

TF_OUTPUTS: dict[str, list[tuple[str, str, list[int | None] | None]]] = {
    "nn_conv": [
        ("Conv2D:0", "float32", [1, 5, 5, 4]),
        ("Conv2D_1:0", "float32", [1, 2, 2, 4]),
        ("Conv2D_2:0", "float32", [1, 5, 5, 4]),
        ("Conv2D_3:0", "float32", [1, 5, 5, 4]),
        ("DepthwiseConv2dNative:0", "float32", [1, 5, 5, 4]),
        ("depthwise:0", "float32", [1, 5, 5, 4]),
        ("MaxPool:0", "float32", [1, 2, 2, 2]),
        ("MaxPool_1:0", "float32", [1, 3, 3, 2]),
        ("AvgPool:0", "float32", [1, 2, 2, 2]),
    ],
    "nn_act": [
        ("LogSoftmax:0", "float32", [2, 3]),
        ("Relu6:0", "float32", [2, 3]),
        ("Elu:0", "float32", [2, 3]),
        ("Selu:0", "float32", [2, 3]),
        ("LeakyRelu:0", "float32", [2, 3]),
        ("LeakyRelu_1:0", "float32", [2, 3]),
        ("Softplus:0", "float32", [2, 3]),
        ("L2Loss:0", "float32", []),
        ("Sigmoid:0", "float32", [2, 3]),
        ("Tanh:0", "float32", [2, 3]),
        ("Relu:0", "float32", [2, 3]),
        ("Softmax:0", "float32", [2, 3]),
        ("BiasAdd:0", "float32", [2, 3]),
    ],
    "nn_softmax_axis": [
        ("transpose_1:0", "float32", [2, 3]),
        ("transpose_3:0", "float32", [2, 3, 4]),
        ("transpose_5:0", "float32", [2, 3, 4]),
    ],
    "nn_xent": [
        (
            "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:0",
            "float32",
            [2],
        ),
        ("loss/Reshape_2:0", "float32", [2, 4]),
    ],
}


BUILDERS: dict[str, Callable[[Any], Any]] = {
    name[len("build_") :]: fn for name, fn in globals().items() if name.startswith("build_")
}


@pytest.mark.parametrize("case", sorted(TF_NODES))
def test_nodes_names_and_shapes_are_tensorflows(
    case: str, graph: tf.Graph, describe: Any, outputs: Any
) -> None:
    out = BUILDERS[case](tf)
    assert describe(graph) == TF_NODES[case]
    assert outputs(out) == TF_OUTPUTS[case]


def test_conv_and_pool_attrs(graph: tf.Graph) -> None:
    img = tf.placeholder(tf.float32, [1, 5, 5, 2])
    w = tf.placeholder(tf.float32, [3, 3, 2, 4])
    c = tf.nn.conv2d(img, w, strides=2, padding="VALID", dilations=[1, 1])
    assert c.op.get_attr("strides") == [1, 2, 2, 1]
    assert c.op.get_attr("dilations") == [1, 1, 1, 1]
    assert c.op.get_attr("padding") == b"VALID"
    e = tf.nn.conv2d(img, w, [1, 1, 1, 1], [[0, 0], [1, 1], [1, 1], [0, 0]])
    assert e.op.get_attr("padding") == b"EXPLICIT"
    assert e.op.get_attr("explicit_paddings") == [0, 0, 1, 1, 1, 1, 0, 0]
    p = tf.nn.max_pool(img, 2, 2, "SAME")
    assert (p.op.get_attr("ksize"), p.op.get_attr("strides")) == ([1, 2, 2, 1], [1, 2, 2, 1])
    assert tf.nn.leaky_relu(img, alpha=0.1).op.get_attr("alpha") == pytest.approx(0.1)
    with pytest.raises(ValueError, match="strides should be of length 1, 2 or 4"):
        tf.nn.conv2d(img, w, [1, 1, 1], "SAME")
    # TF's shape function checks explicit paddings (CheckValidPadding) as the graph is built
    with pytest.raises(ValueError, match="All elements of explicit_paddings must be nonnegative"):
        tf.nn.conv2d(img, w, [1, 1, 1, 1], [[0, 0], [-1, 1], [1, 1], [0, 0]])
    with pytest.raises(ValueError, match="Nonzero explicit padding in the batch or depth"):
        tf.nn.conv2d(img, w, [1, 1, 1, 1], [[0, 0], [1, 1], [1, 1], [0, 1]])


def test_fused_batch_norm_attrs(graph: tf.Graph) -> None:
    img = tf.placeholder(tf.float32, [1, 5, 5, 2])
    y, mean, var = tf.nn.fused_batch_norm(
        img, [1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0], epsilon=1e-7, is_training=False
    )
    op = y.op
    assert (op.name, op.type) == ("FusedBatchNormV3", "FusedBatchNormV3")
    # TF: scale and offset convert first at top level, mean and variance inside the op's scope
    assert [t.op.name for t in op.inputs[1:]] == [
        "scale",
        "offset",
        "FusedBatchNormV3/mean",
        "FusedBatchNormV3/variance",
    ]
    assert op.get_attr("epsilon") == pytest.approx(1.001e-5)  # TF's floor on epsilon
    assert op.get_attr("is_training") is False
    assert (mean.shape.as_list(), var.shape.as_list()) == ([2], [2])
    with pytest.raises(ValueError, match="Both `mean` and `variance` must be a 1D tensor"):
        tf.nn.fused_batch_norm(img, [1.0, 1.0], [0.0, 0.0], is_training=False)


def test_sparse_xent_argument_errors(graph: tf.Graph) -> None:
    with pytest.raises(
        ValueError, match="Only call `sparse_softmax_cross_entropy_with_logits` with named"
    ):
        tf.nn.sparse_softmax_cross_entropy_with_logits(P(tf), P(tf))
    with pytest.raises(ValueError, match="Rank mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=P(tf, "int32", name="l"), logits=P(tf)
        )


def test_softmax_axis_out_of_range(graph: tf.Graph) -> None:
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"`dim` must be in the range \[-2, 2\)"
    ):
        tf.nn.softmax(P(tf), axis=2)


# -- values -------------------------------------------------------------------------------------

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)


def np_softmax(x: np.ndarray[Any, Any], axis: int) -> np.ndarray[Any, Any]:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)  # type: ignore[no-any-return]


async def test_activation_values(graph: tf.Graph, evaluate: Any, same: Any) -> None:
    x = tf.placeholder(tf.float32, X.shape)
    fetches = [
        tf.nn.softmax(x, axis=1),
        tf.nn.log_softmax(x, axis=-2),
        tf.nn.log_softmax(x),
        tf.nn.softmax(x, axis=0),
        tf.nn.relu6(x * 4),
        tf.nn.elu(x),
        tf.nn.leaky_relu(x, alpha=0.1),
        tf.nn.softplus(x),
        tf.nn.sigmoid(x),
        tf.nn.tanh(x),
        tf.nn.l2_loss(x),
    ]
    got = await evaluate(fetches, {x: X})
    want = [
        np_softmax(X, 1),
        np.log(np_softmax(X, 1)),
        np.log(np_softmax(X, 2)),
        np_softmax(X, 0),
        np.clip(X * 4, 0, 6),
        np.where(X < 0, np.expm1(X), X),
        np.where(X > 0, X, X * np.float32(0.1)),
        np.log1p(np.exp(X)),
        1 / (1 + np.exp(-X)),
        np.tanh(X),
        np.float32((X.astype(np.float64) ** 2).sum() / 2),
    ]
    for g, w in zip(got, want, strict=True):
        same(g, np.asarray(w, np.float32), rtol=1e-5)


async def test_sparse_xent_values(graph: tf.Graph, evaluate: Any, same: Any) -> None:
    logits = tf.placeholder(tf.float32, X.shape)
    labels = tf.placeholder(tf.int32, [2, 3])
    flat = tf.placeholder(tf.float32, [6, 4])
    lab = np.array([[0, 3, 1], [2, 2, 0]], np.int32)
    loss3 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    loss2 = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.reshape(labels, [-1]), logits=flat
    )
    assert loss3.shape.as_list() == [2, 3]
    got = await evaluate([loss3, loss2], {logits: X, labels: lab, flat: X.reshape(6, 4)})
    logp = np.log(np_softmax(X, -1))
    want = -np.take_along_axis(logp, lab[..., None], -1)[..., 0]
    same(got[0], want.astype(np.float32), rtol=1e-5)
    same(got[1], want.reshape(-1).astype(np.float32), rtol=1e-5)


def np_conv(x: Any, w: Any, stride: int, pad: int) -> Any:
    x = np.pad(x, [(0, 0), (pad, pad), (pad, pad), (0, 0)])
    kh, kw = w.shape[:2]
    oh, ow = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride : i * stride + kh, j * stride : j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out.astype(np.float32)


async def test_conv_pool_and_batch_norm_values(graph: tf.Graph, evaluate: Any, same: Any) -> None:
    img = RNG.standard_normal((2, 5, 5, 2)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 2, 4)).astype(np.float32)
    dw = RNG.standard_normal((3, 3, 2, 2)).astype(np.float32)
    x = tf.placeholder(tf.float32, img.shape)
    fetches = [
        tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
        tf.nn.conv2d(x, w, strides=2, padding="VALID"),
        tf.nn.depthwise_conv2d(x, dw, [1, 1, 1, 1], "VALID"),
        tf.nn.max_pool(x, 2, 2, "VALID"),
        tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
        tf.nn.fused_batch_norm(
            x, [2.0, 1.0], [0.5, 0.0], [0.1, -0.2], [1.0, 4.0], is_training=False
        )[0],
    ]
    got = await evaluate(fetches, {x: img})
    depthwise = np.concatenate(
        [np_conv(img[..., c : c + 1], dw[:, :, c : c + 1, :], 1, 0) for c in range(2)], axis=-1
    )
    windows = img[:, :4, :4, :].reshape(2, 2, 2, 2, 2, 2)
    bn = (img - np.array([0.1, -0.2])) / np.sqrt(np.array([1.0, 4.0]) + 1e-3) * [2.0, 1.0] + [
        0.5,
        0.0,
    ]
    want = [
        np_conv(img, w, 1, 1),
        np_conv(img, w, 2, 0),
        depthwise,
        windows.max(axis=(2, 4)),
        windows.mean(axis=(2, 4)),
        bn.astype(np.float32),
    ]
    for g, wv in zip(got, want, strict=True):
        same(g, wv, rtol=1e-4)
