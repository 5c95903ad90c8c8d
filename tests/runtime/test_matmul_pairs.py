"""The remapper's other fusion: two MatMuls with a BiasAdd and/or Relu between them become one
``_FusedMatMulPair`` when nothing else sees the ops between (``runtime/remapper.py``), and its
kernel (``kernels/fused_products.py``): the graph's values (within the last bits of the second
product's sum, the same bits whatever the threads), the products by halves of the hidden units
on both pool threads, and errors naming the graph's own node."""

from __future__ import annotations

import asyncio
import functools
import gc
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.devices import DeviceMgr, add_devices, blas, intra_op, onednn, onednn_matmul
from aiotf.framework import common_shapes, dtypes, errors
from aiotf.framework.op_def_registry import InferenceContext
from aiotf.framework.tensor_shape import TensorShape
from aiotf.kernels import derived, fused_products, math_kernels, nn_kernels, products, registry
from aiotf.kernels.registry import KernelNode
from aiotf.proto import RewriterConfig
from aiotf.runtime.graph import Graph
from aiotf.runtime.remapper import fuse_matmul_pairs
from tests.runtime.test_remapper import CPU0, CPU1, TASK, add

F32 = dtypes.float32
Array = np.ndarray[Any, Any]


def dense(
    g: Graph, name: str, x: str, ops: tuple[str, ...] = ("BiasAdd", "Relu"), device: str = CPU0
) -> str:
    """A dense layer ``name`` of ``x``: MatMul by ``name/w``, then ``ops``; its last node."""
    add(g, f"{name}/w", "Placeholder", dtype=F32, device=device)
    add(g, f"{name}/mm", "MatMul", [x, f"{name}/w"], T=F32, device=device)
    last = f"{name}/mm"
    if "BiasAdd" in ops:
        add(g, f"{name}/b", "Placeholder", dtype=F32, device=device)
        add(g, f"{name}/bias", "BiasAdd", [last, f"{name}/b"], T=F32, device=device)
        last = f"{name}/bias"
    if "Relu" in ops:
        add(g, f"{name}/relu", "Relu", [last], T=F32, device=device)
        last = f"{name}/relu"
    return last


def mlp_graph(
    first: tuple[str, ...] = ("BiasAdd", "Relu"), second: tuple[str, ...] = ("BiasAdd", "Relu")
) -> Graph:
    """x -> three dense layers (the first two with ``first`` and ``second`` after their MatMul)
    -> Softmax 'out'."""
    g = Graph()
    add(g, "x", "Placeholder", dtype=F32)
    h = dense(g, "l1", "x", first)
    h = dense(g, "l2", h, second)
    h = dense(g, "l3", h, ("BiasAdd",))
    add(g, "out", "Softmax", [h], T=F32)
    return g


FIRST_TWO = ["l1/mm", "l1/bias", "l1/relu", "l2/mm", "l2/bias", "l2/relu"]


def test_the_first_two_layers_pair_into_the_second_relu_and_the_third_stays() -> None:
    g = mlp_graph()
    assert fuse_matmul_pairs(g, frozenset())
    pair = g["l2/relu"]
    assert pair.op == "_FusedMatMulPair"
    assert pair.inputs == [("x", 0), ("l1/w", 0), ("l1/b", 0), ("l2/w", 0), ("l2/b", 0)]
    assert pair.attrs["fused_ops"] == [b"MatMul", b"BiasAdd", b"Relu"] * 2
    assert pair.attrs["fused_names"] == [name.encode() for name in FIRST_TWO[:-1]]
    assert pair.attrs["num_args"] == 4 and pair.attrs["data_format"] == b"NHWC"
    assert not set(FIRST_TWO[:-1]) & {n.name for n in g}
    assert g["l3/mm"].op == "MatMul"  # its left operand is the pair's: not a MatMul's
    assert g["l3/mm"].inputs[0] == ("l2/relu", 0)
    assert not fuse_matmul_pairs(g, frozenset())  # nothing left to pair


@pytest.mark.parametrize(
    ("first", "second", "last", "args"),
    [
        (("Relu",), ("BiasAdd", "Relu"), "l2/relu", 3),
        (("BiasAdd",), (), "l2/mm", 3),
        ((), ("Relu",), "l2/relu", 2),
        ((), ("BiasAdd",), "l2/bias", 3),
    ],
    ids=["relu between", "bias between, nothing after", "relu after", "bias after"],
)
def test_a_pair_with_less_between_or_after_fuses_too(
    first: tuple[str, ...], second: tuple[str, ...], last: str, args: int
) -> None:
    g = mlp_graph(first, second)
    assert fuse_matmul_pairs(g, frozenset())
    ops = [b"MatMul", *(op.encode() for op in first), b"MatMul", *(op.encode() for op in second)]
    assert g[last].attrs["fused_ops"] == ops
    assert g[last].attrs["num_args"] == args


@pytest.mark.parametrize(
    ("keep", "last"),
    [({"l2/mm"}, "l2/mm"), ({"l2/bias"}, "l2/bias"), ({"l2/relu"}, "l2/relu")],
)
def test_an_op_after_the_second_matmul_asked_to_run_ends_the_pair(
    keep: set[str], last: str
) -> None:
    g = mlp_graph()
    assert fuse_matmul_pairs(g, frozenset(keep))
    assert g[last].op == "_FusedMatMulPair"
    after = FIRST_TWO[FIRST_TWO.index(last) + 1 :]
    assert all(g[name].op in ("BiasAdd", "Relu") for name in after)


def test_control_inputs_of_the_pair_go_to_the_fused_node() -> None:
    g = mlp_graph()
    add(g, "c1", "NoOp")
    add(g, "c2", "NoOp")
    g["l1/mm"].control_inputs = ["c2"]
    g["l1/relu"].control_inputs = ["c1", "c2"]
    g["l2/bias"].control_inputs = ["c1"]
    assert fuse_matmul_pairs(g, frozenset())
    assert g["l2/relu"].control_inputs == ["c2", "c1"]


def read_twice(g: Graph) -> None:
    add(g, "fetch", "Identity", ["l1/bias"], T=F32)


def control_edge_out(g: Graph) -> None:
    add(g, "after", "NoOp", controls=["l1/relu"])


def transposed(g: Graph) -> None:
    g["l2/mm"].attrs["transpose_b"] = True


def a_gradients(g: Graph) -> None:
    g["l1/mm"].attrs["grad_a"] = True  # its errors would lose the mark


def right_operand(g: Graph) -> None:
    g["l2/mm"].inputs = [("l2/w", 0), ("l1/relu", 0)]


def elsewhere(g: Graph) -> None:
    for name in ("l2/mm", "l2/w"):
        g[name].assigned_device = g[name].requested_device = CPU1


def unchanged(g: Graph) -> None:
    pass


@pytest.mark.parametrize(
    ("edit", "keep"),
    [
        (read_twice, frozenset()),
        (control_edge_out, frozenset()),
        (unchanged, frozenset({"l1/mm"})),
        (transposed, frozenset()),
        (a_gradients, frozenset()),
        (right_operand, frozenset()),
        (elsewhere, frozenset()),
    ],
    ids=[
        "a bias read twice",
        "a control edge out of relu",
        "the first product asked to run",
        "a transposed operand",
        "a gradient's",
        "the right operand",
        "on another device",
    ],
)
def test_nothing_pairs_when_someone_else_sees_the_ops_between_or_the_products_differ(
    edit: Callable[[Graph], None], keep: frozenset[str]
) -> None:
    g = mlp_graph()
    edit(g)
    fuse_matmul_pairs(g, keep)
    assert g["l1/mm"].op == "MatMul" and "l1/relu" in g


def test_doubles_and_refs_stay_as_written() -> None:
    g = Graph()
    add(g, "x", "Placeholder", dtype=dtypes.float64)
    for name in ("w1", "w2"):
        add(g, name, "Placeholder", dtype=dtypes.float64)
    add(g, "mm1", "MatMul", ["x", "w1"], T=dtypes.float64)
    add(g, "mm2", "MatMul", ["mm1", "w2"], T=dtypes.float64)
    assert not fuse_matmul_pairs(g, frozenset())
    g = mlp_graph()
    add(g, "v", "VariableV2", dtype=F32, shape=TensorShape([4, 4]).as_proto())
    g["l2/mm"].inputs = [("l1/relu", 0), ("v", 0)]  # the second weight a ref
    assert not fuse_matmul_pairs(g, frozenset())


def test_the_fused_nodes_shape_is_the_second_product() -> None:
    shapes = [[None, 784], [784, 512], [512], [512, 10], [10]]
    ctx = InferenceContext(
        "_FusedMatMulPair",
        "pair",
        [TensorShape(shape) for shape in shapes],
        [F32] * 5,
        {"data_format": b"NHWC", "fused_ops": [b"MatMul", b"BiasAdd", b"Relu"] * 2},
    )
    assert common_shapes.fused_matmul_pair(ctx)[0].as_list() == [None, 10]
    ctx.input_shapes[2] = TensorShape([500])
    with pytest.raises(errors.InvalidArgumentError, match="must be equal, but are 512 and 500"):
        common_shapes.fused_matmul_pair(ctx)


# -- the kernel ----------------------------------------------------------------------------------


def pair_node(
    first: tuple[bytes, ...] = (b"BiasAdd", b"Relu"), second: tuple[bytes, ...] = ()
) -> KernelNode:
    """A pair with ``first`` between its MatMuls and ``second`` after them, its inputs named as
    ``mlp_graph``'s."""
    names = {b"MatMul": "mm", b"BiasAdd": "bias", b"Relu": "relu"}
    chain = [(b"MatMul", "l1/mm"), *((op, f"l1/{names[op]}") for op in first)]
    chain += [(b"MatMul", "l2/mm"), *((op, f"l2/{names[op]}") for op in second)]
    operands = {"l1/mm": "l1/w", "l1/bias": "l1/b", "l2/mm": "l2/w", "l2/bias": "l2/b"}
    inputs = ("x", *(operands[name] for _, name in chain if name in operands))
    attrs = {
        "T": F32,
        "num_args": len(inputs) - 1,
        "fused_ops": [op for op, _ in chain],
        "fused_names": [name.encode() for _, name in chain[:-1]],
        "data_format": b"NHWC",
    }
    return KernelNode(
        chain[-1][1], "_FusedMatMulPair", attrs, (F32,) * len(inputs), (F32,), CPU0, inputs
    )


@pytest.fixture
def transposed_products(monkeypatch: pytest.MonkeyPatch) -> None:
    """Products of a few dozen rows run transposed, as on the machine the pair was measured on
    (an Intel Xeon), whatever this one's CPU."""
    monkeypatch.setattr(blas, "small_gemm_kernels", lambda: True)
    monkeypatch.setattr(products, "panel_max_rows", lambda: 24)
    monkeypatch.setattr(products, "deep_panel_max_rows", lambda: 0)
    monkeypatch.setattr(products, "_ONEDNN", False)  # OpenBLAS's (oneDNN's product is whole)


@pytest.fixture
def halves(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The threads that ran a half of a pair (or any part of ``parallel_for``, or of a relay:
    a session's pool step), one entry a half."""
    threads: list[int] = []
    real, real_relay = intra_op.parallel_for, intra_op.Relay.__init__

    def parallel_for(
        num_parts: int, part: Callable[[int], None], every_thread: bool = False
    ) -> None:
        def noted(i: int) -> None:
            threads.append(threading.get_ident())
            part(i)

        real(num_parts, noted, every_thread)

    def relay(self: intra_op.Relay, parts: list[Callable[[], None]], outputs: Any) -> None:
        def noted(part: Callable[[], None]) -> None:
            threads.append(threading.get_ident())
            part()

        real_relay(self, [functools.partial(noted, part) for part in parts], outputs)

    monkeypatch.setattr(intra_op, "parallel_for", parallel_for)
    monkeypatch.setattr(intra_op.Relay, "__init__", relay)
    return threads


@pytest.fixture
def pool_device() -> Iterator[Any]:
    mgr = DeviceMgr(add_devices(aiotf.ConfigProto(inter_op_parallelism_threads=2), TASK))
    yield mgr.client_device
    mgr.close()


@pytest.fixture
def pool_of_four() -> Iterator[Any]:
    mgr = DeviceMgr(add_devices(aiotf.ConfigProto(inter_op_parallelism_threads=4), TASK))
    yield mgr.client_device
    mgr.close()


def in_pool(device: Any, work: Callable[[], Array]) -> Array:
    async def go() -> Array:
        result: Array = await device.run_in_pool(work)
        return result

    return asyncio.run(go())


def operands(rows: int, seed: int = 0) -> tuple[Array, Array, Array, Array]:
    """x, w1, b, w2 of a pair 784-512-300; the weights frozen, as Consts' values are (so their
    columns are made once, and products of a few dozen rows run transposed)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 784)).astype(np.float32)
    w1 = (rng.standard_normal((784, 512)) / 28).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32)
    w2 = (rng.standard_normal((512, 300)) / 22).astype(np.float32)
    derived.freeze(w1)
    derived.freeze(w2)
    return x, w1, b, w2


def graph_order(x: Array, w1: Array, b: Array, w2: Array) -> Array:
    """The pair's values by numpy, in float32 (for comparisons within float32's last bits)."""
    with blas.single_threaded(), np.errstate(invalid="ignore"):
        h = np.maximum(x @ w1 + b, np.float32(0))
        return h @ w2  # type: ignore[no-any-return]


def graph_ops(x: Array, w1: Array, b: Array, w2: Array) -> Array:
    """The pair's values by the graph's own kernels, one after another (their bits)."""
    h = math_kernels.mat_mul(x, w1, transpose_a=False, transpose_b=False, _any_layout=True)
    h = nn_kernels.relu(nn_kernels.bias_add(h, b, data_format=b"NHWC"))
    return math_kernels.mat_mul(h, w2, transpose_a=False, transpose_b=False)


def test_by_halves_on_both_threads_the_graphs_values_and_the_same_bits_on_one(
    transposed_products: None, halves: list[int], pool_device: Any
) -> None:
    x, w1, b, w2 = operands(64)
    kernel = registry.create_kernel(pair_node(), "CPU")
    with blas.single_threaded():  # as in the pool (OpenBLAS's own threads add up otherwise)
        alone = kernel.compute(x, w1, b, w2)  # outside the pool: both halves on this thread
    assert len(halves) == 2 and len(set(halves)) == 1
    for _ in range(20):  # until the helper is up in time for its half (found by review: the
        halves.clear()  # first run's may not be, and then the caller runs both)
        both = in_pool(pool_device, lambda: kernel.compute(x, w1, b, w2))
        np.testing.assert_array_equal(both, alone)
        if len(set(halves)) == 2:
            break
    assert len(halves) == 2 and len(set(halves)) == 2  # one half a thread
    assert both.flags.c_contiguous  # not marked _any_layout: by rows
    np.testing.assert_allclose(both, graph_order(x, w1, b, w2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(both, graph_ops(x, w1, b, w2), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("any_layout", [False, True])
def test_on_a_pool_of_four_the_halves_split_further_with_the_same_bits(
    any_layout: bool,
    transposed_products: None,
    halves: list[int],
    pool_device: Any,
    pool_of_four: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []  # the products of halves and of their parts (each half makes two)
    matmul = np.matmul

    def noted(*args: Any, **kwargs: Any) -> Any:
        calls.append(threading.get_ident())
        return matmul(*args, **kwargs)

    x, w1, b, w2 = operands(64, seed=7)
    node = pair_node()
    if any_layout:
        node = KernelNode(node.name, node.op, {**node.attrs, "_any_layout": True},
                          node.input_dtypes, node.output_dtypes, node.device, node.inputs)  # fmt: skip
    kernel = registry.create_kernel(node, "CPU")
    on_two = in_pool(pool_device, lambda: kernel.compute(x, w1, b, w2))
    split = 0
    for _ in range(20):
        calls.clear()
        monkeypatch.setattr(np, "matmul", noted)
        on_four = in_pool(pool_of_four, lambda: kernel.compute(x, w1, b, w2))
        monkeypatch.setattr(np, "matmul", matmul)
        np.testing.assert_array_equal(on_four, on_two)
        # The halves' products in parts too, whichever threads take them (a late helper's
        # part the caller runs itself: found by review, counting threads failed now and then;
        # and none where the pool's other threads are still busy with the last run's jobs).
        split += len(calls) > 4
        if split == 5:
            break
    assert split == 5


def test_by_columns_where_every_reader_takes_any_layout(
    transposed_products: None, halves: list[int]
) -> None:
    x, w1, b, w2 = operands(64, seed=1)
    node = pair_node()
    node = KernelNode(node.name, node.op, {**node.attrs, "_any_layout": True}, node.input_dtypes,
                      node.output_dtypes, node.device, node.inputs)  # fmt: skip
    got = registry.create_kernel(node, "CPU").compute(x, w1, b, w2)
    assert got.flags.f_contiguous and not got.flags.c_contiguous and len(halves) == 2
    plain = registry.create_kernel(pair_node(), "CPU").compute(x, w1, b, w2)
    np.testing.assert_array_equal(got, plain)


@pytest.mark.parametrize("rows", [1, 8])
def test_a_product_too_small_to_split_runs_the_graphs_ops_with_their_bits(
    rows: int, transposed_products: None, halves: list[int]
) -> None:
    x, w1, b, w2 = operands(rows, seed=2)
    kernel = registry.create_kernel(pair_node(), "CPU")
    for run in (kernel.compute, kernel.fast):
        assert run is not None
        np.testing.assert_array_equal(run(x, w1, b, w2), graph_ops(x, w1, b, w2))
    assert not halves


@pytest.mark.parametrize("deep_panels", [0, 32])
def test_a_deep_first_product_by_panels_leaves_the_pair_to_the_graphs_ops(
    deep_panels: int, transposed_products: None, halves: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first product by a deep weight that runs by panels (as on an AMD EPYC, the cnn's dense
    layer) is not cut into halves: the pair runs the graph's ops, with their bits."""
    monkeypatch.setattr(products, "panel_max_rows", lambda: products.SMALL_GEMM_TN_OUTPUT)
    monkeypatch.setattr(products, "deep_panel_max_rows", lambda: deep_panels)
    rng = np.random.default_rng(10)
    x = rng.standard_normal((32, 2048)).astype(np.float32)
    w1 = (rng.standard_normal((2048, 1024)) / 45).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    w2 = (rng.standard_normal((1024, 10)) / 32).astype(np.float32)
    derived.freeze(w1)
    derived.freeze(w2)
    assert (products.way(x, w1, any_layout=True).width > 0) == bool(deep_panels)
    with blas.single_threaded():
        got = registry.create_kernel(pair_node(), "CPU").compute(x, w1, b, w2)
        if deep_panels:
            np.testing.assert_array_equal(got, graph_ops(x, w1, b, w2))
    assert len(halves) == (0 if deep_panels else 2)
    np.testing.assert_allclose(got, graph_order(x, w1, b, w2), rtol=1e-4, atol=1e-4)


def test_nans_and_infinities_go_through_as_the_graphs_ops_take_them(
    transposed_products: None, halves: list[int]
) -> None:
    x, w1, b, w2 = operands(64, seed=3)
    x[3, 5] = np.nan
    x[7, 9] = np.inf
    b[11] = -np.inf  # Relu of -inf is 0: that hidden unit drops out of every row
    with np.errstate(invalid="ignore"):  # as numpy's products of infinities warn
        got = registry.create_kernel(pair_node(), "CPU").compute(x, w1, b, w2)
        want = graph_ops(x, w1, b, w2)
    assert len(halves) == 2
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)


def test_the_pair_is_costed_as_its_larger_product() -> None:
    x, w1, b, w2 = operands(64)
    kernel = registry.create_kernel(pair_node(), "CPU")
    want = registry.NS_PER_FLOP * 2.0 * 64 * 512 * 784  # the larger product's
    assert kernel.cost(x, w1, b, w2) == pytest.approx(want)
    assert kernel.cost(x[:1], w1, b, w2) < registry.POOL_MIN_COST < want
    # Eight rows: each product alone would run inline, and so does the pair (no thread hop).
    assert kernel.cost(x[:8], w1, b, w2) < registry.POOL_MIN_COST


@pytest.mark.parametrize(
    ("feed", "node", "words"),
    [
        ("x", "l1/mm", "Matrix size-incompatible: In[0]: [64,700], In[1]: [784,512]"),
        ("b", "l1/bias", "Must provide as many biases as the last dimension of the input tensor"),
        ("w2", "l2/mm", "Matrix size-incompatible: In[0]: [64,512], In[1]: [500,300]"),
        ("b2", "l2/bias", "Must provide as many biases as the last dimension of the input tensor"),
    ],
)
async def test_bad_operands_fail_as_the_graphs_own_node_and_the_next_run_works(
    feed: str, node: str, words: str
) -> None:
    x, w1, b, w2 = operands(64, seed=4)
    b2 = np.linspace(-1, 1, 300, dtype=np.float32)
    g = aiotf.Graph()
    with g.as_default():
        fed = {  # (of unknown rank, aiotf.matmul would make a BatchMatMulV2: no pair)
            name: aiotf.placeholder(aiotf.float32, [None] * rank, name=name)
            for name, rank in OPERANDS.items()
        }
        h = aiotf.matmul(fed["x"], w1, name="l1/mm")
        h = aiotf.nn.relu(aiotf.nn.bias_add(h, fed["b"], name="l1/bias"))
        y = aiotf.matmul(h, fed["w2"], name="l2/mm")
        y = aiotf.nn.relu(aiotf.nn.bias_add(y, fed["b2"], name="l2/bias"), name="l2/relu")
    values = {"x": x, "b": b, "w2": w2, "b2": b2}
    good = {fed[name]: values[name] for name in OPERANDS}
    cut = {"x": x[:, :700], "b": b[:500], "w2": w2[:500], "b2": b2[:200]}[feed]
    bad = {**good, fed[feed]: cut}
    want = np.maximum(graph_order(x, w1, b, w2) + b2, np.float32(0))
    fused, plain = aiotf.ConfigProto(), aiotf.ConfigProto()
    plain.graph_options.optimizer_options.opt_level = aiotf.OptimizerOptions.L0
    await fail_as_the_graph(
        g,
        y,
        good,
        bad,
        want,
        {"l2/relu": ("_FusedMatMulPair", "Relu")},
        (fused, plain),
        node,
        words,
    )


async def fail_as_the_graph(
    g: aiotf.Graph,
    y: Any,
    good: dict[Any, Array],
    bad: dict[Any, Array],
    want: Array,
    fusion: dict[str, tuple[str, str]],
    configs: tuple[Any, Any],
    node: str,
    words: str,
) -> None:
    """Under each of ``configs`` (fusing, then not): running ``y`` on ``bad`` fails, the next
    run on ``good`` gives ``want``, and the node named in ``fusion`` is of its fused op, then of
    the graph's. The fused run's error is the graph's own: ``words``, naming ``node``, its
    NodeDef and text those of the run without the fusion."""
    failures = []
    for i, config in enumerate(configs):
        metadata = aiotf.RunMetadata()
        options = aiotf.RunOptions(output_partition_graphs=True)
        async with aiotf.Session(graph=g, config=config) as sess:
            with pytest.raises(errors.InvalidArgumentError) as info:
                await sess.run(y, bad)
            failures.append(info.value)
            got = await sess.run(y, good, options=options, run_metadata=metadata)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        ops = {n.name: n.op for p in metadata.partition_graphs for n in p.node}
        assert {name: ops[name] for name in fusion} == {k: v[i] for k, v in fusion.items()}
    fused, plain = failures
    assert words in fused.message and f"{{{{node {node}}}}}" in fused.message
    assert fused.node_def == plain.node_def  # the graph's node: its op, inputs and attrs
    assert str(fused) == str(plain)


OPERANDS = {"x": 2, "b": 1, "w2": 2, "b2": 1}  # the fed operands and their ranks


@pytest.mark.parametrize("any_layout", [False, True])
def test_the_bias_and_relu_after_the_pair_are_the_graphs_on_its_sum(
    any_layout: bool, transposed_products: None, halves: list[int]
) -> None:
    x, w1, b, w2 = operands(64, seed=8)
    b2 = np.linspace(-2, 2, 300, dtype=np.float32)
    b2[7] = np.nan  # a NaN bias: a NaN column, as BiasAdd and Relu make it
    attrs = {"_any_layout": True} if any_layout else {}

    def kernel(second: tuple[bytes, ...]) -> Any:
        node = pair_node(second=second)
        node = KernelNode(node.name, node.op, {**node.attrs, **attrs}, node.input_dtypes,
                          node.output_dtypes, node.device, node.inputs)  # fmt: skip
        return registry.create_kernel(node, "CPU")

    with blas.single_threaded():
        plain = kernel(()).compute(x, w1, b, w2)
        got = kernel((b"BiasAdd", b"Relu")).compute(x, w1, b, w2, b2)
        inline = kernel((b"BiasAdd", b"Relu")).fast(x[:2], w1, b, w2, b2)
    assert len(halves) == 4  # both by halves
    assert got.flags.f_contiguous == any_layout
    np.testing.assert_array_equal(got, np.maximum(plain + b2, np.float32(0)))
    assert np.isnan(got[:, 7]).all()
    want_inline = nn_kernels.relu(nn_kernels.bias_add(graph_ops(x[:2], w1, b, w2), b2,
                                                      data_format=b"NHWC"))  # fmt: skip
    np.testing.assert_array_equal(inline, want_inline)


async def test_a_session_runs_the_pair_fetches_what_it_asks_and_mlp_b1_rows_alike() -> None:
    x, w1, b, w2 = operands(64, seed=5)
    g = aiotf.Graph()
    with g.as_default():
        xs = aiotf.placeholder(aiotf.float32, [None, 784], name="x")
        h = aiotf.nn.relu(aiotf.nn.bias_add(aiotf.matmul(xs, w1), b), name="h")
        y = aiotf.matmul(h, w2, name="y")
        aiotf.nn.softmax(y, name="out")
    metadata = aiotf.RunMetadata()
    options = aiotf.RunOptions(output_partition_graphs=True)
    async with aiotf.Session(graph=g) as sess:
        got = await sess.run(y, {xs: x}, options=options, run_metadata=metadata)
        ops = {n.name: n.op for p in metadata.partition_graphs for n in p.node}
        assert ops["y"] == "_FusedMatMulPair" and "h" not in ops
        np.testing.assert_allclose(got, graph_order(x, w1, b, w2), rtol=1e-5, atol=1e-5)
        # fetching the Relu too: nothing pairs, and both are the graph's
        h_got, y_got = await sess.run([h, y], {xs: x})
        np.testing.assert_allclose(y_got, got, rtol=1e-5, atol=1e-5)
        with blas.single_threaded():  # the MatMul kernel's own way (by panels on AMD CPUs)
            product = math_kernels.mat_mul(x, w1, transpose_a=False, transpose_b=False)
        np.testing.assert_array_equal(h_got, np.maximum(product + b, np.float32(0)))
        np.testing.assert_allclose(product, x @ w1, rtol=1e-5, atol=1e-5)
        row = await sess.run(y, {xs: x[:1]})  # one row: inline, the graph's ops
        np.testing.assert_array_equal(row, graph_ops(x[:1], w1, b, w2))


async def test_two_pairs_in_a_row_the_first_left_by_columns_for_the_second(
    transposed_products: None, halves: list[int]
) -> None:
    """Four dense layers make two pairs; the first one's readers (BiasAdd, Relu, the second
    pair) take any layout, so it is left by columns, and the second reads it so."""
    rng = np.random.default_rng(6)
    sizes = [784, 512, 384, 256, 10]
    weights = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
               for s in itertools.pairwise(sizes)]  # fmt: skip
    biases = [rng.standard_normal(n).astype(np.float32) for n in sizes[1:]]
    x = rng.standard_normal((64, 784)).astype(np.float32)
    g = aiotf.Graph()
    with g.as_default():
        xs = aiotf.placeholder(aiotf.float32, [None, 784], name="x")
        h = xs
        for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
            h = aiotf.nn.bias_add(aiotf.matmul(h, w, name=f"mm{i}"), b)
            h = aiotf.nn.relu(h) if i < 3 else h
    metadata = aiotf.RunMetadata()
    options = aiotf.RunOptions(output_partition_graphs=True)
    async with aiotf.Session(graph=g) as sess:
        got = await sess.run(h, {xs: x}, options=options, run_metadata=metadata)
    pairs = [n for p in metadata.partition_graphs for n in p.node if n.op == "_FusedMatMulPair"]
    assert [n.attr["fused_names"].list.s[0] for n in pairs] == [b"mm0", b"mm2"]
    assert pairs[0].attr["_any_layout"].b and "_any_layout" not in pairs[1].attr
    assert len(halves) == 4
    with blas.single_threaded():
        want = x
        for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
            want = want @ w + b
            want = np.maximum(want, np.float32(0)) if i < 3 else want
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert got.flags.c_contiguous


async def test_remapping_off_keeps_the_graphs_ops_and_their_bits() -> None:
    """``rewrite_options.remapping`` OFF turns the remapper off, as it turns off TensorFlow's
    grappler remapper: the MatMuls run as written, with L0's bits; the other rewrites stay."""
    x, w1, b, w2 = operands(64, seed=9)
    g = aiotf.Graph()
    with g.as_default():
        xs = aiotf.placeholder(aiotf.float32, [None, 784], name="x")
        h = aiotf.nn.relu(aiotf.nn.bias_add(aiotf.matmul(xs, w1), b))
        y = aiotf.matmul(h, w2, name="y") + aiotf.constant(1.0) * 2.0  # a constant to fold
    got = {}
    for name in ("default", "off", "L0"):
        config = aiotf.ConfigProto()
        if name == "off":
            config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
        elif name == "L0":
            config.graph_options.optimizer_options.opt_level = aiotf.OptimizerOptions.L0
        metadata = aiotf.RunMetadata()
        options = aiotf.RunOptions(output_partition_graphs=True)
        async with aiotf.Session(graph=g, config=config) as sess:
            got[name] = await sess.run(y, {xs: x}, options=options, run_metadata=metadata)
        ops = [n.op for p in metadata.partition_graphs for n in p.node]
        assert ("_FusedMatMulPair" in ops) == (name == "default")
        assert ("Mul" in ops) == (name == "L0")  # folded at L1, remapping or not
    np.testing.assert_array_equal(got["off"], got["L0"])
    np.testing.assert_allclose(got["default"], got["L0"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("m", "k", "n"), [(1, 2048, 3000), (17, 60000, 8)])
def test_a_split_product_of_one_or_seventeen_rows_keeps_the_whole_products_bits(
    m: int, k: int, n: int, pool_of_four: Any
) -> None:
    """(found by review: on a pool of four, a product of 17 rows split at 16 made its last row
    as a GEMV, and one row's columns split made its sums in other blocks: other bits from run
    to run)"""
    rng = np.random.default_rng(10)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = (rng.standard_normal((k, n)) / 45).astype(np.float32)
    derived.freeze(b)
    with blas.single_threaded():
        whole = products.product(a, b)
    for _ in range(10):
        got = in_pool(pool_of_four, lambda: math_kernels.matmul(a, b))
        np.testing.assert_array_equal(got, whole)


needs_onednn = pytest.mark.skipif(
    not onednn.available(), reason="oneDNN is not installed (aiotf[onednn])"
)


@pytest.fixture
def packed_products(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The shapes (rows, depth, columns) of the products oneDNN made on packed weights."""
    made: list[tuple[int, ...]] = []
    real = onednn_matmul.into

    def into(a: Array, w: Any, out: Array, bias: Array | None = None) -> bool:
        done = real(a, w, out, bias)
        if done:
            made.append((a.shape[0], w.rows, w.cols))
        return done

    monkeypatch.setattr(onednn_matmul, "into", into)
    return made


@needs_onednn
def test_by_packed_halves_on_both_threads_with_the_bits_of_one(
    packed_products: list[tuple[int, ...]], halves: list[int], pool_device: Any
) -> None:
    """With oneDNN, a pair's halves multiply by weights packed once (the first product with its
    bias): the graph's values, the same bits on one thread or two."""
    x, w1, b, w2 = operands(64, seed=11)
    kernel = registry.create_kernel(pair_node(), "CPU")
    alone = kernel.compute(x, w1, b, w2)
    assert packed_products == [(64, 784, 256), (64, 256, 300)] * 2
    assert len(halves) == 2 and len(set(halves)) == 1
    for _ in range(20):  # until the helper is up in time for its half
        halves.clear()
        both = in_pool(pool_device, lambda: kernel.compute(x, w1, b, w2))
        np.testing.assert_array_equal(both, alone)
        if len(set(halves)) == 2:
            break
    assert len(set(halves)) == 2
    assert both.flags.c_contiguous
    np.testing.assert_allclose(both, graph_order(x, w1, b, w2), rtol=1e-5, atol=1e-5)


@needs_onednn
def test_packed_halves_are_made_once_and_go_with_the_weight(
    packed_products: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    packings: list[tuple[int, ...]] = []
    real = onednn_matmul.pack_into

    def pack_into(w: Array, data: Array) -> None:
        packings.append(w.shape)
        real(w, data)

    monkeypatch.setattr(onednn_matmul, "pack_into", pack_into)
    gc.collect()
    before = set(products._parts_of)
    x, w1, b, w2 = operands(64, seed=12)
    kernel = registry.create_kernel(pair_node(), "CPU")
    first = kernel.compute(x, w1, b, w2)
    again = kernel.compute(x, w1, b, w2)
    np.testing.assert_array_equal(again, first)
    assert sorted(packings) == sorted([(784, 256), (784, 256), (256, 300), (256, 300)])
    assert len(packed_products) == 8
    mine = set(products._parts_of) - before
    assert len(mine) == 2  # w1's and w2's
    del w1, w2
    gc.collect()
    assert not mine & set(products._parts_of)  # both let go with their weights


@needs_onednn
def test_weights_that_may_change_are_not_packed(
    packed_products: list[tuple[int, ...]],
) -> None:
    rng = np.random.default_rng(13)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    w1 = (rng.standard_normal((784, 512)) / 28).astype(np.float32)  # not frozen: a feed's
    b = rng.standard_normal(512).astype(np.float32)
    w2 = (rng.standard_normal((512, 300)) / 22).astype(np.float32)
    got = registry.create_kernel(pair_node(), "CPU").compute(x, w1, b, w2)
    assert not packed_products
    np.testing.assert_allclose(got, graph_order(x, w1, b, w2), rtol=1e-5, atol=1e-5)


@needs_onednn
def test_packed_halves_take_nans_and_infinities_as_the_graphs_ops(
    packed_products: list[tuple[int, ...]],
) -> None:
    """(oneDNN's own Relu takes a NaN to zero: the Relu is TensorFlow's, after the product)"""
    x, w1, b, w2 = operands(64, seed=14)
    x[3, 5] = np.nan
    x[7, 9] = np.inf
    b[11] = -np.inf  # Relu of -inf is 0: that hidden unit drops out of every row
    b[12] = np.nan  # ... and a NaN one makes every output NaN
    with np.errstate(invalid="ignore"):
        got = registry.create_kernel(pair_node(), "CPU").compute(x, w1, b, w2)
        want = graph_ops(x, w1, b, w2)
    assert packed_products
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got).all()
    b[12] = 0.0
    with np.errstate(invalid="ignore"):
        got = registry.create_kernel(pair_node(), "CPU").compute(x, w1, b, w2)
        want = graph_ops(x, w1, b, w2)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got).any() and not np.isnan(got).all()
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)


@needs_onednn
def test_an_input_onednn_reads_otherwise_runs_by_numpy_with_the_same_values(
    packed_products: list[tuple[int, ...]],
) -> None:
    x, w1, b, w2 = operands(64, seed=15)
    strided = np.repeat(x, 2, axis=1)[:, ::2]  # its elements apart: no layout oneDNN takes
    np.testing.assert_array_equal(strided, x)
    kernel = registry.create_kernel(pair_node(), "CPU")
    got = kernel.compute(strided, w1, b, w2)
    assert packed_products == [(64, 256, 300)] * 2  # the second products only
    np.testing.assert_allclose(got, graph_order(x, w1, b, w2), rtol=1e-5, atol=1e-5)


@needs_onednn
@pytest.mark.parametrize(
    ("hidden", "cut"), [(200, 128), (300, 128), (100, 64), (1024, 512), (64, None)]
)
@pytest.mark.parametrize("first", [(b"BiasAdd", b"Relu"), (b"Relu",), ()])
def test_packed_halves_of_any_hidden_units_and_forms_of_the_first_layer(
    hidden: int,
    cut: int | None,
    first: tuple[bytes, ...],
    packed_products: list[tuple[int, ...]],
) -> None:
    """The halves are cut at the multiple of oneDNN's 64-column block nearest half (found by
    review: 200 was cut at 64); too few hidden units for two halves, the graph's ops."""
    rng = np.random.default_rng(16)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    w1 = (rng.standard_normal((784, hidden)) / 28).astype(np.float32)
    b = rng.standard_normal(hidden).astype(np.float32)
    w2 = (rng.standard_normal((hidden, 700)) / 16).astype(np.float32)
    derived.freeze(w1)
    derived.freeze(w2)
    operands = (w1, b, w2) if b"BiasAdd" in first else (w1, w2)
    got = registry.create_kernel(pair_node(first), "CPU").compute(x, *operands)
    if cut is None:
        assert not packed_products
    else:
        assert packed_products == [(64, 784, cut), (64, cut, 700)] + [
            (64, 784, hidden - cut),
            (64, hidden - cut, 700),
        ]
    with np.errstate(invalid="ignore"):
        h = x @ w1 + (b if b"BiasAdd" in first else np.float32(0))
        want = (np.maximum(h, np.float32(0)) if b"Relu" in first else h) @ w2
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.fixture
def late_second_half(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A session's pair with its first half ended once the helper holds the second (or after
    a second: a step may find no thread idle), which ends ``delay`` seconds later (or raises
    ``fail``): a helper, if any, ends the last part. Notes the threads that ran each half
    (``parts``) and made the sum (``summed``), and OpenBLAS's threads then (``blas``)."""
    seen: dict[str, Any] = {"parts": {}, "summed": [], "blas": [], "delay": 0.03, "fail": None}
    real_relay, real_summed = intra_op.Relay.__init__, fused_products._summed

    def relay(self: intra_op.Relay, parts: list[Callable[[], None]], outputs: Any) -> None:
        second = threading.Event()

        def first() -> None:
            second.wait(1.0)
            parts[0]()
            seen["parts"][0] = threading.get_ident()

        def late() -> None:
            second.set()
            time.sleep(seen["delay"])
            if seen["fail"] is not None:
                raise seen["fail"]
            parts[1]()
            seen["parts"][1] = threading.get_ident()

        real_relay(self, [first, late], outputs)

    def summed(*args: Any) -> Array:
        seen["summed"].append(threading.get_ident())
        seen["blas"].append(blas.blas_threads())
        return real_summed(*args)

    monkeypatch.setattr(intra_op.Relay, "__init__", relay)
    monkeypatch.setattr(fused_products, "_summed", summed)
    return seen


def pair_session_graph() -> tuple[aiotf.Graph, Any, Any, tuple[Array, ...]]:
    """x -> a pair 784-512-300 named 'y' -> Softmax: the graph, x's placeholder, the Softmax,
    and the pair's operands."""
    x, w1, b, w2 = operands(64, seed=14)
    g = aiotf.Graph()
    with g.as_default():
        xs = aiotf.placeholder(aiotf.float32, [None, 784], name="x")
        h = aiotf.nn.relu(aiotf.nn.bias_add(aiotf.matmul(xs, w1), b))
        out = aiotf.nn.softmax(aiotf.matmul(h, w2, name="y"), name="out")
    return g, xs, out, (x, w1, b, w2)


async def carried_on_by_the_helper(
    sess: aiotf.Session, out: Any, feeds: dict[Any, Array], seen: dict[str, Any]
) -> Array:
    """``out`` run until the helper carried the step on (the last step's helper job may not have
    ended when a step starts: then no thread is idle to help), checked so; what it answered."""
    parts, summed = seen["parts"], seen["summed"]
    for _ in range(20):
        summed.clear()
        seen["blas"].clear()
        got: Array = await sess.run(out, feeds)
        if parts[0] != parts[1]:
            break
    assert parts[0] != parts[1] and summed == [parts[1]]
    return got


def softmax(y: Array) -> Array:
    e = np.exp(y - y.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


async def test_the_helper_that_ends_the_pairs_last_half_carries_the_step_on(
    late_second_half: dict[str, Any],
) -> None:
    """The step's own pool thread returns once its half is done; the helper, ending the other
    half, sums them and runs the rest of the step (found as a speed-up: mlp's step 845 against
    931 µs, the caller no longer asleep until the helper's end)."""
    g, xs, out, (x, w1, b, w2) = pair_session_graph()
    async with aiotf.Session(graph=g) as sess:
        got = await carried_on_by_the_helper(sess, out, {xs: x}, late_second_half)
        late_second_half["delay"] = 0.0
        for _ in range(5):  # whichever thread ends last: the same bits
            np.testing.assert_array_equal(await sess.run(out, {xs: x}), got)
    np.testing.assert_allclose(got, softmax(graph_order(x, w1, b, w2)), rtol=1e-5, atol=1e-6)


async def test_a_half_failing_in_the_helper_fails_the_run_naming_the_pair(
    late_second_half: dict[str, Any],
) -> None:
    g, xs, out, (x, *_) = pair_session_graph()
    async with aiotf.Session(graph=g) as sess:
        want = await sess.run(out, {xs: x})
        late_second_half["fail"] = RuntimeError("the second half failed")
        with pytest.raises(errors.InternalError, match="the second half failed") as info:
            await sess.run(out, {xs: x})
        assert "{{node y}}" in info.value.message
        late_second_half["fail"] = None
        np.testing.assert_array_equal(await sess.run(out, {xs: x}), want)


async def test_a_run_cancelled_while_the_helper_holds_the_step_waits_for_it(
    late_second_half: dict[str, Any],
) -> None:
    g, xs, out, (x, *_) = pair_session_graph()
    async with aiotf.Session(graph=g) as sess:
        want = await sess.run(out, {xs: x})
        late_second_half["delay"] = 0.3
        late_second_half["summed"].clear()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(sess.run(out, {xs: x}), 0.05)
        # The cancelled run returned only once the helper had ended the pair (a kernel runs
        # whole; the step stops before the next).
        assert len(late_second_half["summed"]) == 1
        late_second_half["delay"] = 0.0
        np.testing.assert_array_equal(await sess.run(out, {xs: x}), want)


async def test_the_helper_carrying_the_step_on_holds_openblas_to_one_thread(
    late_second_half: dict[str, Any],
) -> None:
    """(found by review: untested) The step's own pool job has ended, and let go of its hold on
    OpenBLAS's threads, while the helper still runs the step: the helper holds them itself."""
    controls = blas._STATE.controls()
    if controls is None:
        pytest.skip("no OpenBLAS loaded")
    saved = controls.get()
    controls.set(2)  # as on a machine of two cores or more: pool jobs hold it to one
    try:
        g, xs, out, (x, *_) = pair_session_graph()
        async with aiotf.Session(graph=g) as sess:
            await carried_on_by_the_helper(sess, out, {xs: x}, late_second_half)
        assert late_second_half["blas"] == [1]
        assert blas.blas_threads() == 2  # given back once the step was done
    finally:
        controls.set(saved)
