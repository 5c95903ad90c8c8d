"""Running the workloads: build every variant, check it against numpy, time them interleaved.

A workload yields up to five variants: ``aiotf`` (built with aiotf's API), ``aiotf_imported``
(the TensorFlow-written GraphDef, imported), ``aiotf_L0`` (built, run with the GraphOptimizer
off, for workloads marked ``unoptimized``), ``numpy`` (the straight-line reference, and the
source of truth for the check) and ``tensorflow``. A variant that cannot be built or run is
reported as ``unsupported: <error>``; a variant whose first result differs from the reference
is a ``mismatch`` and is not timed. Neither stops the suite.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import aiotf
from aiotf.bench import extras
from aiotf.bench.graphs import GraphSpec, load_spec
from aiotf.bench.timing import (
    SETTLE_S,
    Contender,
    aiotf_contender,
    compare,
    first_run,
    numpy_contender,
    summarize,
    tf_contender,
    time_interleaved,
)
from aiotf.bench.workloads import Array, Built, Params, Workload
from aiotf.devices import blas, onednn

EXTRAS = ("lateness", "build", "import", "memory")
UNOPTIMIZED = "aiotf_L0"  # the variant run with the GraphOptimizer off


@dataclasses.dataclass(frozen=True)
class Options:
    workloads: Sequence[Workload]
    quick: bool = False
    graphs_dir: Path | None = None
    extras: frozenset[str] = frozenset(EXTRAS)
    tf: Any = None  # the tensorflow module, when it is to be compared
    rounds: int = 15
    budget: float = 1.5  # seconds of timed runs per contender and workload

    @property
    def timing(self) -> tuple[int, float, float]:
        """Rounds, seconds of runs per contender, seconds of quiet before each batch."""
        return (3, 0.02, 0.0) if self.quick else (self.rounds, self.budget, SETTLE_S)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


async def run_suite(options: Options) -> dict[str, Any]:
    """Every workload, then the extras; the whole report as a JSON-ready dict."""
    report: dict[str, Any] = {"machine": machine_info(options.tf), "options": _options(options)}
    report["workloads"] = [await run_workload(w, options) for w in options.workloads]
    report.update(await extras.run_extras(options.extras, options.quick, options.tf))
    report["ok"] = all(w["status"] != "mismatch" for w in report["workloads"])
    return report


async def run_workload(workload: Workload, options: Options) -> dict[str, Any]:
    spec = load_spec(options.graphs_dir, workload.params_from) if workload.params_from else None
    own_spec = spec is not None and workload.params_from == workload.name
    seed = spec.seed if own_spec and spec and spec.seed is not None else workload.seed
    rtol = spec.rtol if own_spec and spec and spec.rtol is not None else workload.rtol
    atol = spec.atol if own_spec and spec and spec.atol is not None else workload.atol
    params = spec.params() if spec else workload.make_params(np.random.default_rng(seed + 1000))
    feeds = workload.feeds(seed)
    result: dict[str, Any] = {
        "name": workload.name,
        "description": workload.description,
        "params_from": str(spec.path) if spec else "seeded",
        "variants": {},
    }
    reference = workload.reference(params)
    want = reference(feeds)
    contenders = [numpy_contender(reference, feeds)]
    result["variants"]["numpy"] = {"status": "ok"}
    for label, build in _builders(workload, params, spec, options.tf):
        contender, variant = await _prepare(
            label, build, options.tf, workload.requests, feeds, want, (rtol, atol)
        )
        result["variants"][label] = variant
        if contender is not None:
            contenders.append(contender)
    try:
        rounds, budget, settle = options.timing
        samples = await time_interleaved(contenders, rounds, budget, settle)
    finally:
        for c in contenders:
            if c.close is not None:
                await c.close()
    for label, times in samples.items():
        result["variants"][label].update(summarize(times))
    result["ratios"] = _ratios(result["variants"])
    result["status"] = _status(result["variants"])
    return result


def _builders(
    workload: Workload, params: Params, spec: GraphSpec | None, tf: Any
) -> list[tuple[str, Callable[[], Built]]]:
    builders: list[tuple[str, Callable[[], Built]]] = [("aiotf", lambda: workload.build(params))]
    if workload.unoptimized:
        builders.append((UNOPTIMIZED, lambda: workload.build(params)))
    if spec is not None and workload.importable:
        builders.append(("aiotf_imported", spec.import_into_aiotf))
    if tf is not None:
        if spec is not None and workload.importable:
            builders.append(("tensorflow", lambda: spec.import_into_tf(tf)))
        else:
            builders.append(("tensorflow", lambda: workload.build_tf(tf, params)))
    return builders


async def _prepare(
    label: str,
    build: Callable[[], Built],
    tf: Any,
    requests: int,
    feeds: Sequence[Array],
    want: Any,
    tolerances: tuple[float, float],
) -> tuple[Contender | None, dict[str, Any]]:
    """The contender for one variant, after its first run passed the check (else None)."""
    contender: Contender | None = None
    try:
        built = build()
        if label == "tensorflow":
            contender = tf_contender(tf, built, feeds, requests)
        else:
            config = unoptimized_config() if label == UNOPTIMIZED else None
            contender = aiotf_contender(label, built, feeds, requests, config)
        start = time.perf_counter()
        got = await first_run(contender)
        first = time.perf_counter() - start
    except Exception as e:  # any failure to build or run is a report line, never a crash
        if contender is not None and contender.close is not None:
            await contender.close()
        return None, {"status": f"unsupported: {one_line(e)}"}
    check = compare(got, want, *tolerances)
    variant: dict[str, Any] = {"first_run_s": first, "check": check}
    if not check["ok"]:
        variant["status"] = f"mismatch: {check.get('detail')}"
        if contender.close is not None:
            await contender.close()
        return None, variant
    variant["status"] = "ok"
    return contender, variant


def unoptimized_config() -> Any:
    """A session config with the GraphOptimizer off: OptimizerOptions L0, no flags."""
    config = aiotf.ConfigProto()
    config.graph_options.optimizer_options.opt_level = aiotf.OptimizerOptions.L0
    return config


def _ratios(variants: dict[str, dict[str, Any]]) -> dict[str, float]:
    med = {k: v["median_s"] for k, v in variants.items() if "median_s" in v}
    pairs = [
        ("aiotf", "tensorflow"),
        ("aiotf", "numpy"),
        ("aiotf_imported", "tensorflow"),
        ("aiotf_imported", "numpy"),
        (UNOPTIMIZED, "numpy"),
        ("tensorflow", "numpy"),
    ]
    return {f"{a}/{b}": med[a] / med[b] for a, b in pairs if a in med and b in med and med[b] > 0}


def _status(variants: dict[str, dict[str, Any]]) -> str:
    statuses = [v["status"] for v in variants.values()]
    if any(s.startswith("mismatch") for s in statuses):
        return "mismatch"
    mine = ("aiotf", "aiotf_imported", UNOPTIMIZED)
    aiotf_ok = [variants[k]["status"] == "ok" for k in mine if k in variants]
    if all(aiotf_ok):
        return "ok"
    return "partial" if any(aiotf_ok) else "unsupported"


def machine_info(tf: Any) -> dict[str, Any]:
    import asyncio

    loop = type(asyncio.get_running_loop())
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "blas": blas.describe(),
        "onednn": onednn.version(),  # None: the products are all numpy's
        "aiotf": aiotf.__version__,
        "tensorflow": getattr(tf, "__version__", None),
        "event_loop": f"{loop.__module__}.{loop.__qualname__}",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _options(options: Options) -> dict[str, Any]:
    rounds, budget, settle = options.timing
    return {
        "workloads": [w.name for w in options.workloads],
        "quick": options.quick,
        "rounds": rounds,
        "budget_s": budget,
        "settle_s": settle,
        "graphs_dir": str(options.graphs_dir) if options.graphs_dir else None,
        "extras": sorted(options.extras),
    }
