"""The ``aiotf`` command line (also ``python -m aiotf``).

    aiotf demo                                        a two-device graph, placed, partitioned and run
    aiotf run GRAPH.pb --feed x=x.npy --fetch y       run any GraphDef file (binary or text)
    aiotf inspect GRAPH.pb [--json]                   what a GraphDef holds: ops, inputs, outputs...
    aiotf bench [--workloads tiny,mlp] [--quick]      the benchmark suite (python -m aiotf.bench)
    aiotf serve GRAPH.pb --input x=x:0 --output y=y:0 TensorFlow Serving's REST predict API

Names on ``run`` read as TensorFlow's tools read them: ``x:0`` is a tensor; a bare op name ``x``
means its first output (``x:0``), and a fetched op without outputs is run as a target.

Errors are one line on stderr and a non-zero exit status, never a traceback (set
``AIOTF_TRACEBACK=1`` to see one).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import math
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


class CliError(Exception):
    """A user mistake, reported as one line."""


def main(argv: Sequence[str] | None = None, prog: str = "aiotf") -> int:
    """Run the command line on ``argv``; ``prog`` is how it was invoked (``python -m aiotf``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # the benchmark suite parses its own options
        from aiotf.bench.cli import main as bench_main

        return bench_main(argv[1:], prog=f"{prog} bench")
    if argv[:1] == ["serve"]:  # so does the model server
        from aiotf.serve.cli import main as serve_main

        return serve_main(argv[1:], prog=f"{prog} serve")
    parser = _parser(prog)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except CliError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a failing graph: one clear line, never a traceback
        if os.environ.get("AIOTF_TRACEBACK"):
            raise
        print(f"{prog}: error: {describe_error(e)}", file=sys.stderr)
        return 1


def describe_error(e: BaseException) -> str:
    """``InvalidArgumentError: <first line>``; a lone error inside a group speaks for it."""
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    from aiotf.framework import errors

    text = str(e).strip()
    line = f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__
    if isinstance(e, errors.OpError):
        return line + _where(e)
    if not isinstance(e, ValueError | TypeError):
        line += " (an aiotf bug? AIOTF_TRACEBACK=1 shows where)"
    return line


def _where(e: Any) -> str:
    """`` (node 'div', op FloorDiv)`` for an error that names its node."""
    node = e.node_def if e.node_def is not None else e.op
    name, op = getattr(node, "name", ""), getattr(node, "op", getattr(node, "type", ""))
    if not name or f"'{name}'" in str(e).splitlines()[0]:
        return ""
    return f" (node '{name}', op {op})" if isinstance(op, str) and op else f" (node '{name}')"


def positive_int(text: str) -> int:
    """An argparse type: a whole number, at least 1."""
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free port) to 65535."""
    value = _whole_number(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"must be a port from 0 to 65535 (0: any free port), not {value}"
        )
    return value


def seconds(text: str) -> float:
    """An argparse type: a finite, non-negative number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, not {text}")
    return value


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="The TensorFlow 1.x graph runtime on asyncio.",
        epilog="Errors are one line; set AIOTF_TRACEBACK=1 for the full traceback.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser(
        "demo", help="build a graph on two CPU devices, run it, show what ran where"
    )
    demo.add_argument(
        "--runs", type=positive_int, default=200, help="timed runs, at least 1 (default 200)"
    )
    demo.set_defaults(func=_demo)
    _add_run(sub)
    _add_inspect(sub)
    sub.add_parser("bench", help="the benchmark suite (aiotf bench --help)", add_help=False)
    sub.add_parser("serve", help="serve a GraphDef over HTTP (aiotf serve --help)", add_help=False)
    return parser


def _add_run(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="run a GraphDef file (binary or text format)",
        description="Import a GraphDef, feed it, run it once and print the fetched values.",
        epilog="example: aiotf run mlp.pb --feed x=x.npy --feed keep=[0.5] --fetch probs:0",
    )
    run.add_argument("graph", help="a GraphDef file: binary (.pb) or text format (.pbtxt)")
    run.add_argument(
        "--feed",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="feed tensor NAME (x:0, or x for x:0) with VALUE: a .npy file, a Python literal "
        "like [[1.0, 2.0]], or for a string tensor any text",
    )
    run.add_argument(
        "--fetch",
        action="append",
        default=[],
        metavar="NAME",
        help="tensor to fetch (x:0, or op x for x:0); with no --fetch and no --target: the "
        "likely outputs aiotf inspect lists",
    )
    run.add_argument(
        "--target", action="append", default=[], metavar="OP", help="op to run without fetching"
    )
    run.set_defaults(func=_run)


def _add_inspect(sub: Any) -> None:
    inspect = sub.add_parser(
        "inspect",
        help="summarize a GraphDef: ops, placeholders, likely outputs, constants",
        description="Summarize a GraphDef without running it, as TensorFlow's summarize_graph "
        "does: ops by type, placeholders with dtypes and shapes (? is an unknown dimension), "
        "likely outputs (nodes nothing consumes), constants and their sizes, variables, "
        "functions and requested devices.",
    )
    inspect.add_argument("graph", help="a GraphDef file: binary (.pb) or text format (.pbtxt)")
    inspect.add_argument(
        "--json", action="store_true", help="print the summary as JSON (unknown dimensions: -1)"
    )
    inspect.set_defaults(func=_inspect)


def _demo(args: argparse.Namespace) -> int:
    from aiotf.demo import run_demo

    asyncio.run(run_demo(args.runs))
    return 0


# --- inspect ----------------------------------------------------------------------------------


def _inspect(args: argparse.Namespace) -> int:
    from aiotf.framework.graph_summary import summarize_graph_def

    summary = summarize_graph_def(load_graph_def(Path(args.graph)))
    if args.json:
        print(json.dumps({"graph": args.graph, **summary.to_json()}, indent=2))
        return 0
    print(summary.describe(args.graph))
    feeds = [f" --feed {p.name}=VALUE" for p in summary.placeholders if p.op == "Placeholder"]
    fetches = [f" --fetch {o.name}" for o in summary.likely_outputs]
    if fetches:
        print(f"To run it: aiotf run {shlex.quote(args.graph)}{''.join(feeds + fetches)}")
    return 0


# --- run --------------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    import aiotf
    from aiotf.framework.graph_summary import summarize_graph_def

    graph_def = load_graph_def(Path(args.graph))
    graph = aiotf.Graph()
    with graph.as_default():
        aiotf.import_graph_def(graph_def, name="")
    names = list(args.fetch)
    if not names and not args.target:  # as aiotf inspect guesses them
        names = [o.name for o in summarize_graph_def(graph_def).likely_outputs]
    if not names and not args.target:
        raise CliError("nothing to do: give at least one --fetch NAME (or --target OP)")
    feeds = _feeds(graph, args.feed)
    fetches = [_tensor_name(graph, n, "--fetch", allow_op=True) for n in names]
    targets = [_op(graph, _split(t)[0], "--target", t).name for t in args.target]
    targets += [n for n in fetches if ":" not in n]  # fetched ops without outputs
    tensors = [n for n in fetches if ":" in n]
    values = dict(
        zip(tensors, asyncio.run(_run_graph(graph, feeds, tensors, targets)), strict=True)
    )
    np.set_printoptions(threshold=200, edgeitems=4)
    for name in fetches:
        _print_value(name, values.get(name))
    return 0


async def _run_graph(
    graph: Any, feeds: dict[str, Any], fetches: list[str], targets: list[str]
) -> list[Any]:
    import aiotf

    async with aiotf.Session(graph=graph) as sess:
        values = await sess.run(list(fetches) + list(targets), feed_dict=feeds)
    return list(values[: len(fetches)])


def _print_value(name: str, value: Any) -> None:
    if ":" not in name:
        print(f"{name}: ran (the op has no outputs)")
        return
    arr = np.asarray(value)
    print(f"{name}: dtype={arr.dtype} shape={list(arr.shape)}")
    print(arr)


def _op(graph: Any, name: str, flag: str, given: str = "") -> Any:
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        raise CliError(
            f"{flag} {given or name!r}: the graph has no op named {name!r} "
            "(aiotf inspect GRAPH lists its placeholders and likely outputs)"
        ) from None


def _tensor_name(graph: Any, name: str, flag: str, *, allow_op: bool = False) -> str:
    """``x:1`` checked; ``x`` -> ``x:0`` (or ``x`` itself when ``allow_op`` and x has no outputs)."""
    op_name, index = _split(name)
    op = _op(graph, op_name, flag, name)
    outputs = len(op.outputs)
    if not index:
        if outputs == 0 and allow_op:
            return op_name
        index = "0"
    if int(index) >= outputs:
        have = ", ".join(t.name for t in op.outputs) or "none"
        raise CliError(f"{flag} {name!r}: op {op_name!r} ({op.type}) has outputs: {have}")
    return f"{op_name}:{int(index)}"


def _split(name: str) -> tuple[str, str]:
    """``x:1`` -> ``("x", "1")``; ``x`` -> ``("x", "")``."""
    op_name, sep, index = name.rpartition(":")
    return (op_name, index) if sep and index.isdigit() else (name, "")


def _feeds(graph: Any, texts: Sequence[str]) -> dict[str, Any]:
    feeds: dict[str, Any] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or not name or not value:
            raise CliError(f"bad --feed {text!r}: expected NAME=VALUE, e.g. x:0=x.npy")
        tensor = _tensor_name(graph, name, "--feed")
        if tensor in feeds:
            raise CliError(f"--feed {name!r}: tensor {tensor} is fed twice")
        feeds[tensor] = _feed_value(name, value, graph.get_tensor_by_name(tensor).dtype)
    return feeds


def _feed_value(name: str, value: str, dtype: Any) -> Any:
    from aiotf.framework import dtypes

    if value.endswith(".npy"):
        try:
            return np.load(value, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise CliError(f"cannot load {value!r} for feed {name!r}: {e}") from None
    try:
        return np.asarray(ast.literal_eval(value))
    except (ValueError, SyntaxError):
        if dtype.base_dtype is dtypes.string:
            return np.asarray(value.encode("utf-8"), dtype=object)
        raise CliError(
            f"bad value for feed {name!r}: {value!r} is neither a .npy file nor a Python literal"
        ) from None


# --- reading GraphDefs ------------------------------------------------------------------------


def load_graph_def(path: Path) -> Any:
    """A GraphDef from a binary or text-format file."""
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    import aiotf

    try:
        data = path.read_bytes()
    except OSError as e:
        raise CliError(f"cannot read graph file {str(path)!r}: {e.strerror}") from None
    graph_def = aiotf.GraphDef()
    reason = "not valid UTF-8 text, and not a binary GraphDef"
    if path.suffix not in (".pbtxt", ".txt"):
        try:
            graph_def.ParseFromString(data)
        except DecodeError as e:
            reason = f"not valid UTF-8 text, and not a binary GraphDef ({e})"
        else:  # other bytes may decode as unknown fields only: want some GraphDef content
            if (
                not data
                or graph_def.node
                or graph_def.library.function
                or graph_def.versions.producer
            ):
                return graph_def
            graph_def.Clear()
    try:
        text_format.Parse(data.decode("utf-8"), graph_def)
    except UnicodeDecodeError:
        raise CliError(f"{str(path)!r} is not a GraphDef: {reason}") from None
    except text_format.ParseError as e:
        raise CliError(f"{str(path)!r} is not a GraphDef: as text, {e}") from None
    return graph_def
