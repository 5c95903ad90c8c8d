"""Elementwise math kernels against numpy references, with TensorFlow's integer and IEEE rules."""

from __future__ import annotations

import numpy as np
import pytest

import aiotf
from tests.kernels.conftest import in_pool_thread

I32 = np.int32
F32 = np.float32


async def test_floor_div_mod_int_signs(run, same) -> None:
    x = np.array([7, -7, 7, -7, 0, 6], I32)
    y = np.array([2, 2, -2, -2, 3, -4], I32)
    same(await run("FloorDiv", [x, y]), np.array([3, -4, -4, 3, 0, -2], I32))
    same(await run("FloorMod", [x, y]), np.array([1, 1, -1, -1, 0, -2], I32))


async def test_truncate_div_mod_int_signs(run, same) -> None:
    x = np.array([7, -7, 7, -7, 0], I32)
    y = np.array([2, 2, -2, -2, 3], I32)
    same(await run("TruncateDiv", [x, y]), np.array([3, -3, -3, 3, 0], I32))
    same(await run("TruncateMod", [x, y]), np.array([1, -1, 1, -1, 0], I32))
    same(await run("Div", [x, y]), np.array([3, -3, -3, 3, 0], I32))


@pytest.mark.parametrize("dtype", [aiotf.float16, aiotf.bfloat16])
async def test_truncate_mod_has_no_half_kernel_like_tensorflow(run, dtype) -> None:
    from aiotf.kernels import registry

    assert not registry.has_kernel("TruncateMod", "CPU", {"T": dtype})
    x = np.array([5.5, -5.5], dtype.np_dtype)
    with pytest.raises(aiotf.errors.InvalidArgumentError, match="TruncateMod"):
        await run("TruncateMod", [x, x])  # TF 2.21: "No OpKernel was registered to support..."


@pytest.mark.parametrize("op", ["FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Div"])
async def test_integer_division_by_zero(run, op: str) -> None:
    with pytest.raises(aiotf.errors.InvalidArgumentError, match="Integer division by zero"):
        await run(op, [np.array([1, 2], I32), np.array([1, 0], I32)])


async def test_float_floor_div_mod(run, same) -> None:
    x = np.array([7.5, -7.5, 1.0, -4.0, 1.0], F32)
    y = np.array([2.0, 2.0, 0.1, 2.0, 0.0], F32)
    same(await run("FloorDiv", [x, y]), np.floor(x / y))
    r = np.fmod(x, y)
    want = np.where((r != 0) & ((y < 0) != (r < 0)), r + y, r)
    same(await run("FloorMod", [x, y]), want)


async def test_broadcasting_and_incompatible_shapes(run, same) -> None:
    a = np.arange(6, dtype=F32).reshape(2, 3)
    b = np.array([1, 2, 3], F32)
    same(await run("Maximum", [a, b]), np.maximum(a, b))
    same(await run("SquaredDifference", [a, b]), (a - b) ** 2)
    with pytest.raises(aiotf.errors.InvalidArgumentError, match=r"Incompatible shapes: \[2,3\]"):
        await run("Minimum", [a, np.ones(4, F32)])


async def test_pow(run, same) -> None:
    x = np.array([-2, 0, 3], F32)
    y = np.array([3, 0, 0.5], F32)
    same(await run("Pow", [x, y]), np.power(x, y), rtol=1e-6)
    same(
        await run("Pow", [np.array([2, -3], I32), np.array([10, 3], I32)]),
        np.array([1024, -27], I32),
    )
    with pytest.raises(aiotf.errors.InvalidArgumentError, match="negative integer powers"):
        await run("Pow", [np.array([2], I32), np.array([-1], I32)])


async def test_special_values(run, same) -> None:
    v = np.array([-1.0, 0.0, np.inf, -np.inf, np.nan, 100.0], F32)
    same(await run("Log", [v]), np.log(v))
    same(await run("Sqrt", [v]), np.sqrt(v))
    same(await run("Rsqrt", [v]), 1 / np.sqrt(v))
    same(await run("Exp", [v]), np.exp(v))
    same(await run("Sigmoid", [v]), 1 / (1 + np.exp(-v)))
    same(await run("Maximum", [v, np.zeros_like(v)]), np.maximum(v, 0))
    same(await run("Equal", [v, v]), v == v)
    same(await run("NotEqual", [v, v]), v != v)
    same(
        await run("DivNoNan", [v, np.array([0, 0, 1, 2, 0, 4], F32)]),
        np.array([0, 0, np.inf, -np.inf, 0, 25], F32),
    )


async def test_unary_float64_and_rounding(run, same) -> None:
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0], np.float64)
    same(await run("Round", [x]), np.array([-2, -2, -0, 0, 2, 2, -0], np.float64))
    same(await run("Floor", [x]), np.floor(x))
    same(await run("Ceil", [x]), np.ceil(x))
    same(await run("Sign", [x]), np.sign(x))
    same(await run("Abs", [x]), np.abs(x))
    same(await run("Square", [x]), x * x)
    same(await run("Tanh", [x]), np.tanh(x))


async def test_comparisons_and_strings(run, same) -> None:
    a, b = np.array([1, 2, 3], I32), np.array([2, 2, 2], I32)
    same(await run("Less", [a, b]), a < b)
    same(await run("GreaterEqual", [a, b]), a >= b)
    s = np.array([b"a", b"bc", b""])
    same(await run("Equal", [s, np.array(b"bc")]), np.array([False, True, False]))
    same(await run("NotEqual", [s, s]), np.zeros(3, bool))


async def test_add_n_and_empty(run, same) -> None:
    xs = [np.full((2, 2), i, I32) for i in range(3)]
    same(await run("AddN", xs), np.full((2, 2), 3, I32))
    same(await run("AddV2", [np.zeros((0, 3), F32), np.ones(3, F32)]), np.zeros((0, 3), F32))
    empty = np.zeros((0, 3), F32)  # once a ZeroDivisionError timing the (empty) sum
    same(await run("AddN", [empty, empty, empty]), empty)
    same(await run("AddN", [empty] * 12), empty)  # by eights: the second eight's sum empty too
    same(await run("AddN", [np.full(3, 1.5, F32)] * 10), np.full(3, 15.0, F32))
    with pytest.raises(aiotf.errors.InvalidArgumentError, match="same size and shape"):
        await run("AddN", [np.ones(2, F32), np.ones(3, F32)])


@pytest.mark.parametrize("n", [9, 16, 17, 26])
@pytest.mark.parametrize("workers", [1, 3])
async def test_a_large_add_n_sums_in_tensorflows_order_however_it_is_split(
    run, same, monkeypatch, workers, n
) -> None:
    # n x 300,000 inputs: over the size to share the sum out (and their strided halves too
    # from n = 16); with 3 workers, in 3 slices.
    from aiotf.devices import intra_op

    monkeypatch.setattr(intra_op, "workers", lambda: workers)
    rng = np.random.default_rng(8)
    xs = [(rng.standard_normal((300, 1000)) * 10 ** (i % 4)).astype(F32) for i in range(n)]
    same(await run("AddN", xs), _in_tensorflows_order(_by_name(xs)), rtol=0)
    strided = [x[:, ::2] for x in xs]
    same(await run("AddN", strided), _in_tensorflows_order(_by_name(strided)), rtol=0)


async def test_add_n_of_more_than_nine_is_not_a_left_to_right_sum(run) -> None:
    # The orders differ in the last bits (what the test above pins down is not vacuous).
    rng = np.random.default_rng(9)
    xs = [(rng.standard_normal(4096) * 10 ** (i % 4)).astype(F32) for i in range(16)]
    got = await run("AddN", xs)
    assert np.array_equal(got, _in_tensorflows_order(_by_name(xs)))
    assert not np.array_equal(got, _left_to_right(_by_name(xs)))
    assert not np.array_equal(got, _in_tensorflows_order(xs))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(400, 400, 200), (24, 500, 515)])  # by rows; by columns
def test_a_split_matmul_is_the_whole_product(monkeypatch, threads, shape) -> None:
    # In a pool thread whose helpers start late: the caller's part is the longer one
    # (intra_op.lead_bounds); helpers never come (the pool is closing), so it does every part.
    from aiotf.devices import intra_op
    from aiotf.kernels import math_kernels

    m, k, n = shape
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, k)).astype(F32), rng.standard_normal((k, n)).astype(F32)
    splits = []
    lead_bounds = intra_op.lead_bounds

    def spy(extent: int, parts: int, seconds: float, align: int = 1) -> list[int]:
        splits.append(lead_bounds(extent, parts, seconds, align))
        return splits[-1]

    monkeypatch.setattr(intra_op, "lead_bounds", spy)
    workers, product = in_pool_thread(
        threads, lambda: (intra_op.workers(), math_kernels.matmul(a, b))
    )
    (bounds,) = splits
    first, *rest = np.diff(bounds)
    assert workers == threads + 1 and len(rest) == threads and first > max(rest)
    assert all(b % math_kernels.PART_ALIGN == 0 for b in bounds[1:-1])
    np.testing.assert_allclose(product, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    # The same bits as the product made on one thread, whichever way it runs (products.way).
    np.testing.assert_array_equal(product, math_kernels.products.product(a, b))


def _left_to_right(xs: list[np.ndarray]) -> np.ndarray:
    total = xs[0] + xs[1]
    for x in xs[2:]:
        total = total + x  # float32 rounding: the order is part of the answer
    return total


def _by_name(xs: list[np.ndarray]) -> list[np.ndarray]:
    """``run``'s inputs in the order grappler sorts them: by their placeholders' names,
    ``in0``, ``in1``, ``in10``... (the session's graph is canonicalized, canonicalizer.py)."""
    return [xs[i] for i in sorted(range(len(xs)), key=lambda i: f"in{i}")]


def _in_tensorflows_order(xs: list[np.ndarray]) -> np.ndarray:
    """TensorFlow's AddN kernel: the first n % 8 (8 or 9 for 0 or 1) left to right, then each
    next eight left to right, added to the total (checked bit for bit against TensorFlow 2.21
    with grappler off; with it on, the inputs are sorted first: test_tf_graphs.py)."""
    lead = {0: 8, 1: 9}.get(len(xs) % 8, len(xs) % 8)
    total = _left_to_right(xs[:lead])
    for i in range(lead, len(xs), 8):
        total = total + _left_to_right(xs[i : i + 8])
    return total


async def test_select(run, same) -> None:
    c = np.array([True, False])
    t, e = np.ones((2, 2), F32), np.zeros((2, 2), F32)
    same(await run("Select", [c, t, e]), np.array([[1, 1], [0, 0]], F32))
    same(await run("SelectV2", [c, t, e]), np.array([[1, 0], [1, 0]], F32))


async def test_batch_matmul(run, same) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 1, 3, 4)).astype(F32)
    b = rng.standard_normal((3, 4, 2)).astype(F32)
    same(await run("BatchMatMulV2", [a, b]), a @ b, rtol=1e-5)
    same(
        await run("BatchMatMulV2", [a, b.swapaxes(-1, -2).copy()], {"adj_y": True}),
        a @ b,
        rtol=1e-5,
    )
    with pytest.raises(aiotf.errors.InvalidArgumentError, match="Matrix size-incompatible"):
        await run("BatchMatMulV2", [a, a])


def test_matmul_flop_estimate_uses_the_inner_dimension() -> None:
    # Regression: the estimate divided by the smallest dim of `a` (1 for a batch of one), which
    # made every batch-1 MatMul look a thousand times costlier and sent it to the thread pool.
    from aiotf.kernels.math_kernels import _matmul_flops

    a, b = np.zeros((1, 784), np.float32), np.zeros((784, 512), np.float32)
    assert _matmul_flops(a, b) == 2 * 1 * 784 * 512
    a, b = np.zeros((64, 784), np.float32), np.zeros((784, 512), np.float32)
    assert _matmul_flops(a, b) == 2 * 64 * 784 * 512
    assert _matmul_flops(a.T.copy(), b) == 2 * 64 * 784 * 512  # transpose_a: same work
