"""Neural-network kernels."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from aiotf.framework import dtypes, errors
from aiotf.kernels import derived
from aiotf.kernels.math_kernels import FLOATS, NUMERIC, shape_str
from aiotf.kernels.registry import elementwise_cost, register_kernel

Array = np.ndarray[Any, Any]


# numpy's vectorised loops run when both operands of a binary ufunc are contiguous arrays; with a
# scalar or a broadcast row as the second operand it takes a slower loop (on the benchmark
# machine: maximum with a scalar 0 takes 2.5x, the add of a 32-float bias row 1.5-1.9x as long;
# a row of 512 is as fast as a tile). So over a large contiguous tensor Relu, and BiasAdd with a
# short bias, run against one contiguous tile of about CHUNK elements (zeros, or the bias
# repeated; a constant bias's tile is made once, see ``derived``) that stays in cache: the
# tensor as rows of the tile's length in one call, then what is left: the same values. A tensor
# laid out by columns (a product's, ``products``) is taken in its memory's order: its bias
# repeats each value along a column, so its tile is the whole tensor's pattern (up to CHUNK
# elements; mlp's 64x512 layers: bias and Relu 20 against 10 us warm, ~7 us a layer in the step).
CHUNK = 1 << 16
SHORT_ROW = 256  # a bias row at least this long broadcasts as fast as a tile
_ZEROS: dict[np.dtype[Any], Array] = {}


def _order(x: Array) -> str:
    """'C' or 'F' where ``x``'s elements are one block of memory in that order (both, as a
    vector's are: 'C'), else ''."""
    return "C" if x.flags.c_contiguous else "F" if x.flags.f_contiguous else ""


def _tiled(ufunc: Any, x: Array, tile: Array, out: Array | None = None) -> Array:
    """``ufunc(x, pattern)`` for ``x`` laid out in one block, where ``tile`` repeats the second
    operand's pattern in ``x``'s memory order and each run of ``tile.size`` elements of it
    starts at a repeat; into ``out`` (laid out as ``x``, ``x`` itself allowed) when given."""
    if out is None:
        out = np.empty_like(x)  # in x's order
    # Flat, in memory's order: by columns, the transpose's rows are.
    xf, of = (x, out) if x.flags.c_contiguous else (x.T, out.T)
    xf, of, step = xf.reshape(-1), of.reshape(-1), tile.size
    if x.size <= step:  # one run of the tile (mlp's layers): no rows of views to make
        ufunc(xf, tile if x.size == step else tile[: x.size], out=of)
        return out
    whole = x.size // step * step
    if whole:
        rows = (whole // step, step)
        ufunc(xf[:whole].reshape(rows), tile, out=of[:whole].reshape(rows))
    if whole < x.size:
        ufunc(xf[whole:], tile[: x.size - whole], out=of[whole:])
    return out


def _bias_add_fast_for(*, data_format: bytes) -> Callable[[Array, Array], Array] | None:
    """BiasAdd over the last axis without the kernel's messages: a bias whose shape is wrong for
    ``value`` raises, and the kernel says why."""
    if data_format == b"NCHW":
        return None

    def fast(value: Array, bias: Array) -> Array:
        if value.ndim < 2 or bias.ndim != 1 or value.shape[-1] != bias.shape[0]:
            raise ValueError("not a bias of value's channels")
        return add_bias_into(value, bias)

    return fast


def _bias_channel(value: Array, data_format: bytes) -> int:
    """The axis BiasAdd adds its bias along: NCHW's channels from 3 dimensions, else the last."""
    return 1 if data_format == b"NCHW" and value.ndim >= 3 else value.ndim - 1


def _add_bias(value: Array, bias: Array, channel: int, out: Array | None = None) -> Array:
    """``value + bias`` along axis ``channel`` (shapes checked), into ``out`` when given."""
    if channel != value.ndim - 1:
        result: Array = np.add(value, bias.reshape((-1,) + (1,) * (value.ndim - 2)), out=out)
        return result
    return add_bias_into(value, bias, out)


def _bias_add_forward(value: Array, bias: Array, *, data_format: bytes) -> Array:
    """BiasAdd into ``value`` (see ``register_kernel``'s ``forward``); raises before it writes
    when the kernel would fail or answer in another dtype. (``_bias_channel`` and ``_add_bias``
    written out: in a step's cold caches each call costs about a microsecond, and this runs
    between a model's products.)"""
    last = value.ndim - 1
    channel = 1 if data_format == b"NCHW" and last >= 2 else last
    if (
        last < 1
        or bias.ndim != 1
        or value.shape[channel] != bias.shape[0]
        or value.dtype != bias.dtype
    ):
        raise ValueError("not BiasAdd's operands, or not of one dtype")
    if channel == last:
        return add_bias_into(value, bias, value)
    result: Array = np.add(value, bias.reshape((-1,) + (1,) * (last - 1)), out=value)
    return result


@register_kernel(
    "BiasAdd",
    cost=elementwise_cost,
    types={"T": NUMERIC},
    fast_for=_bias_add_fast_for,
    forward=_bias_add_forward,
)
def bias_add(value: Array, bias: Array, *, data_format: bytes) -> Array:
    if value.ndim < 2:
        raise errors.InvalidArgumentError(
            None, None, f"Input tensor must be at least 2D: {shape_str(value)}"
        )
    if bias.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"Biases must be 1D: {shape_str(bias)}")
    channel = _bias_channel(value, data_format)
    if value.shape[channel] != bias.shape[0]:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Must provide as many biases as the last dimension of the input tensor: "
            f"{shape_str(bias)} vs. {shape_str(value)}",
        )
    return _add_bias(value, bias, channel)


def add_bias_into(value: Array, bias: Array, out: Array | None = None) -> Array:
    """``value + bias`` along the last axis (through a tile, see CHUNK), into ``out`` (laid out
    as ``value``, ``value`` itself allowed) when given."""
    if bias.size and value.dtype == bias.dtype and value.size >= CHUNK // 4:
        flags = value.flags  # _order's, written out (see _bias_add_forward)
        if flags.c_contiguous:
            if bias.size < SHORT_ROW and (out is None or out is value or _order(out) == "C"):
                return _tiled(np.add, value, derived.derived("bias_tile", bias, _bias_tile), out)
        elif (
            flags.f_contiguous
            and value.size <= CHUNK
            and (out is None or out is value or _order(out) == "F")
        ):
            reps = value.size // bias.size  # each bias value's run, down a column
            tile = derived.derived(("bias_runs", reps), bias, lambda b: np.repeat(b, reps))
            return _tiled(np.add, value, tile, out)
    result: Array = np.add(value, bias, out=out)
    return result


def _bias_tile(bias: Array) -> Array:
    tile: Array = np.tile(bias, CHUNK // bias.size)
    return tile


def _relu_forward(features: Array) -> Array:
    return relu_into(features, features)


@register_kernel("Relu", cost=elementwise_cost, types={"T": NUMERIC}, forward=_relu_forward)
def relu(features: Array) -> Array:
    return relu_into(features, None)


def relu_into(features: Array, out: Array | None) -> Array:
    """Relu's values, into ``out`` (laid out as ``features``, ``features`` itself allowed) when
    given."""
    flags = features.flags  # _order's, written out (see _bias_add_forward)
    if (
        features.dtype.kind == "f"
        and features.size >= CHUNK // 4
        and (flags.c_contiguous or flags.f_contiguous)
        and (out is None or out is features or _order(out) == _order(features))
    ):  # NaN stays NaN, as below
        zeros = _ZEROS.get(features.dtype)
        if zeros is None:
            zeros = _ZEROS[features.dtype] = np.zeros(CHUNK, features.dtype)
        return _tiled(np.maximum, features, zeros, out)
    result: Array = np.maximum(features, features.dtype.type(0), out=out)
    return result


_ONEDNN_SOFTMAX = frozenset({dtypes.float32, dtypes.bfloat16})


@register_kernel("Softmax", cost=elementwise_cost, types={"T": FLOATS})
def softmax(logits: Array) -> Array:
    """``exp(x - max) / sum(exp(x - max))`` over the last axis.

    TensorFlow's CPU build runs float32 and bfloat16 through oneDNN, whose row maximum skips
    NaNs (starting at the lowest finite value) and whose exp of a NaN overflows to +inf: so
    in a row holding a NaN, or +inf, the NaN and +inf entries answer NaN and all others 0
    (``[inf, 1] -> [nan, 0]``). Its Eigen kernel (float16, float64) answers a row of NaN.
    """
    if logits.ndim < 1:
        raise errors.InvalidArgumentError(
            None, None, f"logits must have >= 1 dimension, got {shape_str(logits)}"
        )
    # The ufuncs' reductions called as they are: ndarray.max, .sum and .any each go through a
    # Python wrapper first, which in a step's cold caches cost mlp_b1 ~3% of its run.
    e: Array = np.subtract(logits, np.maximum.reduce(logits, axis=-1, keepdims=True))
    np.exp(e, out=e)
    total = np.add.reduce(e, axis=-1, keepdims=True)
    # Each total is in [1, n] unless its row held a NaN or +inf, or nothing but -inf: then it is
    # NaN, and so is the sum of them all.
    if dtypes.from_numpy(logits.dtype) in _ONEDNN_SOFTMAX and math.isnan(
        np.add.reduce(total, axis=None)
    ):
        return _onednn_softmax_of_nan_or_inf(logits)  # a NaN or +inf in some row (see above)
    np.divide(e, total, out=e)
    return e


def _onednn_softmax_of_nan_or_inf(logits: Array) -> Array:
    lowest = dtypes.finfo(logits.dtype).min
    top = np.max(np.where(np.isnan(logits), lowest, logits), axis=-1, keepdims=True)
    e = np.exp(logits - top)
    total = np.sum(e, axis=-1, keepdims=True)
    out: Array = e / total
    spoilt = np.isnan(total)  # a NaN in e: its exp overflowed, the sum is +inf
    return np.where(spoilt, np.where(np.isnan(e), out.dtype.type(np.nan), 0), out)


# ----------------------------------------------------------------------------------------------
# Activations, losses, normalization
# ----------------------------------------------------------------------------------------------


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _wide(x: Array) -> Array:
    """Half/bfloat16 are computed in float32, like TensorFlow's CPU kernels accumulate."""
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype.itemsize < 4 else x


@register_kernel("Relu6", cost=elementwise_cost, types={"T": NUMERIC})
def relu6(features: Array) -> Array:
    t = features.dtype.type
    return np.minimum(np.maximum(features, t(0)), t(6))  # type: ignore[no-any-return]


@register_kernel("Elu", cost=elementwise_cost, types={"T": FLOATS})
def elu(features: Array) -> Array:
    return np.where(features < 0, np.expm1(features), features)


_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


@register_kernel("Selu", cost=elementwise_cost, types={"T": FLOATS})
def selu(features: Array) -> Array:
    t = features.dtype.type
    return np.where(  # type: ignore[no-any-return]
        features < 0, t(_SELU_SCALE * _SELU_ALPHA) * np.expm1(features), t(_SELU_SCALE) * features
    )


@register_kernel("Softplus", cost=elementwise_cost, types={"T": FLOATS})
def softplus(features: Array) -> Array:
    return np.logaddexp(features.dtype.type(0), features)  # type: ignore[no-any-return]


@register_kernel("LeakyRelu", cost=elementwise_cost, types={"T": FLOATS})
def leaky_relu(features: Array, *, alpha: float) -> Array:
    return np.where(features > 0, features, features * features.dtype.type(alpha))


@register_kernel("LogSoftmax", cost=elementwise_cost, types={"T": FLOATS})
def log_softmax(logits: Array) -> Array:
    if logits.ndim < 1:
        raise _invalid(f"logits must have >= 1 dimension, got {shape_str(logits)}")
    x = _wide(logits)
    shifted = x - np.max(x, axis=-1, keepdims=True)
    out = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    return out.astype(logits.dtype, copy=False)  # type: ignore[no-any-return]


@register_kernel("L2Loss", cost=elementwise_cost, types={"T": FLOATS})
def l2_loss(t: Array) -> Array:
    x = _wide(t)
    return np.asarray(np.sum(x * x) * x.dtype.type(0.5), dtype=np.asarray(t).dtype)


@register_kernel("SparseSoftmaxCrossEntropyWithLogits", cost=elementwise_cost, types={"T": FLOATS})
def sparse_softmax_cross_entropy_with_logits(features: Array, labels: Array) -> tuple[Array, Array]:
    if np.ndim(features) != 2:
        raise _invalid(f"logits must be 2-D, but got shape {shape_str(features)}")
    if np.ndim(labels) != 1:
        raise _invalid(f"labels must be 1-D, but got shape {shape_str(labels)}")
    batch, classes = features.shape
    if labels.shape[0] != batch:
        raise _invalid(
            "logits and labels must have the same first dimension, got logits shape "
            f"{shape_str(features)} and labels shape {shape_str(labels)}"
        )
    if classes == 0 and batch > 0:
        raise _invalid(f"Must have at least one class, but got logits shape {shape_str(features)}")
    if labels.size:
        lo, hi = int(labels.min()), int(labels.max())
        if lo < 0 or hi >= classes:
            raise _invalid(
                f"Received a label value of {lo if lo < 0 else hi} which is outside the valid "
                f"range of [0, {classes}).  Label values: "
                + " ".join(str(v) for v in labels.tolist())
            )
    x = _wide(features)
    shifted = x - np.max(x, axis=1, keepdims=True) if classes else x
    exp = np.exp(shifted)
    sum_exp = np.sum(exp, axis=1, keepdims=True)
    rows = np.arange(batch)
    loss = np.log(sum_exp[:, 0]) - shifted[rows, labels]
    backprop = exp / sum_exp
    backprop[rows, labels] -= 1
    dt = features.dtype
    return loss.astype(dt, copy=False), backprop.astype(dt, copy=False)


@register_kernel("SoftmaxCrossEntropyWithLogits", cost=elementwise_cost, types={"T": FLOATS})
def softmax_cross_entropy_with_logits(features: Array, labels: Array) -> tuple[Array, Array]:
    try:
        f, lab = np.broadcast_arrays(_wide(features), _wide(labels))
    except ValueError:
        raise _invalid(
            "logits and labels must be broadcastable: logits_size="
            f"{shape_str(features)} labels_size={shape_str(labels)}"
        ) from None
    if f.ndim != 2:
        raise _invalid(
            "logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional"
        )
    shifted = f - np.max(f, axis=1, keepdims=True)
    exp = np.exp(shifted)
    sum_exp = np.sum(exp, axis=1, keepdims=True)
    loss = np.sum(lab * (np.log(sum_exp) - shifted), axis=1)
    backprop = exp / sum_exp - lab
    dt = features.dtype
    return loss.astype(dt, copy=False), backprop.astype(dt, copy=False)


@register_kernel(
    "FusedBatchNormV3", cost=elementwise_cost, types={"T": FLOATS, "U": (dtypes.float32,)}
)
def fused_batch_norm_v3(
    x: Array,
    scale: Array,
    offset: Array,
    mean: Array,
    variance: Array,
    *,
    epsilon: float,
    exponential_avg_factor: float,
    data_format: bytes,
    is_training: bool,
) -> tuple[Array, ...]:
    """y normalized by the batch's statistics (training) or the given ones (inference);
    batch_mean/batch_variance are what a running average should take in."""
    axis = _check_batch_norm(
        x, [scale, offset, mean, variance], data_format, is_training, exponential_avg_factor
    )
    f32 = np.float32
    depth = x.shape[axis]
    if np.size(x) == 0:  # TensorFlow: an empty batch has NaN statistics
        nan, zero = np.full(depth, np.nan, f32), np.zeros(depth, f32)
        return np.asarray(x).copy(), nan, nan.copy(), zero, zero.copy(), np.zeros(0, f32)
    bshape = [depth if i == axis else 1 for i in range(x.ndim)]
    xf = np.asarray(x, dtype=f32)
    if is_training:
        (use_mean, use_var), (out_mean, out_var) = _batch_statistics(
            xf, axis, mean, variance, exponential_avg_factor
        )
    else:
        use_mean, use_var = np.asarray(mean, f32), np.asarray(variance, f32)
        out_mean, out_var = use_mean, use_var
    factor = (f32(1) / np.sqrt(use_var + f32(epsilon))) * np.asarray(scale, f32)
    if is_training:  # TensorFlow's CPU kernels: (x - mean) * factor + offset ...
        y = (xf - use_mean.reshape(bshape)) * factor.reshape(bshape)
        y += np.asarray(offset, f32).reshape(bshape)
    else:  # ... and, with frozen statistics, x * factor + (offset - mean * factor)
        y = xf * factor.reshape(bshape) + (offset - use_mean * factor).reshape(bshape)
    return (
        y.astype(x.dtype, copy=False),
        np.asarray(out_mean, f32),
        np.asarray(out_var, f32),
        np.asarray(use_mean, f32),  # reserve_space_1/2: the mean and variance y was normalized by
        np.asarray(use_var, f32),
        np.zeros(0, f32),  # reserve_space_3: empty on CPU
    )


def _check_batch_norm(
    x: Array, vectors: list[Array], data_format: bytes, training: bool, factor: float
) -> int:
    """The channel axis of ``x``, once its rank and the per-channel vectors are checked."""
    rank = np.ndim(x)
    if rank not in (4, 5):
        raise _invalid(f"input must be 4-dimensional or 5-dimensional{shape_str(x)}")
    axis = 1 if data_format.startswith(b"NC") else rank - 1
    depth = x.shape[axis]
    names = ("scale", "offset", "mean", "variance")
    checked = 2 if training and factor == 1.0 else 4  # training alone needs no running stats
    for name, v in zip(names[:checked], vectors[:checked], strict=True):
        if np.ndim(v) != 1 or v.shape[0] != depth:
            raise _invalid(
                f"{name} must have the same number of elements as the channels of x, "
                f"got {np.size(v)} and {depth}"
            )
    return axis


def _batch_statistics(
    x: Array, axis: int, mean: Array, variance: Array, factor: float
) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
    """((batch mean, biased variance) to normalize by, (mean, unbiased variance) to output —
    blended into the running ``mean``/``variance`` when ``factor`` != 1)."""
    f32 = np.float32
    axes = tuple(i for i in range(x.ndim) if i != axis)
    count = x.size // max(x.shape[axis], 1)
    batch_mean: Array = np.asarray(np.mean(x, axis=axes, dtype=f32))
    centered = x - np.expand_dims(batch_mean, axes)
    batch_var: Array = np.asarray(np.mean(np.square(centered), axis=axes, dtype=f32))
    unbiased: Array = batch_var * f32(count / max(count - 1, 1))
    if factor == 1.0:
        return (batch_mean, batch_var), (batch_mean, unbiased)
    a = f32(factor)
    blended: tuple[Array, Array] = (
        (f32(1) - a) * mean + a * batch_mean,
        (f32(1) - a) * variance + a * unbiased,
    )
    return (batch_mean, batch_var), blended
