"""The remapper's ``_FusedMatMulPair``: two dense layers, split by their hidden units.

``Relu(BiasAdd(MatMul(Relu(BiasAdd(MatMul(a, w1), b1)), w2), b2))`` (each BiasAdd and Relu
optional; ``runtime/remapper.py``). Split layer by layer over two threads, each product waits
for both threads' halves before the next can start: a helper's wake-up and a wait per product,
and the bias and Relu between them run over the whole product on one thread, out of cache. Here
the hidden units are cut in two halves. Each thread makes its half of the first product (the
columns ``w1[:, lo:hi]``), adds its half of the bias, takes its Relu and multiplies that by its
rows ``w2[lo:hi]``; the two partial products are then added, half 0's first, and the second
bias and Relu taken on the sum, in the layout the sum was made in: one wait for the pair. In a
compiled step not even that: the halves are the kernel's ``parts``, and the thread that ends the
last makes the sum and carries the step on (``intra_op.Relay``). On
mlp's 64-row layers, alternated in one process against the MatMuls split one by one: 45-55 µs
faster a run of ~0.9-1.1 ms (~15 of it the second bias and Relu), cnn's dense layers ~75 µs
(``docs/performance-log.md``, ninth session).

The values: the first product, bias and Relu are the graph's to the bit (every column of a
product is made by the same call however its columns are cut, ``products``), and so are the
second bias and Relu on the sum; the second product's sum over the hidden units is made in two
halves added together, where one product makes it in OpenBLAS's own blocks, so its last bits
may differ (OpenBLAS cuts an inner dimension of 512 at 256 too, so mlp's come out the same).
By oneDNN's packed weights (below), both products are oneDNN's, within float32's last bits of
the graph's ops (the bias added to the first in oneDNN's pass). The halves are fixed by the
shapes, never by the threads: a run's answer does not change with the pool, its size or its
load.

With oneDNN installed, the halves multiply by their weights' halves laid out once in oneDNN's
blocks (``products.packed_halves``: ``w1``'s columns, ``w2``'s rows, for frozen weights), the
first product with its half of the bias in the same pass; its Relu stays numpy's (oneDNN's takes
a NaN to zero). On the AMD EPYC that took mlp's step from 760 to 725 µs and the cnn's from 4764
to 4692, alternated in one process (thirteenth session). (There, without oneDNN, products of a
few dozen rows run by panels, which measured no faster by halves: the pair runs as its MatMuls.)

By halves otherwise, it applies to products of a few dozen rows that run transposed
(``products.way``, as the layouts pass leaves a MatMul read by another) and are big enough to
split (``math_kernels.PARALLEL_MIN_FLOPS``). Anything else runs as the graph's ops would (inline,
mlp_b1's rows), and operands the graph's ops would refuse run them one after another, each
error naming its own node.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np

from aiotf.devices import intra_op, onednn_matmul
from aiotf.framework import dtypes, errors, op_def_registry
from aiotf.kernels import nn_kernels, products
from aiotf.kernels.math_kernels import (
    PARALLEL_MIN_FLOPS,
    PART_ALIGN,
    PART_FLOPS,
    SPLIT_RATE,
    _matmul_cost,
    add_n,
    add_n_groups,
    least_part,
    mat_mul,
    matmul,
)
from aiotf.kernels.registry import (
    NS_PER_FLOP,
    KernelNode,
    Parts,
    graph_node_error,
    register_kernel,
)

Array = np.ndarray[Any, Any]
_T = TypeVar("_T")


class _Form(NamedTuple):
    """Which of a pair's optional ops its node fused (``fused_ops``): the BiasAdd and Relu
    after the first product, and after the second."""

    bias1: bool
    relu1: bool
    bias2: bool
    relu2: bool

    @staticmethod
    def of(ops: list[bytes]) -> _Form:
        second = ops.index(b"MatMul", 1)
        head, tail = ops[1:second], ops[second + 1 :]
        return _Form(b"BiasAdd" in head, b"Relu" in head, b"BiasAdd" in tail, b"Relu" in tail)

    def operands(self, args: tuple[Array, ...]) -> tuple[Array, Array | None, Array, Array | None]:
        """``w1``, the first bias (or None), ``w2``, the second bias (or None) of ``args``."""
        w2_at = 1 + self.bias1
        return (
            args[0],
            args[1] if self.bias1 else None,
            args[w2_at],
            args[-1] if self.bias2 else None,
        )


def _pair_cost(a: Any, *args: Any, node: KernelNode) -> float:
    """The larger product's estimate, as MatMul's (NS_PER_FLOP per flop): what decides the hop
    to a pool thread is whether the graph's ops would have made one. Both products' sum sent
    pairs of 8 rows of mlp's layers, each product inline alone, to the pool: 506 against 363
    us a run."""
    w1, _, w2, _ = _Form.of(node.attrs["fused_ops"]).operands(args)
    if not all(isinstance(x, np.ndarray) and x.ndim == 2 for x in (a, w1, w2)):
        return 0.0
    (m, k), hidden, n = a.shape, w1.shape[1], w2.shape[1]
    return float(NS_PER_FLOP * 2.0 * m * hidden * max(k, n))


def _pair_fast_for(
    *, node: KernelNode, data_format: bytes, _any_layout: bool = False
) -> Callable[..., Array]:
    """The pair as the compiled schedules call it inline, below the pool's cost and so never
    split (as MatMul's fast function): the graph's ops written out, without the kernel's
    messages (an operand they would refuse raises, and the kernel says why). In a step's cold
    caches each Python call costs about a microsecond, and mlp_b1's step takes this path:
    through ``_valid`` and the pair's parts it ran ~4 us slower a run than the graph's four
    nodes."""
    form = _Form.of(node.attrs["fused_ops"])
    product, add_bias_into, relu_into = (
        products.product,
        nn_kernels.add_bias_into,
        nn_kernels.relu_into,
    )

    def fast(a: Array, *args: Array) -> Array:
        w1, b1, w2, b2 = form.operands(args)
        if a.ndim != 2 or w1.ndim != 2 or w2.ndim != 2:
            raise ValueError("not matrices")
        h = product(a, w1, any_layout=True)  # numpy refuses inner dimensions that differ
        if b1 is not None:
            if b1.ndim != 1 or b1.shape[0] != h.shape[1]:
                raise ValueError("not a bias of the hidden units")
            add_bias_into(h, b1, h)
        if form.relu1:
            relu_into(h, h)
        y = product(h, w2, any_layout=_any_layout)
        if b2 is not None:
            if b2.ndim != 1 or b2.shape[0] != y.shape[1]:
                raise ValueError("not a bias of the outputs")
            add_bias_into(y, b2, y)
        if form.relu2:
            relu_into(y, y)
        return y

    return fast


def _pair_parts_of(
    a: Array, *args: Array, node: KernelNode, data_format: bytes, _any_layout: bool = False
) -> Parts | None:
    """The kernel's ``parts`` (``register_kernel``): the pair of valid operands as
    :func:`_pair_parts`; None for operands the graph's ops refuse (the kernel says why)."""
    form = _Form.of(node.attrs["fused_ops"])
    w1, b1, w2, b2 = form.operands(args)
    if not _valid(a, w1, b1, w2, b2):
        return None
    return _pair_parts(a, w1, b1, w2, b2, form, _any_layout)


@register_kernel(
    "_FusedMatMulPair",
    types={"T": (dtypes.float32,)},
    cost=_pair_cost,
    fast_for=_pair_fast_for,
    parts=_pair_parts_of,
)
def fused_matmul_pair(
    a: Array, *args: Array, node: KernelNode, data_format: bytes, _any_layout: bool = False
) -> Array:
    ops = node.attrs["fused_ops"]
    form = _Form.of(ops)
    w1, b1, w2, b2 = form.operands(args)
    if _valid(a, w1, b1, w2, b2):
        parts, outputs = _pair_parts(a, w1, b1, w2, b2, form, _any_layout)
        if len(parts) > 1:
            intra_op.parallel_for(len(parts), lambda i: parts[i]())
        else:
            parts[0]()
        y: Array = outputs()
        return y
    # Operands the graph's ops refuse: those ops, one after another, each error naming its node.
    x, operands = a, iter(args)
    for i, op in enumerate(ops):
        if op == b"MatMul":  # the first one's readers take any layout, as the layouts pass marks
            first = i == 0
            x = _as_node(node, i, mat_mul, x, next(operands), transpose_a=False,
                         transpose_b=False, _any_layout=first or _any_layout)  # fmt: skip
        elif op == b"BiasAdd":
            x = _as_node(node, i, nn_kernels.bias_add, x, next(operands), data_format=data_format)
        else:
            x = nn_kernels.relu_into(x, x)  # Relu cannot fail
    return x


def _valid(a: Array, w1: Array, b1: Array | None, w2: Array, b2: Array | None) -> bool:
    """Whether the graph's ops would take these operands: matrices whose inner dimensions
    match, biases of the hidden units and of the outputs."""
    return (
        a.ndim == w1.ndim == w2.ndim == 2
        and a.shape[1] == w1.shape[0]
        and w2.shape[0] == w1.shape[1]
        and (b1 is None or (b1.ndim == 1 and b1.shape[0] == w1.shape[1]))
        and (b2 is None or (b2.ndim == 1 and b2.shape[0] == w2.shape[1]))
    )


def _pair_parts(
    a: Array,
    w1: Array,
    b1: Array | None,
    w2: Array,
    b2: Array | None,
    form: _Form,
    any_layout: bool,
) -> Parts:
    """The pair of valid operands as parts for the pool's threads, and what makes its output
    of them: its two halves where that applies (the module docstring), else one part making it
    as the graph's ops would (each product as a MatMul's, split when big enough)."""
    (m, k), hidden = a.shape, w1.shape[1]
    if 2.0 * m * k * hidden >= PARALLEL_MIN_FLOPS:
        packed = _packed_halves(a, w1, w2)
        if packed is not None:
            return _packed_halves_parts(a, w1, b1, w2, b2, form, *packed)
        columns = _halves_columns(a, w1)
        if columns is not None:
            return _halves_parts(a, columns, b1, w2, b2, form, any_layout)
    made: list[Array] = []

    def whole() -> None:
        h = matmul(a, w1, True)
        if b1 is not None:
            nn_kernels.add_bias_into(h, b1, h)
        if form.relu1:
            nn_kernels.relu_into(h, h)
        y = matmul(h, w2, any_layout)
        if b2 is not None:
            nn_kernels.add_bias_into(y, b2, y)
        if form.relu2:
            nn_kernels.relu_into(y, y)
        made.append(y)

    return (whole,), made.pop


def _halves_columns(a: Array, w1: Array) -> Array | None:
    """``w1``'s columns as rows (``products.way``'s transposed operand) when a pair whose first
    product is big enough to split runs by halves: float32, a first product that runs
    transposed, hidden units enough for two halves; else None."""
    if w1.shape[1] < 2 * PART_ALIGN or a.dtype != np.float32 or w1.dtype != np.float32:
        return None
    how = products.way(a, w1, any_layout=True)
    return how.columns if how.columns is not None and not how.width else None


def _halves_parts(
    a: Array,
    columns: Array,
    b1: Array | None,
    w2: Array,
    b2: Array | None,
    form: _Form,
    by_columns: bool,
) -> Parts:
    """The pair by halves of the hidden units (see the module docstring), a part each: laid out
    by columns when ``by_columns`` (every reader takes any layout), else by rows. On a pool of
    more than two threads each half's products split further, by their output's rows, over the
    idle ones (each row made by the same call as whole: the same bits)."""
    (m, k), hidden, n = a.shape, len(columns), w2.shape[1]
    cut = hidden // 2 // PART_ALIGN * PART_ALIGN
    # By columns, each half's partial product comes out as the output's transpose, made with
    # w2's columns as rows.
    w2_columns = products.columns_of(w2) if by_columns else None
    if w2_columns is None:
        w2_columns = w2.T
    partial: dict[int, Array] = {}  # each half's partial product
    rows = _rows if intra_op.workers() > 2 else _whole  # threads beyond the halves' two?

    def half(i: int) -> None:
        lo, hi = (0, cut) if i == 0 else (cut, hidden)
        h = np.empty((hi - lo, m), np.float32)  # the hidden units lo:hi, by columns

        def first(r0: int, r1: int) -> None:
            np.matmul(columns[lo + r0 : lo + r1], a.T, out=h[r0:r1])

        rows(hi - lo, m * k, first)
        if b1 is not None:
            np.add(h, b1[lo:hi, None], out=h)
        if form.relu1:
            nn_kernels.relu_into(h, h)
        p = partial[i] = np.empty((n, m) if by_columns else (m, n), np.float32)

        def second(r0: int, r1: int) -> None:
            if by_columns:
                np.matmul(w2_columns[r0:r1, lo:hi], h, out=p[r0:r1])
            else:
                np.matmul(h.T[r0:r1], w2[lo:hi], out=p[r0:r1])

        rows(p.shape[0], (hi - lo) * p.shape[1], second)

    def outputs() -> Array:
        total = _summed(partial, b2, form, by_columns)
        return total.T if by_columns else total

    return (functools.partial(half, 0), functools.partial(half, 1)), outputs


def _summed(partial: dict[int, Array], b2: Array | None, form: _Form, by_columns: bool) -> Array:
    """The halves' partial products added, half 0's first, then biased and rectified: into
    half 0's (laid out as the output's transpose ``by_columns``)."""
    total = partial[0]
    np.add(total, partial[1], out=total)
    if b2 is not None:  # by columns, along the rows of the transpose (an F-ordered BiasAdd
        np.add(total, b2[:, None] if by_columns else b2, out=total)  # took ~40 us cold)
    if form.relu2:
        nn_kernels.relu_into(total, total)
    return total


# The hidden units of the first half by oneDNN's packed weights are a multiple of this, the
# columns of one of its blocks (``devices/onednn_matmul.py``): its last block not padded out.
PACKED_HALF_ALIGN = 64


def _packed_halves(
    a: Array, w1: Array, w2: Array
) -> tuple[tuple[onednn_matmul.Packed, ...], tuple[onednn_matmul.Packed, ...]] | None:
    """The pair's weights cut into halves of the hidden units and packed for oneDNN (``w1``'s
    columns, ``w2``'s rows: ``products.packed_halves``), where the pair runs so: float32
    operands, more than one row, frozen weights, hidden units enough for two halves."""
    hidden, align = w1.shape[1], PACKED_HALF_ALIGN
    # The multiple nearest half (found by review: 200 had been cut at 64, not 128; padded out
    # to whole blocks, halves of 128 and 72 take as long as two of 100).
    cut = (hidden + align) // (2 * align) * align
    if not 0 < cut < hidden or a.dtype != np.float32 or a.shape[0] < 2:
        return None
    first = products.packed_halves(w1, cut, by_rows=False)
    if first is None:
        return None
    second = products.packed_halves(w2, cut, by_rows=True)
    return None if second is None else (first, second)


def _packed_halves_parts(
    a: Array,
    w1: Array,
    b1: Array | None,
    w2: Array,
    b2: Array | None,
    form: _Form,
    first: tuple[onednn_matmul.Packed, ...],
    second: tuple[onednn_matmul.Packed, ...],
) -> Parts:
    """The pair by halves of the hidden units (the module docstring), a part each, its
    products by oneDNN on its packed weights, the first with its bias in the same pass. Laid out
    by rows. The same bits whatever the pool (the halves are the shapes'), but not a pair's
    other ways': a product is made by one routine in all its parts."""
    m, n, cut = a.shape[0], w2.shape[1], first[0].cols
    partial: dict[int, Array] = {}

    def half(i: int) -> None:
        lo, hi = (0, cut) if i == 0 else (cut, w1.shape[1])
        h = np.empty((m, hi - lo), np.float32)
        bias = None if b1 is None else b1[lo:hi]
        if not onednn_matmul.into(a, first[i], h, bias):
            np.matmul(a, w1[:, lo:hi], out=h)  # (an ``a`` oneDNN takes otherwise)
            if bias is not None:
                np.add(h, bias, out=h)
        if form.relu1:  # (not oneDNN's: it takes a NaN to zero)
            nn_kernels.relu_into(h, h)
        p = partial[i] = np.empty((m, n), np.float32)
        if not onednn_matmul.into(h, second[i], p):
            np.matmul(h, w2[lo:hi], out=p)

    return (functools.partial(half, 0), functools.partial(half, 1)), functools.partial(
        _summed, partial, b2, form, False
    )


def _whole(extent: int, row_macs: int, work: Callable[[int, int], None]) -> None:
    work(0, extent)


def _rows(extent: int, row_macs: int, work: Callable[[int, int], None]) -> None:
    """``work`` over a product's ``extent`` output rows of ``row_macs`` multiply-adds each,
    split as a MatMul's (``math_kernels.matmul``) over the pool's idle threads, if any."""
    flops = 2.0 * extent * row_macs
    parts, least = int(flops // PART_FLOPS), least_part(row_macs)
    if parts < 2 or not intra_op.split(
        extent, parts, SPLIT_RATE, flops, work, PART_ALIGN, least=least
    ):
        work(0, extent)


def _as_node(node: KernelNode, i: int, kernel: Callable[..., _T], *args: Any, **attrs: Any) -> _T:
    """``kernel(*args, **attrs)``, its error raised as the graph's own node ``i`` of the pair
    (``fused_ops[i]``) raises it."""
    try:
        return kernel(*args, **attrs)
    except errors.OpError as e:
        raise _as_graph_node_error(e, node, i) from e


def _as_graph_node_error(e: errors.OpError, node: KernelNode, i: int) -> errors.OpError:
    """``e`` as the graph's MatMul or BiasAdd ``i`` of the pair raises it: naming that node,
    with its data inputs (the op before it, or the pair's input, and its own operand) and
    attrs."""
    ops = node.attrs["fused_ops"]
    names = [n.decode() for n in node.attrs["fused_names"]] + [node.name]
    operand = sum(op in (b"MatMul", b"BiasAdd") for op in ops[:i])  # its index in ``args``
    inputs = [node.inputs[0] if i == 0 else names[i - 1], node.inputs[1 + operand]]
    if ops[i] == b"MatMul":
        attrs = _graph_matmul_attrs(node)
    else:
        attrs = {"T": node.attrs["T"], "data_format": node.attrs["data_format"]}
    return graph_node_error(e, node, names[i], ops[i].decode(), inputs, attrs)


# -- the remapper's _FusedMatMulSum: an AddN of MatMuls ------------------------------------------


def _sum_cost(*args: Any, node: KernelNode) -> float:
    """The products' estimates, as MatMul's."""
    return sum(_matmul_cost(a, b) for a, b in zip(args[0::2], args[1::2], strict=True))


@register_kernel("_FusedMatMulSum", types={"T": (dtypes.float32,)}, cost=_sum_cost)
def fused_matmul_sum(*args: Array, node: KernelNode) -> Array:
    """``AddN(MatMul(a0, b0), MatMul(a1, b1), ...)``, each product folded into its group of the
    sum as soon as it is made, while it is in cache: the AddN's groups and order
    (``math_kernels.add_n_groups``), so the AddN's bits. On a pool thread with
    idle threads beside it, each thread makes the products of a group of its own in order and
    then takes the last ones left of the others'; a group's products are folded in order by
    whichever thread holds it. wide16's sixteen 512^3 products against its MatMuls and then its
    AddN, alternated in one process: 21.04 against 21.97 ms and 21.08 against 21.49
    (``docs/performance.md``, *Products summed as they are made*)."""
    pairs = list(zip(args[0::2], args[1::2], strict=True))
    if not _sum_valid(pairs):
        return _sum_as_graph_ops(node, pairs)
    n = len(pairs)
    sums = _Sums(pairs, add_n_groups(n))
    workers = min(intra_op.workers(), n)  # a thread without a group of its own takes others'
    if workers > 1:
        intra_op.parallel_for(workers, lambda w: sums.work(w, workers))
    else:
        sums.work(0, 1)
    return sums.total()


def _sum_valid(pairs: list[tuple[Array, Array]]) -> bool:
    """Whether the graph's MatMuls and AddN would take these operands: float32 matrices whose
    inner dimensions match, every product of one shape."""
    shapes = set()
    for a, b in pairs:
        if not (
            a.ndim == b.ndim == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype == np.float32
        ):
            return False
        shapes.add((a.shape[0], b.shape[1]))
    return len(shapes) == 1


class _Sums:
    """One call's products and groups: which products each thread has claimed, the products
    made and not yet folded, each group's sum so far (``totals``) and the next product it
    folds, and whether a thread is folding it now. ``claimed[g]`` and ``stolen[g]`` count the
    group's products taken from its front and its back, ``started[g]`` whether its own thread
    has begun it; state changes under ``lock``, the products and the folds outside it."""

    def __init__(self, pairs: list[tuple[Array, Array]], groups: list[tuple[int, int]]) -> None:
        self.pairs = pairs
        self.groups = groups
        self.group_of = [g for g, (lo, hi) in enumerate(groups) for _ in range(lo, hi)]
        self.claimed = [0] * len(groups)
        self.stolen = [0] * len(groups)
        self.started = [False] * len(groups)
        self.made: list[Array | None] = [None] * len(pairs)
        self.totals: list[Array | None] = [None] * len(groups)
        self.next_fold = [lo for lo, _ in groups]
        self.folding = [False] * len(groups)
        self.lock = threading.Lock()

    def work(self, worker: int, workers: int) -> None:
        """Worker ``worker`` of ``workers``: its own groups' products in order, then the others'
        last ones, each folded as far as its group's order allows."""
        while True:
            i = self._claim(worker, workers)
            if i < 0:
                return
            a, b = self.pairs[i]
            made = products.product(a, b)
            with self.lock:
                self.made[i] = made
            self._fold(self.group_of[i])

    def total(self) -> Array:
        """The groups' sums added in order, once every product is folded."""
        sums = [t for t in self.totals if t is not None]
        if len(sums) != len(self.groups):
            raise AssertionError("a group of the sum was left unfolded")
        total = sums[0]
        for other in sums[1:]:
            np.add(total, other, out=total)
        return total

    def _claim(self, worker: int, workers: int) -> int:
        """The next product for ``worker``: its own groups' next, in order; else the last one
        left of another group, or its first while its own thread has not begun it (a late
        helper's: made in order, each is folded while in cache); -1 when none is left."""
        with self.lock:
            for g, (lo, hi) in enumerate(self.groups):
                if g % workers == worker and lo + self.claimed[g] < hi - self.stolen[g]:
                    self.started[g] = True
                    self.claimed[g] += 1
                    return lo + self.claimed[g] - 1
            for g in reversed(range(len(self.groups))):
                lo, hi = self.groups[g]
                if lo + self.claimed[g] < hi - self.stolen[g]:
                    if not self.started[g]:
                        self.claimed[g] += 1
                        return lo + self.claimed[g] - 1
                    self.stolen[g] += 1
                    return hi - self.stolen[g]
        return -1

    def _fold(self, g: int) -> None:
        """Fold group ``g``'s products that are made, in order, unless another thread is
        folding it (which then folds this one too: it looks again before it stops)."""
        while True:
            with self.lock:
                i = self.next_fold[g]
                made = self.made[i] if i < self.groups[g][1] else None
                if self.folding[g] or made is None:
                    return
                self.folding[g] = True
                self.made[i] = None
            try:
                total = self.totals[g]
                if total is None:  # the group's first product is its sum so far
                    self.totals[g] = made
                else:
                    np.add(total, made, out=total)
            finally:
                with self.lock:
                    self.next_fold[g] = i + 1
                    self.folding[g] = False


def _sum_as_graph_ops(node: KernelNode, pairs: list[tuple[Array, Array]]) -> Array:
    """Operands the graph's ops would refuse: its MatMuls one after another, then its AddN,
    each error naming its own node."""
    names = [name.decode() for name in node.attrs["fused_names"]]
    made = []
    for i, (a, b) in enumerate(pairs):
        try:
            made.append(mat_mul(a, b, transpose_a=False, transpose_b=False))
        except errors.OpError as e:
            inputs = list(node.inputs[2 * i : 2 * i + 2])
            attrs = _graph_matmul_attrs(node)
            raise graph_node_error(e, node, names[i], "MatMul", inputs, attrs) from e
    total = dataclasses.replace(node, op="AddN", attrs={"T": node.attrs["T"], "N": len(made)})
    try:
        result: Array = add_n(*made, node=total)
    except errors.OpError as e:
        raise graph_node_error(e, node, node.name, "AddN", names, total.attrs) from e
    return result


def _graph_matmul_attrs(node: KernelNode) -> dict[str, Any]:
    """The attrs of a graph's MatMul the remapper fused into ``node``: its T and the defaults,
    as it fuses only those (no transposes, no gradient's marks)."""
    return {"T": node.attrs["T"], **op_def_registry.lookup("MatMul").default_attrs()}
