"""Thread work, awaited: the one bounded helper every hop to a thread goes through.

Awaiting a thread's result is simple until the awaiting task is cancelled. The thread cannot be
stopped, and what it holds (a kernel's input buffers, a half-built executor cache) must not be
released or left half-done under it. So :func:`wait_for_thread` answers a cancellation by
waiting for the thread to finish, further cancellations included, and only then re-raises the
first ``CancelledError``; a long job that polls ``cancel`` (a ``threading.Event`` set before that
wait) can stop early. :func:`in_thread` runs a function on the event loop's default executor
this way, with the caller's context variables (as ``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

_T = TypeVar("_T")


async def wait_for_thread(
    future: asyncio.Future[_T] | concurrent.futures.Future[_T],
    cancel: threading.Event | None = None,
) -> _T:
    """``future``'s result; if the awaiting task is cancelled, set ``cancel`` and wait for the
    thread to finish before re-raising (see the module docstring)."""
    wrapped = asyncio.wrap_future(future)
    try:
        return await asyncio.shield(wrapped)
    except asyncio.CancelledError:
        if cancel is not None:
            cancel.set()
        while not wrapped.done():
            try:
                await asyncio.wait([wrapped])
            except asyncio.CancelledError:  # already cancelled: re-raised below, once
                continue
        raise


async def in_thread(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` in the loop's default executor, awaited with :func:`wait_for_thread`."""
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    return await wait_for_thread(asyncio.get_running_loop().run_in_executor(None, call))
