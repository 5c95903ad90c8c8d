"""oneDNN's matmul primitive on packed weights (``devices/onednn_matmul.py``), and the products
by a frozen weight that use it (``kernels/products.py``)."""

from __future__ import annotations

import collections
import threading
from typing import Any

import numpy as np
import pytest

from aiotf.devices import blas, onednn, onednn_matmul
from aiotf.framework import dtypes
from aiotf.kernels import derived, math_kernels, products, registry
from aiotf.kernels.registry import KernelNode
from tests.kernels.conftest import in_pool_thread

F32 = np.float32

pytestmark = pytest.mark.skipif(
    not onednn.available(), reason="oneDNN is not installed (aiotf[onednn])"
)


def _packed(w: np.ndarray) -> onednn_matmul.Packed:
    data = onednn_matmul.aligned(onednn_matmul.packed_size(*w.shape))
    onednn_matmul.pack_into(w, data)
    return onednn_matmul.Packed.of(data, *w.shape)


def _operands(m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(F32)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(F32)
    bias = rng.standard_normal(n).astype(F32)
    return a, w, bias


@pytest.mark.parametrize("shape", [(64, 784, 512), (32, 3136, 1024), (64, 512, 10), (3, 5, 7)])
def test_the_product_and_its_bias(shape: tuple[int, int, int]) -> None:
    a, w, bias = _operands(*shape)
    packed = _packed(w)
    assert packed.data.__array_interface__["data"][0] % 64 == 0
    out = np.full((shape[0], shape[2]), np.nan, F32)
    assert onednn_matmul.into(a, packed, out)
    want = a.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert onednn_matmul.into(a, packed, out, bias)
    np.testing.assert_allclose(out, want + bias, rtol=1e-4, atol=1e-4)


def test_a_weight_laid_out_by_columns_packs_the_same() -> None:
    a, w, _ = _operands(16, 200, 300, seed=1)
    by_rows, by_columns = _packed(w), _packed(np.asfortranarray(w))
    np.testing.assert_array_equal(by_rows.data, by_columns.data)


def test_every_row_and_column_block_has_the_bits_of_the_whole() -> None:
    a, w, bias = _operands(64, 784, 512, seed=2)
    packed = _packed(w)
    whole = np.empty((64, 512), F32)
    assert onednn_matmul.into(a, packed, whole, bias)
    for lo, hi in [(0, 256), (256, 512), (64, 448), (448, 512)]:
        part = np.empty((64, hi - lo), F32)
        assert onednn_matmul.into(a, _packed(np.ascontiguousarray(w[:, lo:hi])), part, bias[lo:hi])
        np.testing.assert_array_equal(part, whole[:, lo:hi])
    for r0, r1 in [(0, 17), (17, 64), (5, 50)]:
        rows = np.empty((r1 - r0, 512), F32)
        assert onednn_matmul.into(np.ascontiguousarray(a[r0:r1]), packed, rows, bias)
        np.testing.assert_array_equal(rows, whole[r0:r1])


def test_an_output_of_a_wider_ones_columns_is_left_to_numpy() -> None:
    """oneDNN multiplies into rows that lie apart by more than a row with another kernel, which
    reads a plain weight: refused."""
    a, w, _ = _operands(64, 784, 256, seed=6)
    wide = np.full((64, 512), 7.0, F32)
    assert not onednn_matmul.into(a, _packed(w), wide[:, :256])
    np.testing.assert_array_equal(wide, 7.0)


def test_operands_laid_out_otherwise_are_left_alone() -> None:
    a, w, bias = _operands(8, 64, 128, seed=3)
    packed = _packed(w)
    out = np.full((8, 128), 7.0, F32)
    refused = [
        (a.astype(np.float64), out, None),  # another dtype
        (np.lib.stride_tricks.as_strided(a, (8, 64), (8, 8)), out, None),  # neither layout
        (a, out[:, :64], None),  # the wrong shape
        (a[:, :32], out, None),  # the wrong depth
        (a, out, bias.astype(np.float64)),  # a bias of another dtype
        (a, out, bias.repeat(2)[::2]),  # a strided bias
        (a, out, bias[:1]),  # a bias of one column (found by review: read past its end)
    ]
    for left, result, b in refused:
        assert not onednn_matmul.into(left, packed, result, b)
    read_only = out.copy()
    read_only.flags.writeable = False
    assert not onednn_matmul.into(a, packed, read_only)
    overlapping = np.zeros((8, 128), F32)
    assert not onednn_matmul.into(overlapping[:, :64], packed, overlapping)
    np.testing.assert_array_equal(out, 7.0)  # nothing written


def test_a_nan_or_infinity_goes_through_the_product_and_bias() -> None:
    a, w, bias = _operands(8, 64, 128, seed=4)
    a[2, 7] = np.nan
    bias[3], bias[4], bias[5] = np.nan, np.inf, -np.inf
    out = np.empty((8, 128), F32)
    assert onednn_matmul.into(a, _packed(w), out, bias)
    want = a @ w + bias
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(want))


def test_threads_run_one_primitive_at_once_with_the_bits_of_one() -> None:
    a, w, bias = _operands(64, 512, 512, seed=5)
    packed = _packed(w)
    inputs = [a + F32(i) for i in range(4)]
    wants = []
    for x in inputs:  # one after another, on this thread
        want = np.empty((64, 512), F32)
        assert onednn_matmul.into(x, packed, want, bias)
        wants.append(want)
    failures: list[str] = []
    start = threading.Barrier(4)

    def work(i: int) -> None:
        out = np.empty((64, 512), F32)
        start.wait()
        for _ in range(30):
            if not onednn_matmul.into(inputs[i], packed, out, bias):
                failures.append(f"thread {i}: refused")
            elif not np.array_equal(out, wants[i]):
                failures.append(f"thread {i}: other bits")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_a_threads_scratchpad_grows_to_what_each_primitive_asks() -> None:
    """(found by review: the buffer was kept for a request up to 64 bytes over its size, and
    oneDNN wrote past its end)"""
    result: list[str] = []

    def work() -> None:
        for asked in (100, 4096, 4160, 5000, 70_000, 70_004, 1000):
            address = onednn_matmul._scratch(asked)
            scratch = onednn_matmul._local.scratch
            start = scratch.__array_interface__["data"][0]
            usable = start + scratch.nbytes - address
            if address % 64 or address < start or usable < asked:
                result.append(f"{asked}: {usable} bytes at {address % 64}")

    thread = threading.Thread(target=work)  # a fresh thread: its own scratchpad
    thread.start()
    thread.join()
    assert not result


# Products by a frozen weight (``kernels/products.py``, BY_PACKED).


@pytest.fixture
def packed_products(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The output shapes of the products oneDNN made on packed weights, and by its GEMM."""
    made: list[tuple[int, ...]] = []
    into, gemm = onednn_matmul.into, onednn.matmul_into

    def packed(a: np.ndarray, w: Any, out: np.ndarray, bias: Any = None) -> bool:
        done = into(a, w, out, bias)
        if done:
            made.append(("packed", *out.shape))
        return done

    def by_gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
        done = gemm(a, b, out)
        if done:
            made.append(("gemm", *out.shape))
        return done

    monkeypatch.setattr(onednn_matmul, "into", packed)
    monkeypatch.setattr(onednn, "matmul_into", by_gemm)
    return made


def _frozen(x: np.ndarray) -> np.ndarray:
    derived.freeze(x)
    return x


def test_a_frozen_weights_product_cut_by_rows_multiplies_it_packed(
    packed_products: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole, or split over the pool by rows: every part by the packed weight, the bits of the
    whole product whatever the split."""
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: False)  # every product whole
    a, w, _ = _operands(600, 512, 64, seed=7)
    w = _frozen(w)
    assert products.way(a, w) is products.BY_PACKED
    whole = products.product(a, w)
    assert packed_products == [("packed", 600, 64)]
    np.testing.assert_allclose(whole, a.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)
    split = in_pool_thread(2, lambda: math_kernels.matmul(a, w))
    assert len(packed_products) >= 3 and {p[0] for p in packed_products} == {"packed"}
    assert sum(p[1] for p in packed_products[1:]) == 600  # the parts: blocks of rows
    np.testing.assert_array_equal(split, whole)


@pytest.mark.parametrize("case", ["a by columns", "a's rows apart", "split by columns"])
def test_a_product_whose_parts_would_not_lie_whole_keeps_to_the_gemm(
    case: str, packed_products: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """oneDNN's packed kernel takes only rows one after another, in ``a`` and the output; a
    product split by columns (few rows by many columns) writes the columns of a wider output,
    and a block of rows of an ``a`` laid out otherwise than C-contiguous does not lie so. Such
    products go to the GEMM, whole and parts alike, whose rows and columns all match (found on
    the way: an ``a`` by columns multiplied whole packed and its blocks by the GEMM; the
    split's bits were not the whole's)."""
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: False)
    if case == "split by columns":
        a, w, _ = _operands(100, 4096, 64, seed=8)
    else:
        a, w, _ = _operands(600, 512, 64, seed=12)
        a = np.asfortranarray(a) if case == "a by columns" else np.pad(a, ((0, 0), (0, 8)))[:, :512]
    w = _frozen(w)
    assert products.way(a, w) is products.BY_ONEDNN
    whole = products.product(a, w)
    split = in_pool_thread(2, lambda: math_kernels.matmul(a, w))
    assert {p[0] for p in packed_products} == {"gemm"} and len(packed_products) >= 3
    np.testing.assert_array_equal(split, whole)


def test_weights_that_may_change_and_small_products_are_not_packed(
    packed_products: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: False)
    a, w, _ = _operands(600, 512, 64, seed=9)
    assert products.way(a, w) is products.BY_ONEDNN  # not frozen: a feed's, a ref's
    small = _frozen(w[:64].copy())
    assert products.way(a[:, :64], small) is products.WHOLE  # numpy's: under 4M
    wider = _frozen(np.tile(w, 2))  # 128 columns: measured no faster packed
    assert products.way(a, wider) is products.BY_ONEDNN
    monkeypatch.setattr(products, "_ONEDNN", False)
    products._ways.clear()
    assert products.way(a, _frozen(w.copy())) is products.WHOLE


def test_an_input_the_packed_product_refuses_goes_to_the_gemm_or_numpy(
    packed_products: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: False)
    a, w, _ = _operands(600, 512, 64, seed=10)
    w = _frozen(w)
    apart = np.repeat(a, 2, axis=1)[:, ::2]  # its elements apart: neither oneDNN's
    out = np.empty((600, 64), F32)
    products.into(apart, w, out, products.BY_PACKED)
    assert packed_products == []
    np.testing.assert_allclose(out, a.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)


def _conv() -> Any:
    attrs = {
        "T": dtypes.float32, "strides": [1, 2, 2, 1], "padding": b"VALID",
        "data_format": b"NHWC", "dilations": [1, 1, 1, 1], "explicit_paddings": [],
        "use_cudnn_on_gpu": True,
    }  # fmt: skip
    node = KernelNode("conv", "Conv2D", attrs, (dtypes.float32,) * 2, (dtypes.float32,), "CPU:0")
    return registry.create_kernel(node, "CPU")


def test_a_convolutions_blocks_by_a_frozen_filter_all_multiply_it_packed(
    packed_products: list[tuple[int, ...]],
) -> None:
    """The blocks are cut by how many pool threads are idle (two images, then one, alone;
    an image each with idle helpers): each goes where the whole product would
    (``block_way``), here the packed filter, so the bits do not change with the load."""
    conv = _conv()
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 20, 20, 72)).astype(F32)  # 81 rows an image by 648 by 64:
    f = _frozen(rng.standard_normal((3, 3, 72, 64)).astype(F32))  # 3.4M multiply-adds an image
    alone = conv.compute(x, f)
    assert sorted(p[1] for p in packed_products) == [81, 162]
    packed_products.clear()
    pooled = in_pool_thread(2, lambda: conv.compute(x, f))
    assert packed_products == [("packed", 81, 64)] * 3
    np.testing.assert_array_equal(pooled, alone)
    unfrozen = conv.compute(x, f.copy())  # the GEMM's: within float32's last bits
    np.testing.assert_allclose(unfrozen, alone, rtol=1e-4, atol=1e-4)


def test_without_openblass_small_kernels_every_block_goes_where_the_whole_would(
    packed_products: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """(found by review: with a filter small enough for row stacks, each block took its own
    way, which without the small kernels (no stacks) was the packed filter's for the big
    blocks and numpy's for the small; the images' bits changed with the pool's load)"""
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: False)
    conv = _conv()
    rng = np.random.default_rng(12)
    x = rng.standard_normal((5, 29, 29, 32)).astype(F32)  # 196 rows an image by 288 by 64
    f = _frozen(rng.standard_normal((3, 3, 32, 64)).astype(F32))  # k*n 18,432: stacks' size
    alone = conv.compute(x, f)
    pooled = in_pool_thread(2, lambda: conv.compute(x, f))
    np.testing.assert_array_equal(pooled, alone)
    assert packed_products and {p[0] for p in packed_products} == {"packed"}
    assert sum(p[1] for p in packed_products) == 2 * 5 * 196


def test_a_weight_whose_packed_blocks_do_not_fit_the_room_left_is_never_packed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(found by review: the room asked was the weight's own size, where a narrow weight packs
    into blocks of 64 columns, 6.4x its size for ten columns: packed, not kept, and so packed
    again by every run)"""
    packings: list[tuple[int, ...]] = []
    real = onednn_matmul.pack_into

    def pack_into(w: np.ndarray, data: np.ndarray) -> None:
        packings.append(w.shape)
        real(w, data)

    monkeypatch.setattr(onednn_matmul, "pack_into", pack_into)
    w = _frozen(_operands(1, 3136, 10, seed=13)[1])  # a second layer's, cut in halves of rows
    packed_bytes = 4 * (onednn_matmul.packed_size(1536, 10) + onednn_matmul.packed_size(1600, 10))
    assert packed_bytes > 6 * w.nbytes
    monkeypatch.setattr(derived, "_bytes", derived.CACHE_BYTES - (w.nbytes + packed_bytes) // 2)
    for _ in range(3):
        assert products.packed_halves(w, 1536, by_rows=True) is None
    assert packings == []
    monkeypatch.setattr(derived, "_bytes", 0)  # room again: packed once, then kept
    for _ in range(3):
        halves = products.packed_halves(w, 1536, by_rows=True)
        assert halves is not None and [(h.rows, h.cols) for h in halves] == [(1536, 10), (1600, 10)]
    assert packings == [(1536, 10), (1600, 10)]


def test_an_output_the_packed_product_refuses_goes_to_the_gemm(
    packed_products: list[tuple[int, ...]],
) -> None:
    a, w, _ = _operands(600, 512, 64, seed=14)
    w = _frozen(w)
    wide = np.full((600, 100), 7.0, F32)
    products.into(a, w, wide[:, :64], products.BY_PACKED)  # the columns of a wider one
    assert packed_products == [("gemm", 600, 64)]
    np.testing.assert_allclose(wide[:, :64], a.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(wide[:, 64:], 7.0)


@pytest.mark.parametrize("b_rows", [520, 500])
def test_a_products_inner_dimensions_that_differ_are_numpys_to_refuse(b_rows: int) -> None:
    """(found by review: oneDNN's GEMM took the depth from ``a`` and read past the end of a
    shorter ``b``, and MatMul's inline function, which leaves the check to numpy, returned
    garbage)"""
    a, _, _ = _operands(600, 512, 256, seed=15)
    w = _frozen(np.ones((b_rows, 256), F32))
    out = np.empty((600, 256), F32)
    assert not onednn.matmul_into(a, w, out)
    assert not onednn.matmul_into(a, w[:512], out[:300])  # an output of other rows
    fast = math_kernels._matmul_fast_for(transpose_a=False, transpose_b=False)
    with pytest.raises(ValueError, match="mismatch"):
        fast(a, w)


def test_the_least_recently_used_primitives_are_let_go(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model run at many batch sizes makes a primitive a size (~160 KiB each): past
    PRIMITIVES, the least recently used go, and a product made again makes its own anew."""
    monkeypatch.setattr(onednn_matmul, "PRIMITIVES", 3)
    monkeypatch.setattr(onednn_matmul, "_primitives", collections.OrderedDict())
    a, w, _ = _operands(40, 96, 80, seed=16)
    packed = _packed(w)
    wants = {}
    for rows in (10, 20, 30, 10, 40):
        out = np.empty((rows, 80), F32)
        assert onednn_matmul.into(a[:rows], packed, out)
        wants.setdefault(rows, out)
        np.testing.assert_array_equal(out, wants[rows])
    # The packing's own (2 rows) went first, then 20's, as 10's was used again.
    assert [key[0] for key in onednn_matmul._primitives] == [30, 10, 40]
    np.testing.assert_allclose(wants[40], a @ w, rtol=1e-4, atol=1e-4)
