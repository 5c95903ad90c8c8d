"""The remapper: a MaxPool of Relu and/or BiasAdd, and of the Conv2D under them, becomes one
``_FusedMaxPool``, pool first.

TensorFlow's grappler remapper fuses a convolution or a matmul with the BiasAdd and Relu after it,
so that they run on each block of output while it is in cache; in aiotf that measured no faster
(``docs/performance-log.md``, *Tried and not kept*). What does pay is the order:
``MaxPool(Relu(BiasAdd(x, b)))`` is ``Relu(BiasAdd(MaxPool(x), b))`` (adding a bias and Relu never
reorder two values), and the second runs the bias and Relu on the pooled tensor, a quarter of ``x``
under 2x2 pools (the cnn's conv, bias, relu, pool). And a convolution under the pool hands each
block of its outputs to the pool as it makes them, in the order the pool reads best (the cnn's
2x2 pools: ``conv_kernels._conv_pool_first``). The fused kernel
(``kernels/conv_kernels.fused_max_pool``) computes the same values, infinities and NaNs included:
where the orders could part, it runs the ops in the graph's order.

The pattern: a MaxPool whose input is a Relu, a BiasAdd or a Conv2D, or a chain of them in that
order (Conv2D, BiasAdd, Relu; any may be missing), of a floating dtype; the BiasAdd and Conv2D in
the pool's data format (NHWC or NCHW); each fused op read by nothing but the next one (no other
data or control edge, so no one fetches it) and not asked to run; a Conv2D reading a ref (a
variable's) stays out. The fused node takes the MaxPool's name (its consumers and fetches are
unchanged) and every control input of the chain; an error of the Conv2D or the BiasAdd still
names it. Only where the pool's device type has a ``_FusedMaxPool`` kernel (CPU; grappler too
remaps on CPU alone).
"""

from __future__ import annotations

from aiotf.framework import op_def_registry
from aiotf.framework.device_spec import DeviceSpec
from aiotf.kernels import registry as kernel_registry
from aiotf.runtime.graph import Graph, Node


def fuse_pools(graph: Graph, keep: frozenset[str] = frozenset()) -> bool:
    """Fuse every MaxPool of Relu, BiasAdd and/or Conv2D in ``graph``; whether any was."""
    consumers = graph.consumers()
    changed = False
    for pool in graph:
        if pool.op != "MaxPool" or not _has_kernel(pool):
            continue
        chain = _fusable_chain(graph, pool, consumers, keep)
        if chain:
            _fuse(graph, pool, chain)
            changed = True
    return changed


def _has_kernel(pool: Node) -> bool:
    """Whether the pool's device has a ``_FusedMaxPool`` kernel for its dtype (floats; a device
    type of its own may have MaxPool's alone)."""
    device_type = DeviceSpec.from_string(pool.assigned_device).device_type or ""
    return kernel_registry.has_kernel("_FusedMaxPool", device_type, pool.attrs)


def _fusable_chain(
    graph: Graph, pool: Node, consumers: dict[str, list[Node]], keep: frozenset[str]
) -> list[Node]:
    """The Conv2D, BiasAdd and/or Relu under ``pool`` that may fuse into it, in graph order."""
    chain: list[Node] = []
    node = pool
    for op in ("Relu", "BiasAdd", "Conv2D"):
        src, k = node.inputs[0]
        producer = graph[src]
        if (
            producer.op != op
            or k != 0
            or producer.name in keep
            or len(consumers[src]) != 1
            or producer.assigned_device != pool.assigned_device
            or producer.attrs["T"] != pool.attrs["T"]
            or (op != "Relu" and producer.attrs["data_format"] != pool.attrs["data_format"])
        ):
            continue
        chain.insert(0, producer)
        node = producer
    if chain and chain[0].op == "Conv2D" and _reads_ref(graph, chain[0], 2):
        del chain[0]  # a ref input (a variable's) stays the Conv2D's own
    if chain and _reads_ref(graph, chain[0], 1):
        return []
    return chain


def _reads_ref(graph: Graph, node: Node, inputs: int) -> bool:
    """Whether one of ``node``'s first ``inputs`` data inputs is a ref (a variable's)."""
    return any(graph[src].output_dtypes[k].is_ref_dtype for src, k in node.inputs[:inputs])


def _fuse(graph: Graph, pool: Node, chain: list[Node]) -> None:
    conv = chain[0] if chain[0].op == "Conv2D" else None
    args = [n.inputs[1] for n in chain if n.op in ("Conv2D", "BiasAdd")]  # filter, bias
    attrs = dict(pool.attrs)  # its window and T
    attrs.update(
        num_args=len(args),
        fused_ops=[n.op.encode() for n in chain],
        fused_names=[n.name.encode() for n in chain],
    )
    if conv is not None:
        attrs.update(  # the rest are the pool's too
            {f"conv_{key}": v for key, v in conv.attrs.items() if key not in ("T", "data_format")}
        )
    controls = [c for n in (*chain, pool) for c in n.control_inputs]
    fused = Node(
        pool.name,
        op_def_registry.lookup("_FusedMaxPool"),
        attrs,
        [chain[0].inputs[0], *args],
        list(dict.fromkeys(controls)),
        pool.requested_device,
        pool.assigned_device,
    )
    for node in chain:
        graph.remove(node.name)
    graph.replace(fused)
