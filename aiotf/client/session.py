"""The client Session: ``await sess.run(fetches, feed_dict)`` with TensorFlow 1.x semantics.

The client resolves fetch structures and feeds against the Python Graph, extends the session
implementation with the ops added since the last run (append-only, like TensorFlow's
``Extend``), runs the step, and rebuilds the caller's structure from the values. Feed values are
converted to the fed tensor's dtype and checked against its static shape before anything runs.

Partial runs (``partial_run_setup``/``partial_run``, TensorFlow's) resolve feeds and fetches the
same way; the step itself lives in the implementation (``runtime/partial_run.py``).

Loops and threads. ``run`` executes on whichever event loop awaits it; ``run_sync`` blocks its
caller and runs on the session's private loop thread (``loop_thread.py``), so it also works where
a loop is already running. Both may be used on one session at once: graph extension is
serialised by a lock here, executor builds by the implementation's lock, and steps share only
immutable compiled state. ``close()`` cancels every run in flight, wherever it runs (each raises
``aiotf.errors.CancelledError``), then frees the devices and stops the private thread; awaiting
it waits for all of that, so no task or thread of the session outlives ``await sess.close()``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any

from aiotf.client.fetch_mapper import FetchMapper
from aiotf.client.loop_thread import LoopThread, running_loop
from aiotf.client.run_plan import RunPlan, RunPlans, feed_tensor, split_fetches
from aiotf.client.session_callable import SessionCallable
from aiotf.client.session_factory import new_session_impl, reset_sessions
from aiotf.devices.threads import in_thread
from aiotf.framework import errors
from aiotf.framework.ops import (
    Graph,
    Operation,
    Tensor,
    ThreadDefault,
    _default_session,
    get_default_graph,
)
from aiotf.proto import ConfigProto
from aiotf.runtime import loop_turns
from aiotf.runtime.direct_session import OFF_LOOP_NODES


class BaseSession:
    """Common to every session kind: graph, run, close, default-session handling."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None) -> None:
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"graph must be an aiotf.Graph, but got {type(graph).__name__}")
        if not isinstance(target, str):
            raise TypeError(f"target must be a string, but got {type(target).__name__}")
        if config is not None and type(config).__name__ != "ConfigProto":
            raise TypeError(f"config must be an aiotf.ConfigProto, but got {type(config).__name__}")
        self._graph = graph if graph is not None else get_default_graph()
        self._target = target
        self._config = config
        self._impl = new_session_impl(target, config)
        self._extended_version = 0
        self._plans = RunPlans()  # run() analyses each signature once (``run_plan.py``)
        self._extend_lock = threading.Lock()
        self._loop_thread = LoopThread(f"aiotf-session-{id(self):x}")
        self._closed = False
        self._entered: contextlib.ExitStack | None = None  # defaults set by ``(async) with``

    # -- properties ----------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def graph_def(self) -> Any:
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return self._target

    def list_devices(self) -> list[DeviceAttributes]:
        """The session's devices: name, device_type, memory_limit_bytes, incarnation."""
        return [DeviceAttributes.from_proto(a) for a in self._impl.list_devices()]

    # -- running -------------------------------------------------------------------------------
    async def run(
        self,
        fetches: Any,
        feed_dict: Mapping[Any, Any] | None = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        """Run the graph for ``fetches``; the values come back in the same structure."""
        self._check_open()
        self._check_not_empty()
        # The turn first (``loop_turns``): of 256 runs gathered at once, those that wait for a
        # later turn do no work on the loop before it (the plan and the feeds cost ~15 us).
        waiter = loop_turns.admit()
        if waiter is not None:
            await waiter
            if self._closed or self._impl.closed:  # closed meanwhile: as a run in flight
                raise errors.CancelledError(None, None, "Run call was cancelled")
        plan, feeds = self._plans.plan(fetches, feed_dict, self._graph)
        fetch_names, targets = plan.fetch_names, plan.targets
        if not fetch_names and not targets:  # as TensorFlow: nothing to run (``run([])``, fed)
            return plan.results([], feeds)
        if self._graph.version > self._extended_version:
            await self._extend_graph_off_loop()
        try:
            values = await self._impl.run(
                feeds, fetch_names, targets, options, run_metadata, admitted=True
            )
        except errors.OpError as e:
            raise self._attach_op(e) from None
        return plan.results(values, feeds)

    def run_sync(
        self,
        fetches: Any,
        feed_dict: Mapping[Any, Any] | None = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        """``run``, blocking: for plain scripts, and for code where a loop already runs.

        The step runs on the session's private loop thread (started on first use), never on a
        loop running in the calling thread, which is blocked meanwhile.
        """
        self._check_open()
        return self._loop_thread.run(lambda: self.run(fetches, feed_dict, options, run_metadata))

    async def partial_run_setup(self, fetches: Any, feeds: Any = None) -> str:
        """Start a partial run of ``fetches`` fed by ``feeds``; its handle, for ``partial_run``.

        ``fetches`` is any fetch structure (its ops are run as targets); ``feeds`` a tensor, a
        ``"x:0"`` name or a list of them: the tensors later ``partial_run`` calls may feed.
        """
        self._check_open()
        self._check_not_empty()
        feed_names = [self._partial_feed(key) for key in _as_list(feeds)]
        mapper = FetchMapper.for_fetch(fetches, self._graph)
        fetch_names, targets = split_fetches(mapper.unique_fetches(), set())
        await self._extend_graph_off_loop()
        try:
            handle: str = await self._impl.partial_run_setup(feed_names, fetch_names, targets)
        except errors.OpError as e:
            raise self._attach_op(e) from None
        return handle

    async def partial_run(
        self, handle: str, fetches: Any, feed_dict: Mapping[Any, Any] | None = None
    ) -> Any:
        """Continue the partial run ``handle``: feed ``feed_dict``, then fetch ``fetches``.

        A fetch comes back as soon as the step has computed it; TensorFlow's rules hold: each
        tensor of the setup is fed once and fetched once, and only what the feeds given so far
        can compute may be fetched. The step ends once everything has been fed and fetched.
        """
        self._check_open()
        plan, feeds = RunPlan.analyse(fetches, feed_dict, self._graph)
        fetch_names = plan.fetch_names
        if plan.targets:
            ops = [el for el in plan.mapper.unique_fetches() if isinstance(el, Operation)]
            raise RuntimeError(
                f"partial_run() requires empty `target_list`. Received: target_list={ops} "
                "(non-empty)"
            )
        values: list[Any] = []
        if fetch_names or feeds:
            try:
                values = await self._impl.partial_run(handle, feeds, fetch_names)
            except errors.OpError as e:
                raise self._attach_op(e) from None
        return plan.results(values, feeds)

    def partial_run_setup_sync(self, fetches: Any, feeds: Any = None) -> str:
        """``partial_run_setup``, blocking: the step runs on the private loop (see ``run_sync``).

        Continue it with ``partial_run_sync``: a partial run lives on the loop that set it up.
        """
        self._check_open()
        return self._loop_thread.run(lambda: self.partial_run_setup(fetches, feeds))

    def partial_run_sync(
        self, handle: str, fetches: Any, feed_dict: Mapping[Any, Any] | None = None
    ) -> Any:
        """``partial_run``, blocking, for a handle from ``partial_run_setup_sync``."""
        self._check_open()
        return self._loop_thread.run(lambda: self.partial_run(handle, fetches, feed_dict))

    def make_callable(
        self, fetches: Any, feed_list: Sequence[Any] | None = None, accept_options: bool = False
    ) -> SessionCallable:
        """An async callable ``await fn(*feed_values)`` that runs ``fetches``, analysed once."""
        self._check_open()
        if feed_list is not None and not isinstance(feed_list, list | tuple):
            raise TypeError(
                f"Argument `feed_list` must be a list or tuple. Received: feed_list={feed_list}"
            )
        mapper = FetchMapper.for_fetch(fetches, self._graph)
        feed_tensors = [feed_tensor(self._graph, key) for key in feed_list or ()]
        fed = {t.name for t in feed_tensors}
        fetch_names, targets = split_fetches(mapper.unique_fetches(), fed)
        self._extend_graph()
        feed_names = list(dict.fromkeys(t.name for t in feed_tensors))
        try:
            runner = self._impl.make_callable(feed_names, fetch_names, targets)
        except errors.OpError as e:
            raise self._attach_op(e) from None
        return SessionCallable(
            self, mapper, feed_list, feed_tensors, fetch_names, runner, accept_options
        )

    def _partial_feed(self, key: Any) -> str:
        try:
            tensor = self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except (TypeError, ValueError, KeyError) as e:
            message = e.args[0] if e.args else str(e)
            raise type(e)(f"Cannot interpret feed_list key as Tensor: {message}") from None
        assert isinstance(tensor, Tensor)
        return tensor.name

    async def _extend_graph_off_loop(self) -> None:
        """``_extend_graph``, in a worker thread when the graph is big enough for placing it to
        stall the event loop (an extension places the whole graph again, as TensorFlow's)."""
        if self._graph.version <= self._extended_version:
            return
        if self._graph.version >= OFF_LOOP_NODES:
            await in_thread(self._extend_graph)
        else:
            self._extend_graph()

    def _extend_graph(self) -> None:
        graph = self._graph
        if graph.version <= self._extended_version:
            return
        with self._extend_lock:  # runs on several threads may extend at once
            if graph.version > self._extended_version:
                version = graph.version
                ops = graph._ops_since(self._extended_version)
                try:
                    self._impl.extend((op.node_def for op in ops), graph.library)
                except errors.OpError as e:  # placing the new nodes failed: name where built
                    raise self._attach_op(e) from None
                self._extended_version = version

    def _attach_op(self, err: errors.OpError) -> errors.OpError:
        node_def = err.node_def
        name = getattr(node_def, "name", None)
        op = self._graph._ops_by_name.get(name) if name else None
        if op is None:
            return err
        device = getattr(node_def, "device", "") or op.device
        message = f"{err.message}\n\nOperation '{op.name}' ({op.type})"
        if device:
            message += f" on {device}"
        if op.traceback is not None:
            message += f", defined at {op.traceback[0]}:{op.traceback[1]}"
        return type(err)(node_def, op, message)

    # -- lifetime -----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if getattr(self._impl, "closed", False):  # closed under us, by Session.reset
            raise errors.CancelledError(None, None, "Session has been closed.")

    def _check_not_empty(self) -> None:
        if self._graph.version == 0:
            raise RuntimeError(
                "The Session graph is empty. Add operations to the graph before calling run()."
            )

    def close(self) -> Closing:
        """Close the session: cancel runs in flight, free the devices, stop the private thread.

        Runs in flight (on any loop) raise ``aiotf.errors.CancelledError``; later runs raise
        ``RuntimeError``. ``await sess.close()`` also waits until they have all ended and every
        thread of the session has stopped; a plain ``sess.close()`` (TensorFlow's call, in a
        script) does the same work, and blocks for the private thread when no loop is running.
        """
        if not self._closed:
            self._closed = True
            self._uninstall_default()
            self._impl.close()
            self._loop_thread.stop()
            if running_loop() is None:
                self._loop_thread.join()
        return Closing(self)

    async def _wait_closed(self) -> None:
        wait = getattr(self._impl, "wait_closed", None)
        if wait is not None:
            await wait()
        await self._loop_thread.wait_stopped()

    def _uninstall_default(self) -> None:
        """A hook for sessions that install themselves as the default (InteractiveSession)."""

    async def __aenter__(self) -> BaseSession:
        """``async with Session() as sess``: in the block, ``sess`` and its graph are the
        defaults (TensorFlow's ``with Session()``); leaving it awaits ``close()``."""
        self._enter_defaults()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._exit_defaults()
        await self.close()

    def __enter__(self) -> BaseSession:
        """``with Session() as sess``, for plain scripts (``run_sync``): as ``async with``, and
        leaving the block calls ``close()``."""
        self._enter_defaults()
        return self

    def __exit__(self, *exc: object) -> None:
        self._exit_defaults()
        self.close()

    def _enter_defaults(self) -> None:
        if self._entered is not None:
            raise RuntimeError(
                "Session context managers are not re-entrant. Use `Session.as_default()` if you "
                "want to enter a session multiple times."
            )
        entered = contextlib.ExitStack()
        entered.enter_context(self._graph.as_default())
        entered.enter_context(self.as_default())
        self._entered = entered

    def _exit_defaults(self) -> None:
        entered, self._entered = self._entered, None
        if entered is not None:
            # Left in another context than it was entered in (an exit stack closed by another
            # task): that context never saw these defaults, and the session still closes.
            with contextlib.suppress(ValueError):
                entered.close()

    @contextlib.contextmanager
    def as_default(self) -> Iterator[BaseSession]:
        """Make this the default session (for ``tensor.eval()``/``op.run()``) in this context.

        As TensorFlow's, it does not make the session's graph the default graph (``async with
        sess`` does) and does not close the session on leaving.
        """
        token = _default_session.set(self)
        try:
            yield self
        finally:
            _default_session.reset(token)


class Session(BaseSession):
    """``aiotf.Session(target="", graph=None, config=None)``; use with ``async with``."""

    @staticmethod
    def reset(target: str, containers: Sequence[str] | None = None, config: Any = None) -> None:
        """Clear resource ``containers`` (default: the default container) on ``target``.

        As TensorFlow's: for the in-process target this reaches every live session's devices,
        and closes those sessions (their runs raise ``CancelledError``; a later run raises
        ``CancelledError("Session has been closed.")``).
        """
        if not isinstance(target, str | bytes):
            raise TypeError(f"Expected binary or unicode string, got {target!r}")
        if isinstance(target, bytes):
            target = target.decode()
        reset_sessions(target, list(containers) if containers else None, config)


class InteractiveSession(BaseSession):
    """A session that makes itself the default on creation, for notebooks and shells.

    As TensorFlow's: it is the default session for the whole thread that created it (every task
    of that thread's loop, every later notebook cell), beneath any ``with sess.as_default()``,
    until ``close()``; an explicit ``graph`` is also made the thread's default graph. Other
    threads do not see it. See ``framework/ops.py`` ("Defaults") for why a thread, not a context.
    """

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None) -> None:
        if config is not None and type(config).__name__ != "ConfigProto":
            raise TypeError(f"config must be an aiotf.ConfigProto, but got {type(config).__name__}")
        config = ConfigProto() if config is None else _copy(config)
        config.graph_options.place_pruned_graph = True  # as TensorFlow's, which always does
        super().__init__(target, graph, config)
        self._default: ThreadDefault | None = ThreadDefault(self, graph)

    def _uninstall_default(self) -> None:
        default, self._default = self._default, None
        if default is not None:
            default.remove()


class Closing:
    """What ``close()`` returns: awaiting it waits until the session has wound down."""

    __slots__ = ("_session",)

    def __init__(self, session: BaseSession) -> None:
        self._session = session

    def __await__(self) -> Generator[Any, None, None]:
        return self._session._wait_closed().__await__()


class DeviceAttributes:
    """One entry of ``list_devices()``, as TensorFlow's ``session._DeviceAttributes``."""

    __slots__ = ("_device_type", "_incarnation", "_memory_limit_bytes", "_name")

    def __init__(self, name: str, device_type: str, memory_limit_bytes: int, incarnation: int):
        self._name = name
        self._device_type = device_type
        self._memory_limit_bytes = memory_limit_bytes
        self._incarnation = incarnation

    @classmethod
    def from_proto(cls, attributes: Any) -> DeviceAttributes:
        a = attributes
        return cls(a.name, a.device_type, int(a.memory_limit), int(a.incarnation))

    @property
    def name(self) -> str:
        return self._name

    @property
    def device_type(self) -> str:
        return self._device_type

    @property
    def memory_limit_bytes(self) -> int:
        return self._memory_limit_bytes

    @property
    def incarnation(self) -> int:
        return self._incarnation

    def __repr__(self) -> str:
        return (
            f"_DeviceAttributes({self._name}, {self._device_type}, {self._memory_limit_bytes}, "
            f"{self._incarnation})"
        )


def _copy(message: Any) -> Any:
    out = type(message)()
    out.CopyFrom(message)
    return out


def _as_list(feeds: Any) -> list[Any]:
    if feeds is None:
        return []
    return list(feeds) if isinstance(feeds, list | tuple) else [feeds]
