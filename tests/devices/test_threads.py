"""The bounded helper for thread work: a cancelled wait lets the thread finish first."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading

import pytest

from aiotf.devices.threads import in_thread, run_in

STALL_S = 30.0  # generous: only a hang reaches it
WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


async def test_a_cancelled_wait_lets_the_thread_finish_then_re_raises_once() -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    cancel = threading.Event()

    def job() -> int:
        started.set()
        release.wait(STALL_S)
        finished.set()
        return 1

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = asyncio.ensure_future(run_in(pool.submit, job, cancel=cancel))
        await asyncio.to_thread(started.wait, STALL_S)
        waiting.cancel()
        await asyncio.sleep(0)
        waiting.cancel()  # a second cancellation changes nothing
        await asyncio.sleep(0)
        assert cancel.is_set() and not waiting.done()  # still waiting for the thread
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert finished.is_set()


async def test_in_thread_runs_off_the_loop_with_the_caller_s_context() -> None:
    WHO.set("caller")

    def job(x: int) -> tuple[int, str, bool]:
        return x * 2, WHO.get(), threading.current_thread() is threading.main_thread()

    assert await in_thread(job, 21) == (42, "caller", False)

    def fail() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        await in_thread(fail)


async def test_a_stop_iteration_in_the_thread_comes_back_as_a_runtime_error() -> None:
    # A future cannot hold a StopIteration (asyncio refuses it): delivered as is, the awaiting
    # task would never be woken.
    def job() -> None:
        raise StopIteration

    with pytest.raises(RuntimeError, match="StopIteration") as raised:
        await asyncio.wait_for(in_thread(job), STALL_S)
    assert isinstance(raised.value.__cause__, StopIteration)
