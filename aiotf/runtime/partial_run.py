"""Partial runs: one step whose feeds arrive, and whose fetches leave, call by call.

TensorFlow's ``PRunSetup``/``PRun``. ``DirectSession.partial_run_setup(feeds, fetches, targets)``
builds the executors for the whole signature with the rendezvous convention
(``runtime/subgraph.py``: fed tensors come from ``_Recv`` nodes and fetched ones go to ``_Send``
nodes, ``client_terminated``, on the client device), starts the step at once — every partition
running in one task with its own Rendezvous — and returns a handle. Each ``partial_run(handle,
feeds, fetches)`` sends its feeds into that rendezvous under TensorFlow's keys
(``client;incarnation;client;name;0:0``) and awaits its fetches there: a fetch resolves as soon as
the step has computed it, while the rest of the graph waits for feeds still to come.

Checks, before anything moves (a call failing one leaves the partial run as it was), in
TensorFlow's order and words: every feed was named at setup and is not fed yet, every fetch was
named at setup and is not fetched yet, and no fetch depends (in the full graph, over data and
control edges) on a setup feed not fed so far or in this call — so a call never waits for a
value only a later call could bring.

State of one partial run (:class:`PartialRun`), used only on the loop that ran the setup:

- ``_fed``/``_fetched``: endpoint -> claimed. A call claims its endpoints after the checks and
  before its first await, so two calls in flight never claim one endpoint.
- ``task``: the step, registered with the session as a run in flight (``close()`` cancels it).
  When it ends, its error (cancelled: ``CancelledError("Run call was cancelled")``) aborts the
  rendezvous, waking every call awaiting a fetch with it.
- The handle stays in the session's :class:`PartialRuns` until the partial run is *done* — every
  feed fed and every fetch fetched; the call that completes it also waits for the step to end,
  so its targets have run — or until a call fails after its checks (a node's error, a dead
  fetch, a deadline, the call cancelled): then the step is aborted and awaited. Either way the
  handle is finished: using it again is ``InvalidArgumentError("Must run 'setup' before
  performing partial runs!")``.

Deadlines: ``ConfigProto.operation_timeout_in_ms`` bounds each fetch's wait and the last call's
wait for the step, as in TensorFlow's ``PRun`` (``DeadlineExceededError("Timed out waiting for
notification")``); partial runs take no RunOptions. Unlike TensorFlow, a step error that comes
after the last fetch (a failing target) is raised by the call that completes the partial run
rather than only logged, and one partial run's failure never touches the session's other runs.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aiotf.framework import errors
from aiotf.kernels.context import rendezvous_key
from aiotf.runtime.graph import Graph, parse_tensor_name
from aiotf.runtime.rendezvous import Rendezvous

_MUST_SETUP = "Must run 'setup' before performing partial runs!"
TIMED_OUT = "Timed out waiting for notification"


def check_setup(fetches: Sequence[str], targets: Sequence[str]) -> None:
    """A partial run must fetch or run something (TensorFlow's words)."""
    if not fetches and not targets:
        raise errors.InvalidArgumentError(
            None, None, "Must specify at least one target to fetch or execute."
        )


class PartialRuns:
    """A session's partial runs in flight, by handle. Thread-safe: setups come from any loop."""

    __slots__ = ("_counter", "_lock", "_runs")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, PartialRun] = {}
        self._counter = itertools.count()

    def new_handle(
        self, feeds: Sequence[str], fetches: Sequence[str], targets: Sequence[str]
    ) -> str:
        """TensorFlow's handle: the call signature, ``/1/`` (a partial run), ``;`` a counter."""
        with self._lock:
            n = next(self._counter)
        return f"{','.join(feeds)}->{','.join(fetches)}/{','.join(targets)}/1/;{n}"

    def add(self, run: PartialRun) -> None:
        with self._lock:
            self._runs[run.handle] = run

    def get(self, handle: str) -> PartialRun:
        with self._lock:
            run = self._runs.get(handle)
        if run is None:
            raise errors.InvalidArgumentError(None, None, _MUST_SETUP)
        return run

    def discard(self, handle: str) -> None:
        with self._lock:
            self._runs.pop(handle, None)


class PartialRun:
    """One partial run: its step, its rendezvous and which endpoints are still to come."""

    __slots__ = (
        "_fed",
        "_fetched",
        "_graph",
        "_keys",
        "_registry",
        "_timeout",
        "handle",
        "loop",
        "rendezvous",
        "task",
    )

    def __init__(
        self,
        registry: PartialRuns,
        handle: str,
        feeds: Iterable[str],
        fetches: Iterable[str],
        graph: Graph,
        client: Any,
        timeout_ms: int,
    ) -> None:
        self._registry = registry
        self.handle = handle
        self._fed = dict.fromkeys(feeds, False)
        self._fetched = dict.fromkeys(fetches, False)
        self._graph = graph  # the full graph at setup: what a fetch depends on
        self._keys = {
            name: rendezvous_key(client.name, client.incarnation, client.name, name, "0:0")
            for name in (*self._fed, *self._fetched)
        }
        self._timeout = timeout_ms / 1000 if timeout_ms > 0 else None
        self.loop = asyncio.get_running_loop()
        self.rendezvous = Rendezvous()
        self.task: asyncio.Task[None] | None = None

    def start(self, task: asyncio.Task[None]) -> None:
        """``task`` runs the step; when it ends, its error aborts the rendezvous."""
        self.task = task
        task.add_done_callback(self._step_ended)

    def _step_ended(self, task: asyncio.Task[None]) -> None:
        status = _status(task)
        if status is not None:
            self.rendezvous.abort(status)

    # -- one call ------------------------------------------------------------------------------
    async def run(self, feeds: Mapping[str, Any], fetches: Sequence[str]) -> list[Any]:
        """Send ``feeds``, then the values of ``fetches`` once the step has computed them."""
        if asyncio.get_running_loop() is not self.loop:
            raise RuntimeError(
                "partial_run() must run on the event loop that ran partial_run_setup() "
                "(partial_run_sync() goes with partial_run_setup_sync())"
            )
        self._check(feeds, fetches)
        self._fed.update(dict.fromkeys(feeds, True))
        self._fetched.update(dict.fromkeys(fetches, True))
        try:
            values = await self._exchange(feeds, fetches)
        except asyncio.CancelledError:
            self._abort(errors.CancelledError(None, None, "Partial run call was cancelled"))
            raise
        except BaseException as exc:
            self._abort(exc)
            await asyncio.wait([self._step()])  # as TensorFlow's: the step winds down first
            raise
        if self._done():
            self._registry.discard(self.handle)
        return values

    def _check(self, feeds: Iterable[str], fetches: Sequence[str]) -> None:
        for name in feeds:
            fed = self._fed.get(name)
            if fed is None:
                raise _invalid(f"The feed {name} was not specified in partial_run_setup.")
            if fed:
                raise _invalid(f"The feed {name} has already been fed.")
        seen: set[str] = set()
        for name in fetches:
            fetched = self._fetched.get(name)
            if fetched is None:
                raise _invalid(f"The fetch {name} was not specified in partial_run_setup.")
            if fetched or name in seen:
                raise _invalid(f"The fetch {name} has already been fetched.")
            seen.add(name)
        pending = {parse_tensor_name(n) for n, fed in self._fed.items() if not fed}
        check_fetch(self._graph, pending - {parse_tensor_name(n) for n in feeds}, fetches)

    async def _exchange(self, feeds: Mapping[str, Any], fetches: Sequence[str]) -> list[Any]:
        step = self._step()
        if step.done() and (status := _status(step)) is not None:
            raise status  # the step failed before this call: nothing can be fed or fetched
        for name, value in feeds.items():
            self.rendezvous.send(self._keys[name], value)
        values = [await self._recv(name) for name in fetches]
        if self._done():  # the last call: wait until the step (its targets too) has run
            done, _ = await asyncio.wait([step], timeout=self._timeout)
            if not done:
                raise errors.DeadlineExceededError(None, None, TIMED_OUT)
            if (status := _status(step)) is not None:
                raise status
        return values

    async def _recv(self, name: str) -> Any:
        try:
            async with asyncio.timeout(self._timeout):
                value, is_dead = await self.rendezvous.recv(self._keys[name])
        except TimeoutError:
            raise errors.DeadlineExceededError(None, None, TIMED_OUT) from None
        if is_dead:
            raise _invalid(f"The tensor returned for {name} was not valid.")
        return value

    def _abort(self, error: BaseException) -> None:
        """Finish the handle and stop the step: a call failed after claiming its endpoints."""
        self._registry.discard(self.handle)
        step = self._step()
        if not step.done():
            self.rendezvous.abort(error)
            step.cancel()

    def _done(self) -> bool:
        return all(self._fed.values()) and all(self._fetched.values())

    def _step(self) -> asyncio.Task[None]:
        assert self.task is not None, "PartialRun.start() was not called"
        return self.task


def check_fetch(graph: Graph, pending: set[tuple[str, int]], fetches: Sequence[str]) -> None:
    """TensorFlow's CheckFetch: no fetch may depend on a tensor in ``pending`` (feeds to come).

    Walks back from the fetched nodes over every in-edge of the full graph.
    """
    if not pending:
        return
    stack = [parse_tensor_name(f)[0] for f in fetches]
    visited: set[str] = set()
    while stack:
        node = graph[stack.pop()]
        for edge in node.inputs:
            if edge in pending:
                raise _invalid(
                    f"Fetch {edge[0]}:{edge[1]} can't be computed from the feeds that have been "
                    "fed so far."
                )
        for src in [*(s for s, _ in node.inputs), *node.control_inputs]:
            if src not in visited:
                visited.add(src)
                stack.append(src)


def _status(task: asyncio.Task[None]) -> BaseException | None:
    """A finished step's error: its exception, or TensorFlow's for a cancelled run."""
    if task.cancelled():
        return errors.CancelledError(None, None, "Run call was cancelled")
    return task.exception()


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)
