"""Convolution, pooling, activations and losses; conv/pool checked against naive loops here."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import aiotf

F32 = np.float32
Err = aiotf.errors.InvalidArgumentError


def _pads(size: int, k: int, s: int, d: int, padding: str) -> tuple[int, int, int]:
    eff = (k - 1) * d + 1
    if padding == "VALID":
        return (size - eff) // s + 1, 0, 0
    out = math.ceil(size / s)
    need = max(0, (out - 1) * s + eff - size)
    return out, need // 2, need - need // 2


def naive_conv(x, f, strides, dilations, padding, depthwise=False):
    n, h, w, c = x.shape
    kh, kw = f.shape[:2]
    oh, pt, _ = _pads(h, kh, strides[0], dilations[0], padding)
    ow, pl, _ = _pads(w, kw, strides[1], dilations[1], padding)
    oc = c * f.shape[3] if depthwise else f.shape[3]
    out = np.zeros((n, oh, ow, oc), np.float64)
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for di in range(kh):
                    for dj in range(kw):
                        r = i * strides[0] + di * dilations[0] - pt
                        q = j * strides[1] + dj * dilations[1] - pl
                        if not (0 <= r < h and 0 <= q < w):
                            continue
                        if depthwise:
                            m = f.shape[3]
                            for ch in range(c):
                                out[b, i, j, ch * m : (ch + 1) * m] += (
                                    x[b, r, q, ch] * f[di, dj, ch]
                                )
                        else:
                            out[b, i, j] += x[b, r, q] @ f[di, dj]
    return out.astype(x.dtype)


def naive_pool(x, k, strides, padding, kind):
    n, h, w, c = x.shape
    oh, pt, _ = _pads(h, k[0], strides[0], 1, padding)
    ow, pl, _ = _pads(w, k[1], strides[1], 1, padding)
    out = np.zeros((n, oh, ow, c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            r0, q0 = i * strides[0] - pt, j * strides[1] - pl
            win = x[:, max(r0, 0) : r0 + k[0], max(q0, 0) : q0 + k[1], :]
            out[:, i, j] = win.max(axis=(1, 2)) if kind == "max" else win.mean(axis=(1, 2))
    return out


CONV_CASES = [
    ((1, 5, 5, 2), (3, 3, 2, 3), (1, 1), (1, 1), "SAME"),
    ((2, 5, 5, 2), (3, 3, 2, 4), (2, 2), (1, 1), "SAME"),
    ((1, 6, 6, 1), (2, 2, 1, 2), (2, 2), (1, 1), "SAME"),
    ((1, 7, 6, 3), (3, 2, 3, 2), (2, 1), (1, 1), "VALID"),
    ((1, 7, 7, 2), (3, 3, 2, 2), (1, 1), (2, 2), "SAME"),
    ((1, 8, 9, 2), (2, 3, 2, 1), (1, 2), (2, 1), "VALID"),
]


@pytest.mark.parametrize(("xs", "fs", "strides", "dil", "padding"), CONV_CASES)
async def test_conv2d(run, same, xs, fs, strides, dil, padding) -> None:
    rng = np.random.default_rng(1)
    x, f = rng.standard_normal(xs).astype(F32), rng.standard_normal(fs).astype(F32)
    attrs = {
        "strides": [1, *strides, 1],
        "dilations": [1, *dil, 1],
        "padding": padding.encode(),
    }
    same(
        await run("Conv2D", [x, f], attrs),
        naive_conv(x, f, strides, dil, padding),
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("block_bytes", [None, 2048])
@pytest.mark.parametrize(
    ("xs", "fs", "strides", "dil", "padding"),
    [
        ((3, 9, 11, 1), (5, 5, 1, 4), (1, 1), (1, 1), "SAME"),
        ((2, 10, 9, 1), (3, 2, 1, 3), (2, 1), (1, 2), "VALID"),
    ],
)
async def test_conv2d_of_one_channel_in_blocks(
    run, same, monkeypatch, block_bytes, xs, fs, strides, dil, padding
) -> None:
    # One input channel takes the tap-major im2col; 2 KiB blocks split images into row blocks.
    from aiotf.kernels import conv_kernels

    if block_bytes is not None:
        monkeypatch.setattr(conv_kernels, "COLS_BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(11)
    x, f = rng.standard_normal(xs).astype(F32), rng.standard_normal(fs).astype(F32)
    attrs = {"strides": [1, *strides, 1], "dilations": [1, *dil, 1], "padding": padding.encode()}
    same(
        await run("Conv2D", [x, f], attrs),
        naive_conv(x, f, strides, dil, padding),
        rtol=1e-4,
        atol=1e-5,
    )


async def test_explicit_padding_pads_each_side_as_given_and_is_checked_as_tensorflow(
    run, same
) -> None:
    rng = np.random.default_rng(12)
    x, f = rng.standard_normal((2, 5, 6, 3)).astype(F32), rng.standard_normal((3, 2, 3, 4))
    f = f.astype(F32)
    pads = [0, 0, 2, 0, 1, 3, 0, 0]  # top 2, bottom 0, left 1, right 3
    attrs = {"strides": [1, 1, 1, 1], "padding": b"EXPLICIT", "explicit_paddings": pads}
    padded = np.pad(x, ((0, 0), (2, 0), (1, 3), (0, 0)))
    want = naive_conv(padded, f, (1, 1), (1, 1), "VALID")
    same(await run("Conv2D", [x, f], attrs), want, rtol=1e-4, atol=1e-5)
    pool = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": b"EXPLICIT"}
    got = await run("MaxPool", [x], {**pool, "explicit_paddings": pads})
    lowest = np.finfo(F32).min
    edged = np.pad(x, ((0, 0), (2, 0), (1, 3), (0, 0)), constant_values=lowest)
    same(got, naive_pool(edged, (2, 2), (2, 2), "VALID", "max"))
    for bad, message in (
        ([0, 0, -1, 1, 0, 0, 0, 0], "All elements of explicit_paddings must be nonnegative"),
        ([1, 0, 0, 0, 0, 0, 0, 0], "Nonzero explicit padding in the batch or depth dimensions"),
        ([0, 0, 0, 0, 0, 0, 0, 1], "Nonzero explicit padding in the batch or depth dimensions"),
        ([0, 0, 1, 1], "explicit_paddings attribute must contain 8 values, but got: 4"),
    ):
        with pytest.raises(Err, match=message):
            await run("Conv2D", [x, f], {**attrs, "explicit_paddings": bad})
    with pytest.raises(Err, match="must be empty if the padding attribute is not EXPLICIT"):
        await run("Conv2D", [x, f], {**attrs, "padding": b"SAME"})


@pytest.mark.parametrize(("strides", "dil"), [((1, 1), (1, 1)), ((2, 1), (1, 2))])
async def test_conv2d_windows_of_a_view_nchw_valid(run, same, strides, dil) -> None:
    # VALID pads nothing, so the windows are a view of the NCHW input seen as NHWC (not
    # contiguous): another way to the strided view than a padded copy's
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 9, 3)).astype(F32)
    f = rng.standard_normal((3, 2, 3, 4)).astype(F32)
    attrs = {
        "strides": [1, 1, *strides],
        "dilations": [1, 1, *dil],
        "padding": b"VALID",
        "data_format": b"NCHW",
    }
    got = await run("Conv2D", [x.transpose(0, 3, 1, 2).copy(), f], attrs)
    want = naive_conv(x, f, strides, dil, "VALID").transpose(0, 3, 1, 2)
    same(got, want, rtol=1e-4, atol=1e-5)


async def test_conv2d_nchw_and_errors(run, same) -> None:
    rng = np.random.default_rng(2)
    x, f = (
        rng.standard_normal((1, 5, 5, 2)).astype(F32),
        rng.standard_normal((3, 3, 2, 2)).astype(F32),
    )
    attrs = {"strides": [1, 1, 2, 2], "padding": b"SAME", "data_format": b"NCHW"}
    got = await run("Conv2D", [x.transpose(0, 3, 1, 2).copy(), f], attrs)
    same(got, naive_conv(x, f, (2, 2), (1, 1), "SAME").transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-5)
    with pytest.raises(Err, match="evenly divisible by filter depth"):
        await run(
            "Conv2D",
            [x, np.ones((1, 1, 3, 1), F32)],
            {"strides": [1, 1, 1, 1], "padding": b"VALID"},
        )
    with pytest.raises(Err, match="Computed output size would be negative"):
        await run(
            "Conv2D",
            [x, np.ones((7, 1, 2, 1), F32)],
            {"strides": [1, 1, 1, 1], "padding": b"VALID"},
        )


@pytest.mark.parametrize(
    ("xs", "fs", "strides", "dil", "padding"),
    [
        ((1, 5, 5, 3), (3, 3, 3, 2), (1, 1), (1, 1), "SAME"),
        ((2, 6, 7, 2), (2, 3, 2, 2), (2, 2), (1, 1), "VALID"),
        ((1, 6, 6, 2), (2, 2, 2, 1), (1, 1), (2, 2), "SAME"),
    ],
)
async def test_depthwise_conv(run, same, xs, fs, strides, dil, padding) -> None:
    rng = np.random.default_rng(3)
    x, f = rng.standard_normal(xs).astype(F32), rng.standard_normal(fs).astype(F32)
    attrs = {"strides": [1, *strides, 1], "dilations": [1, *dil, 1], "padding": padding.encode()}
    want = naive_conv(x, f, strides, dil, padding, depthwise=True)
    same(await run("DepthwiseConv2dNative", [x, f], attrs), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("k", "strides", "padding"),
    [
        ((2, 2), (2, 2), "VALID"),
        ((3, 3), (2, 2), "SAME"),
        ((3, 3), (1, 1), "SAME"),
        ((1, 3), (1, 2), "SAME"),
    ],
)
async def test_pools(run, same, k, strides, padding) -> None:
    x = -np.random.default_rng(4).random((2, 5, 6, 3)).astype(F32) - 1  # all negative
    attrs = {"ksize": [1, *k, 1], "strides": [1, *strides, 1], "padding": padding.encode()}
    same(await run("MaxPool", [x], attrs), naive_pool(x, k, strides, padding, "max"))
    same(await run("AvgPool", [x], attrs), naive_pool(x, k, strides, padding, "avg"), rtol=1e-5)


NAN, INF = np.nan, np.inf


@pytest.mark.parametrize(
    ("window", "want"),
    [  # recorded from TF 2.21 (a 2x2 VALID pool of one window): NaN never wins, and the
        # maximum starts at the lowest finite value
        ([NAN, 1, 2, 3], 3),
        ([1, NAN, 2, 3], 3),
        ([3, 2, 1, NAN], 3),
        ([5, NAN, NAN, NAN], 5),
        ([NAN, NAN, NAN, NAN], "lowest"),
        ([-INF, -INF, -INF, -INF], "lowest"),
        ([NAN, -INF, NAN, -INF], "lowest"),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
async def test_max_pool_skips_nan_like_tensorflow(run, same, window, want, dtype) -> None:
    x = np.array(window, dtype).reshape(1, 2, 2, 1)
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": b"VALID"}
    value = ml_dtypes.finfo(dtype).min if want == "lowest" else want
    same(await run("MaxPool", [x], attrs), np.full((1, 1, 1, 1), value, dtype))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
async def test_max_pool_of_one_tap_windows_answers_lowest_for_nan_and_minus_inf(
    run, same, dtype
) -> None:
    lowest = ml_dtypes.finfo(dtype).min
    x = np.array([NAN, -INF, 2, lowest], dtype).reshape(1, 2, 2, 1)
    attrs = {"ksize": [1, 1, 1, 1], "strides": [1, 1, 1, 1], "padding": b"VALID"}
    same(
        await run("MaxPool", [x], attrs),
        np.array([lowest, lowest, 2, lowest], dtype).reshape(x.shape),
    )


def test_max_pool_tells_whether_every_window_held_more_than_the_lowest() -> None:
    # What the fused pool relies on to pool first; integers are not scanned (found by review).
    from aiotf.kernels import conv_kernels

    valid = ([1, 2, 2, 1], [1, 2, 2, 1], b"VALID", [], b"NHWC")
    padded = ([1, 2, 2, 1], [1, 2, 2, 1], b"EXPLICIT", [0, 0, 0, 2, 0, 0, 0, 0], b"NHWC")
    for x, window, above in [
        (np.ones((1, 2, 2, 1), F32), valid, True),
        (np.array([NAN, NAN, 1, 1], F32).reshape(1, 2, 2, 1), valid, True),
        (np.array([NAN, NAN, NAN, NAN], F32).reshape(1, 2, 2, 1), valid, False),
        (np.full((1, 2, 2, 1), -INF, F32), valid, False),
        (np.ones((1, 2, 2, 1), F32), padded, False),  # a window of padding alone
        (np.ones((1, 2, 2, 1), np.int32), valid, False),
    ]:
        names = ("ksize", "strides", "padding", "explicit_paddings", "data_format")
        assert conv_kernels._max_pool(x, **dict(zip(names, window, strict=True)))[1] is above


@pytest.mark.parametrize(
    ("shape", "k", "strides", "padding", "by_rows"),
    [
        ((3, 8, 8, 32), (2, 2), (2, 2), "VALID", False),  # three maxima either way: taps
        ((2, 9, 7, 40), (3, 3), (2, 2), "SAME", True),  # six maxima by rows, eight by taps
        ((2, 8, 8, 4), (2, 2), (1, 1), "VALID", True),
        ((2, 7, 9, 5), (2, 3), (1, 1), "SAME", True),
        ((2, 6, 6, 3), (1, 3), (1, 2), "SAME", False),  # one row: nothing to take first
        ((2, 6, 6, 3), (3, 1), (2, 1), "VALID", False),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.int32], ids=str)
def test_max_pool_by_rows_gives_the_taps_bits(shape, k, strides, padding, by_rows, dtype) -> None:
    from aiotf.kernels import conv_kernels

    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 8).astype(dtype)
    if dtype != np.int32:  # NaN never wins; -inf and +inf where they fall
        flat = x.reshape(-1)
        for value in (NAN, -INF, INF):
            flat[rng.choice(flat.size, flat.size // 16, replace=False)] = value
    window = {
        "ksize": [1, *k, 1],
        "strides": [1, *strides, 1],
        "padding": padding.encode(),
        "explicit_paddings": [],
        "data_format": b"NHWC",
    }
    windows, out_shape = conv_kernels._max_pool_windows(x, **window)
    assert windows is not None and windows._by_rows is by_rows
    outs = []
    for rows in (True, False):
        windows._by_rows = rows
        out = np.empty(out_shape, x.dtype)
        with np.errstate(invalid="ignore"):
            windows.max_into(out, 0, 1)  # in two calls, as the fused pool's parts take them
            windows.max_into(out, 1, len(out))
        outs.append(out.view(f"u{out.itemsize}"))  # the bits
    np.testing.assert_array_equal(*outs)
    want = naive_pool(np.where(np.isnan(x.astype(F32)), -INF, x), k, strides, padding, "max")
    np.testing.assert_array_equal(outs[0].view(x.dtype).astype(F32), want.astype(F32))


async def test_max_pool_same_padding_over_nans_answers_lowest(run, same) -> None:
    x = np.full((1, 3, 3, 1), NAN, F32)  # recorded from TF 2.21
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": b"SAME"}
    same(await run("MaxPool", [x], attrs), np.full((1, 2, 2, 1), np.finfo(F32).min, F32))


async def test_max_reduction_propagates_nan_like_tensorflow(run, same) -> None:
    x = np.array([[1, NAN, 3], [2, 0, 1]], F32)  # recorded from TF 2.21: Max keeps NaNs
    same(await run("Max", [x, np.array([1], np.int32)]), np.array([NAN, 2], F32))
    same(await run("Min", [x, np.array([0], np.int32)]), np.array([1, NAN, 1], F32))


@pytest.mark.parametrize(
    ("row", "want"),
    [  # recorded from TF 2.21 (x86 build, oneDNN on: its default)
        ([INF, 1], [NAN, 0]),
        ([1, INF], [0, NAN]),
        ([INF, INF], [NAN, NAN]),
        ([-INF, 1], [0, 1]),
        ([-INF, -INF], [NAN, NAN]),
        ([NAN, 1], [NAN, 0]),
        ([1, NAN], [0, NAN]),
        ([NAN, NAN], [NAN, NAN]),
        ([INF, NAN], [NAN, NAN]),
        ([INF, -INF], [NAN, 0]),
        ([NAN, -INF], [NAN, 0]),
        ([2, NAN, 1], [0, NAN, 0]),
        ([3, INF, 2, INF], [0, NAN, 0, NAN]),
        ([1e30, -1e30], [1, 0]),
    ],
)
async def test_float32_softmax_of_nan_and_inf_like_tensorflow(run, same, row, want) -> None:
    same(await run("Softmax", [np.array([row], F32)]), np.array([want], F32))


async def test_float32_softmax_of_a_nan_or_inf_row_among_finite_rows(run, same) -> None:
    """Only the row holding a NaN or +inf answers as oneDNN does; the finite rows keep the
    bits of the plain formula, wherever in the batch the spoilt row is."""
    rng = np.random.default_rng(11)
    for row in (0, 4, 7):
        x = (rng.standard_normal((8, 3)) * 10).astype(F32)
        x[row] = [2, NAN, 1] if row % 2 == 0 else [3, INF, -INF]
        got = await run("Softmax", [x])
        same(got[row], np.array([0, NAN, 0], F32))
        finite = np.delete(x, row, axis=0)
        e = np.exp(finite - finite.max(axis=-1, keepdims=True))
        np.testing.assert_array_equal(
            np.delete(got, row, axis=0), e / e.sum(axis=-1, keepdims=True)
        )


async def test_float64_and_half_softmax_of_inf_is_a_row_of_nan(run, same) -> None:
    for dtype in (np.float64, np.float16):  # recorded from TF 2.21: Eigen's kernel
        x = np.array([[INF, 1], [NAN, 1], [1, 2]], dtype)
        want = np.array([[NAN, NAN], [NAN, NAN], [0.26894142, 0.73105858]], dtype)
        same(await run("Softmax", [x]), want, rtol=1e-3)


async def test_activations(run, same) -> None:
    x = np.array([-3.0, -0.5, 0.0, 2.0, 6.0, 7.5], F32)
    same(await run("Relu6", [x]), np.clip(x, 0, 6))
    same(await run("Relu6", [np.array([-1, 3, 9], np.int32)]), np.array([0, 3, 6], np.int32))
    same(
        await run("Elu", [x.astype(np.float64)]), np.where(x < 0, np.expm1(x), x).astype(np.float64)
    )
    same(await run("LeakyRelu", [x], {"alpha": 0.1}), np.where(x > 0, x, x * F32(0.1)))
    sm = x - x.max()
    same(await run("LogSoftmax", [x]), sm - np.log(np.exp(sm).sum()), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float16, F32, np.float64, np.int32])
async def test_relu_of_a_large_tensor_is_numpys_maximum(run, same, dtype) -> None:
    # From 16Ki elements Relu goes chunk by chunk against a tile of zeros; NaN, -0.0 and the
    # chunk boundaries (150,001 is not a multiple of the 65,536-element tile) as np.maximum.
    x = (np.random.default_rng(5).standard_normal(150_001) * 100).astype(dtype)
    if x.dtype.kind == "f":
        x[:5] = [np.nan, -0.0, 0.0, -np.inf, np.inf]
    got = await run("Relu", [x])
    want = np.maximum(x, x.dtype.type(0))
    same(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    same(await run("Relu", [x[::2]]), np.maximum(x[::2], x.dtype.type(0)))  # not contiguous


@pytest.mark.parametrize(
    ("shape", "channels"), [((3000, 96), 96), ((70_001, 3), 3), ((300, 700), 700)]
)
async def test_bias_add_of_a_large_tensor_is_numpys_add(run, same, shape, channels) -> None:
    # A short bias goes through a tile of whole repeats (neither 96 nor 3 divides 65,536), so
    # every chunk starts at channel 0; a 700-long one broadcasts.
    rng = np.random.default_rng(6)
    value, bias = rng.standard_normal(shape).astype(F32), rng.standard_normal(channels).astype(F32)
    value[0, :3] = [np.nan, np.inf, -0.0]
    same(await run("BiasAdd", [value, bias]), value + bias, rtol=0)
    nchw = rng.standard_normal((2, 3, 50, 120)).astype(F32)
    got = await run("BiasAdd", [nchw, bias[:3]], {"data_format": b"NCHW"})
    same(got, nchw + bias[:3, None, None], rtol=0)


def test_a_constant_bias_tile_is_made_once_and_values_stay_right() -> None:
    from aiotf.kernels import derived, nn_kernels

    rng = np.random.default_rng(7)
    bias = rng.standard_normal(32).astype(F32)
    derived.freeze(bias)  # as the Const kernel does with its value
    for _ in range(2):
        value = rng.standard_normal((70, 14, 14, 32)).astype(F32)  # 439,040: not whole tiles
        assert np.array_equal(nn_kernels.bias_add(value, bias, data_format=b"NHWC"), value + bias)
        tile = derived.kept("bias_tile", bias)
        assert tile is not None and tile.size == 65_536 // 32 * 32
        assert not tile.flags.writeable


@pytest.mark.parametrize("shape", [(64, 512), (8, 20, 300), (700, 90)])
def test_bias_add_and_relu_of_a_tensor_laid_out_by_columns_keep_its_layout(shape) -> None:
    """A product left by columns (``products``): BiasAdd and Relu take it in its memory's order
    (a constant bias as runs of each value down a column, made once), with numpy's values, and
    in place or into a new tensor laid out the same way. (700 x 90 is past CHUNK: broadcast.)"""
    from aiotf.kernels import derived, nn_kernels

    rng = np.random.default_rng(9)
    value = np.asfortranarray(rng.standard_normal(shape).astype(F32))
    value.T.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    bias = rng.standard_normal(shape[-1]).astype(F32)
    derived.freeze(bias)
    for _ in range(2):
        got = nn_kernels.bias_add(value, bias, data_format=b"NHWC")
        assert np.array_equal(got, value + bias, equal_nan=True) and got.flags.f_contiguous
        relu = nn_kernels.relu(got)
        assert np.array_equal(relu, np.maximum(got, F32(0)), equal_nan=True)
        assert relu.flags.f_contiguous
        assert np.array_equal(np.signbit(relu), np.signbit(np.maximum(got, F32(0))))
        same_memory = value.copy(order="F")
        assert nn_kernels._bias_add_forward(same_memory, bias, data_format=b"NHWC") is same_memory
        assert np.array_equal(same_memory, value + bias, equal_nan=True)
    runs = derived.kept(("bias_runs", value.size // shape[-1]), bias)
    assert (runs is not None) == (value.size <= nn_kernels.CHUNK)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_bias_add_and_relu_forwarded_write_the_kernels_values_over_their_input(dtype) -> None:
    """``forward`` (compiled schedules, a dying input): the very values the kernel makes, into
    the input's own buffer, for the tiled (large), broadcast and NCHW paths."""
    from aiotf.kernels import nn_kernels

    rng = np.random.default_rng(8)
    for shape, channels, data_format in [
        ((4, 5), 5, b"NHWC"),
        ((300, 96), 96, b"NHWC"),  # large, short bias: through the tile
        ((2, 3, 4, 5), 3, b"NCHW"),
    ]:
        value = (rng.standard_normal(shape) * 10).astype(dtype)
        bias = (rng.standard_normal(channels) * 10).astype(dtype)
        want = nn_kernels.bias_add(value, bias, data_format=data_format)
        got = nn_kernels._bias_add_forward(value, bias, data_format=data_format)
        assert got is value and got.dtype == want.dtype
        assert np.array_equal(got, want)
        relu_want = nn_kernels.relu(value)
        assert nn_kernels._relu_forward(value) is value
        assert np.array_equal(value, relu_want)


def test_bias_add_forwarded_refuses_before_it_writes() -> None:
    """Operands the kernel rejects, or of two dtypes (the answer's dtype would not be the
    input's), raise with the input untouched: the kernel then runs and says why."""
    from aiotf.kernels import nn_kernels

    value = np.arange(6, dtype=F32).reshape(2, 3)
    for bias in (np.ones(4, F32), np.ones((1, 3), F32), np.ones(3, np.float64)):
        with pytest.raises(ValueError, match="BiasAdd"):
            nn_kernels._bias_add_forward(value, bias, data_format=b"NHWC")
        assert np.array_equal(value, np.arange(6, dtype=F32).reshape(2, 3))


async def test_l2loss(run, same) -> None:
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    same(await run("L2Loss", [x]), np.array((x**2).sum() / 2))
    same(await run("L2Loss", [F32(3)]), np.array(4.5, F32))


async def test_sparse_softmax_xent(run, same) -> None:
    logits = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]], F32)
    labels = np.array([2, 0], np.int64)
    loss, back = await run("SparseSoftmaxCrossEntropyWithLogits", [logits, labels])
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    same(loss, -np.log(p[[0, 1], labels]), rtol=1e-5)
    same(back, p - np.eye(3, dtype=F32)[labels], rtol=1e-5, atol=1e-7)
    with pytest.raises(
        Err,
        match=r"Received a label value of 5 which is outside the valid range of \[0, 3\)\.  Label values: 0 5",
    ):
        await run("SparseSoftmaxCrossEntropyWithLogits", [logits, np.array([0, 5], np.int32)])


async def test_fused_batch_norm_inference(run, same) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 3, 4)).astype(F32)
    scale, offset = rng.random(4).astype(F32), rng.random(4).astype(F32)
    mean, var = rng.random(4).astype(F32), rng.random(4).astype(F32) + 0.5
    outs = await run(
        "FusedBatchNormV3", [x, scale, offset, mean, var], {"is_training": False, "epsilon": 0.001}
    )
    same(outs[0], (x - mean) / np.sqrt(var + F32(0.001)) * scale + offset, rtol=1e-5, atol=1e-6)
    same(outs[1], mean)
    same(outs[2], var)
