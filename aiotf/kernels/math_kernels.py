"""Math kernels with TensorFlow's dtype rules."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from aiotf.devices import intra_op
from aiotf.framework import dtypes, errors
from aiotf.kernels import products
from aiotf.kernels.registry import (
    NS_PER_ELEMENT,
    NS_PER_FLOP,
    NS_PER_PERMUTED,
    NS_PER_SCANNED,
    KernelNode,
    elementwise_cost,
    first_input_cost,
    guarded,
    register_kernel,
)

Array = np.ndarray[Any, Any]

FLOATS = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
COMPLEX = (dtypes.complex64, dtypes.complex128)
INTS = (
    dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
    dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64,
)  # fmt: skip
NUMERIC = FLOATS + COMPLEX + INTS


def shape_str(x: Any) -> str:
    """A shape as TensorFlow prints it in messages: ``[2,3]``."""
    return "[" + ",".join(str(d) for d in np.shape(x)) + "]"


# ArgMax/ArgMin read across the reduced axis (strided along an outer one) and, for floats, pass
# once more to skip NaNs; string Add concatenates in a Python loop (~0.5 us per element).
_arg_cost = first_input_cost(NS_PER_PERMUTED)


def _string_add_cost(x: Any, y: Any) -> float:
    return 1000 * elementwise_cost(x, y)


@guarded
def _range_cost(start: Any, limit: Any, delta: Any) -> float:
    return NS_PER_ELEMENT * abs((float(limit) - float(start)) / float(delta))


def _incompatible_shapes(x: Array, y: Array) -> errors.InvalidArgumentError:
    """TensorFlow's words for operands that do not broadcast."""
    return errors.InvalidArgumentError(
        None, None, f"Incompatible shapes: {shape_str(x)} vs. {shape_str(y)}"
    )


def _binary(x: Array, y: Array, fn: Any, op: str) -> Array:
    if x.dtype != y.dtype:
        raise errors.InvalidArgumentError(
            None, None, f"{op}: inputs have different dtypes {x.dtype} and {y.dtype}"
        )
    try:
        return fn(x, y)  # type: ignore[no-any-return]
    except ValueError:
        raise _incompatible_shapes(x, y) from None


@register_kernel("AddV2", cost=elementwise_cost, fast=np.add, types={"T": NUMERIC})
def add_v2(x: Array, y: Array) -> Array:
    return _binary(x, y, np.add, "AddV2")


@register_kernel("Add", cost=elementwise_cost, fast=np.add, types={"T": NUMERIC})
def add(x: Array, y: Array) -> Array:
    return _binary(x, y, np.add, "Add")


@register_kernel("Add", types={"T": (dtypes.string,)}, cost=_string_add_cost)
def add_strings(x: Array, y: Array) -> Array:
    try:
        a, b = np.broadcast_arrays(np.asarray(x, dtype=object), np.asarray(y, dtype=object))
    except ValueError:
        raise _incompatible_shapes(x, y) from None
    out = np.empty(a.shape, dtype=object)
    for i in np.ndindex(a.shape):
        out[i] = a[i] + b[i]
    return out


@register_kernel("Sub", cost=elementwise_cost, fast=np.subtract, types={"T": NUMERIC})
def sub(x: Array, y: Array) -> Array:
    return _binary(x, y, np.subtract, "Sub")


@register_kernel("Mul", cost=elementwise_cost, fast=np.multiply, types={"T": NUMERIC})
def mul(x: Array, y: Array) -> Array:
    return _binary(x, y, np.multiply, "Mul")


@register_kernel(
    "RealDiv", cost=elementwise_cost, fast=np.true_divide, types={"T": FLOATS + COMPLEX}
)
def real_div(x: Array, y: Array) -> Array:
    return _binary(x, y, np.true_divide, "RealDiv")


@register_kernel("Neg", cost=elementwise_cost, types={"T": NUMERIC})
def neg(x: Array) -> Array:
    return np.negative(x)


@register_kernel("LogicalNot", types={}, cost=elementwise_cost)
def logical_not(x: Array) -> Array:
    return np.logical_not(x)


def _matmul_flops(a: Array, b: Array) -> float:
    """2·m·k·n. The inner dim k is a dim both operands share (the largest, when several do)."""
    if a.ndim != 2 or b.ndim != 2:
        return 0.0
    return _product_flops(a.shape, b.shape)


def _product_flops(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    shared = set(a) & set(b)
    k = max(shared) if shared else 1
    return float(2 * a[0] * a[1] * b[0] * b[1] // max(k, 1))


def _matmul_cost(a: Any, b: Any) -> float:
    """MatMul's estimate for the cost model: NS_PER_FLOP per flop."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return 0.0  # a variable's ref: dereferenced later; too early to tell
    return NS_PER_FLOP * _matmul_flops(a, b)


# A product of at least this many flops is split across the device's pool threads
# (``intra_op.parallel_for``, single-threaded BLAS in each), in parts of at least PART_FLOPS.
PARALLEL_MIN_FLOPS = 8e6
PART_FLOPS = 4e6
# OpenBLAS's float kernels work in blocks of 16; in one A/B, cnn ran ~4% slower with its dense
# layer split at column 543 of 1024 than at 544 or 512 (within the noise in others).
PART_ALIGN = 16
# A split product by a packed weight (``products.BY_PACKED``) is cut in blocks of this many rows:
# oneDNN makes a primitive for each number of rows it multiplies (~0.4 ms and ~160 KiB each, the
# last few hundred used kept), and the parts' sizes follow the threads' paces.
PACKED_PART_ROWS = 64
SPLIT_RATE = intra_op.Rate(NS_PER_FLOP * 1e-9)  # seconds per flop of a part, measured


def _matmul_fast_for(
    *, transpose_a: bool, transpose_b: bool, _any_layout: bool = False
) -> Callable[[Array, Array], Array]:
    """MatMul as the compiled schedules call it inline (a product below the pool's cost, so never
    split): numpy's product of two matrices; anything else raises, and the kernel says why."""

    def fast(a: Array, b: Array) -> Array:
        if a.ndim != 2 or b.ndim != 2:
            raise ValueError("not two matrices")
        a2, b2 = a.T if transpose_a else a, b.T if transpose_b else b
        return products.product(a2, b2, any_layout=_any_layout)

    return fast


@register_kernel("MatMul", types={"T": NUMERIC}, cost=_matmul_cost, fast_for=_matmul_fast_for)
def mat_mul(
    a: Array, b: Array, *, transpose_a: bool, transpose_b: bool, _any_layout: bool = False
) -> Array:
    """``_any_layout``: every reader takes the product in any layout (``runtime/layouts.py``), so
    it may come out laid out by columns (``products``)."""
    if a.ndim != 2 or b.ndim != 2:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"In[0] and In[1] has different ndims: {shape_str(a)} vs. {shape_str(b)}"
            if a.ndim != b.ndim
            else f"In[0] is not a matrix. Instead it has shape {shape_str(a)}",
        )
    a2 = a.T if transpose_a else a
    b2 = b.T if transpose_b else b
    if a2.shape[1] != b2.shape[0]:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Matrix size-incompatible: In[0]: {shape_str(a)}, In[1]: {shape_str(b)}",
        )
    return matmul(a2, b2, _any_layout)


def matmul(a: Array, b: Array, any_layout: bool = False) -> Array:
    """``a @ b`` for 2-D ``a`` and ``b``, split across the pool when large (see ``intra_op``);
    laid out by columns when ``any_layout`` allows and that is faster (``products``).

    The parts are row blocks of ``a`` (or, for few rows, column blocks of ``b``, so each thread
    streams only its share of a big weight matrix); every output element is still one dot
    product over the whole inner dimension, by the same BLAS kernel (``products``), so the
    result does not depend on the split.
    """
    (m, k), n = a.shape, b.shape[1]
    flops = 2.0 * m * k * n
    how = products.way(a, b, any_layout)
    if flops < PARALLEL_MIN_FLOPS or a.dtype.kind not in "fc" or m == 1:
        # (one row is a GEMV, whose sums come out otherwise for any part of its columns)
        return products.product(a, b, how)
    by_rows = products.split_by_rows(how, m, n)
    extent = m if by_rows else n
    out = products.output(a, b, how)

    def part(lo: int, hi: int) -> None:
        if by_rows:
            products.into(a[lo:hi], b, out[lo:hi], how)
        else:
            products.into(a, b[:, lo:hi], out[:, lo:hi], how.cols(lo, hi))

    # One part per thread: four parts for two threads cost mlp's MatMuls ~3% more (a narrower
    # product runs slower, and the helper's late start is not recovered by smaller parts). The
    # calling thread's part is the longer, by the helpers' start delay (intra_op.lead_bounds),
    # in whole blocks of PART_ALIGN rows or columns; or in whole row stacks or panels, so that
    # every row or column of the product is made by the same call as on one thread.
    parts = max(2, int(flops // PART_FLOPS))
    step = how.rows or how.width or (PACKED_PART_ROWS if how is products.BY_PACKED else 1)
    least = least_part(k * (n if by_rows else m))
    if not intra_op.split(extent, parts, SPLIT_RATE, flops, part, PART_ALIGN, step, least):
        products.into(a, b, out, how)
    return out


def least_part(unit_macs: int) -> int:
    """The fewest rows (or columns) of a split product's part, each ``unit_macs`` multiply-adds:
    more than OpenBLAS's small kernels take, and never one (a GEMV), so that the part runs in
    the whole product's routine and its bits (``intra_op._no_narrow_parts``)."""
    return max(2, products.SMALL_GEMM_VOLUME // max(unit_macs, 1) + 1)


@register_kernel("ArgMax", types={"T": NUMERIC + (dtypes.bool,)}, cost=_arg_cost)
def arg_max(x: Array, dimension: Array, *, output_type: dtypes.DType) -> Array:
    return _arg_extreme(x, dimension, output_type, largest=True)


def _arg_extreme(x: Array, dimension: Array, output_type: dtypes.DType, largest: bool) -> Array:
    """The index of the largest (smallest) element along ``dimension``, as Eigen's reducers.

    They start from (index 0, lowest) — (0, highest) for ArgMin — and take an element only
    when it is strictly larger (smaller): a NaN never is, nor is -inf (inf) or the lowest
    (highest) finite value itself. So NaNs are skipped, and a row with nothing to take, such as
    all NaN, answers 0.
    """
    axis = int(dimension)
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise errors.InvalidArgumentError(
            None, None, f"Expected dimension in the range [{-x.ndim}, {x.ndim}), but got {axis}"
        )
    if x.shape[axis] == 0:
        raise errors.InvalidArgumentError(
            None, None, f"Reduction axis {axis} is empty in shape {shape_str(x)}"
        )
    if dtypes.from_numpy(x.dtype).is_floating:
        info = dtypes.finfo(x.dtype)
        with np.errstate(invalid="ignore"):  # bfloat16 warns on comparing a NaN
            if largest:
                x = np.where(x > info.min, x, -np.inf)
            else:
                x = np.where(x < info.max, x, np.inf)
    index = np.argmax(x, axis=axis) if largest else np.argmin(x, axis=axis)
    return np.asarray(index).astype(output_type.np_dtype)


@register_kernel("Cast", cost=elementwise_cost)
def cast(x: Array, *, DstT: dtypes.DType) -> Array:  # noqa: N803 - TensorFlow's attr name
    if DstT.base_dtype is dtypes.string:
        raise errors.UnimplementedError(None, None, f"Cast {x.dtype} to string is not supported")
    return np.asarray(x).astype(DstT.base_dtype.np_dtype)


# ----------------------------------------------------------------------------------------------
# Elementwise ops
# ----------------------------------------------------------------------------------------------

SIGNED_INTS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
UNSIGNED_INTS = (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
REAL = FLOATS + INTS


def _check_nonzero(y: Array) -> None:
    if np.any(y == 0):
        raise errors.InvalidArgumentError(None, None, "Integer division by zero")


def _trunc_div_int(x: Array, y: Array) -> Array:
    """C's integer division (toward zero), y already checked nonzero."""
    q = np.floor_divide(x, y)
    if x.dtype.kind == "i":
        fix = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
        q = q + fix.astype(q.dtype)
    return q


def _unary(op: str, fn: Any, types: tuple[dtypes.DType, ...]) -> None:
    def kernel(x: Array) -> Array:
        return fn(x)  # type: ignore[no-any-return]

    kernel.__name__ = op.lower()
    register_kernel(op, types={"T": types}, cost=elementwise_cost)(kernel)


def _rsqrt(x: Array) -> Array:
    return np.reciprocal(np.sqrt(x))


def _sigmoid(x: Array) -> Array:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))  # type: ignore[no-any-return]


def _round(x: Array) -> Array:
    return x if x.dtype.kind in "iu" else np.round(x)


for _op, _fn, _types in (
    ("Abs", np.abs, FLOATS + SIGNED_INTS),
    ("Exp", np.exp, FLOATS + COMPLEX),
    ("Log", np.log, FLOATS + COMPLEX),
    ("Log1p", np.log1p, FLOATS + COMPLEX),
    ("Expm1", np.expm1, FLOATS + COMPLEX),
    ("Sqrt", np.sqrt, FLOATS + COMPLEX),
    ("Rsqrt", _rsqrt, FLOATS + COMPLEX),
    ("Tanh", np.tanh, FLOATS + COMPLEX),
    ("Sin", np.sin, FLOATS + COMPLEX),
    ("Cos", np.cos, FLOATS + COMPLEX),
    ("Sigmoid", _sigmoid, FLOATS + COMPLEX),
    ("Square", np.square, NUMERIC),
    ("Sign", np.sign, FLOATS + COMPLEX + SIGNED_INTS),
    ("Floor", np.floor, FLOATS),
    ("Ceil", np.ceil, FLOATS),
    ("Round", _round, FLOATS + COMPLEX + SIGNED_INTS),
    ("IsNan", np.isnan, FLOATS),
    ("IsFinite", np.isfinite, FLOATS),
):
    _unary(_op, _fn, _types)


@register_kernel("Reciprocal", cost=elementwise_cost, types={"T": FLOATS + COMPLEX})
def reciprocal(x: Array) -> Array:
    return np.reciprocal(x)


@register_kernel("Reciprocal", types={"T": SIGNED_INTS}, cost=elementwise_cost)
def reciprocal_int(x: Array) -> Array:
    _check_nonzero(x)
    return _trunc_div_int(np.ones_like(x), x)


@register_kernel("Maximum", cost=elementwise_cost, fast=np.maximum, types={"T": REAL})
def maximum(x: Array, y: Array) -> Array:
    return _binary(x, y, np.maximum, "Maximum")


@register_kernel("Minimum", cost=elementwise_cost, fast=np.minimum, types={"T": REAL})
def minimum(x: Array, y: Array) -> Array:
    return _binary(x, y, np.minimum, "Minimum")


@register_kernel("Pow", cost=elementwise_cost, types={"T": FLOATS + COMPLEX})
def pow_(x: Array, y: Array) -> Array:
    return _binary(x, y, np.power, "Pow")


@register_kernel("Pow", types={"T": SIGNED_INTS}, cost=elementwise_cost)
def pow_int(x: Array, y: Array) -> Array:
    if np.any(y < 0):
        raise errors.InvalidArgumentError(
            None, None, "Integers to negative integer powers are not allowed"
        )
    return _binary(x, y, np.power, "Pow")


@register_kernel("FloorDiv", types={"T": INTS}, cost=elementwise_cost)
def floor_div_int(x: Array, y: Array) -> Array:
    _check_nonzero(y)
    return _binary(x, y, np.floor_divide, "FloorDiv")


@register_kernel("FloorDiv", types={"T": FLOATS}, cost=elementwise_cost)
def floor_div(x: Array, y: Array) -> Array:
    return _binary(x, y, lambda a, b: np.floor(np.true_divide(a, b)), "FloorDiv")


@register_kernel("FloorMod", types={"T": INTS}, cost=elementwise_cost)
def floor_mod_int(x: Array, y: Array) -> Array:
    _check_nonzero(y)
    return _binary(x, y, np.remainder, "FloorMod")


def _floor_fmod(x: Array, y: Array) -> Array:
    r = np.fmod(x, y)
    return np.where((r != 0) & ((y < 0) != (r < 0)), r + y, r)


@register_kernel("FloorMod", types={"T": FLOATS}, cost=elementwise_cost)
def floor_mod(x: Array, y: Array) -> Array:
    return _binary(x, y, _floor_fmod, "FloorMod")


@register_kernel("TruncateDiv", types={"T": INTS}, cost=elementwise_cost)
def truncate_div_int(x: Array, y: Array) -> Array:
    _check_nonzero(y)
    return _binary(x, y, _trunc_div_int, "TruncateDiv")


@register_kernel("TruncateDiv", types={"T": FLOATS}, cost=elementwise_cost)
def truncate_div(x: Array, y: Array) -> Array:
    return _binary(x, y, lambda a, b: np.trunc(np.true_divide(a, b)), "TruncateDiv")


# TensorFlow registers TruncateMod for these only (no half or bfloat16 kernel).
@register_kernel("TruncateMod", types={"T": (dtypes.int32, dtypes.int64)}, cost=elementwise_cost)
def truncate_mod_int(x: Array, y: Array) -> Array:
    _check_nonzero(y)
    return _binary(x, y, np.fmod, "TruncateMod")


@register_kernel(
    "TruncateMod", types={"T": (dtypes.float32, dtypes.float64)}, cost=elementwise_cost
)
def truncate_mod(x: Array, y: Array) -> Array:
    return _binary(x, y, np.fmod, "TruncateMod")


@register_kernel("Div", types={"T": INTS}, cost=elementwise_cost)
def div_int(x: Array, y: Array) -> Array:
    _check_nonzero(y)
    return _binary(x, y, _trunc_div_int, "Div")


@register_kernel("Div", cost=elementwise_cost, types={"T": FLOATS + COMPLEX})
def div(x: Array, y: Array) -> Array:
    return _binary(x, y, np.true_divide, "Div")


@register_kernel("DivNoNan", types={"T": FLOATS + COMPLEX}, cost=elementwise_cost)
def div_no_nan(x: Array, y: Array) -> Array:
    def fn(a: Array, b: Array) -> Array:
        return np.where(b == 0, a.dtype.type(0), np.true_divide(a, b))

    return _binary(x, y, fn, "DivNoNan")


@register_kernel("SquaredDifference", cost=elementwise_cost, types={"T": NUMERIC})
def squared_difference(x: Array, y: Array) -> Array:
    def fn(a: Array, b: Array) -> Array:
        d = np.subtract(a, b)
        return d * np.conj(d) if d.dtype.kind == "c" else d * d

    return _binary(x, y, fn, "SquaredDifference")


def _comparison(op: str, fn: Any) -> None:
    def kernel(x: Array, y: Array) -> Array:
        return _binary(x, y, fn, op)

    kernel.__name__ = op.lower()
    register_kernel(op, types={"T": REAL}, cost=elementwise_cost, fast=fn)(kernel)


for _op, _cmp in (
    ("Less", np.less),
    ("LessEqual", np.less_equal),
    ("Greater", np.greater),
    ("GreaterEqual", np.greater_equal),
):
    _comparison(_op, _cmp)


def _as_objects(x: Array) -> Array:
    return x.astype(object) if x.dtype.kind in "SU" else x


def _equality(x: Array, y: Array, fn: Any, incompatible_shape_error: bool, op: str) -> Array:
    x, y = _as_objects(np.asarray(x)), _as_objects(np.asarray(y))
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        if incompatible_shape_error:
            raise _incompatible_shapes(x, y) from None
        return np.array(op == "NotEqual")
    out = np.asarray(fn(x, y), dtype=bool)
    return out if out.shape == shape else np.broadcast_to(out, shape).copy()


@register_kernel("Equal", cost=elementwise_cost)
def equal(x: Array, y: Array, *, incompatible_shape_error: bool) -> Array:
    return _equality(x, y, np.equal, incompatible_shape_error, "Equal")


@register_kernel("NotEqual", cost=elementwise_cost)
def not_equal(x: Array, y: Array, *, incompatible_shape_error: bool) -> Array:
    return _equality(x, y, np.not_equal, incompatible_shape_error, "NotEqual")


@register_kernel("LogicalAnd", cost=elementwise_cost)
def logical_and(x: Array, y: Array) -> Array:
    return _binary(x, y, np.logical_and, "LogicalAnd")


@register_kernel("LogicalOr", cost=elementwise_cost)
def logical_or(x: Array, y: Array) -> Array:
    return _binary(x, y, np.logical_or, "LogicalOr")


@register_kernel("AddN", types={"T": NUMERIC}, expensive=True)
def add_n(*inputs: Array, node: KernelNode) -> Array:
    _check_same_shapes(node, inputs)
    first = inputs[0]
    if len(inputs) == 1:
        return np.array(first, copy=True)
    out = np.empty(np.shape(first), np.result_type(*inputs))
    flat = out.reshape(-1)
    views = [np.asarray(x).reshape(-1) for x in inputs]
    # In TensorFlow's groups and order (add_n_groups). Sixteen 512x512 inputs take ~1.3 ms of
    # memory traffic on one core, so a large AddN shares it with idle threads, one sum per
    # element whatever the split.
    n, size = len(views), flat.size
    (lead_lo, lead_hi), *groups = add_n_groups(n)
    adds = size * (n - 1)  # however grouped

    def add(lo: int, hi: int) -> None:
        total = flat[lo:hi]
        _fold(views[lead_lo:lead_hi], lo, hi, total)
        if groups:
            eight = np.empty(hi - lo, out.dtype)  # as fast as scratch memory, measured
            for group_lo, group_hi in groups:
                _fold(views[group_lo:group_hi], lo, hi, eight)
                np.add(total, eight, out=total)

    # Slices of whole cache lines: no line written by two threads.
    parts = 1 if size * n < ADD_N_PARALLEL_MIN else size
    if not intra_op.split(size, parts, _ADD_N_RATE, adds, add, 64 // out.itemsize or 1):
        add(0, size)
    return out


def add_n_groups(n: int) -> list[tuple[int, int]]:
    """The ranges of an AddN's ``n`` inputs in TensorFlow's order (aggregate_ops.h): the first
    n % 8 (8 or 9 when that is 0 or 1) summed left to right, then each next eight left to right,
    each added to the total in turn; float rounding makes the order part of the answer.
    (TensorFlow also moves an input whose buffer it reuses for the output to the front: where
    the first cannot be reused, a fed or constant value, and a later one can, its order differs
    from this one.)"""
    lead = min({0: 8, 1: 9}.get(n % 8, n % 8), n)
    return [(0, lead)] + [(lo, min(lo + 8, n)) for lo in range(lead, n, 8)]


def _fold(views: list[Array], lo: int, hi: int, out: Array) -> None:
    """``out = views[0] + views[1] + ...`` over ``[lo, hi)``, left to right."""
    np.add(views[0][lo:hi], views[1][lo:hi], out=out)
    for x in views[2:]:
        np.add(out, x[lo:hi], out=out)


ADD_N_PARALLEL_MIN = 1 << 21  # input elements
_ADD_N_RATE = intra_op.Rate(0.5e-9)  # seconds per element added, measured (first guess: 0.5 ns)


@register_kernel("Select", cost=elementwise_cost)
def select(condition: Array, t: Array, e: Array, *, node: KernelNode) -> Array:
    """TensorFlow's SelectOp: a scalar condition picks one whole input; a vector one, against
    inputs of more dimensions, picks their rows; else all three are one shape."""
    c = np.asarray(condition)
    if c.ndim == 0 or (c.ndim == 1 and np.ndim(t) != 1):
        if c.ndim == 1:
            if np.ndim(t) < 1:
                raise errors.InvalidArgumentError(
                    None, None, f"'then' must be at least a vector, but saw shape: {shape_str(t)}"
                )
            if np.shape(t)[0] != c.shape[0]:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    "Number of batches of 'then' must match size of 'cond', but saw: "
                    f"{np.shape(t)[0]} vs. {c.shape[0]}",
                )
            c = c.reshape((-1,) + (1,) * (np.ndim(t) - 1))
        if np.shape(t) != np.shape(e):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"'then' and 'else' must have the same size.  but received: {shape_str(t)} vs. "
                f"{shape_str(e)}",
            )
    else:
        _check_same_shapes(node, (c, t, e))
    return np.where(c, t, e)


def _check_same_shapes(node: KernelNode, inputs: Sequence[Any]) -> None:
    """TensorFlow's ``ValidateInputsAreSameShape``: every input the shape of input 0."""
    first = np.shape(inputs[0])
    for i, x in enumerate(inputs[1:], 1):
        if np.shape(x) != first:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Inputs to operation {node.name} of type {node.op} must have the same size and "
                f"shape.  Input 0: {shape_str(inputs[0])} != input {i}: {shape_str(x)}",
            )


@register_kernel("SelectV2", cost=elementwise_cost)
def select_v2(condition: Array, t: Array, e: Array) -> Array:
    try:
        return np.where(condition, t, e)
    except ValueError:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"condition {shape_str(condition)}, then {shape_str(t)}, and else {shape_str(e)} "
            "must be broadcastable",
        ) from None


# ----------------------------------------------------------------------------------------------
# Reductions and scans
# ----------------------------------------------------------------------------------------------


def reduction_axes(x: Array, reduction_indices: Array) -> tuple[int, ...]:
    """The normalized, sorted axes of a reduction; TensorFlow's errors (``ReductionHelper``)
    for bad ones: out of range, or one axis named twice (``[0, -2]`` on a matrix)."""
    idx = np.asarray(reduction_indices)
    if idx.ndim > 1:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Invalid reduction arguments: Axes must be a scalar or vector, got {shape_str(idx)}",
        )
    rank = np.ndim(x)
    axes: set[int] = set()
    for a in idx.reshape(-1).tolist():
        if not -rank <= a < rank:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid reduction dimension ({a} for input with {rank} dimension(s)"
            )
        if a % rank in axes:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Invalid reduction arguments: Axes contains duplicate dimension: {a % rank}",
            )
        axes.add(a % rank)
    return tuple(sorted(axes))


def _reduce(fn: Any, x: Array, reduction_indices: Array, keep_dims: bool, **kw: Any) -> Array:
    axes = reduction_axes(x, reduction_indices)
    x = np.asarray(x)
    if not axes:
        return x
    return np.asarray(fn(x, axis=axes, keepdims=keep_dims, **kw))


@register_kernel("Sum", cost=elementwise_cost, types={"T": NUMERIC})
def sum_(x: Array, reduction_indices: Array, *, keep_dims: bool) -> Array:
    return _reduce(np.sum, x, reduction_indices, keep_dims, dtype=x.dtype)


@register_kernel("Prod", cost=elementwise_cost, types={"T": NUMERIC})
def prod(x: Array, reduction_indices: Array, *, keep_dims: bool) -> Array:
    return _reduce(np.prod, x, reduction_indices, keep_dims, dtype=x.dtype)


@register_kernel("Mean", cost=elementwise_cost, types={"T": FLOATS + COMPLEX})
def mean(x: Array, reduction_indices: Array, *, keep_dims: bool) -> Array:
    return _reduce(np.mean, x, reduction_indices, keep_dims, dtype=x.dtype)


@register_kernel("Mean", types={"T": INTS}, cost=elementwise_cost)
def mean_int(x: Array, reduction_indices: Array, *, keep_dims: bool) -> Array:
    axes = reduction_axes(x, reduction_indices)
    x = np.asarray(x)
    if not axes:
        return x
    total = np.sum(x, axis=axes, keepdims=keep_dims, dtype=x.dtype)
    count = int(np.prod([x.shape[a] for a in axes]))
    if count == 0:
        return np.zeros_like(total)
    return np.asarray(_trunc_div_int(np.asarray(total), np.asarray(count, dtype=x.dtype)))


def _extreme(fn: Any, x: Array, reduction_indices: Array, keep_dims: bool, low: bool) -> Array:
    kw: dict[str, Any] = {}
    if np.size(x) == 0:
        dt = dtypes.from_numpy(np.asarray(x).dtype)
        if dt.is_floating:
            kw["initial"] = -np.inf if low else np.inf
        else:
            info = np.iinfo(np.asarray(x).dtype)
            kw["initial"] = info.min if low else info.max
    return _reduce(fn, x, reduction_indices, keep_dims, **kw).astype(np.asarray(x).dtype)


@register_kernel("Max", cost=elementwise_cost, types={"T": REAL})
def max_(x: Array, reduction_indices: Array, *, keep_dims: bool) -> Array:
    return _extreme(np.max, x, reduction_indices, keep_dims, low=True)


@register_kernel("Min", cost=elementwise_cost, types={"T": REAL})
def min_(x: Array, reduction_indices: Array, *, keep_dims: bool) -> Array:
    return _extreme(np.min, x, reduction_indices, keep_dims, low=False)


@register_kernel("All", cost=elementwise_cost)
def all_(x: Array, reduction_indices: Array, *, keep_dims: bool) -> Array:
    return _reduce(np.all, x, reduction_indices, keep_dims)


@register_kernel("Any", cost=elementwise_cost)
def any_(x: Array, reduction_indices: Array, *, keep_dims: bool) -> Array:
    return _reduce(np.any, x, reduction_indices, keep_dims)


def _scan(fn: Any, identity: int, x: Array, axis: Array, exclusive: bool, reverse: bool) -> Array:
    x = np.asarray(x)
    if np.ndim(axis) != 0:
        raise errors.InvalidArgumentError(
            None, None, f"ScanOp: axis must be a scalar, not {shape_str(axis)}"
        )
    a = int(axis)
    if not -x.ndim <= a < x.ndim:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"ScanOp: Expected scan axis in the range [{-x.ndim}, {x.ndim}), but got {a}",
        )
    a %= x.ndim
    if reverse:
        x = np.flip(x, axis=a)
    out = fn(x, axis=a, dtype=x.dtype)
    if exclusive:
        head = np.full_like(np.take(out, [0], axis=a), identity)
        out = np.concatenate([head, np.take(out, np.arange(x.shape[a] - 1), axis=a)], axis=a)
    if reverse:
        out = np.flip(out, axis=a)
    return np.ascontiguousarray(out)


@register_kernel("Cumsum", types={"T": NUMERIC}, cost=first_input_cost(NS_PER_SCANNED))
def cumsum(x: Array, axis: Array, *, exclusive: bool, reverse: bool) -> Array:
    return _scan(np.cumsum, 0, x, axis, exclusive, reverse)


@register_kernel("Cumprod", types={"T": NUMERIC}, cost=first_input_cost(NS_PER_SCANNED))
def cumprod(x: Array, axis: Array, *, exclusive: bool, reverse: bool) -> Array:
    return _scan(np.cumprod, 1, x, axis, exclusive, reverse)


@register_kernel("ArgMin", types={"T": NUMERIC + (dtypes.bool,)}, cost=_arg_cost)
def arg_min(x: Array, dimension: Array, *, output_type: dtypes.DType) -> Array:
    return _arg_extreme(x, dimension, output_type, largest=False)


def _num(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


@register_kernel("Range", cost=_range_cost)
def range_(start: Array, limit: Array, delta: Array, *, Tidx: dtypes.DType) -> Array:  # noqa: N803
    for name, v in (("start", start), ("limit", limit), ("delta", delta)):
        if np.ndim(v) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"{name} must be a scalar, not shape {shape_str(v)}"
            )
    s, lim, d = start.item(), limit.item(), delta.item()
    if d == 0:
        raise errors.InvalidArgumentError(None, None, f"Requires delta != 0: {_num(d)}")
    if d > 0 and s > lim:
        raise errors.InvalidArgumentError(
            None, None, f"Requires start <= limit when delta > 0: {_num(s)}/{_num(lim)}"
        )
    if d < 0 and s < lim:
        raise errors.InvalidArgumentError(
            None, None, f"Requires start >= limit when delta < 0: {_num(s)}/{_num(lim)}"
        )
    np_dtype = Tidx.np_dtype
    if Tidx.is_integer:
        size = (abs(lim - s) + abs(d) - 1) // abs(d)
    else:
        size = int(np.ceil(abs((lim - s) / d)))
    steps = np.arange(size, dtype=np_dtype)
    return np.asarray(start, dtype=np_dtype) + steps * np.asarray(delta, dtype=np_dtype)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------------------------
# Batched matrix multiply
# ----------------------------------------------------------------------------------------------


def _batch_matmul_cost(x: Any, y: Any) -> float:
    """NS_PER_FLOP per flop of the batched product."""
    if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)) or x.ndim < 2 or y.ndim < 2:
        return 0.0
    try:
        batch = math.prod(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))
    except ValueError:
        return 0.0  # the kernel reports the bad shapes
    return NS_PER_FLOP * batch * _product_flops(x.shape[-2:], y.shape[-2:])


@register_kernel(
    "BatchMatMulV2",
    types={"T": FLOATS + COMPLEX + (dtypes.int16, dtypes.int32, dtypes.int64)},
    cost=_batch_matmul_cost,
)
def batch_mat_mul_v2(x: Array, y: Array, *, adj_x: bool, adj_y: bool) -> Array:
    for i, t in enumerate((x, y)):
        if np.ndim(t) < 2:
            raise errors.InvalidArgumentError(
                None, None, f"In[{i}] ndims must be >= 2: {np.ndim(t)}"
            )
    a = np.conj(np.swapaxes(x, -1, -2)) if adj_x else x
    b = np.conj(np.swapaxes(y, -1, -2)) if adj_y else y
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise errors.InvalidArgumentError(
            None,
            None,
            "In[0] and In[1] must have compatible batch dimensions: "
            f"{shape_str(x)} vs. {shape_str(y)}",
        ) from None
    if a.shape[-1] != b.shape[-2]:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Matrix size-incompatible: In[0]: {shape_str(x)}, In[1]: {shape_str(y)}",
        )
    return np.matmul(a, b)  # type: ignore[no-any-return]
