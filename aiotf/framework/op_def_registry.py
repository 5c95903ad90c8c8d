"""The op registry: what each op type is — its inputs, outputs, attrs with defaults, and shape function.

Ops are declared with TensorFlow's spec strings, so a definition reads like ``REGISTER_OP``::

    register_op(
        "MatMul",
        inputs=["a: T", "b: T"],
        outputs=["product: T"],
        attrs=["transpose_a: bool = false", "transpose_b: bool = false", "T: {half, float, double}"],
        shape_fn=matmul_shape,
    )

Arg specs: ``name: float`` (fixed type), ``name: T`` (type attr), ``name: N * T`` (N tensors of T),
``name: Tlist`` (a list(type) attr), ``name: Ref(T)``. Attr specs: ``name: type``, ``name: int >= 1``,
``name: {float, int32}`` (allowed types), ``name: {'SAME', 'VALID'}`` (allowed strings),
``name: list(type) = []``, with an optional ``= default`` in TensorFlow's text syntax.

This registry is one of three linked only by the op-type string: kernels (``aiotf.kernels``) and
gradients live in their own tables.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from aiotf.framework import dtypes, errors
from aiotf.framework.tensor_shape import TensorShape, as_shape

if TYPE_CHECKING:
    import numpy as np

_NO_DEFAULT: Any = object()

ATTR_TYPES = frozenset(
    {"string", "int", "float", "bool", "type", "shape", "tensor", "func", "placeholder"}
)


@dataclasses.dataclass(frozen=True)
class ArgDef:
    """One input or output argument of an op."""

    name: str
    type: dtypes.DType | None = None
    type_attr: str = ""
    number_attr: str = ""
    type_list_attr: str = ""
    is_ref: bool = False


@dataclasses.dataclass(frozen=True)
class AttrDef:
    """One attr: its type (``"int"``, ``"list(type)"``...), default, and constraints."""

    name: str
    type: str
    default: Any = _NO_DEFAULT
    allowed_values: tuple[Any, ...] | None = None
    minimum: int | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT


class InferenceContext:
    """What a shape function sees: input shapes and dtypes, attrs, and constant inputs.

    Constant inputs are resolved only when a shape function asks for one (``const(i)``), once:
    most shape functions never do, and decoding a large Const is not free.
    """

    __slots__ = (
        "_const_of",
        "_consts",
        "attrs",
        "input_dtypes",
        "input_shapes",
        "node_name",
        "op_type",
    )

    def __init__(
        self,
        op_type: str,
        node_name: str,
        input_shapes: Sequence[TensorShape],
        input_dtypes: Sequence[dtypes.DType],
        attrs: dict[str, Any],
        const_of: Callable[[int], np.ndarray[Any, Any] | None] | None = None,
    ) -> None:
        self.op_type = op_type
        self.node_name = node_name
        self.input_shapes = list(input_shapes)
        self.input_dtypes = list(input_dtypes)
        self.attrs = attrs
        self._const_of = const_of
        self._consts: dict[int, np.ndarray[Any, Any] | None] = {}

    def attr(self, name: str) -> Any:
        return self.attrs[name]

    def const(self, index: int) -> np.ndarray[Any, Any] | None:
        """The value of input ``index`` when it is a constant known while building, else None."""
        if self._const_of is None or not 0 <= index < len(self.input_shapes):
            return None
        if index not in self._consts:
            self._consts[index] = self._const_of(index)
        return self._consts[index]

    def invalid(self, message: str) -> errors.InvalidArgumentError:
        return errors.InvalidArgumentError(
            None, None, f"{message} for '{{{{node {self.node_name}}}}} = {self.op_type}[]'"
        )


ShapeFn = Callable[[InferenceContext], Sequence[TensorShape]]


@dataclasses.dataclass(frozen=True)
class OpDef:
    """The definition of one op type."""

    name: str
    inputs: tuple[ArgDef, ...]
    outputs: tuple[ArgDef, ...]
    attrs: dict[str, AttrDef]
    shape_fn: ShapeFn | None = None
    is_stateful: bool = False
    allows_uninitialized_input: bool = False
    is_commutative: bool = False

    def default_attrs(self) -> dict[str, Any]:
        return {name: a.default for name, a in self.attrs.items() if a.has_default}


_REGISTRY: dict[str, OpDef] = {}
_REGISTERED_AT: dict[str, str] = {}


def register_op(
    name: str,
    *,
    inputs: Sequence[str] = (),
    outputs: Sequence[str] = (),
    attrs: Sequence[str] = (),
    shape_fn: ShapeFn | None = None,
    is_stateful: bool = False,
    allows_uninitialized_input: bool = False,
    is_commutative: bool = False,
) -> OpDef:
    """Declare op type ``name``; a second declaration of the same name is an error."""
    if name in _REGISTRY:
        raise ValueError(
            f"Op {name!r} is already registered (first registered at {_REGISTERED_AT[name]})"
        )
    attr_defs = {a.name: a for a in map(_parse_attr, attrs)}
    op_def = OpDef(
        name=name,
        inputs=tuple(_resolve_arg(_parse_arg(s), attr_defs) for s in inputs),
        outputs=tuple(_resolve_arg(_parse_arg(s), attr_defs) for s in outputs),
        attrs=attr_defs,
        shape_fn=shape_fn,
        is_stateful=is_stateful,
        allows_uninitialized_input=allows_uninitialized_input,
        is_commutative=is_commutative,
    )
    _check_arg_attrs(op_def)
    _REGISTRY[name] = op_def
    _REGISTERED_AT[name] = _caller()
    return op_def


def output_types(op_def: OpDef, attrs: dict[str, Any]) -> list[dtypes.DType]:
    """The dtypes of the outputs of a node of ``op_def`` with ``attrs`` (Python values)."""
    return _arg_types(op_def.outputs, attrs)


def input_types(op_def: OpDef, attrs: dict[str, Any]) -> list[dtypes.DType]:
    """The dtypes a node of ``op_def`` with ``attrs`` expects on its inputs."""
    return _arg_types(op_def.inputs, attrs)


def _arg_types(args: Sequence[ArgDef], attrs: dict[str, Any]) -> list[dtypes.DType]:
    out: list[dtypes.DType] = []
    for arg in args:
        if arg.type_list_attr:
            out.extend(dtypes.as_dtype(t) for t in attrs[arg.type_list_attr])
            continue
        dt = arg.type if arg.type is not None else dtypes.as_dtype(attrs[arg.type_attr])
        if arg.is_ref:
            dt = dt._as_ref
        n = int(attrs[arg.number_attr]) if arg.number_attr else 1
        out.extend([dt] * n)
    return out


def get(op_type: str) -> OpDef | None:
    return _REGISTRY.get(op_type)


def lookup(op_type: str, node_name: str = "") -> OpDef:
    """The OpDef of ``op_type``; ``NotFoundError`` naming the op (and node) when unknown."""
    op_def = _REGISTRY.get(op_type)
    if op_def is None:
        where = f" in node '{node_name}'" if node_name else ""
        raise errors.NotFoundError(
            None,
            None,
            f"Op type not registered '{op_type}'{where}. aiotf knows {len(_REGISTRY)} op types; "
            "make sure the op is spelled as TensorFlow spells it.",
        )
    return op_def


def registered_ops() -> list[str]:
    return sorted(_REGISTRY)


def _caller() -> str:
    import traceback

    for frame in reversed(traceback.extract_stack()):  # the innermost frame outside this module
        if frame.filename != __file__:
            return f"{frame.filename}:{frame.lineno}"
    return "<unknown>"


def _check_arg_attrs(op_def: OpDef) -> None:
    for arg in (*op_def.inputs, *op_def.outputs):
        for attr in (arg.type_attr, arg.number_attr, arg.type_list_attr):
            if attr and attr not in op_def.attrs:
                raise ValueError(
                    f"Op {op_def.name!r}: arg {arg.name!r} refers to undeclared attr {attr!r}"
                )


# ----------------------------------------------------------------------------------------------
# Parsing TensorFlow's spec strings
# ----------------------------------------------------------------------------------------------

_ARG_RE = re.compile(r"^\s*(\w+)\s*:\s*(?:(\w+)\s*\*\s*)?(Ref\(\s*(\w+)\s*\)|\w+)\s*$")
_ATTR_RE = re.compile(r"^\s*(\w+)\s*:\s*(.+?)\s*(?:(?<![<>])=(?!=)\s*(.+?))?\s*$")


def _parse_arg(spec: str) -> ArgDef:
    m = _ARG_RE.match(spec)
    if m is None:
        raise ValueError(f"Bad arg spec {spec!r}")
    name, number_attr, type_part, ref_inner = m.groups()
    is_ref = ref_inner is not None
    type_name = ref_inner if is_ref else type_part
    try:
        fixed = dtypes.as_dtype(type_name)
    except TypeError:
        fixed = None
    if fixed is not None and type_name[0].islower():
        return ArgDef(name, type=fixed, number_attr=number_attr or "", is_ref=is_ref)
    if number_attr:
        return ArgDef(name, type_attr=type_name, number_attr=number_attr, is_ref=is_ref)
    # A bare attr name is a type attr or a list(type) attr; resolved against the attrs below.
    return ArgDef(name, type_attr=type_name, is_ref=is_ref)


def _resolve_arg(arg: ArgDef, attrs: dict[str, AttrDef]) -> ArgDef:
    attr = attrs.get(arg.type_attr)
    if attr is not None and attr.type == "list(type)":
        return dataclasses.replace(arg, type_attr="", type_list_attr=arg.type_attr)
    return arg


_REAL = (
    dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
    dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.float16, dtypes.uint32, dtypes.uint64,
)  # fmt: skip
_QUANTIZED = (dtypes.qint8, dtypes.quint8, dtypes.qint32, dtypes.qint16, dtypes.quint16)
_NUMBER = (  # TensorFlow's order (its type errors list them so)
    dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
    dtypes.complex64, dtypes.int64, dtypes.qint8, dtypes.quint8, dtypes.qint32,
    dtypes.bfloat16, dtypes.qint16, dtypes.quint16, dtypes.uint16, dtypes.complex128,
    dtypes.float16, dtypes.uint32, dtypes.uint64,
)  # fmt: skip
_TYPE_SETS: dict[str, tuple[dtypes.DType, ...]] = {
    "realnumbertype": _REAL,
    "numbertype": _NUMBER,
    "quantizedtype": _QUANTIZED,
    "floattype": (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64),
}


def _parse_attr(spec: str) -> AttrDef:
    m = _ATTR_RE.match(spec)
    if m is None:
        raise ValueError(f"Bad attr spec {spec!r}")
    name, type_text, default_text = m.groups()
    minimum = None
    min_match = re.match(r"^(.*?)\s*>=\s*(-?\d+)$", type_text)
    if min_match:
        type_text, minimum = min_match.group(1), int(min_match.group(2))
    allowed: tuple[Any, ...] | None = None
    if type_text.startswith("{"):
        items = [t.strip() for t in type_text.strip("{}").split(",") if t.strip()]
        if items and items[0][0] in "'\"":
            attr_type, allowed = "string", tuple(i.strip("'\"").encode() for i in items)
        else:
            attr_type, allowed = "type", _types(items)
    elif type_text.startswith("list(") and "{" in type_text:
        inner = type_text[len("list(") : -1]
        items = [t.strip() for t in inner.strip("{}").split(",") if t.strip()]
        attr_type, allowed = "list(type)", _types(items)
    elif type_text in _TYPE_SETS:
        attr_type, allowed = "type", _TYPE_SETS[type_text]
    else:
        attr_type = type_text
    base = attr_type[5:-1] if attr_type.startswith("list(") else attr_type
    if base not in ATTR_TYPES:
        raise ValueError(f"Bad attr type {attr_type!r} in {spec!r}")
    default = _NO_DEFAULT if default_text is None else _parse_default(attr_type, default_text)
    return AttrDef(name, attr_type, default, allowed, minimum)


def _types(items: list[str]) -> tuple[dtypes.DType, ...]:
    """The dtypes of a ``{...}`` list, a named set among them in its place (``{realnumbertype,
    qint8}``, as TensorFlow's op specs write it)."""
    out: list[dtypes.DType] = []
    for item in items:
        out.extend(_TYPE_SETS[item] if item in _TYPE_SETS else (dtypes.as_dtype(item),))
    return tuple(out)


def _parse_default(attr_type: str, text: str) -> Any:
    if attr_type.startswith("list("):
        inner = text.strip()[1:-1]
        items = [t.strip() for t in inner.split(",") if t.strip()]
        return [_parse_default(attr_type[5:-1], t) for t in items]
    if attr_type == "int":
        return int(text)
    if attr_type == "float":
        return float(text)
    if attr_type == "bool":
        return text.strip() == "true"
    if attr_type == "type":  # ``int32`` or, as REGISTER_OP writes it, ``DT_INT32``
        name = text.strip()
        return dtypes.as_dtype(name[3:].lower() if name.startswith("DT_") else name)
    if attr_type == "string":
        return text.strip().strip("'\"").encode()
    if attr_type == "shape":
        return _parse_shape(text.strip())
    raise ValueError(f"Default values of attr type {attr_type!r} are not supported")


def _parse_shape(text: str) -> TensorShape:
    if text == "<unknown>":
        return TensorShape(None)
    items = [t.strip() for t in text.strip("[]").split(",") if t.strip()]
    return as_shape([None if t in ("-1", "?") else int(t) for t in items])
