"""Neural-network ops: bias, activations, softmax."""

from aiotf.framework import common_shapes
from aiotf.framework.op_def_registry import register_op

register_op(
    "BiasAdd",
    inputs=["value: T", "bias: T"],
    outputs=["output: T"],
    attrs=["T: numbertype", "data_format: {'NHWC', 'NCHW'} = 'NHWC'"],
    shape_fn=common_shapes.bias_add,
)
register_op(
    "Relu",
    inputs=["features: T"],
    outputs=["activations: T"],
    attrs=["T: {realnumbertype, qint8}"],
    shape_fn=common_shapes.unchanged,
)
register_op(
    "Softmax",
    inputs=["logits: T"],
    outputs=["softmax: T"],
    attrs=["T: {half, bfloat16, float, double}"],
    shape_fn=common_shapes.unchanged_at_least_rank_1,
)

# ----------------------------------------------------------------------------------------------
# Activations, convolution, pooling, losses, normalization (TensorFlow's core/ops/nn_ops.cc).
# ----------------------------------------------------------------------------------------------

register_op(
    "Relu6",
    inputs=["features: T"],
    outputs=["activations: T"],
    attrs=["T: realnumbertype"],
    shape_fn=common_shapes.unchanged,
)
for _name in ("Elu", "Selu", "Softplus"):
    register_op(
        _name,
        inputs=["features: T"],
        outputs=["activations: T"],
        attrs=["T: {half, bfloat16, float, double}"],
        shape_fn=common_shapes.unchanged,
    )
register_op(
    "LeakyRelu",
    inputs=["features: T"],
    outputs=["activations: T"],
    attrs=["alpha: float = 0.2", "T: {half, bfloat16, float, double} = float"],
    shape_fn=common_shapes.unchanged,
)
register_op(
    "LogSoftmax",
    inputs=["logits: T"],
    outputs=["logsoftmax: T"],
    attrs=["T: {half, bfloat16, float, double}"],
    shape_fn=common_shapes.unchanged_at_least_rank_1,
)
register_op(
    "L2Loss",
    inputs=["t: T"],
    outputs=["output: T"],
    attrs=["T: {half, bfloat16, float, double}"],
    shape_fn=common_shapes.scalar,
)
register_op(
    "Conv2D",
    inputs=["input: T", "filter: T"],
    outputs=["output: T"],
    attrs=[
        "T: {half, bfloat16, float, double, int32}",
        "strides: list(int)",
        "use_cudnn_on_gpu: bool = true",
        "padding: {'SAME', 'VALID', 'EXPLICIT'}",
        "explicit_paddings: list(int) = []",
        "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
        "dilations: list(int) = [1, 1, 1, 1]",
    ],
    shape_fn=common_shapes.conv2d,
)
register_op(
    "DepthwiseConv2dNative",
    inputs=["input: T", "filter: T"],
    outputs=["output: T"],
    attrs=[
        "T: {half, bfloat16, float, double}",
        "strides: list(int)",
        "padding: {'SAME', 'VALID', 'EXPLICIT'}",
        "explicit_paddings: list(int) = []",
        "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
        "dilations: list(int) = [1, 1, 1, 1]",
    ],
    shape_fn=common_shapes.depthwise_conv2d,
)
MAX_POOL_WINDOW_ATTRS = [  # MaxPool's, and the remapper's _FusedMaxPool's (internal_ops.py)
    "ksize: list(int) >= 4",
    "strides: list(int) >= 4",
    "padding: {'SAME', 'VALID', 'EXPLICIT'}",
    "explicit_paddings: list(int) = []",
    "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'",
]
register_op(
    "MaxPool",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=[
        "T: {half, bfloat16, float, double, int32, int64, uint8, int16, int8, uint16, qint8} "
        "= float",
        *MAX_POOL_WINDOW_ATTRS,
    ],
    shape_fn=common_shapes.pool,
)
register_op(
    "AvgPool",
    inputs=["value: T"],
    outputs=["output: T"],
    attrs=[
        "ksize: list(int) >= 4",
        "strides: list(int) >= 4",
        "padding: {'SAME', 'VALID'}",
        "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
        "T: {half, bfloat16, float, double}",
    ],
    shape_fn=common_shapes.pool,
)
register_op(
    "SparseSoftmaxCrossEntropyWithLogits",
    inputs=["features: T", "labels: Tlabels"],
    outputs=["loss: T", "backprop: T"],
    attrs=["T: {half, bfloat16, float, double}", "Tlabels: {int32, int64} = int64"],
    shape_fn=common_shapes.sparse_softmax_xent,
)
register_op(
    "SoftmaxCrossEntropyWithLogits",
    inputs=["features: T", "labels: T"],
    outputs=["loss: T", "backprop: T"],
    attrs=["T: {half, bfloat16, float, double}"],
    shape_fn=common_shapes.softmax_xent,
)
register_op(
    "FusedBatchNormV3",
    inputs=["x: T", "scale: U", "offset: U", "mean: U", "variance: U"],
    outputs=[
        "y: T",
        "batch_mean: U",
        "batch_variance: U",
        "reserve_space_1: U",
        "reserve_space_2: U",
        "reserve_space_3: U",
    ],
    attrs=[
        "T: {half, bfloat16, float}",
        "U: {bfloat16, float}",
        "epsilon: float = 0.0001",
        "exponential_avg_factor: float = 1.0",
        "data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'",
        "is_training: bool = true",
    ],
    shape_fn=common_shapes.fused_batch_norm,
)
