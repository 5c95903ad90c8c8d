"""``Session.make_callable``: a run whose fetch and feed analysis was done once.

``make_callable(fetches, feed_list, accept_options)`` resolves the fetch mapper, the fed tensors
(with their dtypes and static shapes) and the implementation's executors when it is called; the
returned :class:`SessionCallable` only converts the feed values, runs the step and rebuilds the
fetch structure. Its calling convention is TensorFlow's:

- ``await fn(*feed_values)``, one value per ``feed_list`` entry; a wrong count is TensorFlow's
  ``InvalidArgumentError("Expected 2 feed tensors, but got 1")`` (a callable without a feed list
  given positional values is a ``TypeError``, as TensorFlow's is).
- ``options=``/``run_metadata=`` keywords when ``accept_options=True``, or when there is a feed
  list (TensorFlow's feed-list callables delegate to ``run`` and so accept them); otherwise they
  are a ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from aiotf.client.feed_values import FeedConverter
from aiotf.client.fetch_mapper import FetchMapper
from aiotf.client.run_plan import build_results, result_sources
from aiotf.framework import errors
from aiotf.framework.ops import Tensor

if TYPE_CHECKING:
    from aiotf.client.session import BaseSession


class SessionCallable:
    """``await fn(*feed_values, options=None, run_metadata=None)`` (see the module docstring)."""

    __slots__ = (
        "_accepts_options",
        "_feed_keys",
        "_feed_converters",
        "_feed_names",
        "_has_feed_list",
        "_mapper",
        "_runner",
        "_session",
        "_sources",
    )

    def __init__(
        self,
        session: BaseSession,
        mapper: FetchMapper,
        feed_keys: Sequence[Any] | None,
        feed_tensors: Sequence[Tensor],
        fetch_names: Sequence[str],
        runner: Callable[..., Any],
        accept_options: bool,
    ) -> None:
        self._session = session
        self._mapper = mapper
        self._has_feed_list = feed_keys is not None
        self._feed_keys = tuple(feed_keys or ())
        self._feed_converters = tuple(FeedConverter(t) for t in feed_tensors)
        self._feed_names = tuple(dict.fromkeys(t.name for t in feed_tensors))
        self._runner = runner
        self._accepts_options = accept_options or self._has_feed_list
        self._sources = result_sources(mapper, fetch_names)

    @property
    def feed_names(self) -> tuple[str, ...]:
        """The fed tensors' names, in the order the implementation's callable takes them."""
        return self._feed_names

    async def __call__(self, *feed_values: Any, **kwargs: Any) -> Any:
        options, run_metadata = self._run_args(kwargs)
        self._check_count(len(feed_values))
        session = self._session
        session._check_open()
        fed: dict[str, Any] = {}
        for convert, key, value in zip(
            self._feed_converters, self._feed_keys, feed_values, strict=True
        ):
            fed[convert.name] = convert(value, key)
        try:
            values = await self._runner([fed[n] for n in self._feed_names], options, run_metadata)
        except errors.OpError as e:
            raise session._attach_op(e) from None
        return build_results(self._mapper, self._sources, values, fed)

    def _run_args(self, kwargs: dict[str, Any]) -> tuple[Any, Any]:
        allowed = ("options", "run_metadata") if self._accepts_options else ()
        for name in kwargs:
            if name not in allowed:
                raise TypeError(
                    f"The callable made by make_callable() got an unexpected keyword argument "
                    f"'{name}'" + ("" if allowed else " (pass accept_options=True to allow it)")
                )
        return kwargs.get("options"), kwargs.get("run_metadata")

    def _check_count(self, given: int) -> None:
        expected = len(self._feed_keys)
        if given == expected:
            return
        if not self._has_feed_list:
            raise TypeError(
                f"The callable made by make_callable() without a feed_list takes 0 positional "
                f"arguments but {given} were given"
            )
        raise errors.InvalidArgumentError(
            None, None, f"Expected {expected} feed tensors, but got {given}"
        )
