"""Static shapes: :class:`TensorShape` with unknown rank or unknown dimensions (``None``)."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any


class TensorShape:
    """A possibly partially known shape. ``dims`` is ``None`` when the rank is unknown."""

    __slots__ = ("_dims",)

    def __init__(self, dims: Any) -> None:
        if dims is None:
            self._dims: tuple[int | None, ...] | None = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, int):
            self._dims = (_dim(dims),)
        else:
            self._dims = tuple(_dim(d) for d in dims)

    @property
    def dims(self) -> list[int | None] | None:
        return None if self._dims is None else list(self._dims)

    @property
    def rank(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    ndims = rank

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims or ():
            n *= d or 0
        return n

    def as_list(self) -> list[int | None]:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_compatible_with(self, other: Any) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims, strict=True)
        )

    def merge_with(self, other: Any) -> TensorShape:
        that = as_shape(other)
        if self._dims is None:
            return that
        if that._dims is None:
            return self
        if not self.is_compatible_with(that):
            raise ValueError(f"Shapes {self} and {that} are not compatible")
        return TensorShape(
            a if a is not None else b for a, b in zip(self._dims, that._dims, strict=True)
        )

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def with_rank(self, rank: int) -> TensorShape:
        if self._dims is None:
            return unknown_shape(rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self) -> Iterator[int | None]:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key: Any) -> Any:
        if self._dims is None:
            return None if isinstance(key, int) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __eq__(self, other: object) -> bool:
        try:
            return self._dims == as_shape(other)._dims
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self._dims)

    def __bool__(self) -> bool:
        return self._dims is not None

    def __repr__(self) -> str:
        return f"TensorShape({self.dims!r})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join(str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"

    def as_proto(self) -> Any:
        from aiotf.proto import TensorShapeProto

        if self._dims is None:
            return TensorShapeProto(unknown_rank=True)
        return TensorShapeProto(
            dim=[TensorShapeProto.Dim(size=-1 if d is None else d) for d in self._dims]
        )


def _dim(d: Any) -> int | None:
    if d is None:
        return None
    value = getattr(d, "value", d)  # accept TF1-style Dimension objects
    if value is None:
        return None
    try:
        value = operator.index(value)  # as TensorFlow's Dimension: no strings, no floats
    except TypeError:
        raise TypeError(
            "Dimension value must be integer or None or have an __index__ method, got value "
            f"'{value!r}' with type '{type(value)!r}'"
        ) from None
    if value < 0:
        if value == -1:
            return None
        raise ValueError(f"Dimension {value} must be >= 0")
    return value


def as_shape(shape: Any) -> TensorShape:
    if isinstance(shape, TensorShape):
        return shape
    if hasattr(shape, "unknown_rank") and hasattr(shape, "dim"):  # a TensorShapeProto
        if shape.unknown_rank:
            return TensorShape(None)
        return TensorShape([None if d.size < 0 else d.size for d in shape.dim])
    return TensorShape(shape)


def unknown_shape(rank: int | None = None) -> TensorShape:
    return TensorShape(None if rank is None else [None] * rank)


def scalar() -> TensorShape:
    return TensorShape(())


def broadcast_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    """The static broadcast of two shapes (numpy rules); raises ValueError when incompatible."""
    if a.rank is None or b.rank is None:
        return TensorShape(None)
    n = max(len(a), len(b))
    ones: list[int | None] = [1] * n
    ad = ones[: n - len(a)] + a.as_list()
    bd = ones[: n - len(b)] + b.as_list()
    out: list[int | None] = []
    for x, y in zip(ad, bd, strict=True):
        out.append(_broadcast_dim(x, y, a, b))
    return TensorShape(out)


def _broadcast_dim(x: int | None, y: int | None, a: TensorShape, b: TensorShape) -> int | None:
    if x == 1:
        return y
    if y == 1:
        return x
    if x is None or y is None:
        return x if y is None else y
    if x != y:
        raise ValueError(f"Incompatible shapes: {a} vs. {b}")
    return x
