"""Logging kernels: ``Assert``, with TensorFlow's words for a failed assertion.

A failed ``Assert`` is an ``InvalidArgumentError`` reading ``assertion failed: [a] [b]...``,
one bracket per data tensor, each summarized as ``Tensor::SummarizeValue`` does: at most
``summarize`` elements (all when negative), nested in brackets by dimension, ``...`` where it
stopped. Elements print as TensorFlow's C++ does: floats in the shortest of 6 or 9 (float) /
15 or 17 (double) significant digits that reads back, bools as 1 and 0, strings C-escaped
(bytes from 0x80 up untouched), any other type as ``?``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from aiotf.framework import dtypes, errors
from aiotf.kernels.math_kernels import shape_str
from aiotf.kernels.registry import register_kernel

Array = np.ndarray[Any, Any]


@register_kernel("Assert")
def assert_(condition: Array, *data: Array, summarize: int) -> None:
    if np.ndim(condition) != 0:
        raise errors.InvalidArgumentError(
            None, None, f"In[0] should be a scalar: {shape_str(condition)}"
        )
    if bool(condition):
        return
    parts = " ".join(f"[{summarize_value(np.asarray(x), summarize)}]" for x in data)
    raise errors.InvalidArgumentError(None, None, f"assertion failed: {parts}")


def summarize_value(x: Array, max_entries: int) -> str:
    """``x`` as TensorFlow's ``Tensor::SummarizeValue(max_entries)`` prints it."""
    n = x.size
    limit = n if max_entries < 0 else min(max_entries, n)
    element = _formatter(x)
    if element is None:  # TensorFlow's "irregular" types
        return " ".join(["?"] * limit) + ("..." if 0 <= max_entries < n else "")
    flat = x.reshape(-1)
    if x.ndim == 0:
        return " ".join(element(flat[i]) for i in range(limit)) + ("..." if n > limit else "")
    out: list[str] = []
    taken = 0

    def one_dim(dim: int) -> None:
        nonlocal taken
        last = dim == x.ndim - 1
        for i in range(x.shape[dim]):
            if taken >= limit:
                if last and dim != 0:
                    out.append("...")
                return
            if last:
                out.append((" " if i else "") + element(flat[taken]))
                taken += 1
            else:
                out.append("[")
                one_dim(dim + 1)
                out.append("]")

    one_dim(0)
    return "".join(out) + ("..." if n > limit else "")


def _formatter(x: Array) -> Callable[[Any], str] | None:
    if x.dtype.kind in "SO":
        return _escaped
    dtype = dtypes.from_numpy(x.dtype)
    if dtype.is_bool:
        return lambda v: "1" if v else "0"
    if dtype.is_integer:
        return lambda v: str(int(v))
    if dtype.base_dtype is dtypes.float64:
        return lambda v: _shortest(float(v), 15, 17, float)
    if dtype.is_floating:  # half and bfloat16 print as the float they widen to
        return lambda v: _shortest(float(v), 6, 9, lambda s: float(np.float32(s)))
    return None


def _shortest(v: float, digits: int, more: int, parse: Callable[[str], float]) -> str:
    """TensorFlow's FloatToBuffer/DoubleToBuffer: ``%.{digits}g`` unless it does not read
    back as ``v``, then ``%.{more}g``."""
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = f"{v:.{digits}g}"
    return text if parse(text) == v else f"{v:.{more}g}"


_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"'}
_ESCAPES |= {ord("'"): "\\'", ord("\\"): "\\\\"}


def _escaped(value: Any) -> str:
    """absl's Utf8SafeCEscape of the bytes ``value``."""
    raw = value if isinstance(value, bytes) else str(value).encode()
    out = bytearray()
    for b in raw:
        if b in _ESCAPES:
            out += _ESCAPES[b].encode()
        elif b < 0x20 or b == 0x7F:
            out += f"\\{b:03o}".encode()
        else:
            out.append(b)
    return out.decode("utf-8", errors="backslashreplace")
