"""oneDNN's matmul primitive on packed weights (``devices/onednn_matmul.py``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from aiotf.devices import onednn, onednn_matmul

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
    alone = np.empty((64, 512), F32)
    assert onednn_matmul.into(a, packed, alone, bias)
    inputs = [a + F32(i) for i in range(4)]
    wants = []
    for x in inputs:
        want = np.empty((64, 512), F32)
        assert onednn_matmul.into(x, packed, want, bias)
        wants.append(want)
    failures: list[str] = []
    start = threading.Barrier(4)

    def work(i: int) -> None:
        out = np.empty((64, 512), F32)
        start.wait()
        for _ in range(30):
            assert onednn_matmul.into(inputs[i], packed, out, bias)
            if not np.array_equal(out, wants[i]):
                failures.append(f"thread {i}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    np.testing.assert_array_equal(wants[0], alone)
