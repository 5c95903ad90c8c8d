"""Commutative ops' inputs in a canonical order (grappler's ``utils/canonicalizer.cc``).

Before its common subgraph elimination, TensorFlow's grappler sorts the data inputs of every
node whose op is commutative (its op def says so, or it is a v1 ``Add`` of numbers) by their
input strings (``name`` or ``name:port``, byte order), and sorts and dedups each node's control
inputs. What a run computes can depend on that order:
AddN sums its inputs in it (float rounding), and a broadcast error names the shapes in it
(``Incompatible shapes: [2] vs. [3]``). So the session's graph is canonicalized as grappler's
would be, unless grappler is off for it (:func:`applies`), which it is by default for a graph of
fewer than four nodes (``min_graph_nodes``), counted over the whole graph the session holds.
The rest of grappler (its dependency and arithmetic rewrites, its own constant folding) is not
modelled here; the GraphOptimizer (``graph_optimizer.py``) runs aiotf's rewrites.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiotf.framework import dtypes
from aiotf.proto.rewriter_config_pb2 import RewriterConfig
from aiotf.runtime.graph import Node

# RewriterConfig's default: the meta optimizer skips graphs of fewer nodes.
DEFAULT_MIN_GRAPH_NODES = 4
_OFF = RewriterConfig.OFF
_CSE = "common_subgraph_elimination"


def applies(config: Any, num_nodes: int) -> bool:
    """Whether grappler's common subgraph elimination, and so its canonicalization, runs on a
    session graph of ``num_nodes`` nodes under the session's ``config`` (a ConfigProto), as
    measured on TensorFlow 2.21: not with ``place_pruned_graph`` (grappler leaves a pruned
    graph alone), nor with the meta optimizer disabled, nor with either of the toggles of
    common subgraph elimination and arithmetic optimization OFF (the first was once part of the
    second); with a list of ``optimizers``, only if it names it."""
    if config is None or not config.HasField("graph_options"):
        return num_nodes >= DEFAULT_MIN_GRAPH_NODES
    graph_options = config.graph_options
    options = graph_options.rewrite_options
    if graph_options.place_pruned_graph or options.disable_meta_optimizer:
        return False
    if options.optimizers:
        if _CSE not in options.optimizers:
            return False
    elif _OFF in (options.common_subgraph_elimination, options.arithmetic_optimization):
        return False
    least = options.min_graph_nodes or DEFAULT_MIN_GRAPH_NODES  # -1: no least size
    return num_nodes >= least


def canonicalize(nodes: Iterable[Node]) -> None:
    """Sort each commutative node's data inputs, and every node's control inputs (deduped), in
    place (the nodes must be the caller's own copies)."""
    for node in nodes:
        if len(node.inputs) > 1 and _commutative(node):
            node.inputs.sort(key=_input_string)
        if len(node.control_inputs) > 1:
            node.control_inputs = sorted(set(node.control_inputs))


def _commutative(node: Node) -> bool:
    """Grappler's ``IsCommutative``: the op def's mark, and the v1 ``Add`` of anything but
    strings (unmarked, as string Add concatenates)."""
    if node.op == "Add":
        return bool(node.attrs.get("T", dtypes.string) != dtypes.string)
    return node.op_def.is_commutative


def _input_string(edge: tuple[str, int]) -> str:
    src, port = edge
    return src if port == 0 else f"{src}:{port}"
