"""Graphs to serve, and a real server on a loopback port with a client talking to it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import aiotf
from aiotf.serve.app import SERVABLE, ModelServer, create_app
from aiotf.serve.servable import Servable
from aiotf.serve.signature import Signature

SHARED = Path(__file__).resolve().parents[3] / "shared"
MLP_CASE = SHARED / "conformance" / "cases" / "model_mlp"


class Served:
    """A model server on an ephemeral loopback port, and an HTTP client talking to it."""

    def __init__(self, server: ModelServer, client: aiohttp.ClientSession) -> None:
        self.server = server
        self.servable: Servable = server.app[SERVABLE]
        self.client = client

    async def post(self, path: str, body: Any) -> tuple[int, Any]:
        """POST ``body`` (bytes as they are, anything else as JSON): the status and the JSON."""
        kwargs = {"data": body} if isinstance(body, bytes) else {"json": body}
        async with self.client.post(path, **kwargs) as resp:
            assert resp.content_type == "application/json"
            return resp.status, await resp.json()

    async def get(self, path: str) -> tuple[int, Any]:
        return await self.request("GET", path)

    async def request(self, method: str, path: str, data: bytes = b"") -> tuple[int, Any]:
        async with self.client.request(method, path, data=data) as resp:
            assert resp.content_type == "application/json"
            return resp.status, await resp.json()

    async def post_text(self, path: str, data: bytes) -> str:
        """POST ``data``; the response's text, exactly as the server wrote it."""
        async with self.client.post(path, data=data) as resp:
            return await resp.text()


@contextlib.asynccontextmanager
async def _serving(
    graph: aiotf.Graph,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    name: str = "m",
) -> AsyncIterator[Served]:
    server = ModelServer(create_app(graph, Signature.build(graph, inputs, outputs), name), port=0)
    await server.start()
    try:
        async with aiohttp.ClientSession(base_url=server.url) as client:
            yield Served(server, client)
    finally:
        await server.stop()


class HeldRequest:
    """A ``:predict`` POST on its own connection, sent in two steps: :meth:`start` sends the
    headers with ``Expect: 100-continue`` and returns once the server answers ``100 Continue``
    (its handler is running: the request is in flight); :meth:`send` sends the body."""

    def __init__(self, port: int, path: str, body: object) -> None:
        self.port, self.path = port, path
        self.body = json.dumps(body).encode()

    async def start(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Connection: close\r\nExpect: 100-continue\r\nContent-Length: {len(self.body)}\r\n"
        )
        self.writer.write(head.encode() + b"\r\n")
        assert await self.reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"

    def send(self) -> None:
        self.writer.write(self.body)

    async def response(self) -> tuple[int, object]:
        """The status and JSON body (the server closes the connection after it)."""
        head, _, body = (await self.reader.read()).partition(b"\r\n\r\n")
        return int(head.split()[1]), json.loads(body)

    async def close(self) -> None:
        if hasattr(self, "writer"):
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()


Serving = Callable[..., contextlib.AbstractAsyncContextManager[Served]]


@pytest.fixture
def held_request() -> type[HeldRequest]:
    """``held_request(port, path, body)``: see :class:`HeldRequest`."""
    return HeldRequest


@pytest.fixture
def serving() -> Serving:
    """``async with serving(graph, {alias: tensor}, {alias: tensor}, name="m") as served:``."""
    return _serving


# -- graphs --------------------------------------------------------------------------------------
@pytest.fixture
def affine() -> aiotf.Graph:
    """x: float32 [?, 3] -> y = 2x + 1 (same shape), total = row sums [?]."""
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, [None, 3], name="x")
        aiotf.add(aiotf.multiply(x, 2.0), 1.0, name="y")
        aiotf.reduce_sum(x, axis=1, name="total")
    return graph


@pytest.fixture
def two_inputs() -> aiotf.Graph:
    """a: float32 [?], b: int32 [?] -> sum = a + b, scaled = a * 10 (int32 b cast to float)."""
    graph = aiotf.Graph()
    with graph.as_default():
        a = aiotf.placeholder(aiotf.float32, [None], name="a")
        b = aiotf.placeholder(aiotf.int32, [None], name="b")
        aiotf.add(a, aiotf.cast(b, aiotf.float32), name="sum")
        aiotf.multiply(a, 10.0, name="scaled")
    return graph


@pytest.fixture
def strings() -> aiotf.Graph:
    """s: string [?] -> the same strings (served twice: as text and as ``_bytes``)."""
    graph = aiotf.Graph()
    with graph.as_default():
        s = aiotf.placeholder(aiotf.string, [None], name="s")
        aiotf.identity(s, name="echo")
    return graph


@pytest.fixture
def mlp_case() -> Path:
    if not (MLP_CASE / "graph.pb").exists():
        pytest.skip("the shared conformance corpus is not beside this checkout")
    return MLP_CASE
