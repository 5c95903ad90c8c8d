"""Array kernels: constants, placeholders, shapes, indexing, copying, padding, splitting."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aiotf.framework import dtypes, errors
from aiotf.framework import strided_slice as slice_spec
from aiotf.kernels import array_costs as costs
from aiotf.kernels import derived
from aiotf.kernels.registry import (
    NS_PER_ELEMENT,
    NS_PER_FOUND,
    NS_PER_PERMUTED,
    KernelNode,
    first_input_cost,
    input_elements,
    register_kernel,
)

Array = np.ndarray[Any, Any]


@register_kernel("Const")
def const(*, value: Array) -> Array:
    derived.freeze(value)  # shared by every run: consumers must never write into it
    return value


@register_kernel("Placeholder")
def placeholder(*, node: KernelNode) -> Array:
    dtype = node.attrs["dtype"]
    shape = node.attrs["shape"]
    shape_text = (
        ""
        if shape.rank is None
        else " and shape [" + ",".join("?" if d is None else str(d) for d in shape) + "]"
    )
    raise errors.InvalidArgumentError(
        None,
        None,
        f"You must feed a value for placeholder tensor '{node.name}' with dtype "
        f"{_tf_type_name(dtype)}{shape_text}",
    )


def _tf_type_name(dtype: Any) -> str:
    name: str = dtype.name
    return {"float32": "float", "float64": "double", "float16": "half"}.get(name, name)


@register_kernel("PlaceholderWithDefault")
def placeholder_with_default(value: Array) -> Array:
    return value


@register_kernel("Identity")
def identity(value: Array) -> Array:
    return value


# ----------------------------------------------------------------------------------------------
# Shape manipulation, indexing and copying (TensorFlow's array_ops)
# ----------------------------------------------------------------------------------------------


def _shape_str(x: Any) -> str:
    return "[" + ",".join(str(d) for d in np.shape(x)) + "]"


def _dims_str(dims: Any) -> str:
    return "[" + ",".join(str(int(d)) for d in dims) + "]"


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _vector(value: Array, what: str) -> list[int]:
    if np.ndim(value) != 1:
        raise _invalid(f"{what} must be 1-D, not {_shape_str(value)}")
    return [int(v) for v in np.asarray(value).tolist()]


def _strings_as_objects(values: Any) -> list[Array]:
    arrays = [np.asarray(v) for v in values]
    if any(a.dtype.kind in "SUO" for a in arrays):
        return [a.astype(object) if a.dtype.kind != "O" else a for a in arrays]
    return arrays


def _several(outputs: tuple[Array, ...]) -> Any:
    """The result of a kernel with a variable number of outputs: the executor takes a tuple for
    several outputs, the array itself for one."""
    return outputs[0] if len(outputs) == 1 else outputs


@register_kernel("IdentityN")
def identity_n(*inputs: Array) -> Any:
    return _several(inputs)


@register_kernel("StopGradient")
def stop_gradient(value: Array) -> Array:
    return value


@register_kernel("ZerosLike", cost=first_input_cost(NS_PER_ELEMENT))
def zeros_like(x: Array) -> Array:
    x = np.asarray(x)
    if x.dtype.kind in "SUO":
        return np.full(x.shape, b"", dtype=object)
    return np.zeros_like(x)


@register_kernel("OnesLike", cost=first_input_cost(NS_PER_ELEMENT))
def ones_like(x: Array) -> Array:
    return np.ones_like(np.asarray(x))


@register_kernel("Fill", cost=costs.fill_cost)
def fill(dims: Array, value: Array) -> Array:
    if np.ndim(dims) != 1:
        raise _invalid(f"dims must be a vector, got shape {_shape_str(dims)}")
    if np.ndim(value) != 0:
        raise _invalid(f"value must be a scalar, got shape {_shape_str(value)}")
    shape = [int(d) for d in np.asarray(dims).tolist()]
    for d in shape:
        if d < 0:
            raise _invalid(f"Dimension {d} must be >= 0")
    v = np.asarray(value)
    if v.dtype.kind in "SUO":
        out = np.empty(shape, dtype=object)
        out[...] = v.item()
        return out
    return np.full(shape, v, dtype=v.dtype)


@register_kernel("Shape")
def shape(x: Array, *, out_type: Any) -> Array:
    return np.asarray(np.shape(x), dtype=out_type.np_dtype)


@register_kernel("Size")
def size(x: Array, *, out_type: Any) -> Array:
    return np.asarray(np.size(x), dtype=out_type.np_dtype)


@register_kernel("Rank")
def rank(x: Array) -> Array:
    return np.asarray(np.ndim(x), dtype=np.int32)


@register_kernel("BroadcastTo", cost=costs.broadcast_to_cost)
def broadcast_to(x: Array, shape: Array) -> Array:
    target = _vector(shape, "shape")
    x = np.asarray(x)
    if x.ndim > len(target):
        raise _invalid(
            f"Rank of input ({x.ndim}) must be no greater than rank of output shape "
            f"({len(target)})."
        )
    try:
        out_shape = np.broadcast_shapes(x.shape, tuple(target))
    except ValueError:
        raise _invalid(f"Incompatible shapes: {_shape_str(x)} vs. {_dims_str(target)}") from None
    if list(out_shape) != target:
        raise _invalid(
            f"Unable to broadcast tensor of shape {_shape_str(x)} to tensor of shape "
            f"{_dims_str(target)}"
        )
    return np.array(np.broadcast_to(x, out_shape))


@register_kernel("ExpandDims")
def expand_dims(x: Array, dim: Array) -> Array:
    if np.size(dim) != 1:
        raise _invalid(
            f"'dim' must be a tensor with a single value, but got shape {_shape_str(dim)}"
        )
    x = np.asarray(x)
    d = int(np.reshape(dim, -1)[0])
    if not -x.ndim - 1 <= d <= x.ndim:
        raise _invalid(f"Tried to expand dim index {d} for tensor with {x.ndim} dimensions.")
    return np.expand_dims(x, d if d >= 0 else d + x.ndim + 1)


@register_kernel("Squeeze")
def squeeze(x: Array, *, squeeze_dims: list[int]) -> Array:
    x = np.asarray(x)
    axes = set()
    for a in squeeze_dims:
        if not -x.ndim <= a < x.ndim:
            raise _invalid(f"Tried to squeeze dim index {a} for tensor with {x.ndim} dimensions.")
        a %= x.ndim
        if x.shape[a] != 1:
            raise _invalid(f"Can not squeeze dim[{a}], expected a dimension of 1, got {x.shape[a]}")
        axes.add(a)
    if not squeeze_dims:
        axes = {i for i, d in enumerate(x.shape) if d == 1}
    return x.reshape([d for i, d in enumerate(x.shape) if i not in axes])


def _gather(params: Array, indices: Array, axis: int, batch_dims: int) -> Array:
    params, indices = np.asarray(params), np.asarray(indices)
    if batch_dims < 0:
        batch_dims += indices.ndim
    if params.ndim < 1:
        raise _invalid("params must be at least 1 dimensional")
    if not -params.ndim <= axis < params.ndim:
        raise _invalid(
            f"Expected axis in the range [{-params.ndim}, {params.ndim}), but got {axis}"
        )
    axis %= params.ndim
    if batch_dims:
        if not 0 <= batch_dims <= indices.ndim:
            raise _invalid(
                f"Expected batch_dims in the range [{-indices.ndim}, {indices.ndim}], but got "
                f"{batch_dims}"
            )
        if batch_dims > axis:
            raise _invalid(
                f"batch_dims ({batch_dims}) must be less than or equal to axis ({axis})."
            )
        for i in range(batch_dims):
            if params.shape[i] != indices.shape[i]:
                raise _invalid(
                    f"params.shape[{i}]: {params.shape[i]} should be equal to "
                    f"indices.shape[{i}]: {indices.shape[i]}"
                )
    limit = params.shape[axis]
    bad = (indices < 0) | (indices >= limit)
    if np.any(bad):
        pos = np.argwhere(bad)[0]
        where = ",".join(str(p) for p in pos)
        raise _invalid(f"indices[{where}] = {indices[tuple(pos)]} is not in [0, {limit})")
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    batch = params.shape[:batch_dims]
    pre = params.shape[batch_dims:axis]
    idx = indices.shape[batch_dims:]
    p = params.reshape((-1, *params.shape[batch_dims:]))
    ind = indices.reshape((-1, *idx))
    p2 = np.moveaxis(p, 1 + len(pre), 1)  # (B, N, *pre, *post)
    bidx = np.arange(p.shape[0]).reshape((-1,) + (1,) * len(idx))
    g = p2[bidx, ind]  # (B, *idx, *pre, *post)
    n_idx, n_pre = len(idx), len(pre)
    order = [
        0,
        *range(1 + n_idx, 1 + n_idx + n_pre),
        *range(1, 1 + n_idx),
        *range(1 + n_idx + n_pre, g.ndim),
    ]
    g = np.transpose(g, order)
    return np.ascontiguousarray(g.reshape((*batch, *g.shape[1:])))


@register_kernel("Gather", cost=costs.gather_cost)
def gather(params: Array, indices: Array) -> Array:
    return _gather(params, indices, 0, 0)


@register_kernel("GatherV2", cost=costs.gather_v2_cost)
def gather_v2(params: Array, indices: Array, axis: Array, *, batch_dims: int) -> Array:
    if np.size(axis) != 1:
        raise _invalid(f"axis must be scalar, but got shape {_shape_str(axis)}")
    return _gather(params, indices, int(np.reshape(axis, -1)[0]), batch_dims)


@register_kernel("Pack", cost=input_elements)
def pack(*values: Array, axis: int) -> Array:
    arrays = _strings_as_objects(values)
    first = arrays[0]
    for i, a in enumerate(arrays[1:], 1):
        if a.shape != first.shape:
            raise _invalid(
                f"Shapes of all inputs must match: values[0].shape = {_shape_str(first)} != "
                f"values[{i}].shape = {_shape_str(a)}"
            )
    rank = first.ndim + 1
    if not -rank <= axis < rank:
        raise _invalid(f"axis = {axis} not in [{-rank}, {rank})")
    return np.stack(arrays, axis=axis)


@register_kernel("Unpack", cost=costs.unpack_cost)
def unpack(value: Array, *, num: int, axis: int) -> Any:
    value = np.asarray(value)
    if not -value.ndim <= axis < value.ndim:
        raise _invalid(f"axis = {axis} not in [{-value.ndim}, {value.ndim})")
    axis %= value.ndim
    if value.shape[axis] != num:
        raise _invalid(f"Input shape axis {axis} must equal {num}, got shape {_shape_str(value)}")
    moved = np.moveaxis(value, axis, 0)
    return _several(tuple(np.array(moved[i]) for i in range(num)))  # a copy, 0-d stays 0-d


@register_kernel("Reverse", cost=first_input_cost(NS_PER_ELEMENT))
def reverse(tensor: Array, dims: Array) -> Array:
    tensor = np.asarray(tensor)
    flags = np.reshape(dims, -1)
    if np.ndim(dims) != 1:
        raise _invalid(f"'dims' must be 1-dimension, not {np.ndim(dims)}")
    if flags.size != tensor.ndim:
        raise _invalid(
            "'dims' must have the same number of values as 'input' has dimensions. 'dims' has "
            f"{flags.size} values, 'input' has {tensor.ndim}."
        )
    axes = tuple(i for i, f in enumerate(flags.tolist()) if f)
    return np.ascontiguousarray(np.flip(tensor, axes)) if axes else tensor


@register_kernel("ReverseV2", cost=first_input_cost(NS_PER_ELEMENT))
def reverse_v2(tensor: Array, axis: Array) -> Array:
    tensor = np.asarray(tensor)
    if np.ndim(axis) != 1:
        raise _invalid(f"'axis' must be 1-dimension, not {np.ndim(axis)}")
    seen: set[int] = set()
    for i, a in enumerate(np.asarray(axis).tolist()):
        c = a + tensor.ndim if a < 0 else a
        if not 0 <= c < tensor.ndim:
            raise _invalid(f"'axis'[{i}] = {a} is out of valid range [0, {tensor.ndim - 1}")
        if c in seen:
            raise _invalid(f"axis {c} specified more than once.")
        seen.add(c)
    return np.ascontiguousarray(np.flip(tensor, tuple(sorted(seen)))) if seen else tensor


@register_kernel("Slice", cost=costs.slice_cost)
def slice_(x: Array, begin: Array, size: Array) -> Array:
    x = np.asarray(x)
    if (
        np.ndim(begin) != 1
        or np.ndim(size) != 1
        or np.size(begin) != x.ndim
        or np.size(size) != x.ndim
    ):
        raise _invalid(
            f"Expected begin and size arguments to be 1-D tensors of size {x.ndim}, but got "
            f"shapes {_shape_str(begin)} and {_shape_str(size)} instead."
        )
    index = []
    for i, (b, s) in enumerate(
        zip(np.asarray(begin).tolist(), np.asarray(size).tolist(), strict=True)
    ):
        dim = x.shape[i]
        if s == -1:
            s = dim - b
        if not 0 <= b <= dim:
            raise _invalid(f"Expected begin[{i}] in [0, {dim}], but got {b}")
        if not (s >= 0 and b + s <= dim):
            raise _invalid(f"Expected size[{i}] in [0, {dim - b}], but got {s}")
        index.append(slice(b, b + s))
    return np.array(x[tuple(index)])


@register_kernel("StridedSlice", cost=costs.strided_slice_cost)
def strided_slice(x: Array, begin: Array, end: Array, strides: Array, *, node: KernelNode) -> Array:
    x = np.asarray(x)
    try:
        index = slice_spec.numpy_index(x.shape, begin, end, strides, node.attrs)
    except ValueError as e:
        raise _invalid(str(e)) from None
    return np.array(x[index], dtype=x.dtype)


@register_kernel("Tile", cost=costs.tile_cost)
def tile(x: Array, multiples: Array) -> Array:
    x = np.asarray(x)
    if np.ndim(multiples) != 1 or np.size(multiples) != x.ndim:
        raise _invalid(
            f"Expected multiples argument to be a vector of length {x.ndim} but got length "
            f"{np.size(multiples) if np.ndim(multiples) == 1 else np.ndim(multiples)}"
        )
    reps = [int(m) for m in np.asarray(multiples).tolist()]
    for i, m in enumerate(reps):
        if m < 0:
            raise _invalid(f"Expected multiples[{i}] >= 0, but got {m}")
    if not reps:
        return np.array(x)
    # One broadcast assignment into (m0, d0, m1, d1, ...): unlike np.tile's repeat, the copy
    # releases the GIL, so a big Tile in the pool leaves the event loop running.
    out = np.empty([n for m, d in zip(reps, x.shape, strict=True) for n in (m, d)], x.dtype)
    out[...] = x.reshape([n for d in x.shape for n in (1, d)])
    return out.reshape([m * d for m, d in zip(reps, x.shape, strict=True)])


@register_kernel("Where", cost=first_input_cost(NS_PER_FOUND))
def where(x: Array) -> Array:
    return np.argwhere(np.asarray(x)).astype(np.int64)


@register_kernel("ConcatV2", cost=input_elements)
def concat_v2(*inputs: Array) -> Array:
    *values, axis_t = inputs
    arrays = _strings_as_objects(values)
    if np.size(axis_t) != 1:
        raise _invalid(
            f"axis tensor should be a scalar integer, but got shape {_shape_str(axis_t)}"
        )
    axis = int(np.reshape(axis_t, -1)[0])
    first = arrays[0]
    rank = first.ndim
    if not -rank <= axis < rank:
        if rank == 0:
            raise _invalid("ConcatOp : Can't concatenate scalars (use tf.stack instead)")
        raise _invalid(
            f"ConcatOp : Expected concatenating dimensions in the range [{-rank}, {rank}), but "
            f"got {axis}"
        )
    axis %= rank
    for i, a in enumerate(arrays[1:], 1):
        if a.ndim != rank:
            raise _invalid(
                f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                f"{_shape_str(first)} vs. shape[{i}] = {_shape_str(a)}"
            )
        for d in range(rank):
            if d != axis and a.shape[d] != first.shape[d]:
                raise _invalid(
                    f"ConcatOp : Dimension {d} in both shapes must be equal: shape[0] = "
                    f"{_shape_str(first)} vs. shape[{i}] = {_shape_str(a)}"
                )
    return np.concatenate(arrays, axis=axis)


@register_kernel("Reshape")
def reshape(tensor: Array, shape: Array) -> Array:
    tensor = np.asarray(tensor)
    if np.ndim(shape) != 1:
        raise _invalid(f"sizes input must be 1-D, not {_shape_str(shape)}")
    target = [int(d) for d in np.asarray(shape).tolist()]
    unknown = -1
    product = 1
    for i, d in enumerate(target):
        if d == -1:
            if unknown != -1:
                raise _invalid(f"Only one input size may be -1, not both {unknown} and {i}")
            unknown = i
        elif d < 0:
            raise _invalid(f"Size {i} must be non-negative, not {d}")
        elif d > 0:
            product *= d
    n = tensor.size
    if unknown != -1:
        # TensorFlow's kernel: when the requested shape has a zero, the input's zero dims are
        # left out of its count too, so the -1 still takes the size of the others ((0, 3) to
        # [-1, 0] is (3, 0)); ``product`` leaves out the zeros asked for.
        counted = [d for d in tensor.shape if d > 0 or 0 not in target]
        count = math.prod(counted)
        if len(counted) == tensor.ndim and count % product:
            raise _invalid(
                f"Input to reshape is a tensor with {n} values, but the requested shape "
                f"requires a multiple of {product}"
            )
        target[unknown] = count // product
    if math.prod(target) != n:
        raise _invalid(
            f"Input to reshape is a tensor with {n} values, but the requested shape has "
            f"{math.prod(target)}"
        )
    return tensor.reshape(target)


@register_kernel("Transpose", cost=first_input_cost(NS_PER_PERMUTED))
def transpose(x: Array, perm: Array) -> Array:
    x = np.asarray(x)
    if np.ndim(perm) != 1:
        raise _invalid(f"perm must be a vector, not {_shape_str(perm)}")
    p = [int(v) for v in np.asarray(perm).tolist()]
    if len(p) != x.ndim:
        raise _invalid(
            f"transpose expects a vector of size {x.ndim}. But input(1) is a vector of size "
            f"{len(p)}"
        )
    for d in p:
        if not 0 <= d < x.ndim:
            raise _invalid(f"{d} is out of range [0 .. {x.ndim})")
    for i in range(x.ndim):
        if i not in p:
            raise _invalid(f"{i} is missing from {{{','.join(map(str, p))}}}.")
    return np.array(np.transpose(x, p), order="C")  # not ascontiguousarray: a scalar stays 0-d


# ----------------------------------------------------------------------------------------------
# Padding, one-hot, n-d gathering, splitting
# ----------------------------------------------------------------------------------------------


def _paddings(x: Array, paddings: Array, max_rank: int, sep: str) -> list[tuple[int, int]]:
    """``paddings`` as (before, after) per dimension of ``x``, checked as TensorFlow's Pad ops do."""
    if not 0 <= x.ndim <= max_rank:
        raise errors.UnimplementedError(None, None, f"inputs rank not in [0,{max_rank}]: {x.ndim}")
    if np.ndim(paddings) != 2 or np.shape(paddings)[1] != 2:
        raise _invalid(f"paddings must be a matrix with 2 columns: {_shape_str(paddings)}")
    if np.shape(paddings)[0] != x.ndim:
        raise _invalid(
            "The first dimension of paddings must be the rank of inputs"
            f"{_shape_str(paddings)}{sep}{_shape_str(x)}"
        )
    return [(int(a), int(b)) for a, b in np.asarray(paddings).tolist()]


def _pad_constant(x: Array, paddings: Array, value: Array | None) -> Array:
    x = np.asarray(x)
    pads = _paddings(x, paddings, 8, " ")
    if value is not None and np.ndim(value) != 0:
        raise _invalid(f"constant_values must be a scalar. Found: {_shape_str(value)}")
    for a, b in pads:
        if a < 0 or b < 0:
            raise _invalid(f"Paddings must be non-negative: {a} {b}")
    fill: Any = np.asarray(value)[()] if value is not None else (b"" if x.dtype.kind == "O" else 0)
    out = np.full([a + d + b for (a, b), d in zip(pads, x.shape, strict=True)], fill, x.dtype)
    out[tuple(slice(a, a + d) for (a, _), d in zip(pads, x.shape, strict=True))] = x
    return out


@register_kernel("Pad", cost=costs.pad_cost)
def pad(x: Array, paddings: Array) -> Array:
    return _pad_constant(x, paddings, None)


@register_kernel("PadV2", cost=costs.pad_cost)
def pad_v2(x: Array, paddings: Array, constant_values: Array) -> Array:
    return _pad_constant(x, paddings, constant_values)


@register_kernel("MirrorPad", cost=costs.pad_cost)
def mirror_pad(x: Array, paddings: Array, *, mode: bytes) -> Array:
    """REFLECT mirrors without the edge (pads < size), SYMMETRIC with it (pads <= size)."""
    x = np.asarray(x)
    pads = _paddings(x, paddings, 5, ", ")
    reflect = mode == b"REFLECT"
    for (a, b), size in zip(pads, x.shape, strict=True):
        if a < 0 or b < 0:
            raise _invalid(f"paddings must be non-negative: {a} {b}")
        if reflect and not (a < size and b < size):
            raise _invalid(
                f"paddings must be less than the dimension size: {a}, {b} not less than {size}"
            )
        if not reflect and not (a <= size and b <= size):
            raise _invalid(
                f"paddings must be no greater than the dimension size: {a}, {b} greater than {size}"
            )
    if not any(a or b for a, b in pads):
        return x
    return np.pad(x, pads, mode="reflect" if reflect else "symmetric")


@register_kernel("OneHot", cost=costs.one_hot_cost)
def one_hot(indices: Array, depth: Array, on_value: Array, off_value: Array, *, axis: int) -> Array:
    """``on_value`` where an index equals the position along ``axis``: out-of-range indices
    (negative ones too) give all-``off_value`` rows."""
    indices = np.asarray(indices)
    rank = indices.ndim + 1
    if not (axis == -1 or 0 <= axis < rank):
        raise _invalid(f"Expected axis to be -1 or between [0, {rank}).  But received: {axis}")
    for name, v in (("depth", depth), ("on_value", on_value), ("off_value", off_value)):
        if np.ndim(v) != 0:
            raise _invalid(f"{name} must be a scalar, but got: {_shape_str(v)}")
    d = int(depth)
    if d < 0:
        raise _invalid(f"depth must be non-negative, got: {d}")
    hot = indices[..., np.newaxis] == np.arange(d)
    out = np.where(hot, np.asarray(on_value), np.asarray(off_value))
    return out if axis in (-1, rank - 1) else np.ascontiguousarray(np.moveaxis(out, -1, axis))


@register_kernel("GatherNd", cost=costs.gather_nd_cost)
def gather_nd(params: Array, indices: Array, *, node: KernelNode) -> Array:
    """The slices of ``params`` at the index vectors in ``indices``' last dimension."""
    params, indices = np.asarray(params), np.asarray(indices)
    if params.ndim < 1:
        raise _invalid("params must be at least a vector")
    if indices.ndim < 1:
        raise _invalid("indices must be at least a vector")
    depth = indices.shape[-1]
    if depth > params.ndim:
        raise _invalid(
            "index innermost dimension length must be <= params rank; saw: "
            f"{depth} vs. {params.ndim}"
        )
    batch = indices.shape[:-1]
    out_shape = (*batch, *params.shape[depth:])
    n = int(np.prod(batch, dtype=np.int64))
    if n == 0:
        return np.empty(out_shape, params.dtype)
    if params.size == 0:
        raise _invalid(
            "Requested more than 0 entries, but params is empty.  Params shape: "
            f"{_shape_str(params)}"
        )
    flat = indices.reshape(n, depth).astype(np.int64)
    bad = np.any((flat < 0) | (flat >= np.asarray(params.shape[:depth], np.int64)), axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        where = "" if not batch else _dims_str(np.unravel_index(i, batch))
        raise _invalid(
            f"indices{where} = [{', '.join(str(v) for v in flat[i].tolist())}] does not index "
            f"into param shape {_shape_str(params)}, node name: {node.name}"
        )
    if depth == 0:
        return np.array(np.broadcast_to(params, out_shape))
    return params[tuple(flat.T)].reshape(out_shape)


def _split_axis(split_dim: int, rank: int) -> int:
    axis = split_dim + rank if split_dim < 0 else split_dim
    if not 0 <= axis < rank:
        raise _invalid(
            f"-input rank(-{rank}) <= split_dim < input rank ({rank}), but got {split_dim}"
        )
    return axis


def _parts(value: Array, sizes: list[int], axis: int) -> tuple[Array, ...]:
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.ascontiguousarray(p) for p in np.split(value, bounds, axis=axis))


@register_kernel("Split", cost=input_elements)
def split(split_dim: Array, value: Array, *, num_split: int) -> Any:
    if np.ndim(split_dim) != 0:
        raise _invalid(f"split_dim must be a scalar but has rank {np.ndim(split_dim)}")
    value = np.asarray(value)
    axis = _split_axis(int(split_dim), value.ndim)
    size = value.shape[axis]
    if size % num_split:
        raise _invalid(
            "Number of ways to split should evenly divide the split dimension, but got split_dim "
            f"{axis} (size = {size}) and num_split {num_split}"
        )
    return value if num_split == 1 else _parts(value, [size // num_split] * num_split, axis)


@register_kernel("SplitV", cost=input_elements)
def split_v(value: Array, size_splits: Array, split_dim: Array, *, num_split: int) -> Any:
    if np.size(split_dim) != 1:
        raise _invalid("split_dim_tensor must have exactly one element.")
    value = np.asarray(value)
    given = int(np.reshape(split_dim, -1)[0])
    if np.ndim(size_splits) != 1 or np.size(size_splits) != num_split:
        raise _invalid(
            "size of the split_tensor must be 1-D and have the same elements as outputs got "
            f"{np.ndim(size_splits)} -D and {np.size(size_splits)} elements"
        )
    axis = _split_axis(given, value.ndim)
    if num_split == 1:  # TensorFlow passes the input through, whatever the size given
        return value
    return _parts(
        value, _split_v_sizes(_vector(size_splits, "size_splits"), value.shape[axis]), axis
    )


def _split_v_sizes(sizes: list[int], size: int) -> list[int]:
    """``sizes`` with its one -1 inferred, checked against the split dimension's ``size``."""
    if sizes.count(-1) > 1:
        raise _invalid("There can only be one -1 in the input.")
    determined = sum(s for s in sizes if s != -1)
    if not (determined == size if -1 not in sizes else determined <= size):
        raise _invalid(
            "Determined shape must either match input shape along split_dim exactly if fully "
            "specified, or be less than the size of the input along split_dim if not fully "
            f"specified.  Got: {determined}"
        )
    sizes = [size - determined if s == -1 else s for s in sizes]
    for i, s in enumerate(sizes):
        if s < 0:
            raise _invalid(f"Split size at index {i} must be >= 0. Got: {s}")
    return sizes


@register_kernel("ShapeN")
def shape_n(*inputs: Array, out_type: Any) -> Any:
    return _several(tuple(np.asarray(np.shape(x), dtype=out_type.np_dtype) for x in inputs))


# ----------------------------------------------------------------------------------------------
# SpaceToBatchND / BatchToSpaceND
# ----------------------------------------------------------------------------------------------

_MAX_BLOCK_DIMS = 4  # TensorFlow's kMaxSpaceToBatchBlockDims
_SPACE_BATCH_TYPES = (
    dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int16,
    dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64,
)  # fmt: skip


def _block_args(
    x: Array, block_shape: Array, pairs: Array, what: str
) -> tuple[list[int], list[tuple[int, int]]]:
    """``(block, [(start, end)...])`` checked as TensorFlow's SpaceToBatch/BatchToSpace do."""
    if np.ndim(block_shape) != 1:
        raise _invalid(f"block_shape rank should be 1 instead of {np.ndim(block_shape)}")
    m = np.shape(block_shape)[0]
    if x.ndim < 1 + m:
        raise _invalid(f"input rank should be >= {1 + m} instead of {x.ndim}")
    if np.shape(pairs) != (m, 2):
        raise _invalid(f"{what} should have shape [{m}, 2] instead of {_shape_str(pairs)}")
    block = [int(b) for b in np.asarray(block_shape).tolist()]
    return block, [(int(a), int(b)) for a, b in np.asarray(pairs).tolist()]


def _internal_dims(block: list[int], pairs: list[tuple[int, int]]) -> range:
    """The block dims TensorFlow really moves: leading and trailing ones of block size 1 with
    nothing to pad or crop are left alone (and go unchecked)."""
    idle = [b == 1 and p == (0, 0) for b, p in zip(block, pairs, strict=True)]
    first = next((i for i, v in enumerate(idle) if not v), len(block))
    last = next((i for i in range(len(block) - 1, first - 1, -1) if not idle[i]), first - 1)
    if last + 1 - first > _MAX_BLOCK_DIMS:
        raise _invalid(
            f"Maximum number of non-combined block dimensions is {last + 1 - first} but must "
            f"not exceed {_MAX_BLOCK_DIMS}"
        )
    return range(first, last + 1)


@register_kernel(
    "SpaceToBatchND", types={"T": _SPACE_BATCH_TYPES}, cost=first_input_cost(NS_PER_PERMUTED)
)
def space_to_batch_nd(x: Array, block_shape: Array, paddings: Array) -> Array:
    """Pad the spatial dims 1..M, then move each block's offsets into the batch (outermost)."""
    x = np.asarray(x)
    block, pads = _block_args(x, block_shape, paddings, "paddings")
    for i, b in enumerate(block):
        if b < 1:
            raise _invalid(
                f"All values in block_shape must be positive, got value, {b} at index {i}."
            )
    dims = _internal_dims(block, pads)
    if not dims:
        return x
    m = len(block)
    for i in dims:
        start, end = pads[i]
        if start < 0 or end < 0:
            raise _invalid("Paddings must be non-negative")
        padded = x.shape[i + 1] + start + end
        if padded % block[i]:
            raise _invalid(
                f"padded_shape[{i}]={padded} is not divisible by block_shape[{i}]={block[i]}"
            )
    xp = np.pad(x, [(0, 0), *pads, *[(0, 0)] * (x.ndim - 1 - m)])
    split = [xp.shape[0]]
    for i in range(m):
        split += [xp.shape[i + 1] // block[i], block[i]]
    rest = list(xp.shape[m + 1 :])
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    order += list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    moved = xp.reshape(split + rest).transpose(order)
    outer = xp.shape[0] * math.prod(block)
    return np.ascontiguousarray(moved).reshape([outer, *split[1::2], *rest])


@register_kernel(
    "BatchToSpaceND", types={"T": _SPACE_BATCH_TYPES}, cost=first_input_cost(NS_PER_PERMUTED)
)
def batch_to_space_nd(x: Array, block_shape: Array, crops: Array) -> Array:
    """The inverse of SpaceToBatchND: the batch's block offsets back into the spatial dims 1..M,
    then cropped."""
    x = np.asarray(x)
    block, cuts = _block_args(x, block_shape, crops, "crops")
    blocks = math.prod(block)
    if blocks <= 0:
        raise _invalid(f"Product of block sizes must be positive, got {blocks}")
    if x.shape[0] % blocks:
        raise _invalid(
            f"Input batch dimension ({x.shape[0]}) is not divisible by product of block sizes "
            f"({blocks})"
        )
    dims = _internal_dims(block, cuts)
    if not dims:
        return x
    m = len(block)
    for i in dims:
        start, end = cuts[i]
        if start < 0 or end < 0:
            raise _invalid("Crops must be non-negative")
        if block[i] < 1:  # a negative pair multiplies to a positive product: unchecked in TF
            raise _invalid(f"Product of block sizes must be positive, got {block[i]}")
        if x.shape[i + 1] * block[i] - start - end < 0:
            raise _invalid(
                f"cropped_shape[{i}]={x.shape[i + 1] * block[i] - start - end} must be non-negative"
            )
    batch = x.shape[0] // blocks
    spatial = list(x.shape[1 : m + 1])
    rest = list(x.shape[m + 1 :])
    unfolded = x.reshape([*block, batch, *spatial, *rest])
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    joined = unfolded.transpose(order).reshape(
        [batch, *(s * b for s, b in zip(spatial, block, strict=True)), *rest]
    )
    index = tuple(slice(a, joined.shape[i + 1] - b) for i, (a, b) in enumerate(cuts))
    return np.ascontiguousarray(joined[(slice(None), *index)])
