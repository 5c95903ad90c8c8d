"""The remapper: a MaxPool of Relu and/or BiasAdd fused into one ``_FusedMaxPool`` computed pool
first, when nothing else sees the fused ops; and the fused kernel's values, TensorFlow's order's
to the bit (infinities, NaNs and half types included), and errors naming the op at fault."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import aiotf
from aiotf.devices import DeviceMgr, add_devices, intra_op, onednn, onednn_conv
from aiotf.framework import common_shapes, dtypes, errors
from aiotf.framework.op_def_registry import InferenceContext, lookup
from aiotf.framework.tensor_shape import TensorShape
from aiotf.kernels import conv_kernels, nn_kernels, products, registry, winograd
from aiotf.kernels.registry import KernelNode
from aiotf.runtime.graph import Graph, Node, parse_tensor_name
from aiotf.runtime.remapper import fuse_pools

TASK = "/job:localhost/replica:0/task:0"
CPU0 = f"{TASK}/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
F32 = dtypes.float32
POOL = {
    "ksize": [1, 2, 2, 1],
    "strides": [1, 2, 2, 1],
    "padding": b"VALID",
    "explicit_paddings": [],
    "data_format": b"NHWC",
}


def add(
    g: Graph,
    name: str,
    op: str,
    inputs: Iterable[str] = (),
    controls: Iterable[str] = (),
    device: str = CPU0,
    **attrs: Any,
) -> Node:
    op_def = lookup(op)
    all_attrs = op_def.default_attrs()
    all_attrs.update(attrs)
    edges = [parse_tensor_name(i) for i in inputs]
    return g.add(Node(name, op_def, all_attrs, edges, list(controls), device, device))


def conv_block(
    dtype: dtypes.DType = F32, bias_format: bytes = b"NHWC", device: str = CPU0
) -> Graph:
    """x -> BiasAdd(b) -> Relu -> MaxPool -> Identity 'out'."""
    g = Graph()
    add(g, "x", "Placeholder", dtype=dtype)
    add(g, "b", "Placeholder", dtype=dtype)
    add(g, "bias", "BiasAdd", ["x", "b"], T=dtype, data_format=bias_format, device=device)
    add(g, "relu", "Relu", ["bias"], T=dtype)
    add(g, "pool", "MaxPool", ["relu"], T=dtype, **POOL)
    add(g, "out", "Identity", ["pool"], T=dtype)
    return g


# -- the rewrite -----------------------------------------------------------------------------------


def test_bias_relu_pool_become_one_node_named_after_the_pool_in_its_place() -> None:
    g = conv_block()
    order = [n.name for n in g]
    assert fuse_pools(g, frozenset())
    assert [n.name for n in g] == [n for n in order if n not in ("bias", "relu")]
    fused = g["pool"]
    assert fused.op == "_FusedMaxPool"
    assert fused.inputs == [("x", 0), ("b", 0)]
    assert fused.attrs["fused_ops"] == [b"BiasAdd", b"Relu"]
    assert fused.attrs["fused_names"] == [b"bias", b"relu"]
    assert fused.attrs["num_args"] == 1
    assert {k: fused.attrs[k] for k in POOL} == POOL
    assert fused.assigned_device == CPU0
    assert g["out"].inputs == [("pool", 0)]
    assert not fuse_pools(g, frozenset())  # nothing left to fuse


def test_a_pool_of_relu_alone_or_bias_alone_fuses_too() -> None:
    g = conv_block()
    g["pool"].inputs = [("bias", 0)]  # pool(bias), relu left unread
    g.remove("relu")
    assert fuse_pools(g, frozenset())
    assert g["pool"].attrs["fused_ops"] == [b"BiasAdd"]
    assert g["pool"].inputs == [("x", 0), ("b", 0)]

    g = conv_block()
    add(g, "other", "Identity", ["bias"], T=F32)  # the BiasAdd is read twice: Relu alone fuses
    assert fuse_pools(g, frozenset())
    assert "bias" in g and "relu" not in g
    assert g["pool"].attrs["fused_ops"] == [b"Relu"]
    assert g["pool"].attrs["num_args"] == 0
    assert g["pool"].inputs == [("bias", 0)]


def test_control_inputs_of_the_fused_ops_go_to_the_fused_node() -> None:
    g = conv_block()
    add(g, "c1", "NoOp")
    add(g, "c2", "NoOp")
    g["bias"].control_inputs = ["c1"]
    g["relu"].control_inputs = ["c2", "c1"]
    assert fuse_pools(g, frozenset())
    assert g["pool"].control_inputs == ["c1", "c2"]


def relu_read_twice(g: Graph) -> None:
    add(g, "fetch", "Identity", ["relu"], T=F32)


def control_edge_from_relu(g: Graph) -> None:
    add(g, "after", "NoOp", controls=["relu"])


def unchanged(g: Graph) -> None:
    pass


@pytest.mark.parametrize(
    ("make", "edit", "keep"),
    [
        (conv_block, relu_read_twice, frozenset()),
        (conv_block, control_edge_from_relu, frozenset()),
        (conv_block, unchanged, frozenset({"relu"})),
        (lambda: conv_block(dtypes.int32), unchanged, frozenset()),  # a bias may wrap around
    ],
    ids=["relu read twice", "a control edge out of relu", "relu asked to run", "integers"],
)
def test_nothing_fuses_when_someone_else_sees_the_ops_or_they_are_integers(
    make: Any, edit: Any, keep: frozenset[str]
) -> None:
    g = make()
    edit(g)
    assert not fuse_pools(g, keep)
    assert g["pool"].op == "MaxPool" and "relu" in g and "bias" in g


@pytest.mark.parametrize(
    "make",
    [lambda: conv_block(bias_format=b"NCHW"), lambda: conv_block(device=CPU1)],
    ids=["in another format", "on another device"],
)
def test_a_bias_add_unlike_the_pool_stays_and_the_relu_fuses(make: Any) -> None:
    g = make()
    assert fuse_pools(g, frozenset())
    assert "bias" in g and g["pool"].attrs["fused_ops"] == [b"Relu"]
    assert g["pool"].inputs == [("bias", 0)]


# -- the kernel ------------------------------------------------------------------------------------


def graph_order(
    x: np.ndarray, b: np.ndarray | None, pool: dict[str, Any], relu: bool = True
) -> np.ndarray:
    """MaxPool(Relu(BiasAdd(x, b))) one op after another, as the graph says."""
    if b is not None:
        x = nn_kernels.bias_add(x, b, data_format=pool["data_format"])
    return conv_kernels.max_pool(nn_kernels.relu(x) if relu else x, **pool)


def fused(x: np.ndarray, b: np.ndarray | None, pool: dict[str, Any]) -> np.ndarray:
    ops = [b"BiasAdd", b"Relu"] if b is not None else [b"Relu"]
    return fused_alone(x, b, pool, ops)


def fused_alone(
    x: np.ndarray, b: np.ndarray | None, pool: dict[str, Any], ops: list[bytes]
) -> np.ndarray:
    """The fused kernel, called as a node ``pool`` of ``ops`` from x (and b) would call it."""
    attrs = {
        **pool,
        "T": dtypes.as_dtype(x.dtype),
        "fused_ops": ops,
        "fused_names": [op.lower() for op in ops],
        "num_args": int(b is not None),
    }
    node = KernelNode(
        "pool", "_FusedMaxPool", attrs, (), (), CPU0, ("x", "b")[: 1 + (b is not None)]
    )
    args = [b] if b is not None else []
    return conv_kernels.fused_max_pool(x, *args, node=node)


@pytest.fixture
def relu_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the tensors Relu rectifies: the pooled one when pooling goes first."""
    sizes: list[int] = []
    relu_into = nn_kernels.relu_into  # Relu's kernel's, and the pool-first path's in place

    def spy(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        sizes.append(x.size)
        return relu_into(x, out)

    monkeypatch.setattr(nn_kernels, "relu_into", spy)
    return sizes


SAME_3X3 = {**POOL, "ksize": [1, 3, 3, 1], "padding": b"SAME"}
NCHW = {**POOL, "ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2], "data_format": b"NCHW"}


@pytest.mark.parametrize("pool", [POOL, SAME_3X3, NCHW], ids=["2x2", "3x3 same", "nchw"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no bias"])
def test_pool_first_gives_the_graph_orders_bits(
    pool: dict[str, Any], dtype: Any, with_bias: bool, relu_sizes: list[int]
) -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, 8, 5)).astype(dtype) * 4
    x[0, 0, 0, :] = np.inf  # a lone +inf, NaN and -inf in windows of finite values
    x[0, 2, 3, :] = np.nan
    x[1, 4, 5, :] = -np.inf
    x[1, 1, 1, :] = -0.0
    if pool["data_format"] == b"NCHW":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    b = (rng.standard_normal(5) * 2).astype(dtype) if with_bias else None
    want = graph_order(x, b, pool)
    relu_sizes.clear()
    got = fused(x, b, pool)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert relu_sizes == [want.size]  # rectified after pooling: the fast way was taken


@pytest.mark.parametrize(
    "edit",
    ["all NaN window", "all -inf window", "inf bias", "NaN bias", "-inf bias"],
)
def test_where_the_orders_part_the_graphs_order_is_run(edit: str, relu_sizes: list[int]) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    if edit == "all NaN window":
        x[0, :2, :2, 1] = np.nan  # pool: lowest; the graph's order: lowest, not Relu(lowest + b)
    if edit == "all -inf window":
        x[0, 2:, :2, 0] = -np.inf
        b[0] = np.float32(3e38)
    if edit.endswith("bias"):
        b[2] = {"inf": np.inf, "NaN": np.nan, "-inf": -np.inf}[edit.split()[0]]
        x[0, 0, 0, 2] = -b[2] if np.isfinite(-b[2]) else x[0, 0, 0, 2]
        x[0, 2, 2, 2] = np.inf
        x[0, 3, 3, 2] = -np.inf
    with np.errstate(all="ignore"):  # as kernels run in a session
        want = graph_order(x, b, POOL)
        got = fused(x, b, POOL)
    np.testing.assert_array_equal(got, want)
    assert relu_sizes[-1] == x.size  # the graph's order, on the whole input
    if edit == "all NaN window":
        assert got[0, 0, 0, 1] == np.finfo(np.float32).min  # TensorFlow's answer there


def test_a_bias_that_overflows_to_minus_inf_answers_lowest_as_the_graph_does() -> None:
    # MaxPool(BiasAdd): the pool's lowest starting value wins over x + b = -inf (found by review)
    for dtype in (np.float32, np.float16, np.float64, ml_dtypes.bfloat16):
        lowest = ml_dtypes.finfo(dtype).min
        x = np.full((1, 2, 2, 2), lowest, dtype)
        x[0, 0, 0] = lowest / 2  # one window, no all-lowest: pooling goes first
        b = np.array([lowest, 0], dtype)
        with np.errstate(all="ignore"):
            want = graph_order(x, b, POOL, relu=False)
            got = fused_alone(x, b, POOL, [b"BiasAdd"])
        assert want[0, 0, 0, 0] == lowest
        np.testing.assert_array_equal(got, want)


# -- split over the pool's threads by images ------------------------------------------------------


@pytest.fixture
def pool_device() -> Iterator[Any]:
    mgr = DeviceMgr(add_devices(aiotf.ConfigProto(inter_op_parallelism_threads=2), TASK))
    yield mgr.client_device
    mgr.close()


def in_pool(device: Any, work: Callable[[], np.ndarray]) -> np.ndarray:
    """``work()`` as a pool job of ``device``: a big fused pool splits its images there."""

    async def go() -> np.ndarray:
        result: np.ndarray = await device.run_in_pool(work)
        return result

    return asyncio.run(go())


@pytest.fixture
def image_ranges(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The image ranges the pool's maximum was taken over, one per call."""
    ranges: list[tuple[int, int]] = []
    max_into = conv_kernels._max_into

    def spy(taps: list[np.ndarray], out: np.ndarray, lo: int, hi: int) -> bool:
        ranges.append((lo, hi))
        return max_into(taps, out, lo, hi)

    monkeypatch.setattr(conv_kernels, "_max_into", spy)
    return ranges


BIG = (8, 48, 48, 32)  # 2.25 MiB of float32: past SPLIT_POOL_BYTES


@pytest.mark.parametrize(
    "ops", [[b"BiasAdd", b"Relu"], [b"Relu"], [b"BiasAdd"]], ids=["bias relu", "relu", "bias"]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=str)
def test_a_big_pool_split_by_images_gives_the_graph_orders_bits(
    pool_device: Any, ops: list[bytes], dtype: Any, image_ranges: list[tuple[int, int]]
) -> None:
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(BIG) * 4).astype(dtype)
    x[0, 0, 0, :] = np.inf  # a lone +inf, NaN and -inf in windows of finite values
    x[2, 2, 3, :] = np.nan
    x[5, 4, 5, :] = -np.inf
    while x.nbytes < conv_kernels.SPLIT_POOL_BYTES:
        x = np.concatenate([x, x])
    b = (rng.standard_normal(BIG[3]) * 2).astype(dtype) if b"BiasAdd" in ops else None
    with np.errstate(all="ignore"):
        want = graph_order(x, b, POOL, relu=b"Relu" in ops)
    image_ranges.clear()
    got = in_pool(pool_device, lambda: fused_alone(x, b, POOL, ops))
    np.testing.assert_array_equal(got, want)
    assert len(image_ranges) == 2 and image_ranges[0][0] == 0 and image_ranges[-1][1] == len(x)


def test_a_split_pool_with_an_all_nan_window_runs_the_graphs_order(
    pool_device: Any, image_ranges: list[tuple[int, int]]
) -> None:
    rng = np.random.default_rng(12)
    x = rng.standard_normal(BIG).astype(np.float32)
    x[4, :2, :2, 1] = np.nan  # pool: lowest; the graph's order: lowest, not Relu(lowest + b)
    b = rng.standard_normal(BIG[3]).astype(np.float32)
    with np.errstate(all="ignore"):
        want = graph_order(x, b, POOL)
    image_ranges.clear()
    got = in_pool(pool_device, lambda: fused(x, b, POOL))
    np.testing.assert_array_equal(got, want)
    assert got[4, 0, 0, 1] == np.finfo(np.float32).min  # TensorFlow's answer there
    assert len(image_ranges) == 3 and image_ranges[-1] == (0, len(x))  # parts, then the graph's


# -- in a session ----------------------------------------------------------------------------------


def cnn_block() -> tuple[aiotf.Graph, Any, Any]:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None, 8, 8, 3], name="x")
        f = aiotf.constant(np.random.default_rng(1).standard_normal((3, 3, 3, 4)), aiotf.float32)
        b = aiotf.placeholder(aiotf.float32, None, name="b")
        conv = aiotf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME")
        relu = aiotf.nn.relu(aiotf.nn.bias_add(conv, b, name="bias"), name="relu")
        pool = aiotf.nn.max_pool(relu, [1, 2, 2, 1], [1, 2, 2, 1], "VALID", name="pool")
    return g, relu, pool


def reference(x: np.ndarray, f: np.ndarray, b: np.ndarray) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = sum(
        np.einsum("nhwc,ck->nhwk", xp[:, i : i + 8, j : j + 8], f[i, j])
        for i in range(3)
        for j in range(3)
    )
    relu = np.maximum(conv + b, 0)
    return relu.reshape(2, 4, 2, 4, 2, 4).max(axis=(2, 4))


async def test_a_session_runs_the_fused_pool_and_the_graphs_answer() -> None:
    g, relu, pool = cnn_block()
    rng = np.random.default_rng(2)
    feeds = {
        "x:0": rng.standard_normal((2, 8, 8, 3)).astype(np.float32),
        "b:0": np.ones(4, np.float32),
    }
    f = np.random.default_rng(1).standard_normal((3, 3, 3, 4)).astype(np.float32)
    metadata = aiotf.RunMetadata()
    options = aiotf.RunOptions(output_partition_graphs=True)
    async with aiotf.Session(graph=g) as sess:
        got = await sess.run(pool, feeds, options=options, run_metadata=metadata)
        np.testing.assert_allclose(
            got, reference(feeds["x:0"], f, feeds["b:0"]), rtol=1e-5, atol=1e-5
        )
        ops = {n.name: n.op for p in metadata.partition_graphs for n in p.node}
        assert ops["pool"] == "_FusedMaxPool" and "relu" not in ops and "bias" not in ops
        # fetching the Relu too: nothing fuses, both are right
        both = await sess.run([relu, pool], feeds)
        np.testing.assert_array_equal(both[1], got)
        assert both[0].shape == (2, 8, 8, 4) and (both[0] >= 0).all()


async def test_a_bad_bias_fails_as_the_graphs_bias_add_and_the_next_run_works() -> None:
    g, _, pool = cnn_block()
    x = np.zeros((1, 8, 8, 3), np.float32)
    failures = []
    for level in (aiotf.OptimizerOptions.L1, aiotf.OptimizerOptions.L0):
        config = aiotf.ConfigProto()
        config.graph_options.optimizer_options.opt_level = level
        async with aiotf.Session(graph=g, config=config) as sess:
            with pytest.raises(errors.InvalidArgumentError) as info:
                await sess.run(pool, {"x:0": x, "b:0": np.ones(3, np.float32)})
            failures.append(info.value)
            good = await sess.run(pool, {"x:0": x, "b:0": np.ones(4, np.float32)})
            assert good.shape == (1, 4, 4, 4)
    fused, plain = failures
    assert fused.message.startswith(
        "Must provide as many biases as the last dimension of the input tensor: [3] vs. [1,8,8,4]"
    )
    assert "{{node bias}}" in fused.message
    # the same error as the graph's own BiasAdd raises: node, device, inputs, attrs, words
    # (found by review: the device, inputs and attrs were lost)
    assert fused.node_def == plain.node_def
    assert fused.message == plain.message
    assert str(fused) == str(plain)


def test_a_device_type_without_the_fused_kernel_keeps_its_ops() -> None:
    # found by review: a pluggable device with MaxPool's kernels but not _FusedMaxPool's
    accel = "/job:localhost/replica:0/task:0/device:ACCEL:0"
    g = conv_block(device=accel)
    for node in g:
        node.assigned_device = node.requested_device = accel
    assert not fuse_pools(g, frozenset())
    assert g["pool"].op == "MaxPool"


@pytest.mark.parametrize("case", ["not 4-D", "bad ksize"])
def test_the_pools_own_errors_name_the_graphs_max_pool(case: str) -> None:
    """Both of the kernel's ways to the pool (pool first, and the graph's order) raise MaxPool's
    errors as the graph's MaxPool node, with its words."""
    pool = dict(POOL)
    if case == "bad ksize":
        x = np.ones((1, 4, 4, 3), np.float32)  # pool first: the taps fail
        pool["ksize"] = [1, 2, 2, 2]  # over depth (the batch's is TensorFlow's Unimplemented)
        words = "Pooling is not yet supported on the batch or depth dimension (ksize)."
    else:
        x = np.ones((4, 4, 3), np.float32)  # the graph's order: the pool fails
        words = "tensor_in must be 4-dimensional [4,4,3]"
    with pytest.raises(errors.InvalidArgumentError) as info:
        fused_alone(x, None, pool, [b"Relu"])
    assert info.value.node_def.name == "pool" and info.value.node_def.op == "MaxPool"
    assert info.value.message.startswith(words)


# -- the Conv2D under the pool ----------------------------------------------------------------------

CONV = {"strides": [1, 1, 1, 1], "padding": b"SAME", "explicit_paddings": [], "dilations": [1] * 4}


def conv_pool_block(conv_format: bytes = b"NHWC") -> Graph:
    """x, w -> Conv2D -> BiasAdd(b) -> Relu -> MaxPool -> Identity 'out'."""
    g = conv_block()
    add(g, "w", "Placeholder", dtype=F32)
    add(g, "conv", "Conv2D", ["x", "w"], T=F32, data_format=conv_format, **CONV)
    g["bias"].inputs = [("conv", 0), ("b", 0)]
    return g


def test_the_conv2d_under_the_chain_fuses_too_its_filter_first_of_the_args() -> None:
    g = conv_pool_block()
    assert fuse_pools(g, frozenset())
    assert "conv" not in g and "bias" not in g and "relu" not in g
    fused = g["pool"]
    assert fused.inputs == [("x", 0), ("w", 0), ("b", 0)]
    assert fused.attrs["fused_ops"] == [b"Conv2D", b"BiasAdd", b"Relu"]
    assert fused.attrs["fused_names"] == [b"conv", b"bias", b"relu"]
    assert fused.attrs["num_args"] == 2
    assert {key: fused.attrs[f"conv_{key}"] for key in CONV} == CONV

    g = conv_block()  # a Conv2D right under the pool
    add(g, "w", "Placeholder", dtype=F32)
    add(g, "conv", "Conv2D", ["x", "w"], T=F32, **CONV)
    g["pool"].inputs = [("conv", 0)]
    assert fuse_pools(g, frozenset())
    assert g["pool"].attrs["fused_ops"] == [b"Conv2D"] and g["pool"].attrs["num_args"] == 1


def conv_read_twice(g: Graph) -> None:
    add(g, "fetch", "Identity", ["conv"], T=F32)


def filter_is_a_ref(g: Graph) -> None:
    g.remove("w")
    add(g, "w", "VariableV2", dtype=F32, shape=[3, 3, 3, 4])


@pytest.mark.parametrize(
    ("make", "edit", "keep"),
    [
        (conv_pool_block, conv_read_twice, frozenset()),
        (conv_pool_block, unchanged, frozenset({"conv"})),
        (lambda: conv_pool_block(b"NCHW"), unchanged, frozenset()),
        (conv_pool_block, filter_is_a_ref, frozenset()),
    ],
    ids=["read twice", "asked to run", "in another format", "a ref filter"],
)
def test_a_conv2d_someone_else_sees_stays_and_the_rest_fuses(
    make: Any, edit: Any, keep: frozenset[str]
) -> None:
    g = make()
    edit(g)
    assert fuse_pools(g, keep)
    assert g["conv"].op == "Conv2D"
    assert g["pool"].attrs["fused_ops"] == [b"BiasAdd", b"Relu"]
    assert g["pool"].inputs == [("conv", 0), ("b", 0)]


def conv_graph_order(
    x: np.ndarray,
    f: np.ndarray,
    b: np.ndarray | None,
    pool: dict[str, Any],
    ops: list[bytes],
    conv: dict[str, Any] = CONV,
) -> np.ndarray:
    """The graph's Conv2D, then its ``ops`` (BiasAdd, Relu) and the MaxPool, one after another."""
    y = conv_kernels.conv2d(x, f, data_format=pool["data_format"], **conv)
    return graph_order(y, b if b"BiasAdd" in ops else None, pool, relu=b"Relu" in ops)


def fused_conv(
    x: np.ndarray,
    f: np.ndarray,
    b: np.ndarray | None,
    pool: dict[str, Any],
    ops: list[bytes],
    conv: dict[str, Any] = CONV,
) -> np.ndarray:
    """The fused kernel of Conv2D, ``ops`` and the pool, as a node ``pool`` would call it."""
    names = {b"Conv2D": b"conv", b"BiasAdd": b"bias", b"Relu": b"relu"}
    chain = [b"Conv2D", *ops]
    attrs = {
        **pool,
        **{f"conv_{key}": value for key, value in conv.items()},
        "T": dtypes.as_dtype(x.dtype),
        "fused_ops": chain,
        "fused_names": [names[op] for op in chain],
        "num_args": 1 + (b is not None),
    }
    inputs = ("x", "w", "b")[: 2 + (b is not None)]
    node = KernelNode("pool", "_FusedMaxPool", attrs, (), (), CPU0, inputs)
    return conv_kernels.fused_max_pool(x, f, *([b] if b is not None else []), node=node)


@pytest.fixture
def pooled_ways(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which of the convolution's pooled ways ran: an entry per Winograd block, or per im2col
    or oneDNN convolution."""
    ways: list[str] = []
    by_tiles, by_gemm = winograd.convolve_pooled, conv_kernels._conv_gemm_pooled
    by_onednn = conv_kernels._by_onednn

    def tiles(*args: Any) -> None:
        ways.append("winograd")
        by_tiles(*args)

    def gemm(*args: Any) -> Any:  # (a plan of blocks, noted as it is made)
        ways.append("im2col")
        return by_gemm(*args)

    def onednn(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("pool"):
            ways.append("onednn")
        return by_onednn(*args, **kwargs)

    monkeypatch.setattr(winograd, "convolve_pooled", tiles)
    monkeypatch.setattr(conv_kernels, "_conv_gemm_pooled", gemm)
    monkeypatch.setattr(conv_kernels, "_by_onednn", onednn)
    return ways


# The way of a convolution of few channels: oneDNN's where it is installed (onednn_conv.py)
FEW = "onednn" if onednn.available() else "im2col"
CONV_SHAPES = {  # x, filter: the pooled way each takes
    "1 channel, 5x5": ((3, 12, 10, 1), (5, 5, 1, 8), FEW),
    "3 channels, 3x3": ((2, 8, 6, 3), (3, 3, 3, 4), FEW),
    "winograd 5x5": ((4, 14, 14, 16), (5, 5, 16, 32), "winograd"),
    "winograd 3x3, overhang": ((4, 14, 10, 16), (3, 3, 16, 16), "winograd"),
}
OPS = [[b"BiasAdd", b"Relu"], [b"Relu"], [b"BiasAdd"], []]


@pytest.mark.parametrize("shape", CONV_SHAPES, ids=str)
@pytest.mark.parametrize("ops", OPS, ids=["bias relu", "relu", "bias", "conv alone"])
@pytest.mark.parametrize("padding", [b"SAME", b"VALID"], ids=["same", "valid"])
def test_a_fused_conv2d_pooled_block_by_block_gives_the_graph_orders_bits(
    shape: str, ops: list[bytes], padding: bytes, pooled_ways: list[str]
) -> None:
    x_shape, f_shape, way = CONV_SHAPES[shape]
    if padding == b"VALID":  # outputs of even sides still
        x_shape = (x_shape[0], x_shape[1] + 1 - f_shape[0] % 2, *x_shape[2:])
        x_shape = (*x_shape[:2], x_shape[2] + 1 - f_shape[1] % 2, x_shape[3])
    rng = np.random.default_rng(21)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    b = rng.standard_normal(f_shape[3]).astype(np.float32) if b"BiasAdd" in ops else None
    conv = {**CONV, "padding": padding}
    want = conv_graph_order(x, f, b, POOL, ops, conv)
    got = fused_conv(x, f, b, POOL, ops, conv)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert pooled_ways and set(pooled_ways) == {way}


SAME_POOL = {**POOL, "padding": b"SAME"}
NCHW_CONV = ((2, 3, 8, 8), (3, 3, 3, 4), NCHW)


@pytest.mark.parametrize(
    ("x_shape", "f_shape", "pool", "conv", "dtype"),
    [
        ((2, 7, 8, 3), (3, 3, 3, 4), SAME_POOL, CONV, np.float32),  # an odd output side
        ((2, 8, 8, 3), (3, 3, 3, 4), SAME_3X3, CONV, np.float32),  # another window
        ((2, 8, 8, 3), (3, 3, 3, 4), POOL, {**CONV, "strides": [1, 2, 2, 1]}, np.float32),
        ((2, 8, 8, 3), (3, 3, 3, 4), POOL, {**CONV, "dilations": [1, 2, 2, 1]}, np.float32),
        ((2, 8, 8, 3), (3, 3, 3, 4), POOL, CONV, np.float64),
        ((2, 8, 8, 4), (3, 3, 2, 4), POOL, CONV, np.float32),  # grouped
        (*NCHW_CONV, CONV, np.float32),
    ],
    ids=["odd side", "3x3 pool", "strided", "dilated", "float64", "grouped", "nchw"],
)
def test_where_blocks_cannot_pool_the_conv2d_runs_whole_then_the_pool(
    x_shape: tuple[int, ...],
    f_shape: tuple[int, ...],
    pool: dict[str, Any],
    conv: dict[str, Any],
    dtype: Any,
    pooled_ways: list[str],
) -> None:
    rng = np.random.default_rng(22)
    x = rng.standard_normal(x_shape).astype(dtype)
    f = rng.standard_normal(f_shape).astype(dtype)
    b = rng.standard_normal(f_shape[3]).astype(dtype)
    ops = [b"BiasAdd", b"Relu"]
    want = conv_graph_order(x, f, b, pool, ops, conv)
    np.testing.assert_array_equal(fused_conv(x, f, b, pool, ops, conv), want)
    assert pooled_ways == []


@pytest.mark.parametrize("shape", ["3 channels, 3x3", "winograd 5x5"])
@pytest.mark.parametrize(
    "edit", ["all NaN window", "an infinity", "a NaN", "inf bias", "an infinite filter corner"]
)
def test_where_the_pooled_blocks_could_part_the_graphs_order_is_run(shape: str, edit: str) -> None:
    x_shape, f_shape, _ = CONV_SHAPES[shape]
    rng = np.random.default_rng(23)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    b = rng.standard_normal(f_shape[3]).astype(np.float32)
    if edit == "all NaN window":
        f[..., 1] = np.nan  # every output of channel 1 NaN: the pool answers lowest
    if edit == "an infinity":
        x[0, 3, 3, 0] = np.inf  # Winograd would spread it over a tile
    if edit == "a NaN":
        x[1, 2, 4, 0] = np.nan
    if edit == "inf bias":
        b[0] = np.inf
    if edit == "an infinite filter corner":  # on the padding for the edges' outputs: NaN there
        f[0, 0, 0, 1] = np.inf
    with np.errstate(all="ignore"):  # as kernels run in a session
        want = conv_graph_order(x, f, b, POOL, [b"BiasAdd", b"Relu"])
        got = fused_conv(x, f, b, POOL, [b"BiasAdd", b"Relu"])
    np.testing.assert_array_equal(got, want)
    if edit == "all NaN window":
        assert (got[..., 1] == np.finfo(np.float32).min).all()  # TensorFlow's answer there


@pytest.mark.parametrize("shape", ["1 channel, 5x5", "winograd 5x5"])
def test_a_fused_conv2d_shared_over_the_pools_threads_gives_the_same_bits(
    pool_device: Any, shape: str, pooled_ways: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = []  # the threads of the im2col blocks' products, or of oneDNN's convolutions
    into, conv_into = products.into, onednn_conv.into

    def spy(*args: Any, **kwargs: Any) -> None:
        blocks.append(threading.get_ident())
        into(*args, **kwargs)

    def conv_spy(*args: Any) -> None:
        blocks.append(threading.get_ident())
        conv_into(*args)

    monkeypatch.setattr(products, "into", spy)
    monkeypatch.setattr(onednn_conv, "into", conv_spy)
    x_shape, f_shape, way = CONV_SHAPES[shape]
    x_shape = (16, *x_shape[1:])  # blocks enough for both threads
    rng = np.random.default_rng(24)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    b = rng.standard_normal(f_shape[3]).astype(np.float32)
    ops = [b"BiasAdd", b"Relu"]
    want = conv_graph_order(x, f, b, POOL, ops)
    pooled_ways.clear()
    got = in_pool(pool_device, lambda: fused_conv(x, f, b, POOL, ops))
    np.testing.assert_array_equal(got, want)
    assert set(pooled_ways) == {way}
    assert len(pooled_ways if way == "winograd" else blocks) > 1  # in parts for both threads


def test_a_fused_conv2d_is_costed_as_the_convolution() -> None:
    attrs = {**POOL, "T": F32, "fused_ops": [b"Conv2D"], "fused_names": [b"conv"], "num_args": 1}
    attrs.update({f"conv_{key}": value for key, value in CONV.items()})
    node = KernelNode("pool", "_FusedMaxPool", attrs, (), (), CPU0, ("x", "w"))
    x, f = np.ones((32, 28, 28, 1), np.float32), np.ones((5, 5, 1, 32), np.float32)
    kernel = registry.create_kernel(node, "CPU")
    assert kernel.cost(x, f) == conv_kernels._conv_cost(x, f) > registry.POOL_MIN_COST


def test_the_fused_nodes_shape_is_the_pool_of_the_convolution() -> None:
    ctx = InferenceContext(
        "_FusedMaxPool",
        "pool",
        [TensorShape([2, 9, 8, 3]), TensorShape([3, 3, 3, 4])],
        [F32, F32],
        {**SAME_POOL, **{f"conv_{k}": v for k, v in CONV.items()}, "fused_ops": [b"Conv2D"]},
    )
    assert common_shapes.fused_max_pool(ctx)[0].as_list() == [2, 5, 4, 4]


def conv_session_block() -> tuple[aiotf.Graph, Any]:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None, 8, 8, 3], name="x")
        f = aiotf.placeholder(aiotf.float32, None, name="w")
        conv = aiotf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME", name="conv")
        relu = aiotf.nn.relu(aiotf.nn.bias_add(conv, np.ones(4, np.float32)), name="relu")
        pool = aiotf.nn.max_pool(relu, [1, 2, 2, 1], [1, 2, 2, 1], "VALID", name="pool")
    return g, pool


async def test_a_bad_filter_fails_as_the_graphs_conv2d_and_the_next_run_works() -> None:
    g, pool = conv_session_block()
    x = np.zeros((1, 8, 8, 3), np.float32)
    failures = []
    for level in (aiotf.OptimizerOptions.L1, aiotf.OptimizerOptions.L0):
        config = aiotf.ConfigProto()
        config.graph_options.optimizer_options.opt_level = level
        metadata = aiotf.RunMetadata()
        options = aiotf.RunOptions(output_partition_graphs=True)
        async with aiotf.Session(graph=g, config=config) as sess:
            with pytest.raises(errors.InvalidArgumentError) as info:
                await sess.run(pool, {"x:0": x, "w:0": np.ones((3, 3, 2, 4), np.float32)})
            failures.append(info.value)
            good = await sess.run(
                pool,
                {"x:0": x, "w:0": np.ones((3, 3, 3, 4), np.float32)},
                options=options,
                run_metadata=metadata,
            )
            assert good.shape == (1, 4, 4, 4) and (good == 1).all()
        ops = {n.name: n.op for p in metadata.partition_graphs for n in p.node}
        assert ("conv" not in ops) == (level == aiotf.OptimizerOptions.L1)
    fused, plain = failures
    assert fused.message.startswith("input depth must be evenly divisible by filter depth: 3 vs 2")
    assert "{{node conv}}" in fused.message
    assert fused.node_def == plain.node_def
    assert str(fused) == str(plain)


SESSION_CONVS = {  # shapes big enough for the pool (a smaller convolution runs inline)
    "the cnn's first layer": ((32, 28, 28, 1), (5, 5, 1, 32), FEW),
    "winograd 5x5": ((16, 14, 14, 16), (5, 5, 16, 32), "winograd"),
}


@pytest.mark.parametrize("shape", SESSION_CONVS)
@pytest.mark.parametrize("edit", ["none", "all NaN window"])
async def test_in_a_session_the_thread_that_ends_the_last_block_finishes_the_fused_pool(
    shape: str, edit: str, pooled_ways: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compiled step runs the fused pool's blocks as its ``parts`` (``intra_op.Relay``):
    whichever pool thread ends the last block pools, biases and rectifies them, and falls back
    to the whole convolution where a block found the graph's order could part from it; the
    graph's bits either way."""
    finished: list[bool] = []  # per relay: whether a helper ended its last part
    real_run = intra_op.Relay.run

    def run(self: intra_op.Relay, then: Callable[[], None]) -> bool:
        last = real_run(self, then)
        finished.append(not last)
        return last

    monkeypatch.setattr(intra_op.Relay, "run", run)
    x_shape, f_shape, way = SESSION_CONVS[shape]
    rng = np.random.default_rng(25)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    b = rng.standard_normal(f_shape[3]).astype(np.float32)
    if edit == "all NaN window":
        f[..., 1] = np.nan
    with np.errstate(all="ignore"):
        want = conv_graph_order(x, f, b, POOL, [b"BiasAdd", b"Relu"])
    g = aiotf.Graph()
    with g.as_default():
        xs = aiotf.placeholder(aiotf.float32, x_shape, name="x")
        conv = aiotf.nn.conv2d(xs, aiotf.constant(f), strides=[1, 1, 1, 1], padding="SAME")
        y = aiotf.nn.max_pool(aiotf.nn.relu(aiotf.nn.bias_add(conv, b)), [1, 2, 2, 1],
                              [1, 2, 2, 1], "VALID")  # fmt: skip
    async with aiotf.Session(graph=g) as sess:
        for _ in range(20):  # until a helper has ended a relay's last block at least once
            got = await sess.run(y, {xs: x})
            np.testing.assert_array_equal(got, want)
            if any(finished):
                break
    if edit != "none" and way == "onednn":
        way = "im2col"  # a filter not finite, padded: not oneDNN's (_onednn_takes)
    assert any(finished) and set(pooled_ways) == {way}
