"""``aiotf serve``: a GraphDef behind TensorFlow Serving's REST API.

    aiotf serve model.pb --input x=x:0 --output probs=probs:0 --output label=pred:0
    curl -d '{"instances": [[1, 2, 3, 4, 5, 6, 7, 8]]}' \\
        http://127.0.0.1:8501/v1/models/model:predict

Each ``--input``/``--output`` is ``ALIAS=TENSOR`` (or just ``TENSOR``, aliased by its op name);
without ``--input`` every Placeholder the outputs depend on is an input. The model is called
after the file's stem unless ``--model-name`` says otherwise. The server binds to 127.0.0.1
unless ``--host`` says otherwise, and on SIGINT or SIGTERM stops listening, finishes the
requests in flight, closes its session and exits 0. Errors are one line on stderr and exit
status 1 (2 for bad usage).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import aiotf
from aiotf.cli import CliError, load_graph_def, port_number, seconds
from aiotf.serve.signature import Signature, SignatureError

PROG = "aiotf serve"
_MODEL_NAME = re.compile(r"[^/:]+")


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Serve as ``argv`` says; ``prog`` is how the command was invoked (``python -m aiotf serve``)."""
    args = parser(prog).parse_args(argv)
    try:
        _require_aiohttp()
        graph, signature, name = _load(args)
        _run(_serve(args, graph, signature, name, prog))
    except CliError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Serve a GraphDef over HTTP with TensorFlow Serving's REST predict API.",
        epilog="ALIAS=TENSOR: the name clients use in JSON, and the graph tensor (x:0, or x).",
    )
    p.add_argument("graph", metavar="GRAPH", help="a GraphDef file: binary (.pb) or text (.pbtxt)")
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="ALIAS=TENSOR",
        help="a named input (repeat for several; default: each Placeholder the outputs need)",
    )
    p.add_argument(
        "--output",
        action="append",
        required=True,
        metavar="ALIAS=TENSOR",
        help="a named output (repeat for several)",
    )
    p.add_argument("--model-name", help="the model's name in URLs (default: GRAPH's file stem)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--port", type=port_number, default=8501, help="port (default 8501; 0: any free port)"
    )
    p.add_argument(
        "--shutdown-timeout",
        type=seconds,
        default=30.0,
        metavar="S",
        help="on SIGINT/SIGTERM, how long requests in flight may take to finish (default 30)",
    )
    return p


def _require_aiohttp() -> None:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise CliError("the model server needs aiohttp: pip install 'aiotf[serve]'") from None


def _load(args: argparse.Namespace) -> tuple[aiotf.Graph, Signature, str]:
    path = Path(args.graph)
    name = args.model_name if args.model_name is not None else path.stem
    if not _MODEL_NAME.fullmatch(name):
        raise CliError(f"bad model name {name!r}: give one without '/' or ':' (--model-name)")
    graph_def = load_graph_def(path)
    graph = aiotf.Graph()
    try:
        with graph.as_default():
            aiotf.import_graph_def(graph_def, name="")
    except (aiotf.errors.OpError, ValueError, TypeError, KeyError) as e:
        raise CliError(f"cannot import {str(path)!r}: {_first_line(e)}") from None
    inputs = _specs(args.input, "--input") if args.input else None
    outputs = _specs(args.output, "--output")
    try:
        return graph, Signature.build(graph, inputs, outputs), name
    except SignatureError as e:
        raise CliError(str(e)) from None


def _specs(texts: list[str], flag: str) -> dict[str, str]:
    specs: dict[str, str] = {}
    for text in texts:
        alias, sep, tensor = text.rpartition("=")
        if not sep:
            alias = tensor.partition(":")[0]
        if not alias or not tensor:
            raise CliError(f"bad {flag} {text!r}: expected ALIAS=TENSOR, e.g. x=x:0")
        if alias in specs:
            raise CliError(f"{flag} {alias!r} is given twice")
        specs[alias] = tensor
    return specs


async def _serve(
    args: argparse.Namespace, graph: aiotf.Graph, signature: Signature, name: str, prog: str
) -> None:
    from aiotf.serve.app import ModelServer, create_app

    def say(text: str) -> None:
        print(f"{prog}: {text}", file=sys.stderr, flush=True)

    server = ModelServer(
        create_app(graph, signature, name),
        host=args.host,
        port=args.port,
        shutdown_timeout=args.shutdown_timeout,
    )
    try:
        await server.start()
    except OSError as e:
        reason = os.strerror(e.errno) if e.errno and e.errno > 0 else e.strerror or str(e)
        raise CliError(f"cannot listen on {args.host}:{args.port}: {reason}") from None
    except (aiotf.errors.OpError, ValueError, TypeError) as e:  # the session cannot run it
        raise CliError(f"cannot serve model {name!r}: {_first_line(e)}") from None
    # Everything alive now (modules, the graph, the session) lives as long as the server: out
    # of the collector's sight, a full collection no longer walks it, and never pauses the
    # event loop for long (~20 ms on a busy server before; ~5 ms after).
    gc.collect()
    gc.freeze()
    await server.serve_until_signalled(
        on_stopping=lambda n: say(
            f"stopping: finishing {n} request{'s' * (n != 1)} in flight, then closing the session"
        ),
        on_serving=lambda: say(
            f"model {name!r} at {server.url}/v1/models/{name} ({_describe(signature)})"
        ),
    )
    say("stopped")


def _describe(signature: Signature) -> str:
    inputs = ", ".join(f"{a}={i.name}" for a, i in signature.inputs.items())
    outputs = ", ".join(f"{a}={i.name}" for a, i in signature.outputs.items())
    return f"inputs: {inputs}; outputs: {outputs}"


def _run(coroutine: Coroutine[Any, Any, None]) -> None:
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        runner.run(coroutine)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _first_line(error: BaseException) -> str:
    text = str(error.args[0] if isinstance(error, KeyError) and error.args else error).strip()
    return text.splitlines()[0] if text else type(error).__name__
