"""Fetch structures: flatten any nesting of fetches into unique graph elements, and rebuild it.

The shape of TensorFlow's ``python/client/session.py``: a mapper per kind of structure
(``for_fetch`` picks it), each able to list its ``unique_fetches()`` and to ``build_results``
from their values. Elements are Tensors (a value comes back) or Operations (None comes back).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

from aiotf.framework.ops import Graph, Operation, Tensor


class FetchMapper:
    """Maps a fetch structure to its elements and back."""

    is_element = False  # a single element: ``build_results(values)`` is ``values[0]``

    def unique_fetches(self) -> list[Tensor | Operation]:
        raise NotImplementedError

    def build_results(self, values: Sequence[Any]) -> Any:
        raise NotImplementedError

    @staticmethod
    def for_fetch(fetch: Any, graph: Graph) -> FetchMapper:
        if fetch is None:
            raise TypeError(
                f'Argument `fetch` = {fetch} has invalid type "{type(fetch).__name__}". '
                "Cannot be None"
            )
        if isinstance(fetch, list | tuple):
            return _ListMapper(fetch, graph)
        if isinstance(fetch, collections.abc.Mapping):
            return _DictMapper(fetch, graph)
        if _is_attrs_instance(fetch):
            return _AttrsMapper(fetch, graph)
        return _ElementMapper(fetch, graph)


class _ElementMapper(FetchMapper):
    is_element = True

    def __init__(self, fetch: Any, graph: Graph) -> None:
        try:
            self._element = graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(
                f'Argument `fetch` = {fetch} has invalid type "{type(fetch).__name__}" must be a '
                f"string or Tensor. ({e})"
            ) from None
        except ValueError as e:
            raise ValueError(
                f"Argument `fetch` = {fetch} cannot be interpreted as a Tensor. ({e})"
            ) from None
        except KeyError as e:
            raise ValueError(
                f"Argument `fetch` = {fetch} cannot be interpreted as a Tensor. ({e})"
            ) from None

    def unique_fetches(self) -> list[Tensor | Operation]:
        return [self._element]

    def build_results(self, values: Sequence[Any]) -> Any:
        return values[0]


class _ListMapper(FetchMapper):
    """Lists, tuples and namedtuples: the same type comes back."""

    def __init__(self, fetches: Sequence[Any], graph: Graph) -> None:
        self._type = type(fetches)
        self._mappers = [FetchMapper.for_fetch(f, graph) for f in fetches]
        self._unique, self._indices = _uniquify(self._mappers)

    def unique_fetches(self) -> list[Tensor | Operation]:
        return self._unique

    def build_results(self, values: Sequence[Any]) -> Any:
        results = [
            m.build_results([values[j] for j in idx])
            for m, idx in zip(self._mappers, self._indices, strict=True)
        ]
        if issubclass(self._type, list):  # a list subclass comes back a plain list, as TF's
            return results
        if self._type is tuple:
            return tuple(results)
        if hasattr(self._type, "_make"):  # namedtuple
            return self._type._make(results)
        return self._type(results)  # type: ignore[call-arg]


class _DictMapper(FetchMapper):
    """Mappings: the same mapping type comes back (dict, OrderedDict, defaultdict...)."""

    def __init__(self, fetches: Any, graph: Graph) -> None:
        self._fetches = fetches
        self._keys = list(fetches.keys())
        self._mappers = [FetchMapper.for_fetch(fetches[k], graph) for k in self._keys]
        self._unique, self._indices = _uniquify(self._mappers)

    def unique_fetches(self) -> list[Tensor | Operation]:
        return self._unique

    def build_results(self, values: Sequence[Any]) -> Any:
        out = _empty_like(self._fetches)
        for key, m, idx in zip(self._keys, self._mappers, self._indices, strict=True):
            out[key] = m.build_results([values[j] for j in idx])
        return out


def _empty_like(mapping: Any) -> Any:
    if isinstance(mapping, collections.defaultdict):
        return collections.defaultdict(mapping.default_factory)
    try:
        return type(mapping)()
    except TypeError:
        return {}


class _AttrsMapper(FetchMapper):
    """Instances of ``attrs`` classes: a new instance with each field's value."""

    def __init__(self, fetch: Any, graph: Graph) -> None:
        self._type = type(fetch)
        fields = [f.name for f in type(fetch).__attrs_attrs__]
        self._mappers = [FetchMapper.for_fetch(getattr(fetch, f), graph) for f in fields]
        self._unique, self._indices = _uniquify(self._mappers)

    def unique_fetches(self) -> list[Tensor | Operation]:
        return self._unique

    def build_results(self, values: Sequence[Any]) -> Any:
        # Positionally, as TensorFlow: a private field's ``__init__`` argument drops the "_".
        results = [
            m.build_results([values[j] for j in idx])
            for m, idx in zip(self._mappers, self._indices, strict=True)
        ]
        make: Callable[..., Any] = self._type
        return make(*results)


def _is_attrs_instance(obj: Any) -> bool:
    return hasattr(type(obj), "__attrs_attrs__")


def _uniquify(mappers: list[FetchMapper]) -> tuple[list[Tensor | Operation], list[list[int]]]:
    """The unique elements of all ``mappers`` and, per mapper, the indices of its elements."""
    unique: list[Tensor | Operation] = []
    position: dict[int, int] = {}
    indices = []
    for m in mappers:
        idx = []
        for element in m.unique_fetches():
            j = position.get(id(element))
            if j is None:
                j = position[id(element)] = len(unique)
                unique.append(element)
            idx.append(j)
        indices.append(idx)
    return unique, indices
