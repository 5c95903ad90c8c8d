"""JSON values <-> numpy arrays, by TensorFlow Serving's JSON mapping and in its error words.

Decoding (one tensor of a request). The shape is read off the first element at every level
(``[[1, 2], [3, 4]]`` is ``[2, 2]``); then a walk checks that the value is dense, i.e. that
every list at level ``k`` has ``shape[k]`` items and that scalars sit only at level ``rank``,
and converts each scalar by the tensor's dtype:

- floats take JSON numbers (and ``NaN``/``Infinity``, which Python's parser reads), refusing
  an integer or a magnitude the type cannot hold exactly ("without loss of precision");
- integers take JSON integers in the type's range (``1.0`` is not an integer), bools only
  ``true``/``false``;
- strings take JSON strings (as UTF-8 bytes) or ``{"b64": "<base64>"}`` for binary data.

Encoding (one tensor of a response) gives nested lists of Python scalars. A float32 is written
with the shortest decimal that reads back as the same float32 (``0.2``, not the float64 noise
``0.20000000298023224``), as TensorFlow Serving writes it; ``NaN`` and ``Infinity`` are the JSON
extensions it uses. Strings are UTF-8 text, or ``{"b64": ...}`` when the output's alias ends in
``_bytes`` (TensorFlow Serving's convention) or when the bytes are not valid UTF-8.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import aiotf
from aiotf.proto import types_pb2

_SHOW_MAX = 200  # characters of a JSON value quoted in an error message
MAX_RANK = 32  # deeper nesting is refused (numpy's own limit is 32 or 64 dimensions)


def decode(value: Any, dtype: aiotf.DType) -> np.ndarray:
    """The array ``value`` (a parsed JSON value) denotes, of ``dtype``."""
    shape = dense_shape(value)
    if len(shape) > MAX_RANK:
        raise invalid(f"JSON value nested {len(shape)} lists deep: at most {MAX_RANK} are served")
    flat: list[Any] = []
    _collect(value, 0, shape, _leaf_decoder(dtype), flat)
    if dtype is aiotf.string:
        arr = np.empty(len(flat), dtype=object)
        arr[:] = flat
    else:
        arr = np.array(flat, dtype=dtype.np_dtype)
    return arr.reshape(shape)


def dense_shape(value: Any) -> list[int]:
    """The shape a nested list has if it is dense: the length at each level of first items."""
    shape: list[int] = []
    while type(value) is list:
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _collect(
    value: Any, level: int, shape: list[int], leaf: Callable[[Any], Any], out: list[Any]
) -> None:
    rank = len(shape)
    if type(value) is not list:
        if level != rank:
            raise invalid(
                f"JSON Value: {show(value)} found at incorrect level: {level + 1} in the JSON "
                f"DOM. Expected at level: {rank}"
            )
        out.append(leaf(value))
        return
    if level >= rank:
        raise invalid(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise invalid(
            f"Encountered list at unexpected size: {len(value)} at level: {level} "
            f"expected size: {shape[level]}"
        )
    if level < rank - 1:
        for item in value:
            _collect(item, level + 1, shape, leaf, out)
        return
    for item in value:  # the innermost level, where the values are: no recursion
        if type(item) is list:
            raise invalid(f"Encountered list at unexpected level: {rank} expected < {rank}")
        out.append(leaf(item))


def _leaf_decoder(dtype: aiotf.DType) -> Callable[[Any], Any]:
    if dtype is aiotf.string:
        return _string_leaf
    if dtype is aiotf.bool:
        return _checked(dtype, lambda v: type(v) is bool)
    if dtype.is_integer:
        info = np.iinfo(dtype.np_dtype)
        lo, hi = int(info.min), int(info.max)
        return _checked(dtype, lambda v: type(v) is int and lo <= v <= hi)
    if dtype is aiotf.float32:
        return _float_leaf(dtype, "float", 2**24 - 1, float(np.finfo(np.float32).max))
    if dtype is aiotf.float64:
        return _float_leaf(dtype, "double", 2**53 - 1, math.inf)
    return _float_leaf(dtype, dtype_name(dtype), math.inf, dtype.max)


def _checked(dtype: aiotf.DType, ok: Callable[[Any], bool]) -> Callable[[Any], Any]:
    def leaf(value: Any) -> Any:
        if not ok(value):
            raise type_error(value, dtype)
        return value

    return leaf


def _float_leaf(
    dtype: aiotf.DType, target: str, max_int: float, max_abs: float
) -> Callable[[Any], Any]:
    def leaf(value: Any) -> Any:
        kind = type(value)
        if kind is float:
            if math.isfinite(value) and abs(value) > max_abs:
                raise _lossy(value, target)
            return value
        if kind is int:
            if abs(value) > max_int:
                raise _lossy(value, target)
            return value
        raise type_error(value, dtype)

    return leaf


def _string_leaf(value: Any) -> bytes:
    if type(value) is str:
        return value.encode("utf-8", "surrogatepass")
    if type(value) is dict:
        return decode_base64(value)
    raise type_error(value, aiotf.string)


def is_base64(value: Any) -> bool:
    """Whether ``value`` is ``{"b64": "<string>"}``: one key, a string."""
    return type(value) is dict and len(value) == 1 and type(value.get("b64")) is str


def decode_base64(value: Any) -> bytes:
    if not is_base64(value):
        raise invalid(f"JSON Value: {show(value)} not formatted correctly for base64 data")
    text: str = value["b64"]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise invalid("Unable to base64 decode") from None


def encode(arr: Any, as_bytes: bool = False) -> Any:
    """``arr`` as nested lists of JSON-ready Python values (see the module docstring)."""
    arr = np.asarray(arr)
    if arr.dtype == object:
        flat: list[Any] = [_encode_string(v, as_bytes) for v in arr.ravel()]
        return _nest(flat, arr.shape)
    if arr.dtype.name == "bfloat16":  # ml_dtypes.bfloat16, without importing ml_dtypes
        arr = arr.astype(np.float32)  # exact; numpy formats float32 but not bfloat16
    if arr.dtype in (np.float32, np.float16):
        return _nest([float(s) for s in arr.ravel().astype(str)], arr.shape)
    return arr.tolist()  # float64 (repr is shortest already), integers, bools


def _nest(flat: list[Any], shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    holder = np.empty(len(flat), dtype=object)
    holder[:] = flat
    return holder.reshape(shape).tolist()


def _encode_string(value: Any, as_bytes: bool) -> Any:
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogatepass")
    if not as_bytes:
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return {"b64": base64.b64encode(value).decode("ascii")}


# -- error words -------------------------------------------------------------------------------
def invalid(message: str) -> aiotf.errors.InvalidArgumentError:
    return aiotf.errors.InvalidArgumentError(None, None, message)


def type_error(value: Any, dtype: aiotf.DType) -> aiotf.errors.InvalidArgumentError:
    return invalid(
        f"JSON Value: {show(value)} Type: {json_type(value)} is not of expected type: "
        f"{dtype_name(dtype)}"
    )


def _lossy(value: Any, target: str) -> aiotf.errors.InvalidArgumentError:
    return invalid(
        f"Cannot convert JSON value: {show(value)} to {target} without loss of precision."
    )


def show(value: Any) -> str:
    """A JSON value as text for an error message, cut short when long."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOW_MAX else text[: _SHOW_MAX - 3] + "..."


def json_type(value: Any) -> str:
    """RapidJSON's name for the type of a JSON value, as TensorFlow Serving reports it."""
    if value is None:
        return "Null"
    if type(value) is bool:
        return "True" if value else "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


def dtype_name(dtype: aiotf.DType) -> str:
    """TensorFlow's ``DataTypeString``: ``float``, ``double``, ``int32``, ``string``..."""
    return types_pb2.DataType.Name(dtype.as_datatype_enum).removeprefix("DT_").lower()
