"""A servable: one model, one session, every request running on it concurrently.

``await Servable.open(name, graph, signature)`` opens an ``aiotf.Session`` on the graph and
compiles the signature once (``make_callable``: feeds are the inputs in signature order, fetches
the outputs); ``await servable.predict(body)`` parses a ``:predict`` body, runs the step and
returns the response body. Runs share the session and never wait for one another. Bodies past
``THREAD_MIN_BYTES`` are parsed, and outputs past ``THREAD_MIN_ELEMENTS`` written, in a worker
thread, so a large request does not stall the event loop; small ones stay on the loop, where
they cost less than a thread hop. ``await servable.close()`` closes the session: runs still in
flight are cancelled, so a server drains its requests before closing it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

import aiotf
from aiotf.devices import threads
from aiotf.serve.predict import PredictRequest, make_response, parse_request
from aiotf.serve.signature import DEFAULT_SIGNATURE, Signature

VERSION = 1  # a GraphDef has no versions: the one loaded is version 1
THREAD_MIN_BYTES = 256 * 1024
THREAD_MIN_ELEMENTS = 64 * 1024

_T = TypeVar("_T")


class Servable:
    """A model served from one session. Build with :meth:`open`."""

    def __init__(
        self,
        name: str,
        signature: Signature,
        session: aiotf.Session,
        runner: Callable[..., Any],
    ) -> None:
        self.name = name
        self.signature = signature
        self.session = session
        self._runner = runner

    @classmethod
    async def open(
        cls, name: str, graph: aiotf.Graph, signature: Signature, config: Any = None
    ) -> Servable:
        """Open a session on ``graph`` and compile ``signature``'s step once."""
        session = aiotf.Session(graph=graph, config=config)
        try:
            runner = session.make_callable(
                [info.tensor for info in signature.outputs.values()],
                feed_list=[info.tensor for info in signature.inputs.values()],
            )
        except BaseException:
            await session.close()
            raise
        return cls(name, signature, session, runner)

    async def predict(self, body: bytes) -> bytes:
        """The response body for a ``:predict`` request body; errors are ``aiotf.errors``."""
        request = await _maybe_in_thread(
            len(body) >= THREAD_MIN_BYTES, parse_request, body, self.signature
        )
        outputs = await self._run(request)
        size = sum(arr.size for arr in outputs.values())
        return await _maybe_in_thread(
            size >= THREAD_MIN_ELEMENTS, self._response_body, outputs, request.row_format
        )

    async def _run(self, request: PredictRequest) -> dict[str, np.ndarray]:
        feeds = [request.feeds[alias] for alias in self.signature.inputs]
        try:
            values = await self._runner(*feeds)
        except (ValueError, TypeError) as e:  # the client's feed checks: shape, dtype
            raise aiotf.errors.InvalidArgumentError(None, None, str(e)) from None
        return {
            alias: np.asarray(value)
            for alias, value in zip(self.signature.outputs, values, strict=True)
        }

    def _response_body(self, outputs: dict[str, np.ndarray], row_format: bool) -> bytes:
        return json.dumps(make_response(outputs, self.signature, row_format)).encode()

    def status_json(self) -> dict[str, Any]:
        """TensorFlow Serving's ``GetModelStatusResponse`` as JSON."""
        status = {"error_code": "OK", "error_message": ""}
        return {
            "model_version_status": [
                {"version": str(VERSION), "state": "AVAILABLE", "status": status}
            ]
        }

    def metadata_json(self) -> dict[str, Any]:
        """TensorFlow Serving's ``GetModelMetadataResponse`` as JSON."""
        return {
            "model_spec": {"name": self.name, "signature_name": "", "version": str(VERSION)},
            "metadata": {
                "signature_def": {
                    "signature_def": {DEFAULT_SIGNATURE: self.signature.signature_def_json()}
                }
            },
        }

    async def close(self) -> None:
        """Close the session (cancelling runs still in flight) and wait until it has wound down."""
        await self.session.close()


async def _maybe_in_thread(in_thread: bool, fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)``, in a worker thread if ``in_thread``; a cancelled wait lets it finish first."""
    if not in_thread:
        return fn(*args)
    return await threads.in_thread(fn, *args)  # no thread outlives the request that started it
