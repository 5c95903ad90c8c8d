"""The aiohttp application and server behind ``aiotf serve``.

:func:`create_app` builds an ``aiohttp.web.Application`` whose ``cleanup_ctx`` opens the model's
:class:`~aiotf.serve.servable.Servable` (one ``aiotf.Session``) at startup and closes it at
cleanup; one handler hands every request under ``/v1/`` to :class:`~aiotf.serve.rest.RestApi`.

:class:`ModelServer` runs such an app on a TCP port. ``stop()`` is the graceful shutdown: stop
listening, let the requests in flight finish (up to ``shutdown_timeout`` seconds), then run
aiohttp's cleanup, which closes the connections, cancels what is still running and closes the
session. Closing the session last matters: it cancels whatever still runs on it.

A request is in flight from the moment its handler starts (its body may still be arriving)
until its response is written. The server waits for them itself, before aiohttp's cleanup,
because aiohttp's shutdown stops reading from every connection: a body still arriving would
never arrive, and its request would hang until the timeout cancelled it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

import aiotf
from aiotf.serve.rest import RestApi, error_body
from aiotf.serve.servable import Servable
from aiotf.serve.signature import Signature

SERVABLE = web.AppKey("aiotf_servable", Servable)
_API = web.AppKey("aiotf_rest_api", RestApi)
MAX_BODY_BYTES = 64 * 1024 * 1024
CANCEL_GRACE = 0.1  # seconds requests cancelled at the shutdown timeout get to unwind


class _Requests:
    """The app's requests being handled, from their headers to their response."""

    __slots__ = ("_idle", "in_flight")

    def __init__(self) -> None:
        self.in_flight = 0
        self._idle = asyncio.Event()  # set exactly when in_flight == 0
        self._idle.set()

    def started(self) -> None:
        self.in_flight += 1
        self._idle.clear()

    def finished(self) -> None:
        self.in_flight -= 1
        if not self.in_flight:
            self._idle.set()

    async def idle(self) -> None:
        """Wait until no request is in flight."""
        await self._idle.wait()


_REQUESTS = web.AppKey("aiotf_requests", _Requests)


def create_app(
    graph: aiotf.Graph,
    signature: Signature,
    model_name: str,
    config: Any = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> web.Application:
    """An app serving ``graph`` as model ``model_name`` with TensorFlow Serving's REST API.

    ``config`` is the session's ``aiotf.ConfigProto``; a request body past ``max_body_bytes``
    is answered 413.
    """
    app = web.Application(client_max_size=max_body_bytes)
    app[_REQUESTS] = _Requests()

    async def servable_ctx(app: web.Application) -> AsyncIterator[None]:
        servable = await Servable.open(model_name, graph, signature, config)
        app[SERVABLE] = servable
        app[_API] = RestApi({model_name: servable})
        try:
            yield
        finally:
            await servable.close()

    app.cleanup_ctx.append(servable_ctx)
    app.router.add_route("*", "/v1/{tail:.*}", _handle)
    return app


async def _handle(request: web.Request) -> web.Response:
    requests = request.app[_REQUESTS]
    requests.started()
    try:
        return await _answer(request)
    finally:
        requests.finished()


async def _answer(request: web.Request) -> web.Response:
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge as e:
        return _json_response(413, error_body(e.text or "Request body too large"))
    status, payload = await request.app[_API].handle(request.method, request.path, body)
    return _json_response(status, payload)


def _json_response(status: int, body: bytes) -> web.Response:
    return web.Response(status=status, body=body, content_type="application/json")


class ModelServer:
    """An app listening on ``host:port`` (port 0: any free port), stopped gracefully."""

    def __init__(
        self,
        app: web.Application,
        host: str = "127.0.0.1",
        port: int = 8501,
        shutdown_timeout: float = 30.0,
    ) -> None:
        self.app = app
        self.host = host
        self._port = port
        self._shutdown_timeout = shutdown_timeout
        self._runner = web.AppRunner(
            app, handle_signals=False, shutdown_timeout=CANCEL_GRACE, access_log=None
        )
        self._stopped = False

    @property
    def port(self) -> int:
        """The port listened on (the real one, once started, when 0 was asked for)."""
        return self._port

    @property
    def in_flight(self) -> int:
        """How many requests are being handled now (a body still arriving counts)."""
        return self.app[_REQUESTS].in_flight

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Open the session (the app's startup), then listen; undo both if listening fails."""
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self._port).start()
        except BaseException:
            await self.stop()
            raise
        self._port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        """Stop listening, finish the requests in flight, close the session (once).

        Requests still running after ``shutdown_timeout`` seconds are cancelled. Until then,
        open connections are still read: a body on its way arrives, and a request sent on a
        kept-alive connection is answered too.
        """
        if self._stopped:
            return
        self._stopped = True
        for site in self._runner.sites:
            await site.stop()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._shutdown_timeout):
                await self.app[_REQUESTS].idle()
        await self._runner.cleanup()

    async def serve_until_signalled(
        self,
        on_stopping: Callable[[int], None] | None = None,
        on_serving: Callable[[], None] | None = None,
    ) -> None:
        """Serve until SIGINT or SIGTERM, then stop gracefully.

        ``on_serving()`` is called once the signals are handled (a readiness line printed
        there is safe to answer with a signal); ``on_stopping(n)`` when a signal came, with
        the number of requests in flight, which the server then finishes.
        """
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        signals = (signal.SIGINT, signal.SIGTERM)
        for sig in signals:
            loop.add_signal_handler(sig, stop.set)
        try:
            if on_serving is not None:
                on_serving()
            await stop.wait()
            if on_stopping is not None:
                on_stopping(self.in_flight)
        finally:
            try:
                await self.stop()
            finally:
                for sig in signals:
                    with contextlib.suppress(Exception):
                        loop.remove_signal_handler(sig)
