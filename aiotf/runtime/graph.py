"""The graph compiler's IR: a mutable graph of :class:`Node` objects (TensorFlow's ``core/graph``).

The client's Graph is append-only and speaks protos; the compiler copies, rewrites, prunes and
partitions, so it works on this lighter form: a Node holds its op's OpDef, attrs as Python values
(decoded once), data inputs as ``(producer name, output index)`` and control inputs as names.
Nodes are never shared between two graphs that are mutated: :meth:`Graph.copy` copies them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from aiotf.framework import attr_value, dtypes, errors, op_def_registry
from aiotf.framework.op_def_registry import OpDef
from aiotf.kernels.registry import KernelNode
from aiotf.proto import GraphDef, NameAttrList, NodeDef


class Node:
    """One node: its identity, inputs, attrs, requested and assigned device."""

    __slots__ = (
        "_input_dtypes",
        "assigned_device",
        "attrs",
        "control_inputs",
        "inputs",
        "name",
        "op_def",
        "output_dtypes",
        "requested_device",
    )

    def __init__(
        self,
        name: str,
        op_def: OpDef,
        attrs: dict[str, Any],
        inputs: list[tuple[str, int]] | None = None,
        control_inputs: list[str] | None = None,
        requested_device: str = "",
        assigned_device: str = "",
    ) -> None:
        self.name = name
        self.op_def = op_def
        self.attrs = attrs
        self.inputs = inputs if inputs is not None else []
        self.control_inputs = control_inputs if control_inputs is not None else []
        self.requested_device = requested_device
        self.assigned_device = assigned_device
        self.output_dtypes: tuple[dtypes.DType, ...] = tuple(
            op_def_registry.output_types(op_def, attrs)
        )
        self._input_dtypes: tuple[dtypes.DType, ...] | None = None

    @property
    def op(self) -> str:
        return self.op_def.name

    @property
    def is_stateful(self) -> bool:
        return self.op_def.is_stateful

    def input_dtypes(self) -> tuple[dtypes.DType, ...]:
        """The dtypes this node expects on its inputs (worked out once: ``op_def`` and
        ``attrs`` never change, an optimizer pass makes a new node instead)."""
        if self._input_dtypes is None:
            self._input_dtypes = tuple(op_def_registry.input_types(self.op_def, self.attrs))
        return self._input_dtypes

    def kernel_node(self, device: str) -> KernelNode:
        """What this node's kernel may know about it, on ``device`` (a device name)."""
        return KernelNode(
            self.name,
            self.op,
            self.attrs,
            self.input_dtypes(),
            self.output_dtypes,
            device,
            tuple(src if k == 0 else f"{src}:{k}" for src, k in self.inputs),
        )

    def copy(self) -> Node:
        clone = Node.__new__(Node)
        clone.name = self.name
        clone.op_def = self.op_def
        clone.attrs = self.attrs  # never mutated in place: replaced when changed
        clone.inputs = list(self.inputs)
        clone.control_inputs = list(self.control_inputs)
        clone.requested_device = self.requested_device
        clone.assigned_device = self.assigned_device
        clone.output_dtypes = self.output_dtypes
        clone._input_dtypes = self._input_dtypes
        return clone

    def to_node_def(self) -> Any:
        node = NodeDef(
            name=self.name, op=self.op, device=self.assigned_device or self.requested_device
        )
        node.input.extend(src if idx == 0 else f"{src}:{idx}" for src, idx in self.inputs)
        node.input.extend("^" + c for c in self.control_inputs)
        for key, value in self.attrs.items():
            attr_def = self.op_def.attrs.get(key)
            node.attr[key].CopyFrom(attr_value.encode(value, attr_def.type if attr_def else None))
        return node

    def __repr__(self) -> str:
        return f"<Node {self.name} {self.op} on {self.assigned_device or self.requested_device or '?'}>"


SignatureLookup = Callable[[str], OpDef | None]


def node_from_def(node_def: Any, signature_of: SignatureLookup | None = None) -> Node:
    """A Node for ``node_def``, with default attrs filled; unknown ops are ``NotFoundError``.

    ``signature_of`` finds the OpDef of a library function by name. A node whose op type names a
    function is looked up there before the op registry, and becomes a call of that function (a
    ``StatefulPartitionedCall`` with ``f`` = the function and the node's attrs), which the runtime
    knows how to place and run.
    """
    signature = signature_of(node_def.op) if signature_of is not None else None
    if signature is not None:
        return _call_node(node_def, signature)
    op_def = op_def_registry.get(node_def.op)
    if op_def is None:
        raise errors.NotFoundError(
            node_def,
            None,
            f"Op type not registered '{node_def.op}' in binary running aiotf, used by node "
            f"'{node_def.name}'",
        )
    attrs = op_def.default_attrs()
    for key, value in node_def.attr.items():
        attrs[key] = attr_value.decode(value)
    inputs, controls = _parse_inputs(node_def)
    return Node(node_def.name, op_def, attrs, inputs, controls, node_def.device)


def _parse_inputs(node_def: Any) -> tuple[list[tuple[str, int]], list[str]]:
    inputs: list[tuple[str, int]] = []
    controls: list[str] = []
    for ref in node_def.input:
        if ref.startswith("^"):
            controls.append(ref[1:])
        else:
            inputs.append(parse_tensor_name(ref))
    return inputs, controls


def _call_node(node_def: Any, signature: OpDef) -> Node:
    """``node_def`` (whose op is the function ``signature``) as a call of that function."""
    fn_attrs = signature.default_attrs()
    fn_attrs.update((k, attr_value.decode(v)) for k, v in node_def.attr.items())
    func = NameAttrList(name=node_def.op)
    for key, value in node_def.attr.items():
        func.attr[key].CopyFrom(value)
    call_def = op_def_registry.lookup("StatefulPartitionedCall")
    attrs = call_def.default_attrs()
    attrs.update(
        Tin=op_def_registry.input_types(signature, fn_attrs),
        Tout=op_def_registry.output_types(signature, fn_attrs),
        f=func,
    )
    inputs, controls = _parse_inputs(node_def)
    return Node(node_def.name, call_def, attrs, inputs, controls, node_def.device)


def parse_tensor_name(ref: str) -> tuple[str, int]:
    """``"x:1"`` -> ``("x", 1)``; ``"x"`` -> ``("x", 0)``."""
    name, sep, index = ref.rpartition(":")
    if sep and index.isdigit():
        return name, int(index)
    return ref, 0


class Graph:
    """Nodes by name, in insertion order."""

    def __init__(self, nodes: Iterable[Node] = ()) -> None:
        self._nodes: dict[str, Node] = {}
        for node in nodes:
            self.add(node)

    def add(self, node: Node) -> Node:
        if node.name in self._nodes:
            raise errors.InvalidArgumentError(None, None, f"Node '{node.name}' is not unique")
        self._nodes[node.name] = node
        return node

    def replace(self, node: Node) -> None:
        """Put ``node`` where the node of its name was (in insertion order)."""
        if node.name not in self._nodes:
            raise KeyError(node.name)
        self._nodes[node.name] = node

    def remove(self, name: str) -> None:
        del self._nodes[name]

    def get(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def __getitem__(self, name: str) -> Node:
        return self._nodes[name]

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self._nodes.values()))

    def __len__(self) -> int:
        return len(self._nodes)

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes.values())

    def copy(self) -> Graph:
        return Graph(n.copy() for n in self._nodes.values())

    def unique_name(self, prefix: str) -> str:
        """A name not yet in the graph: ``prefix`` or ``prefix_1``..."""
        if prefix not in self._nodes:
            return prefix
        i = 1
        while f"{prefix}_{i}" in self._nodes:
            i += 1
        return f"{prefix}_{i}"

    def consumers(self) -> dict[str, list[Node]]:
        """Producer name -> the nodes that take one of its outputs or a control edge from it."""
        out: dict[str, list[Node]] = {name: [] for name in self._nodes}
        for node in self._nodes.values():
            for src, _ in node.inputs:
                out[src].append(node)
            for src in node.control_inputs:
                out[src].append(node)
        return out

    def to_graph_def(self) -> Any:
        graph_def = GraphDef()
        graph_def.node.extend(n.to_node_def() for n in self._nodes.values())
        return graph_def

    # TensorFlow's Graph::NewName counter: per graph, never reused, not carried by copy().
    _name_counter = 0

    def new_name(self, prefix: str) -> str:
        """TensorFlow's ``Graph::NewName``: ``prefix/_<n>``, ``n`` counting up per graph."""
        name = f"{prefix}/_{self._name_counter}"
        self._name_counter += 1
        return name

    def topological_order(self) -> list[Node]:
        """Producers before consumers (Kahn's algorithm, ties in insertion order).

        A loop's back edge (a NextIteration's output) does not count, so loop bodies are ordered
        too; nodes left on any other cycle come last, in insertion order.
        """
        nodes = self._nodes.values()
        consumers = self.consumers()
        pending = {n.name: len(n.inputs) + len(n.control_inputs) for n in nodes}  # every edge
        back_edge = {n.name for n in nodes if n.op.endswith("NextIteration")}
        for name in back_edge:  # ... but a loop's back edges
            for consumer in consumers[name]:  # once per edge, as counted
                pending[consumer.name] -= 1
        order = [n for n in nodes if pending[n.name] == 0]
        for node in order:  # grows while it is walked: a FIFO queue
            for consumer in () if node.name in back_edge else consumers[node.name]:
                pending[consumer.name] -= 1
                if pending[consumer.name] == 0:
                    order.append(consumer)
        seen = {n.name for n in order}
        return order + [n for n in nodes if n.name not in seen]
