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

Errors are TensorFlow's (``subgraph.cc``), checked in its order: an endpoint fed twice or both
fed and fetched, then each feed, each fetch (a node with no outputs, an output index past the
node's outputs) and the targets (every missing one named). A call with nothing to fetch or run
is the caller's to refuse or answer (a callable whose fetches are all fed runs nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiotf.framework import errors
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime.graph import Graph, Node, parse_tensor_name

_PLACEHOLDERS = frozenset({"Placeholder", "PlaceholderV2"})

Edge = tuple[str, int]


def rewrite_for_execution(
    graph: Graph,
    feeds: Sequence[str],
    fetches: Sequence[str],
    targets: Sequence[str],
    client_device: str,
    *,
    use_function_convention: bool = True,
    client_incarnation: int = 0,
) -> Graph:
    """A pruned copy of ``graph`` computing ``fetches`` and running ``targets`` from ``feeds``.

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
    return g


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
