"""The function library runtime: FunctionDefs instantiated into executors, cached, and called.

Design. A session's graph may carry a ``FunctionDefLibrary`` (control flow v2: the branches of
``If``, the cond and body of ``While``, the callee of ``PartitionedCall``). Three pieces:

- :class:`FunctionLibraryDefinition`: the functions by name, append-only, and their signatures
  as OpDefs. A node whose op type names a function has the signature as its OpDef.
- :func:`instantiate_function`: TensorFlow's ``InstantiateFunction``. One FunctionDef plus the
  attrs of a call becomes a graph of :class:`~aiotf.runtime.graph.Node`: an ``_Arg`` node per
  input (named after the input arg, ``arg_i`` for list args), the body nodes under their own
  names, their inputs renamed from the function's ``node:out_arg:index`` form to graph edges,
  attr placeholders (``$T``) replaced by the call's attrs, and a ``_Retval`` node per output
  (``ret_RetVal``) fed by the ``ret`` map. ``control_ret`` nodes are kept by the optimizer.
- :class:`FunctionLibraryRuntime`: ``instantiate(name, attrs, device)`` instantiates, places
  every node on the calling device, optimizes the graph like a partition and compiles it into
  an :class:`~aiotf.runtime.executor.Executor` once; ``call`` runs it.

State of the runtime, and its invariants:

- ``_handles``: ``(name, canonical attrs, device name, in grappler's order) -> handle``; one
  entry per distinct instantiation, never removed while the session lives (a body built
  before the session's graph took grappler's order is built again after).
- ``_items[handle]``: the compiled function (executor, arg and ret dtypes); built exactly once.
- ``_by_func``: a fast path for kernels, keyed by the identity of the ``NameAttrList`` attr they
  hold (the proto is kept alive in the entry, so the id is never reused while the entry exists).

A call runs the function's executor with a child :class:`StepContext` that shares the caller's
step id and rendezvous (so an error aborts the whole step) and has its own args and retvals.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiotf.devices.device import Device
from aiotf.framework import attr_value, dtypes, errors, op_def_registry
from aiotf.framework.op_def_registry import ArgDef, OpDef
from aiotf.framework.op_defs.functional_ops import signature_arg, signature_op_def
from aiotf.kernels import registry as kernel_registry
from aiotf.kernels.context import StepContext
from aiotf.kernels.registry import OpKernel
from aiotf.proto import FunctionDefLibrary, NodeDef
from aiotf.runtime import canonicalizer, graph_optimizer
from aiotf.runtime.executor import Executor
from aiotf.runtime.graph import Graph, Node, node_from_def


def create_kernel(node: Node, device: Device) -> OpKernel:
    """The kernel of ``node`` on ``device``; a missing kernel is ``NotFoundError`` naming it."""
    kernel_node = node.kernel_node(device.name)
    try:
        return kernel_registry.create_kernel(kernel_node, device.device_type)
    except errors.OpError as e:
        raise errors.with_node(e, node.to_node_def(), None) from None


# ----------------------------------------------------------------------------------------------
# The library
# ----------------------------------------------------------------------------------------------


class FunctionLibraryDefinition:
    """The functions of a graph by name (append-only), with their signatures as OpDefs."""

    def __init__(self, library: Any = None) -> None:
        self._functions: dict[str, Any] = {}
        self._signatures: dict[str, OpDef] = {}
        self._gradients: dict[str, str] = {}
        if library is not None:
            self.add_library(library)

    def add_library(self, library: Any) -> None:
        """Add the functions and gradients of a ``FunctionDefLibrary``; all or nothing."""
        if library is None:
            return
        new: dict[str, Any] = {}
        for fdef in library.function:
            name = fdef.signature.name
            existing = self._functions.get(name, new.get(name))
            if existing is None:
                new[name] = fdef
            elif existing.SerializeToString(deterministic=True) != fdef.SerializeToString(
                deterministic=True
            ):
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Cannot add function '{name}' because a different function with the same "
                    "name already exists.",
                )
        for name, fdef in new.items():
            copy = type(fdef)()
            copy.CopyFrom(fdef)
            self._functions[name] = copy
        for grad in library.gradient:
            self._gradients.setdefault(grad.function_name, grad.gradient_func)

    def find(self, name: str) -> Any:
        """The ``FunctionDef`` called ``name``, or None."""
        return self._functions.get(name)

    def signature(self, name: str) -> OpDef | None:
        """The OpDef of function ``name`` (from its signature), or None when there is none."""
        op_def = self._signatures.get(name)
        if op_def is None and name in self._functions:
            op_def = signature_op_def(self._functions[name].signature)
            self._signatures[name] = op_def
        return op_def

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __len__(self) -> int:
        return len(self._functions)

    def to_proto(self) -> Any:
        out = FunctionDefLibrary()
        for fdef in self._functions.values():
            out.function.add().CopyFrom(fdef)
        for fn, grad in self._gradients.items():
            out.gradient.add(function_name=fn, gradient_func=grad)
        return out


# ----------------------------------------------------------------------------------------------
# Instantiation (TensorFlow's InstantiateFunction)
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class FunctionBody:
    """One instantiation: the graph with ``_Arg``/``_Retval`` nodes, and what must run."""

    name: str
    graph: Graph
    arg_types: list[dtypes.DType]
    ret_types: list[dtypes.DType]
    control_ret_nodes: list[str]


@dataclasses.dataclass(frozen=True)
class _Named:
    """What a name usable as an input means: ``nodes[k]:outputs[k]`` has ``dtypes[k]``."""

    nodes: tuple[str, ...]
    outputs: tuple[int, ...]
    dtypes: tuple[dtypes.DType, ...]


def instantiate_function(
    library: FunctionLibraryDefinition,
    name: str,
    attrs: Mapping[str, Any] | None = None,
    device: str = "",
) -> FunctionBody:
    """Function ``name`` of ``library`` with the call's ``attrs`` (AttrValue protos) as a graph.

    Every node is assigned to ``device``. Errors are TensorFlow's: an unknown function is
    ``NotFoundError`` ("Function f is not defined."), a missing signature attr ``NotFoundError``,
    a malformed body ``InvalidArgumentError`` naming the node.
    """
    fdef = library.find(name)
    if fdef is None:
        raise errors.NotFoundError(None, None, f"Function {name} is not defined.")
    call_attrs = dict(attrs or {})
    sig = fdef.signature
    for a in sig.attr:
        if a.name not in call_attrs:
            raise errors.NotFoundError(
                None, None, f"Attr {a.name} is not found from {_summarize_signature(sig)}"
            )
    values = {k: attr_value.decode(v) for k, v in call_attrs.items()}
    builder = _Builder(library, device)
    for arg in sig.input_arg:
        builder.add_arg(arg, values)
    node_defs = [_bind_node_def(nd, call_attrs) for nd in fdef.node_def]
    body_nodes = [builder.make_node(nd) for nd in node_defs]
    for node in body_nodes:
        builder.index_outputs(node)
    for node_def, node in zip(node_defs, body_nodes, strict=True):
        builder.wire(node, node_def)
    for ret in sig.output_arg:
        builder.add_return(ret, values, fdef.ret)
    controls = []
    for key in sorted(fdef.control_ret):
        target = fdef.control_ret[key]
        if target not in builder.graph:
            raise errors.InvalidArgumentError(
                None, None, f"Control output {key} -> {target} is not found."
            )
        controls.append(target)
    return FunctionBody(name, builder.graph, builder.arg_types, builder.ret_types, controls)


class _Builder:
    """The graph being built and the index of names inputs may use (``x``, ``n:out:0``...)."""

    def __init__(self, library: FunctionLibraryDefinition, device: str) -> None:
        self.library = library
        self.device = device
        self.graph = Graph()
        self.index: dict[str, _Named] = {}
        self.arg_types: list[dtypes.DType] = []
        self.ret_types: list[dtypes.DType] = []
        self._body_ops: dict[str, tuple[OpDef, dict[str, Any]]] = {}  # name -> OpDef, attrs

    def _add_name(self, name: str, named: _Named, is_arg: bool) -> None:
        if name in self.index:
            kind = "arg" if is_arg else "ret"
            raise errors.InvalidArgumentError(None, None, f"Duplicated {kind} name: {name}")
        self.index[name] = named

    def _add(self, node: Node) -> None:
        node.assigned_device = self.device
        self.graph.add(node)

    def add_arg(self, arg: Any, values: Mapping[str, Any]) -> None:
        """``_Arg`` nodes for input arg ``arg`` (one per tensor of a list arg)."""
        types = _arg_dtypes(signature_arg(arg), values, f"In {_print_arg(arg)}")
        names = [arg.name if len(types) == 1 else f"{arg.name}_{i}" for i in range(len(types))]
        self._add_name(arg.name, _Named(tuple(names), (0,) * len(types), tuple(types)), True)
        for i, (node_name, dt) in enumerate(zip(names, types, strict=True)):
            self._add_name(f"{arg.name}:{i}", _Named((node_name,), (0,), (dt,)), True)
            index = len(self.arg_types)
            self._add(Node(node_name, op_def_registry.lookup("_Arg"), {"T": dt, "index": index}))
            self.arg_types.append(dt)

    def make_node(self, node_def: Any) -> Node:
        """The node of body ``node_def`` (attrs bound), without inputs: :meth:`wire` adds them."""
        try:
            node = node_from_def(node_def, self.library.signature)
        except errors.OpError as e:
            raise type(e)(None, None, f"{e.message}\n\tIn {{{{node {node_def.name}}}}}") from None
        op_def = self.library.signature(node_def.op)
        if op_def is None:  # an op, not a call: its node has the op's OpDef and attrs
            self._body_ops[node.name] = (node.op_def, node.attrs)
        else:  # a call of a function: its inputs and outputs follow the function's signature
            attrs = op_def.default_attrs()
            attrs.update((k, attr_value.decode(v)) for k, v in node_def.attr.items())
            self._body_ops[node.name] = (op_def, attrs)
        node.inputs = []
        node.control_inputs = []
        self._add(node)
        return node

    def index_outputs(self, node: Node) -> None:
        """Index ``node:out_arg`` and ``node:out_arg:j`` for each output arg of ``node``."""
        op_def, attrs = self._body_ops[node.name]
        if not op_def.outputs:
            self._add_name(node.name, _Named((node.name,), (), ()), False)
            return
        start = 0
        for arg in op_def.outputs:
            types = _arg_dtypes(arg, attrs, f"In {{{{node {node.name}}}}}")
            base = f"{node.name}:{arg.name}"
            outs = tuple(range(start, start + len(types)))
            self._add_name(base, _Named((node.name,) * len(types), outs, tuple(types)), False)
            for j, dt in enumerate(types):
                self._add_name(f"{base}:{j}", _Named((node.name,), (start + j,), (dt,)), False)
            start += len(types)

    def wire(self, node: Node, node_def: Any) -> None:
        """Resolve ``node_def``'s inputs through the index, checking types as TensorFlow does."""
        where = f"In {{{{node {node_def.name}}}}}"
        refs = list(node_def.input)
        pos = 0
        op_def, attrs = self._body_ops[node.name]
        for arg in op_def.inputs:
            want = _arg_dtypes(arg, attrs, where)
            j = 0
            while j < len(want):
                if pos >= len(refs) or refs[pos].startswith("^"):
                    raise _invalid(
                        f"Attempt to access beyond input size: {pos} >= {len(refs)}", where
                    )
                ref = refs[pos]
                pos += 1
                named = self.index.get(ref)
                if named is None:
                    raise _invalid(f"input {ref} is not found: {{{{node {node_def.name}}}}}", where)
                if len(named.dtypes) > len(want) - j:
                    raise _invalid(f"Input {ref} too long for {arg.name}", where)
                for k, got in enumerate(named.dtypes):
                    if got.base_dtype is not want[j].base_dtype:
                        raise _invalid(
                            f"input {arg.name}[{j}] expected type {_type_string(want[j])} != "
                            f"{_type_string(got)}, the type of {ref}[{k}]",
                            where,
                        )
                    node.inputs.append((named.nodes[k], named.outputs[k]))
                    j += 1
        for i in range(pos, len(refs)):
            if not refs[i].startswith("^"):
                raise _invalid(f"Expected input[{i}] == '{refs[i]}' to be a control input.", where)
            node.control_inputs.append(self._control_target(refs[i], i, where))

    def _control_target(self, ref: str, i: int, where: str) -> str:
        name = ref[1:]
        named = self.index.get(name)
        if named is None:
            named = next((v for k, v in self.index.items() if k.startswith(name + ":")), None)
        if named is None or not named.nodes:
            raise _invalid(f"input[{i}] == '{ref}', is not found.", where)
        return named.nodes[0]

    def add_return(self, ret: Any, values: Mapping[str, Any], ret_map: Any) -> None:
        where = f"In function output {_print_arg(ret)}"
        if ret.name not in ret_map:
            raise _invalid(f"Return {ret.name} missing.", where)
        types = _arg_dtypes(signature_arg(ret), values, where)
        named = self.index.get(ret_map[ret.name])
        if named is None:
            raise _invalid(f"Return {ret.name} -> {ret_map[ret.name]} is not found.", where)
        if [t.base_dtype for t in types] != [t.base_dtype for t in named.dtypes]:
            raise _invalid(
                f"Invalid ret types {ret.name} : {_types_string(types)} vs. "
                f"{_types_string(named.dtypes)}",
                where,
            )
        for i, dt in enumerate(types):
            name = f"{ret.name}_RetVal" + (f"_{i}" if len(types) > 1 else "")
            attrs = {"T": dt, "index": len(self.ret_types)}
            retval = Node(name, op_def_registry.lookup("_Retval"), attrs)
            retval.inputs = [(named.nodes[i], named.outputs[i])]
            self._add(retval)
            self.ret_types.append(dt)


def _arg_dtypes(arg: ArgDef, attrs: Mapping[str, Any], where: str) -> list[dtypes.DType]:
    """The dtypes of the tensors of ``arg`` under ``attrs`` (TensorFlow's ``ArgNumType``)."""
    if arg.type_list_attr:
        if arg.type_list_attr not in attrs:
            raise errors.NotFoundError(
                None, None, f"type attr not found: {arg.type_list_attr}\n\t{where}"
            )
        return [dtypes.as_dtype(t) for t in attrs[arg.type_list_attr] or []]
    count = 1
    if arg.number_attr:
        if arg.number_attr not in attrs:
            raise errors.NotFoundError(
                None, None, f"type attr not found: {arg.type_attr}\n\t{where}"
            )
        count = int(attrs[arg.number_attr])
    if arg.type is not None:
        return [arg.type] * count
    if arg.type_attr not in attrs:
        raise errors.NotFoundError(None, None, f"type attr not found: {arg.type_attr}\n\t{where}")
    return [dtypes.as_dtype(attrs[arg.type_attr])] * count


def _bind_node_def(node_def: Any, call_attrs: Mapping[str, Any]) -> Any:
    """A copy of ``node_def`` with its attr placeholders bound to ``call_attrs``."""
    out = NodeDef()
    out.CopyFrom(node_def)
    for key in list(out.attr):
        if not _substitute(out.attr[key], call_attrs):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Failed to bind all placeholders in {_summarize_attr(node_def.attr[key])}\n\t"
                f"In {{{{node {node_def.name}}}}}",
            )
    return out


def _substitute(value: Any, call_attrs: Mapping[str, Any]) -> bool:
    """Replace placeholders in the AttrValue ``value`` in place; False when one is unbound."""
    kind = value.WhichOneof("value")
    if kind == "placeholder":
        bound = call_attrs.get(value.placeholder)
        if bound is None:
            return False
        value.CopyFrom(attr_value.encode(bound))
        return True
    funcs = [value.func] if kind == "func" else list(value.list.func) if kind == "list" else []
    return all(_substitute(v, call_attrs) for f in funcs for v in f.attr.values())


def _invalid(message: str, where: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"{message}\n\t{where}")


_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _type_string(dt: dtypes.DType) -> str:
    """TensorFlow's ``DataTypeString``: ``float``, ``double``, ``int32``..."""
    name = dt.base_dtype.name
    return _TF_TYPE_NAMES.get(name, name)


def _types_string(types: Sequence[dtypes.DType]) -> str:
    return ", ".join(_type_string(t) for t in types)


def _print_arg(arg: Any) -> str:
    """TensorFlow's ``Print(ArgDef)``: ``name:type``, ``name:N*T``, ``name:Ref(T)``."""
    kind = _type_string(dtypes.as_dtype(arg.type)) if arg.type else arg.type_attr
    kind = f"{arg.number_attr}*{kind}" if arg.number_attr else kind
    return f"{arg.name}:" + (f"Ref({kind})" if arg.is_ref else kind)


def _summarize_signature(sig: Any) -> str:
    ins = ", ".join(_print_arg(a) for a in sig.input_arg)
    outs = ", ".join(_print_arg(a) for a in sig.output_arg)
    attrs = "; ".join(f"attr={a.name}:{a.type}" for a in sig.attr)
    return f"Op<name={sig.name}; signature={ins} -> {outs}; {attrs}>"


def _summarize_attr(value: Any) -> str:
    return str(value).replace("\n", " ").strip()


# ----------------------------------------------------------------------------------------------
# The runtime
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Item:
    """An instantiated function, compiled."""

    name: str
    executor: Executor
    arg_types: list[dtypes.DType]
    ret_types: list[dtypes.DType]


class FunctionLibraryRuntime:
    """Instantiates the functions of ``library`` per (name, attrs, device), once, and runs them."""

    def __init__(
        self,
        library: FunctionLibraryDefinition,
        optimizer_options: Any = None,
        canonical: Callable[[], bool] = lambda: False,
        remapper: bool = True,
    ) -> None:
        self.library = library
        self._optimizer_options = optimizer_options
        self._remapper = remapper  # the remapper's fusions on (graph_optimizer.remapping)
        self._canonical = canonical  # whether bodies take grappler's input order (the graph's)
        self._handles: dict[tuple[str, tuple[tuple[str, bytes], ...], str, bool], int] = {}
        self._items: list[_Item] = []
        self._by_func: dict[tuple[int, str, bool], tuple[Any, int]] = {}

    @property
    def num_instantiated(self) -> int:
        """How many distinct instantiations have been compiled."""
        return len(self._items)

    def instantiate(self, name: str, attrs: Mapping[str, Any] | None, device: Device) -> int:
        """The handle of function ``name`` with ``attrs`` (AttrValue protos) on ``device``."""
        attrs = dict(attrs or {})
        canonical = self._canonical()  # read once: an extension may sort the graph meanwhile
        key = (
            name,
            tuple(sorted((k, v.SerializeToString(deterministic=True)) for k, v in attrs.items())),
            device.name,
            canonical,  # a body built before the graph was sorted is built again
        )
        handle = self._handles.get(key)
        if handle is None:
            handle = self._build(name, attrs, device, canonical)
            self._handles[key] = handle
        return handle

    def instantiate_func(self, func: Any, device: Device) -> int:
        """The handle of the function a ``func`` attr (``NameAttrList``) names, on ``device``."""
        key = (id(func), device.name, self._canonical())
        entry = self._by_func.get(key)
        if entry is not None and entry[0] is func:
            return entry[1]
        handle = self.instantiate(func.name, func.attr, device)
        self._by_func[key] = (func, handle)
        return handle

    def executor(self, handle: int) -> Executor:
        return self._items[handle].executor

    def _build(self, name: str, attrs: Mapping[str, Any], device: Device, canonical: bool) -> int:
        body = instantiate_function(self.library, name, attrs, device.name)
        if canonical:  # TensorFlow inlines the calls into the graph grappler sorts
            canonicalizer.canonicalize(body.graph)
        keep = frozenset(body.control_ret_nodes)
        graph_optimizer.remove_dead_nodes(body.graph, keep)  # TF's PruneFunctionBody
        graph_optimizer.optimize(
            body.graph,
            graph_optimizer.enabled_passes(self._optimizer_options, self._remapper),
            keep,
        )
        executor = Executor(body.graph, device, lambda node: create_kernel(node, device))
        self._items.append(_Item(name, executor, body.arg_types, body.ret_types))
        return len(self._items) - 1

    async def call(self, function: int | str, ctx: StepContext, args: Sequence[Any]) -> list[Any]:
        """Run a function (a handle, or a name instantiated on ``ctx.device``) on ``args``."""
        handle = (
            function if isinstance(function, int) else self.instantiate(function, {}, ctx.device)
        )
        item = self._items[handle]
        if len(args) != len(item.arg_types):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Function {item.name} expects {len(item.arg_types)} arguments, but "
                f"{len(args)} were given",
            )
        retvals: list[Any] = [None] * len(item.ret_types)
        child = StepContext(
            ctx.step_id, ctx.rendezvous, list(args), retvals, item.executor.device, self, ctx.stats
        )
        await item.executor.run(child)
        return retvals
