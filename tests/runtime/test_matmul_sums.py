"""The remapper's third fusion: an AddN of MatMuls nothing else reads becomes one
``_FusedMatMulSum`` (``runtime/remapper.py``), whose kernel (``kernels/fused_products.py``)
folds each product into its group of the sum as it is made: the AddN's bits, whatever the
threads; errors naming the graph's own node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import dtypes
from aiotf.kernels import registry
from aiotf.kernels.registry import KernelNode
from aiotf.proto import RewriterConfig
from aiotf.runtime.graph import Graph
from aiotf.runtime.layouts import mark_any_layouts
from aiotf.runtime.remapper import fuse_matmul_sums
from tests.kernels.conftest import in_pool_thread
from tests.runtime.test_matmul_pairs import (  # noqa: F401 - fixtures
    fail_as_the_graph,
    in_pool,
    pool_device,
    pool_of_four,
)
from tests.runtime.test_remapper import CPU0, CPU1, add

F32 = dtypes.float32
Array = np.ndarray[Any, Any]


def sum_graph(n: int, device: str = CPU0, **matmul_attrs: Any) -> Graph:
    """x -> n MatMuls by w0..w{n-1} -> AddN 'sum' -> Identity 'out'."""
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    for i in range(n):
        add(g, f"w{i}", "Placeholder", dtype=F32)
        add(g, f"mm{i}", "MatMul", ["x", f"w{i}"], T=F32, device=device, **matmul_attrs)
    add(g, "sum", "AddN", [f"mm{i}" for i in range(n)], T=F32, N=n)
    add(g, "out", "Identity", ["sum"], T=F32)
    return g


def test_an_addn_of_matmuls_fuses_into_one_node_of_its_name() -> None:
    g = sum_graph(10)
    add(g, "c", "NoOp")
    g["mm1"].control_inputs.append("c")
    assert fuse_matmul_sums(g, frozenset())
    node = g["sum"]
    assert node.op == "_FusedMatMulSum"
    assert node.inputs == [edge for i in range(10) for edge in (("x", 0), (f"w{i}", 0))]
    assert node.attrs["num_args"] == 20
    assert node.attrs["fused_names"] == [f"mm{i}".encode() for i in range(10)]
    assert node.control_inputs == ["c"]
    assert not {f"mm{i}" for i in range(10)} & {n.name for n in g}
    assert g["out"].inputs == [("sum", 0)]
    assert not fuse_matmul_sums(g, frozenset())


@pytest.mark.parametrize(
    "change",
    ["fetched", "read twice", "read elsewhere", "transposed", "one input not a product",
     "one product on another device", "one group of the sum's"],
)  # fmt: skip
def test_what_stays_as_written(change: str) -> None:
    g = sum_graph(9 if change == "one group of the sum's" else 10)
    keep = frozenset({"mm1"}) if change == "fetched" else frozenset()
    if change == "read twice":
        g["sum"].inputs[2] = ("mm1", 0)
    elif change == "read elsewhere":
        add(g, "other", "Identity", ["mm1"], T=F32)
    elif change == "transposed":
        g["mm1"].attrs["transpose_b"] = True
    elif change == "one input not a product":
        add(g, "y", "Placeholder", dtype=F32)
        g["sum"].inputs[1] = ("y", 0)
    elif change == "one product on another device":
        g["mm2"].assigned_device = CPU1
    assert not fuse_matmul_sums(g, keep)
    assert g["sum"].op == "AddN"


def sum_node(n: int) -> KernelNode:
    attrs = {"T": F32, "num_args": 2 * n, "fused_names": [f"mm{i}".encode() for i in range(n)]}
    inputs = tuple(name for i in range(n) for name in ("x", f"w{i}"))
    return KernelNode("sum", "_FusedMatMulSum", attrs, (F32,) * 2 * n, (F32,), CPU0, inputs)


def operands(n: int, m: int = 96, k: int = 128, cols: int = 80, seed: int = 0) -> list[Array]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    out = []
    for _ in range(n):
        out += [x, rng.standard_normal((k, cols)).astype(np.float32)]
    return out


def addn_of_products(args: list[Array]) -> Array:
    """The graph's own ops: each MatMul's kernel, then the AddN's."""
    mat_mul = registry.create_kernel(
        KernelNode("mm", "MatMul", {"T": F32, "transpose_a": False, "transpose_b": False},
                   (F32, F32), (F32,), CPU0), "CPU",
    )  # fmt: skip
    made = [mat_mul.compute(a, b) for a, b in zip(args[0::2], args[1::2], strict=True)]
    node = KernelNode("sum", "AddN", {"T": F32, "N": len(made)}, (F32,) * len(made), (F32,), CPU0)
    result: Array = registry.create_kernel(node, "CPU").compute(*made)
    return result


@pytest.mark.parametrize("size", ["small", "large"])  # numpy's products; oneDNN's if installed
@pytest.mark.parametrize("n", [2, 3, 8, 9, 16, 20])
def test_the_addns_bits_on_one_thread_and_more(
    n: int,
    size: str,
    pool_device: Any,  # noqa: F811
    pool_of_four: Any,  # noqa: F811
) -> None:
    """The AddN's groups (the first eight, or n % 8; then eights) in its order, each product
    folded in turn whichever thread made it."""
    shape = (96, 128, 80) if size == "small" else (128, 256, 64)
    args = operands(n, *shape, seed=n)
    kernel = registry.create_kernel(sum_node(n), "CPU")
    want = addn_of_products(args)
    np.testing.assert_array_equal(kernel.compute(*args), want)
    # a pool thread whose helper never comes: the caller claims every group's products
    np.testing.assert_array_equal(in_pool_thread(2, lambda: kernel.compute(*args)), want)
    for device in (pool_device, pool_of_four):  # each thread its own groups, then others'
        for _ in range(3):
            np.testing.assert_array_equal(in_pool(device, lambda: kernel.compute(*args)), want)


def test_the_products_operands_keep_any_layout() -> None:
    """A MatMul read only by the fused sum's products may still leave its output laid out by
    columns (``runtime/layouts.py``), as when the sum's MatMuls were the graph's."""
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    add(g, "v", "Placeholder", dtype=F32)
    add(g, "h", "MatMul", ["x", "v"], T=F32)
    for i in range(10):
        add(g, f"w{i}", "Placeholder", dtype=F32)
        add(g, f"mm{i}", "MatMul", ["h", f"w{i}"], T=F32)
    add(g, "sum", "AddN", [f"mm{i}" for i in range(10)], T=F32, N=10)
    assert fuse_matmul_sums(g, frozenset())
    assert mark_any_layouts(g, frozenset())
    assert g["h"].attrs.get("_any_layout") is True
    assert "_any_layout" not in g["sum"].attrs  # its own output is by rows


@pytest.mark.parametrize(
    ("case", "node", "words"),
    [
        ("inner", "mm2", "Matrix size-incompatible"),
        ("shapes", "sum", "must have the same size and shape"),
    ],
)
async def test_bad_operands_fail_as_the_graphs_own_node_and_the_next_run_works(
    case: str, node: str, words: str
) -> None:
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((16, 32)).astype(np.float32)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None, None], name="x")
        ws = [aiotf.placeholder(aiotf.float32, [None, None], name=f"w{i}") for i in range(10)]
        y = aiotf.add_n([aiotf.matmul(x, w, name=f"mm{i}") for i, w in enumerate(ws)], name="sum")
    wv = [rng.standard_normal((32, 8)).astype(np.float32) for _ in range(10)]
    good = {x: xv, **dict(zip(ws, wv, strict=True))}
    bad = dict(good)
    bad[ws[2]] = wv[2][:20] if case == "inner" else rng.standard_normal((32, 9)).astype(np.float32)
    want = sum(xv.astype(np.float64) @ w for w in wv)
    fused, plain = aiotf.ConfigProto(), aiotf.ConfigProto()
    fused.graph_options.rewrite_options.remapping = RewriterConfig.ON
    plain.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    await fail_as_the_graph(
        g, y, good, bad, want, {"sum": ("_FusedMatMulSum", "AddN")}, (fused, plain), node, words
    )


async def test_a_session_sums_as_the_graph_would() -> None:
    """wide16's shape of graph, small: the fused node's answer is the AddN's of the MatMuls,
    bit for bit (remapping off runs them as written)."""
    rng = np.random.default_rng(6)
    xv = rng.standard_normal((256, 192)).astype(np.float32)
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [256, 192], name="x")
        ws = [rng.standard_normal((192, 160)).astype(np.float32) for _ in range(10)]
        y = aiotf.add_n([aiotf.matmul(x, aiotf.constant(w)) for w in ws], name="sum")
    got = {}
    for remapping in (RewriterConfig.ON, RewriterConfig.OFF):
        config = aiotf.ConfigProto()
        config.graph_options.rewrite_options.remapping = remapping
        async with aiotf.Session(graph=g, config=config) as sess:
            got[remapping] = [await sess.run(y, {x: xv}) for _ in range(3)]
    for value in got[RewriterConfig.ON] + got[RewriterConfig.OFF][1:]:
        np.testing.assert_array_equal(value, got[RewriterConfig.OFF][0])
