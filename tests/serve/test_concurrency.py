"""Many requests at once on one session, a loop that stays responsive, and a graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
from collections.abc import Iterator
from typing import Any

import aiohttp
import numpy as np
import pytest

import aiotf
from aiotf.serve.app import SERVABLE, ModelServer, create_app
from aiotf.serve.servable import Servable
from aiotf.serve.signature import Signature


async def _settle() -> None:
    """Let every ready task run until it blocks."""
    for _ in range(20):
        await asyncio.sleep(0)


def _runs_started(servable: Servable) -> asyncio.Event:
    """An event set when the servable's next run starts (its step is then in flight)."""
    started = asyncio.Event()
    run = servable._runner

    async def observed(*feeds: Any) -> Any:
        started.set()
        return await run(*feeds)

    servable._runner = observed
    return started


class Heartbeat:
    """Ticks every ``period`` seconds and records how late each tick woke up."""

    def __init__(self, period: float = 0.005) -> None:
        self.period = period
        self.worst = 0.0
        self.ticks = 0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(self.period)
            self.worst = max(self.worst, loop.time() - start - self.period)
            self.ticks += 1


@contextlib.contextmanager
def _earlier_objects_frozen() -> Iterator[None]:
    """Move every object alive now out of the collector's sight (``gc.freeze``) until the end.

    In the whole suite this process holds every earlier test's leftovers: one full collection
    of them can take 300 ms, wherever it falls. That is the test process, not the server."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def test_1000_requests_at_concurrency_64_on_one_session(serving, affine) -> None:
    """Every answer is right, and the event loop never stalls while they run.

    The client shares the server's loop, so a tick waits for a loop iteration that may serve
    up to 64 requests at both ends: 5-10 ms late here when idle, 20-35 ms with three CPU hogs
    on two cores. The bound leaves room for a loaded machine and catches anything that blocks
    the loop for a tenth of a second (a thread waited for, a build or a big body on the loop).
    """
    heartbeat = Heartbeat()
    gate = asyncio.Semaphore(64)

    async def one(s, i: int) -> None:
        x = [float(i), float(i) + 0.5, -float(i)]
        async with gate:
            status, body = await s.post("/v1/models/m:predict", {"instances": [x]})
        assert (status, body) == (200, {"predictions": [[2 * v + 1 for v in x]]})

    with _earlier_objects_frozen():
        async with serving(affine, {"x": "x:0"}, {"y": "y:0"}) as s, asyncio.TaskGroup() as tg:
            beat = tg.create_task(heartbeat.run())
            async with asyncio.TaskGroup() as requests:
                for i in range(1000):
                    requests.create_task(one(s, i))
            beat.cancel()
    assert heartbeat.ticks > 0
    assert heartbeat.worst < 0.1, f"the event loop stalled for {heartbeat.worst * 1000:.0f} ms"


async def test_concurrent_requests_with_different_batch_sizes(serving, affine) -> None:
    async def one(s, n: int) -> None:
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        status, body = await s.post("/v1/models/m:predict", {"inputs": {"x": x.tolist()}})
        assert status == 200
        np.testing.assert_array_equal(body["outputs"], 2 * x + 1)

    async with serving(affine, {"x": "x:0"}, {"y": "y:0"}) as s:
        await asyncio.gather(*(one(s, n) for n in range(1, 65)))


def _queue_model() -> tuple[aiotf.Graph, aiotf.Operation, aiotf.Tensor]:
    """y = x + (a value dequeued from a queue): a run waits until something is enqueued."""
    graph = aiotf.Graph()
    with graph.as_default():
        queue = aiotf.FIFOQueue(4, aiotf.float32, shapes=[[]], name="q")
        x = aiotf.placeholder(aiotf.float32, [None], name="x")
        aiotf.add(x, queue.dequeue(), name="y")
        value = aiotf.placeholder(aiotf.float32, [], name="value")
        enqueue = queue.enqueue(value, name="enqueue")
    return graph, enqueue, value


async def test_shutdown_finishes_requests_in_flight_then_closes_the_session() -> None:
    graph, enqueue, value = _queue_model()
    signature = Signature.build(graph, {"x": "x:0"}, {"y": "y:0"})
    server = ModelServer(create_app(graph, signature, "q"), port=0)
    await server.start()
    servable = server.app[SERVABLE]
    async with aiohttp.ClientSession(base_url=server.url) as client:

        async def predict() -> tuple[int, object]:
            async with client.post("/v1/models/q:predict", json={"instances": [1.0, 2.0]}) as r:
                return r.status, await r.json()

        started = _runs_started(servable)
        in_flight = asyncio.create_task(predict())
        await started.wait()  # its run now waits on the queue

        stopping = asyncio.create_task(server.stop())
        await _settle()
        assert not _listening(server)  # no new connections...
        assert not in_flight.done() and not stopping.done()  # ...and the request still runs

        await servable.session.run(enqueue, {value: 10.0})  # let the run finish
        assert await in_flight == (200, {"predictions": [11.0, 12.0]})
        await stopping
    with pytest.raises(RuntimeError, match="closed Session"):
        await servable.session.run("y:0", {"x:0": [1.0]})
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", server.port)


async def test_shutdown_reads_a_body_still_arriving(affine, held_request) -> None:
    """aiohttp's own shutdown stops reading connections, so the server drains its requests
    before it: a request whose body is on its way is in flight, and is answered."""
    signature = Signature.build(affine, {"x": "x:0"}, {"y": "y:0"})
    server = ModelServer(create_app(affine, signature, "m"), port=0)
    await server.start()
    request = held_request(server.port, "/v1/models/m:predict", {"instances": [[1.0, 2.0, 3.0]]})
    try:
        async with asyncio.timeout(10):
            await request.start()  # the server answered 100 Continue: its handler runs
            stopping = asyncio.create_task(server.stop())
            await _settle()
            assert not _listening(server) and not stopping.done()
            assert server.in_flight == 1
            request.send()
            assert await request.response() == (200, {"predictions": [[3.0, 5.0, 7.0]]})
            await stopping
    finally:
        await request.close()
        await server.stop()
    assert server.in_flight == 0


@pytest.mark.parametrize("shutdown_timeout", [0.0, 0.05])
async def test_shutdown_timeout_cancels_what_never_finishes(shutdown_timeout: float) -> None:
    graph, _, _ = _queue_model()
    signature = Signature.build(graph, {"x": "x:0"}, {"y": "y:0"})
    server = ModelServer(
        create_app(graph, signature, "q"), port=0, shutdown_timeout=shutdown_timeout
    )
    await server.start()
    servable = server.app[SERVABLE]
    async with aiohttp.ClientSession(base_url=server.url) as client:
        started = _runs_started(servable)
        in_flight = asyncio.create_task(client.post("/v1/models/q:predict", json={"inputs": [1.0]}))
        await started.wait()
        async with asyncio.timeout(5):
            await server.stop()
        with pytest.raises(aiohttp.ClientError):
            await in_flight
    assert server.in_flight == 0


def _listening(server: ModelServer) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", server.port)) == 0
