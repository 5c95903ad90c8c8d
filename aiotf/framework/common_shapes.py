"""Shape functions shared by many op definitions.

A shape function takes an :class:`InferenceContext` and returns one :class:`TensorShape` per
output. Unknown dimensions stay ``None``; contradictions raise ``ctx.invalid(...)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from aiotf.framework import strided_slice as slice_spec
from aiotf.framework.op_def_registry import InferenceContext
from aiotf.framework.tensor_shape import TensorShape, as_shape, broadcast_shape


def unknown(ctx: InferenceContext) -> Sequence[TensorShape]:
    return [TensorShape(None)]


def no_outputs(ctx: InferenceContext) -> Sequence[TensorShape]:
    return []


def scalar(ctx: InferenceContext) -> Sequence[TensorShape]:
    return [TensorShape(())]


def unchanged(ctx: InferenceContext) -> Sequence[TensorShape]:
    """The output has the shape of input 0."""
    return [ctx.input_shapes[0]]


def from_shape_attr(ctx: InferenceContext) -> Sequence[TensorShape]:
    return [as_shape(ctx.attr("shape"))]


def from_value_attr(ctx: InferenceContext) -> Sequence[TensorShape]:
    return [TensorShape(ctx.attr("value").shape)]


def broadcast_binary(ctx: InferenceContext) -> Sequence[TensorShape]:
    """numpy broadcasting of inputs 0 and 1."""
    return [_broadcast(ctx, ctx.input_shapes[0], ctx.input_shapes[1])]


def unchanged_at_least_rank_1(ctx: InferenceContext) -> Sequence[TensorShape]:
    """The output has the shape of input 0, of one dimension or more (Softmax)."""
    shape = ctx.input_shapes[0]
    if shape.rank is not None and shape.rank < 1:
        raise ctx.invalid(f"Shape must be at least rank 1 but is rank {shape.rank}")
    return [shape]


def matmul(ctx: InferenceContext) -> Sequence[TensorShape]:
    a, b = _with_rank(ctx, ctx.input_shapes[0], 2), _with_rank(ctx, ctx.input_shapes[1], 2)
    ta, tb = ctx.attrs.get("transpose_a", False), ctx.attrs.get("transpose_b", False)
    rows, inner_a = (a[1], a[0]) if ta else (a[0], a[1])
    inner_b, cols = (b[1], b[0]) if tb else (b[0], b[1])
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise ctx.invalid(f"Dimensions must be equal, but are {inner_a} and {inner_b}")
    return [TensorShape([rows, cols])]


def bias_add(ctx: InferenceContext) -> Sequence[TensorShape]:
    value, bias = ctx.input_shapes[0], ctx.input_shapes[1]
    if value.rank is not None and value.rank < 2:
        raise ctx.invalid(f"Shape must be at least rank 2 but is rank {value.rank}")
    if value.rank is None or bias.rank is None:
        return [value]
    channel = 1 if ctx.attrs.get("data_format") == b"NCHW" and value.rank >= 3 else -1
    dims = list(value)
    c, bc = dims[channel], bias[0]
    if c is not None and bc is not None and c != bc:
        raise ctx.invalid(f"Dimensions must be equal, but are {c} and {bc}")
    dims[channel] = c if c is not None else bc
    return [TensorShape(dims)]


def reduce_one_axis(ctx: InferenceContext) -> Sequence[TensorShape]:
    """ArgMax/ArgMin: the input shape without the dimension named by constant input 1."""
    shape = ctx.input_shapes[0]
    axis = ctx.const(1)
    if shape.rank is None:
        return [TensorShape(None)]
    if axis is None:
        return [TensorShape([None] * (shape.rank - 1))] if shape.rank else [TensorShape(())]
    a = int(axis)
    if not -shape.rank <= a < shape.rank:
        raise ctx.invalid(
            f"Expected dimension in the range [{-shape.rank}, {shape.rank}), but got {a}"
        )
    dims = list(shape)
    del dims[a % shape.rank]
    return [TensorShape(dims)]


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------


def _dims(shape: TensorShape) -> list[int | None]:
    return list(shape) if shape.rank is not None else []


def _as_ints(value: np.ndarray[Any, Any] | None) -> list[int] | None:
    return None if value is None else [int(v) for v in np.reshape(value, -1)]


def _merge_dim(ctx: InferenceContext, a: int | None, b: int | None) -> int | None:
    if a is not None and b is not None and a != b:
        raise ctx.invalid(f"Dimensions must be equal, but are {a} and {b}")
    return a if a is not None else b


def _with_rank(ctx: InferenceContext, shape: TensorShape, rank: int) -> TensorShape:
    """``shape`` checked to have ``rank`` dimensions (an unknown shape becomes ``rank`` unknowns)."""
    if shape.rank is None:
        return TensorShape([None] * rank)
    if shape.rank != rank:
        raise ctx.invalid(f"Shape must be rank {rank} but is rank {shape.rank}")
    return shape


def _debug(shape: TensorShape) -> str:
    """A shape as TensorFlow's shape functions print it: ``[3,?]``, ``?`` when the rank is unknown."""
    if shape.rank is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _scalar_axis(ctx: InferenceContext, index: int, rank: int | None) -> int | None:
    """The non-negative axis constant scalar input ``index`` names in a tensor of ``rank``."""
    given = ctx.input_shapes[index]
    if given.rank is not None and given.rank != 0:
        raise ctx.invalid(f"Input must be scalar but has rank {given.rank}")
    value = _as_ints(ctx.const(index))
    if value is None:
        return None
    axis = value[0]
    if rank is None:
        return axis if axis >= 0 else None
    if not -rank <= axis < rank:
        raise ctx.invalid(
            f"Dimension size, given by scalar input {axis} must be in range [-{rank}, {rank})"
        )
    return axis % rank


def _merge(ctx: InferenceContext, a: TensorShape, b: TensorShape) -> TensorShape:
    if a.rank is None:
        return b
    if b.rank is None:
        return a
    if a.rank != b.rank:
        raise ctx.invalid(f"Shapes must be equal rank, but are {a.rank} and {b.rank}")
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x is not None and y is not None and x != y:
            raise ctx.invalid(
                f"Dimension {i} in both shapes must be equal, but are {x} and {y}. Shapes are "
                f"{_debug(a)} and {_debug(b)}."
            )
    return TensorShape([x if x is not None else y for x, y in zip(a, b, strict=True)])


def _merge_all(ctx: InferenceContext, shapes: Sequence[TensorShape]) -> TensorShape:
    """All ``shapes`` merged as TensorFlow's AddN, Pack and ConcatV2 merge them: from the last,
    each into the ones after it (a mismatch names that pair)."""
    out = shapes[-1] if shapes else TensorShape(None)
    for s in reversed(shapes[:-1]):
        out = _merge(ctx, s, out)
    return out


def _broadcast(ctx: InferenceContext, a: TensorShape, b: TensorShape) -> TensorShape:
    """numpy broadcasting of ``a`` and ``b``, refused in TensorFlow's words: the first pair of
    unequal dimensions from the left, neither 1 (what makes ``broadcast_shape`` refuse)."""
    try:
        return broadcast_shape(a, b)
    except ValueError:
        n = max(len(a), len(b))
        x, y = next(
            (x, y)
            for x, y in zip([1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b), strict=True)
            if x is not None and y is not None and x != y and 1 not in (x, y)
        )
        raise ctx.invalid(f"Dimensions must be equal, but are {x} and {y}") from None


def _shape_from_value(value: np.ndarray[Any, Any] | None, rank_hint: TensorShape) -> TensorShape:
    """The shape a 1-D shape tensor describes (-1 entries unknown)."""
    if value is not None:
        return TensorShape([None if int(d) < 0 else int(d) for d in np.reshape(value, -1)])
    if rank_hint.rank == 1 and rank_hint[0] is not None:
        return TensorShape([None] * int(rank_hint[0]))
    return TensorShape(None)


def fill(ctx: InferenceContext) -> Sequence[TensorShape]:
    """The shape the ``dims`` input (a vector) says, none of its known entries negative."""
    _with_rank(ctx, ctx.input_shapes[0], 1)
    dims = _as_ints(ctx.const(0))
    if dims is not None and min(dims, default=0) < 0:
        raise ctx.invalid("Fill dimensions must be >= 0")
    return [_shape_from_value(ctx.const(0), ctx.input_shapes[0])]


def broadcast_to(ctx: InferenceContext) -> Sequence[TensorShape]:
    """The ``shape`` input's shape, as TensorFlow's shape function checks it against the input:
    from the right, each input dimension above 1 equal to the output's (an unknown output
    dimension takes it)."""
    _with_rank(ctx, ctx.input_shapes[1], 1)
    out = _shape_from_value(ctx.const(1), ctx.input_shapes[1])
    x = ctx.input_shapes[0]
    if out.rank is None or x.rank is None:
        return [out]
    if x.rank > out.rank:
        raise ctx.invalid(f"Shape must be at most rank {out.rank} but is rank {x.rank}")
    dims = list(out)
    for i in range(1, x.rank + 1):
        d, o = x[-i], dims[-i]
        if d is not None and d > 1:
            if o is not None and o != d:
                raise ctx.invalid(f"Dimensions must be equal, but are {d} and {o}")
            dims[-i] = d
    return [TensorShape(dims)]


def from_shape_input(index: int) -> Callable[[InferenceContext], Sequence[TensorShape]]:
    """The output's shape is the value of the 1-D shape tensor input ``index``."""

    def fn(ctx: InferenceContext) -> Sequence[TensorShape]:
        return [_shape_from_value(ctx.const(index), ctx.input_shapes[index])]

    return fn


# ----------------------------------------------------------------------------------------------
# Math
# ----------------------------------------------------------------------------------------------


def add_n(ctx: InferenceContext) -> Sequence[TensorShape]:
    return [_merge_all(ctx, ctx.input_shapes)]


def select(ctx: InferenceContext) -> Sequence[TensorShape]:
    """TensorFlow's: the branches one shape; a scalar condition goes with any, a vector one
    with their first dimension (the branches not scalars), any other is their shape."""
    cond, data = ctx.input_shapes[0], _merge(ctx, ctx.input_shapes[1], ctx.input_shapes[2])
    if cond.rank is None or data.rank is None or cond.rank == 0:
        return [data]
    if cond.rank != 1 or data.rank == 0:
        return [_merge(ctx, data, cond)]
    _merge(ctx, cond, TensorShape([data[0]]))
    return [data]


def select_v2(ctx: InferenceContext) -> Sequence[TensorShape]:
    c, t, e = ctx.input_shapes
    return [_broadcast(ctx, c, _broadcast(ctx, t, e))]


def reduction(ctx: InferenceContext) -> Sequence[TensorShape]:
    """Sum/Mean/Max/All...: drop (or keep as 1) the dims named by constant input 1."""
    shape = ctx.input_shapes[0]
    keep = bool(ctx.attrs.get("keep_dims", False))
    axes = _as_ints(ctx.const(1))
    if shape.rank is None:
        return [TensorShape(None)]
    rank = shape.rank
    if axes is None:
        if keep:
            return [TensorShape([None] * rank)]
        idx_shape = ctx.input_shapes[1]
        if idx_shape.rank == 0:
            return [TensorShape([None] * max(rank - 1, 0))]
        return [TensorShape(None)]
    reduced = set()
    for a in axes:
        if not -max(rank, 1) <= a < max(rank, 1):
            raise ctx.invalid(f"Invalid reduction dimension {a} for input with {rank} dimensions.")
        reduced.add(a % rank if rank else 0)
    dims: list[int | None] = []
    for i, d in enumerate(shape):
        if i in reduced:
            if keep:
                dims.append(1)
        else:
            dims.append(d)
    return [TensorShape(dims)]


def range_shape(ctx: InferenceContext) -> Sequence[TensorShape]:
    start, limit, delta = ctx.const(0), ctx.const(1), ctx.const(2)
    for i, name in enumerate(("start", "limit", "delta")):
        s = ctx.input_shapes[i]
        if s.rank is not None and s.rank != 0:
            raise ctx.invalid(f"Shape must be rank 0 but is rank {s.rank} for {name}")
    if start is None or limit is None or delta is None:
        return [TensorShape([None])]
    s, lim, d = start.item(), limit.item(), delta.item()
    if d == 0:
        raise ctx.invalid(f"Requires delta != 0: {d}")
    if d > 0 and s > lim:
        raise ctx.invalid(f"Requires start <= limit when delta > 0: {s}/{lim}")
    if d < 0 and s < lim:
        raise ctx.invalid(f"Requires start >= limit when delta < 0: {s}/{lim}")
    if isinstance(s, int) and isinstance(lim, int) and isinstance(d, int):
        size = (abs(lim - s) + abs(d) - 1) // abs(d)
    else:
        size = int(math.ceil(abs((lim - s) / d)))
    return [TensorShape([size])]


def batch_matmul(ctx: InferenceContext) -> Sequence[TensorShape]:
    a, b = ctx.input_shapes
    if a.rank is None or b.rank is None:
        return [TensorShape(None)]
    if a.rank < 2 or b.rank < 2:
        raise ctx.invalid(f"Shape must be at least rank 2 but is rank {min(a.rank, b.rank)}")
    adj_x, adj_y = ctx.attrs.get("adj_x", False), ctx.attrs.get("adj_y", False)
    rows, inner_a = (a[-1], a[-2]) if adj_x else (a[-2], a[-1])
    inner_b, cols = (b[-1], b[-2]) if adj_y else (b[-2], b[-1])
    _merge_dim(ctx, inner_a, inner_b)
    batch = _broadcast(ctx, TensorShape(list(a)[:-2]), TensorShape(list(b)[:-2]))
    return [TensorShape([*batch, rows, cols])]


# ----------------------------------------------------------------------------------------------
# Arrays
# ----------------------------------------------------------------------------------------------


def identity_n(ctx: InferenceContext) -> Sequence[TensorShape]:
    return list(ctx.input_shapes)


def expand_dims(ctx: InferenceContext) -> Sequence[TensorShape]:
    shape = ctx.input_shapes[0]
    dim = _as_ints(ctx.const(1))
    if shape.rank is None:
        return [TensorShape(None)]
    if dim is None:
        return [TensorShape(None)]  # as TensorFlow's: not even the rank
    if len(dim) != 1:
        raise ctx.invalid(f"'dim' input must be a tensor with a single value, got {len(dim)}")
    d = dim[0]
    if not -shape.rank - 1 <= d <= shape.rank:  # the kernel's words differ
        raise ctx.invalid(f"dim {d} not in the interval [{-shape.rank - 1}, {shape.rank}].")
    if d < 0:
        d += shape.rank + 1
    dims = list(shape)
    dims.insert(d, 1)
    return [TensorShape(dims)]


def squeeze(ctx: InferenceContext) -> Sequence[TensorShape]:
    shape = ctx.input_shapes[0]
    axes = list(ctx.attrs.get("squeeze_dims") or [])
    if shape.rank is None:
        return [TensorShape(None)]
    rank = shape.rank
    wanted = set()
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.invalid(f"Tried to squeeze dim index {a} for tensor with {rank} dimensions.")
        wanted.add(a % rank)
    dims: list[int | None] = []
    for i, d in enumerate(shape):
        if wanted and i in wanted:
            if d is not None and d != 1:
                raise ctx.invalid(f"Can not squeeze dim[{i}], expected a dimension of 1, got {d}")
            continue
        if not wanted and d == 1:
            continue
        if not wanted and d is None:
            return [TensorShape(None)]
        dims.append(d)
    return [TensorShape(dims)]


def gather(ctx: InferenceContext) -> Sequence[TensorShape]:
    params, indices = ctx.input_shapes[0], ctx.input_shapes[1]
    if params.rank is None or indices.rank is None:
        return [TensorShape(None)]
    if params.rank < 1:
        raise ctx.invalid("Shape must be at least rank 1 but is rank 0")
    return [TensorShape([*indices, *list(params)[1:]])]


def gather_v2(ctx: InferenceContext) -> Sequence[TensorShape]:
    """TensorFlow's shape function, check for check: params of rank 1 or more, a scalar axis;
    a fed axis leaves only the output's rank; a known one checks the params' rank against it,
    then ``batch_dims`` against the indices' and the params' ranks."""
    params, indices = ctx.input_shapes[0], ctx.input_shapes[1]
    if params.rank is not None and params.rank < 1:
        raise ctx.invalid(f"Shape must be at least rank 1 but is rank {params.rank}")
    axis_shape = ctx.input_shapes[2]
    if axis_shape.rank is not None and axis_shape.rank != 0:
        raise ctx.invalid(f"Shape must be rank 0 but is rank {axis_shape.rank}")
    batch_dims = int(ctx.attrs.get("batch_dims", 0))
    axis_v = _as_ints(ctx.const(2))
    if axis_v is None:
        if params.rank is None or indices.rank is None:
            return [TensorShape(None)]
        return [TensorShape([None] * (params.rank + indices.rank - 1 - batch_dims))]
    axis = axis_v[0]
    for shape, least in (
        (params, -axis if axis < 0 else axis + 1),
        (indices, abs(batch_dims)),
    ):
        if shape.rank is not None and shape.rank < least:
            raise ctx.invalid(f"Shape must be at least rank {least} but is rank {shape.rank}")
    if params.rank is None or indices.rank is None:
        return [TensorShape(None)]
    if batch_dims < 0:
        batch_dims += indices.rank
    if params.rank < batch_dims + 1:
        raise ctx.invalid(f"Shape must be at least rank {batch_dims + 1} but is rank {params.rank}")
    if axis < 0:
        axis += params.rank
    p = list(params)
    return [TensorShape([*p[:axis], *list(indices)[batch_dims:], *p[axis + 1 :]])]


def pack(ctx: InferenceContext) -> Sequence[TensorShape]:
    out = _merge_all(ctx, ctx.input_shapes)
    if out.rank is None:
        return [TensorShape(None)]
    axis = int(ctx.attrs.get("axis", 0))
    rank = out.rank + 1
    if not -rank <= axis < rank:
        raise ctx.invalid(f"Invalid axis: {axis}; must be in [{-rank},{rank})")
    dims = list(out)
    dims.insert(axis % rank, len(ctx.input_shapes))
    return [TensorShape(dims)]


def unpack(ctx: InferenceContext) -> Sequence[TensorShape]:
    shape = ctx.input_shapes[0]
    num = int(ctx.attrs.get("num", 0))
    if shape.rank is None:
        return [TensorShape(None)] * num
    axis = int(ctx.attrs.get("axis", 0))
    if not -shape.rank <= axis < max(shape.rank, 1):
        raise ctx.invalid(f"Invalid axis: {axis}; must be in [{-shape.rank},{shape.rank})")
    dims = list(shape)
    n = dims.pop(axis % shape.rank)
    if n is not None and n != num:
        raise ctx.invalid(f"Dimension must be {num} but is {n}")
    return [TensorShape(dims)] * num


def slice_shape(ctx: InferenceContext) -> Sequence[TensorShape]:
    shape = ctx.input_shapes[0]
    begin, size = _as_ints(ctx.const(1)), _as_ints(ctx.const(2))
    if size is None:
        rank = shape.rank
        if rank is None and ctx.input_shapes[2].rank == 1:
            rank = ctx.input_shapes[2][0]
        return [TensorShape(None if rank is None else [None] * rank)]
    if shape.rank is not None and len(size) != shape.rank:
        raise ctx.invalid(f"Shape must be rank {len(size)} but is rank {shape.rank}")
    dims: list[int | None] = []
    for i, s in enumerate(size):
        if s >= 0:
            dims.append(s)
        elif begin is not None and shape.rank is not None and shape[i] is not None:
            dims.append(shape[i] - begin[i])
        else:
            dims.append(None)
    return [TensorShape(dims)]


def strided_slice(ctx: InferenceContext) -> Sequence[TensorShape]:
    """Known strides and input rank are enough; unknown bounds leave only their axes unknown."""
    shape = ctx.input_shapes[0]
    n: int | None = None
    for i in (1, 2, 3):
        spec = _with_rank(ctx, ctx.input_shapes[i], 1)
        n = _merge_dim(ctx, n, spec[0])
    strides = ctx.const(3)
    if shape.rank is None or n is None or strides is None:
        return [TensorShape(None)]
    try:
        dims = slice_spec.output_dims(list(shape), ctx.const(1), ctx.const(2), strides, ctx.attrs)
    except ValueError as e:
        raise ctx.invalid(str(e)) from None
    return [TensorShape(dims)]


def tile(ctx: InferenceContext) -> Sequence[TensorShape]:
    shape = ctx.input_shapes[0]
    multiples = _as_ints(ctx.const(1))
    if shape.rank is None:
        return [TensorShape(None)]
    if multiples is None:
        return [TensorShape([None] * shape.rank)]
    if len(multiples) != shape.rank:
        raise ctx.invalid(f"Shape must be rank {shape.rank} but is rank {len(multiples)}")
    return [
        TensorShape([None if d is None else d * m for d, m in zip(shape, multiples, strict=True)])
    ]


def where(ctx: InferenceContext) -> Sequence[TensorShape]:
    return [TensorShape([None, ctx.input_shapes[0].rank])]


def concat_v2(ctx: InferenceContext) -> Sequence[TensorShape]:
    values = ctx.input_shapes[:-1]
    axis_v = _as_ints(ctx.const(len(ctx.input_shapes) - 1))
    rank = next((s.rank for s in values if s.rank is not None), None)
    if rank is None:
        return [TensorShape(None)]
    for s in values:
        if s.rank is not None and s.rank != rank:
            raise ctx.invalid(f"Shape must be rank {rank} but is rank {s.rank}")
    if rank == 0:
        raise ctx.invalid("Can't concatenate scalars (use tf.stack instead)")
    if axis_v is None:
        return [TensorShape([None] * rank)]
    axis = axis_v[0]
    if not -rank <= axis < rank:
        raise ctx.invalid(f"Expected concatenating dimensions in the range [{-rank}, {rank})")
    axis %= rank
    # As TensorFlow's: the dimensions before the axis merged as one shape, those after as another
    before, after = TensorShape([None] * axis), TensorShape([None] * (rank - axis - 1))
    total: int | None = 0
    for s in reversed(values):  # from the last, as TensorFlow's
        if s.rank is None:
            total = None
            continue
        dims = list(s)
        before = _merge(ctx, TensorShape(dims[:axis]), before)
        after = _merge(ctx, TensorShape(dims[axis + 1 :]), after)
        size = dims[axis]
        total = None if total is None or size is None else total + size
    return [TensorShape([*before, total, *after])]


def reshape(ctx: InferenceContext) -> Sequence[TensorShape]:
    shape = ctx.input_shapes[0]
    target = _as_ints(ctx.const(1))
    if target is None:
        return [_shape_from_value(None, ctx.input_shapes[1])]
    wrong = next((d for d in target if d < -1), None)
    if wrong is not None:
        raise ctx.invalid(f"Invalid value in tensor used for shape: {wrong}")
    unknown_at = [i for i, d in enumerate(target) if d == -1]
    if len(unknown_at) > 1:
        raise ctx.invalid(f"Cannot infer multiple unknown dimensions in shape {target}")
    dims: list[int | None] = list(target)
    n = shape.num_elements()
    known = 1
    for d in target:
        if d != -1:
            known *= d
    if unknown_at:
        if n is not None and known > 0:
            if n % known:
                raise ctx.invalid(f"Dimension size must be evenly divisible by {known} but is {n}")
            dims[unknown_at[0]] = n // known
        else:
            dims[unknown_at[0]] = None
    elif n is not None and n != known:
        text = "[" + ",".join(map(str, target)) + "]"
        raise ctx.invalid(
            f"Cannot reshape a tensor with {n} elements to shape {text} ({known} elements)"
        )
    return [TensorShape(dims)]


def transpose(ctx: InferenceContext) -> Sequence[TensorShape]:
    shape = ctx.input_shapes[0]
    perm = _as_ints(ctx.const(1))
    if perm is None:
        rank = shape.rank
        if rank is None and ctx.input_shapes[1].rank == 1:
            rank = ctx.input_shapes[1][0]
        return [TensorShape(None if rank is None else [None] * rank)]
    if shape.rank is None:
        return [TensorShape([None] * len(perm))]
    if len(perm) != shape.rank:
        raise ctx.invalid(f"Dimension must be {shape.rank} but is {len(perm)}")
    for p in perm:  # TensorFlow's shape function leaves repeats to the kernel
        if not -shape.rank <= p < shape.rank:
            raise ctx.invalid(f"perm dim {p} is out of range of input rank {shape.rank}")
    return [TensorShape([shape[p] for p in perm])]


def shape_of(ctx: InferenceContext) -> Sequence[TensorShape]:
    return [TensorShape([ctx.input_shapes[0].rank])]


def shape_n(ctx: InferenceContext) -> Sequence[TensorShape]:
    return [TensorShape([s.rank]) for s in ctx.input_shapes]


def pad(ctx: InferenceContext) -> Sequence[TensorShape]:
    """Pad/PadV2/MirrorPad: each dimension grows by its two paddings (a constant [rank, 2])."""
    paddings = _with_rank(ctx, ctx.input_shapes[1], 2)
    if paddings[1] is not None and paddings[1] != 2:
        raise ctx.invalid(f"Dimension must be 2 but is {paddings[1]}")
    shape, rank = ctx.input_shapes[0], paddings[0]
    if rank is not None:
        shape = _with_rank(ctx, shape, rank)
    rank = shape.rank
    value = ctx.const(1)
    if value is None:
        return [TensorShape(None if rank is None else [None] * rank)]
    rows = np.reshape(value, (-1, 2)).tolist()
    shape = _with_rank(ctx, shape, len(rows))
    if any(a < 0 or b < 0 for a, b in rows):
        raise ctx.invalid("Paddings must be non-negative")
    return [
        TensorShape(
            [None if d is None else d + a + b for d, (a, b) in zip(shape, rows, strict=True)]
        )
    ]


def one_hot(ctx: InferenceContext) -> Sequence[TensorShape]:
    """The indices' shape with a ``depth`` dimension inserted at ``axis`` (-1: last)."""
    axis = int(ctx.attrs.get("axis", -1))
    if axis < -1:
        raise ctx.invalid("axis must be >= -1")
    if ctx.input_shapes[1].rank not in (None, 0):
        raise ctx.invalid(f"Input must be scalar but has rank {ctx.input_shapes[1].rank}")
    depth = _as_ints(ctx.const(1))
    if depth is not None and depth[0] < 0:
        raise ctx.invalid(
            f"Dimension size, given by scalar input 1, must be non-negative but is {depth[0]}"
        )
    indices = ctx.input_shapes[0]
    if indices.rank is None:
        return [TensorShape(None)]
    dims = list(indices)
    dims.insert((axis + indices.rank + 1) % (indices.rank + 1), None if depth is None else depth[0])
    return [TensorShape(dims)]


def gather_nd(ctx: InferenceContext) -> Sequence[TensorShape]:
    """``indices.shape[:-1] + params.shape[indices.shape[-1]:]``."""
    params, indices = ctx.input_shapes
    if indices.rank == 0:
        raise ctx.invalid("Shape must be at least rank 1 but is rank 0")
    if params.rank is None or indices.rank is None or indices[-1] is None:
        return [TensorShape(None)]
    depth = int(indices[-1])
    if depth > params.rank:
        raise ctx.invalid(
            "indices.shape[-1] must be <= params.rank, but saw indices shape: "
            f"{_debug(indices)} and params shape: {_debug(params)}"
        )
    return [TensorShape([*list(indices)[:-1], *list(params)[depth:]])]


def split(ctx: InferenceContext) -> Sequence[TensorShape]:
    """``num_split`` equal parts of input 1 along the constant axis input 0."""
    shape, num = ctx.input_shapes[1], int(ctx.attrs["num_split"])
    axis = _scalar_axis(ctx, 0, shape.rank)
    if shape.rank is None:
        return [TensorShape(None)] * num
    dims: list[int | None] = list(shape)
    if axis is None:
        return [TensorShape([None] * shape.rank)] * num
    size = dims[axis]
    if size is not None and size % num:
        raise ctx.invalid(
            f"Dimension size must be evenly divisible by {num} but is {size}\n\t"
            "Number of ways to split should evenly divide the split dimension"
        )
    dims[axis] = None if size is None else size // num
    return [TensorShape(dims)] * num


def split_v(ctx: InferenceContext) -> Sequence[TensorShape]:
    """Parts of input 0 sized by constant input 1 (one -1 takes the rest) along input 2."""
    shape, num = ctx.input_shapes[0], int(ctx.attrs["num_split"])
    if shape.rank == 0:
        raise ctx.invalid("Can't split scalars")
    axis = _scalar_axis(ctx, 2, shape.rank)
    _with_rank(ctx, ctx.input_shapes[1], 1)
    if shape.rank is None:
        return [TensorShape(None)] * num
    sizes = _as_ints(ctx.const(1))
    if axis is None:  # TensorFlow would guess the last axis here; unknown is the honest answer
        return [TensorShape([None] * shape.rank)] * num
    if sizes is None:
        return [_replace_dim(shape, axis, None)] * num
    if len(sizes) != num:
        raise ctx.invalid("Length of size_splits should be equal to num_outputs")
    return [_replace_dim(shape, axis, d) for d in _split_sizes(ctx, sizes, shape[axis])]


def _replace_dim(shape: TensorShape, axis: int, dim: int | None) -> TensorShape:
    dims = list(shape)
    dims[axis] = dim
    return TensorShape(dims)


def _split_sizes(ctx: InferenceContext, sizes: list[int], size: int | None) -> list[int | None]:
    if sizes.count(-1) > 1:
        raise ctx.invalid("size_splits can only have one -1")
    total = sum(s for s in sizes if s != -1)
    out: list[int | None] = []
    for i, s in enumerate(sizes):
        if s == -1 and size is not None:
            s = size - total
        if s < 0 and not (s == -1 and size is None):
            raise ctx.invalid(f"Split size at index {i} must be >= 0. Got: {s}")
        out.append(None if s == -1 else s)
    if size is not None and (total > size if -1 in sizes else total != size):
        raise ctx.invalid(
            f"can't split axis of size {size} into pieces of size [{','.join(map(str, sizes))}]"
        )
    return out


def space_to_batch_nd(ctx: InferenceContext) -> Sequence[TensorShape]:
    """Input 0 with its spatial dims padded by constant input 2 and folded by constant input 1
    (the block shape) into the batch (TensorFlow's ``SpaceToBatchShapeHelper``)."""
    return [_space_batch(ctx, to_batch=True)]


def batch_to_space_nd(ctx: InferenceContext) -> Sequence[TensorShape]:
    """The inverse: the batch unfolded by the block shape, then cropped by constant input 2."""
    return [_space_batch(ctx, to_batch=False)]


def _space_batch(ctx: InferenceContext, to_batch: bool) -> TensorShape:
    x, block_shape, pads_shape = ctx.input_shapes
    if block_shape.rank != 1:
        raise ctx.invalid("block_shape must have rank 1.")
    m = block_shape[0]
    if m is None:
        raise ctx.invalid("block_shape must have known size.")
    if x.rank is not None and x.rank < m + 1:
        raise ctx.invalid(f"Shape must be at least rank {m + 1} but is rank {x.rank}")
    if pads_shape.rank is not None and pads_shape.rank != 2:
        raise ctx.invalid(f"Shapes must be equal rank, but are {pads_shape.rank} and 2")
    for d, want in enumerate((m, 2) if pads_shape.rank is not None else ()):
        if pads_shape[d] is not None and pads_shape[d] != want:
            raise ctx.invalid(
                f"Dimension {d} in both shapes must be equal, but are {pads_shape[d]} and "
                f"{want}. Shapes are {_debug(pads_shape)} and [{m},2]."
            )
    block, pads = _as_ints(ctx.const(1)), _as_ints(ctx.const(2))
    batch = x[0] if x.rank is not None else None
    if block:
        for b in block:
            if b < 1:
                raise ctx.invalid("block_shape must be positive")
            batch = None if batch is None else batch * b if to_batch else _divide(ctx, batch, b)
    elif m > 0:
        batch = None
    dims: list[int | None] = [batch] + [None] * m
    what = "paddings" if to_batch else "crops"
    pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(m)] if pads else []
    for i, (start, end) in enumerate(pairs):
        if start < 0 or end < 0:
            raise ctx.invalid(f"{what} cannot be negative")
        size = x[i + 1] if x.rank is not None else None
        if block is not None and size is not None:
            if to_batch:
                dims[i + 1] = _divide(ctx, size + start + end, block[i])
            else:
                dims[i + 1] = _subtract(ctx, _subtract(ctx, size * block[i], start), end)
    if x.rank is None:
        return TensorShape(None)
    return TensorShape(dims + list(x)[m + 1 :])


def _divide(ctx: InferenceContext, size: int, by: int) -> int:
    if size % by:
        raise ctx.invalid(f"Dimension size must be evenly divisible by {by} but is {size}")
    return size // by


def _subtract(ctx: InferenceContext, size: int, minus: int) -> int:
    if size < minus:
        raise ctx.invalid(f"Negative dimension size caused by subtracting {minus} from {size}")
    return size - minus


# ----------------------------------------------------------------------------------------------
# Neural networks
# ----------------------------------------------------------------------------------------------


def conv_output_size(
    size: int | None, k: int, stride: int, dilation: int, padding: bytes, pads: tuple[int, int]
) -> int | None:
    """TensorFlow's GetWindowedOutputSize: the output length of one spatial dimension."""
    if size is None:
        return None
    eff = (k - 1) * dilation + 1
    if padding == b"SAME":
        return (size + stride - 1) // stride
    if padding == b"EXPLICIT":
        size = size + pads[0] + pads[1]
    return (size - eff + stride) // stride


def _spatial(ctx: InferenceContext, shape: TensorShape) -> tuple[list[int | None], int, int, int]:
    """(dims, batch index, h index, channel index) for the data_format of an NHWC/NCHW op."""
    nchw = ctx.attrs.get("data_format", b"NHWC").startswith(b"NCHW")
    return list(shape), 0, (2 if nchw else 1), (1 if nchw else 3)


def explicit_padding_error(
    explicit_paddings: Sequence[int], padding: bytes, data_format: bytes
) -> str | None:
    """What TensorFlow's ``CheckValidPadding`` finds wrong with a 4-D op's paddings, or None."""
    if padding != b"EXPLICIT":
        if explicit_paddings:
            return (
                "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT"
            )
        return None
    if len(explicit_paddings) != 8:
        return (
            f"explicit_paddings attribute must contain 8 values, but got: {len(explicit_paddings)}"
        )
    if min(explicit_paddings) < 0:
        return "All elements of explicit_paddings must be nonnegative"
    c = 1 if data_format.startswith(b"NCHW") else 3
    if any(explicit_paddings[i] for i in (0, 1, 2 * c, 2 * c + 1)):
        return "Nonzero explicit padding in the batch or depth dimensions is not supported"
    return None


def _windowed(
    ctx: InferenceContext, shape: TensorShape, k: Sequence[int], out_c: int | None
) -> TensorShape:
    dims, b, h, c = _spatial(ctx, shape)
    strides = list(ctx.attrs.get("strides") or [1, 1, 1, 1])
    dilations = list(ctx.attrs.get("dilations") or [1, 1, 1, 1])
    padding = ctx.attrs.get("padding", b"VALID")
    if padding == b"EXPLICIT":  # as TensorFlow's shape functions check them
        wrong = explicit_padding_error(
            list(ctx.attrs.get("explicit_paddings") or []),
            padding,
            ctx.attrs.get("data_format", b"NHWC"),
        )
        if wrong is not None:
            raise ctx.invalid(wrong)
    explicit = list(ctx.attrs.get("explicit_paddings") or [0] * 8)
    out = list(dims)
    for i in range(2):
        ax = h + i
        dilation = dilations[ax] if len(dilations) == 4 else 1
        pads = (explicit[2 * ax], explicit[2 * ax + 1]) if len(explicit) == 8 else (0, 0)
        given = dims[ax]
        if padding != b"SAME" and given is not None:  # TensorFlow's Subtract of the window
            padded = given + (sum(pads) if padding == b"EXPLICIT" else 0)
            window = (k[i] - 1) * dilation + 1
            if padded < window:
                raise ctx.invalid(
                    f"Negative dimension size caused by subtracting {window} from {padded}"
                )
        size = conv_output_size(given, k[i], strides[ax], dilation, padding, pads)
        out[ax] = size
    out[c] = out_c
    del b
    return TensorShape(out)


def conv2d(ctx: InferenceContext) -> Sequence[TensorShape]:
    """Filter [kh, kw, in, out]: ``out`` output channels."""
    return _conv_shape(ctx, lambda f: f[3])


def depthwise_conv2d(ctx: InferenceContext) -> Sequence[TensorShape]:
    """Filter [kh, kw, in, multiplier]: ``in * multiplier`` output channels, ``in`` the
    input's depth."""
    x, f = ctx.input_shapes
    depth = None
    if x.rank == 4 and f.rank == 4:
        depth = _merge_dim(ctx, x[_spatial(ctx, x)[3]], f[2])
    return _conv_shape(ctx, lambda f: None if depth is None or f[3] is None else depth * f[3])


def _conv_shape(
    ctx: InferenceContext, out_channels: Callable[[TensorShape], int | None]
) -> Sequence[TensorShape]:
    x, f = ctx.input_shapes
    if x.rank is None:
        return [TensorShape(None)]
    if x.rank != 4:
        raise ctx.invalid(f"Shape must be rank 4 but is rank {x.rank}")
    if f.rank is None or f[0] is None or f[1] is None:
        return [TensorShape([x[0], None, None, None])]
    if ctx.op_type == "Conv2D":
        _check_groups(ctx, x, f)
    return [_windowed(ctx, x, [int(f[0]), int(f[1])], out_channels(f))]


def _check_groups(ctx: InferenceContext, x: TensorShape, f: TensorShape) -> None:
    """Conv2D's input depth a multiple of its filter's (the groups), its output depth a
    multiple of the groups, as TensorFlow's shape function checks."""
    channels = x[1] if ctx.attrs.get("data_format") == b"NCHW" else x[3]
    if channels is None or f[2] is None:
        return
    if not f[2]:
        raise ctx.invalid("Depth of filter must not be 0")
    if channels % f[2]:
        raise ctx.invalid(
            f"Depth of input ({channels}) is not a multiple of input depth of filter ({f[2]})"
        )
    groups = channels // f[2]
    if channels == f[2] or f[3] is None:
        return
    if not groups:
        raise ctx.invalid("Number of groups must not be 0")
    if f[3] % groups:
        raise ctx.invalid(
            f"Depth of output ({f[3]}) is not a multiple of the number of groups ({groups})"
        )


def pool(ctx: InferenceContext) -> Sequence[TensorShape]:
    x = ctx.input_shapes[0]
    if x.rank is None:
        return [TensorShape(None)]
    if x.rank != 4:
        raise ctx.invalid(f"Shape must be rank 4 but is rank {x.rank}")
    _, _, h, c = _spatial(ctx, x)
    ksize = list(ctx.attrs.get("ksize") or [1, 1, 1, 1])
    return [_windowed(ctx, x, [ksize[h], ksize[h + 1]], x[c])]


def fused_max_pool(ctx: InferenceContext) -> Sequence[TensorShape]:
    """The remapper's ``_FusedMaxPool``: the pool of its input, or of its fused Conv2D's output
    (input and filter, window in the ``conv_`` attrs)."""
    if list(ctx.attrs.get("fused_ops") or [])[:1] != [b"Conv2D"]:
        return pool(ctx)
    attrs = dict(ctx.attrs)
    attrs.update({key[5:]: v for key, v in ctx.attrs.items() if key.startswith("conv_")})
    conv = InferenceContext(
        "Conv2D", ctx.node_name, ctx.input_shapes[:2], ctx.input_dtypes[:2], attrs
    )
    pooled = InferenceContext(
        ctx.op_type, ctx.node_name, conv2d(conv), ctx.input_dtypes[:1], dict(ctx.attrs)
    )
    return pool(pooled)


def fused_matmul_pair(ctx: InferenceContext) -> Sequence[TensorShape]:
    """The remapper's ``_FusedMatMulPair``: its ``fused_ops`` in turn, each MatMul and BiasAdd
    taking the next of the inputs after the first (a Relu keeps the shape)."""
    shape, operands, dtypes_ = ctx.input_shapes[0], iter(ctx.input_shapes[1:]), ctx.input_dtypes
    for op in ctx.attrs["fused_ops"]:
        if op == b"Relu":
            continue
        name = op.decode()
        inner = InferenceContext(
            name, ctx.node_name, [shape, next(operands)], dtypes_[:2], ctx.attrs
        )
        shape = (matmul if name == "MatMul" else bias_add)(inner)[0]
    return [shape]


def fused_matmul_sum(ctx: InferenceContext) -> Sequence[TensorShape]:
    """The remapper's ``_FusedMatMulSum``: the AddN of the MatMuls of its inputs taken in pairs."""
    shapes, dtypes_ = ctx.input_shapes, ctx.input_dtypes
    products = [
        matmul(InferenceContext("MatMul", ctx.node_name, shapes[i : i + 2], dtypes_[:2], {}))[0]
        for i in range(0, len(shapes), 2)
    ]
    return [_merge_all(ctx, products)]


def sparse_softmax_xent(ctx: InferenceContext) -> Sequence[TensorShape]:
    features, labels = ctx.input_shapes
    batch = None
    if features.rank is not None:
        if features.rank != 2:
            raise ctx.invalid(f"Shape must be rank 2 but is rank {features.rank}")
        batch = features[0]
    if labels.rank is not None:
        if labels.rank != 1:
            raise ctx.invalid(f"Shape must be rank 1 but is rank {labels.rank}")
        batch = _merge_dim(ctx, batch, labels[0])
    classes = features[1] if features.rank is not None else None
    return [TensorShape([batch]), TensorShape([batch, classes])]


def softmax_xent(ctx: InferenceContext) -> Sequence[TensorShape]:
    features, labels = ctx.input_shapes
    both = _broadcast(ctx, features, labels)
    if both.rank is None:
        return [TensorShape([None]), TensorShape([None, None])]
    if both.rank != 2:
        raise ctx.invalid(f"Shape must be rank 2 but is rank {both.rank}")
    return [TensorShape([both[0]]), both]


def fused_batch_norm(ctx: InferenceContext) -> Sequence[TensorShape]:
    """x of rank 4 (5 for NDHWC/NCDHW); scale, offset (and mean, variance unless training without
    a running average) are vectors of its channels; reserve_space_3 is of unknown shape."""
    data_format = ctx.attrs.get("data_format", b"NHWC")
    rank = 5 if data_format in (b"NDHWC", b"NCDHW") else 4
    x = _with_rank(ctx, ctx.input_shapes[0], rank)
    training = bool(ctx.attrs.get("is_training", True))
    vectors = 2 if training and float(ctx.attrs.get("exponential_avg_factor", 1.0)) == 1.0 else 4
    channel_at = 1 if data_format.startswith(b"NC") else rank - 1
    channel = x[channel_at]
    for s in ctx.input_shapes[1 : 1 + vectors]:
        channel = _merge_dim(ctx, channel, _with_rank(ctx, s, 1)[0])
    vec = TensorShape([channel])
    return [_replace_dim(x, channel_at, channel), vec, vec, vec, vec, TensorShape(None)]
