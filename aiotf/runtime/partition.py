"""Partitioning: one graph per device, cross-device edges replaced by ``_Send``/``_Recv`` pairs.

Design. Every node has an assigned device. A data edge ``src:i -> dst`` whose ends are on
different devices becomes ``src:i -> _Send`` on the source device and ``_Recv -> dst`` on the
destination device; one pair serves every consumer of ``src:i`` on that destination device
(deduplicated by ``(src, i, destination)``). A control edge across devices is carried by a tiny
tensor, as TensorFlow does: an empty float Const ``<src>/ctrl/_<n>`` on the source device that
runs after ``src`` (control edge) is sent to the destination, where an Identity of the ``_Recv``
becomes the control input of ``dst``.

Loops across devices (TensorFlow's ``AddControlFlow``). A ``_Recv`` with no inputs would run
once, in the root frame; inside a while loop it must run once per iteration of its frame, on a
device that may hold no Enter, Merge or LoopCond of that loop. So, before splitting a graph with
control flow on two or more devices:

1. ``Switch`` moves to its data input's device, ``Exit`` to its input's, and ``Enter`` (not a
   ref) and ``NextIteration`` to their first data consumer's (``colocate_control_flow``).
2. The frame of every node is computed (``runtime/control_flow_info.py``). For each edge across
   devices whose ends share a non-root frame F, the destination device gets a *control loop* for
   F, once per (frame, device): ``_cloop<dst>/_<n>`` nodes ``Enter(frame F) -> Merge(enter,
   next) -> Switch(merge, LoopCond) -> NextIteration(switch:1)``, all float. Its ``LoopCond`` is
   F's own, on the frame's leader device, and arrives through a ``_Recv`` like any other input:
   each iteration the Merge fires, and the leader's predicate either sends it round again or
   (false: a dead NextIteration) ends the frame on this device. So every device runs the same
   iterations of F, and an iteration's rendezvous keys (frame and iteration) agree between
   them. For nested frames the loops stack: the outer loop's Merge feeds the inner Enter, and
   the outermost Enter takes an empty root-frame Const ``<dst>/_<n>``.
3. While splitting, the ``_Recv`` of such an edge gets a control input from its frame's
   control-loop Merge on its device, so it runs in that frame, once per iteration, with the
   iteration's rendezvous key. When the edge reuses a ``_Recv`` made earlier, the Merge becomes
   a control input of ``dst`` instead, as TensorFlow leaves it.

A frame that stays on one device gets nothing; a graph on one device, or without control flow,
is split as it is (the executor then checks its frames).

The pair shares a ``tensor_name`` of TensorFlow's form ``edge_<id>_<src>``; together with the
devices and the sender's incarnation it forms the rendezvous key (``runtime/rendezvous.py``). The
id is the edge's id in TF's client graph when the caller knows them (``edge_ids``, from
``subgraph.client_edge_ids``): then the edges control loops add are numbered on as TF's
``AddControlFlow`` makes them, loops are added in edge-id order, a node's control inputs are
visited in edge-id order, and an edge nobody numbered (a pass added it) takes the next free id.
Without ``edge_ids`` the pairs are numbered 1, 2, ... as they are made. Likewise nodes are split
in TF's node-id order when the caller gives it (``node_order``; new nodes after), else in graph
order: that order is the order new nodes are numbered in.
New node names are ``<src>/_<n>`` (control loops: ``_cloop<dst>/_<n>``, their Const
``<dst>/_<n>``), ``n`` counting up across the session's builds (the caller's counter), as
TensorFlow names them; control loops are named first.

State while splitting (``_Splitter``): ``parts`` (device -> partition; each holds copies of its
nodes and the new ones), ``recv_of[(src, output or -1, device)]`` (the node on ``device`` that
carries that tensor or control edge: a ``_Recv``, or the Identity after a control edge's
``_Recv``; made once, then reused) and ``loops`` (the control loops by (frame, device); None
when no frame spans devices).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from aiotf.framework import dtypes, errors
from aiotf.framework.op_def_registry import lookup
from aiotf.runtime import control_flow_info
from aiotf.runtime.control_flow_info import ROOT, ControlFlowInfo, Frame
from aiotf.runtime.graph import Graph, Node
from aiotf.runtime.subgraph import EdgeKey

_SWITCH_OPS = frozenset({"Switch", "RefSwitch"})
_NEXT_ITERATION_OPS = frozenset({"NextIteration", "RefNextIteration"})
_CONTROL_FLOW_OPS = (
    _SWITCH_OPS | _NEXT_ITERATION_OPS | control_flow_info.ENTER_OPS | control_flow_info.EXIT_OPS
)


class _Namer:
    """New node names (``<prefix>/_<n>``) and the ids of edges (see the module docstring)."""

    def __init__(
        self, taken: Graph, counter: Iterator[int], edge_ids: dict[EdgeKey, int] | None = None
    ) -> None:
        self._taken = taken
        self._counter = counter
        self.edge_ids = edge_ids
        self._next_id = max(edge_ids.values(), default=0) + 1 if edge_ids is not None else 1

    def node_name(self, prefix: str) -> str:
        while True:
            name = f"{prefix}/_{next(self._counter)}"
            if name not in self._taken:
                return name

    def edge_id(self, edge: EdgeKey) -> int:
        """``edge``'s id; one not numbered yet gets the next free id."""
        if self.edge_ids is None:
            self._next_id += 1
            return self._next_id - 1
        found = self.edge_ids.get(edge)
        if found is None:
            found = self.edge_ids[edge] = self._next_id
            self._next_id += 1
        return found

    def add_edges(self, *edges: EdgeKey) -> None:
        """Number edges as they are made (when the caller's ids are kept)."""
        if self.edge_ids is not None:
            for edge in edges:
                self.edge_id(edge)

    def order(self, edges: list[EdgeKey]) -> list[EdgeKey]:
        """``edges`` in id order when ids are known (unnumbered ones last, as they were)."""
        if self.edge_ids is None:
            return edges
        ids = self.edge_ids
        return sorted(edges, key=lambda e: ids.get(e, len(ids) + 1_000_000_000))


def partition(
    graph: Graph,
    incarnations: Mapping[str, int],
    counter: Iterator[int] | None = None,
    edge_ids: Mapping[EdgeKey, int] | None = None,
    node_order: Sequence[str] = (),
) -> dict[str, Graph]:
    """Split ``graph`` (every node placed) by device; ``incarnations`` maps device -> incarnation.

    ``counter`` numbers the new nodes (a fresh count from 0 when not given); ``edge_ids`` are
    TF's ids of ``graph``'s edges, which name the pairs, and ``node_order`` the order of TF's
    node ids. ``graph`` is not changed: a graph with control flow is copied before its nodes move
    and loops are added.
    """
    counter = counter if counter is not None else itertools.count()
    ids = dict(edge_ids) if edge_ids is not None else None
    loops = None
    if _spans_devices(graph) and any(node.op in _CONTROL_FLOW_OPS for node in graph):
        graph = graph.copy()
        colocate_control_flow(graph)
        loops = add_control_flow(graph, counter, ids)
    splitter = _Splitter(graph, incarnations, _Namer(graph, counter, ids), loops)
    ordered = [name for name in node_order if name in graph]
    known = set(ordered)
    for name in [*ordered, *(n.name for n in graph if n.name not in known)]:
        splitter.split(graph[name])
    return splitter.parts


def _spans_devices(graph: Graph) -> bool:
    devices = {node.assigned_device for node in graph}
    return len(devices) > 1


# -- control flow across devices -------------------------------------------------------------


def colocate_control_flow(graph: Graph) -> bool:
    """TensorFlow's ``OptimizeControlFlowColocation``; whether a node moved.

    Switch goes with its data input, Exit with its input, a non-ref Enter and a NextIteration
    with their first data consumer (in graph order); nodes are visited producers first.
    """
    first_consumer: dict[str, Node] = {}
    for node in graph:
        for src, _ in node.inputs:
            first_consumer.setdefault(src, node)
    changed = False
    for node in graph.topological_order():
        device = _colocated_device(graph, node, first_consumer)
        if device is not None and device != node.assigned_device:
            node.assigned_device = device
            changed = True
    return changed


def _colocated_device(graph: Graph, node: Node, first_consumer: dict[str, Node]) -> str | None:
    op = node.op
    if op in _SWITCH_OPS or op in control_flow_info.EXIT_OPS:
        return graph[node.inputs[0][0]].assigned_device if node.inputs else None
    if (op == "Enter" and not node.input_dtypes()[0].is_ref_dtype) or op in _NEXT_ITERATION_OPS:
        consumer = first_consumer.get(node.name)
        return consumer.assigned_device if consumer is not None else None
    return None


@dataclasses.dataclass(slots=True)
class _ControlLoop:
    enter: Node
    merge: Node


class ControlLoops:
    """The control loops added to a graph, by (frame, device), and the graph's frames."""

    def __init__(self, info: ControlFlowInfo) -> None:
        self.info = info
        self.loops: dict[tuple[str, str], _ControlLoop] = {}

    def frame_of_edge(self, src: Node, dst: Node) -> str:
        """The non-root frame both ends of ``src -> dst`` are in, else ``ROOT``."""
        frame = self.info.output_frame(src)
        return frame if frame == self.info.input_frame(dst) else ROOT

    def merge_for(self, src: Node, dst: Node) -> str | None:
        """The control-loop Merge a ``_Recv`` for ``src -> dst`` (across devices) waits for."""
        frame = self.frame_of_edge(src, dst)
        if frame == ROOT:
            return None
        return self.loops[frame, dst.assigned_device].merge.name


def add_control_flow(
    graph: Graph, counter: Iterator[int], edge_ids: dict[EdgeKey, int] | None = None
) -> ControlLoops | None:
    """TensorFlow's ``AddControlFlow``: control loops for every frame that spans devices.

    Adds them to ``graph`` (``counter`` numbers their names, and ``edge_ids``, when given, gets
    the ids of their edges); None when no frame spans devices.
    """
    namer = _Namer(graph, counter, edge_ids)
    loops = ControlLoops(control_flow_info.build(graph))
    for src, _, dst, _ in namer.order(_edges(graph)):  # a snapshot: not the loops' own edges
        src_node, node = graph[src], graph[dst]
        if src_node.assigned_device == node.assigned_device:
            continue
        frame = loops.frame_of_edge(src_node, node)
        if frame != ROOT:
            _add_control_loops(graph, namer, loops, frame, node)
    return loops if loops.loops else None


def _edges(graph: Graph) -> list[EdgeKey]:
    """Every edge of ``graph``, node by node: data inputs by slot, then control inputs."""
    edges: list[EdgeKey] = []
    for node in graph:
        edges += [(src, out, node.name, slot) for slot, (src, out) in enumerate(node.inputs)]
        edges += [(src, -1, node.name, -1) for src in node.control_inputs]
    return edges


def _add_control_loops(
    graph: Graph, namer: _Namer, loops: ControlLoops, frame: str, dst: Node
) -> None:
    """A control loop for ``frame`` on ``dst``'s device, stacked in those of its outer frames."""
    device = dst.assigned_device
    info = loops.info
    child: _ControlLoop | None = None
    while frame != ROOT:
        existing = loops.loops.get((frame, device))
        if existing is not None:
            if child is not None:
                _feed_enter(namer, child, existing.merge.name)
            return
        record = info.frames[frame]
        loop = loops.loops[frame, device] = _add_control_loop(graph, namer, info, record, dst)
        if child is not None:
            _feed_enter(namer, child, loop.merge.name)
        frame, child = record.parent, loop
    if child is not None:
        const = graph.add(_empty_const(namer.node_name(dst.name), device))
        info.frame_of[const.name] = info.parent_of[const.name] = ROOT
        _feed_enter(namer, child, const.name)


def _feed_enter(namer: _Namer, loop: _ControlLoop, src: str) -> None:
    loop.enter.inputs = [(src, 0)]
    namer.add_edges((src, 0, loop.enter.name, 0))


def _add_control_loop(
    graph: Graph, namer: _Namer, info: ControlFlowInfo, frame: Frame, dst: Node
) -> _ControlLoop:
    """``Enter -> Merge(enter, next) -> Switch(merge, LoopCond) -> NextIteration(switch:1)``.

    On ``dst``'s device, in ``frame``; the Enter's input is set by the caller.
    """
    if frame.loop_cond is None or frame.enter is None:
        raise errors.InvalidArgumentError(
            None, None, f"A cross-device loop must have a pivot predicate: {frame.name}"
        )
    device = dst.assigned_device
    enter, merge, switch, next_ = (f"_cloop{namer.node_name(dst.name)}" for _ in range(4))
    float32 = dtypes.float32
    enter_attrs = {
        **lookup("Enter").default_attrs(),
        "T": float32,
        "frame_name": frame.enter.attrs["frame_name"],
        "parallel_iterations": frame.enter.attrs.get("parallel_iterations", 10),
    }
    nodes = [
        _node(enter, "Enter", enter_attrs, [], device),
        _node(merge, "Merge", {"T": float32, "N": 2}, [(enter, 0), (next_, 0)], device),
        _node(switch, "Switch", {"T": float32}, [(merge, 0), (frame.loop_cond.name, 0)], device),
        _node(next_, "NextIteration", {"T": float32}, [(switch, 1)], device),
    ]
    for node in nodes:
        graph.add(node)
        info.frame_of[node.name], info.parent_of[node.name] = frame.name, frame.parent
    namer.add_edges(  # in the order TF's AddControlLoop makes them
        (merge, 0, switch, 0),
        (frame.loop_cond.name, 0, switch, 1),
        (switch, 1, next_, 0),
        (enter, 0, merge, 0),
        (next_, 0, merge, 1),
    )
    return _ControlLoop(nodes[0], nodes[1])


def _node(
    name: str, op: str, attrs: dict[str, object], inputs: list[tuple[str, int]], device: str
) -> Node:
    return Node(name, lookup(op), attrs, inputs, requested_device=device, assigned_device=device)


def _empty_const(name: str, device: str, control_inputs: list[str] | None = None) -> Node:
    """An empty float Const: the tensor that carries a control edge or starts a control loop."""
    node = _node(
        name,
        "Const",
        {"value": np.zeros((0,), dtype=np.float32), "dtype": dtypes.float32},
        [],
        device,
    )
    node.control_inputs = control_inputs or []
    return node


# -- splitting -------------------------------------------------------------------------------


class _Splitter:
    """The partitions being built from ``graph`` (see the module docstring for the state)."""

    def __init__(
        self,
        graph: Graph,
        incarnations: Mapping[str, int],
        namer: _Namer,
        loops: ControlLoops | None,
    ) -> None:
        self.graph = graph
        self.incarnations = incarnations
        self.namer = namer
        self.loops = loops
        self.parts: dict[str, Graph] = {}
        for node in graph:
            self.parts.setdefault(node.assigned_device, Graph()).add(node.copy())
        self.recv_of: dict[tuple[str, int, str], str] = {}

    def split(self, node: Node) -> None:
        """Give ``node``'s copy its inputs: local ones as they are, remote ones through a pair."""
        dst_device = node.assigned_device
        copy = self.parts[dst_device][node.name]
        unused: list[str] = []  # control-loop Merges whose Recv already existed
        for slot, (src, index) in enumerate(node.inputs):
            src_node = self.graph[src]
            if src_node.assigned_device != dst_device:
                edge = (src, index, node.name, slot)
                copy.inputs[slot] = (self.carrier(src_node, edge, node, unused), 0)
        controls = []
        edges = self.namer.order([(src, -1, node.name, -1) for src in node.control_inputs])
        for edge in edges:
            src_node = self.graph[edge[0]]
            if src_node.assigned_device == dst_device:
                controls.append(src_node.name)
            else:
                controls.append(self.carrier(src_node, edge, node, unused))
        copy.control_inputs = controls + unused

    def carrier(self, src: Node, edge: EdgeKey, dst: Node, unused: list[str]) -> str:
        """The node on ``dst``'s device carrying ``edge`` (from ``src``; a control edge's output
        is -1) to ``dst``."""
        dst_device = dst.assigned_device
        index = edge[1]
        key = (src.name, index, dst_device)
        merge = self.loops.merge_for(src, dst) if self.loops is not None else None
        existing = self.recv_of.get(key)
        if existing is not None:
            if merge is not None:
                unused.append(merge)
            return existing
        if index < 0:
            name = self._control_pair(src, edge, dst_device, merge)
        else:
            name = self._pair(src, index, self.namer.edge_id(edge), dst_device, merge)
        self.recv_of[key] = name
        return name

    def _pair(
        self,
        src: Node,
        index: int,
        edge_id: int,
        dst_device: str,
        merge: str | None,
        edge_src: str = "",
    ) -> str:
        """A new pair for ``src:index``; its ``_Recv`` waits for ``merge`` (a control loop's)."""
        namer = self.namer
        src_device = src.assigned_device
        dtype = src.output_dtypes[index].base_dtype
        common = {
            "tensor_name": f"edge_{edge_id}_{edge_src or src.name}".encode(),
            "send_device": src_device.encode(),
            "send_device_incarnation": self.incarnations[src_device],
            "recv_device": dst_device.encode(),
            "client_terminated": False,
        }
        send = _node(
            namer.node_name(edge_src or src.name),
            "_Send",
            {"T": dtype, **common},
            [(src.name, index)],
            src_device,
        )
        recv = _node(
            namer.node_name(edge_src or src.name),
            "_Recv",
            {"tensor_type": dtype, **common},
            [],
            dst_device,
        )
        if merge is not None:
            recv.control_inputs = [merge]
        self.parts[src_device].add(send)
        self.parts[dst_device].add(recv)
        return recv.name

    def _control_pair(self, src: Node, edge: EdgeKey, dst_device: str, merge: str | None) -> str:
        """A new pair carrying a control edge from ``src``: dummy Const, Send, Recv, Identity."""
        src_device = src.assigned_device
        dummy = _empty_const(self.namer.node_name(f"{src.name}/ctrl"), src_device, [src.name])
        self.parts[src_device].add(dummy)
        recv = self._pair(dummy, 0, self.namer.edge_id(edge), dst_device, merge, src.name)
        identity = _node(
            self.namer.node_name(src.name),
            "Identity",
            {"T": dtypes.float32},
            [(recv, 0)],
            dst_device,
        )
        self.parts[dst_device].add(identity)
        return identity.name
