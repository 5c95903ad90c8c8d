"""Matrix products handed to OpenBLAS in the shapes its fastest kernels take (or to oneDNN).

OpenBLAS packs both operands of a product into blocks before it multiplies them. When one
operand is small beside the other, packing is most of the work: the cnn's 32x3136x1024 dense
layer spent ~1.2 of its ~3.4 ms on one core packing the 12.8 MiB weight that each of its 32 rows
then uses once, and the first convolution's 25088x25 @ 25x32 packed its 2.5 MiB of im2col to
multiply it by 3 KiB of filter. OpenBLAS's small-matrix kernels read the operands where they
lie, but take only products of up to 100^3 multiply-adds (and, with the right operand read
transposed, of up to 1,200 outputs); they exist where ``blas.small_gemm_kernels`` says so. So a
float32 product runs as one stacked numpy call over small products, each written straight into
its part of the output:

- *by panels* when ``a`` has few rows: panels of 4-32 of ``b``'s columns, read from ``b``'s
  columns laid out as rows (``b`` transposed: the kernel reading it so was the fast one, 2.3 ms
  for the dense layer against 3.1 with panels laid out for the other), which a MatMul with
  ``transpose_b`` has as they lie and a constant's MatMul makes once (``derived``: a second
  copy of the weight, within that cache's bound; a fed weight runs as one product);
- *by row stacks* when ``b`` is small: stacks of as many of ``a``'s rows as keep each product
  small, ``a`` read as it lies (by rows or, an im2col built tap-major, by columns).

And one more way, for products of a few dozen rows, where neither pays (on an Intel Xeon, past
the panels' 24 rows): *transposed*, the product's transpose ``b.T @ a.T`` made with ``b``'s
columns as the rows of the left operand (the same columns as the panels read). OpenBLAS
computes the very same sums either way round (the same kernel and blocking, so the same bits),
but packs a row-major ``b`` by gathering its columns, and its columns as rows by plain copies.
The transpose is then copied back into rows, or, where every reader of the MatMul takes any
layout (``runtime/layouts.py`` marks it ``_any_layout``: products, through BiasAdd and
activations), made in an output laid out by columns (Fortran order), which is the product
itself, left so; a next product reads it as ``a.T``, contiguous (mlp's second layer).

Measured on one core of an Intel Xeon, left by columns, against one product: 17-64 rows by a
``k`` and an ``n`` of 256-4096 0.76-0.95x (64x784x512 0.92x, 0.84x with ``a`` laid out by
columns; 32x2048x512 0.82x); 100-128 rows 0.94-1.09x, 24 rows 0.92-0.97x of the panels but 17
rows 1.1-1.5x (so panels come first, and more rows go transposed only by a deep weight);
narrower products slower (24x784x128 1.06x, 8x128x512 1.5x). Copied back, which costs ~0.5 ns
an element, it pays only by a deep weight (``k`` at least 2048 and ``n``, ``n`` at least 768),
up to 128 rows: 32x3136x1024 2.3-3.0 ms against 3.7-4.0 (panels: 3.4-3.9), 64x4096x1024 7.1
against 8.5, 128x3136x1024 10.1 against 10.7, 17x8192x1000 6.1 against 6.8; 64x784x512 the
same. Measured only where OpenBLAS has the small kernels, and gated with them. On an AMD EPYC
the panels beat it by a deep weight up to 32 rows (``deep_panel_max_rows``): 32x3136x1024 2.1
against 2.4 ms; 48 rows not (48x2048x1024 2.8 against 2.2).

Measured on one core (AMD EPYC, AVX-512), numpy's one product against the stacked one: panels,
over a grid of 85 shapes (m 2-256 rows, k 32-8192, n 64-4096), 1.2-6x faster for 2-16 rows
(8x784x512: 143 against 68 µs), 10-35% faster for 32-128 rows with ``k`` at least four times
``m`` and ``n`` at least 256 (32x3136x1024: 3.2 against 2.3 ms; 64x784x512: 543 against 463 µs),
and up to 1.7x slower elsewhere, where packing pays for itself; row stacks 10-45% faster on 17
of 18 shapes of 256-100,000 rows by 3-288 by 4-512 (25088x25x32: 500 against 371 µs;
50176x27x64: 2.43 against 1.62 ms), the other (25088x32x128) the same within 4%. Shapes outside
those run as one product. On an Intel Xeon panels pay only up to ~24 rows (``panel_max_rows``).

Where oneDNN is installed (``devices/onednn.py``), a float32 product of at least
``ONEDNN_MIN_VOLUME`` multiply-adds that would run as one product, or transposed by a deep
weight, is oneDNN's instead (``BY_ONEDNN``): its kernels ran it in 0.75-1.00 of OpenBLAS's time.
By a frozen weight (a Const's) of 64 columns, cut by rows if split, it multiplies the weight
laid out once in oneDNN's blocks (``BY_PACKED``, ``devices/onednn_matmul.py``): 0.82-0.98 of the
GEMM's time (6272x800x64, an im2col's, 6.1 against 6.8 ms); other widths measured as often
slower as faster (``PACKED_COLUMNS``). A dense pair's halves take their weights' halves packed
the same way (:func:`packed_halves`, ``fused_products``): 64x784x256 228 µs against the panels'
245, 32x3136x512 0.90 ms against 1.00.

Bits: the small kernels add up in their own order, so an output can differ from the one
product's in the last place (the same for some shapes, not for others), and so do oneDNN's.
Each row of a row stack and each column of a panel comes out the same however many the call
holds, as each row and column of oneDNN's product, and every part of a split product runs the
same way as the whole, so the split does not change the answer. (oneDNN's kernel for a packed
weight takes only rows that lie one after another, in ``a`` and in the output; a product whose
parts would not, it leaves to the GEMM, whole and parts alike: ``_packed_if``.)
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import numpy as np

from aiotf.devices import blas, onednn, onednn_matmul
from aiotf.kernels import derived

Array = np.ndarray[Any, Any]

SMALL_GEMM_VOLUME = 100**3  # m·n·k of OpenBLAS's small-matrix products
TRANSPOSED_ROWS = (17, 128)  # the rows of ``a`` a transposed product may have (fewer: panels)
TRANSPOSED_MIN_DEPTH = 2048  # ... the inner dimension at least, and at least ``b``'s columns
TRANSPOSED_MIN_COLUMNS = 768  # ... and the columns (1000-1024 measured faster, 512 the same)
TRANSPOSED_FEW_ROWS = 64  # ... or, with at most these rows (after the panels),
TRANSPOSED_MIN_SIDE = 256  # ... an inner dimension and columns of at least this
SMALL_GEMM_TN_OUTPUT = 1200  # m·n of its small products reading ``b`` transposed
PANEL_WIDTHS = (32, 16, 8, 4)  # wider panels first: fewer products, a whole vector of output
STACK_ALIGN = 16  # rows of a stack: a multiple of the kernels' 16-float vectors
MIN_STACK_ROWS = 48  # the fewest rows a stack measured (faster than packing); fewer not tried
# Products made whole go to oneDNN where it is installed (``_whole``), and so do those by
# a deep weight that would run transposed: on one core of the AMD EPYC in 0.75-0.96 of the
# transposed product's time (48x2048x1024 2.26 against 2.68 ms, 64x3136x1024 4.28 against 5.19, 128x3136x1024
# 9.0 against 9.4, 40x8192x1000 7.2 against 9.6). Not the few rows transposed into an output
# by columns (0.79-1.13), nor panels (0.81-1.25) or row stacks (1.0-1.09).
_ONEDNN = onednn.available()
# The fewest multiply-adds of a product oneDNN makes: below, its call took longer than numpy's
# (one core: 100x100x101 37 against 27 us, 128x128x128 52 against 49; 128x256x128 85 against 88).
# Decided for the whole product, which its parts keep (``BY_ONEDNN``), so that a split product
# is made by one library whatever its parts' sizes.
ONEDNN_MIN_VOLUME = 4 * SMALL_GEMM_VOLUME


class Way:
    """How a product runs: by panels of ``width`` columns of ``columns`` (``b``'s columns as
    rows), transposed (``columns`` and no width; into an output laid out ``by_columns``, else
    copied back into rows), by stacks of ``rows`` rows, or as one product (the default)."""

    __slots__ = ("by_columns", "columns", "rows", "width")

    def __init__(
        self,
        width: int = 0,
        columns: Array | None = None,
        rows: int = 0,
        by_columns: bool = False,
    ) -> None:
        self.width = width
        self.columns = columns
        self.rows = rows
        self.by_columns = by_columns

    def cols(self, lo: int, hi: int) -> Way:
        """The way of columns ``lo:hi`` of the product (``lo`` a multiple of the panels' width;
        transposed, a multiple of 16 keeps the bits of the whole product)."""
        if self.columns is None:
            return self
        return Way(self.width, self.columns[lo:hi], by_columns=self.by_columns)


WHOLE = Way()
BY_ONEDNN = Way()  # one product, by oneDNN (``devices/onednn.py``): see ONEDNN_MIN_VOLUME
# BY_ONEDNN's product by a frozen weight, split (if at all) by rows: oneDNN's matmul primitive
# on the weight packed once (``devices/onednn_matmul.py``), see _packed_if
BY_PACKED = Way()


def way(a: Array, b: Array, any_layout: bool = False) -> Way:
    """How ``a @ b`` (two matrices) runs fastest; ``any_layout``: into an output laid out by
    columns, if that is faster (see the module docstring).

    Remembered for ``b`` while it lives (a weight is the same array run after run; a new view
    each call, such as a transposed operand, is only worked out again), with the geometry of
    both operands it was found for: working it out took ~10 us of each of mlp's split MatMuls
    in a step's cold caches (mlp 15-25 us a run faster remembered, alternated). A way whose
    ``columns`` view ``b`` is not remembered, as it would keep ``b`` alive. A product that runs
    whole at once (one row, small, not float32, no small kernels) is told so before the memory
    is looked at, which would take twice as long (~0.6 against ~0.25 us warm)."""
    m, k = a.shape
    n = b.shape[1]
    if (
        m < 2  # one row: a matrix-vector product, which packs nothing
        or m * k * n <= SMALL_GEMM_VOLUME  # small already: OpenBLAS takes its small kernel
        or a.dtype != np.float32
        or b.dtype != np.float32
    ):
        return WHOLE
    if not blas.small_gemm_kernels():
        return _packed_if(a, b, _whole(m, k, n))
    geometry = (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype, any_layout)
    key = id(b)
    known = _ways.get(key)
    if known is not None and known[0]() is b and known[1] == geometry:
        return known[2]
    how = _way(a, b, m, k, n, any_layout)
    if how is WHOLE:
        how = _whole(m, k, n)
    how = _packed_if(a, b, how)
    if how.columns is None or how.columns.base is None:
        _ways[key] = (weakref.ref(b, functools.partial(_forget, key)), geometry, how)
    return how


# id(b) -> (a weak reference to b, the operands' geometry, the way): ``way``'s memory
_ways: dict[int, tuple[weakref.ref[Array], tuple[Any, ...], Way]] = {}


def block_way(a: Array, b: Array, whole_rows: int) -> Way:
    """How a block of rows ``a`` of a product of ``whole_rows`` rows by ``b`` runs: by oneDNN
    if the whole product would and the block would run whole, so that every block is made by
    one library whatever the blocks' sizes; else as the block alone (a block smaller than a
    row stack runs whole in OpenBLAS's small kernels, as the stacks do)."""
    how = way(a, b)
    k, n = b.shape
    if (
        (how is WHOLE or how is BY_ONEDNN or how is BY_PACKED)
        and a.dtype == np.float32
        and b.dtype == np.float32
        # never a product by stacks (none without OpenBLAS's small kernels)
        and (SMALL_GEMM_VOLUME // max(k * n, 1) < MIN_STACK_ROWS or not blas.small_gemm_kernels())
    ):
        return _packed_if(a, b, _whole(whole_rows, k, n), whole_rows)
    return how


def _whole(m: int, k: int, n: int) -> Way:
    """How a float32 product of two rows at least runs whole: by oneDNN where it is installed,
    from ONEDNN_MIN_VOLUME multiply-adds and two columns (one is numpy's GEMV), else numpy's."""
    return BY_ONEDNN if _ONEDNN and n >= 2 and m * k * n >= ONEDNN_MIN_VOLUME else WHOLE


def split_by_rows(how: Way, m: int, n: int) -> bool:
    """Whether a product made ``how``, of ``m`` rows by ``n`` columns, split over the pool is
    cut into blocks of ``a``'s rows (each part streams all of ``b``), else of ``b``'s columns
    (``math_kernels.matmul``): row stacks, or rows enough beside the columns."""
    return how.columns is None and (how.rows > 0 or m >= 2 * n or m >= 256)


# The columns of the products by a packed weight that are cut (if split) by rows: one of
# oneDNN's 64-column blocks. One core of the AMD EPYC, against ``dnnl_sgemm``, over m of 1024
# and 6272 by k of 128-3136: 64 columns 0.82-0.98 of its time (6272x3136x64 23.6 against 28.7
# ms; 256-4096 rows by 512-3136: 0.85-0.95); 32 columns 0.84-1.65, 48 0.89-1.11, 96 0.95-1.22,
# 128 0.92-1.12, 192-1024 0.87-1.14, as often slower as faster (thirteenth session).
PACKED_COLUMNS = 64


def _packed_if(a: Array, b: Array, how: Way, rows: int = 0) -> Way:
    """``how``, or BY_PACKED for a BY_ONEDNN product of a C-contiguous ``a`` (or block of
    ``rows`` rows of one) by a frozen ``b`` of PACKED_COLUMNS columns, cut (if split) by rows.
    oneDNN's kernel for a packed weight takes rows that lie one after another, in ``a`` and in
    the output; others (the columns of a wider output, the rows of an ``a`` laid out by
    columns) it multiplies with another kernel that reads a plain weight (``onednn_matmul``).
    Every part of a product must be made as the whole, whatever the pool's load, to keep its
    bits."""
    if (
        how is not BY_ONEDNN
        or b.shape[1] != PACKED_COLUMNS
        or not a.flags.c_contiguous
        or not split_by_rows(how, rows or a.shape[0], b.shape[1])
    ):
        return how
    return BY_PACKED if derived.frozen(b) and onednn_matmul.packable(b) else how


def _forget(key: int, _: object) -> None:
    """A remembered ``b`` is being freed (its weak reference's callback), its way with it."""
    _ways.pop(key, None)


def _way(a: Array, b: Array, m: int, k: int, n: int, any_layout: bool) -> Way:
    """``way`` for a product past its first test (``a`` is ``m`` x ``k``, ``b`` ``k`` x ``n``)."""
    # Transposed, ``a.T`` must lie as BLAS takes it, by rows or by columns (numpy's own loop
    # would multiply any other layout).
    transposable = TRANSPOSED_ROWS[0] <= m <= TRANSPOSED_ROWS[1] and (_by_rows(a) or _by_rows(a.T))
    width = _panel_width(a, m, k, n)
    if (
        transposable
        and TRANSPOSED_MIN_COLUMNS <= n <= k
        and k >= TRANSPOSED_MIN_DEPTH
        and not (width and m <= deep_panel_max_rows())
    ):
        if _ONEDNN:  # oneDNN's one product is faster still (see _ONEDNN)
            return BY_ONEDNN
        columns = columns_of(b)
        return WHOLE if columns is None else Way(columns=columns, by_columns=any_layout)
    if width:
        columns = columns_of(b)
        return WHOLE if columns is None else Way(width, columns)
    if (
        any_layout
        and transposable
        and m <= TRANSPOSED_FEW_ROWS
        and min(k, n) >= TRANSPOSED_MIN_SIDE
    ):
        columns = columns_of(b)
        return WHOLE if columns is None else Way(columns=columns, by_columns=True)
    rows = SMALL_GEMM_VOLUME // (k * n) // STACK_ALIGN * STACK_ALIGN
    if (
        MIN_STACK_ROWS <= rows < m
        and _by_rows(b)  # read transposed, ``b`` would limit the small products' outputs
        and (_by_rows(a) or _by_rows(a.T))
    ):
        return Way(rows=rows)
    return WHOLE


# The most rows a product by panels may have, by CPU vendor (``blas.cpu_vendor``), where it was
# measured lower than the small kernels' own limit: on an Intel Xeon (Emerald Rapids, 2 MiB of
# L2 a core), one core, panels against one product: 16x784x512 0.69x, 24 rows 0.95x, 32 rows
# 1.11x, 40 1.19x, 64x512x288 1.45x, 64x2048x512 1.63x; mlp's step in aiotf 1.3-6% faster with
# its 64-row products whole (alternated). The AMD EPYC of the grid above: panels to 128 rows.
_PANEL_MAX_ROWS = {"GenuineIntel": 24}


@functools.cache
def panel_max_rows() -> int:
    """The most rows of ``a`` a product by panels may have on this CPU (see _PANEL_MAX_ROWS;
    elsewhere only the small kernels' limits bound it)."""
    return _PANEL_MAX_ROWS.get(blas.cpu_vendor(), SMALL_GEMM_TN_OUTPUT)


# The most rows a product by a deep weight (the transposed way's first test) runs by panels
# instead, where panels were measured faster, by CPU vendor: on an AMD EPYC (Zen 4), one core,
# 17x8192x1000 4.2 against 5.9-6.0 ms transposed, 24x3136x1024 1.5 against 2.1-2.2, 32x3136x1024
# 2.1 against 2.4, its half 32x3136x512 0.94 against 1.17; but 48x2048x1024 2.8 against 2.1-2.2.
# Measured on Zen 4 only, taken for every AMD CPU that has the small kernels (which gate the
# panels). On an Intel Xeon the transposed way came first (none).
_DEEP_PANEL_MAX_ROWS = {"AuthenticAMD": 32}


@functools.cache
def deep_panel_max_rows() -> int:
    """The most rows of ``a`` a product by a deep weight runs by panels on this CPU (see
    _DEEP_PANEL_MAX_ROWS), where it has panels at all."""
    return _DEEP_PANEL_MAX_ROWS.get(blas.cpu_vendor(), 0)


def _by_rows(x: Array) -> bool:
    """Whether numpy hands the matrix ``x`` to BLAS as it lies, row by row: its rows contiguous
    and apart by at least a row. Any other layout a stacked product would multiply in numpy's
    own loop, 2-3x slower than one product, which copies it first."""
    step, unit = x.strides
    return unit == x.itemsize and step >= x.shape[1] * unit and step % unit == 0


def _panel_width(a: Array, m: int, k: int, n: int) -> int:
    if (
        k < 32  # the small kernel's own limit reading ``b`` transposed
        or not _by_rows(a)  # transposed (with ``b`` too: no small kernel) or not for BLAS
        or (m > 16 and (k < 4 * m or n < 256))  # packing pays for itself (measured, above)
        or m > panel_max_rows()
    ):
        return 0
    for width in PANEL_WIDTHS:
        if width * m <= SMALL_GEMM_TN_OUTPUT and width * m * k <= SMALL_GEMM_VOLUME:
            return width if 2 * width <= n else 0
    return 0


def columns_of(b: Array) -> Array | None:
    """``b``'s columns as the rows of a C-contiguous array (``b.T``): a view when ``b`` is laid
    out so (a MatMul's ``transpose_b``), else made once for a frozen ``b``; None for any other
    ``b``, whose copy would cost more than the panels save."""
    if b.flags.f_contiguous:  # b.T is C-contiguous
        return b.T
    columns = derived.kept("columns", b)
    if columns is not None:
        return columns
    if not (derived.frozen(b) and derived.room(b.nbytes)):
        return None
    return derived.derived("columns", b, lambda source: np.ascontiguousarray(source.T))


def product(a: Array, b: Array, how: Way | None = None, any_layout: bool = False) -> Array:
    """``a @ b`` for two matrices, on the calling thread (``any_layout``: see :func:`way`)."""
    if how is None:  # one row (mlp_b1): no call to spare
        how = WHOLE if a.shape[0] < 2 else way(a, b, any_layout)
    if how is WHOLE:
        result: Array = np.matmul(a, b)
        return result
    out = output(a, b, how)
    into(a, b, out, how)
    return out


def output(a: Array, b: Array, how: Way) -> Array:
    """A new array for ``a @ b`` made ``how``: laid out by columns if ``how`` says so, else
    by rows."""
    dtype = a.dtype if a.dtype == b.dtype else np.result_type(a, b)  # the call, cold, ~1 us
    return np.empty((a.shape[0], b.shape[1]), dtype, "F" if how.by_columns else "C")


def into(a: Array, b: Array, out: Array, how: Way | None = None, whole_rows: int = 0) -> None:
    """``out[...] = a @ b`` for two matrices, on the calling thread. ``whole_rows``: ``a`` is a
    block of the rows of a product of that many (a convolution's blocks, cut by how many pool
    threads are idle), which goes to oneDNN as the whole product would (``block_way``)."""
    if how is None:
        how = block_way(a, b, whole_rows) if whole_rows else way(a, b)
    if how.columns is not None and how.width:
        _by_panels(a, how.columns, how.width, out)
    elif how.columns is not None:  # transposed: see the module docstring
        if out.flags.f_contiguous:  # its transpose is C-contiguous
            np.matmul(how.columns, a.T, out=out.T)
        else:
            np.copyto(out, np.matmul(how.columns, a.T).T)
    elif how.rows:
        _by_stacks(a, b, how.rows, out)
    elif not _by_onednn(a, b, out, how):
        np.matmul(a, b, out=out)  # (an operand laid out for neither: numpy's, as it copies)


def _by_onednn(a: Array, b: Array, out: Array, how: Way) -> bool:
    """``out[...] = a @ b`` by oneDNN where ``how`` says so: by ``b`` packed (BY_PACKED), else
    by its GEMM (also where the packed product leaves an ``a`` or ``out`` laid out otherwise).
    False, having done nothing, for another way, or operands oneDNN's GEMM leaves to numpy."""
    if how is BY_PACKED:
        packed = _packed(b, 0, False)
        if packed is not None and onednn_matmul.into(a, packed[0], out):
            return True
    elif how is not BY_ONEDNN:
        return False
    return onednn.matmul_into(a, b, out)


def _by_panels(a: Array, columns: Array, width: int, out: Array) -> None:
    m, k = a.shape
    whole = len(columns) // width * width
    if whole:
        panels = columns[:whole].reshape(-1, width, k).transpose(0, 2, 1)
        np.matmul(a, panels, out=out[:, :whole].reshape(m, -1, width).transpose(1, 0, 2))
    if whole < len(columns):
        np.matmul(a, columns[whole:].T, out=out[:, whole:])


def _by_stacks(a: Array, b: Array, rows: int, out: Array) -> None:
    m, n = out.shape
    whole = m // rows * rows
    if whole:
        stacks = a[:whole].reshape(-1, rows, a.shape[1])  # splitting an axis: always a view
        np.matmul(stacks, b, out=out[:whole].reshape(-1, rows, n))
    if whole < m:
        np.matmul(a[whole:], b, out=out[whole:])


# id(the packed data) -> (a weak reference to it, its packed parts): _packed's memory
_parts_of: dict[int, tuple[weakref.ref[Array], tuple[onednn_matmul.Packed, ...]]] = {}


def packed_halves(
    w: Array, cut: int, by_rows: bool
) -> tuple[onednn_matmul.Packed, onednn_matmul.Packed] | None:
    """A frozen float32 weight cut in two at ``cut`` (its rows, ``by_rows``, else its
    columns), each half laid out once for oneDNN's matmul primitive
    (``devices/onednn_matmul.py``); None where :func:`_packed` finds none."""
    if not 0 < cut < w.shape[0 if by_rows else 1]:
        return None
    halves = _packed(w, cut, by_rows)
    return None if halves is None else (halves[0], halves[1])


def _packed(w: Array, cut: int, by_rows: bool) -> tuple[onednn_matmul.Packed, ...] | None:
    """``w``'s parts (:func:`_parts`) laid out once for oneDNN's matmul primitive, one after
    the other in one derived array (so a weight's halves go with it); None where oneDNN is not
    available, ``w`` is not frozen or lies otherwise, or the derived values' room is full
    (packed afresh every run, it would cost more than it saves)."""
    if not _ONEDNN:
        return None
    kind = ("onednn packed", cut, by_rows)
    data = derived.kept(kind, w)
    if data is None:
        if not (derived.frozen(w) and onednn_matmul.packable(w)):
            return None
        parts = _parts(w, cut, by_rows)
        if not derived.room(4 * sum(_sizes(parts))):  # blocks padded out (ten columns: 6.4x)
            return None
        derived.derived(kind, w, functools.partial(_pack_parts, cut=cut, by_rows=by_rows))
        # What is kept: another thread's if it made one too, none if the room filled meanwhile
        # (the parts of one product then all go the GEMM's way, but for a cache that fills or
        # empties between them).
        data = derived.kept(kind, w)
        if data is None:
            return None
    known = _parts_of.get(id(data))
    if known is not None and known[0]() is data:
        return known[1]
    key, parts = id(data), _parts(w, cut, by_rows)
    packed = tuple(
        onednn_matmul.Packed.of(at, *part.shape)
        for at, part in zip(_parts_in(data, parts), parts, strict=True)
    )
    _parts_of[key] = (weakref.ref(data, functools.partial(_forget_parts, key)), packed)
    return packed


def _parts(w: Array, cut: int, by_rows: bool) -> tuple[Array, ...]:
    """``w`` whole (``cut`` 0), or its halves at ``cut``: rows ``by_rows``, else columns."""
    if not cut:
        return (w,)
    return (w[:cut], w[cut:]) if by_rows else (w[:, :cut], w[:, cut:])


def _sizes(parts: tuple[Array, ...]) -> list[int]:
    """The float32 elements each of ``parts`` takes packed, up to the next cache line (16
    floats), where the next part starts."""
    return [-(-onednn_matmul.packed_size(*part.shape) // 16) * 16 for part in parts]


def _parts_in(data: Array, parts: tuple[Array, ...]) -> list[Array]:
    """Where in ``data`` the ``parts`` lie packed: one after the other, each from the first
    cache line after the last."""
    found, at = [], 0
    for part, size in zip(parts, _sizes(parts), strict=True):
        found.append(data[at : at + onednn_matmul.packed_size(*part.shape)])
        at += size
    return found


def _pack_parts(w: Array, cut: int, by_rows: bool) -> Array:
    parts = _parts(w, cut, by_rows)
    data = onednn_matmul.aligned(sum(_sizes(parts)))
    for part, at in zip(parts, _parts_in(data, parts), strict=True):
        onednn_matmul.pack_into(part, at)
    return data


def _forget_parts(key: int, _: object) -> None:
    _parts_of.pop(key, None)
