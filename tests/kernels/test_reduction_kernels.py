"""Reductions and scans: keep_dims, negative and duplicate axes, empty axis lists, int Mean."""

from __future__ import annotations

import re

import numpy as np
import pytest

import aiotf

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 10


@pytest.mark.parametrize(
    ("axes", "keep"),
    [([0], False), ([-1], True), ([0, 2], False), ([-1, -3], True), ([], False), ([2, 0], False)],
)
async def test_sum_mean_max_min_prod(run, same, axes, keep) -> None:
    idx = np.array(axes, np.int32)
    a = tuple(sorted({i % 3 for i in axes}))
    attrs = {"keep_dims": keep}
    same(await run("Sum", [X, idx], attrs), np.sum(X, axis=a, keepdims=keep) if a else X)
    same(await run("Mean", [X, idx], attrs), np.mean(X, axis=a, keepdims=keep) if a else X)
    same(await run("Max", [X, idx], attrs), np.max(X, axis=a, keepdims=keep) if a else X)
    same(await run("Min", [X, idx], attrs), np.min(X, axis=a, keepdims=keep) if a else X)
    same(
        await run("Prod", [X, idx], attrs), np.prod(X, axis=a, keepdims=keep) if a else X, rtol=1e-5
    )


async def test_scalar_axis_and_int64_axis(run, same) -> None:
    same(await run("Sum", [X, np.array(1, np.int64)]), X.sum(axis=1))


async def test_int_reductions_keep_dtype_and_truncate(run, same) -> None:
    x = np.array([[-7, 2], [3, -3]], np.int32)
    same(await run("Mean", [x, np.array([1], np.int32)]), np.array([-2, 0], np.int32))
    same(await run("Sum", [x, np.array([0, 1], np.int32)]), np.array(-5, np.int32))
    same(await run("Prod", [x, np.array([0], np.int64)]), np.array([-21, -6], np.int32))
    big = np.array([2**40, 3], np.int64)
    same(await run("Max", [big, np.array([0], np.int32)]), np.array(2**40, np.int64))


async def test_empty_reductions(run, same) -> None:
    e = np.zeros((0, 3), np.float32)
    ax = np.array([0], np.int32)
    same(await run("Sum", [e, ax]), np.zeros(3, np.float32))
    same(await run("Prod", [e, ax]), np.ones(3, np.float32))
    same(await run("Max", [e, ax]), np.full(3, -np.inf, np.float32))
    same(await run("Min", [np.zeros((0,), np.int32), ax]), np.array(2**31 - 1, np.int32))
    same(await run("All", [np.zeros((0,), bool), ax]), np.array(True))
    same(await run("Any", [np.zeros((0,), bool), ax]), np.array(False))


async def test_all_any(run, same) -> None:
    b = np.array([[True, False], [True, True]])
    same(
        await run("All", [b, np.array([1], np.int32)], {"keep_dims": True}), b.all(1, keepdims=True)
    )
    same(await run("Any", [b, np.array([-2], np.int32)]), b.any(0))


async def test_bad_axis(run) -> None:
    # recorded from TF 2.21 (the kernel's words; the shape function's differ)
    with pytest.raises(
        aiotf.errors.InvalidArgumentError,
        match=re.escape("Invalid reduction dimension (3 for input with 3 dimension(s)"),
    ):
        await run("Sum", [X, np.array([3], np.int32)])


@pytest.mark.parametrize("op", ["Sum", "Max", "Min", "Mean", "Prod", "All", "Any"])
@pytest.mark.parametrize(
    ("axes", "dup"), [([0, -3], 0), ([1, 1], 1), ([0, 1, 0], 0), ([-1, 2], 2), ([2, -1], 2)]
)
async def test_duplicate_axes_are_an_error_like_tensorflow(run, op, axes, dup) -> None:
    x = X > 0 if op in ("All", "Any") else X  # recorded from TF 2.21
    with pytest.raises(
        aiotf.errors.InvalidArgumentError,
        match=f"^Invalid reduction arguments: Axes contains duplicate dimension: {dup}\\b",
    ):
        await run(op, [x, np.array(axes, np.int32)])


async def test_out_of_range_axis_is_reported_before_a_duplicate(run) -> None:
    with pytest.raises(aiotf.errors.InvalidArgumentError, match=re.escape("dimension (5 for")):
        await run("Sum", [X, np.array([0, 5, 0], np.int32)])  # recorded from TF 2.21


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
async def test_cumsum(run, same, exclusive, reverse, axis) -> None:
    x = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    ref = np.flip(x, axis) if reverse else x
    cs = np.cumsum(ref, axis=axis, dtype=np.int32)
    if exclusive:
        cs = cs - ref
    if reverse:
        cs = np.flip(cs, axis)
    got = await run(
        "Cumsum", [x, np.array(axis, np.int32)], {"exclusive": exclusive, "reverse": reverse}
    )
    same(got, cs)


async def test_cumsum_bad_axis(run) -> None:
    with pytest.raises(aiotf.errors.InvalidArgumentError, match="scan axis in the range"):
        await run("Cumsum", [np.ones(3, np.float32), np.array(1, np.int32)])


async def test_arg_min(run, same) -> None:
    x = np.array([[3, 1, 2], [0, 5, 0]], np.float32)
    same(await run("ArgMin", [x, np.array(1, np.int32)]), np.array([1, 0], np.int64))


NAN, INF, LOWEST = np.nan, np.inf, np.finfo(np.float32).min
# recorded from TF 2.21: NaNs are skipped, and a row with nothing larger than lowest (smaller
# than highest) answers 0, as Eigen's reducers start from (0, lowest) and (0, highest)
ARG_CASES = [  # (row, argmax, argmin)
    ([1, NAN, 3], 2, 0),
    ([NAN, 1, 3], 2, 1),
    ([3, NAN, 1], 0, 2),
    ([NAN, 5, NAN, 1], 1, 3),
    ([NAN, NAN], 0, 0),
    ([-INF, NAN], 0, 0),
    ([NAN, -INF, -INF], 0, 1),
    ([-INF, 2], 1, 0),
    ([NAN, INF], 1, 0),
]
ARG_CASES_FLOAT32 = [([-INF, LOWEST], 0, 0), ([-INF, LOWEST, 3], 2, 0), ([INF, -LOWEST], 0, 0)]


@pytest.mark.parametrize(
    ("row", "argmax", "argmin", "dtype"),
    [(*case, dt) for case in ARG_CASES for dt in (np.float32, np.float64, np.float16)]
    + [(*case, np.float32) for case in ARG_CASES_FLOAT32],
)
async def test_arg_max_and_arg_min_skip_nan_like_tensorflow(
    run, same, row, argmax, argmin, dtype
) -> None:
    x = np.array(row, dtype)
    axis = np.array(0, np.int32)
    same(await run("ArgMax", [x, axis]), np.array(argmax, np.int64))
    same(await run("ArgMin", [x, axis]), np.array(argmin, np.int64))


async def test_arg_max_skips_nan_along_any_axis(run, same) -> None:
    m = np.array([[1, NAN, 3], [NAN, NAN, NAN], [NAN, 2, 1]], np.float32)
    one, zero = np.array(1, np.int32), np.array(0, np.int32)
    same(await run("ArgMax", [m, one]), np.array([2, 0, 1], np.int64))  # recorded from TF 2.21
    same(await run("ArgMin", [m, one]), np.array([0, 0, 2], np.int64))
    same(await run("ArgMax", [m.T, zero]), np.array([2, 0, 1], np.int64))
    same(await run("ArgMin", [m.T, zero]), np.array([0, 0, 2], np.int64))
