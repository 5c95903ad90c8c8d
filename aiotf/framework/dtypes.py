"""Element types: TensorFlow's ``DataType`` enum paired with numpy dtypes.

A :class:`DType` is interned per enum value, so ``dtype is float32`` and ``==`` both work.
Reference types (``float32_ref``, enum + 100) exist for TF1 variables.

bfloat16's numpy type comes from ``ml_dtypes``, imported the first time it is needed
(:func:`load_ml_dtypes`: a graph's first bfloat16 tensor, an array of ml_dtypes' bfloat16 met,
any of bfloat16's numpy facets): ml_dtypes 0.7.0 takes ~0.55 s to import (it registers its
ufunc loops one by one, each a linear search of the loops before it), more than the rest of
``import aiotf``, and holds the GIL throughout, so a graph imports it while it is built, never
a run on the event loop.
"""

from __future__ import annotations

import builtins
import importlib
from typing import Any

import numpy as np

_ML_DTYPES = "ml_dtypes"  # bfloat16's numpy type: ml_dtypes.bfloat16 (see the module docstring)


class DType:
    """One element type. Build with :func:`as_dtype`; instances are interned."""

    __slots__ = ("_enum", "_name", "_np")

    _by_enum: dict[int, DType] = {}

    def __init__(self, enum: int, name: str, np_type: Any) -> None:
        self._enum = enum
        self._name = name
        self._np = None if np_type is None or np_type == _ML_DTYPES else np.dtype(np_type)

    @property
    def name(self) -> str:
        return self._name

    @property
    def as_datatype_enum(self) -> int:
        return self._enum

    @property
    def as_numpy_dtype(self) -> Any:
        """The numpy scalar type (``np.float32``); strings are ``object`` arrays of bytes."""
        np_dtype = self._np if self._np is not None else self._own_np()
        return np_dtype.type if np_dtype is not None else None

    @property
    def np_dtype(self) -> np.dtype[Any]:
        """The numpy dtype arrays of this type hold (``object`` for strings and resources)."""
        np_dtype = self._np if self._np is not None else self._own_np()
        return np_dtype if np_dtype is not None else np.dtype(object)

    def _own_np(self) -> np.dtype[Any] | None:
        """The numpy dtype of a type whose numpy type is not loaded yet (bfloat16), else None."""
        if self.base_dtype is not bfloat16:
            return None
        load_ml_dtypes()
        return self._np

    @property
    def is_ref_dtype(self) -> builtins.bool:
        return self._enum > 100

    @property
    def base_dtype(self) -> DType:
        return _BY_ENUM[self._enum - 100] if self._enum > 100 else self

    @property
    def _as_ref(self) -> DType:
        return self if self._enum > 100 else _BY_ENUM[self._enum + 100]

    @property
    def is_floating(self) -> builtins.bool:
        return self.base_dtype in _FLOATING

    @property
    def is_integer(self) -> builtins.bool:
        return self.base_dtype in _INTEGER

    @property
    def is_unsigned(self) -> builtins.bool:
        return self.base_dtype in (uint8, uint16, uint32, uint64)

    @property
    def is_complex(self) -> builtins.bool:
        return self.base_dtype in (complex64, complex128)

    @property
    def is_bool(self) -> builtins.bool:
        return self.base_dtype is bool

    @property
    def is_numeric(self) -> builtins.bool:
        return self.base_dtype in _NUMERIC

    @property
    def size(self) -> int:
        np_dtype = self._np if self._np is not None else self._own_np()
        return np_dtype.itemsize if np_dtype is not None else 1

    @property
    def min(self) -> Any:
        return _limits(self)[0]

    @property
    def max(self) -> Any:
        return _limits(self)[1]

    def is_compatible_with(self, other: Any) -> builtins.bool:
        return self.base_dtype is as_dtype(other).base_dtype

    def __eq__(self, other: object) -> builtins.bool:
        if isinstance(other, DType):
            return self is other
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other: object) -> builtins.bool:
        return not self == other

    def __hash__(self) -> int:
        return self._enum

    def __repr__(self) -> str:
        return f"tf.{self._name}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (as_dtype, (self._enum,))


def _limits(dt: DType) -> tuple[Any, Any]:
    base = dt.base_dtype
    if base.is_integer:
        info = np.iinfo(base.np_dtype)
        return info.min, info.max
    if base.is_floating:
        info = finfo(base.np_dtype)
        return float(-info.max), float(info.max)
    if base is bool:
        return False, True
    raise TypeError(f"Cannot find minimum/maximum value of {dt}")


_SPECS: list[tuple[int, str, Any]] = [
    (1, "float32", np.float32),
    (2, "float64", np.float64),
    (3, "int32", np.int32),
    (4, "uint8", np.uint8),
    (5, "int16", np.int16),
    (6, "int8", np.int8),
    (7, "string", None),
    (8, "complex64", np.complex64),
    (9, "int64", np.int64),
    (10, "bool", np.bool_),
    (11, "qint8", np.int8),
    (12, "quint8", np.uint8),
    (13, "qint32", np.int32),
    (14, "bfloat16", _ML_DTYPES),
    (15, "qint16", np.int16),
    (16, "quint16", np.uint16),
    (17, "uint16", np.uint16),
    (18, "complex128", np.complex128),
    (19, "float16", np.float16),
    (20, "resource", None),
    (21, "variant", None),
    (22, "uint32", np.uint32),
    (23, "uint64", np.uint64),
]

_BY_ENUM: dict[int, DType] = {}
for _enum, _name, _np_type in _SPECS:
    _BY_ENUM[_enum] = DType(_enum, _name, _np_type)
    _BY_ENUM[_enum + 100] = DType(_enum + 100, _name + "_ref", _np_type)

float32 = _BY_ENUM[1]
float64 = _BY_ENUM[2]
int32 = _BY_ENUM[3]
uint8 = _BY_ENUM[4]
int16 = _BY_ENUM[5]
int8 = _BY_ENUM[6]
string = _BY_ENUM[7]
complex64 = _BY_ENUM[8]
int64 = _BY_ENUM[9]
bool = _BY_ENUM[10]  # noqa: A001 - TensorFlow's name
qint8 = _BY_ENUM[11]
quint8 = _BY_ENUM[12]
qint32 = _BY_ENUM[13]
bfloat16 = _BY_ENUM[14]
qint16 = _BY_ENUM[15]
quint16 = _BY_ENUM[16]
uint16 = _BY_ENUM[17]
complex128 = _BY_ENUM[18]
float16 = _BY_ENUM[19]
resource = _BY_ENUM[20]
variant = _BY_ENUM[21]
uint32 = _BY_ENUM[22]
uint64 = _BY_ENUM[23]
half = float16
double = float64

_FLOATING = frozenset({float16, bfloat16, float32, float64})
_INTEGER = frozenset({int8, int16, int32, int64, uint8, uint16, uint32, uint64})
_NUMERIC = _FLOATING | _INTEGER | {complex64, complex128, qint8, quint8, qint16, quint16, qint32}

_BY_NAME: dict[str, DType] = {dt.name: dt for dt in _BY_ENUM.values()}
_BY_NAME.update({"half": float16, "double": float64, "float": float32})

_BY_NUMPY: dict[Any, DType] = {
    np.dtype(np.float32): float32,
    np.dtype(np.float64): float64,
    np.dtype(np.int32): int32,
    np.dtype(np.uint8): uint8,
    np.dtype(np.int16): int16,
    np.dtype(np.int8): int8,
    np.dtype(np.complex64): complex64,
    np.dtype(np.int64): int64,
    np.dtype(np.bool_): bool,
    np.dtype(np.uint16): uint16,
    np.dtype(np.complex128): complex128,
    np.dtype(np.float16): float16,
    np.dtype(np.uint32): uint32,
    np.dtype(np.uint64): uint64,
    np.dtype(object): string,
}


def _is_object_type(type_value: Any) -> builtins.bool:
    return isinstance(type_value, np.dtype) or type_value is object or type_value is np.object_


def as_dtype(type_value: Any) -> DType:
    """Convert a DType, enum value, name, numpy dtype or Python type into a :class:`DType`."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, int) and not isinstance(type_value, builtins.bool):
        found = _BY_ENUM.get(type_value)
        if found is not None:
            return found
    elif isinstance(type_value, str):
        found = _BY_NAME.get(type_value)
        if found is not None:
            return found
    elif type_value is float:
        return float32
    elif type_value is builtins.bool:
        return bool
    elif any(type_value is t for t in (int, complex, bytes, str)):  # `is`: np.dtype(int) == int
        pass  # TensorFlow maps no DType to these Python types (numpy would: int64, complex128...)
    elif type_value is not None:  # np.dtype(None) would be float64
        try:
            np_dtype = np.dtype(type_value)
        except TypeError:
            np_dtype = None
        if np_dtype is not None and np_dtype.kind == "O" and not _is_object_type(type_value):
            np_dtype = None  # numpy maps any Python class (dict, list...) to object
        if np_dtype is not None:
            if np_dtype.kind in "SU":
                return string
            found = _BY_NUMPY.get(np_dtype)
            if found is None and _of_ml_dtypes(np_dtype):
                load_ml_dtypes()  # an array made with ml_dtypes before aiotf needed it
                found = _BY_NUMPY.get(np_dtype)
            if found is not None:
                return found
    raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.")


def load_ml_dtypes() -> Any:
    """ml_dtypes, imported; on the first call bfloat16 gets its numpy type from it (the
    reference type's first, so that neither is seen without it once bfloat16's is set)."""
    module = importlib.import_module(_ML_DTYPES)
    if bfloat16._np is None:
        np_dtype = np.dtype(module.bfloat16)
        _BY_NUMPY[np_dtype] = bfloat16
        bfloat16._as_ref._np = np_dtype
        bfloat16._np = np_dtype
    return module


def _of_ml_dtypes(np_dtype: np.dtype[Any]) -> builtins.bool:
    """Whether ``np_dtype`` is one of ml_dtypes' (bfloat16 among them)."""
    return np_dtype.type.__module__.startswith(_ML_DTYPES)


def finfo(np_dtype: np.dtype[Any]) -> Any:
    """The machine limits of a floating-point numpy dtype (numpy's ``finfo``, and
    ml_dtypes' for its types, bfloat16)."""
    if _of_ml_dtypes(np_dtype):
        return load_ml_dtypes().finfo(np_dtype)
    return np.finfo(np_dtype)


def from_numpy(np_dtype: np.dtype[Any]) -> DType:
    """The DType for arrays of ``np_dtype`` (fast path used on feeds and kernel outputs)."""
    found = _BY_NUMPY.get(np_dtype)
    if found is not None:
        return found
    return as_dtype(np_dtype)


__all__ = [
    "DType",
    "as_dtype",
    "bfloat16",
    "bool",
    "complex64",
    "complex128",
    "double",
    "finfo",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "half",
    "int8",
    "int16",
    "int32",
    "int64",
    "load_ml_dtypes",
    "qint8",
    "qint16",
    "qint32",
    "quint8",
    "quint16",
    "resource",
    "string",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "variant",
]
