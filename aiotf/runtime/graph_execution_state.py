"""GraphExecutionState: the session's full graph, placed, and the build of per-call partitions.

The full graph grows append-only (``extend``). As TensorFlow's ``Extend`` does, each extension
places the whole graph afresh: stateful nodes keep the device they were given (their state lives
there), every other node is placed again, so a generator placed alone may now join a new
consumer's device. Executors already built keep the partitions they were built from (the graph
is copied, never changed in place). With ``graph_options.place_pruned_graph`` nothing is placed up
front: each build places its pruned graph, and only stateful nodes keep their device. After
placing, each extension puts commutative ops' inputs in grappler's order (``canonicalizer.py``)
where grappler would run on the graph (its size, the session's options).

``build`` turns one call signature into per-device partition graphs: POST_REWRITE_FOR_EXEC after
the feed/fetch rewrite and pruning, POST_PARTITIONING after partitioning, then the GraphOptimizer
on each partition. ``on_placed`` (``log_device_placement``) sees each placement as it is made: the
full graph's at each extension, or with ``place_pruned_graph`` each build's pruned graph, in the
order TensorFlow assigns the nodes.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from aiotf.devices.device_mgr import DeviceMgr
from aiotf.runtime import (
    canonicalizer,
    graph_optimizer,
    graph_verifier,
    partition,
    placer,
    subgraph,
)
from aiotf.runtime.function import FunctionLibraryDefinition
from aiotf.runtime.graph import Graph, Node, node_from_def
from aiotf.runtime.optimization_registry import Grouping, PassOptions, run_grouping


@dataclasses.dataclass
class BuildResult:
    """The partitions of one call signature, by device name."""

    partitions: dict[str, Graph]
    client_graph: Graph


PlacementLogger = Callable[[Sequence[Node]], None]


class GraphExecutionState:
    def __init__(
        self, device_mgr: DeviceMgr, config: Any, on_placed: PlacementLogger | None = None
    ) -> None:
        self._device_mgr = device_mgr
        self._config = config
        self._on_placed = on_placed
        self._graph = Graph()
        self._canonical = False
        self.library = FunctionLibraryDefinition()  # the graph's functions (control flow v2)
        self._name_counter = itertools.count()  # partition node names, unique per session
        self._edges_of = (self._graph, subgraph.ConstructedEdges([], []))

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def canonical(self) -> bool:
        """Whether the graph's inputs are in grappler's order (``canonicalizer.py``)."""
        return self._canonical

    def extend(self, node_defs: Iterable[Any], library: Any = None) -> None:
        """Add nodes (NodeDef protos) to the full graph and place it again; all or nothing.

        ``library`` (a FunctionDefLibrary) adds functions the nodes may call first.
        """
        self.library.add_library(library)
        new_nodes = [node_from_def(nd, self.library.signature) for nd in node_defs]
        if not new_nodes:
            return
        candidate = self._graph.copy()
        for node in new_nodes:
            candidate.add(node)
        _check_inputs_exist(candidate, new_nodes)
        if not self._place_pruned_graph:
            for node in candidate:  # TF's RestoreStatefulNodes: only stateful nodes stay put
                if not node.is_stateful:
                    node.assigned_device = ""
            self._place(candidate)
        # After the placement passes, as grappler runs after them; the nodes are copies.
        canonical = canonicalizer.applies(self._config, len(candidate))
        if canonical:
            canonicalizer.canonicalize(candidate)
        self._graph, self._canonical = candidate, canonical

    def _place(self, graph: Graph) -> None:
        options = self._pass_options(graph=graph)
        run_grouping(Grouping.PRE_PLACEMENT, options)
        order = placer.place(graph, self._device_mgr, self._allow_soft_placement)
        if self._on_placed is not None:
            self._on_placed(order)
        run_grouping(Grouping.POST_PLACEMENT, options)

    def build(
        self,
        feeds: Sequence[str],
        fetches: Sequence[str],
        targets: Sequence[str],
        partial_run: bool = False,
    ) -> BuildResult:
        """The partitions for one call; ``partial_run``: the rendezvous convention (``_Recv``/``_Send``)."""
        client = self._device_mgr.client_device
        rewritten = subgraph.rewrite(
            self._graph,
            feeds,
            fetches,
            targets,
            client.name,
            use_function_convention=not partial_run,
            client_incarnation=client.incarnation,
        )
        client_graph = rewritten.graph
        graph_verifier.check(client_graph, "the feed/fetch rewrite")
        if self._place_pruned_graph:
            self._place_pruned(client_graph)
        constructed = self._constructed_edges()  # TF's numbering, which names the partitions
        edge_ids = subgraph.client_edge_ids(self._graph, constructed, rewritten)
        node_order = subgraph.client_node_order(constructed, rewritten)
        run_grouping(Grouping.POST_REWRITE_FOR_EXEC, self._pass_options(graph=client_graph))
        incarnations = {d.name: d.incarnation for d in self._device_mgr}
        parts = partition.partition(
            client_graph, incarnations, self._name_counter, edge_ids, node_order
        )
        graph_verifier.check_partitions(parts, "partitioning")
        run_grouping(Grouping.POST_PARTITIONING, self._pass_options(partition_graphs=parts))
        rewrites = graph_optimizer.enabled_passes(
            self._optimizer_options, graph_optimizer.remapping(self._config)
        )
        keep = frozenset(targets)
        for part in parts.values():
            graph_optimizer.optimize(part, rewrites, keep)
        graph_verifier.check_partitions(parts, "the GraphOptimizer")
        return BuildResult(parts, client_graph)

    def _constructed_edges(self) -> subgraph.ConstructedEdges:
        """The full graph's edges as TF's GraphConstructor makes them (cached per graph)."""
        graph, edges = self._edges_of
        if graph is not self._graph:
            edges = subgraph.constructed_edges(self._graph)
            self._edges_of = (self._graph, edges)
        return edges

    def _place_pruned(self, graph: Graph) -> None:
        """``place_pruned_graph``: place only what this call runs; stateful nodes stay put.

        A stateful node's device is written back to the full graph, so later builds keep it.
        """
        self._place(graph)
        for node in graph:
            full = self._graph.get(node.name)
            if full is not None and full.is_stateful and not full.assigned_device:
                full.assigned_device = node.assigned_device

    @property
    def _place_pruned_graph(self) -> bool:
        return bool(self._config is not None and self._config.graph_options.place_pruned_graph)

    @property
    def _allow_soft_placement(self) -> bool:
        return bool(self._config is not None and self._config.allow_soft_placement)

    @property
    def _optimizer_options(self) -> Any:
        if self._config is None or not self._config.HasField("graph_options"):
            return None
        return self._config.graph_options.optimizer_options

    def _pass_options(self, **kwargs: Any) -> PassOptions:
        return PassOptions(
            config=self._config, devices=self._device_mgr.devices, flib_def=self.library, **kwargs
        )


def _check_inputs_exist(graph: Graph, nodes: list[Node]) -> None:
    from aiotf.framework import errors

    for node in nodes:
        for src in [s for s, _ in node.inputs] + node.control_inputs:
            if src not in graph:
                raise errors.InvalidArgumentError(
                    None, None, f"Node '{node.name}': Unknown input node '{src}'"
                )
