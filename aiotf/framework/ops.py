"""The graph model: :class:`Graph`, :class:`Operation` and :class:`Tensor`.

A Graph is append-only: operations are added (with unique names, the active name scope, device
scope and control dependencies applied) and never removed, which lets a session extend its copy
of the graph incrementally. Each Operation knows its type's OpDef, its attrs (as ``AttrValue``
protos, exactly what a GraphDef holds), its input tensors and control inputs, and where in user
code it was built. The default graph and session live in ``contextvars`` so they follow tasks
(an InteractiveSession excepted: see "Defaults" below).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from aiotf.framework import attr_value, device_spec, dtypes, errors, op_def_registry, tensor_util
from aiotf.framework.op_def_registry import AttrDef, InferenceContext, OpDef
from aiotf.framework.op_defs.functional_ops import signature_op_def
from aiotf.framework.tensor_shape import TensorShape, as_shape
from aiotf.proto import GraphDef, NodeDef, VersionDef

GRAPH_DEF_VERSION = 2021  # the producer version we write; TensorFlow 2.21 writes in this range
GRAPH_DEF_VERSION_MIN_CONSUMER = 0

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TensorOperators:
    """The operators of a Tensor (and of what stands for one, like a Variable), declared for type
    checkers; ``aiotf.ops.math_ops`` installs them at import."""

    __slots__ = ()

    if TYPE_CHECKING:

        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __rfloordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __rand__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __ror__(self, other: Any) -> Tensor: ...
        def __xor__(self, other: Any) -> Tensor: ...
        def __rxor__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def __getitem__(self, key: Any) -> Tensor: ...


class Tensor(TensorOperators):
    """One output of an Operation: ``op.outputs[value_index]``, named ``"op_name:index"``."""

    __slots__ = ("__weakref__", "_dtype", "_op", "_shape", "_value_index")

    # Operators (+, -, *, /, @, unary -, ...) are installed by ``aiotf.ops.math_ops``.
    OVERLOADABLE_OPERATORS = frozenset(
        {
            "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
            "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
            "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__lt__", "__le__",
            "__gt__", "__ge__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
            "__invert__", "__getitem__",
        }
    )  # fmt: skip

    def __init__(self, op: Operation, value_index: int, dtype: dtypes.DType) -> None:
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = TensorShape(None)
        if dtype.base_dtype is dtypes.bfloat16:
            dtypes.load_ml_dtypes()  # while the graph is built, not in its first run

    @property
    def op(self) -> Operation:
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def graph(self) -> Graph:
        return self._op.graph

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self) -> str:
        return self._op.device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape: Any) -> None:
        self._shape = self._shape.merge_with(as_shape(shape))

    def consumers(self) -> list[Operation]:
        return [op for op in self.graph.get_operations() if self in op.inputs]

    def eval(self, feed_dict: Any = None, session: Any = None) -> Any:
        """Awaitable: the value of this tensor in ``session`` (default: the default session)."""
        return _session_for(self.graph, session, "tensor").run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return f"<aiotf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __bool__(self) -> bool:
        raise TypeError(
            "Using a `aiotf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` "
            "instead of `if t:` to test if a tensor is defined."
        )

    def __iter__(self) -> Iterator[Tensor]:
        raise TypeError("Tensor objects are only iterable when eager execution is enabled.")

    def __array__(self, dtype: Any = None) -> Any:
        raise NotImplementedError(
            f"Cannot convert a symbolic aiotf.Tensor ({self.name}) to a numpy array."
        )

    @classmethod
    def _override_operator(cls, operator: str, func: Callable[..., Any]) -> None:
        if operator not in cls.OVERLOADABLE_OPERATORS:
            raise ValueError(f"Overriding {operator} is disallowed")
        setattr(cls, operator, func)


class Operation:
    """A node in a Graph. Build with ``Graph.create_op`` or the functions in ``aiotf``."""

    def __init__(
        self,
        graph: Graph,
        name: str,
        op_def: OpDef,
        attrs: dict[str, Any],
        output_types: Sequence[dtypes.DType],
        device: str,
        traceback: tuple[str, int] | None,
    ) -> None:
        self._graph = graph
        self._name = name
        self._op_def = op_def
        self._attrs = attrs  # name -> AttrValue proto
        self._inputs: list[Tensor] = []
        self._control_inputs: list[Operation] = []
        self._outputs = [Tensor(self, i, dt) for i, dt in enumerate(output_types)]
        self._device = device
        self._traceback = traceback
        self._id = -1
        self._original_node_def: Any = None
        self._node_def: Any = None
        self._control_flow_context: Any = (
            None  # the cond/while it was built in (ops/control_flow_ops)
        )

    # -- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._op_def.name

    @property
    def op_def(self) -> OpDef:
        return self._op_def

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def device(self) -> str:
        return self._device

    @property
    def inputs(self) -> list[Tensor]:
        return list(self._inputs)

    @property
    def control_inputs(self) -> list[Operation]:
        return list(self._control_inputs)

    @property
    def outputs(self) -> list[Tensor]:
        return list(self._outputs)

    @property
    def traceback(self) -> tuple[str, int] | None:
        """``(file, line)`` of the user code that built this op."""
        return self._traceback

    def values(self) -> tuple[Tensor, ...]:
        return tuple(self._outputs)

    def get_attr(self, name: str) -> Any:
        """The Python value of attr ``name`` (bytes for strings, DType for types...)."""
        if name not in self._attrs:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.")
        return attr_value.decode(self._attrs[name])

    @property
    def node_def(self) -> Any:
        """This op as a ``NodeDef`` proto (built once; do not mutate)."""
        if self._node_def is None:
            self._node_def = self._make_node_def()
        return self._node_def

    def _make_node_def(self) -> Any:
        node = NodeDef()
        if self._original_node_def is not None:
            node.CopyFrom(self._original_node_def)
            del node.input[:]
        node.name = self._name
        node.op = self._op_def.name
        node.device = self._device
        node.input.extend(t.name if t.value_index else t.op.name for t in self._inputs)
        # TensorFlow's Graph::ToGraphDef sorts control inputs by name, for a stable serialization.
        node.input.extend(sorted("^" + op.name for op in self._control_inputs))
        for key, value in self._attrs.items():
            node.attr[key].CopyFrom(value)
        return node

    # -- mutation while building (TF's private API) --------------------------------------
    def _set_device(self, device: Any) -> None:
        self._device = device_spec.canonical(device)
        self._node_def = None

    def _set_attr(self, name: str, value: Any) -> None:
        self._attrs[name] = value
        self._node_def = None

    def _add_control_input(self, op: Operation) -> None:
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            self._node_def = None

    def _remove_all_control_inputs(self) -> None:
        self._control_inputs = []
        self._node_def = None

    def _add_input(self, tensor: Tensor) -> None:
        self._inputs.append(tensor)
        self._node_def = None

    def _update_input(self, index: int, tensor: Tensor) -> None:
        self._inputs[index] = tensor
        self._node_def = None

    def run(self, feed_dict: Any = None, session: Any = None) -> Any:
        """Awaitable: run this op in ``session`` (default: the default session); None."""
        return _session_for(self.graph, session, "operation").run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return f"<aiotf.Operation '{self._name}' type={self.type}>"


class Graph:
    """A dataflow graph: append-only, with TensorFlow's naming and scoping rules."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._ops_by_name: dict[str, Operation] = {}
        self._ops: list[Operation] = []
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._device_stack: list[str] = []
        # One entry per control_dependencies block: its ops and the ids of the ops built in it
        # (TF's _ControlDependenciesController); None for a control_dependencies(None) block.
        self._control_stack: list[tuple[list[Operation], set[int]] | None] = []
        self._colocation_stack: list[Operation] = []
        self._collections: dict[str, list[Any]] = {}
        self._finalized = False
        self._control_flow_context: Any = None  # set while a cond branch or loop body is built
        self._seed: int | None = None
        self.library: Any = None  # a FunctionDefLibrary proto, set by import_graph_def

    # -- contents -------------------------------------------------------------------------
    @property
    def version(self) -> int:
        """The number of ops added so far (grows by one per op; sessions use it to extend)."""
        return len(self._ops)

    @property
    def finalized(self) -> bool:
        return self._finalized

    @property
    def seed(self) -> int | None:
        return self._seed

    @seed.setter
    def seed(self, value: int | None) -> None:
        self._seed = value

    def finalize(self) -> None:
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def _ops_since(self, version: int) -> list[Operation]:
        return self._ops[version:]

    def _function_op_def(self, name: str) -> OpDef | None:
        """The OpDef of library function ``name`` (its signature), or None when there is none."""
        for fn in self.library.function if self.library is not None else ():
            if fn.signature.name == name:
                return signature_op_def(fn.signature)
        return None

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        result = self.as_graph_element(name, allow_tensor=False, allow_operation=True)
        assert isinstance(result, Operation)
        return result

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        result = self.as_graph_element(name, allow_tensor=True, allow_operation=False)
        assert isinstance(result, Tensor)
        return result

    def as_graph_element(
        self, obj: Any, allow_tensor: bool = True, allow_operation: bool = True
    ) -> Tensor | Operation:
        """The Tensor or Operation ``obj`` names (TF's lookup rules and error words)."""
        with self._lock:
            return self._as_graph_element_locked(obj, allow_tensor, allow_operation)

    def _as_graph_element_locked(
        self, obj: Any, allow_tensor: bool, allow_operation: bool
    ) -> Tensor | Operation:
        kinds = " or ".join(
            k for k, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok
        )
        conversion = getattr(obj, "_as_graph_element", None)  # e.g. a Variable: its ref output
        if conversion is not None and callable(conversion):
            obj = conversion()
        if isinstance(obj, Tensor | Operation):
            if obj.graph is not self:
                raise ValueError(f"{obj} is not an element of this graph.")
            if isinstance(obj, Tensor) and not allow_tensor:
                raise TypeError(f"Can not convert a Tensor into a {kinds}.")
            if isinstance(obj, Operation) and not allow_operation:
                raise TypeError(f"Can not convert a Operation into a {kinds}.")
            return obj
        if isinstance(obj, bytes):  # TF takes bytes names too (``compat.as_str``)
            obj = obj.decode()
        if not isinstance(obj, str):
            raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")
        if ":" in obj and allow_tensor:
            op_name, _, index_text = obj.rpartition(":")
            try:
                index = int(index_text)
            except ValueError:
                raise ValueError(
                    f"The name {obj!r} looks a like a Tensor name, but is not a valid one. "
                    'Tensor names must be of the form "<op_name>:<output_index>".'
                ) from None
            op = self._ops_by_name.get(op_name)
            if op is None:
                raise KeyError(
                    f"The name {obj!r} refers to a Tensor which does not exist. "
                    f"The operation, {op_name!r}, does not exist in the graph."
                )
            if not 0 <= index < len(op._outputs):
                raise KeyError(
                    f"The name {obj!r} refers to a Tensor which does not exist. The operation, "
                    f"{op_name!r}, exists but only has {len(op._outputs)} outputs."
                )
            return op._outputs[index]
        if ":" in obj:
            raise ValueError(f"Name {obj!r} appears to refer to a Tensor, not a {kinds}.")
        op = self._ops_by_name.get(obj)
        if not allow_operation:
            what = "refers to an Operation" if op else "looks like an (invalid) Operation name"
            raise ValueError(
                f"The name {obj!r} {what}, not a {kinds}. Tensor names must be "
                f'of the form "<op_name>:<output_index>".'
            )
        if op is None:
            raise KeyError(f"The name {obj!r} refers to an Operation not in the graph.")
        return op

    # -- building -------------------------------------------------------------------------
    def create_op(
        self,
        op_type: str,
        inputs: Sequence[Tensor],
        attrs: dict[str, Any] | None = None,
        name: str | None = None,
        input_types: Sequence[dtypes.DType] | None = None,
        infer_types: bool = True,
    ) -> Operation:
        """Add an op of ``op_type`` consuming ``inputs``; attrs may be Python values or AttrValues.

        Type attrs TensorFlow infers from the inputs (``T``, ``N``...) are inferred here too, and
        attrs with defaults are filled in, so the op's NodeDef is complete.
        """
        self._check_not_finalized()
        op_def = op_def_registry.lookup(op_type)
        inputs = list(inputs)
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"Input to op {op_type} must be a Tensor, got {type(t).__name__}")
            if t.graph is not self:
                raise ValueError(f"Tensor {t.name} must be from the same graph as the new op.")
        native = dict(attrs or {})
        if infer_types:
            _infer_input_attrs(op_def, inputs, native, name or op_type)
        full = _complete_attrs(op_def, native, name or op_type)
        output_types = op_def_registry.output_types(
            op_def, {k: _decoded(v) for k, v in full.items()}
        )
        with self._lock:
            if name and name.endswith("/"):  # a scope name from name_scope(): already unique
                unique = name[:-1]
            else:
                unique = self.unique_name(name or op_type)
            if not _VALID_OP_NAME.match(unique):
                raise ValueError(f"'{unique}' is not a valid node name")
            op = Operation(
                self,
                unique,
                op_def,
                {k: attr_value.encode(v, _attr_type(op_def, k)) for k, v in full.items()},
                output_types,
                self._current_device(),
                _user_frame(),
            )
            op._inputs = inputs
            op._control_inputs = self._current_control_inputs(inputs)
            self._record_op_seen_by_control_dependencies(op)
            _infer_shapes(op, full)  # a node whose shapes contradict never joins the graph
            self._add_op(op)
        context = self._control_flow_context
        if context is not None:  # route the op's outside inputs into its cond branch or loop frame
            op._control_flow_context = context
            context.add_op(op)
        return op

    def _add_op(self, op: Operation) -> None:
        op._id = len(self._ops)
        self._ops.append(op)
        self._ops_by_name[op.name] = op

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """``name`` under the current name scope, suffixed ``_1``, ``_2``... when taken."""
        if self._name_stack:
            name = f"{self._name_stack}/{name}"
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = key
            while key in self._names_in_use:
                key = f"{base}_{count}"
                count += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = f"{name}_{count - 1}"
        return name

    def _mark_name_used(self, name: str) -> None:
        key = name.lower()
        self._names_in_use[key] = self._names_in_use.get(key, 0) + 1

    def get_name_scope(self) -> str:
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Open a name scope; returns the scope name with a trailing ``/`` (TF's rules)."""
        old = self._name_stack
        pattern = _VALID_SCOPE_NAME if old else _VALID_OP_NAME  # a top-level scope is a node name
        if name and not pattern.match(name):
            raise ValueError(f"'{name}' is not a valid scope name")
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield (new + "/") if new else ""
        finally:
            self._name_stack = old

    @contextlib.contextmanager
    def device(self, device_name_or_function: Any) -> Iterator[None]:
        """Ops built inside get this device (merged with outer scopes; None clears)."""
        if callable(device_name_or_function):
            raise NotImplementedError(
                "device functions are not supported yet; pass a device string"
            )
        if device_name_or_function is None:
            pushed = ""
        else:
            outer = self._device_stack[-1] if self._device_stack else ""
            pushed = device_spec.merge(outer, device_spec.canonical(device_name_or_function))
        self._device_stack.append(pushed)
        try:
            yield
        finally:
            self._device_stack.pop()

    def _current_device(self) -> str:
        return self._device_stack[-1] if self._device_stack else ""

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Iterable[Any] | None) -> Iterator[None]:
        """Ops built inside run after every op in ``control_inputs`` (None clears the stack)."""
        frame: tuple[list[Operation], set[int]] | None = None
        if control_inputs is not None:
            frame = ([], set())
            for c in control_inputs:
                element = self.as_graph_element(c) if not callable(c) else None
                if element is None:
                    raise TypeError(f"Control input must be an Operation or Tensor: {c!r}")
                frame[0].append(element.op if isinstance(element, Tensor) else element)
        self._control_stack.append(frame)
        try:
            yield
        finally:
            self._control_stack.pop()

    def _active_control_frames(self) -> list[tuple[list[Operation], set[int]]]:
        """The control_dependencies blocks in force, innermost first (up to a None block)."""
        frames = []
        for frame in reversed(self._control_stack):
            if frame is None:
                break
            frames.append(frame)
        return frames

    def _current_control_inputs(self, inputs: Sequence[Tensor]) -> list[Operation]:
        """TF's ``_control_dependencies_for_inputs``: a block's ops, unless a data input was
        built inside that block (the new op is then *dominated*: it already runs after them)."""
        input_ops = {id(t.op) for t in inputs}
        ops: list[Operation] = []
        for control_ops, seen in self._active_control_frames():
            if input_ops & seen:
                continue
            ops.extend(op for op in control_ops if op not in ops)
        return [op for op in reversed(ops) if id(op) not in input_ops][::-1]

    def _record_op_seen_by_control_dependencies(self, op: Operation) -> None:
        for _, seen in self._active_control_frames():
            seen.add(id(op))

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        token = _default_graph.set(self)
        try:
            yield self
        finally:
            _default_graph.reset(token)

    # -- collections (TF1) ----------------------------------------------------------------
    def add_to_collection(self, name: str, value: Any) -> None:
        self._check_not_finalized()
        self._collections.setdefault(name, []).append(value)

    def get_collection(self, name: str, scope: str | None = None) -> list[Any]:
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        return [i for i in items if getattr(i, "name", "").startswith(scope)]

    def get_collection_ref(self, name: str) -> list[Any]:
        return self._collections.setdefault(name, [])

    # -- serialization --------------------------------------------------------------------
    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> Any:
        """This graph as a ``GraphDef`` proto (ops added after ``from_version`` only, if given)."""
        graph_def = GraphDef(
            versions=VersionDef(
                producer=GRAPH_DEF_VERSION, min_consumer=GRAPH_DEF_VERSION_MIN_CONSUMER
            )
        )
        ops = self._ops[from_version or 0 :]
        for op in ops:
            node = graph_def.node.add()
            node.CopyFrom(op.node_def)
            if add_shapes:
                shapes = [t.shape.as_proto() for t in op._outputs]
                node.attr["_output_shapes"].list.shape.extend(shapes)
        if self.library is not None:
            graph_def.library.CopyFrom(self.library)
        return graph_def

    @property
    def graph_def_versions(self) -> Any:
        return VersionDef(producer=GRAPH_DEF_VERSION, min_consumer=GRAPH_DEF_VERSION_MIN_CONSUMER)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter's view: the graph drawn, nodes coloured by device (``graph_drawing.py``)."""
        from aiotf.framework import graph_drawing  # only notebooks need it

        return graph_drawing.mimebundle(self, include, exclude)


# ----------------------------------------------------------------------------------------------
# Type and shape inference at op creation
# ----------------------------------------------------------------------------------------------


def _attr_type(op_def: OpDef, name: str) -> str | None:
    a = op_def.attrs.get(name)
    return a.type if a is not None else None


def _infer_input_attrs(
    op_def: OpDef, inputs: list[Tensor], attrs: dict[str, Any], where: str
) -> None:
    """Fill ``T``, ``N`` and list-of-type attrs from the input tensors, checking consistency."""
    pos = 0
    for arg in op_def.inputs:
        if arg.number_attr:
            n = attrs.get(arg.number_attr)
            if n is None:
                n = _count_remaining(op_def, inputs, pos, arg)
                attrs[arg.number_attr] = n
            group = inputs[pos : pos + n]
            pos += n
            types = [t.dtype for t in group]
            if arg.type_attr and types:
                _bind_type(attrs, arg.type_attr, types[0], op_def, where, arg.name)
                for dt in types[1:]:
                    _bind_type(attrs, arg.type_attr, dt, op_def, where, arg.name)
            continue
        if arg.type_list_attr:
            bound = attrs.get(arg.type_list_attr)
            n = len(bound) if bound is not None else _count_remaining(op_def, inputs, pos, arg)
            group = inputs[pos : pos + n]
            pos += n
            if bound is None:
                attrs[arg.type_list_attr] = [t.dtype.base_dtype for t in group]
            continue
        if pos >= len(inputs):
            raise ValueError(f"Op {op_def.name} ({where}): missing input '{arg.name}'")
        t = inputs[pos]
        pos += 1
        if arg.type is not None:
            if t.dtype.base_dtype is not arg.type:
                raise TypeError(
                    f"Input '{arg.name}' of '{op_def.name}' Op has type {t.dtype.base_dtype.name} "
                    f"that does not match expected type of {arg.type.name}."
                )
        elif arg.type_attr:
            _bind_type(attrs, arg.type_attr, t.dtype, op_def, where, arg.name)
    if pos != len(inputs):
        raise ValueError(
            f"Op {op_def.name} ({where}) takes {pos} inputs but {len(inputs)} were given"
        )


def _count_remaining(op_def: OpDef, inputs: list[Tensor], pos: int, arg: Any) -> int:
    after = op_def.inputs[op_def.inputs.index(arg) + 1 :]
    fixed_after = sum(1 for a in after if not a.number_attr and not a.type_list_attr)
    return len(inputs) - pos - fixed_after


def _bind_type(
    attrs: dict[str, Any], attr: str, dt: dtypes.DType, op_def: OpDef, where: str, arg_name: str
) -> None:
    base = dt.base_dtype
    bound = attrs.get(attr)
    if bound is None:
        attrs[attr] = base
        return
    bound = dtypes.as_dtype(bound) if not isinstance(bound, dtypes.DType) else bound
    if bound.base_dtype is not base:
        raise TypeError(
            f"Input '{arg_name}' of '{op_def.name}' Op has type {base.name} that does not match "
            f"type {bound.base_dtype.name} of argument '{op_def.inputs[0].name}'."
        )


def _complete_attrs(op_def: OpDef, attrs: dict[str, Any], where: str) -> dict[str, Any]:
    """``attrs`` (Python values) plus defaults, with types checked against the OpDef."""
    full = dict(attrs)
    for name, a in op_def.attrs.items():
        if name not in full:
            if not a.has_default:
                raise ValueError(f"No argument for attr '{name}' of op {op_def.name} ({where})")
            full[name] = a.default
            continue
        value = full[name] = _stored(a, full[name])
        if a.allowed_values is not None and a.type == "type":
            dt = value if isinstance(value, dtypes.DType) else dtypes.as_dtype(_decoded(value))
            if dt.base_dtype not in a.allowed_values:
                allowed = ", ".join(d.name for d in a.allowed_values)
                # TensorFlow names the input the type came from, else the attr given
                param = next((i.name for i in op_def.inputs if i.type_attr == name), name)
                raise TypeError(
                    f"Value passed to parameter '{param}' has DataType {dt.base_dtype.name} not "
                    f"in list of allowed values: {allowed}"
                )
        elif a.allowed_values is not None and a.type == "string":
            text = _decoded(value)
            text = text.decode() if isinstance(text, bytes) else str(text)
            if text.encode() not in a.allowed_values:
                allowed = '", "'.join(v.decode() for v in a.allowed_values)
                raise ValueError(
                    f"Attr '{name}' of '{op_def.name}' Op passed string '{text}' not in: "
                    f'"{allowed}".'
                )
        elif a.minimum is not None and a.type == "int" and int(_decoded(value)) < a.minimum:
            raise ValueError(
                f"Attr '{name}' of '{op_def.name}' Op passed {int(_decoded(value))} less than "
                f"minimum {a.minimum}."
            )
    return full


def _decoded(value: Any) -> Any:
    """An attr given as a Python value, an ``AttrValue`` or a bare proto, as a Python value."""
    kind = type(value).__name__
    if kind == "AttrValue":
        return attr_value.decode(value)
    if kind == "TensorProto":
        return tensor_util.make_ndarray(value)
    if kind == "TensorShapeProto":
        return as_shape(value)
    return value


def _stored(attr: AttrDef, value: Any) -> Any:
    """``value`` as the node stores it: a string attr given as ``str`` is bytes (so a shape
    function comparing ``padding == b"SAME"`` sees what the kernel will)."""
    if attr.type == "string" and isinstance(value, str):
        return value.encode()
    if attr.type == "list(string)" and isinstance(value, list | tuple):
        return [v.encode() if isinstance(v, str) else v for v in value]
    return value


def _infer_shapes(op: Operation, attrs: dict[str, Any]) -> None:
    shape_fn = op.op_def.shape_fn
    if shape_fn is None:
        return
    ctx = InferenceContext(
        op.type,
        op.name,
        [t.shape for t in op._inputs],
        [t.dtype for t in op._inputs],
        {k: _decoded(v) for k, v in attrs.items()},
        lambda i: constant_value(op._inputs[i]),
    )
    try:
        shapes = shape_fn(ctx)
    except errors.InvalidArgumentError as e:
        raise ValueError(e.message) from None
    for t, s in zip(op._outputs, shapes, strict=False):
        t._shape = as_shape(s)


def constant_value(tensor: Tensor) -> np.ndarray[Any, Any] | None:
    """The value of ``tensor`` when it is known while building (a Const), else None."""
    op = tensor.op
    if op.type == "Const":
        return attr_value.decode(op._attrs["value"])  # type: ignore[no-any-return]
    if op.type == "Shape" and op._inputs and op._inputs[0].shape.is_fully_defined():
        return np.array(op._inputs[0].shape.as_list(), dtype=tensor.dtype.np_dtype)
    return None


def _user_frame() -> tuple[str, int] | None:
    """``(file, line)`` of the innermost frame outside the aiotf package."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else None


# ----------------------------------------------------------------------------------------------
# Conversion of Python values to tensors
# ----------------------------------------------------------------------------------------------


def convert_to_tensor(
    value: Any, dtype: Any = None, name: str | None = None, preferred_dtype: Any = None
) -> Tensor:
    """``value`` as a Tensor of the default graph: Tensors pass through, values become Consts."""
    if isinstance(value, Tensor):
        if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError(
                f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for Tensor with "
                f"dtype {value.dtype.name}: {value!r}"
            )
        return value
    if isinstance(value, Operation):
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype={dtype})")
    if hasattr(value, "_as_graph_tensor"):
        return value._as_graph_tensor()  # type: ignore[no-any-return]
    target = dtypes.as_dtype(dtype) if dtype is not None else None
    if target is None and preferred_dtype is not None:
        try:
            arr = tensor_util.convert_to_ndarray(value, dtypes.as_dtype(preferred_dtype))
        except (TypeError, ValueError):
            arr = tensor_util.convert_to_ndarray(value, None)
    else:
        arr = tensor_util.convert_to_ndarray(value, target)
    return make_constant(arr, name or "Const")


def make_constant(arr: np.ndarray[Any, Any], name: str = "Const") -> Tensor:
    graph = get_default_graph()
    dt = dtypes.from_numpy(arr.dtype)
    op = graph.create_op(
        "Const",
        [],
        {"value": tensor_util.make_tensor_proto(arr, dt), "dtype": dt},
        name=name,
    )
    return op.outputs[0]


# ----------------------------------------------------------------------------------------------
# Defaults
#
# ``with graph.as_default()``, ``with sess.as_default()`` and ``async with Session()`` set context
# variables: the default follows the task that entered the block (and the tasks it starts) and
# never leaks into tasks running beside it. An InteractiveSession is TensorFlow's notebook
# convenience and keeps TensorFlow's scope: it is the default for the whole thread that created it
# until it is closed (TensorFlow's default stacks are per thread), beneath any ``as_default``
# block. It lives in a per-thread stack rather than a context variable because notebook kernels do
# not reliably carry context variables from one cell to the next (ipykernel 6 drops one set after
# an ``await`` in a cell; older kernels, as on Colab, start every cell afresh).
# ----------------------------------------------------------------------------------------------

_global_graph: Graph | None = None
_default_graph: contextvars.ContextVar[Graph | None] = contextvars.ContextVar(
    "aiotf_default_graph", default=None
)
_default_session: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "aiotf_default_session", default=None
)


class _ThreadDefaults(threading.local):
    """This thread's InteractiveSessions and the graphs they made default, innermost last."""

    def __init__(self) -> None:
        self.sessions: list[Any] = []
        self.graphs: list[Graph] = []


_thread_defaults = _ThreadDefaults()


class ThreadDefault:
    """A session installed as the default of the thread that creates this (InteractiveSession),
    with ``graph`` as the thread's default graph when given.

    :meth:`remove` uninstalls it, from any thread. Installs need not be removed in order: removing
    the newest makes the one before it the default again; removing an older one changes nothing
    for the newer.
    """

    __slots__ = ("_graph", "_graphs", "_session", "_sessions")

    def __init__(self, session: Any, graph: Graph | None) -> None:
        self._sessions = _thread_defaults.sessions
        self._graphs = _thread_defaults.graphs
        self._session = session
        self._graph = graph
        self._sessions.append(session)
        if graph is not None:
            self._graphs.append(graph)

    def remove(self) -> None:
        """Uninstall (a second call does nothing)."""
        _remove_last(self._sessions, self._session)
        if self._graph is not None:
            _remove_last(self._graphs, self._graph)
        self._session = self._graph = None


def _remove_last(stack: list[Any], item: Any) -> None:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is item:
            del stack[i]
            return


def get_default_graph() -> Graph:
    """The graph new ops go into: the innermost ``as_default()`` graph, else the graph of this
    thread's InteractiveSession, else a global one."""
    graph = _default_graph.get()
    if graph is not None:
        return graph
    interactive = _thread_defaults.graphs
    if interactive:
        return interactive[-1]
    global _global_graph
    if _global_graph is None:
        _global_graph = Graph()
    return _global_graph


def reset_default_graph() -> None:
    """Replace the global default graph with a fresh one (not while another graph is default)."""
    if _default_graph.get() is not None or _thread_defaults.graphs:
        raise AssertionError(
            "Do not use reset_default_graph() to clear nested graphs. If you need a cleared "
            "graph, exit the nesting and create a new graph."
        )
    global _global_graph
    _global_graph = Graph()


def get_default_session() -> Any:
    """The session of the innermost ``with sess.as_default()`` (or ``async with sess``) in this
    context, else this thread's InteractiveSession, else None."""
    session = _default_session.get()
    if session is not None:
        return session
    interactive = _thread_defaults.sessions
    return interactive[-1] if interactive else None


def _session_for(graph: Graph, session: Any, what: str) -> Any:
    """The session ``Tensor.eval`` (``what="tensor"``) or ``Operation.run`` (``"operation"``)
    runs in: ``session``, else the default one (TensorFlow's errors when there is none)."""
    session = session if session is not None else get_default_session()
    if session is None:
        if what == "tensor":
            raise ValueError(
                "Cannot evaluate tensor using `eval()`: No default session is registered. Use "
                "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`"
            )
        raise ValueError(
            "Cannot execute operation using `run()`: No default session is registered. Use "
            "`with sess.as_default():` or pass an explicit session to `run(session=sess)`"
        )
    if session.graph is not graph:
        verb = "evaluate" if what == "tensor" else "execute"
        raise ValueError(
            f"Cannot use the given session to {verb} {what}: the {what}'s graph is different "
            "from the session's graph."
        )
    return session


def name_scope(name: str | None, default_name: str | None = None, values: Any = None) -> Any:
    """``with aiotf.name_scope("layer1"):`` on the default graph (TF1 signature)."""
    graph = get_default_graph()
    return graph.name_scope(name if name is not None else default_name)


def device(device_name_or_function: Any) -> Any:
    return get_default_graph().device(device_name_or_function)


def control_dependencies(control_inputs: Iterable[Any] | None) -> Any:
    return get_default_graph().control_dependencies(control_inputs)
