"""Winograd's minimal filtering for stride-1 convolutions: F(4x4, 3x3) and F(4x4, 5x5).

A 4x4 tile of a convolution's output comes from the (3 + kh) x (3 + kw) tile of input under it.
Both that input tile ``d`` and the filter ``g`` are carried into a space where the convolution
is an elementwise product, there summed over input channels, and carried back::

    Y = AT [ (G g G^T) (*) (BT d B) ] A

(Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016). Summed over
channels, the elementwise products of all tiles are one small matmul per tile position,
``(tiles x C) @ (C x K)``, ``a_h * a_w`` of them: that many multiply-adds per tile, input and
output channel, where im2col's GEMM does ``16 kh kw``, 4x fewer for 3x3 filters and 6.25x for
5x5. The transforms are matmuls by small constant matrices over whole blocks of tiles; with
them, a convolution takes 2-2.7x less time on one core than by im2col.

The matrices come from Toom-Cook interpolation. A correlation of ``r`` taps yielding ``m``
outputs is the transpose of a product of two polynomials, of ``r`` and of ``m`` coefficients:
evaluate both at ``a = m + r - 1`` points, multiply, and interpolate the product back (the
inverse of the ``a x a`` evaluation matrix). With ``E_n`` the ``a x n`` matrix evaluating a
polynomial of ``n`` coefficients at the points, ``G = E_r``, ``AT = E_m^T`` and
``BT = (E_a^{-1})^T``. The points are 0, +-1, +-2, +-1/2 and infinity (whose "value" is the
leading coefficient): small ones keep the matrices' entries small, so float32 loses little.
It still loses more than im2col: against float64, the largest error is 3e-6 to 2e-5 of the
largest output (16 to 256 channels; more channels, more error), where im2col's is under 1e-6
(cuDNN's Winograd kernels make the same trade on TensorFlow's GPUs). Infinities and NaNs are
not traded: see :class:`NotFinite`. ``AIOTF_WINOGRAD=0`` in the environment turns it off.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any, NamedTuple

import numpy as np

from aiotf.kernels import derived
from aiotf.kernels.scratch import kept

Array = np.ndarray[Any, Any]

TILE = 4  # outputs per tile side: F(4, 3) and F(4, 5) (larger tiles lose more precision)
FILTER_SIZES = (3, 5)
POINTS = (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5)  # and infinity
# Below this many input or output channels, the transforms cost more than the products saved
# (measured: 16 channels break even for 3x3 filters, win for 5x5).
MIN_CHANNELS = 16
# A few tiles do not pay for the transforms (16 tiles of 3x3 by 256 x 256 channels broke even).
# The transformed filter of a constant is made once (:mod:`aiotf.kernels.derived`); any other is
# made on every call, which does not pay when it is big (9 ms for 512 x 512 channels of 3x3;
# 512 x 512 channels on 14x14 outputs, 1-2 images, were slower than im2col).
MIN_TILES = 16
MAX_FILTER_BYTES = 16 << 20  # of a transformed filter made on every call


def enabled() -> bool:
    """Whether ``AIOTF_WINOGRAD`` allows Winograd convolutions (it does unless set to 0)."""
    return os.environ.get("AIOTF_WINOGRAD", "1") != "0"


def tiles(out_hw: tuple[int, int]) -> tuple[int, int]:
    """How many tiles cover an image's outputs: rows, columns (the last ones may overhang)."""
    return -(-out_hw[0] // TILE), -(-out_hw[1] // TILE)


def suits(n: int, out_hw: tuple[int, int], f: Array, dtype: Any) -> bool:
    """Whether a stride-1, undilated, ungrouped convolution of ``n`` images by ``f`` is faster
    by Winograd's method: a float32 one, with 3 or 5 taps a side, channels enough, tiles enough,
    and a transformed filter made once (a constant's) or small."""
    kh, kw, in_c, out_c = f.shape
    th, tw = tiles(out_hw)
    if not (
        dtype == np.float32
        and kh in FILTER_SIZES
        and kw in FILTER_SIZES
        and min(in_c, out_c) >= MIN_CHANNELS
        and n * th * tw >= MIN_TILES
        and enabled()
    ):
        return False
    nbytes = (TILE + kh - 1) * (TILE + kw - 1) * in_c * out_c * 4
    return (
        nbytes <= MAX_FILTER_BYTES
        or derived.kept("winograd", f) is not None
        or (derived.frozen(f) and derived.room(nbytes))
    )


def transformed_filter(f: Array) -> Array:
    """:func:`filter_transform` of ``f`` (of any float dtype) in float32, made once for a
    constant (see ``derived``)."""
    return derived.derived(
        "winograd", f, lambda f: filter_transform(f.astype(np.float32, copy=False))
    )


def _evaluation(points: Array, n: int) -> Array:
    """The ``len(points) + 1`` x ``n`` matrix evaluating a polynomial of ``n`` coefficients at
    each point, then at infinity (its leading coefficient)."""
    e = np.zeros((len(points) + 1, n))
    e[:-1] = np.power.outer(points, np.arange(n))
    e[-1, -1] = 1.0
    return e


@functools.cache
def transforms(m: int, r: int) -> tuple[Array, Array, Array]:
    """``(AT, G, BT)`` of F(m, r), float32: ``y = AT @ ((G @ g) * (BT @ d))`` is the
    correlation ``y[i] = sum(g[k] * d[i + k])`` of ``r`` taps ``g`` over ``m + r - 1`` inputs
    ``d``."""
    a = m + r - 1
    points = np.array(POINTS[: a - 1])
    at = _evaluation(points, m).T
    g = _evaluation(points, r)
    bt = np.linalg.inv(_evaluation(points, a)).T
    matrices = tuple(np.ascontiguousarray(t, np.float32) for t in (at, g, bt))
    for t in matrices:
        t.flags.writeable = False  # cached, shared by every call
    return matrices  # type: ignore[return-value]


def filter_transform(f: Array) -> Array:
    """``G f G^T`` of every (input, output) channel pair of an HWIO filter, as
    ``(a_h * a_w, C, K)``: the right-hand operands of the per-position matmuls."""
    kh, kw, c, k = f.shape
    gh, gw = transforms(TILE, kh)[1], transforms(TILE, kw)[1]
    u: Array = np.matmul(gh, f.reshape(kh, kw * c * k)).reshape(len(gh), kw, c * k)
    u = np.matmul(gw, u)
    return u.reshape(len(gh) * len(gw), c, k)


class NotFinite(ArithmeticError):
    """A block's outputs came out infinite or NaN: the caller convolves directly instead."""


Block = tuple[int, int, int, int]  # images n0:n1, their tile rows t0:t1


class Tiling(NamedTuple):
    """Where a convolution's output tiles lie on its NHWC input: ``th`` x ``tw`` tiles an image
    over the input padded with zeros by ``top`` rows and ``left`` columns (and on past its
    bottom and right edges to whole tiles), under a ``kh`` x ``kw`` filter."""

    top: int
    left: int
    th: int
    tw: int
    kh: int
    kw: int

    def tiles_shape(self, x: Array, block: Block) -> tuple[int, int, int, int, int, int]:
        """The shape of the input tiles of ``block`` of ``x``: ``(B, TH, TW, C, a_h, a_w)``."""
        n0, n1, t0, t1 = block
        return n1 - n0, t1 - t0, self.tw, x.shape[3], TILE + self.kh - 1, TILE + self.kw - 1


def convolve(x: Array, tiling: Tiling, block: Block, u: Array, out: Array) -> None:
    """Write the output tiles of a block of tiles.

    ``x``: the convolution's NHWC input (any float dtype; computed in float32), of which
    ``block`` is images ``n0:n1``, tile rows ``t0:t1`` (see :class:`Tiling`); ``u``:
    :func:`filter_transform` of the filter; ``out``: where the output goes, a
    ``(n1 - n0, t1 - t0, 4, TW, 4, K)`` view of NHWC outputs.

    Raises :class:`NotFinite` when an output is infinite or NaN. The transforms mix every input
    of a tile into every output of it, so one infinite input makes NaN of all the tile's
    outputs (a direct convolution makes infinities of the outputs whose windows hold it, and
    leaves the rest finite), and a huge finite one can overflow where a direct convolution
    would not; the exact answer needs the direct way.
    """
    work = _transformed(x, tiling, block, u)
    np.copyto(out, work.outputs_nhwc)


def convolve_pooled(x: Array, tiling: Tiling, block: Block, u: Array, out: Array) -> None:
    """:func:`convolve`, then the maximum of every 2x2 window of its outputs (a 2x2 max pool of
    stride 2, each tile's 4x4 outputs pooling into 2x2 of its own): ``out`` is a
    ``(n1 - n0, t1 - t0, 2, TW, 2, K)`` view of NHWC pooled outputs. The outputs come out of the
    transforms position by position, so the pool is two maxima over a whole block (each
    window's rows, then its columns, the second written straight into ``out``), where pooling
    the NHWC outputs takes one numpy loop per pixel's channels; and only a quarter of the
    outputs is written out. Raises :class:`NotFinite` as ``convolve`` does (so no NaN reaches
    the maxima)."""
    work = _transformed(x, tiling, block, u)
    y = work.outputs
    # each window's two rows, then its two columns, straight into ``out``
    np.maximum(y[0::2], y[1::2], out=work.window_rows)
    np.maximum(work.even_columns, work.odd_columns, out=out.transpose(2, 4, 0, 1, 3, 5))


class _Work:
    """A thread's memory for blocks of one shape: the block's input padded, its intermediates,
    and the views of them its steps read and write, made once (see
    :func:`aiotf.kernels.scratch.kept`).

    Two threads run a convolution's blocks side by side, and a numpy call that returns while
    the other thread runs Python waits for the GIL (on the 2-vCPU machine of
    ``docs/performance.md``, a sleep and a wake-up): the Python between a block's numpy calls is
    what the threads cannot overlap, so a block makes no array, view or shape of its own. Each
    block pads its own images (zeros around them stay from the last block, which had the same
    rows of padding), where a padded copy of the whole input took a thread ~0.2-0.5 ms before
    the blocks began; and three buffers hold the five intermediates, each written over once it
    is read, which keeps a block's working set in a core's L2 cache beside the filter's."""

    __slots__ = (
        "at_h", "at_w", "bt_h", "bt_w", "even_columns", "in_rows", "interior", "nbytes",
        "odd_columns", "outputs", "outputs_by_row", "outputs_nhwc", "padded", "products",
        "products_by_row", "rows", "rows_by_column", "rows_out", "rows_out_by_column", "tiles",
        "tiles_by_row", "tiles_in", "transformed", "transformed_by_position", "window_rows",
    )  # fmt: skip

    def __init__(self, x: Array, tiling: Tiling, block: Block, k: int) -> None:
        b, th, tw, c, ah, aw = tiling.tiles_shape(x, block)
        m, half, p = TILE, TILE // 2, b * th * tw
        self.at_h, _, self.bt_h = transforms(m, ah - m + 1)
        self.at_w, _, self.bt_w = transforms(m, aw - m + 1)
        self.padded = np.zeros((b, th * m + ah - m, tw * m + aw - m, c), np.float32)
        self.interior = self.padded[:, :, tiling.left : tiling.left + x.shape[2]]
        self.in_rows = (0, 0)  # the rows of ``padded`` holding input; the others are zeros
        s0, s1, s2, s3 = self.padded.strides
        shape, strides = (b, th, tw, c, ah, aw), (s0, m * s1, m * s2, s3, s1, s2)
        self.tiles_in = np.ndarray(shape, np.float32, self.padded, strides=strides)
        tiles_size, rows_out_size, outputs_size = ah * aw * p * c, m * aw * p * k, m * m * p * k
        first = np.empty(max(tiles_size, outputs_size), np.float32)  # tiles, transformed, outputs
        second = np.empty(max(tiles_size, rows_out_size), np.float32)  # rows, rows out, pool
        self.products = np.empty((ah * aw, p, k), np.float32)
        self.nbytes = self.padded.nbytes + first.nbytes + second.nbytes + self.products.nbytes
        self.tiles = first[:tiles_size].reshape(ah, aw, b, th, tw, c)
        self.tiles_by_row = self.tiles.reshape(ah, aw * p * c)
        self.rows = second[:tiles_size].reshape(ah, aw * p * c)
        self.rows_by_column = self.rows.reshape(ah, aw, p * c)
        self.transformed = first[:tiles_size].reshape(ah, aw, p * c)
        self.transformed_by_position = self.transformed.reshape(ah * aw, p, c)
        self.products_by_row = self.products.reshape(ah, aw * p * k)
        self.rows_out = second[:rows_out_size].reshape(m, aw * p * k)
        self.rows_out_by_column = self.rows_out.reshape(m, aw, p * k)
        self.outputs = first[:outputs_size].reshape(m, m, p * k)
        self.outputs_by_row = self.outputs.reshape(m * m * p * k)
        self.outputs_nhwc = self.outputs.reshape(m, m, b, th, tw, k).transpose(2, 3, 0, 4, 1, 5)
        self.window_rows = second[: half * m * p * k].reshape(half, m, p * k)
        by_tile = self.window_rows.reshape(half, m, b, th, tw, k)
        self.even_columns, self.odd_columns = by_tile[:, 0::2], by_tile[:, 1::2]

    def pad(self, x: Array, tiling: Tiling, block: Block) -> None:
        """Copy the block's input into ``padded``, zeros where its tiles lie past ``x``."""
        n0, n1, t0, _ = block
        first = t0 * TILE - tiling.top  # the row of x at the top of ``padded``
        rows = self.padded.shape[1]
        lo = min(max(0, -first), rows)
        hi = max(lo, min(rows, x.shape[1] - first))
        if (lo, hi) != self.in_rows:
            self.padded[:, :lo] = 0
            self.padded[:, hi:] = 0
            self.in_rows = (lo, hi)
        np.copyto(self.interior[:, lo:hi], x[n0:n1, first + lo : first + hi], "same_kind")


def _transformed(x: Array, tiling: Tiling, block: Block, u: Array) -> _Work:
    """This thread's :class:`_Work` for ``block`` of ``x`` (see :func:`convolve`), its
    ``outputs`` the output tiles by position, ``(4, 4, B * TH * TW * K)``, good until the
    thread's next block of that shape; raises :class:`NotFinite`."""
    key = ("winograd", x.shape[1:], tiling, block[1] - block[0], block[3] - block[2], u.shape[2])
    work = kept(key, lambda: _Work(x, tiling, block, u.shape[2]))
    work.pad(x, tiling, block)
    np.copyto(work.tiles, work.tiles_in.transpose(4, 5, 0, 1, 2, 3))
    # BT d B: over the tile's rows, then its columns
    np.matmul(work.bt_h, work.tiles_by_row, out=work.rows)
    np.matmul(work.bt_w, work.rows_by_column, out=work.transformed)
    # summed over input channels
    np.matmul(work.transformed_by_position, u, out=work.products)
    # AT (...) A
    np.matmul(work.at_h, work.products_by_row, out=work.rows_out)
    np.matmul(work.at_w, work.rows_out_by_column, out=work.outputs)
    # One BLAS call over the outputs: a NaN or infinity makes their sum of squares NaN or
    # infinite (and so may outputs of 1e17 and more, which then go the exact way too).
    if not math.isfinite(np.dot(work.outputs_by_row, work.outputs_by_row)):
        raise NotFinite
    return work
