"""The layout pass: a MatMul is marked ``_any_layout`` when every reader of its output, through
the kernels that hand a layout on, is a product; and products so marked run transposed where
that pays, with the values of the plain product (``kernels/products.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import dtypes
from aiotf.framework.op_def_registry import lookup
from aiotf.kernels import products
from aiotf.runtime import graph_optimizer
from aiotf.runtime.graph import Graph, Node, parse_tensor_name
from aiotf.runtime.layouts import ANY_LAYOUT, mark_any_layouts

F32 = dtypes.float32


def add(g: Graph, name: str, op: str, inputs: Iterable[str] = (), **attrs: Any) -> Node:
    op_def = lookup(op)
    all_attrs = op_def.default_attrs()
    all_attrs.update(attrs)
    return g.add(Node(name, op_def, all_attrs, [parse_tensor_name(i) for i in inputs]))


def dense_chain(tail: str) -> Graph:
    """x -> MatMul -> BiasAdd -> Relu -> MatMul 'mm2' -> ``tail``-op reading mm2 -> _Retval."""
    g = Graph()
    for name in ("x", "w1", "b1", "w2"):
        add(g, name, "Placeholder", dtype=F32)
    add(g, "mm1", "MatMul", ["x", "w1"], T=F32)
    add(g, "bias", "BiasAdd", ["mm1", "b1"], T=F32)
    add(g, "relu", "Relu", ["bias"], T=F32)
    add(g, "mm2", "MatMul", ["relu", "w2"], T=F32)
    add(g, "tail", tail, ["mm2"], T=F32)
    add(g, "ret", "_Retval", ["tail"], T=F32, index=0)
    return g


def marked(g: Graph) -> set[str]:
    return {n.name for n in g if n.attrs.get(ANY_LAYOUT)}


@pytest.mark.parametrize(
    ("tail", "want"),
    [("Tanh", {"mm1"}), ("Softmax", {"mm1"}), ("Identity", {"mm1"}), ("MatMul", {"mm1", "mm2"})],
)
def test_a_product_read_by_products_alone_is_marked(tail, want) -> None:
    g = dense_chain(tail)
    if tail == "MatMul":  # mm2 read by a product, the last one's output fetched
        g.replace(Node("tail", lookup("MatMul"), dict(g["mm1"].attrs), [("mm2", 0), ("w2", 0)]))
    assert mark_any_layouts(g)
    # mm2's output reaches the _Retval through Tanh or Identity, or a Softmax: rows
    assert marked(g) == want
    assert not mark_any_layouts(g)  # a fixpoint: nothing changes the second time


def test_any_other_reader_keeps_the_rows() -> None:
    g = dense_chain("Tanh")
    add(g, "fetched", "_Retval", ["relu"], T=F32, index=1)  # mm1's layout would reach a fetch
    assert not mark_any_layouts(g)
    assert marked(g) == set()


def test_a_bias_read_from_the_product_keeps_the_rows() -> None:
    g = dense_chain("Tanh")
    g.replace(Node("bias", lookup("BiasAdd"), dict(g["bias"].attrs), [("b1", 0), ("mm1", 0)]))
    mark_any_layouts(g)
    assert "mm1" not in marked(g)  # read as BiasAdd's bias, not its value


def test_a_reader_that_needs_rows_unmarks() -> None:
    g = dense_chain("Tanh")
    mark_any_layouts(g)
    add(g, "sum", "Sum", ["relu", "x"], T=F32)
    assert mark_any_layouts(g)  # changed: mm1 now reaches a reduction
    assert marked(g) == set()
    assert ANY_LAYOUT not in g["mm1"].attrs


async def test_an_mlp_runs_its_products_by_columns_with_the_plain_values(monkeypatch) -> None:
    """mlp's layers with products of 64 rows (on any CPU here): the two marked products come
    out laid out by columns and BiasAdd, Relu and the next product read them so; the values are
    those of the plain products, and what is fetched comes back by rows."""
    from aiotf.devices import blas

    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: True)
    monkeypatch.setattr(products, "panel_max_rows", lambda: 24)
    # The MatMuls as written (the remapper would pair the first two: test_fused_products).
    monkeypatch.setattr(graph_optimizer, "fuse_matmul_pairs", lambda graph, keep: False)
    layouts = []
    output = products.output

    def spy(a, b, how):
        out = output(a, b, how)
        layouts.append((a.shape[0], b.shape[1], out.flags.f_contiguous))
        return out

    monkeypatch.setattr(products, "output", spy)
    rng = np.random.default_rng(21)
    xv = rng.standard_normal((64, 784)).astype(np.float32)
    w1, w2 = (rng.standard_normal(s).astype(np.float32) / 16 for s in [(784, 512), (512, 300)])
    b1, b2 = (rng.standard_normal(s).astype(np.float32) for s in [512, 300])
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[None, 784])
        h1 = aiotf.nn.relu(aiotf.nn.bias_add(aiotf.matmul(x, aiotf.constant(w1)), b1))
        h2 = aiotf.nn.relu(aiotf.nn.bias_add(aiotf.matmul(h1, aiotf.constant(w2)), b2))
        logits = aiotf.matmul(h2, aiotf.constant(np.ones((300, 10), np.float32)))
        out = aiotf.nn.softmax(logits)
    async with aiotf.Session(graph=g) as sess:
        got_logits, got = await sess.run([logits, out], {x: xv})
        fetched_h2 = await sess.run(h2, {x: xv})  # another signature: h2 is fetched there
    assert (64, 512, True) in layouts and (64, 300, True) in layouts
    assert (64, 300, False) in layouts  # where h2 is fetched, its product stays by rows
    with blas.single_threaded():  # as in the pool (OpenBLAS's own threads add up otherwise)
        want_h2 = np.maximum(np.maximum(xv @ w1 + b1, 0) @ w2 + b2, 0)
        np.testing.assert_array_equal(fetched_h2, want_h2)
        np.testing.assert_array_equal(got_logits, want_h2 @ np.ones((300, 10), np.float32))
    assert got.flags.c_contiguous and fetched_h2.flags.c_contiguous
    np.testing.assert_allclose(got.sum(axis=1), 1, rtol=1e-5)


def test_an_identity_between_products_hands_the_layout_on() -> None:
    g = dense_chain("Tanh")
    add(g, "id", "Identity", ["relu"], T=F32)
    g.replace(Node("mm2", lookup("MatMul"), dict(g["mm2"].attrs), [("id", 0), ("w2", 0)]))
    mark_any_layouts(g)
    assert marked(g) == {"mm1"}
