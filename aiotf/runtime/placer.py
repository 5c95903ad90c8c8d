"""The Placer: assigns every node a device, as TensorFlow's ``Placer`` and ``ColocationGraph`` do.

Colocation groups come first (``_ColocationGraph``: union-find by rank over the nodes, each root
holding its group's constraints), built in TensorFlow's order:

1. Every node is a member with its own constraints: the device it is already assigned, the
   device it requests (a partial spec), and the device types with a kernel for it (none at all:
   TF's "No OpKernel was registered" error, listing the registered kernels). A node that
   *generates* a ref or resource (no inputs, one ref or resource output: VariableV2,
   VarHandleOp) requests a *resource device*, which no consumer's request overrides.
2. Ref and resource edges, in graph order: the consumer of a variable's ref or of a resource
   handle joins its producer's group (state cannot cross devices). When their requests conflict,
   the consumer's gives way: an ``Assign`` on /cpu:0 of a variable on /cpu:1 runs on CPU:1.
3. ``_class`` attrs (``loc:@name``), in graph order: a node joins each named group, then the
   group of its own name. Joining merges the two groups' requests field by field (TF's
   ``MergeDevNames``); a conflict is TF's "Cannot colocate nodes" error. With
   ``allow_soft_placement`` a conflicting device type or index is dropped instead, and any other
   conflict leaves the node out of that group.

Then nodes are placed one by one in graph order, and the first member placed fixes its group's
device. A group may go to the devices that match its merged request and have a kernel for every
member, by device-type priority, then name; with ``allow_soft_placement`` a request no such
device matches loses its device type and index. Two of TensorFlow's heuristics choose among them:

- A. A *generator* (no inputs, one non-ref output: a Const, a Placeholder) is placed after every
  other node, on its consumers' device when they all share one it may use.
- B. A *metadata* node (Shape, Size, Rank: TF's class, which ShapeN is not) goes with its first
  input when that input is already placed on a device it may use; so does an *Identity* that
  requests no device, has exactly one edge in and one out (a node without consumers has one edge,
  to the graph's sink, which requests nothing) and whose producer and consumer request the very
  same device string (TF's ``MatchIdentityOperation``).

``place`` returns the nodes in the order TensorFlow assigns (and, with ``log_device_placement``,
logs) them: nodes already placed and those of the first pass in graph order, then generators.
Errors carry the failing node's NodeDef and end as TensorFlow's do (``[[{{node n}}]]``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from aiotf.devices.device import Device
from aiotf.devices.device_mgr import DeviceMgr
from aiotf.devices.factory import device_priority
from aiotf.framework import dtypes, errors
from aiotf.framework.device_spec import DeviceSpec
from aiotf.kernels import registry as kernel_registry
from aiotf.proto import types_pb2
from aiotf.runtime.graph import Graph, Node

_METADATA_OPS = frozenset({"Shape", "Size", "Rank"})
_IDENTITY_OPS = frozenset({"Identity", "RefIdentity"})
_ANY = DeviceSpec()


def place(graph: Graph, device_mgr: DeviceMgr, allow_soft_placement: bool = False) -> list[Node]:
    """Assign ``node.assigned_device`` to every node of ``graph`` that has none yet.

    Returns every node in the order TensorFlow places (and logs) them.
    """
    colocation = _ColocationGraph(graph, device_mgr, allow_soft_placement)
    order: list[Node] = []
    generators: list[Node] = []
    consumers = graph.consumers()
    for node in graph:
        if node.assigned_device:
            colocation.limit_to(node, node.assigned_device)
        elif _is_generator(node):  # heuristic A: after its consumers
            generators.append(node)
            continue
        else:
            devices = colocation.devices_for(node)
            hint = ""
            if (node.op in _METADATA_OPS and node.inputs) or _is_identity_like(
                graph, node, consumers
            ):
                hint = graph[node.inputs[0][0]].assigned_device  # heuristic B
            colocation.limit_to(node, hint if hint in devices else devices[0])
        order.append(node)
    for node in generators:
        devices = colocation.devices_for(node)
        placed = {c.assigned_device for c in consumers[node.name]}
        hint = placed.pop() if len(placed) == 1 else ""
        colocation.limit_to(node, hint if hint in devices else devices[0])
        order.append(node)
    return order


def _is_generator(node: Node) -> bool:
    return (
        not node.inputs and len(node.output_dtypes) == 1 and not node.output_dtypes[0].is_ref_dtype
    )


def _is_identity_like(graph: Graph, node: Node, consumers: dict[str, list[Node]]) -> bool:
    """TF's ``MatchIdentityOperation`` (the node has no device yet)."""
    if node.op not in _IDENTITY_OPS or node.requested_device:
        return False
    if len(node.inputs) + len(node.control_inputs) != 1 or len(consumers[node.name]) > 1:
        return False
    consumer = consumers[node.name][0].requested_device if consumers[node.name] else ""  # sink
    return bool(node.inputs) and graph[node.inputs[0][0]].requested_device == consumer


# -- colocation groups -------------------------------------------------------------------------


class _Conflict(Exception):
    """Two device names that cannot be merged; the message is TensorFlow's."""


@dataclasses.dataclass(slots=True)
class _Member:
    """A group's constraints (valid at its root): TF's ``Member``.

    ``requested`` always specializes ``assigned`` and ``resource`` (it names every field they
    name); ``types`` are the device types with a kernel for every member; ``device`` is set once a
    member is placed.
    """

    parent: int
    requested: DeviceSpec = _ANY
    assigned: DeviceSpec = _ANY
    resource: DeviceSpec = _ANY
    types: frozenset[str] = frozenset()
    rank: int = 0
    device: str = ""


class _ColocationGraph:
    def __init__(self, graph: Graph, device_mgr: DeviceMgr, allow_soft: bool) -> None:
        self._graph = graph
        self._allow_soft = allow_soft
        self._devices = sorted(device_mgr, key=lambda d: (-device_priority(d.device_type), d.name))
        self._index = {node.name: i for i, node in enumerate(graph)}
        self._nodes = list(graph)
        self._members = [self._member(i, node) for i, node in enumerate(self._nodes)]
        for node in self._nodes:
            for src in _ref_or_resource_sources(node):
                if src in self._index:
                    self._colocate_ref_edge(graph[src], node)
        groups: dict[str, Node] = {}
        for node in self._nodes:
            for cls in node.attrs.get("_class", ()) or ():
                text = cls.decode() if isinstance(cls, bytes) else str(cls)
                if text.startswith("loc:@"):
                    self._join_group(groups, node, text[5:])
            self._join_group(groups, node, node.name)

    def _member(self, i: int, node: Node) -> _Member:
        types = frozenset(d.device_type for d in self._devices if _has_kernel(node, d))
        member = _Member(i, types=types)
        if node.assigned_device:
            member.assigned = member.requested = DeviceSpec.from_string(node.assigned_device)
            return member
        if not types:
            raise _placement_error(node, _no_kernel_message(node, self._devices))
        spec = _parse_request(node)
        if _is_ref_or_resource_generator(node):
            member.resource = member.requested = spec
        else:
            member.requested = spec
        return member

    def _root(self, i: int) -> int:
        members = self._members
        root = i
        while members[root].parent != root:
            root = members[root].parent
        while members[i].parent != root:  # path compression
            members[i].parent, i = root, members[i].parent
        return root

    def _join_group(self, groups: dict[str, Node], node: Node, group: str) -> None:
        """TF's ``ColocateNodeToGroup``: the group's first node is its anchor."""
        anchor = groups.setdefault(group, node)
        if anchor is node:
            return
        try:
            self._colocate(node, anchor)
        except _Conflict as conflict:
            if not self._allow_soft:
                raise _placement_error(node, str(conflict)) from None

    def _colocate(self, x: Node, y: Node) -> None:
        """Merge the groups of ``x`` and ``y`` (TF's ``ColocateNodes``); ``_Conflict`` if they clash."""
        x_root, y_root = self._root(self._index[x.name]), self._root(self._index[y.name])
        if x_root == y_root:
            return
        members = self._members
        new, old = (
            (y_root, x_root) if members[x_root].rank < members[y_root].rank else (x_root, y_root)
        )
        keep, other = members[new], members[old]
        try:
            assigned = _merge(keep.assigned, other.assigned)
            resource = _merge(keep.resource, other.resource)
            requested = _merge(keep.requested, other.requested, self._allow_soft)
        except _Conflict as conflict:
            raise _Conflict(
                f"Cannot colocate nodes {_coloc(x)} and {_coloc(y)}: {conflict}"
            ) from None
        types = keep.types & other.types
        if not types:
            raise _Conflict(
                f"Cannot colocate nodes {_coloc(x)} and {_coloc(y)} because no device type "
                "supports both of those nodes and the other nodes colocated with them."
            )
        keep.assigned, keep.resource, keep.types = assigned, resource, types
        keep.requested = _specialize(_specialize(requested, assigned), resource)
        if members[x_root].rank == members[y_root].rank:
            keep.rank += 1
        other.parent = new

    def _colocate_ref_edge(self, src: Node, dst: Node) -> None:
        """TF's ``ColocateResourceOrRefEdge``: ``dst`` joins ``src``'s group, giving way to it."""
        source = self._members[self._root(self._index[src.name])]
        target = self._members[self._root(self._index[dst.name])]
        for field in ("assigned", "resource"):
            a, b = getattr(source, field), getattr(target, field)
            if not _compatible(a, b):
                raise _placement_error(
                    dst,
                    "Cannot place the graph because a reference or resource edge connects "
                    f"colocation groups with incompatible {field} devices: {a} vs {b}. The edge "
                    f"src node is {src.name} , and the dst node is {dst.name}",
                    attach=False,
                )
        if not _compatible(source.requested, target.requested):
            target.requested = _specialize(
                _specialize(source.requested, target.assigned), target.resource
            )
        try:
            self._colocate(src, dst)
        except _Conflict as conflict:
            raise _placement_error(
                dst,
                "Nodes were connected by a reference connection (requiring them to be on the "
                f"same device), but the two nodes were assigned two different devices: {conflict}",
            ) from None

    # -- placing ---------------------------------------------------------------------------

    def limit_to(self, node: Node, device: str) -> None:
        """Place ``node`` on ``device``: its whole group goes there (TF's ``AssignDevice``)."""
        node.assigned_device = device
        self._members[self._root(self._index[node.name])].device = device

    def devices_for(self, node: Node) -> list[str]:
        """The devices ``node``'s group may go to, best first (TF's ``GetDevicesForNode``)."""
        root = self._root(self._index[node.name])
        member = self._members[root]
        if member.device:
            return [member.device]
        supported = [d for d in self._devices if d.device_type in member.types]
        if member.requested.is_empty():
            return [d.name for d in supported]
        devices = [d.name for d in supported if member.requested.matches(d.parsed_name)]
        if not devices and self._allow_soft:
            devices = self._soft_candidates(member, supported)
        if not devices:
            raise _placement_error(
                node,
                f"Cannot assign a device for operation {node.name}: "
                + self._unsatisfiable(node, root),
            )
        return devices

    def _soft_candidates(self, member: _Member, supported: Sequence[Device]) -> list[str]:
        """TF's ``GetSoftDeviceCandidates``: the request without the type and index it need not
        keep, first keeping those of the group's resource device, then not."""
        for keep in (_merge(member.assigned, member.resource), member.assigned):
            soft = dataclasses.replace(
                member.requested,
                device_type=member.requested.device_type if keep.device_type else None,
                device_index=member.requested.device_index
                if keep.device_index is not None
                else None,
            )
            devices = [d.name for d in supported if soft.matches(d.parsed_name)]
            if devices:
                return devices
        return []

    def _unsatisfiable(self, node: Node, root: int) -> str:
        """Why no device can take ``node``'s group: TensorFlow's words for each case."""
        merged = self._members[root].requested
        wanted = node.requested_device
        all_devices = [d.name for d in self._devices]
        if _parse_request(node) == merged:
            if not [d for d in self._devices if merged.matches(d.parsed_name)]:
                gpu = (
                    " The requested device appears to be a GPU, but CUDA is not enabled."
                    if (merged.device_type or "").lower() == "gpu"
                    else ""
                )
                return (
                    f"{_node_ref(node)} was explicitly assigned to {wanted} but available devices "
                    f"are [ {', '.join(sorted(all_devices))} ]. Make sure the device "
                    f"specification refers to a valid device.{gpu}"
                )
            if merged.device_type is None:
                return f"Could not satisfy explicit device specification '{wanted}'" + (
                    self._debug_info(root)
                )
            return (
                f"Could not satisfy explicit device specification '{wanted}' because no supported "
                f"kernel for {merged.device_type} devices is available.{self._debug_info(root)}"
                f"\nOp: {node.op}\nNode attrs: {_type_attrs(node)}\nRegistered kernels:\n"
                + _registered_kernels(node.op)
            )
        return (
            f"Could not satisfy explicit device specification '{wanted}' because the node "
            f"{_coloc(node)} was colocated with a group of nodes that required incompatible "
            f"device '{merged}'. All available devices [{', '.join(all_devices)}]. "
            + self._debug_info(root)
        )

    def _debug_info(self, root: int) -> str:
        """TF's ``ColocationGraph::DebugInfo`` for the group at ``root``."""
        member = self._members[root]
        nodes = [n for i, n in enumerate(self._nodes) if self._root(i) == root]
        types = ", ".join(sorted(member.types))
        lines = [
            "\nColocation Debug Info:",
            "Colocation group had the following types and supported devices: ",
            f"Root Member(assigned_device_name_index_=-1 requested_device_name_='"
            f"{member.requested}' assigned_device_name_='{member.assigned}' "
            f"resource_device_name_='{member.resource}' supported_device_types_=[{types}] "
            "possible_devices_=[]",
        ]
        ops = dict.fromkeys(n.op for n in nodes)
        lines += [f"{op}: {types} " for op in ops]
        lines += [
            "",
            "Colocation members, user-requested devices, and framework assigned devices, if any:",
        ]
        for n in nodes:
            assigned = (
                f" framework assigned device={n.assigned_device}" if n.assigned_device else ""
            )
            lines.append(f"  {n.name} ({n.op}) {n.requested_device}{assigned}")
        return "\n".join(lines) + "\n"


# -- device names (TF's DeviceNameUtils) --------------------------------------------------------


def _merge(target: DeviceSpec, other: DeviceSpec, allow_soft: bool = False) -> DeviceSpec:
    """TF's ``MergeDevNames``: ``target`` with the fields ``other`` names; ``_Conflict`` when
    both name one differently. ``allow_soft``: a conflicting type or index is dropped instead."""
    merged = target
    for field, word in (("job", "jobs"), ("replica", "replicas"), ("task", "tasks")):
        value = getattr(other, field)
        if value is not None:
            if getattr(merged, field) not in (None, value):
                raise _Conflict(_incompatible(word, merged, other))
            merged = dataclasses.replace(merged, **{field: value})
    for field, word in (("device_type", "types"), ("device_index", "ids")):
        value = getattr(other, field)
        if value is None:
            continue
        if getattr(merged, field) not in (None, value):
            if not allow_soft:
                raise _Conflict(_incompatible(word, merged, other))
            dropped = {"device_index": None}
            if field == "device_type":
                dropped["device_type"] = None
            return dataclasses.replace(merged, **dropped)
        merged = dataclasses.replace(merged, **{field: value})
    return merged


def _incompatible(word: str, target: DeviceSpec, other: DeviceSpec) -> str:
    return f"Cannot merge devices with incompatible {word}: '{target}' and '{other}'"


def _compatible(a: DeviceSpec, b: DeviceSpec) -> bool:
    """TF's ``AreCompatibleDevNames``: no field named by both differs."""
    return all(
        getattr(a, f) is None or getattr(b, f) is None or getattr(a, f) == getattr(b, f)
        for f in ("job", "replica", "task", "device_type", "device_index")
    )


def _specialize(spec: DeviceSpec, general: DeviceSpec) -> DeviceSpec:
    """TF's ``EnsureSpecification``: ``spec`` with the fields it leaves open taken from ``general``."""
    return DeviceSpec(
        *(
            getattr(spec, f) if getattr(spec, f) is not None else getattr(general, f)
            for f in ("job", "replica", "task", "device_type", "device_index")
        )
    )


def _parse_request(node: Node) -> DeviceSpec:
    if not node.requested_device:
        return _ANY
    try:
        return DeviceSpec.from_string(node.requested_device)
    except ValueError as e:
        raise _placement_error(
            node,
            f"Malformed device specification '{node.requested_device}' in node '{node.name}': {e}",
        ) from None


# -- nodes ---------------------------------------------------------------------------------------


def _ref_or_resource_sources(node: Node) -> list[str]:
    """Producers feeding ``node`` a ref (a variable to update) or a resource handle.

    The consumer works on the producer's state itself, which cannot be sent between devices.
    """
    try:
        wanted = node.input_dtypes()
    except (KeyError, TypeError, ValueError):  # attrs too incomplete to type the inputs
        return []
    return [
        src
        for (src, _), dt in zip(node.inputs, wanted, strict=False)
        if dt.is_ref_dtype or dt.base_dtype is dtypes.resource
    ]


def _is_ref_or_resource_generator(node: Node) -> bool:
    return (
        not node.inputs
        and len(node.output_dtypes) == 1
        and (node.output_dtypes[0].is_ref_dtype or node.output_dtypes[0] == dtypes.resource)
    )


def _has_kernel(node: Node, device: Device) -> bool:
    return kernel_registry.has_kernel(node.op, device.device_type, node.attrs)


def _no_kernel_message(node: Node, devices: Sequence[Device]) -> str:
    """TF's placement error for an op with no kernel for its attrs on any device."""
    return (
        f"No OpKernel was registered to support Op '{node.op}' used by {_node_ref(node)} with "
        f"these attrs: [{_type_attrs(node)}]\nRegistered devices: "
        f"[{', '.join(sorted({d.device_type for d in devices}))}]\nRegistered kernels:\n"
        + _registered_kernels(node.op)
    )


def _registered_kernels(op: str) -> str:
    """TF's ``KernelsRegisteredForOp``: one line per registration, with its type constraints."""
    kernels = kernel_registry.registered_kernels_for_op(op)
    return "".join(f"  {k.describe()}\n" for k in kernels) or "  <no registered kernels>\n"


def _type_attrs(node: Node) -> str:
    return ", ".join(
        f"{key}={types_pb2.DataType.Name(value.as_datatype_enum)}"
        for key, value in sorted(node.attrs.items())
        if isinstance(value, dtypes.DType)
    )


def _node_ref(node: Node) -> str:
    return f"{{{{node {node.name}}}}}"


def _coloc(node: Node) -> str:
    return f"{{{{colocation_node {node.name}}}}}"


def _placement_error(node: Node, message: str, attach: bool = True) -> errors.InvalidArgumentError:
    """An InvalidArgumentError naming ``node``: TF's ``AttachDef`` appends ``[[{{node n}}]]``."""
    suffix = f"\n\t [[{_node_ref(node)}]]" if attach else ""
    return errors.InvalidArgumentError(node.to_node_def(), None, message + suffix)
