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

The other pattern, ``_FusedMatMulPair``: a MatMul whose product, through a BiasAdd and/or a
Relu (either may be missing), is the left operand of a second MatMul, and the BiasAdd and/or
Relu after that one, ``Relu(BiasAdd(MatMul(Relu(BiasAdd(MatMul(a, w1), b1)), w2), b2))``: two
dense layers. Split over two threads layer by layer, each product waits for both threads'
halves before the next can start (a helper's wake-up and a hand-off per product, and the bias
and Relu between them on the whole product, cold); split by the hidden units instead, each
thread makes its half of the first product, adds its half of the bias, takes its Relu, and
multiplies that by its half of ``w2``'s rows, and the two partial products are summed, then
biased and rectified: one wait for the pair (the kernel: ``kernels/fused_products.py``). The
second product's sum over the hidden units is then made in two halves added together, so its
last bits may differ from the one product's (as TensorFlow's own fusions and oneDNN's blocking
may); the halves are fixed by the shapes, never by the threads, so a run's answer does not
change with the pool. The MatMuls float32 and neither transposed; every op but the last read
by the next alone (no other data or control edge) and not asked for; the BiasAdds of one data
format; no input a ref; the fused node takes the last op's name. The pairs are taken from the
graph's inputs on (an MLP's first two layers pair, the third stays a MatMul).

The third, ``_FusedMatMulSum``: an AddN of ten or more MatMuls (``SUM_MIN_PRODUCTS``), ``AddN(MatMul(a0, b0),
MatMul(a1, b1), ...)`` (wide16). Run as written, the products all end before the sum starts,
which then reads them back from L3 (wide16's: 16 MiB, ~1 ms of a ~22 ms step), while one
thread waits for the other's last product. The fused kernel folds each product into its share of
the sum as soon as it is made, while it is in cache, in the AddN's own groups and order, so its
bits are the AddN's (``kernels/fused_products.py``). The MatMuls plain products as a pair's
(float32, not transposed, default attrs), each read by the AddN alone and once, not asked for,
on its device, no operand a ref; the AddN float32; the fused node takes the AddN's name and its
operands are the MatMuls', in the AddN's order.
"""

from __future__ import annotations

from typing import Any

from aiotf.framework import dtypes, op_def_registry
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


def _has_kernel(node: Node, fused_op: str = "_FusedMaxPool") -> bool:
    """Whether ``node``'s device has a kernel of ``fused_op`` for its dtype (a device type of
    its own may have the graph's ops alone)."""
    device_type = DeviceSpec.from_string(node.assigned_device).device_type or ""
    return kernel_registry.has_kernel(fused_op, device_type, node.attrs)


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
    _replace(graph, [*chain, pool], "_FusedMaxPool", attrs, [chain[0].inputs[0], *args])


def _replace(
    graph: Graph, chain: list[Node], op: str, attrs: dict[str, Any], inputs: list[tuple[str, int]]
) -> None:
    """Put a node of ``op`` in place of ``chain``'s last node (its name and devices), taking
    ``inputs`` and every control input of the chain; the other nodes of the chain go."""
    *fused, last = chain
    controls = [c for n in chain for c in n.control_inputs]
    node = Node(
        last.name,
        op_def_registry.lookup(op),
        attrs,
        inputs,
        list(dict.fromkeys(controls)),
        last.requested_device,
        last.assigned_device,
    )
    for n in fused:
        graph.remove(n.name)
    graph.replace(node)


# The ops a pair's first product may pass through on its way to the second MatMul, in order,
# and those that may follow the second MatMul in the pair.
_BETWEEN = ("BiasAdd", "Relu")


def fuse_matmul_pairs(graph: Graph, keep: frozenset[str] = frozenset()) -> bool:
    """Fuse every MatMul pair of ``graph`` (see the module docstring); whether any was."""
    consumers = graph.consumers()
    changed = False
    for first in graph.topological_order():
        if first.op != "MatMul" or graph.get(first.name) is not first or not _plain_product(first):
            continue  # (or fused into a pair already)
        chain = _pair_chain(graph, first, consumers, keep)
        if chain:
            _fuse_pair(graph, chain)
            consumers = graph.consumers()
            changed = True
    return changed


def _plain_product(node: Node, fused_op: str = "_FusedMatMulPair") -> bool:
    """A float32 MatMul of neither operand transposed nor marked a gradient's (its attrs are
    the defaults, which the fused node's errors give it back), on a device with the kernel of
    ``fused_op``."""
    a = node.attrs
    return (
        node.op == "MatMul"
        and a["T"] == dtypes.float32
        and not (a["transpose_a"] or a["transpose_b"] or a.get("grad_a") or a.get("grad_b"))
        and _has_kernel(node, fused_op)
    )


def _pair_chain(
    graph: Graph, first: Node, consumers: dict[str, list[Node]], keep: frozenset[str]
) -> list[Node]:
    """``first``, the BiasAdd and/or Relu after it, the MatMul that takes their product as its
    left operand, and the BiasAdd and/or Relu after that, if they may fuse (see the module
    docstring); else empty."""
    chain = [first]
    ops = [*_BETWEEN, "MatMul"]  # up to the second MatMul ...
    while len(chain) == 1 or chain[-1].op != "MatMul":
        reader = _sole_reader(chain, consumers, keep)
        if reader is None or reader.op not in ops:
            return []
        del ops[: ops.index(reader.op) + 1]  # each op once, in order
        chain.append(reader)
    second = chain[-1]
    ops = list(_BETWEEN)  # ... and on through its own BiasAdd and/or Relu
    while ops:
        reader = _sole_reader(chain, consumers, keep)
        if reader is None or reader.op not in ops:
            break
        del ops[: ops.index(reader.op) + 1]
        chain.append(reader)
    if not _plain_product(second) or any(
        graph[src].output_dtypes[k].is_ref_dtype for n in chain for src, k in n.inputs
    ):
        return []
    return chain


def _sole_reader(
    chain: list[Node], consumers: dict[str, list[Node]], keep: frozenset[str]
) -> Node | None:
    """The node that may join ``chain`` after its last: the one reader of that node's output,
    as its first input, on its device, of its dtype (a BiasAdd in the chain's data format);
    None if that node is asked to run, is read by anything else, or there is no such reader."""
    node = chain[-1]
    readers = consumers[node.name]
    if node.name in keep or len(readers) != 1:
        return None
    reader = readers[0]
    formats = {n.attrs["data_format"] for n in chain if n.op == "BiasAdd"}
    if (
        reader.inputs[:1] != [(node.name, 0)]
        or reader.assigned_device != node.assigned_device
        or reader.attrs.get("T") != dtypes.float32
        or (reader.op == "BiasAdd" and not formats <= {reader.attrs["data_format"]})
    ):
        return None
    return reader


def _fuse_pair(graph: Graph, chain: list[Node]) -> None:
    args = [n.inputs[1] for n in chain if n.op in ("MatMul", "BiasAdd")]
    attrs: dict[str, Any] = op_def_registry.lookup("_FusedMatMulPair").default_attrs()
    attrs.update(
        T=chain[0].attrs["T"],
        num_args=len(args),
        fused_ops=[n.op.encode() for n in chain],
        fused_names=[n.name.encode() for n in chain[:-1]],
    )
    for n in chain:
        if n.op == "BiasAdd":
            attrs["data_format"] = n.attrs["data_format"]
    _replace(graph, chain, "_FusedMatMulPair", attrs, [chain[0].inputs[0], *args])


# The fewest products a sum fuses: two of the AddN's groups (its first nine, then the rest). A
# sum of one group folds on one thread what the AddN adds on two: 4 and 2 products of 512^3 were
# no faster fused (6.31 against 5.98, 3.08 against 3.17 ms), 16 were (22.90 against 23.21).
SUM_MIN_PRODUCTS = 10


def fuse_matmul_sums(graph: Graph, keep: frozenset[str] = frozenset()) -> bool:
    """Fuse every AddN of MatMuls of ``graph`` (see the module docstring); whether any was."""
    consumers = graph.consumers()
    changed = False
    for total in list(graph):
        if total.op != "AddN" or total.attrs.get("T") != dtypes.float32:
            continue
        products = _summed_products(graph, total, consumers, keep)
        if products:
            _fuse_sum(graph, total, products)
            consumers = graph.consumers()
            changed = True
    return changed


def _summed_products(
    graph: Graph, total: Node, consumers: dict[str, list[Node]], keep: frozenset[str]
) -> list[Node]:
    """The MatMuls ``total`` sums, if they may fuse into it: SUM_MIN_PRODUCTS at least, each a
    plain product on its device, read by it alone and once, not asked to run, no operand a ref;
    else empty."""
    names = [src for src, _ in total.inputs]
    if (
        len(names) < SUM_MIN_PRODUCTS
        or len(set(names)) != len(names)
        or any(k for _, k in total.inputs)
    ):
        return []
    products = [graph[name] for name in names]
    for node in products:
        if (
            not _plain_product(node, "_FusedMatMulSum")
            or node.name in keep
            or consumers[node.name] != [total]
            or node.assigned_device != total.assigned_device
            or _reads_ref(graph, node, 2)
        ):
            return []
    return products


def _fuse_sum(graph: Graph, total: Node, products: list[Node]) -> None:
    args = [edge for node in products for edge in node.inputs[:2]]
    attrs = {
        "T": total.attrs["T"],
        "num_args": len(args),
        "fused_names": [n.name.encode() for n in products],
    }
    _replace(graph, [*products, total], "_FusedMatMulSum", attrs, args)
