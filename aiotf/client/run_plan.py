"""Run plans: what ``Session.run`` works out from its fetches and feed keys, once per signature.

Resolving a fetch structure (``FetchMapper.for_fetch``: names and objects to graph elements,
nesting, duplicates), the feed keys (to tensors, with their dtypes) and which fetches are fed
costs more than running a small graph does. None of it depends on the values, so a
:class:`RunPlan` keeps it for a *signature*: the fetch structure and the feed keys.

The key is rebuilt from the call on every run, so whatever the caller changed since (a list
mutated in place, a different dict with the same tensors) is a different or the same signature
exactly as its contents say. ``signature`` builds it; it is ``None`` — the run is analysed afresh,
as TensorFlow always does — for anything it cannot key exactly:

- leaves: Tensors and Operations by identity, names (``str``) by value, and objects with an
  ``_as_graph_element`` conversion (a Variable) by the element it returns on this call;
- lists and tuples (namedtuples too) of keyable fetches, with their type (the result's type);
- ``dict`` and ``OrderedDict`` with ``str`` keys, with their type and key order;
- feed keys: Tensors (identity) and names (value), in ``feed_dict`` order.

Nothing in a plan goes stale as the graph grows: a graph is append-only, so a name resolves to
the same element forever and an element never leaves its graph; a signature that failed to
resolve raised and was never stored. What can change between runs is read on every run: the
feed values, and the fed tensors' static shapes (``set_shape``), which ``FeedConverter`` checks.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any

from aiotf.client.feed_values import FeedConverter, client_value
from aiotf.client.fetch_mapper import FetchMapper
from aiotf.framework.ops import Graph, Operation, Tensor

MAX_PLANS = 1024  # per session; the cache starts afresh when full

# Where a unique fetched element's value comes from: an index into the fetched values, a fed
# tensor's name (a fetch that is also fed), or None (an op: None comes back).
Source = int | str | None


class RunPlan:
    """One signature's fetch mapper, fetch and target names, feed converters, result sources."""

    __slots__ = ("converters", "fetch_names", "mapper", "sources", "targets")

    def __init__(
        self,
        mapper: FetchMapper,
        converters: tuple[FeedConverter, ...],
        fetch_names: tuple[str, ...],
        targets: tuple[str, ...],
    ) -> None:
        self.mapper = mapper
        self.converters = converters
        self.fetch_names = fetch_names
        self.targets = targets
        self.sources = result_sources(mapper, fetch_names)

    @classmethod
    def analyse(
        cls, fetches: Any, feed_dict: Mapping[Any, Any] | None, graph: Graph
    ) -> tuple[RunPlan, dict[str, Any]]:
        """The plan for this call, and its feeds converted, checked in TensorFlow's order:
        the fetches, then each feed's key and value in turn."""
        mapper = FetchMapper.for_fetch(fetches, graph)
        converters: list[FeedConverter] = []
        feeds: dict[str, Any] = {}
        for key, value in (feed_dict or {}).items():
            converter = FeedConverter(feed_tensor(graph, key))
            feeds[converter.name] = converter(value, key)
            converters.append(converter)
        fetch_names, targets = split_fetches(mapper.unique_fetches(), feeds)
        return cls(mapper, tuple(converters), tuple(fetch_names), tuple(targets)), feeds

    def convert_feeds(self, feed_dict: Mapping[Any, Any] | None) -> dict[str, Any]:
        """The feeds of a call with this plan's signature, converted and checked."""
        if not self.converters:
            return {}
        assert feed_dict is not None
        feeds: dict[str, Any] = {}  # a loop, not a comprehension: no function call of its own
        for c, (key, value) in zip(self.converters, feed_dict.items(), strict=True):
            feeds[c.name] = c(value, key)
        return feeds

    def results(self, values: list[Any], feeds: Mapping[str, Any]) -> Any:
        """The caller's structure from the fetched ``values`` (in ``fetch_names`` order)."""
        return build_results(self.mapper, self.sources, values, feeds)


class RunPlans:
    """A session's plans by signature (see the module docstring). Safe to share between
    threads: a plan is immutable once stored, and two threads building one store equal plans."""

    __slots__ = ("_plans",)

    def __init__(self) -> None:
        self._plans: dict[Any, RunPlan] = {}

    def plan(
        self, fetches: Any, feed_dict: Mapping[Any, Any] | None, graph: Graph
    ) -> tuple[RunPlan, dict[str, Any]]:
        """The plan for this call (stored, or analysed now) and its feeds converted."""
        key = signature(fetches, feed_dict)
        plan = self._plans.get(key) if key is not None else None
        if plan is not None:
            return plan, plan.convert_feeds(feed_dict)
        plan, feeds = RunPlan.analyse(fetches, feed_dict, graph)
        if key is not None:
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            self._plans[key] = plan
        return plan, feeds

    def __len__(self) -> int:
        return len(self._plans)


def signature(fetches: Any, feed_dict: Mapping[Any, Any] | None) -> Any:
    """The key of a call's plan, or None when it cannot be keyed exactly."""
    fetch_key = _fetch_key(fetches)
    if fetch_key is None:
        return None
    if not feed_dict:
        return fetch_key, ()
    if type(feed_dict) is not dict:
        return None
    feed_keys = tuple(feed_dict)
    for key in feed_keys:
        kind = type(key)
        if kind is not Tensor and kind is not str:
            return None
    return fetch_key, feed_keys


def _fetch_key(fetch: Any) -> Any:
    kind = type(fetch)
    if kind is Tensor or kind is Operation or kind is str:
        return fetch
    if isinstance(fetch, list | tuple):
        key: list[Any] = [kind]
        for item in fetch:
            sub = _fetch_key(item)
            if sub is None:
                return None
            key.append(sub)
        return tuple(key)
    if kind is dict or kind is collections.OrderedDict:
        key = [kind]
        for name, item in fetch.items():
            sub = _fetch_key(item)
            if type(name) is not str or sub is None:
                return None
            key += (name, sub)
        return tuple(key)
    if isinstance(fetch, Mapping) or hasattr(kind, "__attrs_attrs__"):
        return None  # mapped as structures (``FetchMapper.for_fetch``), never converted
    conversion = getattr(fetch, "_as_graph_element", None)
    if conversion is not None and callable(conversion):
        element = conversion()
        if type(element) is Tensor or type(element) is Operation:
            return element
    return None


def result_sources(mapper: FetchMapper, fetch_names: Sequence[str]) -> tuple[Source, ...]:
    """Where each of ``mapper``'s unique elements gets its value (see ``Source``)."""
    index = {name: i for i, name in enumerate(fetch_names)}
    return tuple(
        None if isinstance(el, Operation) else index.get(el.name, el.name)
        for el in mapper.unique_fetches()
    )


def build_results(
    mapper: FetchMapper, sources: Sequence[Source], values: Sequence[Any], feeds: Mapping[str, Any]
) -> Any:
    """The caller's structure: fetched ``values`` (``client_value``), fed values as converted
    (as TensorFlow returns them), None for ops."""
    out = [
        None
        if source is None
        else client_value(values[source])
        if isinstance(source, int)
        else feeds[source]
        for source in sources
    ]
    if mapper.is_element:
        return out[0]
    return mapper.build_results(out)


def feed_tensor(graph: Graph, key: Any) -> Tensor:
    """The tensor a ``feed_dict`` key names (TypeError for anything else, as TensorFlow)."""
    try:
        tensor = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
    except Exception as e:
        raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e.args[0]}") from None
    assert isinstance(tensor, Tensor)
    return tensor


def split_fetches(
    elements: list[Tensor | Operation], fed: Mapping[str, Any] | set[str]
) -> tuple[list[str], list[str]]:
    """The tensor names to fetch (fed ones come from the feed) and the target op names."""
    fetch_names: list[str] = []
    targets: list[str] = []
    for element in elements:
        if isinstance(element, Operation):
            targets.append(element.name)
        elif element.name not in fed:
            fetch_names.append(element.name)
    return fetch_names, targets
