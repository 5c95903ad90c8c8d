"""Feed values in, fetched values out, converted as TensorFlow's client converts them.

A :class:`FeedConverter` serves one fed tensor for many runs: its numpy dtype is resolved once;
its static shape is read on every call (``Tensor.set_shape`` may refine it between runs) and
parsed again only when it changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aiotf.framework import dtypes
from aiotf.framework.ops import Operation, Tensor
from aiotf.framework.tensor_shape import TensorShape
from aiotf.framework.tensor_util import convert_to_ndarray

# What a feed value may not be (a tuple: ``isinstance`` of a ``X | Y`` union takes ~3 us in a
# run's cold caches, of a tuple a tenth of that)
_GRAPH_ELEMENTS = (Tensor, Operation)
# A static shape, parsed for the check: the shape, its rank (None: unknown) and its known dims.
_ShapeCheck = tuple[TensorShape, int | None, tuple[tuple[int, int], ...]]


class FeedConverter:
    """Converts and checks the values fed to ``tensor`` (see the module docstring)."""

    __slots__ = ("_check", "_np_dtype", "name", "tensor")

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor
        self.name = tensor.name
        dtype = tensor.dtype.base_dtype
        self._np_dtype = None if dtype is dtypes.string else dtype.np_dtype
        self._check = _shape_check(tensor.shape)

    def __call__(self, value: Any, key: Any) -> Any:
        """``value`` converted like TensorFlow converts feeds (``np.asarray`` to the dtype)."""
        if isinstance(value, _GRAPH_ELEMENTS):
            raise _graph_element_error(value, key)
        np_dtype = self._np_dtype
        if np_dtype is None:
            arr = convert_to_ndarray(value, dtypes.string)
        else:
            # A Python int that does not survive the dtype (wraps round, truncates) is TF's
            # TypeError; TF converts it through a default-typed array first, so do we.
            if isinstance(value, int) and np.array(value).astype(np_dtype) != value:
                raise _int_error(value, np_dtype)
            arr = np.asarray(value, np_dtype)
        check = self._check
        if check[0] is not self.tensor.shape:  # refined by set_shape since the last call
            check = self._check = _shape_check(self.tensor.shape)
        rank = check[1]
        if rank is not None:
            shape = arr.shape
            if len(shape) != rank:
                raise self._shape_error(shape)
            for i, dim in check[2]:
                if shape[i] != dim:
                    raise self._shape_error(shape)
        return arr

    def _shape_error(self, shape: tuple[int, ...]) -> ValueError:
        tensor = self.tensor
        return ValueError(
            f"Cannot feed value of shape {shape!r} for Tensor {tensor.name}, which has shape "
            f"{tensor.shape}"
        )


def feed_value(tensor: Tensor, value: Any, key: Any) -> Any:
    """``value`` converted like TensorFlow converts feeds (``np.asarray`` to the tensor's dtype)."""
    return FeedConverter(tensor)(value, key)


def client_value(value: Any) -> Any:
    """What a run returns for a tensor value: a numpy scalar for 0-d, a writable array otherwise."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable:
            return value.copy()
    return value


def _shape_check(shape: TensorShape) -> _ShapeCheck:
    dims = shape.dims
    if dims is None:
        return shape, None, ()
    return shape, len(dims), tuple((i, d) for i, d in enumerate(dims) if d is not None)


def _int_error(value: int, np_dtype: Any) -> TypeError:
    return TypeError(
        f"Type of feed value {value} with type {type(value)} is not compatible with Tensor type "
        f"{np_dtype.type}. Try explicitly setting the type of the feed tensor to a larger type "
        "(e.g. int64)."
    )


def _graph_element_error(value: Tensor | Operation, key: Any) -> TypeError:
    return TypeError(
        "The value of a feed cannot be a aiotf.Tensor object. Acceptable feed values include "
        "Python scalars, strings, lists, numpy ndarrays. For reference, the tensor object was "
        f"{value} which was passed to the argument `feed_dict` with key {key!r}."
    )
