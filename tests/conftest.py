"""Suite-wide settings and helpers: every build in the tests verifies its graphs around each
pass; ``heartbeat_lateness`` measures how late the event loop gets while work runs."""

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

os.environ.setdefault("AIOTF_CHECKS", "1")

Lateness = Callable[..., Awaitable[tuple[float, float, int]]]


async def _heartbeat_lateness(
    work: Callable[[], Awaitable[Any]], period: float = 0.001
) -> tuple[float, float, int]:
    """Run ``work`` while a ``period`` heartbeat ticks; (max lateness, work seconds, ticks)."""
    worst = 0.0
    ticks = 0
    stop = asyncio.Event()
    ticking = asyncio.Event()

    async def heartbeat() -> None:
        nonlocal worst, ticks
        while not stop.is_set():
            due = time.perf_counter() + period
            await asyncio.sleep(period)
            worst = max(worst, time.perf_counter() - due)
            ticks += 1
            ticking.set()

    async with asyncio.TaskGroup() as tg:
        tg.create_task(heartbeat())
        await ticking.wait()
        start = time.perf_counter()
        await work()
        elapsed = time.perf_counter() - start
        stop.set()
    return worst, elapsed, ticks


@pytest.fixture
def heartbeat_lateness() -> Lateness:
    """``await heartbeat_lateness(work)``: (max lateness, work seconds, ticks) of a 1 ms beat."""
    return _heartbeat_lateness
