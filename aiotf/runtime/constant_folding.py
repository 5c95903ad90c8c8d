"""Constant folding: evaluate at build time what depends only on constants (TensorFlow's
``common_runtime/constant_folding.cc``).

The pass walks the graph producers-first and marks a node *foldable* when it is a Const, or when
it may be evaluated early (see :func:`may_fold`) and every data input comes from a foldable node.
Control inputs do not stop folding: as in TensorFlow, each foldable node accumulates the
non-foldable sources of its own and its foldable ancestors' control edges, and the Const that
replaces it keeps them as control inputs. That is what keeps a folded value inside its loop frame:
a Const in a v1 while body has a control input from the frame's pivot, and so does its replacement.

Foldable nodes are evaluated with the CPU kernels of :mod:`aiotf.kernels.registry`, exactly as the
executor would run them (numpy errors ignored). A node whose kernel raises is not folded, nor is
anything downstream of it: the error surfaces at run time, from the node that raised.

Then each output of a foldable non-Const node that feeds a node outside the foldable set is
replaced by a new Const on the node's device, named TensorFlow's way ``<node>/_<n>__cf__<m>``
(``n`` counts per graph, ``m`` per process), unless it exceeds ``max_bytes``. The nodes left
without consumers are removed by the caller's dead-node removal.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np

from aiotf.framework import dtypes, op_def_registry
from aiotf.kernels import registry as kernel_registry
from aiotf.runtime.graph import Graph, Node

# TensorFlow's default ``max_constant_size_in_bytes`` (``max_folded_constant_in_bytes`` = 0).
DEFAULT_MAX_BYTES = 10 * 1024 * 1024

# Ops that steer frames, deadness or other devices: never evaluated early, whatever their flags.
CONTROL_FLOW_OPS = frozenset(
    p + op for p in ("", "Ref") for op in ("Switch", "Merge", "Enter", "Exit", "NextIteration")
) | {"LoopCond", "_SwitchN", "ControlTrigger"}
NEVER_FOLD = CONTROL_FLOW_OPS | {"_Send", "_Recv", "_HostSend", "_HostRecv", "_Arg", "_Retval"}

_unique_constant_id = itertools.count()  # TensorFlow's process-wide UniqueConstantId()

Values = tuple[np.ndarray[Any, Any], ...]


def fold_constants(
    graph: Graph, keep: frozenset[str] = frozenset(), max_bytes: int = DEFAULT_MAX_BYTES
) -> bool:
    """Replace tensors computable from constants alone by Consts; whether anything changed."""
    del keep  # folding only redirects edges; the nodes themselves stay for dead-node removal
    values: dict[str, Values] = {}
    deps: dict[str, set[str]] = {}  # foldable node -> non-foldable control sources it inherits
    with np.errstate(all="ignore"):
        for node in graph.topological_order():
            if not _is_candidate(node, values):
                continue
            outputs = _evaluate(node, values)
            if outputs is not None:
                values[node.name] = outputs
                deps[node.name] = _control_deps(node, deps)
    return _replace_boundary(graph, values, deps, max_bytes)


def is_ref_or_resource(dtype: dtypes.DType) -> bool:
    return dtype.is_ref_dtype or dtype.base_dtype is dtypes.resource


def _is_candidate(node: Node, folded: Mapping[str, Values]) -> bool:
    """Whether ``node`` may be evaluated now: a Const, or foldable with all data inputs folded."""
    if node.op == "Const":
        return node.output_dtypes[0] is not dtypes.resource
    return may_fold(node) and bool(node.inputs) and all(src in folded for src, _ in node.inputs)


def may_fold(node: Node) -> bool:
    """Stateless, no control flow or rendezvous, no ref or resource edges, outputs to fold."""
    if node.is_stateful or node.op in NEVER_FOLD or not node.output_dtypes:
        return False
    return not any(is_ref_or_resource(t) for t in (*node.input_dtypes(), *node.output_dtypes))


def _evaluate(node: Node, values: Mapping[str, Values]) -> Values | None:
    """``node``'s outputs computed by its CPU kernel, or None when it cannot or should not be."""
    if node.op == "Const":
        return (np.asarray(node.attrs["value"]),)
    kernel_def = kernel_registry.find_kernel_def(node.op, "CPU", node.attrs)
    if kernel_def is None or kernel_def.is_async or kernel_def.wants_ctx:
        return None
    kernel_node = node.kernel_node(node.assigned_device)
    args = [values[src][k] for src, k in node.inputs]
    try:
        result = kernel_registry.create_kernel(kernel_node, "CPU").compute(*args)
    except Exception:  # left for the run to raise, naming this node
        return None
    return _as_values(node, result)


def _as_values(node: Node, result: Any) -> Values | None:
    """The kernel's ``result`` as one array per output, if every dtype is what the node declares."""
    if len(node.output_dtypes) == 1:
        raw = (result,)
    elif isinstance(result, tuple | list):
        raw = tuple(result)
    else:
        return None
    if len(raw) != len(node.output_dtypes):
        return None
    arrays = tuple(np.asarray(v) for v in raw)
    for array, dtype in zip(arrays, node.output_dtypes, strict=True):
        if array.dtype != dtype.np_dtype:
            return None
    return arrays


def _control_deps(node: Node, deps: Mapping[str, set[str]]) -> set[str]:
    """The non-foldable control sources ``node`` and its foldable inputs wait for."""
    out: set[str] = set()
    for src in [*(s for s, _ in node.inputs), *node.control_inputs]:
        if src in deps:
            out |= deps[src]
        else:
            out.add(src)
    return out


def _replace_boundary(
    graph: Graph, values: Mapping[str, Values], deps: Mapping[str, set[str]], max_bytes: int
) -> bool:
    """Give every foldable-to-outside data edge a Const of its value; whether any was made."""
    changed = False
    consumers = graph.consumers()
    for name, outputs in values.items():
        node = graph[name]
        if node.op == "Const":
            continue  # TensorFlow never replaces a constant with a constant
        for k, value in enumerate(outputs):
            edges = _data_consumers(consumers[name], name, k)
            if not any(c.name not in values for c in edges) or value.nbytes > max_bytes:
                continue
            const = _make_const(graph, node, k, value, deps[name])
            for consumer in edges:
                consumer.inputs = [
                    (const.name, 0) if e == (name, k) else e for e in consumer.inputs
                ]
            changed = True
    return changed


def _data_consumers(consumers: list[Node], name: str, k: int) -> list[Node]:
    unique = {id(c): c for c in consumers}.values()
    return [c for c in unique if (name, k) in c.inputs]


def _make_const(
    graph: Graph, node: Node, k: int, value: np.ndarray[Any, Any], control_deps: set[str]
) -> Node:
    dtype = node.output_dtypes[k]
    name = f"{graph.new_name(node.name)}__cf__{next(_unique_constant_id)}"
    device = node.assigned_device or node.requested_device
    value.flags.writeable = False
    const = Node(
        name,
        op_def_registry.lookup("Const"),
        {"value": value, "dtype": dtype},
        control_inputs=sorted(control_deps),
        requested_device=device,
        assigned_device=node.assigned_device,
    )
    return graph.add(const)
