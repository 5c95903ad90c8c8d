"""Attr values: ``AttrValue`` protos to Python values and back.

Python values are: ``bytes`` (string), ``int``, ``float``, ``bool``, :class:`DType` (type),
:class:`TensorShape` (shape), ``np.ndarray`` (tensor), a ``NameAttrList`` proto (func), or a
``list`` of one of those. An ``AttrValue`` records which it is, so decoding needs no OpDef.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aiotf.framework import dtypes, tensor_util
from aiotf.framework.tensor_shape import TensorShape, as_shape
from aiotf.proto import AttrValue, NameAttrList

_LIST_FIELDS = ("s", "i", "f", "b", "type", "shape", "tensor", "func")


def decode(value: Any) -> Any:
    """The Python value an ``AttrValue`` holds."""
    kind = value.WhichOneof("value")
    if kind == "list":
        lst = value.list
        for field in _LIST_FIELDS:
            items = getattr(lst, field)
            if len(items):
                return [_decode_scalar(field, item) for item in items]
        return []
    if kind is None:
        return None
    return _decode_scalar(kind, getattr(value, kind))


def _decode_scalar(kind: str, item: Any) -> Any:
    if kind == "type":
        return dtypes.as_dtype(item)
    if kind == "shape":
        return as_shape(item)
    if kind == "tensor":
        return tensor_util.make_ndarray(item)
    if kind == "f":
        return float(item)
    return item


def encode(value: Any, attr_type: str | None = None) -> Any:
    """An ``AttrValue`` holding ``value``; ``attr_type`` (``"list(int)"``...) settles empty lists."""
    if isinstance(value, AttrValue):
        return value
    if isinstance(value, list | tuple) and attr_type != "shape":  # a shape given as a list
        out = AttrValue()
        out.list.SetInParent()
        if not value:
            return out
        base = attr_type[5:-1] if attr_type and attr_type.startswith("list(") else None
        field = _FIELD_OF_TYPE.get(base) if base else _field_for(value[0])
        if field is None:
            field = _field_for(value[0])
        target = getattr(out.list, field)
        if field in ("shape", "tensor", "func"):
            for item in value:
                target.add().CopyFrom(_encode_message(field, item))
        else:
            target.extend(_encode_plain(field, item) for item in value)
        return out
    field = _FIELD_OF_TYPE.get(attr_type) if attr_type else None
    field = field or _field_for(value)
    if field in ("shape", "tensor", "func"):
        out = AttrValue()
        getattr(out, field).CopyFrom(_encode_message(field, value))
        return out
    return AttrValue(**{field: _encode_plain(field, value)})


_FIELD_OF_TYPE = {
    "string": "s",
    "int": "i",
    "float": "f",
    "bool": "b",
    "type": "type",
    "shape": "shape",
    "tensor": "tensor",
    "func": "func",
}


def _field_for(value: Any) -> str:
    if isinstance(value, bool | np.bool_):
        return "b"
    if isinstance(value, int | np.integer):
        return "i"
    if isinstance(value, float | np.floating):
        return "f"
    if isinstance(value, bytes | str):
        return "s"
    if isinstance(value, dtypes.DType):
        return "type"
    if isinstance(value, TensorShape):
        return "shape"
    if isinstance(value, np.ndarray):
        return "tensor"
    if isinstance(value, NameAttrList):
        return "func"
    if type(value).__name__ == "TensorProto":
        return "tensor"
    if type(value).__name__ == "TensorShapeProto":
        return "shape"
    raise TypeError(f"Cannot store a {type(value).__name__} in an attr")


def _encode_plain(field: str, value: Any) -> Any:
    if field == "s":
        return value.encode() if isinstance(value, str) else bytes(value)
    if field == "type":
        return dtypes.as_dtype(value).as_datatype_enum
    if field == "i":
        return int(value)
    if field == "f":
        return float(value)
    return bool(value)


def _encode_message(field: str, value: Any) -> Any:
    if field == "shape":
        return value if type(value).__name__ == "TensorShapeProto" else as_shape(value).as_proto()
    if field == "tensor":
        return (
            value if type(value).__name__ == "TensorProto" else tensor_util.make_tensor_proto(value)
        )
    if isinstance(value, str):
        return NameAttrList(name=value)
    return value
