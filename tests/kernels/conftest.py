"""Run one op through the public API: placeholders fed with numpy arrays (or Consts), one run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import dtypes

RunOp = Callable[..., Awaitable[Any]]


async def run_op(
    op_type: str,
    inputs: Sequence[Any],
    attrs: dict[str, Any] | None = None,
    *,
    consts: Sequence[int] = (),
) -> Any:
    """The outputs of one ``op_type`` node (one array, or a list when it has several)."""
    g = aiotf.Graph()
    feeds = {}
    with g.as_default():
        tensors = []
        for i, value in enumerate(inputs):
            x = np.asarray(value)
            if i in consts:
                tensors.append(aiotf.constant(x))
            else:
                p = aiotf.placeholder(dtypes.as_dtype(x.dtype), name=f"in{i}")
                feeds[p] = x
                tensors.append(p)
        op = g.create_op(op_type, tensors, dict(attrs or {}), name="op")
    async with aiotf.Session(graph=g) as sess:
        out = await sess.run(list(op.outputs), feed_dict=feeds)
    return out[0] if len(out) == 1 else out


@pytest.fixture
def run() -> RunOp:
    return run_op


def check(got: Any, want: Any, *, rtol: float = 1e-6, atol: float = 0.0) -> None:
    """Same dtype, shape and values (NaN equal to NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.fixture
def same() -> Callable[..., None]:
    return check


@pytest.fixture(autouse=True)
def _ieee_quiet() -> Any:
    """numpy references may divide by zero or overflow on purpose, like the kernels do."""
    with np.errstate(all="ignore"):
        yield


def in_pool_thread(threads: int, work: Callable[[], Any]) -> Any:
    """``work()`` in a thread bound as a pool worker with ``threads`` idle helpers whose start
    is late (the pool's measured delay) and that never come (the pool is closing), so the caller
    does every part of a split itself."""
    import threading

    from aiotf.devices import intra_op

    load = intra_op.PoolLoad(threads)
    load.helper_delay = 0.2e-3
    results = []

    def in_pool() -> None:
        intra_op.bind_worker(lambda fn: False, load)
        results.append(work())

    thread = threading.Thread(target=in_pool)
    thread.start()
    thread.join()
    (result,) = results
    return result
