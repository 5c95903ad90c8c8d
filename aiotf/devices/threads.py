"""Thread work, awaited: the one bounded helper every hop to a thread goes through.

Awaiting a thread's result is simple until the awaiting task is cancelled. The thread cannot be
stopped, and what it holds (a kernel's input buffers, a half-built executor cache) must not be
released or left half-done under it. So :func:`run_in` answers a cancellation by waiting for
the thread to finish, further cancellations included, and only then re-raises the first
``CancelledError``; a long job that polls ``cancel`` (a :class:`Stop`, or a
``threading.Event``, set before that wait) can stop early. :func:`in_thread` runs a function on the event loop's default executor
this way, with the caller's context variables (as ``asyncio.to_thread``).

The hop is one event-loop future, made before the job is queued and set from the thread with
``call_soon_threadsafe``: after queueing, the loop thread only awaits (a woken pool thread
does not wait for the GIL while the loop wraps futures), and the result reaches the awaiting
task in one loop iteration instead of three (``asyncio.wrap_future`` and ``shield``: a round
trip to an idle pool took 72 us that way, 64 us this way).

A job may hand its answer on to another thread (``relayed``): it is called with a
:data:`Reply` first, and when it returns :data:`RELAYED` its thread sends nothing; whoever holds
the reply sends the result or failure, once. A compiled step's pool job does so when the helper
that ends a kernel's last part carries the rest of the step on (``Executor._finish_program``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

_T = TypeVar("_T")

Submit = Callable[[Callable[[], None]], object]  # queues a job on some thread pool
# A relayed job's way back: ``reply(value, None)`` or ``reply(None, failure)``, once, from any
# thread.
Reply = Callable[[Any, BaseException | None], None]


class _Relayed:
    """What a relayed job returns when another thread has its reply to send."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "RELAYED"


RELAYED: Any = _Relayed()


class Stop:
    """A flag the awaiting side sets for a thread's job to poll: ``threading.Event`` without
    the waiting, so ~20x cheaper to make (every step that moves into a pool thread makes one)."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


Cancel = Stop | threading.Event


async def run_in(
    submit: Submit,
    fn: Callable[..., _T],
    *args: Any,
    cancel: Cancel | None = None,
    relayed: bool = False,
) -> _T:
    """``fn(*args)`` in the thread ``submit`` queues it on; if the awaiting task is cancelled,
    set ``cancel`` and wait for the thread to finish before re-raising (see the module
    docstring). ``relayed``: ``fn(reply, *args)``, whose answer is what it returns unless that
    is :data:`RELAYED`, and then what ``reply`` is sent."""
    handoff = _Handoff(asyncio.get_running_loop(), fn, args, relayed)
    submit(handoff.run)
    try:
        return await handoff.future
    except asyncio.CancelledError:
        if cancel is not None:
            cancel.set()
        await handoff.finished()
        raise


async def in_thread(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` in the loop's default executor, awaited with :func:`run_in`."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    return await run_in(functools.partial(loop.run_in_executor, None), call)


class _Handoff(Generic[_T]):
    """One job's way back to the loop: ``future`` gets its result or exception; ``done`` once
    the job has finished, or the thread it was relayed to (set on the loop, where
    :meth:`finished` reads it)."""

    __slots__ = ("_args", "_finished", "_fn", "_loop", "_relayed", "done", "future")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fn: Callable[..., _T],
        args: tuple[Any, ...],
        relayed: bool = False,
    ) -> None:
        self._loop = loop
        self._fn = fn
        self._args = args
        self._relayed = relayed
        self.future: asyncio.Future[_T] = loop.create_future()
        self.done = False
        self._finished: asyncio.Future[None] | None = None

    def run(self) -> None:
        """In the thread: call the function and send what came of it to the loop (unless it
        relayed its reply to another thread)."""
        try:
            if self._relayed:  # (the reply made here: a handoff holding it would be a cycle)
                value: Any = self._fn(self.reply, *self._args)
            else:
                value = self._fn(*self._args)
            failure: BaseException | None = None
        except BaseException as exc:  # delivered to the awaiting task, which raises it
            value, failure = None, exc
        if value is not RELAYED:
            self.reply(value, failure)

    def reply(self, value: Any, failure: BaseException | None) -> None:
        """From any thread, once: the job's result (or failure) to the awaiting task."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            self._loop.call_soon_threadsafe(self._deliver, value, failure)

    def _deliver(self, value: Any, failure: BaseException | None) -> None:
        self.done = True
        future = self.future
        if not future.done():  # else the awaiting task was cancelled
            if failure is None:
                future.set_result(value)
            elif isinstance(failure, StopIteration):  # a future cannot hold one (as Task)
                error = RuntimeError(f"{failure!r} raised in a thread")
                error.__cause__ = failure
                future.set_exception(error)
            else:
                future.set_exception(failure)
        if self._finished is not None and not self._finished.done():
            self._finished.set_result(None)

    async def finished(self) -> None:
        """Return once the thread has finished, whatever cancellations arrive meanwhile."""
        while not self.done:
            if self._finished is None:
                self._finished = self._loop.create_future()
            try:
                await asyncio.wait([self._finished])
            except asyncio.CancelledError:  # already being cancelled: re-raised by the caller
                continue
