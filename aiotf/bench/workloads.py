"""The eight workloads of ``../shared/bench/README.md``, each three ways.

A :class:`Workload` knows how to build its graph with aiotf's own API, how to build it with
TensorFlow's (given the ``tensorflow`` module, which aiotf never imports itself), and how to
compute the same result in straight-line numpy (the "numpy limit"). Its constants (``params``)
come from the TensorFlow-written GraphDef in the graphs directory when there is one, so the
built graph, the imported graph and the numpy reference all use the very same weights; the
larger workloads draw seeded He-normal weights instead.

Feeds follow the README: ``rng = numpy.random.default_rng(seed)``, then
``rng.standard_normal(shape).astype(dtype)`` per feed, in order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import aiotf
from aiotf.ops.op_helper import apply_op

Array = np.ndarray[Any, Any]
Params = dict[str, Array]
Reference = Callable[[Sequence[Array]], Any]
F32 = np.float32


@dataclasses.dataclass(frozen=True)
class Built:
    """A graph (aiotf's or TensorFlow's) with its feed tensors, in order, and its fetch."""

    graph: Any
    feeds: list[Any]
    fetch: Any


class Unsupported(Exception):
    """The workload cannot be built with this API yet (reported, never fatal)."""


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    description: str
    seed: int
    feed_shapes: tuple[tuple[int, ...], ...]
    make_params: Callable[[np.random.Generator], Params]
    build: Callable[[Params], Built]
    build_tf: Callable[[Any, Params], Built]
    reference: Callable[[Params], Reference]
    params_from: str | None = None  # stem of the TF-written GraphDef holding the params
    importable: bool = False  # also time aiotf on the imported GraphDef
    requests: int = 0  # >0: one run is that many concurrent single requests
    unoptimized: bool = False  # also time aiotf with the GraphOptimizer off (OptimizerOptions L0)
    rtol: float = 1e-4
    atol: float = 1e-5

    def feeds(self, seed: int | None = None) -> list[Array]:
        rng = np.random.default_rng(self.seed if seed is None else seed)
        return [rng.standard_normal(shape).astype(F32) for shape in self.feed_shapes]


def he_normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> Array:
    values: Array = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
    return values.astype(F32)


# -- tiny: x + 1 ------------------------------------------------------------------------------


def _tiny_params(rng: np.random.Generator) -> Params:
    return {"one": np.array(1.0, F32)}


def _tiny(params: Params) -> Built:
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[], name="x")
        out = aiotf.add(x, aiotf.constant(params["one"], name="one"), name="out")
    return Built(graph, [x], out)


def _tiny_tf(tf: Any, params: Params) -> Built:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[], name="x")
        out = tf.add(x, tf.constant(params["one"], name="one"), name="out")
    return Built(graph, [x], out)


def _tiny_ref(params: Params) -> Reference:
    one = params["one"]
    return lambda feeds: feeds[0] + one


# -- chain200: 200 chained AddV2, each adding its own Const -------------------------------------

CHAIN = 200


def _chain_params(rng: np.random.Generator) -> Params:
    return {f"c{i}": rng.standard_normal(16).astype(F32) for i in range(CHAIN)}


def _chain(params: Params) -> Built:
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[16], name="x")
        y = x
        for i in range(CHAIN):
            name = "out" if i == CHAIN - 1 else f"add{i}"
            y = aiotf.add(y, aiotf.constant(params[f"c{i}"], name=f"c{i}"), name=name)
    return Built(graph, [x], y)


def _chain_tf(tf: Any, params: Params) -> Built:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[16], name="x")
        y = x
        for i in range(CHAIN):
            name = "out" if i == CHAIN - 1 else f"add{i}"
            y = tf.add(y, tf.constant(params[f"c{i}"], name=f"c{i}"), name=name)
    return Built(graph, [x], y)


def _chain_ref(params: Params) -> Reference:
    consts = [params[f"c{i}"] for i in range(CHAIN)]

    def ref(feeds: Sequence[Array]) -> Array:
        y = feeds[0]
        for c in consts:
            y = y + c
        return y

    return ref


# -- wide16: 16 independent 512x512 MatMuls, summed with AddN -----------------------------------

WIDE = 16


def _wide_params(rng: np.random.Generator) -> Params:
    return {f"w{i}": he_normal(rng, (512, 512), 512) for i in range(WIDE)}


def _wide(params: Params) -> Built:
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[512, 512], name="x")
        products = [
            aiotf.matmul(x, aiotf.constant(params[f"w{i}"], name=f"w{i}")) for i in range(WIDE)
        ]
        out = apply_op("AddN", [products], name="out").outputs[0]
    return Built(graph, [x], out)


def _wide_tf(tf: Any, params: Params) -> Built:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[512, 512], name="x")
        products = [tf.matmul(x, tf.constant(params[f"w{i}"])) for i in range(WIDE)]
        out = tf.add_n(products, name="out")
    return Built(graph, [x], out)


def _wide_ref(params: Params) -> Reference:
    ws = [params[f"w{i}"] for i in range(WIDE)]

    def ref(feeds: Sequence[Array]) -> Array:
        x = feeds[0]
        total = x @ ws[0]
        for w in ws[1:]:
            total += x @ w
        return total

    return ref


# -- mlp / mlp_b1 / concurrent: frozen MLP 784-512-512-10 ---------------------------------------

MLP_LAYERS = ((784, 512), (512, 512), (512, 10))


def _mlp_params(rng: np.random.Generator) -> Params:
    params: Params = {}
    for i, (n_in, n_out) in enumerate(MLP_LAYERS, start=1):
        params[f"w{i}"] = he_normal(rng, (n_in, n_out), n_in)
        params[f"b{i}"] = (rng.standard_normal(n_out) * 0.01).astype(F32)
    return params


def _mlp(params: Params) -> Built:
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[None, 784], name="x")
        h = x
        for i in (1, 2, 3):
            w = aiotf.constant(params[f"w{i}"], name=f"w{i}")
            b = aiotf.constant(params[f"b{i}"], name=f"b{i}")
            h = aiotf.nn.bias_add(aiotf.matmul(h, w), b)
            if i < 3:
                h = aiotf.nn.relu(h, name=f"relu{i}")
        out = aiotf.nn.softmax(h, name="out")
    return Built(graph, [x], out)


def _mlp_tf(tf: Any, params: Params) -> Built:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[None, 784], name="x")
        h = x
        for i in (1, 2, 3):
            h = tf.nn.bias_add(tf.matmul(h, tf.constant(params[f"w{i}"])), params[f"b{i}"])
            if i < 3:
                h = tf.nn.relu(h)
        out = tf.nn.softmax(h, name="out")
    return Built(graph, [x], out)


def softmax(logits: Array) -> Array:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def _mlp_ref(params: Params) -> Reference:
    w1, b1, w2, b2, w3, b3 = (params[k] for k in ("w1", "b1", "w2", "b2", "w3", "b3"))

    def ref(feeds: Sequence[Array]) -> Array:
        h = np.maximum(feeds[0] @ w1 + b1, 0)
        h = np.maximum(h @ w2 + b2, 0)
        return softmax(h @ w3 + b3)

    return ref


# -- cnn: two conv/relu/maxpool blocks, dense 1024, dense 10 + softmax --------------------------

CNN_BATCH = 32


def _cnn_params(rng: np.random.Generator) -> Params:
    return {
        "conv1": he_normal(rng, (5, 5, 1, 32), 25),
        "bc1": np.full(32, 0.1, F32),
        "conv2": he_normal(rng, (5, 5, 32, 64), 25 * 32),
        "bc2": np.full(64, 0.1, F32),
        "fc1": he_normal(rng, (7 * 7 * 64, 1024), 7 * 7 * 64),
        "bf1": np.full(1024, 0.1, F32),
        "fc2": he_normal(rng, (1024, 10), 1024),
        "bf2": np.zeros(10, F32),
    }


_SAME_1 = {"strides": [1, 1, 1, 1], "padding": b"SAME"}
_POOL_2 = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": b"SAME"}


def _cnn(params: Params) -> Built:
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[CNN_BATCH, 28, 28, 1], name="x")
        h = x
        for conv, bias in (("conv1", "bc1"), ("conv2", "bc2")):
            w = aiotf.constant(params[conv], name=conv)
            h = apply_op("Conv2D", [h, w], dict(_SAME_1)).outputs[0]
            h = aiotf.nn.relu(aiotf.nn.bias_add(h, aiotf.constant(params[bias], name=bias)))
            h = apply_op("MaxPool", [h], dict(_POOL_2)).outputs[0]
        shape = aiotf.constant(np.array([-1, 7 * 7 * 64], np.int32), name="flat_shape")
        h = apply_op("Reshape", [h, shape]).outputs[0]
        h = aiotf.nn.relu(aiotf.nn.bias_add(aiotf.matmul(h, params["fc1"]), params["bf1"]))
        logits = aiotf.nn.bias_add(aiotf.matmul(h, params["fc2"]), params["bf2"])
        out = aiotf.nn.softmax(logits, name="out")
    return Built(graph, [x], out)


def _cnn_tf(tf: Any, params: Params) -> Built:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[CNN_BATCH, 28, 28, 1], name="x")
        h = x
        for conv, bias in (("conv1", "bc1"), ("conv2", "bc2")):
            h = tf.nn.conv2d(h, tf.constant(params[conv]), strides=[1, 1, 1, 1], padding="SAME")
            h = tf.nn.relu(tf.nn.bias_add(h, params[bias]))
            h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="SAME")
        h = tf.reshape(h, [-1, 7 * 7 * 64])
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, tf.constant(params["fc1"])), params["bf1"]))
        logits = tf.nn.bias_add(tf.matmul(h, tf.constant(params["fc2"])), params["bf2"])
        out = tf.nn.softmax(logits, name="out")
    return Built(graph, [x], out)


def conv2d_same(x: Array, w: Array) -> Array:
    """Stride-1 SAME convolution (NHWC, HWIO) as im2col + one matmul."""
    kh, kw = w.shape[:2]
    pads = ((0, 0), ((kh - 1) // 2, kh // 2), ((kw - 1) // 2, kw // 2), (0, 0))
    windows = sliding_window_view(np.pad(x, pads), (kh, kw), axis=(1, 2))  # N,H,W,C,kh,kw
    cols = windows.transpose(0, 1, 2, 4, 5, 3).reshape(*x.shape[:3], -1)
    return cols @ w.reshape(-1, w.shape[3])


def max_pool_2x2(x: Array) -> Array:
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))  # type: ignore[no-any-return]


def _cnn_ref(params: Params) -> Reference:
    p = params

    def ref(feeds: Sequence[Array]) -> Array:
        h = max_pool_2x2(np.maximum(conv2d_same(feeds[0], p["conv1"]) + p["bc1"], 0))
        h = max_pool_2x2(np.maximum(conv2d_same(h, p["conv2"]) + p["bc2"], 0))
        h = np.maximum(h.reshape(h.shape[0], -1) @ p["fc1"] + p["bf1"], 0)
        return softmax(h @ p["fc2"] + p["bf2"])

    return ref


# -- while1000: a control-flow-v1 while loop of 1000 scalar adds --------------------------------


def _while_params(rng: np.random.Generator) -> Params:
    return {"n": np.array(1000, np.int32), "step": np.array(1.0, F32), "i0": np.array(0, np.int32)}


def _while(params: Params) -> Built:
    while_loop = getattr(aiotf, "while_loop", None)
    if while_loop is None:
        raise Unsupported("aiotf.while_loop does not exist yet")
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[], name="x")
        n = aiotf.constant(params["n"], name="n")
        step = aiotf.constant(params["step"], name="step")
        i0 = aiotf.constant(params["i0"], name="i0")
        _, y = while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y + step), [i0, x], name="loop")
        out = aiotf.identity(y, name="out")
    return Built(graph, [x], out)


def _while_tf(tf: Any, params: Params) -> Built:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[], name="x")
        n, step = tf.constant(params["n"]), tf.constant(params["step"])
        _, y = tf.compat.v1.while_loop(
            lambda i, y: i < n, lambda i, y: (i + 1, y + step), [tf.constant(params["i0"]), x]
        )
        out = tf.identity(y, name="out")
    return Built(graph, [x], out)


def _while_ref(params: Params) -> Reference:
    n, step = int(params["n"]), params["step"][()]

    def ref(feeds: Sequence[Array]) -> Any:
        y = feeds[0][()]
        i = 0
        while i < n:
            y = y + step
            i += 1
        return y

    return ref


# -- concurrent: 256 mlp_b1 requests on one shared session ---------------------------------------

REQUESTS = 256


def _concurrent_ref(params: Params) -> Reference:
    single = _mlp_ref(params)
    return lambda feeds: [single([f]) for f in feeds]


# -- the table ------------------------------------------------------------------------------------

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "tiny", "scalar placeholder x + 1 (fixed cost of one run)", 1, ((),),
            _tiny_params, _tiny, _tiny_tf, _tiny_ref, "tiny", True, rtol=1e-5, atol=1e-6,
        ),
        Workload(
            "chain200", "200 chained AddV2 on float32[16] (per-node overhead)", 2, ((16,),),
            _chain_params, _chain, _chain_tf, _chain_ref, "chain200", True, atol=1e-4, rtol=1e-5,
            unoptimized=True,
        ),
        Workload(
            "wide16", "16 independent 512x512 MatMuls summed with AddN (inter-op parallelism)",
            3, ((512, 512),), _wide_params, _wide, _wide_tf, _wide_ref, rtol=1e-3, atol=1e-3,
        ),
        Workload(
            "mlp", "frozen MLP 784-512-512-10, batch 64 (throughput)", 4, ((64, 784),),
            _mlp_params, _mlp, _mlp_tf, _mlp_ref, "mlp_b1", False, rtol=1e-4, atol=1e-6,
        ),
        Workload(
            "mlp_b1", "the same MLP, batch 1 (latency)", 5, ((1, 784),),
            _mlp_params, _mlp, _mlp_tf, _mlp_ref, "mlp_b1", True, rtol=1e-4, atol=1e-6,
        ),
        Workload(
            "cnn", "2x (Conv2D 5x5 SAME + Relu + MaxPool 2x2), dense 1024, dense 10, batch 32",
            6, ((CNN_BATCH, 28, 28, 1),), _cnn_params, _cnn, _cnn_tf, _cnn_ref,
            rtol=1e-3, atol=1e-5,
        ),
        Workload(
            "while1000", "v1 while_loop, 1000 iterations of a scalar add (per-iteration cost)",
            7, ((),), _while_params, _while, _while_tf, _while_ref, "while1000", True,
            rtol=1e-6, atol=1e-4,
        ),
        Workload(
            "concurrent", f"{REQUESTS} concurrent mlp_b1 requests on one shared session",
            8, ((1, 784),) * REQUESTS, _mlp_params, _mlp, _mlp_tf, _concurrent_ref,
            "mlp_b1", True, requests=REQUESTS, rtol=1e-4, atol=1e-6,
        ),
    )
}  # fmt: skip
