"""Neural-network building functions (``aiotf.nn``), with ``tf.compat.v1.nn``'s names and nodes.

Convolution and pooling take TensorFlow's shorthands: an int or 2-list ``strides``/``ksize``/
``dilations`` spreads over the spatial axes, and a list of pairs as ``padding`` means
``EXPLICIT`` padding. ``softmax``/``log_softmax`` over another axis than the last swap it to the
end and back with two ``Transpose`` nodes, as TensorFlow does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from aiotf.framework import dtypes, errors
from aiotf.framework.ops import Tensor, constant_value, convert_to_tensor, get_default_graph
from aiotf.ops import array_ops, math_ops
from aiotf.ops.op_helper import apply_op

sigmoid = math_ops.sigmoid
tanh = math_ops.tanh


def bias_add(
    value: Any, bias: Any, data_format: str | None = None, name: str | None = None
) -> Tensor:
    attrs = {"data_format": (data_format or "NHWC").encode()}
    return apply_op("BiasAdd", [value, bias], attrs, name=name or "BiasAdd").outputs[0]


def _activation(op_type: str, doc: str) -> Callable[..., Tensor]:
    def fn(features: Any, name: str | None = None) -> Tensor:
        return apply_op(op_type, [features], name=name or op_type).outputs[0]

    fn.__doc__ = doc
    return fn


relu = _activation("Relu", "``max(features, 0)``.")
relu6 = _activation("Relu6", "``min(max(features, 0), 6)``.")
elu = _activation("Elu", "``features`` if positive, else ``exp(features) - 1``.")
selu = _activation("Selu", "The scaled exponential linear unit.")
softplus = _activation("Softplus", "``log(exp(features) + 1)``.")


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """``features`` if positive, else ``alpha * features``."""
    attrs = {"alpha": float(alpha)}
    return apply_op("LeakyRelu", [features], attrs, name=name or "LeakyRelu").outputs[0]


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """``sum(t ** 2) / 2``."""
    return apply_op("L2Loss", [t], name=name or "L2Loss").outputs[0]


# -- softmax ------------------------------------------------------------------------------------
def softmax(logits: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:
    """``exp(logits) / sum(exp(logits))`` over ``axis`` (the last when None)."""
    return _over_axis("Softmax", logits, _axis(axis, dim), name)


def log_softmax(logits: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:
    """``logits - log(sum(exp(logits)))`` over ``axis`` (the last when None)."""
    return _over_axis("LogSoftmax", logits, _axis(axis, dim), name)


def _axis(axis: Any, dim: Any) -> Any:
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = axis if axis is not None else dim
    return -1 if axis is None else axis


def _over_axis(op_type: str, logits: Any, dim: Any, name: str | None) -> Tensor:
    """TensorFlow's ``_wrap_2d_function``: move ``dim`` last, apply the op, move it back."""
    x = convert_to_tensor(logits)
    shape = x.shape
    if dim == -1 or (shape.rank is not None and dim == shape.rank - 1):
        return apply_op(op_type, [x], name=name or op_type).outputs[0]
    if shape.rank is None:
        raise NotImplementedError(f"{op_type} over axis {dim} needs a known rank")
    if not -shape.rank <= dim < shape.rank:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"`dim` must be in the range [{-shape.rank}, {shape.rank}) where {shape.rank} is the "
            f"number of dimensions in the input. Received: dim={dim}",
        )
    ndims = array_ops.rank(x)
    if dim < 0:
        dim += ndims
    input_rank = array_ops.rank(x)
    dim_axis = dim % shape.rank
    swapped = _swap_axis(x, dim_axis, math_ops.subtract(input_rank, 1))
    out = apply_op(op_type, [swapped]).outputs[0]
    out = _swap_axis(out, dim_axis, math_ops.subtract(input_rank, 1), name=name)
    out.set_shape(shape)
    return out


def _swap_axis(x: Tensor, dim_index: Any, last_index: Any, name: str | None = None) -> Tensor:
    perm = array_ops.concat(
        [
            math_ops.range(dim_index),
            [last_index],
            math_ops.range(dim_index + 1, last_index),
            [dim_index],
        ],
        0,
    )
    return array_ops.transpose(x, perm, name=name or "transpose")


# -- losses -------------------------------------------------------------------------------------
def sparse_softmax_cross_entropy_with_logits(
    _sentinel: Any = None,
    labels: Any = None,
    logits: Any = None,
    name: str | None = None,
) -> Tensor:
    """The cross entropy of ``softmax(logits)`` against class indices ``labels`` (per row)."""
    if _sentinel is not None:
        raise ValueError(
            "Only call `sparse_softmax_cross_entropy_with_logits` with named arguments "
            "(labels=..., logits=..., ...). "
            f"Received unnamed argument: {_sentinel}"
        )
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    graph = get_default_graph()
    with graph.name_scope(name or "SparseSoftmaxCrossEntropyWithLogits"):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        half = logits.dtype.base_dtype is dtypes.float16
        precise = math_ops.cast(logits, dtypes.float32) if half else logits
        labels_shape = array_ops.shape(labels)
        _check_xent_shapes(labels, logits)
        op_name = name or "SparseSoftmaxCrossEntropyWithLogits"
        if logits.shape.rank == 2:
            cost = _sparse_xent(precise, labels, op_name)
        else:  # flatten to rank 2 and back; the kernel checks the shapes agree
            num_classes = array_ops.shape(logits)[array_ops.rank(logits) - 1]
            precise = array_ops.reshape(precise, [-1, num_classes])
            flat_labels = array_ops.reshape(labels, [-1])
            cost = _sparse_xent(precise, flat_labels, op_name)
            cost = array_ops.reshape(cost, labels_shape)
            cost.set_shape(labels.shape)
        return math_ops.cast(cost, dtypes.float16) if half else cost


def softmax_cross_entropy_with_logits(
    labels: Any = None,
    logits: Any = None,
    dim: Any = -1,
    name: str | None = None,
    axis: Any = None,
) -> Tensor:
    """The cross entropy of ``softmax(logits)`` against the distributions ``labels`` along
    ``axis``; no gradient flows into ``labels`` (``tf.compat.v1``: a ``StopGradient``)."""
    if axis is not None and dim != -1:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if labels is None or logits is None:
        raise ValueError(
            "Both `labels` and `logits` must be provided for softmax_cross_entropy_with_logits"
            f"Received: labels={labels} and logits={logits}"
        )
    graph = get_default_graph()
    with graph.name_scope(name or "softmax_cross_entropy_with_logits_sg") as scope:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return _softmax_xent_v2(labels, logits, axis, scope)


def _softmax_xent_v2(labels: Any, logits: Any, axis: int, name: str) -> Tensor:
    """TensorFlow's ``softmax_cross_entropy_with_logits_v2_helper``: ``axis`` moved last, both
    operands flattened to matrices, the op, and the cost reshaped to the logits' other dims."""
    graph = get_default_graph()
    with graph.name_scope(name) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        low = logits.dtype.base_dtype in (dtypes.float16, dtypes.bfloat16)
        precise = math_ops.cast(logits, dtypes.float32) if low else logits
        labels = math_ops.cast(labels, precise.dtype)
        input_rank = array_ops.rank(precise)
        shape = logits.shape
        if axis != -1:
            precise = _move_dim_to_end(precise, axis, input_rank)
            labels = _move_dim_to_end(labels, axis, input_rank)
        input_shape = array_ops.shape(precise)
        precise, labels = _flatten_outer_dims(precise), _flatten_outer_dims(labels)
        op = apply_op("SoftmaxCrossEntropyWithLogits", [precise, labels], name=scope)
        size = [math_ops.subtract(input_rank, 1)]
        cost = array_ops.reshape(op.outputs[0], array_ops.slice(input_shape, [0], size))
        if shape.rank is not None:
            dims = shape.as_list()
            del dims[axis]
            cost.set_shape(dims)
        return math_ops.cast(cost, logits.dtype) if low else cost


def _move_dim_to_end(tensor: Tensor, dim: int, rank: Tensor) -> Tensor:
    perm = [math_ops.range(dim), math_ops.range(dim + 1, rank), [dim]]
    return array_ops.transpose(tensor, array_ops.concat(perm, 0))


def _flatten_outer_dims(logits: Tensor) -> Tensor:
    """``logits`` as a matrix: its outer dims flattened, the last kept."""
    rank = array_ops.rank(logits)
    last = array_ops.slice(array_ops.shape(logits), [math_ops.subtract(rank, 1)], [1])
    out = array_ops.reshape(logits, array_ops.concat([[-1], last], 0))
    dims = logits.shape.as_list() if logits.shape.rank is not None else None
    if dims and None not in dims[:-1]:
        out.set_shape([math.prod(dims[:-1]), dims[-1]])
    return out


def _sparse_xent(logits: Tensor, labels: Tensor, name: str) -> Tensor:
    op = apply_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], name=name)
    return op.outputs[0]


def _check_xent_shapes(labels: Tensor, logits: Tensor) -> None:
    if logits.shape.rank == 0:
        raise ValueError(f"Logits cannot be scalars - received shape {logits.shape}.")
    if labels.shape.rank is not None and logits.shape.rank is not None:
        if labels.shape.rank != logits.shape.rank - 1:
            raise ValueError(
                f"Rank mismatch: Rank of labels (received {labels.shape.rank}) should equal rank "
                f"of logits minus 1 (received {logits.shape.rank})."
            )
        lead = logits.shape.as_list()[:-1]
        if not labels.shape.is_compatible_with(lead):
            raise ValueError(
                f"`labels.shape` must equal `logits.shape` except for the last dimension. "
                f"Received: labels.shape={labels.shape} and logits.shape={logits.shape}"
            )


# -- convolution and pooling --------------------------------------------------------------------
def _spatial(value: Any, data_format: str, name: str) -> list[int]:
    channel_index = 1 if data_format.startswith("NC") else 3
    if value is None:
        return [1, 1, 1, 1]
    values = list(value) if isinstance(value, list | tuple) else [value]
    if len(values) == 4:
        return [int(v) for v in values]
    if len(values) == 1:
        values = values * 2
    elif len(values) != 2:
        raise ValueError(
            f"{name} should be of length 1, 2 or 4. Received: {name}={value} of length "
            f"{len(values)}"
        )
    if channel_index == 1:
        return [1, 1, int(values[0]), int(values[1])]
    return [1, int(values[0]), int(values[1]), 1]


def _padding(padding: Any) -> tuple[bytes, list[int]]:
    """``(padding, explicit_paddings)``: a list of pairs is ``EXPLICIT`` padding."""
    if isinstance(padding, str | bytes):
        text = padding.decode() if isinstance(padding, bytes) else padding
        return text.upper().encode(), []
    pairs = [list(p) for p in padding]
    if len(pairs) != 4 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"When padding is explicit, it must be a list of 4 pairs, got {padding}")
    return b"EXPLICIT", [int(v) for p in pairs for v in p]


def conv2d(
    input: Any,  # noqa: A002
    filter: Any = None,  # noqa: A002
    strides: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
    filters: Any = None,
) -> Tensor:
    """A 2-D convolution of ``input`` (NHWC) with ``filter`` (HWIO)."""
    if filter is None:
        filter = filters  # noqa: A001
    if filter is None or padding is None:
        raise TypeError("conv2d() needs `filter` (or `filters`) and `padding`")
    pad, explicit = _padding(padding)
    attrs = {
        "strides": _spatial(strides, data_format, "strides"),
        "use_cudnn_on_gpu": use_cudnn_on_gpu,
        "padding": pad,
        "explicit_paddings": explicit,
        "data_format": data_format.encode(),
        "dilations": _spatial(dilations, data_format, "dilations"),
    }
    return apply_op("Conv2D", [input, filter], attrs, name=name or "Conv2D").outputs[0]


def depthwise_conv2d_native(
    input: Any,  # noqa: A002
    filter: Any,  # noqa: A002
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """Each input channel convolved with its own ``channel_multiplier`` filters."""
    pad, explicit = _padding(padding)
    attrs = {
        "strides": [int(s) for s in strides],
        "padding": pad,
        "explicit_paddings": explicit,
        "data_format": data_format.encode(),
        "dilations": [int(d) for d in dilations],
    }
    op = apply_op(
        "DepthwiseConv2dNative", [input, filter], attrs, name=name or "DepthwiseConv2dNative"
    )
    return op.outputs[0]


def depthwise_conv2d(
    input: Any,  # noqa: A002
    filter: Any,  # noqa: A002
    strides: Any,
    padding: Any,
    rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """``tf.compat.v1.nn.depthwise_conv2d``: the native op in a ``depthwise`` scope; a ``rate``
    above 1 runs it on ``SpaceToBatchND`` blocks and puts them back with ``BatchToSpaceND``
    (TensorFlow's ``with_space_to_batch``), as TensorFlow 1.x builds atrous convolutions."""
    rate = dilations if rate is None else rate
    graph = get_default_graph()
    with graph.name_scope(name or "depthwise") as scope:
        x = convert_to_tensor(input, name="tensor_in")
        f = convert_to_tensor(filter, name="filter_in")
        rate = [1, 1] if rate is None else rate

        def op(converted: Tensor, pad: Any) -> Tensor:
            return depthwise_conv2d_native(
                converted, f, strides, pad, data_format=data_format or "NHWC", name=scope
            )

        return with_space_to_batch(
            x, rate, padding, op, filter_shape=array_ops.shape(f), data_format=data_format
        )


# -- atrous convolution through SpaceToBatchND (TensorFlow's nn_ops.with_space_to_batch) --------
def with_space_to_batch(
    input: Any,  # noqa: A002
    dilation_rate: Any,
    padding: Any,
    op: Callable[[Tensor, Any], Tensor],
    filter_shape: Any = None,
    data_format: str | None = None,
) -> Tensor:
    """``op(input, padding)`` sampling ``input`` at ``dilation_rate``: ``op`` runs with VALID
    padding on ``SpaceToBatchND`` blocks of the input padded for ``padding``, and its result is
    put back by ``BatchToSpaceND``; a rate of all ones is just ``op(input, padding)``."""
    x = convert_to_tensor(input, name="input")
    rate = convert_to_tensor(dilation_rate, dtype=dtypes.int32, name="dilation_rate")
    if rate.shape.rank not in (None, 1):
        raise ValueError(
            f"`dilation_rate.shape.rank` must be 1. Received: dilation_rate={rate} of rank "
            f"{rate.shape.rank}"
        )
    if not rate.shape.is_fully_defined():
        raise ValueError(
            f"`dilation_rate.shape` must be fully defined. Received: dilation_rate={rate} with "
            f"shape {rate.shape}"
        )
    n = int(rate.shape[0])
    first = 2 if data_format is not None and data_format.startswith("NC") else 1
    spatial = list(range(first, n + first))
    if x.shape.rank is not None and x.shape.rank < spatial[-1] + (first == 1):
        raise ValueError(
            f"`input.shape.rank` must be at least {spatial[-1] + (first == 1)}. Received: "
            f"input.shape={x.shape} with rank {x.shape.rank}"
        )
    known_rate = constant_value(rate)
    rate_value: Any = rate if known_rate is None else known_rate
    if known_rate is not None:
        if np.any(known_rate < 1):
            raise ValueError(
                f"`dilation_rate` must be positive. Received: dilation_rate={known_rate}"
            )
        if np.all(known_rate == 1):
            return op(x, padding)
    pad, explicit = _padding(padding)
    base: Any
    if pad == b"SAME":
        if filter_shape is None:
            raise ValueError(
                "`filter_shape` must be specified for `padding='SAME'`. Received: "
                f"filter_shape={filter_shape} and padding={padding}"
            )
        filter_shape = convert_to_tensor(filter_shape, name="filter_shape")
        known_filter = constant_value(filter_shape)
        base = _base_paddings(filter_shape if known_filter is None else known_filter, n, rate_value)
    elif pad == b"VALID":
        base = np.zeros([n, 2], np.int32)
    elif pad == b"EXPLICIT":
        pairs = np.array(explicit).reshape([n + 2, 2])
        base = pairs[2:] if first == 2 else pairs[1:-1]
    else:
        raise ValueError(f"`padding` must be one of 'SAME' or 'VALID'. Received: padding={padding}")
    dims = x.shape.as_list() if x.shape.rank is not None else None
    size: Any = [dims[i] for i in spatial] if dims is not None else None
    if size is None or None in size:
        full = array_ops.shape(x)
        size = array_ops.stack([full[i] for i in spatial])
    paddings, crops = array_ops.required_space_to_batch_paddings(size, rate, base)
    block = _adjust(rate, 1, spatial)
    paddings, crops = _adjust(paddings, 0, spatial), _adjust(crops, 0, spatial)
    out = op(array_ops.space_to_batch_nd(x, block, paddings), "VALID")
    return array_ops.batch_to_space_nd(out, block, crops)


def _base_paddings(filter_shape: Any, n: int, rate: Any) -> Tensor:
    """The padding that turns a SAME convolution with dilated filters into a VALID one (the odd
    extra pad after, as conv2d)."""
    extra = (filter_shape[:n] - 1) * rate
    start = extra // 2
    end = extra - start
    return array_ops.stack([[start[i], end[i]] for i in range(n)])


def _adjust(orig: Any, fill: int, spatial: list[int]) -> Any:
    """``orig`` (one row per spatial dim) spread over dims 1..max(spatial) as SpaceToBatchND
    takes them, ``fill`` in the rows of the dims in between (a numpy value when ``orig`` is
    known while building)."""
    known = constant_value(orig) if isinstance(orig, Tensor) else np.asarray(orig)
    value: Any = orig if known is None else known
    rest = list(np.shape(known)[1:]) if known is not None else orig.shape.as_list()[1:]
    dtype = value.dtype if known is not None else orig.dtype.np_dtype
    parts: list[Any] = []
    previous, i = 0, 0
    while i < len(spatial):
        start = i
        if spatial[i] > 1:
            parts.append(np.full([spatial[i] - 1 - previous, *rest], fill, dtype=dtype))
        while i + 1 < len(spatial) and spatial[i + 1] == spatial[i] + 1:
            i += 1
        parts.append(value[start : i + 1])
        previous = spatial[i]
        i += 1
    if known is not None:
        return np.concatenate(parts)
    return array_ops.concat(parts, 0)


def _pool(
    op_type: str,
    value: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str,
    name: str | None,
) -> Tensor:
    attrs: dict[str, Any] = {
        "ksize": _spatial(ksize, data_format, "ksize"),
        "strides": _spatial(strides, data_format, "strides"),
        "padding": padding.upper().encode() if isinstance(padding, str) else padding,
        "data_format": data_format.encode(),
    }
    return apply_op(op_type, [value], attrs, name=name or op_type).outputs[0]


def max_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,  # noqa: A002
) -> Tensor:
    """The maximum over each ``ksize`` window, moved by ``strides``."""
    value = input if value is None else value
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name)


def avg_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,  # noqa: A002
) -> Tensor:
    """The mean over each ``ksize`` window (of its in-bounds cells), moved by ``strides``."""
    value = input if value is None else value
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name)


# -- normalization ------------------------------------------------------------------------------
def fused_batch_norm(
    x: Any,
    scale: Any,
    offset: Any,
    mean: Any = None,
    variance: Any = None,
    epsilon: float = 0.001,
    data_format: str = "NHWC",
    is_training: bool = True,
    name: str | None = None,
    exponential_avg_factor: float = 1.0,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(y, batch_mean, batch_variance)`` of a ``FusedBatchNormV3``."""
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError(
            "Both `mean` and `variance` must be a 1D tensor when is_training is False or "
            f"`exponential_avg_factor` != 1.0. Received: `mean` {mean!r} and `variance` "
            f"{variance!r}"
        )
    x = convert_to_tensor(x, name="input")
    scale = convert_to_tensor(scale, name="scale")
    offset = convert_to_tensor(offset, name="offset")
    if mean is None:
        mean = array_ops.constant([])
    if variance is None:
        variance = array_ops.constant([])
    attrs = {
        "epsilon": max(float(epsilon), 1.001e-5),
        "exponential_avg_factor": float(exponential_avg_factor),
        "data_format": data_format.encode(),
        "is_training": is_training,
    }
    inputs = [x, scale, offset, mean, variance]
    op = apply_op("FusedBatchNormV3", inputs, attrs, name=name or "FusedBatchNormV3")
    return op.outputs[0], op.outputs[1], op.outputs[2]
