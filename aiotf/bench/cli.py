"""``python -m aiotf.bench`` (also ``aiotf bench``): options, event loop, TensorFlow, output.

    python -m aiotf.bench                       every workload and every extra
    python -m aiotf.bench --workloads tiny,mlp  just those
    python -m aiotf.bench --quick --json r.json few repetitions; the report as JSON too

TensorFlow is compared when ``import tensorflow`` works in this interpreter (``--no-tf`` skips
it); uvloop runs the event loop when it is importable (``--no-uvloop`` keeps asyncio's). The
exit status is 1 when any variant's result differs from the numpy reference.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aiotf.bench.graphs import graphs_dir
from aiotf.bench.report import format_report
from aiotf.bench.suite import EXTRAS, Options, one_line, run_suite
from aiotf.bench.workloads import WORKLOADS

PROG = "python -m aiotf.bench"


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Run the suite as ``argv`` says; ``prog`` is how it was invoked (``aiotf bench``)."""
    args = parser(prog).parse_args(argv)
    try:
        workloads = [WORKLOADS[n] for n in _names(args.workloads)]
        extras = frozenset(_names(args.extras)) if args.extras != "all" else frozenset(EXTRAS)
    except KeyError as e:
        print(f"{prog}: error: unknown name {e.args[0]!r}", file=sys.stderr)
        return 2
    try:
        graphs = graphs_dir(args.graphs)
    except NotADirectoryError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    if graphs is None:
        print(
            f"{prog}: no TensorFlow-written graphs found (shared/bench/graphs): "
            "the imported variants are skipped (--graphs DIR names them)",
            file=sys.stderr,
        )
    tf = None if args.no_tf else load_tensorflow(prog)
    options = Options(workloads, args.quick, graphs, extras, tf)
    with asyncio.Runner(loop_factory=None if args.no_uvloop else uvloop_factory()) as runner:
        report = runner.run(run_suite(options))
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if report["ok"] else 1


def parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="aiotf against TensorFlow and straight-line numpy, in one process.",
    )
    p.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help=f"comma-separated, from: {', '.join(WORKLOADS)} (default: all)",
    )
    p.add_argument("--quick", action="store_true", help="few repetitions (a smoke test)")
    p.add_argument("--json", metavar="PATH", help="also write the report as JSON to PATH")
    p.add_argument(
        "--extras",
        default="all",
        help=f"comma-separated, from: {', '.join(EXTRAS)}; 'all' (default) or '' for none",
    )
    p.add_argument("--graphs", metavar="DIR", help="the TF-written GraphDefs (shared/bench/graphs)")
    p.add_argument("--no-tf", action="store_true", help="do not compare with TensorFlow")
    p.add_argument("--no-uvloop", action="store_true", help="use asyncio's own event loop")
    return p


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in WORKLOADS and n not in EXTRAS:
            raise KeyError(n)
    return names


def uvloop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def load_tensorflow(prog: str = PROG) -> Any:
    """The ``tensorflow`` module, or None when it cannot be imported here (with a note why)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        tf = importlib.import_module("tensorflow")
    except Exception as e:  # not installed, or broken alongside this numpy/protobuf
        print(f"{prog}: TensorFlow not compared ({one_line(e)})", file=sys.stderr)
        return None
    return tf
