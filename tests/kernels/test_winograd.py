"""Winograd convolutions (F(4x4, 3x3) and F(4x4, 5x5)): the transforms, and Conv2D through them
checked against naive loops and TensorFlow's recorded answers, in blocks, and the cases that keep
im2col."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.devices import intra_op
from aiotf.kernels import conv_kernels, derived, winograd
from tests.kernels.test_nn_kernels import naive_conv

F32 = np.float32


@pytest.fixture
def convolved(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The shapes of the tile blocks ``winograd.convolve`` was called on."""
    calls: list[tuple[int, ...]] = []
    real = winograd.convolve

    def spy(x: Any, tiling: winograd.Tiling, block: Any, u: Any, out: Any) -> None:
        calls.append(tiling.tiles_shape(x, block))
        real(x, tiling, block, u, out)

    monkeypatch.setattr(winograd, "convolve", spy)
    monkeypatch.delenv("AIOTF_WINOGRAD", raising=False)
    return calls


@pytest.mark.parametrize("r", [3, 5])
def test_the_transforms_compute_a_correlation(r: int) -> None:
    at, g, bt = winograd.transforms(4, r)
    assert at.shape == (4, r + 3) and g.shape == (r + 3, r) and bt.shape == (r + 3, r + 3)
    rng = np.random.default_rng(r)
    for _ in range(5):
        taps, inputs = rng.standard_normal(r), rng.standard_normal(r + 3)
        got = at.astype(float) @ ((g.astype(float) @ taps) * (bt.astype(float) @ inputs))
        np.testing.assert_allclose(got, np.correlate(inputs, taps, "valid"), rtol=1e-5, atol=1e-6)


def operands(seed: int, xs: tuple[int, ...], fs: tuple[int, ...]) -> tuple[Any, Any]:
    """A float32 input and filter of standard normals."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(xs).astype(F32), rng.standard_normal(fs).astype(F32)


def conv(x: Any, f: Any, padding: bytes = b"SAME", **attrs: Any) -> Any:
    return conv_kernels.conv2d(
        x,
        f,
        strides=attrs.get("strides", [1, 1, 1, 1]),
        padding=padding,
        explicit_paddings=attrs.get("explicit_paddings", []),
        data_format=attrs.get("data_format", b"NHWC"),
        dilations=attrs.get("dilations", [1, 1, 1, 1]),
    )


@pytest.mark.parametrize(
    ("xs", "fs", "padding"),
    [
        ((2, 9, 11, 16), (3, 3, 16, 16), "SAME"),  # 3x3 tiles; the last row and column overhang
        ((2, 12, 12, 16), (5, 5, 16, 24), "SAME"),  # whole tiles
        ((3, 13, 10, 17), (5, 3, 17, 16), "VALID"),  # 5x3: a different transform per axis
        ((3, 14, 10, 16), (3, 3, 16, 16), "VALID"),  # nothing padded: tiles of the input itself
    ],
)
def test_conv2d_by_winograd_matches_naive_loops(
    convolved: list[tuple[int, ...]], xs: Any, fs: Any, padding: str
) -> None:
    rng = np.random.default_rng(2)
    x, f = rng.standard_normal(xs).astype(F32), rng.standard_normal(fs).astype(F32)
    got = conv(x, f, padding.encode())
    assert convolved, "im2col ran instead"
    want = naive_conv(x.astype(np.float64), f.astype(np.float64), (1, 1), (1, 1), padding)
    assert got.dtype == F32 and got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * np.abs(want).max())


def test_tiles_of_an_unpadded_input_seen_through_a_transpose(
    convolved: list[tuple[int, ...]],
) -> None:
    # NCHW, VALID and whole tiles: the tiles are a view of the transposed input (not contiguous)
    x, f = operands(4, (3, 14, 10, 16), (3, 3, 16, 16))
    got = conv(np.transpose(x, (0, 3, 1, 2)), f, b"VALID", data_format=b"NCHW")
    assert convolved, "im2col ran instead"
    want = naive_conv(x.astype(np.float64), f.astype(np.float64), (1, 1), (1, 1), "VALID")
    tol = {"rtol": 1e-4, "atol": 2e-5 * np.abs(want).max()}
    np.testing.assert_allclose(np.transpose(got, (0, 2, 3, 1)), want, **tol)


def test_explicit_padding_nchw_and_half_precision_go_through_winograd_too(
    convolved: list[tuple[int, ...]],
) -> None:
    x, f = operands(3, (2, 12, 10, 16), (3, 3, 16, 16))
    pads = [0, 0, 2, 0, 1, 3, 0, 0]  # top 2, bottom 0, left 1, right 3
    padded = np.pad(x, ((0, 0), (2, 0), (1, 3), (0, 0))).astype(np.float64)
    want = naive_conv(padded, f.astype(np.float64), (1, 1), (1, 1), "VALID")
    tol = {"rtol": 1e-4, "atol": 2e-5 * np.abs(want).max()}
    np.testing.assert_allclose(conv(x, f, b"EXPLICIT", explicit_paddings=pads), want, **tol)
    nchw = conv(
        np.transpose(x, (0, 3, 1, 2)),
        f,
        b"EXPLICIT",
        explicit_paddings=[0, 0, 0, 0, 2, 0, 1, 3],
        data_format=b"NCHW",
    )
    np.testing.assert_allclose(np.transpose(nchw, (0, 2, 3, 1)), want, **tol)
    half = conv(x.astype(np.float16), f.astype(np.float16), b"EXPLICIT", explicit_paddings=pads)
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, want, rtol=1e-2, atol=1e-2 * np.abs(want).max())
    assert len(convolved) == 3 * 2  # three convolutions, two blocks (one an image) each


def test_blocks_of_tile_rows_cover_every_tile(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    x, f = operands(4, (3, 11, 9, 16), (5, 5, 16, 16))
    whole = conv(x, f)
    assert convolved == [(2, 3, 3, 16, 8, 8), (1, 3, 3, 16, 8, 8)]  # two blocks at least
    monkeypatch.setattr(conv_kernels, "TILES_BLOCK_BYTES", 1)
    monkeypatch.setattr(conv_kernels, "BLOCK_TILES", 1)
    in_rows = conv(x, f)
    assert convolved[2:] == [(1, 1, 3, 16, 8, 8)] * 9  # one tile row of one image a block
    np.testing.assert_array_equal(in_rows, whole)


def test_a_threads_kept_block_memory_leaves_nothing_of_one_input_in_the_next(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One tile row a block: blocks of one shape at the top edge, inside and at the bottom edge
    # share one thread's memory, its padding rows changing block to block and call to call.
    monkeypatch.setattr(conv_kernels, "TILES_BLOCK_BYTES", 1)
    monkeypatch.setattr(conv_kernels, "BLOCK_TILES", 1)
    loud, f = operands(12, (2, 11, 9, 16), (5, 5, 16, 16))
    conv(loud * np.float32(1e6), f)
    quiet = np.zeros_like(loud)
    quiet[1, 5, 4, 3] = 1.0  # one pixel: the output is the filter around it, zeros elsewhere
    got = conv(quiet, f)
    assert len(convolved) == 2 * 2 * 3  # two images of three tile rows, twice
    want = naive_conv(quiet.astype(np.float64), f.astype(np.float64), (1, 1), (1, 1), "SAME")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert not got[0].any()


@pytest.mark.parametrize(
    ("why", "xs", "fs", "dtype", "attrs"),
    [
        ("float64", (2, 12, 12, 16), (3, 3, 16, 16), np.float64, {}),
        ("int32", (2, 12, 12, 16), (3, 3, 16, 16), np.int32, {}),
        ("strided", (2, 24, 24, 16), (3, 3, 16, 16), F32, {"strides": [1, 2, 2, 1]}),
        ("dilated", (2, 12, 12, 16), (3, 3, 16, 16), F32, {"dilations": [1, 2, 2, 1]}),
        ("grouped", (2, 12, 12, 32), (3, 3, 16, 16), F32, {}),
        ("few channels", (2, 12, 12, 8), (3, 3, 8, 16), F32, {}),
        ("7x7 filter", (2, 12, 12, 16), (7, 7, 16, 16), F32, {}),
        ("few tiles", (1, 8, 8, 16), (3, 3, 16, 16), F32, {}),
        ("a transformed filter too big", (2, 12, 12, 512), (3, 3, 512, 512), F32, {}),
    ],
)
def test_convolutions_winograd_does_not_suit_keep_im2col(
    convolved: list[tuple[int, ...]], why: str, xs: Any, fs: Any, dtype: Any, attrs: Any
) -> None:
    rng = np.random.default_rng(5)
    x, f = (rng.standard_normal(s).astype(dtype) for s in (xs, fs))
    conv(x, f, **attrs)
    assert not convolved, why


def test_aiotf_winograd_0_turns_it_off(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    x, f = operands(6, (2, 12, 12, 16), (3, 3, 16, 16))
    monkeypatch.setenv("AIOTF_WINOGRAD", "0")
    off = conv(x, f)
    assert not convolved
    monkeypatch.setenv("AIOTF_WINOGRAD", "1")
    on = conv(x, f)
    assert convolved
    np.testing.assert_allclose(on, off, rtol=1e-4, atol=2e-5 * np.abs(off).max())


async def test_a_session_runs_a_constant_filter_through_winograd_in_its_pool(
    convolved: list[tuple[int, ...]],
) -> None:
    x, f = operands(7, (8, 16, 16, 16), (3, 3, 16, 32))
    g = aiotf.Graph()
    with g.as_default():
        p = aiotf.placeholder(aiotf.float32, [None, 16, 16, 16])
        y = aiotf.nn.relu(aiotf.nn.conv2d(p, aiotf.constant(f), [1, 1, 1, 1], "SAME"))
    config = aiotf.ConfigProto(inter_op_parallelism_threads=2)
    async with aiotf.Session(graph=g, config=config) as sess:
        got = await sess.run(y, {p: x})
    assert convolved
    want = np.maximum(naive_conv(x, f, (1, 1), (1, 1), "SAME"), 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * np.abs(want).max())


with np.load(Path(__file__).parent / "data" / "winograd_tf.npz", allow_pickle=False) as _npz:
    RECORDED = dict(_npz)


@pytest.mark.parametrize(
    ("case", "padding"), [("3x3_same", b"SAME"), ("5x5_same", b"SAME"), ("5x3_valid", b"VALID")]
)
def test_winograd_stays_within_2e_5_of_tensorflows_own_answers(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch, case: str, padding: bytes
) -> None:
    # TensorFlow's answers (oneDNN's direct convolution) recorded by data/record_tf_graphs.py.
    x, w, want = (RECORDED[f"{case}/{key}"] for key in ("x", "w", "expect"))
    scale = np.abs(want).max()
    got = conv(x, w, padding)
    assert convolved and got.shape == want.shape
    winograd_error = np.abs(got - want).max() / scale
    assert winograd_error < 2e-5
    monkeypatch.setenv("AIOTF_WINOGRAD", "0")
    im2col_error = np.abs(conv(x, w, padding) - want).max() / scale
    assert im2col_error < 1e-6 < winograd_error  # the precision Winograd's method trades


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, 3e37])
def test_a_non_finite_output_is_redone_directly_with_tensorflows_infinities_and_nans(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch, bad: float
) -> None:
    # Winograd's transforms spread one infinite input over its whole tile as NaN (and can
    # overflow a huge finite one); the direct convolution's answer is the exact one.
    x, f = operands(8, (2, 12, 12, 16), (3, 3, 16, 16))
    x[1, 5, 6, 3] = bad
    got = conv(x, f)
    assert convolved  # tried, then redone
    monkeypatch.setenv("AIOTF_WINOGRAD", "0")
    want = conv(x, f)
    np.testing.assert_array_equal(got, want)  # NaN where TensorFlow has NaN, inf where inf


def test_finite_outputs_whose_squares_pass_float32s_largest_are_redone_directly(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A block is checked by the sum of its outputs' squares: every output here is finite
    # (~1e20), their squares are not, so the block goes the exact way as if one were infinite.
    x, f = (np.abs(a) for a in operands(9, (2, 12, 12, 16), (3, 3, 16, 16)))
    x *= np.float32(1e18)
    got = conv(x, f)
    assert convolved and np.isfinite(got).all()
    monkeypatch.setenv("AIOTF_WINOGRAD", "0")
    np.testing.assert_array_equal(got, conv(x, f))


async def test_a_constant_filter_is_transformed_once_and_a_fed_one_every_run(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[tuple[int, ...]] = []
    real = winograd.filter_transform

    def spy(f: Any) -> Any:
        made.append(f.shape)
        return real(f)

    monkeypatch.setattr(winograd, "filter_transform", spy)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 12, 12, 16)).astype(F32)
    w = rng.standard_normal((3, 3, 16, 16)).astype(F32)
    g = aiotf.Graph()
    with g.as_default():
        p = aiotf.placeholder(aiotf.float32, [None, 12, 12, 16])
        fed = aiotf.placeholder(aiotf.float32, [3, 3, 16, 16])
        const = aiotf.nn.conv2d(p, aiotf.constant(w), [1, 1, 1, 1], "SAME")
        by_feed = aiotf.nn.conv2d(p, fed, [1, 1, 1, 1], "SAME")
    async with aiotf.Session(graph=g) as sess:
        for _ in range(3):
            got = await sess.run(const, {p: x})
        assert len(made) == 1  # the Const's value is frozen: its transform is kept
        for _ in range(3):
            by_feed_got = await sess.run(by_feed, {p: x, fed: w})
        assert len(made) == 4  # a fed (writable) filter may change between runs
    np.testing.assert_array_equal(got, by_feed_got)
    assert len(convolved) == 6 * 2


def test_a_big_transformed_filter_is_used_only_when_kept_and_on_every_run(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(10)
    x = rng.standard_normal((1, 14, 14, 384)).astype(F32)
    f = (rng.standard_normal((3, 3, 384, 384)) / 60).astype(F32)  # transformed: 21 MiB
    conv(x, f)
    assert not convolved  # made on every call: too big to pay
    derived.freeze(f)  # as the Const kernel freezes a Const's value: made once and kept
    # Room for this one only: once kept, it still qualifies (its bytes are already counted).
    monkeypatch.setattr(derived, "CACHE_BYTES", derived.kept_bytes() + 32 << 20)
    for run in range(1, 4):
        conv(x, f)
        assert len(convolved) == run, run
    assert derived.kept("winograd", f) is not None


def test_a_half_constant_filter_is_transformed_once(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Any] = []
    real = winograd.filter_transform
    monkeypatch.setattr(winograd, "filter_transform", lambda f: made.append(f.dtype) or real(f))
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 12, 12, 16)).astype(np.float16)
    f = rng.standard_normal((3, 3, 16, 16)).astype(np.float16)
    derived.freeze(f)
    first, second = conv(x, f), conv(x, f)
    assert made == [np.float32] and len(convolved) == 4  # transformed in float32, once
    np.testing.assert_array_equal(first, second)


async def test_a_users_read_only_feed_is_transformed_on_every_run(
    convolved: list[tuple[int, ...]],
) -> None:
    # Read-only is not frozen: an alias taken before still writes (TensorFlow reads feeds anew).
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 12, 12, 16)).astype(F32)
    w = rng.standard_normal((3, 3, 16, 16)).astype(F32)
    alias = w[...]
    w.flags.writeable = False
    g = aiotf.Graph()
    with g.as_default():
        p = aiotf.placeholder(aiotf.float32, [None, 12, 12, 16])
        fed = aiotf.placeholder(aiotf.float32, [3, 3, 16, 16])
        y = aiotf.nn.conv2d(p, fed, [1, 1, 1, 1], "SAME")
    async with aiotf.Session(graph=g) as sess:
        assert np.abs(await sess.run(y, {p: x, fed: w})).max() > 1
        alias *= 0
        assert np.abs(await sess.run(y, {p: x, fed: w})).max() == 0
    assert convolved


@pytest.mark.parametrize("hw", [(16, 16), (14, 13)])  # whole tiles; tiles overhanging the edge
def test_fewer_blocks_than_threads_split_the_output_channels(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch, hw: tuple[int, int]
) -> None:
    shares: list[tuple[int, int]] = []
    real = winograd.convolve

    def spy(x: Any, tiling: winograd.Tiling, block: Any, u: Any, out: Any) -> None:
        shares.append((u.shape[2], out.shape[-1]))
        real(x, tiling, block, u, out)

    monkeypatch.setattr(winograd, "convolve", spy)
    monkeypatch.setattr(intra_op, "workers", lambda: 3)  # as in a pool with two idle threads
    x, f = operands(11, (1, *hw, 16), (3, 3, 16, 40))
    got = conv(x, f)  # one block of 16 tiles; 40 channels in two parts (at least 16 each)
    assert shares == [(20, 20), (20, 20)]
    want = naive_conv(x.astype(np.float64), f.astype(np.float64), (1, 1), (1, 1), "SAME")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * np.abs(want).max())
