"""DirectSession: runs a graph in-process on the local devices.

``run(feeds, fetches, targets)`` looks up the executors for that signature (unsorted key first,
then sorted key, building on a miss), gives the step a fresh Rendezvous and step id, runs every
partition's executor (concurrently, in one TaskGroup, when there are several), and returns the
``_Retval`` values in fetch order. A deadline (``RunOptions.timeout_in_ms`` or
``ConfigProto.operation_timeout_in_ms``) is one ``asyncio.timeout`` around the step. The first
error cancels the whole step and is raised as the matching ``aiotf.errors`` class.

``make_callable(feeds, fetches, targets)`` resolves a signature once; the ``RunCallable`` it
returns runs steps from positional values with no per-call lookup.

``partial_run_setup``/``partial_run`` are TensorFlow's PRunSetup/PRun (``runtime/partial_run.py``):
the setup starts the step as a task that is a run in flight, and calls feed and fetch through
its rendezvous.

Lifetime. Every run in flight is registered (``_runs``) with the task that awaits it. ``close()``
marks the session closed, asks each of those tasks to cancel (on its own loop, so a run awaited on
another thread's loop is cancelled there) and returns; the cancelled runs raise TensorFlow's
``CancelledError("Run call was cancelled")``. The devices (and their thread pools) are released by
whoever finishes last: ``close()`` itself when nothing is running, else the last run to end;
``wait_closed()`` waits for that. ``reset_local_sessions`` reaches every live DirectSession (a
weak registry, as TensorFlow's DirectSessionFactory keeps) to clear resource containers.

Threads. A session may be used from several threads and event loops at once. ``_lock`` guards
the run registry and the closed flag; ``_build_lock`` serialises graph extension and executor
builds (so the per-session stateful-kernel cache never holds two kernels for one node). A step
shares only immutable compiled state with other steps.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import itertools
import sys
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from aiotf.devices.device import Device
from aiotf.devices.device_mgr import DeviceMgr
from aiotf.devices.factory import add_devices
from aiotf.devices.threads import in_thread
from aiotf.framework import errors
from aiotf.kernels.context import StepContext
from aiotf.kernels.registry import OpKernel
from aiotf.runtime import graph_optimizer, loop_turns
from aiotf.runtime.executor import Executor
from aiotf.runtime.function import FunctionLibraryRuntime, create_kernel
from aiotf.runtime.graph import Graph, Node
from aiotf.runtime.graph_execution_state import GraphExecutionState
from aiotf.runtime.partial_run import TIMED_OUT, PartialRun, PartialRuns, check_setup
from aiotf.runtime.rendezvous import Rendezvous
from aiotf.runtime.step_stats import StepStatsCollector

LOCAL_TASK = "/job:localhost/replica:0/task:0"

# Graphs with at least this many nodes are extended and built in a worker thread, not on the loop:
# a build costs ~40 us per node, so past this it would hold the loop for more than a few ms,
# while the thread hop (~0.1 ms, once per call signature) is small beside it.
OFF_LOOP_NODES = 64

_T = TypeVar("_T")

# Stateful ops the build inserts afresh for each call signature. They hold no state, and another
# build may reuse a name for a node with other attrs (``a/_0`` sending ``a`` to another device),
# so their kernels must not come from the per-session cache.
_PER_BUILD_OPS = frozenset({"_Arg", "_Retval", "_Send", "_Recv"})

_LIVE: weakref.WeakSet[DirectSession] = weakref.WeakSet()  # open sessions, for reset
_LIVE_LOCK = threading.Lock()


@dataclasses.dataclass
class ExecutorsAndKeys:
    """Everything cached for one call signature."""

    feeds: tuple[str, ...]
    fetches: tuple[str, ...]
    executors: list[Executor]
    partition_graphs: dict[str, Graph]
    build_seconds: float


class DirectSession:
    """A local session over the devices the registered factories create for ``config``."""

    def __init__(self, config: Any = None) -> None:
        self.config = config
        self.device_mgr = DeviceMgr(add_devices(config, LOCAL_TASK))
        log = _log_placement if config is not None and config.log_device_placement else None
        self._state = GraphExecutionState(self.device_mgr, config, on_placed=log)
        self._functions = FunctionLibraryRuntime(
            self._state.library,
            _optimizer_options(config),
            lambda: self._state.canonical,
            graph_optimizer.remapping(config),
        )
        self._executors: dict[tuple[Any, ...], ExecutorsAndKeys] = {}
        self._kernels: dict[tuple[str, str], OpKernel] = {}
        self._step_ids = itertools.count(1)
        self._lock = threading.Lock()
        self._build_lock = threading.RLock()
        self._runs: set[_Run] = set()
        self._partial_runs = PartialRuns()
        self._closed = False
        self._released: concurrent.futures.Future[None] = concurrent.futures.Future()
        with _LIVE_LOCK:
            _LIVE.add(self)

    # -- graph --------------------------------------------------------------------------------
    def extend(self, node_defs: Iterable[Any], library: Any = None) -> None:
        self._check_open()
        with self._build_lock:
            self._state.extend(node_defs, library)

    @property
    def graph(self) -> Graph:
        return self._state.graph

    def list_devices(self) -> list[Any]:
        return [d.attributes for d in self.device_mgr]

    # -- running --------------------------------------------------------------------------------
    async def run(
        self,
        feeds: Mapping[str, Any],
        fetches: Sequence[str],
        targets: Sequence[str] = (),
        run_options: Any = None,
        run_metadata: Any = None,
        *,
        admitted: bool = False,
    ) -> list[Any]:
        """Run one step; the values of ``fetches``, in order. ``admitted``: the caller already
        took its turn (``loop_turns.admit``) before its own work on the run."""
        self._check_open()
        key = (tuple(feeds), tuple(fetches), tuple(targets))
        bundle = self._executors.get(key)
        if bundle is None:
            bundle = await self._off_loop_if_large(self.executors_for, *key)
        args = [feeds[name] for name in bundle.feeds]
        retvals = await self._run_bundle(bundle, args, run_options, run_metadata, admitted)
        if bundle.fetches == tuple(fetches):
            return retvals
        by_name = dict(zip(bundle.fetches, retvals, strict=True))
        return [by_name[f] for f in fetches]

    async def partial_run_setup(
        self, feeds: Sequence[str], fetches: Sequence[str], targets: Sequence[str] = ()
    ) -> str:
        """TensorFlow's PRunSetup: start a step fed and fetched call by call; its handle.

        See ``runtime/partial_run.py``. The step is a run in flight until it ends.
        """
        self._check_open()
        check_setup(fetches, targets)
        bundle = await self._off_loop_if_large(
            self.executors_for, tuple(feeds), tuple(fetches), tuple(targets), True
        )
        runs = self._partial_runs
        handle = runs.new_handle(feeds, fetches, targets)
        client = self.device_mgr.client_device
        run = PartialRun(runs, handle, feeds, fetches, self.graph, client, self._timeout_ms(None))
        run.start(self._spawn_run(lambda: self._run_step(bundle, [], [], None, run.rendezvous)))
        runs.add(run)
        return handle

    async def partial_run(
        self, handle: str, feeds: Mapping[str, Any], fetches: Sequence[str]
    ) -> list[Any]:
        """TensorFlow's PRun: send ``feeds`` to the partial run ``handle``; ``fetches``' values."""
        self._check_open()
        return await self._partial_runs.get(handle).run(feeds, fetches)

    def make_callable(
        self, feeds: Sequence[str], fetches: Sequence[str], targets: Sequence[str] = ()
    ) -> RunCallable:
        """``feeds -> fetches`` resolved once: ``await fn(values, run_options, run_metadata)``."""
        self._check_open()
        bundle = self.executors_for(tuple(feeds), tuple(fetches), tuple(targets))
        return RunCallable(self, bundle, tuple(feeds), tuple(fetches))

    async def _run_bundle(
        self,
        bundle: ExecutorsAndKeys,
        args: list[Any],
        run_options: Any,
        run_metadata: Any,
        admitted: bool = False,
    ) -> list[Any]:
        """One step of ``bundle`` with ``args`` in its feed order; the retvals in its fetch order.

        Steps started together on one loop take turns with the rest of it (``loop_turns.py``);
        a step not ``admitted`` by its caller takes its turn here.
        """
        run = self._begin_run()
        stats = None  # TF's do_trace: any trace level above NO_TRACE (and a RunMetadata to fill)
        if run_metadata is not None and run_options is not None and run_options.trace_level:
            stats = StepStatsCollector()
        retvals: list[Any] = [None] * len(bundle.fetches)
        try:
            waiter = None if admitted else loop_turns.admit()
            if waiter is not None:
                await waiter
            timeout_ms = self._timeout_ms(run_options)
            if timeout_ms > 0:
                await self._run_with_deadline(bundle, args, retvals, timeout_ms, stats)
            else:
                await self._run_step(bundle, args, retvals, stats)
        except asyncio.CancelledError:
            if run.cancelled_by_close and run.task.uncancel() == 0:
                raise errors.CancelledError(None, None, "Run call was cancelled") from None
            raise
        except BaseException:
            if run.cancelled_by_close:  # the step failed otherwise first: withdraw our cancel
                run.task.uncancel()
            raise
        finally:
            self._end_run(run)
        for index, value in enumerate(retvals):
            if value is None:  # its _Retval never ran: the fetched tensor is dead
                raise errors.InvalidArgumentError(
                    None, None, f"Retval[{index}] does not have value"
                )
        if run_metadata is not None:
            _fill_run_metadata(run_metadata, bundle, run_options, stats)
        return retvals

    async def _run_with_deadline(
        self,
        bundle: ExecutorsAndKeys,
        args: list[Any],
        retvals: list[Any],
        timeout_ms: int,
        stats: StepStatsCollector | None,
    ) -> None:
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await self._run_step(bundle, args, retvals, stats)
        except TimeoutError:
            raise errors.DeadlineExceededError(None, None, TIMED_OUT) from None

    async def _run_step(
        self,
        bundle: ExecutorsAndKeys,
        args: list[Any],
        retvals: list[Any],
        stats: StepStatsCollector | None = None,
        rendezvous: Rendezvous | None = None,
    ) -> None:
        rendezvous = Rendezvous() if rendezvous is None else rendezvous
        step_id = next(self._step_ids)
        executors = bundle.executors
        functions = self._functions
        if len(executors) == 1:
            ex = executors[0]
            await ex.run(
                StepContext(step_id, rendezvous, args, retvals, ex.device, functions, stats)
            )
            return
        try:
            async with asyncio.TaskGroup() as tg:
                for ex in executors:
                    ctx = StepContext(
                        step_id, rendezvous, args, retvals, ex.device, functions, stats
                    )
                    tg.create_task(ex.run(ctx))
        except BaseExceptionGroup as group:
            raise _primary_error(group) from None

    def _timeout_ms(self, run_options: Any) -> int:
        if run_options is not None and run_options.timeout_in_ms > 0:
            return int(run_options.timeout_in_ms)
        if self.config is not None:
            return int(self.config.operation_timeout_in_ms)
        return 0

    # -- building ------------------------------------------------------------------------------
    async def _off_loop_if_large(self, build: Callable[..., _T], *args: Any) -> _T:
        """``build(*args)``, in a worker thread when the graph is large enough for its build to
        stall the event loop (see OFF_LOOP_NODES)."""
        if len(self._state.graph) < OFF_LOOP_NODES:
            return build(*args)
        return await in_thread(build, *args)

    def executors_for(
        self,
        feeds: tuple[str, ...],
        fetches: tuple[str, ...],
        targets: tuple[str, ...],
        partial_run: bool = False,
    ) -> ExecutorsAndKeys:
        """The cached executors for this signature (unsorted key, then sorted key), else build.

        A partial run's executors (the rendezvous convention) are keyed apart: ``(..., True)``.
        """
        mode = (True,) if partial_run else ()
        key = (feeds, fetches, targets, *mode)
        bundle = self._executors.get(key)
        if bundle is not None:
            return bundle
        sorted_key = (tuple(sorted(feeds)), tuple(sorted(fetches)), tuple(sorted(targets)), *mode)
        with self._build_lock:
            bundle = self._executors.get(sorted_key)
            if bundle is None:
                bundle = self._build(*sorted_key)
                self._executors[sorted_key] = bundle
            self._executors[key] = bundle
        return bundle

    def _build(
        self,
        feeds: tuple[str, ...],
        fetches: tuple[str, ...],
        targets: tuple[str, ...],
        partial_run: bool = False,
    ) -> ExecutorsAndKeys:
        start = time.perf_counter()
        result = self._state.build(feeds, fetches, targets, partial_run)
        executors = []
        for device_name, part in result.partitions.items():
            device = self.device_mgr.lookup(device_name)
            executors.append(Executor(part, device, self._kernel_factory(device)))
        return ExecutorsAndKeys(
            feeds, fetches, executors, result.partitions, time.perf_counter() - start
        )

    def _kernel_factory(self, device: Device) -> Any:
        def create(node: Node) -> OpKernel:
            cache_key = (device.name, node.name)
            cached = node.is_stateful and node.op not in _PER_BUILD_OPS
            if cached and cache_key in self._kernels:
                return self._kernels[cache_key]
            kernel = create_kernel(node, device)
            if cached:
                self._kernels[cache_key] = kernel
            return kernel

        return create

    # -- lifetime ----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

    @property
    def closed(self) -> bool:
        return self._closed

    def _begin_run(self) -> _Run:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("DirectSession.run must be awaited in an asyncio task")
        run = _Run(task)
        with self._lock:
            self._check_open()
            self._runs.add(run)
        return run

    def _spawn_run(self, step: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None]:
        """Start ``step()`` as a task, a run in flight until it ends (a partial run's step)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._check_open()
            task = loop.create_task(step())
            run = _Run(task)
            self._runs.add(run)
        task.add_done_callback(lambda _: self._end_run(run))
        return task

    def _end_run(self, run: _Run) -> None:
        run.finished = True
        with self._lock:
            self._runs.discard(run)
            last = self._closed and not self._runs
        if last:
            self._release()

    def close(self) -> None:
        """Close: cancel the runs in flight; the devices are freed once none is left."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            runs = list(self._runs)
        with _LIVE_LOCK:
            _LIVE.discard(self)
        for run in runs:
            run.cancel()
        if not runs:
            self._release()

    async def wait_closed(self) -> None:
        """Wait until a closed session's runs have ended and its devices are freed."""
        await asyncio.wrap_future(self._released)

    def reset(self, containers: Sequence[str] | None) -> None:
        """Clear ``containers`` (the default container when none) on every device."""
        for device in self.device_mgr:
            rm = device.resource_manager
            rm.clear(list(containers) if containers else [rm.default_container])

    def _release(self) -> None:
        if self._released.done():
            return
        self._executors.clear()
        self._kernels.clear()
        try:
            self.device_mgr.close()
        finally:
            self._released.set_result(None)


class RunCallable:
    """One call signature of a DirectSession, resolved once (``DirectSession.make_callable``)."""

    __slots__ = ("_arg_order", "_bundle", "_out_order", "_session")

    def __init__(
        self,
        session: DirectSession,
        bundle: ExecutorsAndKeys,
        feeds: tuple[str, ...],
        fetches: tuple[str, ...],
    ) -> None:
        self._session = session
        self._bundle = bundle
        feed_index = {name: i for i, name in enumerate(feeds)}
        fetch_index = {name: i for i, name in enumerate(bundle.fetches)}
        self._arg_order = None if bundle.feeds == feeds else [feed_index[f] for f in bundle.feeds]
        self._out_order = None if bundle.fetches == fetches else [fetch_index[f] for f in fetches]

    @property
    def num_feeds(self) -> int:
        return len(self._bundle.feeds)

    async def __call__(
        self, args: Sequence[Any], run_options: Any = None, run_metadata: Any = None
    ) -> list[Any]:
        """The fetched values, in fetch order, for feed values ``args`` in feed order."""
        order = self._arg_order
        ordered = list(args) if order is None else [args[i] for i in order]
        retvals = await self._session._run_bundle(self._bundle, ordered, run_options, run_metadata)
        out = self._out_order
        return retvals if out is None else [retvals[i] for i in out]


class _Run:
    """A run in flight: the task awaiting it, so ``close()`` can cancel it on its own loop."""

    __slots__ = ("cancelled_by_close", "finished", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.cancelled_by_close = False
        self.finished = False

    def cancel(self) -> None:
        """Cancel the run from any thread; a no-op once it has finished."""
        loop = self.task.get_loop()
        if _running_loop() is loop:
            self._cancel_here()
            return
        with contextlib.suppress(RuntimeError):  # its loop is closed: the run went with it
            loop.call_soon_threadsafe(self._cancel_here)

    def _cancel_here(self) -> None:
        # Runs on the task's loop, as does ``_end_run``: no race with the run finishing.
        if not self.finished and not self.cancelled_by_close:
            self.cancelled_by_close = True
            self.task.cancel()


def reset_local_sessions(containers: Sequence[str] | None = None) -> None:
    """TensorFlow's DirectSessionFactory::Reset: clear containers on every live session, close it."""
    with _LIVE_LOCK:
        sessions = list(_LIVE)
    for session in sessions:
        session.reset(containers)
    for session in sessions:
        session.close()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _log_placement(nodes: Sequence[Node]) -> None:
    """``log_device_placement``: TensorFlow's placer line for each node placed, on stdout.

    Called for each placement as it is made: the full graph at each extension, or with
    ``place_pruned_graph`` each build's pruned graph (``GraphExecutionState``).
    """
    lines = [f"{n.name}: ({n.op}): {n.assigned_device}\n" for n in nodes]
    sys.stdout.write("".join(lines))
    sys.stdout.flush()


def _fill_run_metadata(
    run_metadata: Any, bundle: ExecutorsAndKeys, run_options: Any, stats: StepStatsCollector | None
) -> None:
    """After a successful step: ``run_metadata`` holds this step's, as TensorFlow's client
    replaces it (a failed step leaves it untouched)."""
    run_metadata.Clear()
    if stats is not None:
        stats.finalize(run_metadata.step_stats)
    if run_options is not None and run_options.output_partition_graphs:
        run_metadata.partition_graphs.extend(
            g.to_graph_def() for g in bundle.partition_graphs.values()
        )


def _optimizer_options(config: Any) -> Any:
    if config is None or not config.HasField("graph_options"):
        return None
    return config.graph_options.optimizer_options


def _primary_error(group: BaseExceptionGroup) -> BaseException:
    """The error to report for a failed step: the first OpError, else the first exception."""
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            stack[:0] = list(exc.exceptions)
        else:
            leaves.append(exc)
    for exc in leaves:
        if isinstance(exc, errors.OpError):
            return exc
    return leaves[0]
