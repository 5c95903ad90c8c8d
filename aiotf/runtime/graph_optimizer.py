"""The GraphOptimizer: per-partition rewrites run to a fixpoint (ten rounds at most).

Each rewrite is a plain function ``(graph, keep) -> changed``, where ``keep`` names the nodes the
caller asked to run (targets), which no rewrite may remove; the optimizer runs the enabled ones
in order until a round changes nothing. Which run is decided by ``OptimizerOptions`` the way
TensorFlow's ``GraphOptimizer`` decides (see :func:`enabled_passes`):

- ``opt_level`` L1 (0, the default) forces constant folding and CSE on; at L0 (-1) the flags
  ``do_constant_folding`` and ``do_common_subexpression_elimination`` decide;
- ``do_function_inlining`` turns on dead-node and identity removal (TensorFlow ties them to it);
- a folding round that changed the graph removes the nodes it left dead, whatever the flags.

The order within a round is TensorFlow's: dead nodes, identities, folding, CSE. At L1 the
remapper (``remapper.py``: a MaxPool of Relu and BiasAdd computed pool first, and two dense
layers' MatMuls split by their hidden units; grappler's work in TensorFlow, and like it off with
``rewrite_options.remapping`` OFF) comes next, and last the MatMuls whose readers take any
layout are marked so (``layouts.py``); L0 runs the graph's ops as written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiotf.proto import RewriterConfig
from aiotf.runtime import graph_verifier
from aiotf.runtime.constant_folding import CONTROL_FLOW_OPS, DEFAULT_MAX_BYTES, fold_constants
from aiotf.runtime.constant_push_down import push_down_constants
from aiotf.runtime.cse import eliminate_common_subexpressions
from aiotf.runtime.graph import Graph, Node
from aiotf.runtime.layouts import mark_any_layouts
from aiotf.runtime.remapper import fuse_matmul_pairs, fuse_matmul_sums, fuse_pools

Rewrite = Callable[[Graph, frozenset[str]], bool]
MAX_ROUNDS = 10

# An Identity after these is not a plain copy: a Recv or Switch may send a dead tensor, and the
# Identity is what carries its control edges (TensorFlow's RemoveIdentityNodes keeps it too).
_IDENTITY_KEEPING_PRODUCERS = frozenset({"_Recv", "_HostRecv", "Switch", "RefSwitch", "_SwitchN"})


def remove_dead_nodes(graph: Graph, keep: frozenset[str]) -> bool:
    """Remove stateless nodes whose outputs nobody consumes and nobody asked to run, and then
    the nodes that only they consumed, and so on (one sweep, like TensorFlow's)."""
    uses = {name: len(nodes) for name, nodes in graph.consumers().items()}
    dead = [n for n in graph if not uses[n.name] and _removable(n, keep)]
    for node in dead:  # grows while it is walked
        graph.remove(node.name)
        for src in [*(s for s, _ in node.inputs), *node.control_inputs]:
            uses[src] -= 1
            producer = graph[src]
            if not uses[src] and _removable(producer, keep):
                dead.append(producer)
    return bool(dead)


def _removable(node: Node, keep: frozenset[str]) -> bool:
    return (
        not node.is_stateful
        and bool(node.output_dtypes)
        and node.op not in CONTROL_FLOW_OPS
        and node.name not in keep
    )


def remove_identity_nodes(graph: Graph, keep: frozenset[str]) -> bool:
    """Bypass each Identity that is a plain copy: its consumers read its input instead."""
    consumers = graph.consumers()
    removed = False
    for node in graph:
        if not consumers[node.name] or not _plain_identity(graph, node, keep):
            continue
        src = node.inputs[0]
        for consumer in {id(c): c for c in consumers[node.name]}.values():
            consumer.inputs = [src if e == (node.name, 0) else e for e in consumer.inputs]
            controls = [src[0] if c == node.name else c for c in consumer.control_inputs]
            consumer.control_inputs = list(dict.fromkeys(controls))
            consumers[src[0]].append(consumer)
        graph.remove(node.name)
        removed = True
    return removed


def _plain_identity(graph: Graph, node: Node, keep: frozenset[str]) -> bool:
    """An Identity with one data input, no control inputs, not a ref read, not kept."""
    if node.op != "Identity" or node.name in keep or node.control_inputs or len(node.inputs) != 1:
        return False
    src, k = node.inputs[0]
    producer = graph[src]
    return (
        not producer.output_dtypes[k].is_ref_dtype
        and producer.op not in _IDENTITY_KEEPING_PRODUCERS
    )


def constant_folding(max_bytes: int = DEFAULT_MAX_BYTES) -> Rewrite:
    """The folding rewrite: push constants down, fold, and remove what folding left dead."""

    def rewrite(graph: Graph, keep: frozenset[str]) -> bool:
        pushed = push_down_constants(graph, keep)
        if not fold_constants(graph, keep, max_bytes):
            return pushed
        remove_dead_nodes(graph, keep)
        return True

    rewrite.__name__ = rewrite.__qualname__ = "constant_folding"
    return rewrite


def remapping(config: Any) -> bool:
    """Whether a session ``config`` (a ConfigProto, or None) leaves the remapper on: unless its
    ``rewrite_options.remapping`` is OFF, as for TensorFlow's grappler remapper, whose fusions
    aiotf's stand for."""
    if config is None or not config.HasField("graph_options"):
        return True
    return bool(config.graph_options.rewrite_options.remapping != RewriterConfig.OFF)


def enabled_passes(optimizer_options: Any, remapper: bool = True) -> list[Rewrite]:
    """The rewrites ``optimizer_options`` turns on, in TensorFlow's order within a round; the
    remapper's fusions at L1 only where ``remapper`` (:func:`remapping`)."""
    opts = optimizer_options
    level = int(opts.opt_level) if opts is not None else 0
    fold = level >= 0 or bool(opts.do_constant_folding)
    cse = level >= 0 or bool(opts.do_common_subexpression_elimination)
    inline = opts is not None and bool(opts.do_function_inlining)
    passes: list[Rewrite] = []
    if inline:
        passes += [remove_dead_nodes, remove_identity_nodes]
    if fold:
        max_bytes = int(opts.max_folded_constant_in_bytes) if opts is not None else 0
        passes.append(constant_folding(max_bytes or DEFAULT_MAX_BYTES))
    if cse:
        passes.append(eliminate_common_subexpressions)
    if level >= 0:
        passes += [fuse_pools, fuse_matmul_pairs, fuse_matmul_sums] if remapper else []
        passes.append(mark_any_layouts)
    return passes


def optimize(graph: Graph, rewrites: list[Rewrite], keep: frozenset[str] = frozenset()) -> bool:
    """Run ``rewrites`` over ``graph`` until nothing changes (``keep`` survives); whether any did."""
    changed_any = False
    for _ in range(MAX_ROUNDS):
        changed = False
        for rewrite in rewrites:
            changed = rewrite(graph, keep) or changed
            graph_verifier.check(graph, f"GraphOptimizer rewrite '{rewrite.__name__}'")
        changed_any = changed_any or changed
        if not changed:
            break
    return changed_any
