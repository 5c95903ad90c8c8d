"""Conversion between numpy arrays and ``TensorProto`` (both of TensorFlow's encodings)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from aiotf.framework import dtypes
from aiotf.framework.tensor_shape import TensorShape, as_shape
from aiotf.proto import TensorProto

# The repeated field TensorFlow uses for each dtype when values are not packed in tensor_content.
_VALUE_FIELD: dict[dtypes.DType, str] = {
    dtypes.float32: "float_val",
    dtypes.float64: "double_val",
    dtypes.int32: "int_val",
    dtypes.int16: "int_val",
    dtypes.int8: "int_val",
    dtypes.uint8: "int_val",
    dtypes.uint16: "int_val",
    dtypes.qint8: "int_val",
    dtypes.quint8: "int_val",
    dtypes.qint16: "int_val",
    dtypes.quint16: "int_val",
    dtypes.qint32: "int_val",
    dtypes.int64: "int64_val",
    dtypes.uint32: "uint32_val",
    dtypes.uint64: "uint64_val",
    dtypes.bool: "bool_val",
    dtypes.float16: "half_val",
    dtypes.bfloat16: "half_val",
    dtypes.complex64: "scomplex_val",
    dtypes.complex128: "dcomplex_val",
    dtypes.string: "string_val",
}


def make_ndarray(proto: Any) -> np.ndarray[Any, Any]:
    """The numpy array a ``TensorProto`` holds (a fresh, writable array)."""
    dtype = dtypes.as_dtype(proto.dtype).base_dtype
    shape = [d.size for d in proto.tensor_shape.dim]
    n = int(np.prod(shape, dtype=np.int64))
    if dtype is dtypes.string:
        strings = np.empty(n, dtype=object)
        strings[:] = _fill(list(proto.string_val), n, b"")
        return strings.reshape(shape)
    np_dtype = dtype.np_dtype
    if proto.tensor_content:
        return np.frombuffer(proto.tensor_content, dtype=np_dtype).copy().reshape(shape)
    field = _VALUE_FIELD.get(dtype)
    if field is None:
        raise TypeError(f"Unsupported tensor dtype {dtype.name} in TensorProto")
    raw: Any = getattr(proto, field)
    values: np.ndarray[Any, Any]
    if dtype in (dtypes.float16, dtypes.bfloat16):
        values = np.asarray(list(raw), dtype=np.uint16).view(np_dtype)
    elif dtype.is_complex:
        flat = np.asarray(list(raw), dtype=np_dtype.type(0).real.dtype)
        values = flat[0::2] + 1j * flat[1::2]
    else:
        values = np.asarray(list(raw), dtype=np_dtype)
    if values.size >= n:
        return values[:n].astype(np_dtype, copy=False).reshape(shape)
    out = np.empty(n, dtype=np_dtype)
    if values.size == 0:
        out[...] = 0
    else:
        out[: values.size] = values
        out[values.size :] = values[-1]
    return out.reshape(shape)


def _fill(values: list[Any], n: int, zero: Any) -> list[Any]:
    if len(values) >= n:
        return values[:n]
    last = values[-1] if values else zero
    return values + [last] * (n - len(values))


def make_tensor_proto(
    values: Any, dtype: Any = None, shape: Any = None, verify_shape: bool = False
) -> Any:
    """A ``TensorProto`` holding ``values`` (converted to ``dtype``, broadcast to ``shape``).

    Encoded as TensorFlow encodes it: several values of a fixed-width numeric type are packed in
    ``tensor_content``; a scalar, a single value broadcast to ``shape``, and bools, complex
    numbers, uint16 and strings go in the typed field (``float_val: 3.25``).
    """
    dt = dtypes.as_dtype(dtype) if dtype is not None else None
    arr = convert_to_ndarray(values, dt)
    dt = dt or dtypes.from_numpy(arr.dtype)
    dims = list(arr.shape) if shape is None else _target_dims(arr, shape, verify_shape)
    proto = TensorProto(tensor_shape=TensorShape(dims).as_proto())
    proto.dtype = dt.as_datatype_enum  # type: ignore[assignment]
    count = int(np.prod(dims, dtype=np.int64))
    if arr.size == count and count > 1 and dt in _CONTENT_TYPES:
        proto.tensor_content = np.ascontiguousarray(arr, dtype=dt.np_dtype).tobytes()
    elif dt is dtypes.string:
        proto.string_val.extend(_as_bytes(v) for v in arr.reshape(-1))
    elif arr.size:
        _append_values(proto, dt, np.asarray(arr, dtype=dt.np_dtype).reshape(-1))
    return proto


# The dtypes TensorFlow packs in tensor_content (``tensor_util._TENSOR_CONTENT_TYPES``).
_CONTENT_TYPES = frozenset(
    {
        dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
        dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
        dtypes.uint8, dtypes.uint32, dtypes.uint64,
        dtypes.qint8, dtypes.quint8, dtypes.qint16, dtypes.quint16, dtypes.qint32,
    }
)  # fmt: skip


def _target_dims(arr: np.ndarray[Any, Any], shape: Any, verify_shape: bool) -> list[int]:
    """The dims of ``shape``, checked against ``arr``: not more values than it holds (fewer are
    padded with the last, as ``tf.compat.v1.constant`` pads them)."""
    if isinstance(shape, list | tuple):  # TensorFlow's make_tensor_proto takes int(d) of each
        shape = [None if d is None else int(d) for d in shape]
    target = as_shape(shape)
    if not target.is_fully_defined():
        raise ValueError(f"Shape {target} must be fully defined to build a constant")
    dims = [int(d or 0) for d in target.as_list()]
    if verify_shape and list(arr.shape) != dims:
        raise TypeError(f"Expected Tensor's shape: {tuple(dims)}, but got {arr.shape}.")
    count = int(np.prod(dims, dtype=np.int64))
    if arr.size > count and arr.size != 1:
        raise ValueError(  # TensorFlow's make_tensor_proto words
            f"Too many elements provided. Takes at most {count}, but got {arr.size}."
        )
    # Fewer: tf.compat.v1.constant's last value fills the rest (the proto's own convention)
    return dims


def _append_values(proto: Any, dt: dtypes.DType, flat: np.ndarray[Any, Any]) -> None:
    """``flat`` into the typed repeated field of ``dt``, as TensorFlow's append functions write it."""
    field = getattr(proto, _VALUE_FIELD[dt])
    if dt in (dtypes.float16, dtypes.bfloat16):
        field.extend(flat.view(np.uint16).tolist())
    elif dt.is_complex:
        field.extend(np.stack([flat.real, flat.imag], axis=-1).reshape(-1).tolist())
    else:
        field.extend(flat.tolist())


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, np.bytes_):
        return bytes(value)
    raise TypeError(f"Expected bytes or str for a string tensor, got {type(value).__name__}")


def convert_to_ndarray(values: Any, dtype: dtypes.DType | None) -> np.ndarray[Any, Any]:
    """``values`` as an array of ``dtype`` (or the dtype TensorFlow infers), TF's conversion rules.

    Python floats become float32 and ints int32 when no dtype is given, as in TensorFlow; an
    explicit dtype accepts values that convert losslessly in kind (no float to int truncation).
    """
    if values is None:
        raise ValueError("None values not supported.")
    if dtype is not None and dtype.base_dtype is dtypes.string:
        return _to_string_array(values)
    arr = np.asarray(values)
    if arr.dtype.kind in "SUO":
        if dtype is None or dtype is dtypes.string:
            return _to_string_array(values)
        raise _incompatible(dtype, values, lambda v: isinstance(v, str | bytes))
    if dtype is None:
        return _default_array(values, arr)
    target = dtype.base_dtype.np_dtype
    if arr.size == 0 and not isinstance(values, np.ndarray | np.generic):
        return np.empty(arr.shape, target)  # an empty list holds no value to check: any dtype
    if arr.dtype == target:
        return arr
    _check_convertible(values, arr, dtype)
    return arr.astype(target)


def _default_array(values: Any, arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    if isinstance(values, np.ndarray | np.generic):
        return arr
    if arr.dtype == np.float64:
        return arr.astype(np.float32)
    if arr.dtype == np.int64:
        if arr.size and (arr.max() > np.iinfo(np.int32).max or arr.min() < np.iinfo(np.int32).min):
            return arr
        return arr.astype(np.int32)
    return arr


def _check_convertible(values: Any, arr: np.ndarray[Any, Any], dtype: dtypes.DType) -> None:
    base = dtype.base_dtype
    if arr.dtype.kind == "f" and (base.is_integer or base.is_bool):
        raise _incompatible(base, values, lambda v: isinstance(v, float | np.floating))
    if arr.dtype.kind == "c" and not base.is_complex:
        raise _incompatible(base, values, lambda v: isinstance(v, complex | np.complexfloating))
    if base.is_integer and arr.dtype.kind in "iu" and arr.size:
        info = np.iinfo(base.np_dtype)
        if arr.max() > info.max or arr.min() < info.min:
            raise ValueError(f"Value out of range for {base.name}: {_describe(values)}")


def _incompatible(dtype: dtypes.DType, values: Any, fails: Callable[[Any], bool]) -> TypeError:
    """TensorFlow's ``_AssertCompatible`` words: the first element of (nested) ``values`` that
    ``fails`` to be a ``dtype``, as ``str`` prints it (``Expected float32, but got a of type
    'str'.``); the whole of an array."""
    if not isinstance(values, np.ndarray):
        first = next((v for v in _flat(values) if fails(v)), None)
        if first is not None:
            return TypeError(
                f"Expected {dtype.name}, but got {first} of type '{type(first).__name__}'."
            )
    return TypeError(
        f"Expected {dtype.name}, but got {_describe(values)} of type '{_type_name(values)}'."
    )


def _flat(values: Any) -> Iterator[Any]:
    if isinstance(values, list | tuple):
        for v in values:
            yield from _flat(v)
    else:
        yield values


def _describe(values: Any) -> str:
    text = repr(values)
    return text if len(text) < 60 else text[:57] + "..."


def _type_name(values: Any) -> str:
    return type(values).__name__


def _to_string_array(values: Any) -> np.ndarray[Any, Any]:
    arr = np.asarray(values, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    flat_in, flat_out = arr.reshape(-1), out.reshape(-1)
    for i, v in enumerate(flat_in):
        flat_out[i] = _as_bytes(v)
    return out
