"""Array building functions: constants and placeholders, shapes, joining and splitting,
gathering, slicing, padding, filling, one-hot — with ``tf.compat.v1``'s names, defaults and nodes (``tf.shape`` of a fully known
shape is a Const named ``Shape``; ``tf.zeros`` of a small shape is one Const named ``zeros``).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from aiotf.framework import dtypes, tensor_util
from aiotf.framework.ops import Tensor, constant_value, convert_to_tensor, get_default_graph
from aiotf.framework.tensor_shape import TensorShape, as_shape
from aiotf.ops import math_ops  # noqa: F401 - installs the Tensor operators used here
from aiotf.ops.op_helper import apply_op, convert, refine_shapes


def constant(
    value: Any,
    dtype: Any = None,
    shape: Any = None,
    name: str = "Const",
    verify_shape: bool = False,
) -> Tensor:
    """A Const node holding ``value`` (converted to ``dtype``, broadcast or reshaped to ``shape``,
    fewer values padded with the last, as ``tf.compat.v1.constant``; ``verify_shape``: the
    value must have ``shape`` itself)."""
    dt = dtypes.as_dtype(dtype) if dtype is not None else None
    proto = tensor_util.make_tensor_proto(value, dt, shape, verify_shape=verify_shape)
    out_dtype = dtypes.as_dtype(proto.dtype)
    op = get_default_graph().create_op("Const", [], {"value": proto, "dtype": out_dtype}, name=name)
    return op.outputs[0]


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """A value that must be fed at run time; ``shape`` None means any shape."""
    try:
        known = as_shape(shape)
    except (TypeError, ValueError) as e:  # TensorFlow's words for an attr that is no shape
        raise type(e)(f"Error converting shape to a TensorShape: {e}.") from None
    attrs = {"dtype": dtypes.as_dtype(dtype), "shape": known}
    return (
        get_default_graph()
        .create_op("Placeholder", [], attrs, name=name or "Placeholder")
        .outputs[0]
    )


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """``input`` unless a value is fed; a fed value must fit ``shape``."""
    attrs = {"shape": as_shape(shape)}  # a Python default becomes 'PlaceholderWithDefault/input'
    return apply_op("PlaceholderWithDefault", [input], attrs, name).outputs[0]


def identity(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return apply_op("Identity", [input], name=name).outputs[0]


def _shape_as_tensor(shape: TensorShape, name: str = "shape_as_tensor") -> Tensor:
    """A fully defined shape as an int32 Const (int64 when a dimension needs it)."""
    dims = [int(d) for d in shape.as_list() if d is not None]
    dtype = dtypes.int64 if any(d >= 2**31 for d in dims) else dtypes.int32
    return constant(dims, dtype=dtype, name=name)


def _scope(name: str | None, default: str) -> Any:
    return get_default_graph().name_scope(name or default)


# -- shapes -------------------------------------------------------------------------------------
def shape(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:  # noqa: A002
    """The shape of ``input`` as a 1-D tensor: a Const when it is fully known while building."""
    with _scope(name, "Shape") as scope:
        value = convert(input)
        dtype = dtypes.as_dtype(out_type)
        if value.shape.is_fully_defined():
            return constant(value.shape.as_list(), dtype=dtype, name=scope)
        return apply_op("Shape", [value], {"out_type": dtype}, name=scope).outputs[0]


def size(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:  # noqa: A002
    """The number of elements of ``input``: a Const when known while building."""
    with _scope(name, "Size") as scope:
        value = convert(input)
        dtype = dtypes.as_dtype(out_type)
        known = value.shape.num_elements() if value.shape.is_fully_defined() else None
        if known is None and value.shape.rank and 0 in value.shape.as_list():
            known = 0
        if known is not None:
            return constant(known, dtype=dtype, name=scope)
        return apply_op("Size", [value], {"out_type": dtype}, name=scope).outputs[0]


def rank(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The number of dimensions of ``input``: a Const when known while building."""
    with _scope(name, "Rank") as scope:
        value = convert(input)
        if value.shape.rank is not None:
            return constant(value.shape.rank, dtype=dtypes.int32, name=scope)
        return apply_op("Rank", [value], name=scope).outputs[0]


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    return apply_op("Reshape", [tensor, shape], name=name or "Reshape").outputs[0]


def transpose(a: Any, perm: Any = None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """``a`` with its axes permuted by ``perm`` (reversed when None)."""
    with _scope(name, "transpose") as scope:
        a = convert(a, name="a")
        if perm is None:
            r = a.shape.rank
            if r is None:
                perm = apply_op("Range", [rank(a) - 1, -1, -1]).outputs[0]
            else:
                perm = np.arange(r - 1, -1, -1, dtype=np.int32)
        return apply_op("Transpose", [a, perm], name=scope).outputs[0]


def expand_dims(
    input: Any,  # noqa: A002
    axis: Any = None,
    name: str | None = None,
    dim: Any = None,
) -> Tensor:
    """``input`` with a new axis of size 1 inserted at ``axis``."""
    if axis is None:
        axis = dim
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return apply_op("ExpandDims", [input, axis], name=name or "ExpandDims").outputs[0]


def squeeze(
    input: Any,  # noqa: A002
    axis: Any = None,
    name: str | None = None,
    squeeze_dims: Any = None,
) -> Tensor:
    """``input`` without its size-1 axes (only those in ``axis`` when given)."""
    if axis is None:
        axis = squeeze_dims
    if axis is None:
        axis = []
    elif np.isscalar(axis):
        axis = [axis]
    attrs = {"squeeze_dims": [int(a) for a in axis]}
    return apply_op("Squeeze", [input], attrs, name=name or "Squeeze").outputs[0]


# -- joining and splitting ----------------------------------------------------------------------
def concat(values: Any, axis: Any, name: str = "concat") -> Tensor:
    """``values`` joined along ``axis``; one value is returned through an Identity."""
    if not isinstance(values, list | tuple):
        values = [values]
    if len(values) == 1:
        with _scope(name, "concat") as scope:
            dim = convert_to_tensor(axis, dtype=dtypes.int32, name="concat_dim")
            if dim.shape.rank not in (None, 0):
                raise ValueError(f"Shape {dim.shape} must have rank 0")
            del scope
            return identity(values[0], name=name or "concat")
    return apply_op("ConcatV2", [list(values), axis], name=name or "concat").outputs[0]


def stack(values: Sequence[Any], axis: int = 0, name: str = "stack") -> Tensor:
    """``values`` (of one shape) stacked along a new axis ``axis``."""
    if axis == 0:
        return convert(list(values), name=name)
    first = convert_to_tensor(values[0], name=name)
    if first.shape.rank is not None:
        expanded = first.shape.rank + 1
        if not -expanded <= axis < expanded:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-expanded}, {expanded})")
    return apply_op("Pack", [list(values)], {"axis": axis}, name=name).outputs[0]


def unstack(
    value: Any, num: int | None = None, axis: int = 0, name: str = "unstack"
) -> list[Tensor]:
    """The slices of ``value`` along ``axis``, as a list of ``num`` tensors."""
    with _scope(name, "unstack") as scope:
        value = convert_to_tensor(value)
        if num is None:
            if value.shape.rank is None:
                raise ValueError(f"Cannot infer argument `num` from shape {value.shape}")
            num = value.shape.as_list()[axis]
            if num is None:
                raise ValueError(f"Cannot infer argument `num` from shape {value.shape}")
        attrs = {"num": num, "axis": axis}
        return list(apply_op("Unpack", [value], attrs, name=scope).outputs)


# -- gathering and slicing ----------------------------------------------------------------------
def gather(
    params: Any,
    indices: Any,
    validate_indices: Any = None,
    name: str | None = None,
    axis: Any = None,
    batch_dims: int = 0,
) -> Tensor:
    """The slices of ``params`` at ``indices`` along ``axis`` (a ``GatherV2``)."""
    if axis is None:
        axis = batch_dims
    attrs = {"batch_dims": batch_dims}
    return apply_op("GatherV2", [params, indices, axis], attrs, name=name or "GatherV2").outputs[0]


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """``size`` elements of ``input_`` from ``begin`` in each axis (-1: all the rest)."""
    return apply_op("Slice", [input_, begin, size], name=name or "Slice").outputs[0]


def strided_slice(
    input_: Any,
    begin: Any,
    end: Any,
    strides: Any = None,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
    var: Any = None,
    name: str | None = None,
) -> Tensor:
    """NumPy-style basic slicing with the masks of TensorFlow's ``StridedSlice``."""
    ones = None
    if strides is None:
        strides = ones_like(begin)
        begin_value = constant_value(strides.op.inputs[0]) if strides.op.inputs else None
        if begin_value is not None:  # the Fill of ones_like: its shape is begin's
            ones = np.ones(begin_value, dtype=strides.dtype.np_dtype)
    attrs = {
        "begin_mask": begin_mask,
        "end_mask": end_mask,
        "ellipsis_mask": ellipsis_mask,
        "new_axis_mask": new_axis_mask,
        "shrink_axis_mask": shrink_axis_mask,
    }
    inputs = [input_, begin, end, strides]
    op = apply_op("StridedSlice", inputs, attrs, name=name or "StridedSlice")
    if ones is not None:
        refine_shapes(op, {3: ones})
    return op.outputs[0]


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return apply_op("Tile", [input, multiples], name=name or "Tile").outputs[0]


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """``tensor`` with the axes in ``axis`` reversed (a ``ReverseV2``)."""
    return apply_op("ReverseV2", [tensor, axis], name=name or "ReverseV2").outputs[0]


reverse_v2 = reverse


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return apply_op("BroadcastTo", [input, shape], name=name or "BroadcastTo").outputs[0]


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """The coordinates where ``condition`` is true, or ``x``/``y`` chosen by it (``Select``)."""
    if x is None and y is None:
        with _scope(name, "Where") as scope:
            cond = convert_to_tensor(condition, name="condition")
            return apply_op("Where", [cond], name=scope).outputs[0]
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return apply_op("Select", [condition, x, y], name=name or "Select").outputs[0]


def where_v2(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """``where`` with broadcasting of ``condition``, ``x`` and ``y`` (``SelectV2``)."""
    if x is None and y is None:
        return where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return apply_op("SelectV2", [condition, x, y], name=name or "SelectV2").outputs[0]


# -- filling ------------------------------------------------------------------------------------
def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape ``dims`` holding ``value`` everywhere."""
    return apply_op("Fill", [dims, value], name=name or "Fill").outputs[0]


def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """Zeros of ``shape``: a Const when small (< 1000 elements), else a ``Fill``."""
    return _filled(shape, dtype, name, "zeros", one=False)


def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """Ones of ``shape``: a Const when small (< 1000 elements), else a ``Fill``."""
    return _filled(shape, dtype, name, "ones", one=True)


def _filled(shape: Any, dtype: Any, name: str | None, default: str, one: bool) -> Tensor:
    dt = dtypes.as_dtype(dtype).base_dtype
    if dt is dtypes.bool:
        value: Any = one
    elif dt is dtypes.string:
        value = "" if not one else "1"
    else:
        value = 1 if one else 0
    with _scope(name, default) as scope:
        if not isinstance(shape, Tensor):
            known = _static_dims(shape)
            if known is not None and np.ndim(shape) > 0 and int(np.prod(known)) < 1000:
                return constant(value, dtype=dt, shape=known, name=scope)
            if known is not None:
                shape = _shape_as_tensor(TensorShape(known))
            else:
                shape = convert(shape, dtype=dtypes.int32)
        if not shape.shape.rank:  # a scalar, or of unknown rank: make it a vector
            shape = reshape(shape, [-1])
        return fill(shape, constant(value, dtype=dt), name=scope)


def _static_dims(shape: Any) -> list[int] | None:
    """``shape`` as a list of ints when it holds no tensors and no unknown dimensions."""
    if isinstance(shape, TensorShape):
        return [int(d) for d in shape.as_list()] if shape.is_fully_defined() else None  # type: ignore[arg-type]
    try:
        arr = np.asarray(shape)
    except (TypeError, ValueError, NotImplementedError):  # NotImplementedError: holds a Tensor
        return None
    if arr.ndim == 1 and arr.size == 0:
        return []
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        return None
    return [int(d) for d in arr.reshape(-1)]


def zeros_like(
    tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """Zeros of ``tensor``'s shape: a Const when its shape is known, else a ``ZerosLike``."""
    with _scope(name, "zeros_like") as scope:
        value = tensor if isinstance(tensor, Tensor) else convert(tensor, name="tensor")
        dt = dtypes.as_dtype(dtype).base_dtype if dtype is not None else value.dtype.base_dtype
        if optimize and value.shape.is_fully_defined() and dt is not dtypes.variant:
            return zeros(value.shape, dtype=dt, name=scope)
        if dt is not value.dtype.base_dtype:
            return zeros(_shape_internal(value, optimize), dtype=dt, name=scope)
        return apply_op("ZerosLike", [value], name=scope).outputs[0]


def ones_like(
    tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """Ones of ``tensor``'s shape (always a ``Fill``, as TensorFlow builds it)."""
    with _scope(name, "ones_like") as scope:
        value = convert(tensor, name="tensor")
        dims = _shape_internal(value, optimize)
        dt = dtypes.as_dtype(dtype).base_dtype if dtype is not None else value.dtype.base_dtype
        out = ones(dims, dtype=dt, name=scope)
        out.set_shape(value.shape)
        return out


def _shape_internal(value: Tensor, optimize: bool) -> Tensor:
    """TensorFlow's ``shape_internal`` without ``out_type``: a Const when the shape is known."""
    with _scope(None, "Shape") as scope:
        if optimize and value.shape.is_fully_defined():
            return _shape_as_tensor(value.shape)
        return apply_op("Shape", [value], name=scope).outputs[0]


def stop_gradient(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return apply_op("StopGradient", [input], name=name or "StopGradient").outputs[0]


def identity_n(input: Any, name: str | None = None) -> list[Tensor]:  # noqa: A002
    return list(apply_op("IdentityN", [list(input)], name=name or "IdentityN").outputs)


# -- splitting, padding, n-d gathering, one-hot ---------------------------------------------------
def split(
    value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None, name: str = "split"
) -> list[Tensor]:
    """``value`` cut along ``axis`` into ``num_or_size_splits`` equal parts (a ``Split``), or into
    parts of the sizes it lists, one -1 taking the rest (a ``SplitV``)."""
    if isinstance(num_or_size_splits, numbers.Integral):
        attrs = {"num_split": int(num_or_size_splits)}
        return list(apply_op("Split", [axis, value], attrs, name=name).outputs)
    size_splits = convert_to_tensor(num_or_size_splits)
    if size_splits.shape.rank == 0:
        raise ValueError(
            "Rank-0 tensors are not supported as the num_or_size_splits argument to split. "
            f"Argument provided: {num_or_size_splits}"
        )
    if num is None:
        known = size_splits.shape.as_list() if size_splits.shape.rank else [None]
        if known[0] is None:
            raise ValueError(f"Cannot infer argument `num` from shape {num_or_size_splits}")
        num = known[0]
    inputs = [value, size_splits, axis]
    return list(apply_op("SplitV", inputs, {"num_split": num}, name=name).outputs)


def shape_n(input: Any, out_type: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:  # noqa: A002
    """The shapes of the tensors in ``input``, as one ``ShapeN`` node."""
    if not isinstance(input, list | tuple):
        raise TypeError(f"Expected list for 'input' argument to 'shape_n' Op, not {input!r}.")
    attrs = {"out_type": dtypes.as_dtype(out_type)}
    return list(apply_op("ShapeN", [list(input)], attrs, name=name or "ShapeN").outputs)


def pad(
    tensor: Any,
    paddings: Any,
    mode: str = "CONSTANT",
    name: str | None = None,
    constant_values: Any = 0,
) -> Tensor:
    """``tensor`` grown by ``paddings`` ([rank, 2]: before and after each axis) of
    ``constant_values`` (a ``Pad`` for 0, else a ``PadV2``) or mirrored values (``MirrorPad``)."""
    mode = mode.upper()
    if mode == "CONSTANT":
        if _is_python_zero(constant_values):
            op = apply_op("Pad", [tensor, paddings], name=name or "Pad")
        else:
            op = apply_op("PadV2", [tensor, paddings, constant_values], name=name or "PadV2")
    elif mode in ("REFLECT", "SYMMETRIC"):
        attrs = {"mode": mode.encode()}
        op = apply_op("MirrorPad", [tensor, paddings], attrs, name=name or "MirrorPad")
    else:
        raise ValueError(
            'Value of argument `mode` expected to be one of "CONSTANT", "REFLECT", or '
            f'"SYMMETRIC". Received `mode` = {mode}'
        )
    out = op.outputs[0]
    input_shape = tensor.shape if isinstance(tensor, Tensor) else op.inputs[0].shape
    known = _partial_value(paddings)
    if input_shape.rank is not None and not out.shape.is_fully_defined() and known is not None:
        out.set_shape(_padded_dims(input_shape, known))
    return out


def _is_python_zero(value: Any) -> bool:
    return (
        not isinstance(value, Tensor)
        and np.ndim(value) == 0
        and bool(value == np.zeros_like(value))
    )


def _partial_value(value: Any) -> Any:
    """What is known of ``value`` while building: nested lists with None where a value is not
    (TensorFlow's ``constant_value(partial=True)`` seen through autopacked lists)."""
    if isinstance(value, Tensor):
        known = constant_value(value)
        if known is not None:
            return known.tolist()
        if value.op.type == "Pack" and value.op.get_attr("axis") == 0 and value.op.inputs:
            return [_partial_value(t) for t in value.op.inputs]
        return None
    if isinstance(value, list | tuple):
        return [_partial_value(v) for v in value]
    return value


def _padded_dims(shape: TensorShape, paddings: Any) -> list[int | None]:
    """TensorFlow's ``pad`` restoring the shape its padded axes have when the paddings are known."""
    dims: list[int | None] = []
    for padding, dim in zip(paddings, shape.as_list(), strict=False):
        if padding is None or dim is None or any(p is None for p in padding):
            dims.append(None)
        else:
            dims.append(int(sum(padding)) + dim)
    return dims


def one_hot(
    indices: Any,
    depth: Any,
    on_value: Any = None,
    off_value: Any = None,
    axis: Any = None,
    dtype: Any = None,
    name: str | None = None,
) -> Tensor:
    """``on_value`` (1) where ``indices`` picks a position along a new ``depth`` axis, else
    ``off_value`` (0); indices outside ``[0, depth)`` give all-off rows."""
    with _scope(name, "one_hot") as scope:
        dt = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
        on = None if on_value is None else convert_to_tensor(on_value, preferred_dtype=dt)
        off = None if off_value is None else convert_to_tensor(off_value, preferred_dtype=dt)
        dt = _one_hot_dtype(on, off, dt)
        on = on if on is not None else convert_to_tensor(1, dt, name="on_value")
        off = off if off is not None else convert_to_tensor(0, dt, name="off_value")
        if on.dtype.base_dtype is not off.dtype.base_dtype:
            raise TypeError(
                f"dtype {on.dtype} of on_value does not match dtype {off.dtype} of off_value"
            )
        attrs = {"axis": -1 if axis is None else int(axis)}
        return apply_op("OneHot", [indices, depth, on, off], attrs, name=scope).outputs[0]


def _one_hot_dtype(on: Tensor | None, off: Tensor | None, dtype: dtypes.DType | None) -> Any:
    """The output dtype: ``dtype``, else the given on/off value's, else float32."""
    for value, what in ((on, "on_value"), (off, "off_value")):
        if value is not None and dtype is not None and value.dtype.base_dtype is not dtype:
            raise TypeError(f"dtype {value.dtype} of {what} does not match dtype parameter {dtype}")
    given = on if on is not None else off
    if dtype is None and given is not None:
        return given.dtype.base_dtype
    return dtype or dtypes.float32


def gather_nd(params: Any, indices: Any, name: str | None = None, batch_dims: Any = 0) -> Tensor:
    """The slices of ``params`` that the vectors in ``indices``' last axis point at; the first
    ``batch_dims`` axes of both are batch axes (built from ``GatherNd`` as TensorFlow does)."""
    known = constant_value(batch_dims) if isinstance(batch_dims, Tensor) else batch_dims
    if isinstance(known, numbers.Number | np.ndarray):
        batch_dims = int(known)  # type: ignore[arg-type]
    if isinstance(batch_dims, int) and batch_dims == 0:
        return apply_op("GatherNd", [params, indices], name=name or "GatherNd").outputs[0]
    return _batch_gather_nd(params, indices, batch_dims, name)


def _batch_gather_nd(params: Any, indices: Any, batch_dims: Any, name: str | None) -> Tensor:
    """TensorFlow's ``batch_gather_nd``: prepend each index vector's batch coordinates, gather
    from the batch-flattened params, and restore the batch axes."""
    with _scope(name, "BatchGatherND"):
        indices = convert_to_tensor(indices, name="indices")
        params = convert_to_tensor(params, name="params")
        _check_batch_dims(batch_dims, params, indices)
        params_shape, indices_shape = shape(params), shape(indices)
        batch_shape = params_shape[:batch_dims]
        batch_size = apply_op("Prod", [batch_shape, [0]]).outputs[0]
        index_internal_ndims = rank(indices) - batch_dims - 1
        indices_internal_shape = indices_shape[batch_dims:-1]
        index_grid = _batch_coordinates(batch_shape, indices.dtype)
        grid_shape = shape(index_grid)
        grid_ones = [grid_shape[:1], ones(index_internal_ndims, grid_shape.dtype), grid_shape[1:]]
        index_grid = reshape(index_grid, concat(grid_ones, axis=0))
        index_grid = tile(index_grid, concat(((1,), indices_internal_shape, (1,)), axis=0))
        flat_shape = concat(([batch_size], indices_shape[batch_dims:]), axis=0)
        flat_indices = reshape(indices, flat_shape)
        full_indices = concat((index_grid, flat_indices), axis=-1)
        out = apply_op("GatherNd", [params, full_indices]).outputs[0]
        out = reshape(out, concat((batch_shape, shape(out)[1:]), axis=0))
        out.set_shape(_batch_gather_nd_shape(params.shape, indices.shape, batch_dims))
        return out


def _check_batch_dims(batch_dims: Any, params: Tensor, indices: Tensor) -> None:
    if not isinstance(batch_dims, int):
        raise TypeError(f"Argument `batch_dims` must be an int; got {batch_dims}")
    if batch_dims < 0:
        raise ValueError("tf.gather_nd does not allow negative batch_dims.")
    for what, r in (("indices", indices.shape.rank), ("params", params.shape.rank)):
        if r is not None and batch_dims >= r:
            raise ValueError(
                f"Argument `batch_dims` = {batch_dims} must be less than rank(`{what}`) = {r}"
            )


def _batch_coordinates(batch_shape: Tensor, dtype: dtypes.DType) -> Tensor:
    """[prod(batch_shape), len(batch_shape)]: every batch coordinate, row-major (a meshgrid)."""
    dims = unstack(batch_shape, axis=0)
    cast = {"DstT": dtypes.int32, "Truncate": False}
    ranges = [
        apply_op("Range", [0, apply_op("Cast", [d], cast).outputs[0], 1]).outputs[0] for d in dims
    ]
    ranges = [apply_op("Cast", [r], {"DstT": dtype, "Truncate": False}).outputs[0] for r in ranges]
    mesh = _meshgrid_ij(ranges)
    return transpose(stack([reshape(m, (-1,)) for m in mesh], axis=0))


def _meshgrid_ij(args: list[Tensor]) -> list[Tensor]:
    """TensorFlow's ``meshgrid(*args, indexing="ij")``."""
    with _scope(None, "meshgrid"):
        n = len(args)
        output = [reshape(x, (1,) * i + (-1,) + (1,) * (n - i - 1)) for i, x in enumerate(args)]
        shapes = [size(x) for x in args]
        mult_fact = ones(shapes, args[0].dtype.base_dtype)
        return [x * mult_fact for x in output]


def _batch_gather_nd_shape(params: TensorShape, indices: TensorShape, batch_dims: int) -> Any:
    if params.rank is None or indices.rank is None or indices[-1] is None:
        return TensorShape(None)
    p, i = params.as_list(), indices.as_list()
    return TensorShape([*p[:batch_dims], *i[batch_dims:-1], *p[batch_dims + int(indices[-1]) :]])


# -- space to batch -----------------------------------------------------------------------------
def space_to_batch_nd(
    input: Any,  # noqa: A002
    block_shape: Any,
    paddings: Any,
    name: str | None = None,
) -> Tensor:
    """``input``'s spatial dims 1..M padded by ``paddings`` and cut into ``block_shape`` blocks
    whose offsets move into the batch dimension."""
    inputs = [input, block_shape, paddings]
    return apply_op("SpaceToBatchND", inputs, name=name or "SpaceToBatchND").outputs[0]


def batch_to_space_nd(
    input: Any,  # noqa: A002
    block_shape: Any,
    crops: Any,
    name: str | None = None,
) -> Tensor:
    """The inverse of ``space_to_batch_nd``: batch blocks back into the spatial dims, then
    ``crops`` cut off their starts and ends."""
    inputs = [input, block_shape, crops]
    return apply_op("BatchToSpaceND", inputs, name=name or "BatchToSpaceND").outputs[0]


def required_space_to_batch_paddings(
    input_shape: Any, block_shape: Any, base_paddings: Any = None, name: str | None = None
) -> tuple[Any, Any]:
    """``(paddings, crops)`` that make ``block_shape`` divide ``input_shape`` padded at least by
    ``base_paddings``: numpy values when all three are known while building, else tensors
    (TensorFlow's nodes either way)."""
    with _scope(name, "required_space_to_batch_paddings"):
        input_shape = convert_to_tensor(input_shape, dtype=dtypes.int32, name="input_shape")
        block_shape = convert_to_tensor(block_shape, dtype=dtypes.int32, name="block_shape")
        if block_shape.shape.rank != 1 or not block_shape.shape.is_fully_defined():
            raise ValueError(f"Shape {block_shape.shape} must be fully defined and of rank 1")
        n = int(block_shape.shape[0])
        if n == 0:
            return zeros([0, 2], dtypes.int32), zeros([0, 2], dtypes.int32)
        if not input_shape.shape.is_compatible_with([n]):
            raise ValueError(f"Shapes {input_shape.shape} and ({n},) are incompatible")
        if base_paddings is None:
            base = zeros([n, 2], dtypes.int32)
        else:
            base = convert_to_tensor(base_paddings, dtype=dtypes.int32, name="base_paddings")
            if not base.shape.is_compatible_with([n, 2]):
                raise ValueError(f"Shapes {base.shape} and ({n}, 2) are incompatible")
        known = [constant_value(t) for t in (block_shape, input_shape, base)]
        block: Any = known[0] if all(v is not None for v in known) else block_shape
        size: Any = known[1] if all(v is not None for v in known) else input_shape
        pads: Any = known[2] if all(v is not None for v in known) else base
        pad_start, orig_pad_end = pads[:, 0], pads[:, 1]
        full = size + pad_start + orig_pad_end
        pad_end_extra = (block - full % block) % block
        pad_end = orig_pad_end + pad_end_extra
        paddings = stack([[pad_start[i], pad_end[i]] for i in range(n)], name="paddings")
        crops = stack([[0, pad_end_extra[i]] for i in range(n)], name="crops")
        return paddings, crops
