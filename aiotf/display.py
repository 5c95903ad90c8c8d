"""aiotf in Jupyter: graphs drawn with nodes coloured by device, a traced step as a timeline.

``import aiotf.display``, then:

- :func:`show_graph` (a Graph or GraphDef) and :func:`show_partitions` (a run's
  ``RunMetadata`` with ``output_partition_graphs``) return a :class:`GraphPicture`, which a
  notebook shows as an SVG drawn by Graphviz, or as text when the ``graphviz`` package or the
  ``dot`` program is missing. An ``aiotf.Graph`` at the end of a cell shows itself the same way
  (``Graph._repr_mimebundle_``). :func:`graph_to_dot` and :func:`graph_to_text` are the pieces.
- :func:`timeline_chart` turns a traced step's ``StepStats`` (``RunOptions(trace_level=
  FULL_TRACE)``) into a matplotlib figure: one lane per device, a bar per node execution,
  coloured by op type; executions that overlap on one device (pool threads, async kernels)
  stack inside the lane. Without matplotlib it raises :class:`MatplotlibUnavailableError`
  saying what to install.

The graph drawing lives in ``framework/graph_drawing.py`` so that ``Graph`` itself can use it;
this module adds what needs a run. ``graphviz`` and ``matplotlib`` (the ``notebook`` extra) are
imported only when a picture is made, so importing this module costs nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import io
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from aiotf.framework.graph_drawing import (
    MAX_NODES,
    GraphPicture,
    GraphvizUnavailableError,
    counted,
    device_colors,
    device_sort_key,
    graph_defs,
    graph_to_dot,
    graph_to_svg,
    graph_to_text,
    short_device,
    short_name,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "Execution",
    "GraphPicture",
    "GraphvizUnavailableError",
    "MatplotlibUnavailableError",
    "executions",
    "graph_to_dot",
    "graph_to_svg",
    "graph_to_text",
    "op_type",
    "show_graph",
    "show_partitions",
    "timeline_chart",
]

MAX_OP_COLORS = 19  # op types with a colour of their own; the rest share OTHER_COLOR
OTHER_COLOR = "#b0b0b0"
LABEL_MIN_FRACTION = 0.06  # a bar at least this share of the step wide gets a name
INSTALL_MATPLOTLIB = "pip install 'aiotf[notebook]' for the matplotlib package"


class MatplotlibUnavailableError(RuntimeError):
    """A chart cannot be drawn: the matplotlib package is missing (as for Graphviz's
    :class:`GraphvizUnavailableError`)."""


def show_graph(graph: Any, *, max_nodes: int = MAX_NODES) -> GraphPicture:
    """``graph`` (an ``aiotf.Graph`` or a ``GraphDef``) as a picture for a notebook."""
    return GraphPicture(graph, max_nodes=max_nodes)


def show_partitions(run: Any, *, max_nodes: int = MAX_NODES) -> GraphPicture:
    """A run's partition graphs, one cluster per device, ``_Send``→``_Recv`` hops in red.

    ``run`` is the ``RunMetadata`` of a run with ``RunOptions(output_partition_graphs=True)``
    (or its ``partition_graphs``).
    """
    _, partitioned = graph_defs(run)
    if not partitioned:
        raise TypeError(
            "show_partitions draws a run's partition graphs: pass the RunMetadata of a run with "
            "RunOptions(output_partition_graphs=True); for one graph use show_graph"
        )
    return GraphPicture(run, max_nodes=max_nodes)


# -- the timeline --------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Execution:
    """One node execution from a ``NodeExecStats``, in nanoseconds from the step's start."""

    device: str
    node: str
    op: str
    start_ns: int
    end_ns: int


def executions(step_stats: Any) -> list[Execution]:
    """Every node execution in ``step_stats`` (a ``StepStats`` or a ``RunMetadata``)."""
    stats = getattr(step_stats, "step_stats", step_stats)
    if not hasattr(stats, "dev_stats"):
        raise TypeError(f"Expected a StepStats or a RunMetadata, but got {type(stats).__name__}")
    spans = [(dev.device, ns, *_span_ns(ns)) for dev in stats.dev_stats for ns in dev.node_stats]
    origin = min((start for *_, start, _ in spans), default=0)
    return [
        Execution(device, ns.node_name, op_type(ns), start - origin, end - origin)
        for device, ns, start, end in spans
    ]


def _span_ns(ns: Any) -> tuple[int, int]:
    """(start, end) of one execution, from the nano fields when the collector set them."""
    if ns.all_start_nanos:
        start, rel = ns.all_start_nanos, ns.all_end_rel_nanos or ns.op_end_rel_nanos
    else:
        start = ns.all_start_micros * 1000
        rel = (ns.all_end_rel_micros or ns.op_end_rel_micros) * 1000
    return start, start + max(rel, 0)


def op_type(node_stats: Any) -> str:
    """The op type in a ``timeline_label`` (``"name = Op(inputs)"``), else ``"?"``."""
    _, sep, rest = node_stats.timeline_label.partition(" = ")
    op = rest.partition("(")[0].strip() if sep else ""
    return op or "?"


def timeline_chart(step_stats: Any, *, title: str | None = None) -> Figure:
    """A matplotlib figure of a traced step: one lane per device, a bar per node execution.

    ``step_stats`` is a ``StepStats`` or the ``RunMetadata`` of a run with
    ``RunOptions(trace_level=RunOptions.FULL_TRACE)``. Bars run from a node's start to its end,
    coloured by op type (the op types that took longest get their own colours), named when wide
    enough; a lane is tinted with its device's colour from the graph pictures. The figure shows
    itself in a notebook (``_repr_png_``) without ``pyplot``.
    """
    runs = executions(step_stats)
    if not runs:
        raise ValueError(
            "The step stats hold no node executions: run with "
            "RunOptions(trace_level=RunOptions.FULL_TRACE) and a RunMetadata"
        )
    _require_matplotlib()
    stats = getattr(step_stats, "step_stats", step_stats)
    devices = _lane_order(dev.device for dev in stats.dev_stats)
    span = max(max(r.end_ns for r in runs), 1)
    unit, scale = _unit(span)
    colors = _op_colors(runs)
    tints = device_colors(devices)
    figure = _figure_class()(figsize=(10, 1.3 + 0.85 * len(devices)), layout="constrained")
    ax = figure.add_subplot()
    for lane, device in enumerate(devices):
        ax.axhspan(lane - 0.5, lane + 0.5, color=tints[device], alpha=0.25, linewidth=0)
        _draw_lane(ax, lane, [r for r in runs if r.device == device], colors, span, scale)
    ax.set_yticks(range(len(devices)), [_lane_label(d, runs) for d in devices])
    ax.set_ylim(len(devices) - 0.5, -0.5)
    ax.set_xlim(0, span / scale * 1.01)
    ax.set_xlabel(f"time since the step's first node ({unit})")
    executed = counted(len(runs), "node execution")
    ax.set_title(title or f"Step timeline: {executed}, {span / scale:.3g} {unit}")
    _legend(ax, colors)
    return figure


def _lane_label(device: str, runs: list[Execution]) -> str:
    nodes = len({r.node for r in runs if r.device == device})  # a loop body's node runs often
    return f"{short_device(device)}\n{counted(nodes, 'node')}"


def _lane_order(devices: Iterable[str]) -> list[str]:
    return sorted(set(devices), key=device_sort_key)


def _unit(span_ns: int) -> tuple[str, float]:
    if span_ns < 10_000_000:
        return "µs", 1e3
    if span_ns < 10_000_000_000:
        return "ms", 1e6
    return "s", 1e9


def _op_colors(runs: list[Execution]) -> dict[str, str]:
    """A colour per op type, the longest-running types first; the tail shares grey."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    total: dict[str, int] = {}
    for r in runs:
        total[r.op] = total.get(r.op, 0) + r.end_ns - r.start_ns
    ranked = sorted(total, key=lambda op: (-total[op], op))
    palette = colormaps["tab20"]
    strong_first = [*range(0, 20, 2), *range(1, 20, 2)]  # tab20 pairs each hue with a pale twin
    return {
        op: to_hex(palette(strong_first[i])) if i < MAX_OP_COLORS else OTHER_COLOR
        for i, op in enumerate(ranked)
    }


def _draw_lane(
    ax: Any, lane: int, runs: list[Execution], colors: dict[str, str], span: int, scale: float
) -> None:
    """The bars of one device; executions that overlap go on stacked rows within the lane."""
    rows = _rows(runs)
    height = 0.8 / (max(rows, default=0) + 1)
    min_width = span * 0.002
    for run, row in zip(runs, rows, strict=True):
        left = run.start_ns / scale
        width = max(run.end_ns - run.start_ns, min_width) / scale
        bottom = lane - 0.4 + row * height
        ax.barh(
            bottom + height / 2,
            width,
            left=left,
            height=height * 0.9,
            color=colors[run.op],
            edgecolor="white",
            linewidth=0.3,
        )
        if width * scale >= span * LABEL_MIN_FRACTION:
            chars = max(int(width * scale / span * 120), 4)
            ax.text(
                left + width / 2,
                bottom + height / 2,
                short_name(run.node.rsplit("/", 1)[-1], chars),
                ha="center",
                va="center",
                fontsize=7,
                clip_on=True,
            )


def _rows(runs: list[Execution]) -> list[int]:
    """Greedy interval packing: each execution on the first row free at its start."""
    ends: list[int] = []
    rows = [0] * len(runs)
    for i in sorted(range(len(runs)), key=lambda i: (runs[i].start_ns, runs[i].end_ns)):
        run = runs[i]
        row = next((r for r, end in enumerate(ends) if end <= run.start_ns), len(ends))
        if row == len(ends):
            ends.append(run.end_ns)
        else:
            ends[row] = run.end_ns
        rows[i] = row
    return rows


def _legend(ax: Any, colors: dict[str, str]) -> None:
    from matplotlib.patches import Patch

    named = [op for op, color in colors.items() if color != OTHER_COLOR]
    handles = [Patch(color=colors[op], label=op) for op in named]
    if len(named) < len(colors):
        handles.append(Patch(color=OTHER_COLOR, label=f"{len(colors) - len(named)} other ops"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)


def _require_matplotlib() -> None:
    """Raise :class:`MatplotlibUnavailableError`, saying what to install, without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MatplotlibUnavailableError(
            f"timeline_chart draws with matplotlib, which is not installed ({INSTALL_MATPLOTLIB})"
        ) from None


@functools.cache
def _figure_class() -> type[Figure]:
    """A ``Figure`` that renders itself as PNG for Jupyter (``pyplot`` need not be loaded)."""
    from matplotlib.figure import Figure

    class TimelineFigure(Figure):
        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=100)
            return buffer.getvalue()

    return TimelineFigure
