"""oneDNN's convolution primitive (``devices/onednn_conv.py``), and the convolutions of few input
channels that use it (``kernels/conv_kernels.py``)."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

from aiotf.devices import onednn, onednn_conv
from aiotf.kernels import conv_kernels, derived
from tests.kernels.conftest import in_pool_thread

pytestmark = pytest.mark.skipif(
    not onednn.available(), reason="oneDNN is not installed (aiotf[onednn])"
)

Array = np.ndarray[Any, Any]


def _reference(x: Array, f: Array, pads: tuple[tuple[int, int], tuple[int, int]]) -> Array:
    """The stride-1 convolution in float64, NHWC by HWIO."""
    kh, kw = f.shape[:2]
    xp = np.pad(x.astype(np.float64), ((0, 0), *pads, (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))
    return np.einsum("nhwcij,ijco->nhwo", windows, f.astype(np.float64))  # type: ignore[no-any-return]


def _conv2d(x: Array, f: Array, padding: bytes, explicit: list[int] | None = None) -> Array:
    out: Array = conv_kernels.conv2d(
        x, f, strides=[1, 1, 1, 1], padding=padding, explicit_paddings=explicit or [],
        data_format=b"NHWC", dilations=[1, 1, 1, 1],
    )  # fmt: skip
    return out


@pytest.fixture
def convolved(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The input shapes oneDNN convolved, a block each."""
    seen: list[tuple[int, ...]] = []
    real = onednn_conv.into

    def into(x: Array, packed: Array, out: Array, conv: Any) -> None:
        seen.append(x.shape)
        real(x, packed, out, conv)

    monkeypatch.setattr(onednn_conv, "into", into)
    return seen


@pytest.mark.parametrize(
    ("x_shape", "f_shape", "padding", "pads"),
    [
        ((4, 28, 28, 1), (5, 5, 1, 32), b"SAME", ((2, 2), (2, 2))),  # the cnn's first layer
        ((3, 9, 7, 3), (3, 3, 3, 8), b"SAME", ((1, 1), (1, 1))),
        ((2, 10, 8, 16), (3, 3, 16, 5), b"VALID", ((0, 0), (0, 0))),
        ((2, 8, 9, 2), (4, 2, 2, 6), b"SAME", ((1, 2), (0, 1))),  # the odd pad after
        ((2, 6, 6, 1), (3, 3, 1, 4), b"EXPLICIT", ((2, 0), (1, 3))),
    ],
    ids=["cnn", "3 channels", "16 channels, valid", "uneven", "explicit"],
)
def test_a_convolution_of_few_channels_is_onednns_with_the_values(
    convolved: list[tuple[int, ...]],
    x_shape: tuple[int, ...],
    f_shape: tuple[int, ...],
    padding: bytes,
    pads: tuple[tuple[int, int], tuple[int, int]],
) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    explicit = [0, 0, *pads[0], *pads[1], 0, 0] if padding == b"EXPLICIT" else None
    got = _conv2d(x, f, padding, explicit)
    np.testing.assert_allclose(got, _reference(x, f, pads), rtol=1e-4, atol=1e-4)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    assert convolved and sum(shape[0] for shape in convolved) == x_shape[0]


def test_the_same_bits_in_blocks_on_two_threads_as_whole_on_one(
    convolved: list[tuple[int, ...]],
) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 28, 28, 1)).astype(np.float32)
    f = rng.standard_normal((5, 5, 1, 32)).astype(np.float32)
    alone = _conv2d(x, f, b"SAME")
    assert convolved == [(8, 28, 28, 1)] * 2  # 98 KiB an image's outputs: two blocks
    convolved.clear()
    split = in_pool_thread(2, lambda: _conv2d(x, f, b"SAME"))
    np.testing.assert_array_equal(split, alone)
    sizes = [shape[0] for shape in convolved]
    assert sum(sizes) == 16 and len(sizes) > 2 and len(set(sizes)) == 2  # a last block smaller


def test_nans_and_infinities_go_through_as_the_products_take_them(
    convolved: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    f = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    x[0, 2, 3, 1], x[1, 5, 5, 0], x[1, 0, 0, 2] = np.nan, np.inf, -np.inf  # (a filter's: below)
    with np.errstate(all="ignore"):
        got = _conv2d(x, f, b"SAME")
        monkeypatch.setattr(onednn_conv, "MAX_CHANNELS", 0)  # the im2col product instead
        want = _conv2d(x, f, b"SAME")
    assert convolved
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)


def test_others_go_to_the_im2col_product(convolved: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(4)
    many = rng.standard_normal((2, 6, 6, onednn_conv.MAX_CHANNELS + 1)).astype(np.float32)
    f = rng.standard_normal((3, 3, many.shape[3], 4)).astype(np.float32)
    np.testing.assert_allclose(
        _conv2d(many, f, b"SAME"), _reference(many, f, ((1, 1), (1, 1))), rtol=1e-4, atol=1e-4
    )
    doubles = rng.standard_normal((2, 6, 6, 1))
    f64 = rng.standard_normal((3, 3, 1, 4))
    np.testing.assert_allclose(
        _conv2d(doubles, f64, b"SAME"), _reference(doubles, f64, ((1, 1), (1, 1))), rtol=1e-9
    )
    nchw = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)  # read as NHWC: not dense
    f1 = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    got = conv_kernels.conv2d(
        nchw, f1, strides=[1, 1, 1, 1], padding=b"SAME", explicit_paddings=[],
        data_format=b"NCHW", dilations=[1, 1, 1, 1],
    )  # fmt: skip
    want = _reference(nchw.transpose(0, 2, 3, 1), f1, ((1, 1), (1, 1))).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert convolved == []


def test_a_frozen_filter_is_laid_out_once_and_goes_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    packings: list[tuple[int, ...]] = []
    real = onednn_conv.pack

    def pack(f: Array, conv: Any) -> Array:
        packings.append(f.shape)
        return real(f, conv)

    monkeypatch.setattr(onednn_conv, "pack", pack)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 10, 10, 1)).astype(np.float32)
    fed = rng.standard_normal((5, 5, 1, 8)).astype(np.float32)
    frozen = fed.copy()
    derived.freeze(frozen)
    gc.collect()
    before = derived.kept_bytes()
    first = _conv2d(x, frozen, b"SAME")
    np.testing.assert_array_equal(_conv2d(x, frozen, b"SAME"), first)
    assert len(packings) == 1 and derived.kept_bytes() > before
    np.testing.assert_array_equal(_conv2d(x, fed, b"SAME"), first)
    np.testing.assert_array_equal(_conv2d(x, fed, b"SAME"), first)
    assert len(packings) == 3  # a filter that may change, laid out every call
    del frozen
    gc.collect()
    assert derived.kept_bytes() == before


def test_a_filter_not_finite_where_its_taps_meet_the_padding_goes_to_the_im2col_product(
    convolved: list[tuple[int, ...]],
) -> None:
    """(found by review) oneDNN skips the taps that fall on the padding; the graph multiplies
    them by its zeros, and an infinite tap there makes NaN. (The fused pool's way too:
    ``test_remapper``'s *an infinite filter corner*.)"""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 6, 6, 1)).astype(np.float32)
    f = rng.standard_normal((3, 3, 1, 4)).astype(np.float32)
    f[0, 0, 0, 2] = np.inf  # the corner: on the padding for the outputs of the first row
    with np.errstate(all="ignore"):
        got = _conv2d(x, f, b"SAME")
        want = _reference(x, f, ((1, 1), (1, 1)))
        assert np.isnan(want).any()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)
        assert convolved == []
        valid = _conv2d(x, f, b"VALID")  # unpadded: every tap meets the input
        assert convolved
        np.testing.assert_array_equal(np.isinf(valid), np.isinf(_reference(x, f, ((0, 0),) * 2)))
