"""Convolution and pooling kernels: im2col in cache-sized blocks, one BLAS matmul per block.

No Python loop runs over pixels. The input is padded exactly as TensorFlow pads it
(``GetWindowedOutputSizeVerbose``: SAME puts the odd extra pad after, i.e. bottom/right), and
a strided view exposes every window without copying (strides and dilations are the view's
strides).

Conv2D copies the windows of a block of output rows into an im2col matrix and multiplies it by
the filter with one float32 matmul written straight into the output. Blocks are sized so their
im2col matrix stays in a core's L2 cache (COLS_BLOCK_BYTES) between the copy and the matmul
that reads it back — copying all windows at once streams tens of MiB through memory — and in a
pool thread the blocks are shared with the pool's idle threads (``intra_op.parallel_for``):
the batch, then output rows, split across cores. A stride-1 float32 convolution with 3x3 or 5x5
filters and enough channels goes by Winograd's method instead (:mod:`aiotf.kernels.winograd`),
in blocks of tiles shared the same way; another of at most 16 input channels, where oneDNN is
installed, by its direct convolution (``devices/onednn_conv.py``), in blocks of whole images. Depthwise convolution and pooling are
memory-bound: they combine the kh*kw strided "tap" views of the input (one multiply-add, max or
add per tap over the whole output) instead of materializing windows.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np
from numpy.lib.stride_tricks import as_strided

from aiotf.devices import intra_op, onednn_conv
from aiotf.framework import dtypes, errors
from aiotf.framework.common_shapes import explicit_padding_error
from aiotf.kernels import derived, nn_kernels, products, winograd
from aiotf.kernels.math_kernels import FLOATS, shape_str
from aiotf.kernels.registry import (
    NS_PER_ELEMENT,
    NS_PER_FLOP,
    KernelNode,
    Parts,
    graph_node_error,
    input_elements,
    register_kernel,
)
from aiotf.kernels.scratch import scratch

Array = np.ndarray[Any, Any]
_T = TypeVar("_T")

_CONV_TYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def windowed_output_size(
    size: int, k: int, stride: int, dilation: int, padding: bytes, explicit: tuple[int, int]
) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of one spatial dimension, as TensorFlow computes."""
    if stride <= 0:
        raise _invalid(f"Stride must be > 0, but got {stride}")
    if dilation <= 0:
        raise _invalid(f"Dilation rate must be >= 1, but got {dilation}")
    eff = (k - 1) * dilation + 1
    if padding == b"VALID":
        out, before, after = (size - eff + stride) // stride, 0, 0
    elif padding == b"SAME":
        out = (size + stride - 1) // stride
        needed = max(0, (out - 1) * stride + eff - size)
        before, after = needed // 2, needed - needed // 2
    else:
        before, after = explicit
        out = (size + before + after - eff + stride) // stride
    if out < 0:
        raise _invalid(
            f"Computed output size would be negative: {out} [input_size: {size}, "
            f"effective_filter_size: {eff}, stride: {stride}]"
        )
    return out, before, after


def _to_nhwc(x: Array, data_format: bytes) -> Array:
    return np.transpose(x, (0, 2, 3, 1)) if data_format.startswith(b"NCHW") else x


def _from_nhwc(x: Array, data_format: bytes) -> Array:
    return np.ascontiguousarray(
        np.transpose(x, (0, 3, 1, 2)) if data_format.startswith(b"NCHW") else x
    )


def _hw(values: Sequence[int], data_format: bytes, what: str, op: str) -> tuple[int, int]:
    """The (H, W) entries of a 4-element attr in ``data_format``; TF's checks on the rest."""
    if len(values) != 4:
        raise _invalid(f"Sliding window {what} field must specify 4 dimensions")
    nchw = data_format.startswith(b"NCHW")
    n, c, h, w = (0, 1, 2, 3) if nchw else (0, 3, 1, 2)
    if op != "pool":
        if values[n] != 1 or values[c] != 1:
            raise errors.UnimplementedError(
                None,
                None,
                f"Current implementation does not yet support {what} in the batch and depth "
                "dimensions.",
            )
    elif values[n] != 1:  # TensorFlow's words and class
        raise errors.UnimplementedError(
            None, None, "Pooling is not yet supported on the batch dimension."
        )
    elif values[c] != 1:  # pooling over depth: TensorFlow's CPU kernels take it in a few cases
        raise _invalid(f"Pooling is not yet supported on the batch or depth dimension ({what}).")
    return int(values[h]), int(values[w])


def _explicit(
    explicit_paddings: Sequence[int], padding: bytes, data_format: bytes
) -> tuple[Any, Any]:
    """The (H, W) ``(before, after)`` pads of EXPLICIT padding, checked as TensorFlow checks
    them (``CheckValidPadding``)."""
    wrong = explicit_padding_error(explicit_paddings, padding, data_format)
    if wrong is not None:
        raise _invalid(wrong)
    if padding != b"EXPLICIT":
        return (0, 0), (0, 0)
    p = [int(v) for v in explicit_paddings]
    h = 2 if data_format.startswith(b"NCHW") else 1
    return (p[2 * h], p[2 * h + 1]), (p[2 * h + 2], p[2 * h + 3])


def _geometry(
    x: Array,
    k: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    padding: bytes,
    explicit: tuple[Any, Any],
) -> tuple[int, int, tuple[tuple[int, int], tuple[int, int]]]:
    """(OH, OW, ((pad top, bottom), (pad left, right))) of a window op over NHWC ``x``."""
    _, h, w, _ = x.shape
    oh, ph0, ph1 = windowed_output_size(h, k[0], strides[0], dilations[0], padding, explicit[0])
    ow, pw0, pw1 = windowed_output_size(w, k[1], strides[1], dilations[1], padding, explicit[1])
    return oh, ow, ((ph0, ph1), (pw0, pw1))


def _padded(x: Array, pads: tuple[tuple[int, int], tuple[int, int]], value: Any = 0) -> Array:
    """NHWC ``x`` with ``value`` around it: what ``np.pad`` does, in about a third of its time
    (np.pad is ~100 numpy calls; a convolution pays it once per call)."""
    (top, bottom), (left, right) = pads
    if not top + bottom + left + right:
        return x
    n, h, w, c = x.shape
    out = np.empty((n, top + h + bottom, left + w + right, c), x.dtype)
    out[:, :top] = value
    out[:, top + h :] = value
    rows = out[:, top : top + h]
    rows[:, :, :left] = value
    rows[:, :, left + w :] = value
    rows[:, :, left : left + w] = x
    return out


def _taps(
    xp: Array,
    k: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    out_hw: tuple[int, int],
) -> Iterator[tuple[int, int, Array]]:
    """``(i, j, view)`` per filter tap: the (N, OH, OW, C) input pixels tap (i, j) meets."""
    (sh, sw), (dh, dw), (oh, ow) = strides, dilations, out_hw
    for i in range(k[0]):
        for j in range(k[1]):
            r, q = i * dh, j * dw
            yield i, j, xp[:, r : r + (oh - 1) * sh + 1 : sh, q : q + (ow - 1) * sw + 1 : sw]


def _windows(
    xp: Array,
    k: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    out_hw: tuple[int, int],
) -> Array:
    """Every window of the padded NHWC ``xp`` as a view of shape (N, OH, OW, KH, KW, C)."""
    (sh, sw), (dh, dw) = strides, dilations
    n, _, _, c = xp.shape
    s0, s1, s2, s3 = xp.strides
    return _view(xp, (n, *out_hw, *k, c), (s0, sh * s1, sw * s2, dh * s1, dw * s2, s3))


def _view(x: Array, shape: tuple[int, ...], strides: tuple[int, ...]) -> Array:
    """A read-only view of ``x``'s memory with ``shape`` and ``strides`` (windows, tiles).

    ``sliding_window_view`` and slices of it make the same views, in ~10 us of Python a call
    alone, 40-90 us in a step that has just streamed megabytes through the cache (the numpy
    machinery it walks is evicted): a cnn step made four of them. The array constructor takes
    ~1 us, and checks that the view stays within ``x``."""
    if x.flags.c_contiguous:
        view: Array = np.ndarray(shape, x.dtype, buffer=x, strides=strides)
        view.flags.writeable = False
        return view
    return as_strided(x, shape, strides, writeable=False)  # any layout; strides made to fit


def _compute_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """Half and bfloat16 are computed in float32 (as TensorFlow's CPU kernels accumulate)."""
    return np.dtype(np.float32) if dtype.itemsize < 4 and dtype.kind not in "iu" else dtype


def _conv_operands(
    x: Array, f: Array, strides: list[int], dilations: list[int], data_format: bytes
) -> tuple[tuple[int, int], tuple[int, int], Array]:
    """Checked ``(strides_hw, dilations_hw, x as NHWC)`` for a 2-D convolution."""
    if np.ndim(x) != 4:
        raise _invalid(f"input must be 4-dimensional{shape_str(x)}")
    if np.ndim(f) != 4:
        raise _invalid(f"filter must be 4-dimensional: {shape_str(f)}")
    s = _hw(strides, data_format, "strides", "conv")
    d = _hw(dilations, data_format, "dilations", "conv")
    return s, d, _to_nhwc(x, data_format)


def _conv_cost(x: Any, w: Any) -> float:
    """The cost model's estimate (stride 1): 2 flops per filter tap per output position, and
    the im2col copy of every window."""
    if not (isinstance(x, np.ndarray) and isinstance(w, np.ndarray)) or w.ndim != 4:
        return input_elements(x, w)
    kh, kw, in_c, out_c = (int(d) for d in w.shape)
    positions = x.size / max(in_c, 1)
    taps = kh * kw * in_c
    return float(positions * taps * (2.0 * out_c * NS_PER_FLOP + NS_PER_ELEMENT))


# An im2col block's columns stay in a core's L2 cache between the copy and the matmul.
COLS_BLOCK_BYTES = 1 << 20


def _row_blocks(n: int, oh: int, row_bytes: int, budget: int) -> list[tuple[int, int, int, int]]:
    """``(n0, n1, h0, h1)``: blocks of whole images, or of one image's rows (of outputs, or of
    Winograd tiles), whose working set takes about ``budget`` bytes (at least two blocks per
    pool thread)."""
    image = max(oh * row_bytes, 1)
    if image <= budget:
        per = min(budget // image, max(1, -(-n // (2 * intra_op.workers()))))
        return [(i, min(i + per, n), 0, oh) for i in range(0, n, per)]
    rows = max(1, budget // max(row_bytes, 1))
    return [(i, i + 1, h, min(h + rows, oh)) for i in range(n) for h in range(0, oh, rows)]


def _conv_gemm(windows: Array, wmat: Array, out: Array) -> None:
    """``out[n, h, w] = windows[n, h, w].ravel() @ wmat`` for every output pixel, in blocks."""
    n, oh, ow = out.shape[:3]
    depth, out_c = wmat.shape
    rows = out.reshape(n * oh * ow, out_c)
    blocks = _row_blocks(n, oh, ow * depth * wmat.itemsize, COLS_BLOCK_BYTES)

    one_channel = windows.shape[5] == 1

    def block(b: int) -> None:
        n0, n1, h0, h1 = blocks[b]
        first, last = (n0 * oh + h0) * ow, ((n1 - 1) * oh + h1) * ow
        if one_channel:
            # Tap-major im2col: each tap's pixels go in as runs of ow contiguous inputs, where
            # the pixel-major copy moves one float at a time (4x slower for a 5x5 filter).
            cols_t = np.empty((depth, last - first), wmat.dtype)
            taps = np.transpose(windows[n0:n1, h0:h1, :, :, :, 0], (3, 4, 0, 1, 2))
            cols_t.reshape(taps.shape)[...] = taps
            products.into(cols_t.T, wmat, rows[first:last], whole_rows=len(rows))
        else:
            cols = np.ascontiguousarray(windows[n0:n1, h0:h1], dtype=wmat.dtype)
            products.into(cols.reshape(-1, depth), wmat, rows[first:last], whole_rows=len(rows))

    intra_op.parallel_for(len(blocks), block)


def _conv_gemm_pooled(xp: Array, k: tuple[int, int], wmat: Array, out: Array) -> _Blocks:
    """The 2x2 max pool of stride 2 of the stride-1 convolution of the padded NHWC ``xp`` by
    ``wmat`` (its filter of window ``k`` as a matrix), into the NHWC ``out``: ``_conv_gemm``'s
    blocks, each pooled while its outputs are in the core's cache (as MaxPool pools: a NaN
    never wins); ``out`` once every window held a value above the lowest (see ``_max_into``).

    A block's im2col rows go in the order (row in the pool's window, column in it, image,
    pooled row, pooled column), so the product comes out as four slabs, one per position in
    the pool's window, each in the pooled outputs' own order: the pool's three maxima then run
    over contiguous memory (pooling NHWC outputs runs one numpy loop per pixel's channels).
    The same products as ``_conv_gemm``'s, in another row order."""
    n, oh2, ow2, out_c = out.shape
    c = xp.shape[3]
    depth = wmat.shape[0]
    s0, s1, s2, s3 = xp.strides
    pairs = _view(xp, (n, oh2, 2, ow2, 2, *k, c), (s0, 2 * s1, s1, 2 * s2, s2, s1, s2, s3))
    blocks = _row_blocks(n, oh2, 4 * ow2 * depth * wmat.itemsize, COLS_BLOCK_BYTES)
    lowest = _lowest(out.dtype)
    floored = []  # blocks with a window of nothing but NaN or -inf

    def block(b: int) -> None:
        n0, n1, h0, h1 = blocks[b]
        windows = pairs[n0:n1, h0:h1]
        rows = 4 * (n1 - n0) * (h1 - h0) * ow2
        if c == 1:  # tap-major, as in _conv_gemm
            cols_t = scratch("im2col columns", (depth, rows), wmat.dtype)
            taps = np.transpose(windows[..., 0], (5, 6, 2, 4, 0, 1, 3))
            cols_t.reshape(taps.shape)[...] = taps
            cols = cols_t.T
        else:
            by_position = np.transpose(windows, (2, 4, 0, 1, 3, 5, 6, 7))
            cols = np.ascontiguousarray(by_position, dtype=wmat.dtype).reshape(rows, depth)
        outputs = scratch("im2col products", (rows, out_c), wmat.dtype)
        products.into(cols, wmat, outputs, whole_rows=4 * n * oh2 * ow2)
        pooled = out[n0:n1, h0:h1]
        _fmax_over(list(outputs.reshape(4, n1 - n0, h1 - h0, ow2, out_c)), pooled)
        if not pooled.min() > lowest:  # False for a NaN too
            floored.append(b)

    return _Blocks(len(blocks), block, lambda: None if floored else out)


def _by_onednn(
    x: Array,
    f: Array,
    pads: tuple[tuple[int, int], tuple[int, int]],
    out: Array,
    pool: bool = False,
) -> _Blocks:
    """The stride-1, undilated, ungrouped convolution of the NHWC ``x`` by ``f`` into the
    NHWC ``out``, by oneDNN's primitive (``devices/onednn_conv.py``: few input channels, where
    :func:`_onednn_takes` them), in blocks of whole images; with ``pool``, ``out`` is its 2x2
    max pool of stride 2, each block's outputs made in its thread's scratch memory and pooled
    from there while in the core's cache (as MaxPool pools: a NaN never wins), and the answer
    ``out`` only if every pooled window held a value above the lowest (see ``_max_into``).

    Every block is made by a primitive of its size (one or two sizes), each image's outputs the
    same in any block (the cnn's first layer's, checked)."""
    (top, bottom), (left, right) = pads
    n, oh, ow, oc = out.shape
    if pool:
        oh, ow = 2 * oh, 2 * ow
    image = oh * ow * oc * out.itemsize
    per = max(1, min(COLS_BLOCK_BYTES // image, -(-n // (2 * intra_op.workers()))))
    starts = range(0, n, per)
    convs = {
        size: onednn_conv.primitive(x[:size], f, (oh, ow), (top, bottom, left, right))
        for size in {min(per, n - lo) for lo in starts}
    }
    filters = {conv.layout: _onednn_filter(f, conv) for conv in convs.values()}
    lowest = _lowest(out.dtype)
    floored = []

    def block(b: int) -> None:
        lo = starts[b]
        hi = min(lo + per, n)
        conv = convs[hi - lo]
        if not pool:
            onednn_conv.into(x[lo:hi], filters[conv.layout], out[lo:hi], conv)
            return
        made = scratch("convolved", (hi - lo, oh, ow, oc), out.dtype)
        onednn_conv.into(x[lo:hi], filters[conv.layout], made, conv)
        v = made.reshape(hi - lo, oh // 2, 2, ow // 2, 2 * oc)
        pooled = out[lo:hi]
        _fmax_over([v[:, :, 0, :, :oc], v[:, :, 0, :, oc:], v[:, :, 1, :, :oc],
                    v[:, :, 1, :, oc:]], pooled)  # fmt: skip
        if not pooled.min() > lowest:  # False for a NaN too
            floored.append(b)

    return _Blocks(len(starts), block, lambda: None if floored else out)


def _onednn_takes(x: Array, f: Array, pads: tuple[tuple[int, int], tuple[int, int]]) -> bool:
    """Whether :func:`_by_onednn` may convolve ``x`` by ``f``: ``onednn_conv.takes`` them, and
    nothing is padded or every tap of the filter is finite. oneDNN skips the taps that fall on
    the padding, where the graph's convolution multiplies them by its zeros, and 0 x inf is NaN
    (found by review: a filter's infinite corner gave finite outputs). Whether a frozen filter
    is finite is found once (``derived``)."""
    if not onednn_conv.takes(x, f):
        return False
    (top, bottom), (left, right) = pads
    if not (top or bottom or left or right):
        return True
    finite = derived.derived("finite", f, lambda source: np.array(np.isfinite(source).all()))
    return bool(finite)


def _onednn_filter(f: Array, conv: Any) -> Array:
    """``f`` laid out for ``conv`` (``onednn_conv.pack``): kept while a frozen ``f`` lives."""
    kind = ("onednn conv filter", conv.layout)
    data = derived.kept(kind, f)
    if data is not None:
        return data
    if derived.frozen(f) and derived.room(4 * conv.weights_size):
        return derived.derived(kind, f, lambda source: onednn_conv.pack(source, conv))
    return onednn_conv.pack(f, conv)


# A block of Winograd tiles: its input tiles, their two transforms and the products, by this
# estimate (tile_bytes below counts more than the buffers a block keeps). On one thread blocks
# of 1.5 and 3 MiB run alike (the cnn's second convolution by two or three images; four, past
# the L2 cache, are slower); with both pool threads running blocks, whose numpy calls wait on
# each other for the GIL, fewer blocks are faster (tenth session: cnn 3.7-6% a step; 3x3 layers
# of 64 channels 5-13%, of 128-256 within 2.5%; 4.5 and 6 MiB slower than 3). But at
# least BLOCK_TILES tiles, the rows of each block's matmuls, which read the whole transformed
# filter (wide layers: 512 channels in and out make it 36 MiB).
TILES_BLOCK_BYTES = 3 << 20
BLOCK_TILES = 32


def _winograd_conv(
    xn: Array,
    f: Array,
    pads: tuple[tuple[int, int], tuple[int, int]],
    out_hw: tuple[int, int],
    pooled: Callable[[Array], None] | None = None,
) -> _Blocks:
    """The stride-1 convolution of NHWC ``xn`` by ``f`` (computed in float32) by Winograd's method
    (:mod:`aiotf.kernels.winograd`), in blocks of tiles; no answer (None) when an output came out
    infinite or NaN (the direct way has the exact answer).

    With ``pooled`` (``out_hw`` even), the answer is the convolution's 2x2 max pool of stride 2
    instead, each block's pooled as its tiles come out (``winograd.convolve_pooled``), and
    ``pooled`` is called on all the pooled outputs (the tiles' overhang too) before they are
    cropped."""
    n, _, _, c = xn.shape
    kh, kw, _, out_c = f.shape
    (oh, ow), m = out_hw, winograd.TILE
    th, tw = winograd.tiles(out_hw)
    (top, _), (left, _) = pads  # padded as TensorFlow pads, and on to whole tiles
    tiling = winograd.Tiling(top, left, th, tw, kh, kw)
    side = m if pooled is None else m // 2  # outputs a tile side
    out = np.empty((n, th * side, tw * side, out_c), np.float32)
    out_tiles = out.reshape(n, th, side, tw, side, out_c)
    u = winograd.transformed_filter(f)
    tile_bytes = (m + kh - 1) * (m + kw - 1) * (3 * c + 2 * out_c) * 4
    budget = max(TILES_BLOCK_BYTES, BLOCK_TILES * tile_bytes)
    blocks = _row_blocks(n, th, tw * tile_bytes, budget)
    # Fewer blocks than threads (one image of few tiles, wide channels): the output channels
    # are split too, each part reading its share of the transformed filter (and transforming
    # the block's input tiles again, a small cost beside the products).
    k_parts = max(1, min(-(-intra_op.workers() // len(blocks)), out_c // winograd.MIN_CHANNELS))
    k_bounds = [out_c * i // k_parts for i in range(k_parts + 1)]
    convolve = winograd.convolve if pooled is None else winograd.convolve_pooled
    infinite: list[int] = []  # blocks that met an infinity or a NaN

    def block(b: int) -> None:
        if infinite:  # no answer by tiles: the blocks left are not worth making
            return
        tiles, k = blocks[b // k_parts], b % k_parts
        (n0, n1, t0, t1), k0, k1 = tiles, k_bounds[k], k_bounds[k + 1]
        try:
            convolve(xn, tiling, tiles, u[:, :, k0:k1], out_tiles[n0:n1, t0:t1, ..., k0:k1])
        except winograd.NotFinite:
            infinite.append(b)

    def finish() -> Array | None:
        if infinite:
            return None
        if pooled is not None:
            pooled(out)
        return out[:, : oh * side // m, : ow * side // m]

    return _Blocks(len(blocks) * k_parts, block, finish)


class _Blocks(NamedTuple):
    """A convolution's work in blocks for the pool's threads: ``block(b)`` for each ``b`` of
    ``range(num)``, in any order and on any thread, then ``finish()``: the answer, or None
    where a block found that the graph's order could part from it (a pooled window of nothing
    but NaN or -inf, an infinity among Winograd's tiles). Run by :func:`_run`, or as a fused
    pool's ``parts``, the thread that ends the last block finishing (``intra_op.Relay``). A plan
    runs and finishes once (``finish`` may bias and rectify its outputs in place)."""

    num: int
    block: Callable[[int], None]
    finish: Callable[[], Array | None]


def _run(blocks: _Blocks) -> Array | None:
    """``blocks`` run on this thread and the pool's idle ones, then finished."""
    with np.errstate(invalid="ignore", over="ignore"):  # (the pool's threads ignore them)
        intra_op.parallel_for(blocks.num, blocks.block)
    return blocks.finish()


@register_kernel("Conv2D", types={"T": (*_CONV_TYPES, dtypes.int32)}, cost=_conv_cost)
def conv2d(
    x: Array,
    f: Array,
    *,
    strides: list[int],
    padding: bytes,
    explicit_paddings: list[int],
    data_format: bytes,
    dilations: list[int],
) -> Array:
    s, d, xn = _conv_operands(x, f, strides, dilations, data_format)
    kh, kw, fc, out_c = f.shape
    n, c = xn.shape[0], xn.shape[3]
    if fc == 0 or c % fc:
        raise _invalid(f"input depth must be evenly divisible by filter depth: {c} vs {fc}")
    groups = c // fc
    if out_c % groups:
        raise _invalid(
            f"output depth must be evenly divisible by number of groups: {out_c} vs {groups}"
        )
    k = (kh, kw)
    oh, ow, pads = _geometry(
        xn, k, s, d, padding, _explicit(explicit_paddings, padding, data_format)
    )
    ct = _compute_dtype(x.dtype)
    if not n * oh * ow * out_c * kh * kw:
        return _from_nhwc(np.zeros((n, oh, ow, out_c), x.dtype), data_format)
    if groups == 1 and s == d == (1, 1) and winograd.suits(n, (oh, ow), f, ct):
        by_tiles = _run(_winograd_conv(xn, f, pads, (oh, ow)))
        if by_tiles is not None:
            return _from_nhwc(by_tiles.astype(x.dtype, copy=False), data_format)
    out = np.empty((n, oh, ow, out_c), ct)
    if groups == 1 and s == d == (1, 1) and ct == np.float32 and _onednn_takes(xn, f, pads):
        _run(_by_onednn(xn, f, pads, out))
        return _from_nhwc(out, data_format)
    windows = _windows(_padded(xn, pads), k, s, d, (oh, ow))  # (N, OH, OW, KH, KW, C)
    if groups == 1:
        _conv_gemm(windows, f.astype(ct, copy=False).reshape(kh * kw * c, out_c), out)
    else:
        _grouped_conv(windows, f.astype(ct, copy=False), groups, out)
    return _from_nhwc(out.astype(x.dtype, copy=False), data_format)


def _grouped_conv(windows: Array, f: Array, groups: int, out: Array) -> None:
    """A grouped convolution: one batched matmul over the groups."""
    n, oh, ow, out_c = out.shape
    kh, kw, fc, _ = f.shape
    og, p = out_c // groups, n * oh * ow
    cols = np.ascontiguousarray(windows, dtype=f.dtype).reshape(p, kh * kw, groups, fc)
    a = np.transpose(cols, (2, 0, 1, 3)).reshape(groups, p, kh * kw * fc)
    w = np.transpose(f.reshape(kh * kw * fc, groups, og), (1, 0, 2))
    out[...] = np.transpose(np.matmul(a, w), (1, 0, 2)).reshape(n, oh, ow, out_c)


@register_kernel("DepthwiseConv2dNative", types={"T": _CONV_TYPES}, cost=_conv_cost)
def depthwise_conv2d_native(
    x: Array,
    f: Array,
    *,
    strides: list[int],
    padding: bytes,
    explicit_paddings: list[int],
    data_format: bytes,
    dilations: list[int],
) -> Array:
    s, d, xn = _conv_operands(x, f, strides, dilations, data_format)
    kh, kw, fc, mult = f.shape
    n, c = xn.shape[0], xn.shape[3]
    if c != fc:
        raise _invalid(f"input and filter must have the same depth: {c} vs {fc}")
    k = (kh, kw)
    oh, ow, pads = _geometry(
        xn, k, s, d, padding, _explicit(explicit_paddings, padding, data_format)
    )
    ct = _compute_dtype(x.dtype)
    out = np.zeros((n, oh, ow, c, mult), ct)
    if out.size:
        xp = _padded(xn.astype(ct, copy=False), pads)
        fw = f.astype(ct, copy=False)
        # Per tap, over the whole output: out += x[tap] * f[tap], in the filter's row-major
        # order (TensorFlow's CPU kernel sums the taps in that order too).
        product = np.empty_like(out)
        for i, j, tap in _taps(xp, k, s, d, (oh, ow)):
            np.multiply(tap[..., None], fw[i, j], out=product)
            out += product
    out = out.reshape(n, oh, ow, c * mult).astype(x.dtype, copy=False)
    return _from_nhwc(out, data_format)


def _lowest(dtype: np.dtype[Any]) -> Any:
    """The lowest finite value of ``dtype`` (TensorFlow's ``NumTraits<T>::lowest()``)."""
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return dtypes.finfo(dtype).min


_POOL_TYPES = (
    dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64,
    dtypes.uint8, dtypes.int16, dtypes.int8, dtypes.uint16,
)  # fmt: skip


@register_kernel("MaxPool", types={"T": _POOL_TYPES}, cost=input_elements)
def max_pool(
    x: Array,
    *,
    ksize: list[int],
    strides: list[int],
    padding: bytes,
    explicit_paddings: list[int],
    data_format: bytes,
) -> Array:
    attrs = {"explicit_paddings": explicit_paddings, "data_format": data_format}
    return _max_pool(x, ksize=ksize, strides=strides, padding=padding, **attrs)[0]


def _max_pool(x: Array, **window: Any) -> tuple[Array, bool]:
    """MaxPool's output (``window``: its attrs, as ``_max_pool_windows`` takes them), and
    whether every window held a value above the lowest (floats; False for integers, whose
    output is not scanned)."""
    windows, shape = _max_pool_windows(x, **window)
    if windows is None:
        return _from_nhwc(np.zeros(shape, x.dtype), window["data_format"]), False
    out = np.empty(shape, x.dtype)
    above = _max_into(windows, out, 0, shape[0])
    return _from_nhwc(out, window["data_format"]), above


def _max_pool_windows(x: Array, **window: Any) -> tuple[_MaxWindows | None, tuple[int, ...]]:
    """MaxPool's windows over ``x`` as NHWC (padded with the lowest value) and its NHWC output
    shape; None for the windows when the output or the window is empty. ``window``: MaxPool's
    attrs (``ksize``, ``strides``, ``padding``, ``explicit_paddings``, ``data_format``)."""
    if np.ndim(x) != 4:
        raise _invalid(f"tensor_in must be 4-dimensional {shape_str(x)}")
    data_format, padding = window["data_format"], window["padding"]
    k = _hw(window["ksize"], data_format, "ksize", "pool")
    s = _hw(window["strides"], data_format, "stride", "pool")
    xn = _to_nhwc(x, data_format)
    explicit = _explicit(window["explicit_paddings"], padding, data_format)
    oh, ow, pads = _geometry(xn, k, s, (1, 1), padding, explicit)
    shape = (xn.shape[0], oh, ow, xn.shape[3])
    if not math.prod(shape) * k[0] * k[1]:  # np.prod of a tuple: ~4 us (an array made)
        return None, shape
    return _MaxWindows(_padded(xn, pads, _lowest(x.dtype)), k, s, (oh, ow)), shape


class _MaxWindows:
    """The windows of a max pool over the padded NHWC ``xp``, and the way their maxima are
    taken: over the kh*kw taps, or *by rows* when that takes fewer: the maximum of each
    window's kh rows over the whole padded width first, then of kw columns of that.

    By rows, a 3x3 window with stride 2 takes six maxima per output pixel where taps take
    eight, and two thirds of them in numpy loops as long as a padded row (a tap's loop is one
    pixel's channels); at stride 1, four against eight. Measured in a session (Intel Xeon,
    one pool thread): 3x3/2 over 8x112x112x64 14.2 against 19.1 ms, over 1x112x112x64 1.65
    against 1.92 ms, 3x3/1 over 16x35x35x192 14.2 against 19.4 ms. A 2x2 window with stride 2
    takes three either way, and by rows was no faster there (0.65 against 0.58 ms in a pool
    thread for the cnn's first pool, though 0.47 against 0.63 in a loop on the main thread),
    so it goes by taps."""

    __slots__ = ("_by_rows", "_hw", "_k", "_s", "_span", "_xp")

    def __init__(
        self, xp: Array, k: tuple[int, int], s: tuple[int, int], out_hw: tuple[int, int]
    ) -> None:
        self._xp, self._k, self._s, self._hw = xp, k, s, out_hw
        (kh, kw), ow = k, out_hw[1]
        self._span = (ow - 1) * s[1] + kw  # the padded columns the windows cover
        by_taps = (kh * kw - 1) * ow  # maxima taken, in output pixels
        by_rows = (kh - 1) * self._span + (kw - 1) * ow
        self._by_rows = by_rows < by_taps

    def max_into(self, out: Array, lo: int, hi: int) -> None:
        """Images ``lo:hi`` of ``out``: the fmax over each window (a NaN never wins)."""
        xp = self._xp[lo:hi]
        if not self._by_rows:
            taps = _taps(xp, self._k, self._s, (1, 1), self._hw)
            _fmax_over([tap for _, _, tap in taps], out[lo:hi])
            return
        (kh, kw), (sh, sw), (oh, ow), span = self._k, self._s, self._hw, self._span
        rows = np.empty((hi - lo, oh, span, xp.shape[3]), xp.dtype)
        _fmax_over([xp[:, i : i + (oh - 1) * sh + 1 : sh, :span] for i in range(kh)], rows)
        _fmax_over([rows[:, :, j : j + (ow - 1) * sw + 1 : sw] for j in range(kw)], out[lo:hi])


def _fmax_over(views: list[Array], out: Array) -> None:
    """``out[...]`` = the elementwise fmax of ``views`` (at least one)."""
    if len(views) == 1:
        out[...] = views[0]
        return
    np.fmax(views[0], views[1], out=out)
    for view in views[2:]:
        np.fmax(out, view, out=out)


def _max_into(windows: _MaxWindows, out: Array, lo: int, hi: int) -> bool:
    """Images ``lo:hi`` of the NHWC ``out``: the maximum over each window, as TensorFlow's CPU
    kernel takes it; whether every window held a value above the lowest (False for integers,
    which are not scanned).

    The kernel starts every window at the lowest finite value and takes std::max-style maxima:
    a NaN never wins (fmax), and an all-NaN or all -inf window answers lowest. So: fmax over the
    windows, then lowest where that left NaN or -inf (rare; fmax against a scalar takes a slower
    loop, so it runs only when the minimum says so).
    """
    o = out[lo:hi]
    with np.errstate(invalid="ignore"):  # bfloat16 warns on a NaN
        windows.max_into(out, lo, hi)
        if o.dtype.kind in "iu":  # floats: bfloat16's kind is "V"
            return False
        lowest = _lowest(o.dtype)
        above = bool(o.min() > lowest)  # False for a NaN too
        if not above:
            np.fmax(o, lowest, out=o)
    return above


# The graph's own nodes a _FusedMaxPool stands for: their attrs (the pool's window, and T). A
# fused Conv2D's own are kept as conv_<attr> (its T and data_format are the pool's).
_POOL_WINDOW = ("ksize", "strides", "padding", "explicit_paddings", "data_format")
_CONV_WINDOW = ("strides", "padding", "explicit_paddings", "dilations")
_CONV_ATTRS = (*_CONV_WINDOW, "use_cudnn_on_gpu")
_FUSED_ATTRS = {
    b"Conv2D": ("T", *_CONV_ATTRS, "data_format"),
    b"BiasAdd": ("T", "data_format"),
    b"Relu": ("T",),
    b"MaxPool": ("T", *_POOL_WINDOW),
}


def _fused_attr(op: bytes, key: str) -> str:
    """The fused node's name for the attr ``key`` of its graph node of type ``op``."""
    return f"conv_{key}" if op == b"Conv2D" and key in _CONV_ATTRS else key


def _fused_pool_cost(x: Any, *args: Any, node: KernelNode) -> float:
    """A fused Conv2D's estimate (the pool's is small beside it), else the pool's."""
    if node.attrs["fused_ops"][:1] == [b"Conv2D"]:
        return _conv_cost(x, args[0])
    return input_elements(x, *args)


# The remapper's MaxPool of BiasAdd and/or Relu (``runtime/remapper.py``), computed pool first.
# The pool starts each window at the lowest finite value L and skips NaNs, so the graph's order
# gives max(L, f(x_1), ..., f(x_n)) over a window's non-NaN inputs, f the bias and Relu. Adding a
# bias and Relu never reorder two values (rounding to nearest is monotone), so that is
# max(L, f(max(x_i))): f runs on the pooled tensor, a quarter of the elements under 2x2 pools.
# Where f could part from it, the ops run in the graph's order: a window of nothing but NaN or
# -inf (the pool answers L, but f(L) is not L), or a bias that is not finite (inf + -inf is NaN).
# And max(L, .) stays: a bias can overflow to -inf, which the graph's order answers with L.
# The Conv2D under them may be fused too (its filter the first of ``args``): its outputs are then
# pooled block by block as they are made (_conv_pool_first), or, where that does not apply,
# computed whole by the Conv2D kernel and pooled as above.
def _fused_pool_parts(x: Array, *args: Array, node: KernelNode) -> Parts | None:
    """The kernel's ``parts`` (``register_kernel``): the blocks of a convolution pooled as it is
    made (:func:`_conv_pool_first`), the last block's thread finishing them (and falling back to
    the whole convolution where a block found the graph's order could part from the pooled
    one); None for any other fused pool, which the kernel computes whole."""
    if node.attrs["fused_ops"][:1] != [b"Conv2D"]:
        return None
    f, bias = args[0], (args[1] if len(args) > 1 else None)
    blocks = _conv_pool_first(x, f, bias, node)
    if blocks is None:
        return None

    def outputs() -> Array:
        pooled = blocks.finish()
        return pooled if pooled is not None else _fused_pool_whole(x, args, node)

    return [functools.partial(blocks.block, b) for b in range(blocks.num)], outputs


@register_kernel(
    "_FusedMaxPool", types={"T": FLOATS}, cost=_fused_pool_cost, parts=_fused_pool_parts
)
def fused_max_pool(x: Array, *args: Array, node: KernelNode) -> Array:
    split = _fused_pool_parts(x, *args, node=node)
    if split is None:
        return _fused_pool_whole(x, args, node)
    parts, outputs = split
    with np.errstate(invalid="ignore", over="ignore"):  # (the pool's threads ignore them)
        intra_op.parallel_for(len(parts), lambda i: parts[i]())
    pooled: Array = outputs()
    return pooled


def _fused_pool_whole(x: Array, args: tuple[Array, ...], node: KernelNode) -> Array:
    """The fused pool without its convolution's blocks pooled as they are made: the
    convolution (if fused) whole, then the pool first where it may be, else the graph's ops in
    order, each error naming its node."""
    window = {key: node.attrs[key] for key in _POOL_WINDOW}

    def as_max_pool(fn: Callable[..., _T], v: Array) -> _T:
        """``fn(v, **window)``, its errors raised as the graph's MaxPool node raises them."""
        try:
            return fn(v, **window)
        except errors.OpError as e:
            raise _as_graph_node_error(e, node, len(node.attrs["fused_ops"])) from e

    channels = 1 if window["data_format"] == b"NCHW" else 3
    has_conv = node.attrs["fused_ops"][:1] == [b"Conv2D"]
    f, args = (args[0], args[1:]) if has_conv else (None, args)
    bias = args[0] if args else None
    if f is not None:
        conv = {key: node.attrs[f"conv_{key}"] for key in _CONV_WINDOW}
        try:
            x = conv2d(x, f, data_format=window["data_format"], **conv)
        except errors.OpError as e:
            raise _as_graph_node_error(e, node, 0) from e
    if np.ndim(x) == 4 and (bias is None or _plain_bias(bias, x.shape[channels])):
        pooled = _pool_first(x, *as_max_pool(_max_pool_windows, x), bias, node)
        if pooled is not None:  # no window answered lowest
            return _from_nhwc(pooled, window["data_format"])
    return as_max_pool(_max_pool, _activations(x, bias, node))[0]


def _plain_bias(bias: Array, channels: int) -> bool:
    """Whether ``bias`` is a finite bias of ``channels`` (so it may be added after the pool)."""
    return bool(np.ndim(bias) == 1 and len(bias) == channels and np.isfinite(bias).all())


def _conv_pool_first(x: Array, f: Array, bias: Array | None, node: KernelNode) -> _Blocks | None:
    """The fused Conv2D, pool, bias and Relu of ``node`` with the pool taken block by block as
    the convolution makes its outputs, while they are in the core's cache, then the bias and
    Relu on the pooled outputs: a float32 NHWC convolution of stride 1, undilated and
    ungrouped, with even output sides, under a 2x2 pool of stride 2 (no padding then). None
    where that does not apply; and no answer from its blocks where a block's window held
    nothing but NaN or -inf or a Winograd block met an infinity: the kernel then convolves
    whole and pools as ever."""
    a = node.attrs
    if not (
        a["data_format"] == b"NHWC"
        and list(a["ksize"]) == [1, 2, 2, 1] == list(a["strides"])
        and a["padding"] != b"EXPLICIT"
        and list(a["conv_strides"]) == [1, 1, 1, 1] == list(a["conv_dilations"])
        and x.dtype == f.dtype == np.float32
        and x.ndim == f.ndim == 4
        and f.shape[2] == x.shape[3]
        and (bias is None or _plain_bias(bias, f.shape[3]))
    ):
        return None
    kh, kw, c, out_c = f.shape
    try:
        explicit = _explicit(a["conv_explicit_paddings"], a["conv_padding"], b"NHWC")
        oh, ow, pads = _geometry(x, (kh, kw), (1, 1), (1, 1), a["conv_padding"], explicit)
    except errors.OpError:
        return None  # the Conv2D kernel raises it
    n = x.shape[0]
    if oh % 2 or ow % 2 or not n * oh * ow * out_c * c:
        return None

    def activate(pooled: Array) -> None:
        _activations_in_place(pooled, bias, node)

    if winograd.suits(n, (oh, ow), f, x.dtype):  # its outputs finite, or None
        return _winograd_conv(x, f, pads, (oh, ow), activate)
    out = np.empty((n, oh // 2, ow // 2, out_c), x.dtype)
    if _onednn_takes(x, f, pads):
        blocks = _by_onednn(x, f, pads, out, pool=True)
    else:
        blocks = _conv_gemm_pooled(_padded(x, pads), (kh, kw), f.reshape(kh * kw * c, out_c), out)

    def finish() -> Array | None:
        pooled = blocks.finish()
        if pooled is not None:
            activate(pooled)
        return pooled

    return blocks._replace(finish=finish)


# A fused pool of at least this many input bytes (two images or more) in a pool thread splits
# its images over the pool's idle threads, each pooling, biasing and rectifying its own in place.
# The cnn's first pool (3.2 MiB in, just written by both cores) went from 575-695 to 478-577 us
# in the step; its second (1.6 MiB) went from 286 to 364 us split (the helper's wake-up and the
# GIL hand-offs cost more than half of it), so it stays whole.
SPLIT_POOL_BYTES = 2 << 20
_POOL_RATE = intra_op.Rate(NS_PER_ELEMENT * 1e-9)  # seconds per input element of a part


def _pool_first(
    x: Array,
    windows: _MaxWindows | None,
    shape: tuple[int, ...],
    bias: Array | None,
    node: KernelNode,
) -> Array | None:
    """The fused pool of ``x`` (its MaxPool ``windows``, NHWC output ``shape``) computed pool
    first: the maximum over each window, then the bias and Relu on it in place; from
    SPLIT_POOL_BYTES up its images split over the pool (a few numpy calls a part: the GIL is
    taken back after each). None when some window held nothing but NaN or -inf (the graph's
    order runs then)."""
    if windows is None:
        return None
    n = shape[0]
    out = np.empty(shape, x.dtype)
    lowest = []  # parts with a window of nothing but NaN or -inf

    def part(lo: int, hi: int) -> None:
        if not _max_into(windows, out, lo, hi):
            lowest.append(lo)
            return
        _activations_in_place(out[lo:hi], bias, node)

    parts = n if x.nbytes >= SPLIT_POOL_BYTES else 1
    if not intra_op.split(n, parts, _POOL_RATE, x.size, part):
        part(0, n)
    return None if lowest else out


def _activations_in_place(x: Array, bias: Array | None, node: KernelNode) -> None:
    """The fused BiasAdd and/or Relu of ``node`` on the NHWC ``x`` itself, then the pool's
    floor after a BiasAdd (a Relu's output is never below it). ``bias`` passed BiasAdd's checks
    (``_conv_pool_first``, ``_fused_pool_whole``: ``_plain_bias``)."""
    for op in node.attrs["fused_ops"]:
        if op == b"Relu":
            nn_kernels.relu_into(x, x)
        elif op == b"BiasAdd":
            assert bias is not None
            nn_kernels.add_bias_into(x, bias, x)
    if node.attrs["fused_ops"][-1] == b"BiasAdd":
        np.maximum(x, _lowest(x.dtype), out=x)


def _activations(x: Array, bias: Array | None, node: KernelNode) -> Array:
    """The fused BiasAdd and/or Relu of ``node`` applied to ``x`` in turn."""
    for i, op in enumerate(node.attrs["fused_ops"]):
        try:
            if op == b"BiasAdd":
                x = nn_kernels.bias_add(x, bias, data_format=node.attrs["data_format"])
            elif op == b"Relu":
                x = nn_kernels.relu(x)
        except errors.OpError as e:
            raise _as_graph_node_error(e, node, i) from e
    return x


def _as_graph_node_error(e: errors.OpError, node: KernelNode, i: int) -> errors.OpError:
    """``e`` as the graph's own node ``i`` of the fused chain (its Conv2D, BiasAdd, Relu, then
    the MaxPool) raises it: naming that node, with its op, device, data inputs and attrs."""
    ops = [*node.attrs["fused_ops"], b"MaxPool"]
    names = [n.decode() for n in node.attrs["fused_names"]] + [node.name]
    conv = ops[0] == b"Conv2D"  # its filter is the node's second input, before the bias
    inputs = list(node.inputs[: 1 + conv] if i == 0 else [names[i - 1]])
    if ops[i] == b"BiasAdd":
        inputs.append(node.inputs[1 + conv])
    attrs = {key: node.attrs[_fused_attr(ops[i], key)] for key in _FUSED_ATTRS[ops[i]]}
    return graph_node_error(e, node, names[i], ops[i].decode(), inputs, attrs)


def _valid_counts(size: int, out: int, k: int, stride: int, before: int) -> Array:
    start = np.arange(out) * stride - before
    return np.minimum(start + k, size) - np.maximum(start, 0)


@register_kernel("AvgPool", types={"T": _CONV_TYPES}, cost=input_elements)
def avg_pool(
    x: Array, *, ksize: list[int], strides: list[int], padding: bytes, data_format: bytes
) -> Array:
    if np.ndim(x) != 4:
        raise _invalid(f"Input must be 4-dimensional {shape_str(x)}")
    k = _hw(ksize, data_format, "ksize", "pool")
    s = _hw(strides, data_format, "stride", "pool")
    xn = _to_nhwc(x, data_format)
    ct = _compute_dtype(x.dtype)
    oh, ow, pads = _geometry(xn, k, s, (1, 1), padding, ((0, 0), (0, 0)))
    total = np.zeros((xn.shape[0], oh, ow, xn.shape[3]), ct)
    if total.size:
        xp = _padded(xn.astype(ct, copy=False), pads)
        for i, j, tap in _taps(xp, k, s, (1, 1), (oh, ow)):
            if i == j == 0:
                total[...] = tap
            else:
                total += tap
    ch = _valid_counts(xn.shape[1], oh, k[0], s[0], pads[0][0])
    cw = _valid_counts(xn.shape[2], ow, k[1], s[1], pads[1][0])
    counts = (ch[:, None] * cw[None, :]).astype(ct)[None, :, :, None]
    return _from_nhwc((total / counts).astype(x.dtype, copy=False), data_format)
