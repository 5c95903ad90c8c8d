"""Layouts: which MatMuls may leave their output laid out by columns.

A product of a few dozen rows runs faster as its own transpose (``kernels/products.py``), whose
result is the product laid out by columns (Fortran order) unless it is copied back into rows:
mlp's 64x784x512 layer split over two threads took 481 against 519 us, and its 64x512x512 layer,
reading the first one's output as it lay, 350 against 409. Whoever reads such an output must
take that layout at full speed. A product does (it reads it as ``a.T``, or as columns laid out
as rows, contiguous either way), and so do numpy's kernels of one operand, which hand the layout
on. Reductions over its rows do not (ArgMax over 64x1000 laid out by columns 12x slower, Softmax
1.3x, and their sums in another order), nor a fetch (TensorFlow hands back rows: a copy would
take 80 us for 64x1000), nor a ``_Send``, nor a binary op whose other operand lies by rows.

So this pass marks a MatMul ``_any_layout`` (the attr its kernel reads) when every reader of its
output, and of what the kernels that hand the layout on make of it, is a MatMul or such a
kernel, and unmarks one whose readers changed; the remapper's ``_FusedMatMulPair`` (two
products, ``kernels/fused_products.py``) is read and marked as a MatMul is. It runs last in each round of the
GraphOptimizer at L1. TensorFlow has no such pass: its tensors are row-major, and grappler's
layout optimizer converts between NHWC and NCHW only.
"""

from __future__ import annotations

from aiotf.runtime.graph import Graph, Node

ANY_LAYOUT = "_any_layout"

# Readers that take a matrix in any layout (either operand of a product, or of the remapper's
# pair of products) ...
_READS_ANY = frozenset({"MatMul", "_FusedMatMulPair"})
# (the remapper's sum of products reads its operands in any layout too, and is never marked: its
# output is the sum's own, by rows)
_TAKES_ANY = _READS_ANY | {"_FusedMatMulSum"}
# ... and kernels of one data operand whose output keeps its input's layout, measured as fast
# or within a few microseconds on 64x512 (BiasAdd's bias runs along the last axis; Identity
# hands on the array itself).
_HANDS_ON = frozenset(
    {"BiasAdd", "Elu", "Identity", "LeakyRelu", "Relu", "Relu6", "Sigmoid", "Softplus", "Tanh"}
)


def mark_any_layouts(graph: Graph, keep: frozenset[str] = frozenset()) -> bool:
    """Mark (or unmark) each MatMul of ``graph`` whose readers all take any layout (see the
    module docstring); whether any node changed. ``keep`` changes nothing: a node asked to run
    is run whatever its layout."""
    consumers = graph.consumers()
    changed = False
    for node in graph.nodes:  # a list: nodes are replaced as it goes
        if node.op not in _READS_ANY:
            continue
        free = _read_in_any_layout(node, consumers)
        if free != bool(node.attrs.get(ANY_LAYOUT)):
            marked = node.copy()  # attrs are never changed in place
            marked.attrs = {k: v for k, v in node.attrs.items() if k != ANY_LAYOUT}
            if free:
                marked.attrs[ANY_LAYOUT] = True
            graph.replace(marked)
            changed = True
    return changed


def _read_in_any_layout(product: Node, consumers: dict[str, list[Node]]) -> bool:
    """Whether every data edge out of ``product``, and on through the kernels that hand its
    layout on, ends in a reader that takes any layout."""
    pending, seen = [product.name], {product.name}
    while pending:
        name = pending.pop()
        for reader in consumers[name]:
            for i, (src, _) in enumerate(reader.inputs):
                if src != name or reader.op in _TAKES_ANY:
                    continue
                if reader.op not in _HANDS_ON or i != 0:
                    return False
                if reader.name not in seen:
                    seen.add(reader.name)
                    pending.append(reader.name)
    return True
