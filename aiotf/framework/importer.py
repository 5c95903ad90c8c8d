"""``import_graph_def``: a GraphDef (from TensorFlow or aiotf) into a Graph.

Three phases, so node order in the GraphDef does not matter and loop back edges
(NextIteration -> Merge) need no special case: create every op from its NodeDef (output types
follow from the attrs alone), wire inputs by name, then infer shapes in topological order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aiotf.framework import attr_value, device_spec, dtypes, errors, op_def_registry
from aiotf.framework.op_def_registry import OpDef
from aiotf.framework.op_defs.functional_ops import signature_op_def
from aiotf.framework.ops import (
    Graph,
    Operation,
    Tensor,
    _complete_attrs,
    _infer_shapes,
    get_default_graph,
)
from aiotf.proto import NodeDef


def import_graph_def(
    graph_def: Any,
    input_map: dict[str, Any] | None = None,
    return_elements: Sequence[str] | None = None,
    name: str | None = None,
    op_dict: Any = None,
    producer_op_list: Any = None,
) -> list[Tensor | Operation] | None:
    """Import ``graph_def`` into the default graph under the prefix ``name`` (default ``import``).

    ``input_map`` maps tensor names in ``graph_def`` to Tensors of the default graph that
    replace them; ``return_elements`` names tensors (``"x:0"``) or ops to return.
    """
    if not hasattr(graph_def, "node"):
        raise TypeError(f"graph_def must be a GraphDef proto, got {type(graph_def).__name__}")
    graph = get_default_graph()
    graph._check_not_finalized()
    prefix = "import" if name is None else name
    with graph._lock:
        scope = graph.unique_name(prefix) + "/" if prefix else ""
        renames = _plan_names(graph, graph_def, scope)
        lookup = _op_lookup(graph, graph_def)
        new_ops = [_create(graph, node, renames[node.name], lookup) for node in graph_def.node]
        by_old_name = {node.name: op for node, op in zip(graph_def.node, new_ops, strict=True)}
        input_map = _normalize_input_map(input_map or {})
        used: set[str] = set()
        for node, op in zip(graph_def.node, new_ops, strict=True):
            _wire(op, node, by_old_name, input_map, used)
        missing = [k for k in input_map if k not in used and not _names_output(k, by_old_name)]
        if missing:
            raise ValueError(
                f"Attempted to map inputs that were not found in graph_def: [{', '.join(missing)}]"
            )
        for op in _topological(new_ops):  # before any op joins: a failed import adds nothing
            _infer_shapes(op, {k: attr_value.decode(v) for k, v in op._attrs.items()})
        for op in new_ops:
            graph._add_op(op)
        if graph_def.HasField("library") and graph_def.library.ByteSize():
            _merge_library(graph, graph_def.library)
    if return_elements is None:
        return None
    return [_return_element(graph, by_old_name, r) for r in return_elements]


def _plan_names(graph: Graph, graph_def: Any, scope: str) -> dict[str, str]:
    renames: dict[str, str] = {}
    for node in graph_def.node:
        if node.name in renames:
            raise ValueError(f"Node '{node.name}' is not unique")
        full = scope + node.name
        if full in graph._ops_by_name or full.lower() in graph._names_in_use:
            with graph.name_scope(None):
                full = graph.unique_name(full)
        else:
            graph._mark_name_used(full)
        renames[node.name] = full
    return renames


def _op_lookup(graph: Graph, graph_def: Any) -> Callable[[str], OpDef | None]:
    """Op type -> OpDef: the functions of ``graph_def`` and ``graph`` first, then the registry."""
    signatures = {f.signature.name: f.signature for f in graph_def.library.function}
    if graph.library is not None:  # on a clash the graph's own function stays (_merge_library)
        signatures.update((f.signature.name, f.signature) for f in graph.library.function)

    def lookup(op_type: str) -> OpDef | None:
        signature = signatures.get(op_type)
        if signature is not None:
            return signature_op_def(signature)
        return op_def_registry.get(op_type)

    return lookup


def _create(
    graph: Graph, node: Any, new_name: str, lookup: Callable[[str], OpDef | None]
) -> Operation:
    op_def = lookup(node.op)
    if op_def is None:
        raise errors.NotFoundError(
            None,
            None,
            f"Op type not registered '{node.op}' in binary running aiotf (node '{node.name}'). "
            "aiotf has no definition for this op type.",
        )
    attrs: dict[str, Any] = dict(node.attr.items())
    for attr_name, a in op_def.attrs.items():
        if attr_name not in attrs:
            if not a.has_default:
                raise ValueError(
                    f"NodeDef missing attr '{attr_name}' from Op<name={node.op}>; "
                    f"NodeDef: {{{{node {node.name}}}}}"
                )
            attrs[attr_name] = attr_value.encode(a.default, a.type)
    try:
        output_types = op_def_registry.output_types(
            op_def, {k: attr_value.decode(v) for k, v in attrs.items()}
        )
        _complete_attrs(op_def, attrs, node.name)
    except (TypeError, KeyError) as e:
        raise ValueError(f"Node '{node.name}' of type {node.op} has bad attrs: {e}") from None
    # An enclosing ``device`` scope fills the fields the NodeDef's own device leaves open (TF).
    device = device_spec.merge(graph._current_device(), node.device)
    op = Operation(graph, new_name, op_def, attrs, output_types, device, None)
    original = NodeDef()
    original.CopyFrom(node)
    op._original_node_def = original
    return op


def _names_output(key: str, by_old_name: dict[str, Operation]) -> bool:
    """Whether an input_map key names something of the GraphDef: a control input (``^x``,
    which TensorFlow may remap; aiotf keeps the GraphDef's), or an output of one of its nodes.
    TensorFlow refuses the keys that name nothing."""
    if key.startswith("^"):
        return True
    name, _, index = key.rpartition(":")
    op = by_old_name.get(name)
    return op is not None and int(index) < len(op._outputs)


def _normalize_input_map(input_map: dict[str, Any]) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for key, value in input_map.items():
        if not isinstance(value, Tensor):
            raise TypeError(
                f"input_map values must be Tensors, got {type(value).__name__} for {key!r}"
            )
        out[key if ":" in key or key.startswith("^") else key + ":0"] = value
    return out


def _wire(
    op: Operation,
    node: Any,
    by_old_name: dict[str, Operation],
    input_map: dict[str, Tensor],
    used: set[str],
) -> None:
    """``op``'s inputs and control inputs as ``node`` names them, ``input_map`` first (its keys
    that served go in ``used``); each input of the dtype its op expects, as TensorFlow's
    importer checks."""
    for ref in node.input:
        if ref.startswith("^"):
            src = by_old_name.get(ref[1:])
            if src is None:
                raise ValueError(f"Node '{node.name}': Unknown input node '{ref}'")
            op._control_inputs.append(src)
            continue
        src_name, _, index_text = ref.partition(":")
        index = int(index_text) if index_text else 0
        key = f"{src_name}:{index}"
        mapped = input_map.get(key)
        if mapped is not None:
            op._inputs.append(mapped)
            used.add(key)
            continue
        src = by_old_name.get(src_name)
        if src is None:
            raise ValueError(f"Node '{node.name}': Unknown input node '{ref}'")
        if index >= len(src._outputs):
            raise ValueError(
                f"Node '{node.name}': Connecting to invalid output {index} of source node "
                f"{src_name} which has {len(src._outputs)} outputs."
            )
        op._inputs.append(src._outputs[index])
    _check_input_types(op, node)


def _check_input_types(op: Operation, node: Any) -> None:
    if not op._inputs:
        return
    types = {
        a for arg in op.op_def.inputs for a in (arg.type_attr, arg.number_attr, arg.type_list_attr)
    }
    decoded = {k: attr_value.decode(v) for k, v in op._attrs.items() if k in types}
    try:
        expected = op_def_registry.input_types(op.op_def, decoded)
    except (KeyError, TypeError):  # attrs the op def's checks report (_create)
        return
    for i, (given, want) in enumerate(zip((t.dtype for t in op._inputs), expected, strict=False)):
        if given.base_dtype is not want.base_dtype or (
            want.is_ref_dtype and not given.is_ref_dtype
        ):
            raise ValueError(
                f"Input {i} of node {node.name} was passed {_type_string(given)} from "
                f"{op._inputs[i].name} incompatible with expected {_type_string(want)}."
            )


def _type_string(dtype: dtypes.DType) -> str:
    """TensorFlow's ``DataTypeString``: ``float``, ``double``, ``half``, ``float_ref``..."""
    base = dtype.base_dtype
    name = {dtypes.float32: "float", dtypes.float64: "double", dtypes.float16: "half"}.get(
        base, base.name
    )
    return name + "_ref" if dtype.is_ref_dtype else name


def _topological(ops: list[Operation]) -> list[Operation]:
    """``ops`` in an order where producers come first; back edges into Merge are ignored."""
    in_set = {id(op) for op in ops}
    next_iterations = {id(op) for op in ops if op.type in ("NextIteration", "RefNextIteration")}
    pending: dict[int, int] = {}
    consumers: dict[int, list[Operation]] = {}
    ready: list[Operation] = []
    for op in ops:
        producers = {id(t.op) for t in op._inputs if id(t.op) in in_set}
        producers |= {id(c) for c in op._control_inputs if id(c) in in_set}
        if op.type in ("Merge", "RefMerge"):
            producers -= next_iterations
        pending[id(op)] = len(producers)
        for p in producers:
            consumers.setdefault(p, []).append(op)
        if not producers:
            ready.append(op)
    order: list[Operation] = []
    while ready:
        op = ready.pop()
        order.append(op)
        for c in consumers.get(id(op), ()):
            pending[id(c)] -= 1
            if pending[id(c)] == 0:
                ready.append(c)
    return order


def _merge_library(graph: Graph, library: Any) -> None:
    if graph.library is None:
        graph.library = type(library)()
    existing = {f.signature.name for f in graph.library.function}
    for fn in library.function:
        if fn.signature.name not in existing:
            graph.library.function.add().CopyFrom(fn)
    graph.library.gradient.extend(library.gradient)


def _return_element(
    graph: Graph, by_old_name: dict[str, Operation], name: str
) -> Tensor | Operation:
    if ":" in name:
        op_name, _, index = name.rpartition(":")
        op = by_old_name.get(op_name)
        if op is None or int(index) >= len(op._outputs):
            raise ValueError(f"Requested return tensor '{name}' not found in graph def")
        return op._outputs[int(index)]
    op = by_old_name.get(name)
    if op is None:
        raise ValueError(f"Requested return node '{name}' not found in graph def")
    return op
