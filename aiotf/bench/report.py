"""The human-readable report: one table of medians and ratios, then the extras."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

VARIANT_ORDER = ("aiotf", "aiotf_imported", "aiotf_L0", "tensorflow", "numpy")


def fmt_time(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_bytes(n: float) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def format_report(report: dict[str, Any]) -> str:
    lines: list[str] = []
    add = lines.append
    m = report["machine"]
    add(
        f"aiotf {m['aiotf']} bench | python {m['python']} numpy {m['numpy']} "
        f"tensorflow {m['tensorflow'] or '(not installed)'} | "
        f"{m.get('blas') or 'no OpenBLAS'}, oneDNN {m.get('onednn') or '(off)'} | "
        f"{m['event_loop']} | {m['cpu_count']} CPUs | {m['date']}"
    )
    add("")
    head = f"{'workload':<11} {'variant':<15} {'median':>9} {'p10':>9} {'p90':>9} {'runs':>7} "
    add(head + f"{'/TF':>7} {'/numpy':>7}  status")
    for w in report["workloads"]:
        for label in VARIANT_ORDER:
            v = w["variants"].get(label)
            if v is not None:
                add(_variant_line(w, label, v))
        add("")
    _extras(report, add)
    return "\n".join(lines)


def _variant_line(w: dict[str, Any], label: str, v: dict[str, Any]) -> str:
    ratios = w.get("ratios", {})
    tf_ratio = ratios.get(f"{label}/tensorflow")
    np_ratio = ratios.get(f"{label}/numpy")
    timing = (
        f"{fmt_time(v['median_s']):>9} {fmt_time(v['p10_s']):>9} {fmt_time(v['p90_s']):>9} "
        f"{v['runs']:>7} "
        if "median_s" in v
        else f"{'':>9} {'':>9} {'':>9} {'':>7} "
    )
    ratio = f"{_ratio(tf_ratio):>7} {_ratio(np_ratio):>7}"
    return f"{w['name']:<11} {label:<15} {timing}{ratio}  {v['status']}"


def _ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _extras(report: dict[str, Any], add: Callable[[str], None]) -> None:
    lateness = report.get("lateness")
    if lateness is not None:
        add("Event-loop lateness of a 1 ms heartbeat (worst / p99):")
        _each(lateness, add, lambda v: f"{v['max_ms']:.2f} ms / {v['p99_ms']:.2f} ms")
    build = report.get("build_scaling")
    if isinstance(build, list):
        add("Executor build (first run of a signature) and per-run cost, Mul/AddV2 chains:")
        for row in build:
            for who in ("aiotf", "tensorflow"):
                if who in row:
                    r = row[who]
                    add(
                        f"  {row['nodes']:>6} nodes {who:<10} construct {fmt_time(r['construct_s'])}, "
                        f"build {r['build_us_per_node']:.1f} µs/node, "
                        f"run {fmt_time(r['run_median_s'])} ({r['run_us_per_node']:.2f} µs/node)"
                        + (
                            f", loop blocked {r['build_max_lateness_ms']:.0f} ms during build"
                            if "build_max_lateness_ms" in r
                            else ""
                        )
                    )
    elif build is not None:
        add(f"Executor build: {build['status']}")
    imports = report.get("import_time")
    if imports is not None:
        if "aiotf_s" in imports:
            text = f"import aiotf: {fmt_time(imports['aiotf_s'])}"
            if "tensorflow_s" in imports:
                text += f" (import tensorflow: {fmt_time(imports['tensorflow_s'])})"
            add(text)
        else:
            add(f"import aiotf: {imports['status']}")
    memory = report.get("peak_memory")
    if memory is not None:
        add("Peak memory of one run (tracemalloc; device allocator's live-tensor peak):")
        _each(
            memory,
            add,
            lambda v: (
                f"aiotf {fmt_bytes(v['aiotf_tracemalloc_peak_bytes'])} "
                f"(allocator {fmt_bytes(v['aiotf_allocator_peak_bytes'])}), "
                f"numpy {fmt_bytes(v['numpy_tracemalloc_peak_bytes'])}"
            ),
        )


def _each(section: dict[str, Any], add: Callable[[str], None], text: Any) -> None:
    if "status" in section:
        add(f"  {section['status']}")
        return
    width = max([11, *(len(name) for name in section)])
    for name, value in section.items():
        add(f"  {name:<{width}} {text(value)}")
