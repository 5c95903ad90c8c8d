"""Feed/fetch rewrite and pruning (TensorFlow's ``subgraph::RewriteGraphForExecution``).

For a call ``(feeds, fetches, targets)`` the full graph is copied and:

1. each fed tensor ``n:i`` gets a feed node on the client device, and every consumer of ``n:i``
   reads the feed node instead — so the producer of a fed tensor is cut off and, unless needed
   elsewhere, pruned (a fed Placeholder's control edges move to its feed node too);
2. each fetched tensor gets a fetch node on the client device;
3. everything not reachable backwards from the fetch nodes and the target nodes, over data and
   control edges, is removed.

Two calling conventions, as TensorFlow's (``use_function_convention``):

- *function* (``run``, callables): feeds are ``_arg_<n>_<i>_<k>`` (``_Arg``, ``index`` = k, the
  feed's position) and fetches ``_retval_<n>_<i>_<k>`` (``_Retval``): the step's call frame.
- *rendezvous* (partial runs): feeds are ``_recv_<n>_<i>`` (``_Recv``) and fetches
  ``_send_<n>_<i>`` (``_Send``), with ``client_terminated`` set, ``tensor_name`` the endpoint as
  given (``"n:i"``) and the client device at both ends; the client sends and receives under the
  same rendezvous keys (``runtime/partial_run.py``), so values come and go while the step runs.

Edge ids. TensorFlow names the ``_Send``/``_Recv`` pair of a cross-device edge after the edge's
id in the client graph (``edge_<id>_<src>``), so :func:`client_edge_ids` replays how TF numbers
them: its ``GraphConstructor`` makes the full graph's edges node by node in a topological order
that prefers GraphDef order (data inputs by slot, then control inputs sorted by name; loop back
edges last), then links nodes without inputs to the source and nodes without consumers to the
sink; the rewrite appends its edges (per feed: source to feed node, then the fed tensor's
consumers, a fed Placeholder's control edges too, in the order they were made; per fetch: the
fetched tensor, then fetch node to sink); pruning drops edges, the sink and source are linked
again, and the client graph is a dense copy, numbered from 3 (each ``Graph`` starts with a
source-to-sink edge, and the client graph is the third copy). Two of TF's internals are beyond
reach: a node with more than eight out-edges keeps them in a hash set, so the order of a feed's
new edges then is arbitrary (aiotf keeps creation order); and TF's grappler, when on (its
default), rewrites the graph before any of this, so numbers match TF with grappler off.

Errors are TensorFlow's (``subgraph.cc``), checked in its order: an endpoint fed twice or both
fed and fetched, then each feed, each fetch (a node with no outputs, an output index past the
node's outputs) and the targets (every missing one named). A call with nothing to fetch or run
is the caller's to refuse or answer (a callable whose fetches are all fed runs nothing).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence
from typing import Any

from aiotf.framework import errors
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime.graph import Graph, Node, parse_tensor_name

_PLACEHOLDERS = frozenset({"Placeholder", "PlaceholderV2"})

Edge = tuple[str, int]


@dataclasses.dataclass
class ClientGraph:
    """One call's rewritten, pruned graph, and its feed and fetch nodes in feed and fetch order."""

    graph: Graph
    feeds: list[str]
    feed_nodes: list[str]
    fetches: list[str]
    fetch_nodes: list[str]


def rewrite(
    graph: Graph,
    feeds: Sequence[str],
    fetches: Sequence[str],
    targets: Sequence[str],
    client_device: str,
    *,
    use_function_convention: bool = True,
    client_incarnation: int = 0,
) -> ClientGraph:
    """A pruned copy of ``graph`` computing ``fetches`` and running ``targets`` from ``feeds``,
    with the names of the feed and fetch nodes it added.

    ``client_incarnation`` (the client device's) goes into the rendezvous convention's keys.
    """
    _check_endpoints(feeds, fetches)
    g = graph.copy()
    client = _Client(client_device, client_incarnation, use_function_convention)
    feed_of = _add_feeds(g, feeds, client)
    _redirect_consumers(g, feed_of)
    roots = _add_fetches(g, fetches, feed_of, client)
    missing = [name for name in targets if name not in g]
    if missing:
        raise errors.NotFoundError(
            None, None, f"PruneForTargets: Some target nodes not found: {' '.join(missing)} "
        )
    prune(g, [*roots, *targets])
    feed_nodes = [name for name, _ in feed_of.values()]
    return ClientGraph(g, list(feeds), feed_nodes, list(fetches), roots)


def _check_endpoints(feeds: Sequence[str], fetches: Sequence[str]) -> None:
    fed: set[str] = set()
    for feed in feeds:
        if feed in fed:
            raise errors.InvalidArgumentError(None, None, f'Endpoint "{feed}" fed more than once.')
        fed.add(feed)
    for fetch in fetches:
        if fetch in fed:
            raise errors.InvalidArgumentError(None, None, f"{fetch} is both fed and fetched.")


class _Client:
    """The client device, and which convention its feed and fetch nodes follow."""

    __slots__ = ("device", "function_convention", "incarnation")

    def __init__(self, device: str, incarnation: int, function_convention: bool) -> None:
        self.device = device
        self.incarnation = incarnation
        self.function_convention = function_convention

    def node(self, g: Graph, name: str, op: str, attrs: dict[str, Any], inputs: list[Edge]) -> Node:
        """A feed or fetch node, assigned to the client device (it requests none, as TF's)."""
        node = Node(g.unique_name(name), lookup(op), attrs, inputs, assigned_device=self.device)
        return g.add(node)

    def transfer_attrs(self, endpoint: str) -> dict[str, Any]:
        """``_Send``/``_Recv`` attrs for a value the client hands over under ``endpoint``."""
        return {
            "tensor_name": endpoint.encode(),
            "send_device": self.device.encode(),
            "send_device_incarnation": self.incarnation,
            "recv_device": self.device.encode(),
            "client_terminated": True,
        }


def _feed_endpoint(g: Graph, endpoint: str) -> tuple[Node, int]:
    """The node and output index a feed names (TF's ``FeedInputs`` checks)."""
    src, out = parse_tensor_name(endpoint)
    node = g.get(src)
    if node is None:
        raise errors.NotFoundError(None, None, f"FeedInputs: unable to find feed output {endpoint}")
    if out >= len(node.output_dtypes):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"FeedInputs: {endpoint} should have output index < {len(node.output_dtypes)}",
        )
    return node, out


def _fetch_endpoint(g: Graph, endpoint: str) -> tuple[Node, int]:
    """The node and output index a fetch names (TF's ``FetchOutputs`` checks)."""
    src, out = parse_tensor_name(endpoint)
    node = g.get(src)
    if node is None:
        raise errors.NotFoundError(None, None, f"FetchOutputs node {endpoint}: not found")
    if not node.output_dtypes:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Tried to fetch data for '{endpoint}', which produces no output.  To run to a node "
            f"but not fetch any data, pass '{endpoint}' as an argument to the "
            "'target_node_names' argument of the Session::Run API.",
        )
    if out >= len(node.output_dtypes):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"FetchOutputs {endpoint}: output index too large, must be < {len(node.output_dtypes)}",
        )
    return node, out


def _add_feeds(g: Graph, feeds: Sequence[str], client: _Client) -> dict[Edge, Edge]:
    """A feed node per fed tensor; the map from each fed tensor to its feed node's output."""
    feed_of: dict[Edge, Edge] = {}
    for index, feed in enumerate(feeds):
        node, out = _feed_endpoint(g, feed)
        dtype = node.output_dtypes[out].base_dtype
        if client.function_convention:
            attrs: dict[str, Any] = {"T": dtype, "index": index}
            fed = client.node(g, f"_arg_{node.name}_{out}_{index}", "_Arg", attrs, [])
        else:
            attrs = {"tensor_type": dtype, **client.transfer_attrs(feed)}
            fed = client.node(g, f"_recv_{node.name}_{out}", "_Recv", attrs, [])
        feed_of[(node.name, out)] = (fed.name, 0)
    return feed_of


def _redirect_consumers(g: Graph, feed_of: dict[Edge, Edge]) -> None:
    """Consumers of a fed tensor read its feed node; a fed Placeholder's control edges follow."""
    if not feed_of:
        return
    fed_placeholders = {
        src: feed for (src, _), (feed, _) in feed_of.items() if g[src].op in _PLACEHOLDERS
    }
    feed_nodes = {feed for feed, _ in feed_of.values()}
    for node in g:
        if node.name in feed_nodes:
            continue
        node.inputs = [feed_of.get(edge, edge) for edge in node.inputs]
        if fed_placeholders and node.control_inputs:
            node.control_inputs = list(
                dict.fromkeys(fed_placeholders.get(c, c) for c in node.control_inputs)
            )


def _add_fetches(
    g: Graph, fetches: Sequence[str], feed_of: dict[Edge, Edge], client: _Client
) -> list[str]:
    """A fetch node per fetched tensor; their names (the roots pruning starts from)."""
    roots = []
    for index, fetch in enumerate(fetches):
        node, out = _fetch_endpoint(g, fetch)
        edge = feed_of.get((node.name, out), (node.name, out))
        dtype = node.output_dtypes[out].base_dtype
        if client.function_convention:
            attrs: dict[str, Any] = {"T": dtype, "index": index}
            sink = client.node(g, f"_retval_{node.name}_{out}_{index}", "_Retval", attrs, [edge])
        else:
            attrs = {"T": dtype, **client.transfer_attrs(fetch)}
            sink = client.node(g, f"_send_{node.name}_{out}", "_Send", attrs, [edge])
        roots.append(sink.name)
    return roots


def prune(g: Graph, roots: Sequence[str]) -> None:
    """Remove every node of ``g`` that no root reaches backwards over data or control edges."""
    keep: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        keep.add(name)
        node = g[name]
        stack.extend(src for src, _ in node.inputs if src not in keep)
        stack.extend(c for c in node.control_inputs if c not in keep)
    for node in g:
        if node.name not in keep:
            g.remove(node.name)


# -- TensorFlow's edge ids ------------------------------------------------------------------------

EdgeKey = tuple[str, int, str, int]
"""An edge: ``(src, src_output, dst, dst_input)``; a control edge has -1 at both ends."""

SOURCE, SINK = "_SOURCE", "_SINK"
_FIRST_ID = 3  # the dense client graph's source-to-sink edges: its own, and two copied ones
_MERGE_OPS = frozenset({"Merge", "RefMerge"})
_NEXT_ITERATION_OPS = frozenset({"NextIteration", "RefNextIteration"})


@dataclasses.dataclass(frozen=True)
class ConstructedEdges:
    """A full graph's edges in TF's ``GraphConstructor`` order, and its nodes in id order."""

    edges: list[EdgeKey]
    nodes: list[str]


def constructed_edges(graph: Graph) -> ConstructedEdges:
    """The edges TF makes converting ``graph``'s GraphDef: node by node, the ready node first in
    GraphDef order; a Merge waits for one data input only when a NextIteration feeds it, whose
    edges (back edges) come after every node's; then the source and sink links."""
    nodes = graph.nodes
    index = {node.name: i for i, node in enumerate(nodes)}
    next_iterations = {n.name for n in nodes if n.op in _NEXT_ITERATION_OPS}
    pending: list[int] = []
    outputs: list[list[int]] = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        sources = [src for src, _ in node.inputs] + node.control_inputs
        pending.append(len(sources))
        if node.op in _MERGE_OPS and any(src in next_iterations for src, _ in node.inputs):
            pending[i] = len(node.control_inputs) + 1
        for src in sources:
            outputs[index[src]].append(i)
    ready = [i for i, count in enumerate(pending) if count == 0]
    made: set[str] = set()
    edges: list[EdgeKey] = []
    back: list[EdgeKey] = []
    order: list[str] = []
    while ready:
        node = nodes[heapq.heappop(ready)]
        order.append(node.name)
        keys = [(src, out, node.name, slot) for slot, (src, out) in enumerate(node.inputs)]
        keys += [(src, -1, node.name, -1) for src in sorted(set(node.control_inputs))]
        for key in keys:
            (edges if key[0] in made else back).append(key)
        made.add(node.name)
        for out in outputs[index[node.name]]:
            if node.name in next_iterations and nodes[out].op in _MERGE_OPS:
                continue
            pending[out] -= 1
            if pending[out] == 0:
                heapq.heappush(ready, out)
    edges += back
    return ConstructedEdges(edges + _source_and_sink_edges(order, edges), order)


def _source_and_sink_edges(nodes: Sequence[str], edges: Sequence[EdgeKey]) -> list[EdgeKey]:
    """TF's ``FixupSourceAndSinkEdges``: the source to each node without in-edges, each node
    without out-edges to the sink, in node order."""
    has_in = {e[2] for e in edges}
    has_out = {e[0] for e in edges}
    added: list[EdgeKey] = []
    for name in nodes:
        if name not in has_in:
            added.append((SOURCE, -1, name, -1))
        if name not in has_out:
            added.append((name, -1, SINK, -1))
    return added


def client_edge_ids(
    full: Graph, constructed: ConstructedEdges, client: ClientGraph
) -> dict[EdgeKey, int]:
    """The ids TensorFlow's client graph gives the edges of ``client`` (see the module docstring).

    ``full`` is the graph ``client`` was rewritten from; ``constructed`` its
    :func:`constructed_edges`.
    """
    edges = list(constructed.edges)
    removed: set[int] = set()
    out_edges: dict[str, list[int]] = {}
    fed = {parse_tensor_name(feed)[0] for feed in client.feeds}
    for i, (src, _, _, _) in enumerate(edges):
        if src in fed:
            out_edges.setdefault(src, []).append(i)
    for feed, feed_node in zip(client.feeds, client.feed_nodes, strict=True):
        src, out = parse_tensor_name(feed)
        placeholder = full[src].op in _PLACEHOLDERS
        edges.append((SOURCE, -1, feed_node, -1))
        for i in out_edges.get(src, ()):
            _, src_out, dst, dst_in = edges[i]
            if i in removed or not (src_out == out or (src_out == -1 and placeholder)):
                continue
            removed.add(i)
            edges.append(
                (feed_node, 0, dst, dst_in) if src_out == out else (feed_node, -1, dst, -1)
            )
    for fetch, fetch_node in zip(client.fetches, client.fetch_nodes, strict=True):
        src, out = parse_tensor_name(fetch)
        edges += [(src, out, fetch_node, 0), (fetch_node, -1, SINK, -1)]
    alive = {SOURCE, SINK, *(node.name for node in client.graph)}
    kept = [e for i, e in enumerate(edges) if i not in removed and e[0] in alive and e[2] in alive]
    nodes = [*constructed.nodes, *client.feed_nodes, *client.fetch_nodes]
    kept += _source_and_sink_edges([n for n in nodes if n in alive], kept)
    ids: dict[EdgeKey, int] = {}
    for i, edge in enumerate(kept):
        ids.setdefault(edge, _FIRST_ID + i)
    return ids


def client_node_order(constructed: ConstructedEdges, client: ClientGraph) -> list[str]:
    """The nodes of ``client`` in the order of their ids in TF's client graph: the full graph's
    as its GraphConstructor made them, then the feed nodes, then the fetch nodes."""
    alive = client.graph
    nodes = [*constructed.nodes, *client.feed_nodes, *client.fetch_nodes]
    return [name for name in nodes if name in alive]
