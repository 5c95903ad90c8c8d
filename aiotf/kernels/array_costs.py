"""Cost estimates of the array kernels, for the cost model in ``registry.py``.

Each charges the elements a kernel moves: its output when small inputs decide how big that is
(a Tile's multiples, a Fill's dims, a Pad's paddings, a Slice's sizes), else its data input.
They run before every call of a pool kernel, so each is a few arithmetic operations on shapes
and small value inputs; an estimate that cannot read its inputs falls back to their size
(``guarded``), and the kernel reports what is wrong with them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aiotf.framework import strided_slice as slice_spec
from aiotf.kernels.registry import (
    NS_PER_ELEMENT,
    NS_PER_PERMUTED,
    POOL_MIN_COST,
    KernelNode,
    guarded,
    size_of,
)


def _ints(value: Any) -> list[int]:
    return [int(v) for v in np.reshape(value, -1).tolist()]


@guarded
def fill_cost(dims: Any, value: Any) -> float:
    return NS_PER_ELEMENT * math.prod(_ints(dims))


@guarded
def broadcast_to_cost(x: Any, shape: Any) -> float:
    return NS_PER_ELEMENT * math.prod(_ints(shape))


@guarded
def tile_cost(x: Any, multiples: Any) -> float:
    return NS_PER_ELEMENT * size_of(x) * math.prod(_ints(multiples))


@guarded
def pad_cost(x: Any, paddings: Any, *constant_values: Any) -> float:
    """Pad, PadV2, MirrorPad: the padded output."""
    pairs = np.reshape(paddings, (-1, 2)).tolist()
    sizes = [int(d) + int(a) + int(b) for d, (a, b) in zip(x.shape, pairs, strict=True)]
    return NS_PER_ELEMENT * math.prod(sizes)


@guarded
def one_hot_cost(indices: Any, depth: Any, on_value: Any, off_value: Any) -> float:
    return NS_PER_ELEMENT * size_of(indices) * max(int(depth), 1)


@guarded
def slice_cost(x: Any, begin: Any, size: Any) -> float:
    """The slice copied: ``size`` per dim, -1 meaning the rest from ``begin``."""
    dims = zip(x.shape, _ints(begin), _ints(size), strict=True)
    return NS_PER_ELEMENT * math.prod(d - b if s == -1 else s for d, b, s in dims)


@guarded
def strided_slice_cost(x: Any, begin: Any, end: Any, strides: Any, *, node: KernelNode) -> float:
    """The elements selected; the input's size when that is below the pool's threshold anyway
    (working out the slice is a few microseconds)."""
    bound = NS_PER_ELEMENT * size_of(x)
    if bound < POOL_MIN_COST:
        return bound
    index = slice_spec.numpy_index(x.shape, begin, end, strides, node.attrs)
    return NS_PER_ELEMENT * size_of(x[index])  # basic indexing: a view, nothing copied


def _gather(params: Any, indices: Any, axis: int) -> float:
    axis %= params.ndim
    rows = size_of(params) // max(int(params.shape[axis]), 1)
    rate = NS_PER_ELEMENT if axis == 0 else NS_PER_PERMUTED
    return rate * size_of(indices) * rows + NS_PER_ELEMENT * size_of(indices)


@guarded
def gather_cost(params: Any, indices: Any) -> float:
    return _gather(params, indices, 0)


@guarded
def gather_v2_cost(params: Any, indices: Any, axis: Any) -> float:
    return _gather(params, indices, int(np.reshape(axis, -1)[0]))


@guarded
def gather_nd_cost(params: Any, indices: Any) -> float:
    depth = int(indices.shape[-1])
    slices = size_of(indices) // max(depth, 1)
    rest = math.prod(int(d) for d in params.shape[depth:])
    return NS_PER_ELEMENT * (slices * rest + size_of(indices))


@guarded
def unpack_cost(value: Any, *, axis: int) -> float:
    """A copy per slice: streaming along the outer axis, strided along another."""
    return (NS_PER_ELEMENT if axis in (0, -value.ndim) else NS_PER_PERMUTED) * size_of(value)
