"""oneDNN's GEMM for the products made whole (``devices/onednn.py``, ``kernels/products.py``)."""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from aiotf.devices import blas, onednn
from aiotf.kernels import derived, math_kernels, products
from tests.kernels.conftest import in_pool_thread
from tests.kernels.test_products import _close, _operands

F32 = np.float32

needs_onednn = pytest.mark.skipif(
    not onednn.available(), reason="oneDNN is not installed (aiotf[onednn])"
)


def _installed() -> bool:
    try:
        importlib.metadata.distribution("onednn-cpu-gomp")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_an_installed_onednn_is_loaded() -> None:
    """The README's install (``.[dev]``, as CI's) has it on Linux x86-64: there it loads, and
    the tests below run."""
    wanted = _installed() and os.environ.get("AIOTF_ONEDNN", "1") != "0"
    assert onednn.available() == wanted
    assert products._ONEDNN is wanted
    if wanted:
        assert (onednn.version() or "").startswith("3.")


def test_the_environment_turns_it_off() -> None:
    code = "from aiotf.kernels import products; from aiotf.devices import onednn; "
    code += "print(onednn.available(), products._ONEDNN, onednn.version())"
    env = dict(os.environ, AIOTF_ONEDNN="0")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False", "None"]


def _by_columns(x: np.ndarray) -> np.ndarray:
    return np.asfortranarray(x)


@pytest.fixture
def made_by_onednn(monkeypatch) -> list[tuple[int, ...]]:
    """The shape of every output oneDNN makes while the test runs."""
    shapes: list[tuple[int, ...]] = []
    real = onednn.matmul_into

    def spy(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
        shapes.append(out.shape)
        return real(a, b, out)

    monkeypatch.setattr(onednn, "matmul_into", spy)
    return shapes


LAYOUTS = {
    "rows": lambda a, b, out: (a, b, out),
    "a by columns": lambda a, b, out: (_by_columns(a), b, out),
    "b by columns": lambda a, b, out: (a, _by_columns(b), out),
    "out by columns": lambda a, b, out: (a, b, _by_columns(out)),
    "all by columns": lambda a, b, out: (_by_columns(a), _by_columns(b), _by_columns(out)),
    "rows apart": lambda a, b, out: (
        np.pad(a, ((0, 0), (0, 7)))[:, : a.shape[1]],
        np.pad(b, ((0, 0), (0, 3)))[:, : b.shape[1]],
        np.zeros((out.shape[0], out.shape[1] + 5), F32)[:, : out.shape[1]],
    ),
}


@needs_onednn
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_product_in_every_layout_blas_takes(layout) -> None:
    a, b = _operands(200, 300, 120, seed=1)
    a, b, out = LAYOUTS[layout](a, b, np.empty((200, 120), F32))
    assert onednn.matmul_into(a, b, out)
    _close(out, a, b)


@needs_onednn
def test_layouts_it_leaves_to_numpy() -> None:
    a, b = _operands(200, 600, 120, seed=2)
    out = np.full((200, 120), 7.0, F32)
    assert not onednn.matmul_into(a[:, ::2], b[::2], out)  # elements apart: numpy's loop
    assert not onednn.matmul_into(a, b[::-1], out)  # rows backwards
    square = a[:, :200].copy()
    assert not onednn.matmul_into(square, square, square)  # the output overlaps an operand
    assert (out == 7.0).all()


@needs_onednn
def test_a_product_made_whole_goes_to_onednn(monkeypatch, made_by_onednn) -> None:
    calls = made_by_onednn
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: False)  # every product whole
    a, b = _operands(300, 256, 200, seed=3)
    got = products.product(a, b)
    assert calls == [(300, 200)]
    _close(got, a, b)
    # Not: one row (numpy's GEMV), products OpenBLAS's small kernels take, products below
    # ONEDNN_MIN_VOLUME (numpy's call was quicker), other dtypes.
    products.product(a[:1], b)
    products.product(a[:, :16], b[:16])
    products.product(a[:64], b[:, :120])  # 64x256x120: 2.0M multiply-adds
    products.product(a.astype(np.float64), b.astype(np.float64))
    assert calls == [(300, 200)]
    monkeypatch.setattr(products, "_ONEDNN", False)
    np.testing.assert_array_equal(products.product(a, b), a @ b)
    assert len(calls) == 1


@needs_onednn
def test_a_product_by_a_deep_weight_goes_whole_to_onednn(monkeypatch) -> None:
    """OpenBLAS's transposed product (``products``) took 1.05-1.33x oneDNN's one product; the
    panels of a few rows stay."""
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: True)
    monkeypatch.setattr(products, "panel_max_rows", lambda: products.SMALL_GEMM_TN_OUTPUT)
    monkeypatch.setattr(products, "deep_panel_max_rows", lambda: 32)
    a, b = _operands(48, 2048, 1024, seed=7)
    derived.freeze(b)
    assert products.way(a, b) is products.BY_ONEDNN
    assert products.way(a[:32], b).width > 0
    _close(products.product(a, b), a, b)
    monkeypatch.setattr(products, "_ONEDNN", False)
    products._ways.clear()
    assert products.way(a, b).columns is not None  # transposed


@needs_onednn
def test_every_part_of_a_split_product_goes_where_the_whole_went(
    monkeypatch, made_by_onednn
) -> None:
    """A product of at least ONEDNN_MIN_VOLUME goes to oneDNN, and so do all its parts when
    it is split, however few multiply-adds each has (one library makes every row)."""
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: False)
    a, b = _operands(240, 256, 100, seed=8)  # 6.1M multiply-adds; a third 2.0M
    assert products.way(a, b) is products.BY_ONEDNN
    assert products.way(a[:80], b) is products.WHOLE
    parts = made_by_onednn
    split = in_pool_thread(2, lambda: math_kernels.matmul(a, b))
    assert len(parts) >= 2 and sum(shape[0] for shape in parts) == 240
    np.testing.assert_array_equal(split, products.product(a, b))


@needs_onednn
@pytest.mark.parametrize("shape", [(512, 512, 512), (96, 512, 2048)], ids=["rows", "columns"])
def test_a_split_product_has_the_bits_of_the_whole(monkeypatch, made_by_onednn, shape) -> None:
    """oneDNN makes each row and column the same however the product is cut, so a MatMul split
    over the pool (by rows, or by columns for few rows) is the product made whole."""
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: False)
    a, b = _operands(*shape, seed=4)
    parts = made_by_onednn
    whole = products.product(a, b)
    split = in_pool_thread(2, lambda: math_kernels.matmul(a, b))
    assert parts[0] == whole.shape and len(parts) >= 3  # the whole, then the split's parts
    np.testing.assert_array_equal(split, whole)


@needs_onednn
def test_each_calling_thread_multiplies_alone() -> None:
    """The OpenMP build would start a team of one thread per core in every call: each thread
    that calls has its OpenMP thread count set to one."""
    library = onednn._LIBRARY
    assert library is not None and library.set_threads is not None  # the OpenMP build
    openmp = library.handle  # its own OpenMP runtime, found through it (another may be loaded)
    openmp.omp_get_max_threads.restype = ctypes.c_int
    seen: list[int] = []
    a, b = _operands(256, 256, 256, seed=5)

    def call() -> None:
        openmp.omp_set_num_threads(2)  # as it would be for a thread of a 2-core machine
        onednn.matmul_into(a, b, np.empty((256, 256), F32))
        seen.append(openmp.omp_get_max_threads())

    for _ in range(2):
        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
    assert seen == [1, 1]


@needs_onednn
@pytest.mark.parametrize(
    "binding", ["OMP_PROC_BIND=true", "OMP_PLACES=cores", "GOMP_CPU_AFFINITY=0"]
)
def test_loading_it_leaves_the_process_on_all_its_cpus(binding: str) -> None:
    """Regression: GNU OpenMP, loaded with oneDNN, bound the importing thread to one CPU when
    asked to bind, and every pool thread started after inherited it."""
    code = "import os; cpus = os.sched_getaffinity(0); import aiotf; "
    code += "from aiotf.devices import onednn; "
    code += "print(onednn.available(), os.sched_getaffinity(0) == cpus, len(cpus))"
    name, value = binding.split("=")
    env = dict(os.environ, **{name: value})
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    available, same, cpus = out.stdout.split()
    assert available == "True" and same == "True", out.stdout


_FAULTS = """
import asyncio, resource
import numpy as np
import aiotf

rng = np.random.default_rng(6)
g = aiotf.Graph()
with g.as_default():
    x = aiotf.placeholder(aiotf.float32, shape=[512, 512])
    ws = [aiotf.constant(rng.standard_normal((512, 512)).astype(np.float32)) for _ in range(16)]
    y = aiotf.add_n([aiotf.matmul(x, w) for w in ws])
xv = rng.standard_normal((512, 512)).astype(np.float32)

async def main():
    async with aiotf.Session(graph=g) as sess:
        for _ in range(3):
            await sess.run(y, {x: xv})
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(10):
            await sess.run(y, {x: xv})
        print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)

asyncio.run(main())
"""


@needs_onednn
def test_its_buffers_are_not_mapped_again_for_every_product() -> None:
    """Regression: ``dnnl_sgemm`` allocates and frees its packing buffers in every call, and
    glibc mapped them afresh each time, so every product faulted its pages in again (wide16:
    ~2,300 page faults a run, 8% slower than OpenBLAS). ``onednn._settle_malloc`` keeps them
    in the heap."""
    out = subprocess.run(
        [sys.executable, "-c", _FAULTS], capture_output=True, text=True, check=True
    )
    assert float(out.stdout) < 100  # 1,600-1,900 a run before (wide16's sixteen products)


@needs_onednn
def test_a_convolutions_blocks_go_where_its_whole_product_would(made_by_onednn) -> None:
    """Regression: a convolution's im2col blocks are cut by how many pool threads are idle; a
    block under ONEDNN_MIN_VOLUME went to numpy while a bigger one went to oneDNN, so the
    output's bits changed with the pool's load. Every block now goes where the whole would."""
    from tests.devices.test_onednn_matmul import _conv

    conv = _conv()
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 20, 20, 88)).astype(F32)  # 81 rows an image by 792 by 48:
    f = rng.standard_normal((3, 3, 88, 48)).astype(F32)  # 3.1M multiply-adds an image
    alone = conv.compute(x, f)  # two blocks: two images, then one
    pooled = in_pool_thread(2, lambda: conv.compute(x, f))  # three blocks of one image
    np.testing.assert_array_equal(pooled, alone)
    assert len(made_by_onednn) == 5 and {shape[1] for shape in made_by_onednn} == {48}
