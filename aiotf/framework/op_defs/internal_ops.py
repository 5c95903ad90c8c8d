"""Ops the runtime inserts: call-frame arguments and results, cross-device Send/Recv, fusions."""

from aiotf.framework import common_shapes
from aiotf.framework.op_def_registry import register_op
from aiotf.framework.op_defs.nn_ops import MAX_POOL_WINDOW_ATTRS

register_op(
    "_Arg",
    outputs=["output: T"],
    attrs=["T: type", "index: int >= 0"],
    shape_fn=common_shapes.unknown,
    is_stateful=True,
)
register_op(
    "_Retval",
    inputs=["input: T"],
    attrs=["T: type", "index: int >= 0"],
    shape_fn=common_shapes.no_outputs,
    is_stateful=True,
)

_RENDEZVOUS_ATTRS = [
    "tensor_name: string",
    "send_device: string",
    "send_device_incarnation: int",
    "recv_device: string",
    "client_terminated: bool = false",
]
register_op(
    "_Send",
    inputs=["tensor: T"],
    attrs=["T: type", *_RENDEZVOUS_ATTRS],
    shape_fn=common_shapes.no_outputs,
    is_stateful=True,
)
register_op(
    "_Recv",
    outputs=["tensor: tensor_type"],
    attrs=["tensor_type: type", *_RENDEZVOUS_ATTRS],
    shape_fn=common_shapes.unknown,
    is_stateful=True,
)

# The remapper's fusion (``runtime/remapper.py``): MaxPool of Relu and/or BiasAdd, computed pool
# first, and maybe of the Conv2D under them. ``fused_ops`` lists the ops before the pool in graph
# order, ``fused_names`` their nodes (whose errors name them), ``args`` the Conv2D's filter and
# the bias, of those fused; a Conv2D's window is in the ``conv_`` attrs (its T and data_format
# are the pool's).
register_op(
    "_FusedMaxPool",
    inputs=["input: T", "args: num_args * T"],
    outputs=["output: T"],
    attrs=[
        "T: {half, bfloat16, float, double}",
        "num_args: int >= 0",
        "fused_ops: list(string)",
        "fused_names: list(string)",
        *MAX_POOL_WINDOW_ATTRS,
        "conv_strides: list(int) = [1, 1, 1, 1]",
        "conv_padding: {'SAME', 'VALID', 'EXPLICIT'} = 'VALID'",
        "conv_explicit_paddings: list(int) = []",
        "conv_dilations: list(int) = [1, 1, 1, 1]",
        "conv_use_cudnn_on_gpu: bool = true",
    ],
    shape_fn=common_shapes.fused_max_pool,
)

# The remapper's other fusion (``runtime/remapper.py``): two MatMuls with a BiasAdd and/or Relu
# between them and maybe after them, ``Relu(BiasAdd(MatMul(Relu(BiasAdd(MatMul(a, w1), b1)), w2),
# b2))``, computed by halves of the hidden units. ``fused_ops`` lists the graph's ops in order
# (the last is the one whose name the node takes), ``fused_names`` the others' nodes; ``args``
# are the MatMuls' and BiasAdds' second inputs in that order; ``data_format`` is the BiasAdds'.
register_op(
    "_FusedMatMulPair",
    inputs=["a: T", "args: num_args * T"],
    outputs=["product: T"],
    attrs=[
        "T: {float}",
        "num_args: int >= 2",
        "fused_ops: list(string)",
        "fused_names: list(string)",
        "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
    ],
    shape_fn=common_shapes.fused_matmul_pair,
)

# The remapper's third fusion (``runtime/remapper.py``): an AddN of MatMuls that nothing else
# reads, ``AddN(MatMul(a0, b0), MatMul(a1, b1), ...)``, each product folded into its share of the
# sum while it is in cache. ``args`` are the MatMuls' operands in the AddN's order (a0, b0, a1,
# b1, ...), ``fused_names`` the MatMuls' nodes (whose errors name them); the node takes the AddN's
# name.
register_op(
    "_FusedMatMulSum",
    inputs=["args: num_args * T"],
    outputs=["sum: T"],
    attrs=["T: {float}", "num_args: int >= 4", "fused_names: list(string)"],
    shape_fn=common_shapes.fused_matmul_sum,
)
