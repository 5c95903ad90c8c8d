"""Products by panels, transposed and by row stacks (``kernels/products.py``) against float64
references, and split over the pool against the product made on one thread."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import aiotf
from aiotf.devices import onednn_conv
from aiotf.kernels import derived, math_kernels, products
from tests.kernels.conftest import in_pool_thread

F32 = np.float32


@pytest.fixture
def small_gemm(monkeypatch):
    """Products by panels and stacks whatever the CPU: they are correct on any BLAS, only their
    speed is OpenBLAS's small-matrix kernels' (``blas.small_gemm_kernels``); and by panels up to
    as many rows as those take, whatever the vendor (``products.panel_max_rows``)."""
    from aiotf.devices import blas

    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: True)
    monkeypatch.setattr(products, "panel_max_rows", lambda: products.SMALL_GEMM_TN_OUTPUT)
    monkeypatch.setattr(products, "deep_panel_max_rows", lambda: 0)  # a deep weight: transposed
    monkeypatch.setattr(products, "_ONEDNN", False)  # ... not oneDNN's (tests/devices/test_onednn)


@pytest.mark.parametrize(
    ("vendor", "most"), [("GenuineIntel", 24), ("AuthenticAMD", 1200), ("", 1200)]
)
def test_panels_take_as_many_rows_as_measured_on_the_cpu(monkeypatch, vendor, most) -> None:
    """On an Intel Xeon a product of more than 24 rows ran slower by panels than as one: it
    runs whole there, and by panels where that was measured faster (an AMD EPYC)."""
    from aiotf.devices import blas

    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: True)
    monkeypatch.setattr(blas, "cpu_vendor", lambda: vendor)
    products.panel_max_rows.cache_clear()
    try:
        assert products.panel_max_rows() == most
        for m, panels in [(16, True), (24, True), (64, most > 64)]:
            a, b = _operands(m, 784, 512, seed=17)
            derived.freeze(b)
            assert (products.way(a, b).width > 0) == panels, m
    finally:
        products.panel_max_rows.cache_clear()


@pytest.mark.parametrize(("vendor", "most"), [("GenuineIntel", 0), ("AuthenticAMD", 32), ("", 0)])
def test_a_deep_weight_runs_by_panels_up_to_as_many_rows_as_measured(
    monkeypatch, vendor, most
) -> None:
    """On an AMD EPYC products of up to 32 rows by a deep weight ran faster by panels than
    transposed (the cnn's dense layer 2.1 against 2.4 ms), 48 rows slower; on an Intel Xeon
    such products run transposed."""
    from aiotf.devices import blas

    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: True)
    monkeypatch.setattr(blas, "cpu_vendor", lambda: vendor)
    monkeypatch.setattr(products, "_ONEDNN", False)  # with it, whole (tests/devices/test_onednn)
    products.panel_max_rows.cache_clear()
    products.deep_panel_max_rows.cache_clear()
    try:
        assert products.deep_panel_max_rows() == most
        for m in (17, 32, 48):
            a, b = _operands(m, 2048, 1024, seed=22)
            derived.freeze(b)
            how = products.way(a, b)
            assert how.columns is not None
            assert (how.width > 0) == (m <= most), m
            _close(products.product(a, b, how), a, b)
    finally:
        products.panel_max_rows.cache_clear()
        products.deep_panel_max_rows.cache_clear()


def _operands(m: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(F32), rng.standard_normal((k, n)).astype(F32)


def _close(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(a.shape[1]))


def _split(a: np.ndarray, b: np.ndarray, any_layout: bool = False) -> np.ndarray:
    """``matmul`` in a pool thread with a helper that never comes: every part, in turn."""
    return in_pool_thread(2, lambda: math_kernels.matmul(a, b, any_layout))


# (m, k, n) and the panel width each takes: whole panels, panels and columns left over, and the
# widest panels that fit OpenBLAS's small products as rows grow.
PANEL_CASES = [
    ((2, 3136, 512), 32),
    ((8, 300, 1000), 32),
    ((16, 3136, 70), 16),
    ((32, 1024, 1024), 16),
    ((64, 784, 517), 16),
    ((128, 784, 300), 8),
]


@pytest.mark.parametrize(("shape", "width"), PANEL_CASES)
def test_a_product_by_panels_is_the_product(small_gemm, shape, width) -> None:
    a, b = _operands(*shape, seed=11)
    derived.freeze(b)  # a Const's value
    how = products.way(a, b)
    assert (how.width, how.rows) == (width, 0)
    alone = products.product(a, b)
    _close(alone, a, b)
    assert derived.kept("columns", b) is not None
    np.testing.assert_array_equal(_split(a, b), alone)  # split in whole panels: the same bits


# (m, k, n): the cnn's dense layer, columns left over past the blocks of 16, the most rows.
TRANSPOSED_CASES = [(32, 3136, 1024), (17, 2048, 1000), (128, 2048, 776)]


@pytest.mark.parametrize("shape", TRANSPOSED_CASES)
def test_a_product_transposed_is_the_product(small_gemm, shape) -> None:
    a, b = _operands(*shape, seed=16)
    derived.freeze(b)
    how = products.way(a, b)
    assert how.columns is not None and (how.width, how.rows) == (0, 0)
    alone = products.product(a, b)
    _close(alone, a, b)
    assert alone.flags.c_contiguous  # copied back into rows
    np.testing.assert_array_equal(alone, a @ b)  # OpenBLAS's own sums, either way round
    np.testing.assert_array_equal(_split(a, b), alone)  # split in blocks of 16 columns
    by_columns = products.product(a, b, any_layout=True)  # left as BLAS made it
    assert by_columns.flags.f_contiguous
    np.testing.assert_array_equal(by_columns, alone)
    np.testing.assert_array_equal(_split(a, b, any_layout=True), alone)


# (m, k, n, layout of ``a``): mlp's first layer, its second (``a`` a transposed product's
# output), the fewest rows past the Intel panels' 24, the most, the smallest sides.
FEW_ROWS_CASES = [
    (64, 784, 512, "C"),
    (64, 512, 512, "F"),
    (25, 784, 512, "C"),
    (64, 2048, 300, "F"),
    (40, 256, 256, "C"),
]


@pytest.mark.parametrize("case", FEW_ROWS_CASES)
def test_a_product_of_a_few_dozen_rows_runs_transposed(monkeypatch, case) -> None:
    """Past the panels' rows (24 on an Intel Xeon) and up to 64, any weight of 256 rows and
    columns or more, when the output may be laid out by columns: the product's transpose, left
    so, the same bits."""
    from aiotf.devices import blas

    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: True)
    monkeypatch.setattr(products, "panel_max_rows", lambda: 24)
    monkeypatch.setattr(products, "_ONEDNN", False)  # OpenBLAS's ways
    m, k, n, layout = case
    a, b = _operands(m, k, n, seed=18)
    a = np.asarray(a, order=layout)
    derived.freeze(b)
    assert products.way(a, b) is products.WHOLE  # the output must be by rows
    how = products.way(a, b, any_layout=True)
    assert how.columns is not None and (how.width, how.rows, how.by_columns) == (0, 0, True)
    alone = products.product(a, b, any_layout=True)
    assert alone.flags.f_contiguous
    np.testing.assert_array_equal(alone, a @ b)
    np.testing.assert_array_equal(_split(a, b, any_layout=True), alone)
    out = np.empty((m, n), F32)  # into a row-major output: copied back
    products.into(a, b, out, how)
    np.testing.assert_array_equal(out, alone)
    # More rows, or a narrower side: not transposed.
    for shape in [(65, k, n), (m, 255, n), (m, k, 255)]:
        a2, b2 = _operands(*shape, seed=19)
        derived.freeze(b2)
        assert products.way(a2, b2, any_layout=True).columns is None, shape


# (m, k, n, layout of ``a``) and the rows of each stack: the cnn's first convolution (its im2col
# built tap-major, so read by columns), rows left over, a narrow inner dimension.
STACK_CASES = [
    ((25088, 25, 32, "C"), 1248),
    ((25088, 25, 32, "F"), 1248),
    ((5000, 27, 64, "C"), 576),
    ((401, 400, 40, "C"), 48),
]


@pytest.mark.parametrize(("case", "rows"), STACK_CASES)
def test_a_product_by_row_stacks_is_the_product(small_gemm, monkeypatch, case, rows) -> None:
    m, k, n, layout = case
    a, b = _operands(m, k, n, seed=12)
    if layout == "F":
        a = np.asfortranarray(a)
    how = products.way(a, b)
    assert (how.width, how.rows) == (0, rows)
    stacked: list[int] = []  # regression: a refactoring once lost the stacks' branch of into()
    real = products._by_stacks
    monkeypatch.setattr(
        products, "_by_stacks", lambda *args: stacked.append(args[2]) or real(*args)
    )
    alone = products.product(a, b)
    assert stacked == [rows]
    _close(alone, a, b)
    np.testing.assert_array_equal(_split(a, b), alone)  # split in whole stacks: the same bits


ONE_PRODUCT_CASES = {  # (a, b, small-matrix kernels in the BLAS)
    "float64": (np.ones((32, 3136)), np.ones((3136, 1024)), True),
    "no small kernels": (np.ones((32, 3136), F32), np.ones((3136, 1024), F32), False),
    "small already": (np.ones((8, 100), F32), np.ones((100, 1000), F32), True),
    "one row": (np.ones((1, 784), F32), np.ones((784, 512), F32), True),
    "panels, a transposed": (np.ones((1024, 16), F32).T, np.ones((1024, 1024), F32), True),
    "panels, few inner elements": (np.ones((64, 200), F32), np.ones((200, 512), F32), True),
    "panels, few columns": (np.ones((32, 3136), F32), np.ones((3136, 200), F32), True),
    "transposed, wider than deep": (
        np.ones((100, 4096), F32),
        np.broadcast_to(np.ones(8192, F32), (4096, 8192)),
        True,
    ),
    "transposed, too many rows": (np.ones((129, 3136), F32), np.ones((3136, 1024), F32), True),
    "transposed, too few columns": (  # for more than 64 rows
        np.ones((100, 4096), F32),
        np.broadcast_to(np.ones(500, F32), (4096, 500)),
        True,
    ),
    # Layouts numpy would multiply in its own loop once stacked (found by review): 2-3x slower.
    "panels, a reversed": (np.ones((32, 1024), F32)[::-1], np.ones((1024, 1024), F32), True),
    "panels, a broadcast": (
        np.broadcast_to(np.ones(1024, F32), (32, 1024)),
        np.ones((1024, 1024), F32),
        True,
    ),
    "stacks, b reversed": (np.ones((25088, 25), F32), np.ones((25, 32), F32)[::-1], True),
    "stacks, b broadcast": (
        np.ones((25088, 25), F32),
        np.broadcast_to(np.ones(32, F32), (25, 32)),
        True,
    ),
    "stacks, b transposed": (np.ones((25088, 25), F32), np.ones((32, 25), F32).T, True),
    "stacks, a strided both ways": (
        np.ones((25088, 50), F32)[:, ::2],
        np.ones((25, 32), F32),
        True,
    ),
    "stacks, too few rows a stack": (np.ones((4096, 512), F32), np.ones((512, 64), F32), True),
    "stacks, fewer rows than one": (np.ones((1000, 25), F32), np.ones((25, 32), F32), True),
}


@pytest.mark.parametrize("case", sorted(ONE_PRODUCT_CASES))
def test_what_runs_as_one_product(monkeypatch, case) -> None:
    from aiotf.devices import blas

    a, b, small_kernels = ONE_PRODUCT_CASES[case]
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: small_kernels)
    monkeypatch.setattr(products, "_ONEDNN", False)  # numpy's (else oneDNN's: test_onednn)
    derived.freeze(b)
    assert products.way(a, b) is products.WHOLE
    if small_kernels:  # the same BLAS takes the cnn's dense layer and first convolution apart
        dense = (np.ones((32, 3136), F32), np.ones((3136, 1024), F32))
        derived.freeze(dense[1])
        assert products.way(*dense).columns is not None
        assert products.way(np.ones((25088, 25), F32), np.ones((25, 32), F32)).rows == 1248


@pytest.mark.parametrize(("shape", "width"), [((32, 1024, 1024), 16), ((32, 3136, 1024), 0)])
def test_the_columns_must_lie_as_rows_or_be_of_a_frozen_matrix(
    small_gemm, monkeypatch, shape, width
) -> None:
    a, fed = _operands(*shape, seed=13)
    assert products.way(a, fed) is products.WHOLE  # a copy of the weight a call costs more
    monkeypatch.setattr(products, "_ONEDNN", False)  # numpy's one product (else oneDNN's)
    np.testing.assert_array_equal(products.product(a, fed), a @ fed)
    # transpose_b: the columns are the rows of the matrix given, as they lie.
    stored = np.ascontiguousarray(fed.T)
    how = products.way(a, stored.T)
    assert how.width == width and np.shares_memory(how.columns, stored)
    _close(products.product(a, stored.T), a, fed)
    assert derived.kept("columns", stored.T) is None  # nothing made, nothing kept


def test_a_way_is_remembered_for_its_weight_while_it_lives(small_gemm) -> None:
    a, b = _operands(64, 784, 512, seed=21)
    derived.freeze(b)
    how = products.way(a, b, any_layout=True)
    assert how.columns is not None
    assert products.way(a, b, any_layout=True) is how  # found again, not worked out
    # Another geometry of either operand, or another layout allowed, is another way.
    assert not products.way(a, b).by_columns
    assert products.way(np.asarray(a, order="F"), b, any_layout=True) is not how
    assert products.way(a[:8], b).width == 32
    assert products.way(a, b, any_layout=True) is not how  # only the latest is remembered
    key = id(b)
    assert key in products._ways
    small = np.ones((64, 10), F32)  # a product that runs whole at once: nothing to remember
    assert products.way(a[:, :64], small) is products.WHOLE and id(small) not in products._ways
    del b, how
    gc.collect()
    assert key not in products._ways  # forgotten with the weight: its columns are freed


def test_a_way_viewing_its_weight_is_not_remembered(small_gemm) -> None:
    # transpose_b: the columns are the stored matrix itself, which a remembered way would keep
    # alive for ever (the way refers to them, and its entry lives as long as they do).
    a, fed = _operands(32, 1024, 1024, seed=22)
    stored = np.ascontiguousarray(fed.T)
    how = products.way(a, stored.T)
    assert np.shares_memory(how.columns, stored)
    assert id(stored.T) not in products._ways and not any(
        entry[2] is how for entry in products._ways.values()
    )


@pytest.mark.parametrize(
    "shape", [(32, 1024, 1024), (32, 3136, 1024)], ids=["panels", "transposed"]
)
async def test_a_constant_matmul_in_a_session(small_gemm, shape) -> None:
    xv, wv = _operands(*shape, seed=14)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[None, shape[1]])
        y = aiotf.matmul(x, aiotf.constant(wv))
        yt = aiotf.matmul(x, aiotf.constant(np.ascontiguousarray(wv.T)), transpose_b=True)
    gc.collect()  # earlier tests' weights, freed now and not while this one counts
    kept = derived.kept_bytes()
    async with aiotf.Session(graph=g) as sess:
        got, got_t = await sess.run([y, yt], {x: xv})
        assert derived.kept_bytes() - kept == wv.nbytes  # w's columns as rows, made once
        again, _ = await sess.run([y, yt], {x: xv})
        one_row, _ = await sess.run([y, yt], {x: xv[:1]})
    _close(got, xv, wv)
    np.testing.assert_array_equal(got_t, got)  # the same columns, read where they lie
    np.testing.assert_array_equal(again, got)
    _close(one_row, xv[:1], wv)


async def test_the_first_convolution_by_row_stacks(small_gemm, monkeypatch) -> None:
    # The cnn's first layer: one input channel, so an im2col built tap-major, read by columns
    # (where oneDNN does not convolve it: devices/onednn_conv.py).
    monkeypatch.setattr(onednn_conv, "MAX_CHANNELS", 0)
    rng = np.random.default_rng(15)
    xv = rng.standard_normal((32, 28, 28, 1)).astype(F32)
    fv = rng.standard_normal((5, 5, 1, 32)).astype(F32)
    ways = []
    way = products.way

    def spy(a, b):
        ways.append(way(a, b))
        return ways[-1]

    monkeypatch.setattr(products, "way", spy)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=xv.shape)
        y = aiotf.nn.conv2d(x, aiotf.constant(fv), strides=[1, 1, 1, 1], padding="SAME")
    async with aiotf.Session(graph=g) as sess:
        got = await sess.run(y, {x: xv})
    assert ways and all(w.rows == 1248 for w in ways)
    padded = np.pad(xv[..., 0], ((0, 0), (2, 2), (2, 2)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (5, 5), axis=(1, 2))
    want = np.einsum("nhwij,ijc->nhwc", windows.astype(np.float64), fv[:, :, 0].astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
