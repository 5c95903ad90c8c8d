"""``apply_op``: add a node of a registered op type, converting Python values to its inputs.

As TensorFlow's ``op_def_library``: the op gets a name scope of its own, inputs that are not
Tensors become Consts named after their argument (``add/y``), typed like the Tensor inputs
that share their type attr, so ``x + 1`` adds a float32 one to a float32 ``x``. A list that
holds Tensors is packed into one (``Pack``), as TensorFlow's autopacking conversion does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from aiotf.framework import dtypes, errors
from aiotf.framework.op_def_registry import ArgDef, InferenceContext, lookup
from aiotf.framework.ops import (
    Operation,
    Tensor,
    constant_value,
    convert_to_tensor,
    get_default_graph,
)
from aiotf.framework.tensor_util import make_tensor_proto


def apply_op(
    op_type: str,
    inputs: Sequence[Any] = (),
    attrs: dict[str, Any] | None = None,
    name: str | None = None,
) -> Operation:
    """Add an ``op_type`` node whose inputs are ``inputs`` (one entry per input arg)."""
    op_def = lookup(op_type)
    attrs = dict(attrs or {})
    if len(inputs) != len(op_def.inputs):
        raise TypeError(f"{op_type} takes {len(op_def.inputs)} inputs, got {len(inputs)}")
    bound = _bound_types(op_def.inputs, inputs, attrs)
    graph = get_default_graph()
    with graph.name_scope(name or op_type) as scope:
        tensors: list[Tensor] = []
        for arg, value in zip(op_def.inputs, inputs, strict=True):
            tensors.extend(_convert_arg(op_type, arg, value, bound))
        return graph.create_op(op_type, tensors, attrs, name=scope)


# TensorFlow's add converts its second operand to a Tensor (its first's dtype a hint) before
# the op is made, so a value of another type meets the op as a Tensor.
_CONVERTED_FIRST = frozenset({"Add", "AddV2"})

# A type attr's binding: its dtype, and the arg it came from (TensorFlow's errors name it).
Bound = dict[str, tuple[dtypes.DType, str]]


def _bound_types(args: Sequence[ArgDef], inputs: Sequence[Any], attrs: dict[str, Any]) -> Bound:
    bound = {k: (dtypes.as_dtype(v), k) for k, v in attrs.items() if isinstance(v, dtypes.DType)}
    for arg, value in zip(args, inputs, strict=True):
        values = value if arg.number_attr and isinstance(value, list | tuple) else [value]
        for v in values:
            if arg.type_attr and isinstance(v, Tensor):
                bound.setdefault(arg.type_attr, (v.dtype.base_dtype, arg.name))
    return bound


def _convert_arg(op_type: str, arg: ArgDef, value: Any, bound: Bound) -> list[Tensor]:
    if arg.number_attr or arg.type_list_attr:
        if not isinstance(value, list | tuple):
            raise TypeError(f"Expected list for '{arg.name}' argument, got {value!r}.")
        try:
            return [
                _convert_one(op_type, arg, v, bound, f"{arg.name}_{i}") for i, v in enumerate(value)
            ]
        except TypeError:
            types = [_observed_type(v) for v in value]
            if arg.type_attr and None not in types and len(set(types)) > 1:
                raise TypeError(
                    f"Tensors in list passed to '{arg.name}' of '{op_type}' Op have types "
                    f"[{', '.join(t.name for t in types if t is not None)}] that don't all match."
                ) from None
            raise
    return [_convert_one(op_type, arg, value, bound, arg.name)]


def _convert_one(op_type: str, arg: ArgDef, value: Any, bound: Bound, name: str) -> Tensor:
    dtype, origin = (arg.type, "") if arg.type else bound.get(arg.type_attr, (None, ""))
    if value is None:
        raise ValueError(
            f"Tried to convert '{arg.name}' to a tensor and failed. Error: None values not "
            "supported."
        )
    try:
        tensor = convert(value, dtype=dtype, name=name)
    except (TypeError, ValueError) as e:
        observed = _observed_type(value)
        # TensorFlow's op_def_library words: a Tensor of another type does not match the
        # argument it was bound by (and so does a value for an add, whose Python function
        # makes a Tensor of it first); any other value is named as it was given.
        if arg.type_attr and dtype is not None and observed not in (None, dtype):
            if isinstance(value, Tensor) or op_type in _CONVERTED_FIRST:
                raise TypeError(
                    f"Input '{arg.name}' of '{op_type}' Op has type {observed.name} that does "
                    f"not match type {dtype.name} of argument '{origin}'."
                ) from None
            raise TypeError(
                f"Expected {dtype.name} passed to parameter '{arg.name}' of op '{op_type}', got "
                f"{value} of type '{type(value).__name__}' instead. Error: {e}"
            ) from None
        raise TypeError(f"Input '{arg.name}': {e}") from None
    if arg.type_attr:
        bound.setdefault(arg.type_attr, (tensor.dtype.base_dtype, arg.name))
    return tensor


def _observed_type(value: Any) -> dtypes.DType | None:
    """The dtype ``value`` has (a Tensor) or would become alone (a Python or numpy value)."""
    if isinstance(value, Tensor):
        return value.dtype.base_dtype
    try:
        return dtypes.as_dtype(make_tensor_proto(value).dtype)
    except (TypeError, ValueError):
        return None


def convert(value: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    """``convert_to_tensor``, plus TensorFlow's autopacking of (nested) lists holding Tensors."""
    if isinstance(value, list | tuple) and _holds_tensor(value):
        return _autopack(value, dtypes.as_dtype(dtype) if dtype is not None else None, name)
    return convert_to_tensor(value, dtype=dtype, name=name)


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, Tensor):
        return True
    return isinstance(value, list | tuple) and any(_holds_tensor(v) for v in value)


def _autopack(values: Sequence[Any], dtype: dtypes.DType | None, name: str | None) -> Tensor:
    """A ``Pack`` named ``name`` of ``values``; plain elements become Consts named by index."""
    if dtype is None:
        dtype = next(_tensors(values)).dtype.base_dtype
    graph = get_default_graph()
    with graph.name_scope(name or "packed") as scope:
        elems = []
        for i, v in enumerate(values):
            if isinstance(v, list | tuple) and _holds_tensor(v):
                elems.append(_autopack(v, dtype, str(i)))
            elif isinstance(v, Tensor) and v.dtype.base_dtype is not dtype:
                raise TypeError(
                    f"Cannot convert a list containing a tensor of dtype {v.dtype.name} to "
                    f"{dtype.name} (Tensor is: {v!r})"
                )
            else:
                elems.append(convert_to_tensor(v, dtype=dtype, name=str(i)))
        return graph.create_op("Pack", elems, {"axis": 0}, name=scope).outputs[0]


def _tensors(values: Any) -> Iterator[Tensor]:
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, list | tuple):
            yield from _tensors(v)


def refine_shapes(op: Operation, known: dict[int, np.ndarray[Any, Any]]) -> None:
    """Re-run ``op``'s shape function knowing the values of more inputs (by input index).

    TensorFlow's shape inference folds small subgraphs (a ``Cast`` of a Const, the ``Fill`` of
    ``ones_like``) to see through them; a building function that made such an input tells
    the shape function its value instead.
    """
    shape_fn = op.op_def.shape_fn
    if shape_fn is None:
        return
    ctx = InferenceContext(
        op.type,
        op.name,
        [t.shape for t in op.inputs],
        [t.dtype for t in op.inputs],
        {k: op.get_attr(k) for k in op.node_def.attr},
        lambda i: known[i] if i in known else constant_value(op.inputs[i]),
    )
    try:
        shapes = shape_fn(ctx)
    except errors.InvalidArgumentError as e:
        raise ValueError(e.message) from None
    for t, s in zip(op.outputs, shapes, strict=False):
        t.set_shape(s)
