"""``aiotf.display``: the timeline chart from hand-built StepStats (then one real traced run), and
the picture helpers' checks. Figures are bare ``matplotlib.figure.Figure``s drawn by Agg; the
absence of matplotlib is simulated (no package in ``sys.modules``)."""

from __future__ import annotations

import importlib.util
import re
import sys
from typing import Any

import numpy as np
import pytest

import aiotf
import aiotf.display
from aiotf.display import (
    Execution,
    MatplotlibUnavailableError,
    executions,
    op_type,
    timeline_chart,
)
from aiotf.framework.graph_drawing import PALETTE
from aiotf.proto import step_stats_pb2

needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None, reason="the matplotlib package is missing"
)

CPU = "/job:localhost/replica:0/task:0/device:CPU:{}"
T0 = 1_700_000_000_000_000  # µs: a realistic wall clock


def node(dev: Any, name: str, op: str, start_us: int, dur_us: int, nanos: bool = True) -> None:
    stats = dev.node_stats.add(node_name=name, timeline_label=f"{name} = {op}(in)")
    stats.all_start_micros = T0 + start_us
    stats.op_end_rel_micros = stats.all_end_rel_micros = dur_us
    if nanos:
        stats.all_start_nanos = (T0 + start_us) * 1000
        stats.op_end_rel_nanos = stats.all_end_rel_nanos = dur_us * 1000


def two_devices(nanos: bool = True) -> Any:
    """CPU:0 runs three nodes, two of them at once; CPU:1 runs two."""
    stats = step_stats_pb2.StepStats()
    cpu0 = stats.dev_stats.add(device=CPU.format(0))
    node(cpu0, "a/w", "Const", 0, 5, nanos)
    node(cpu0, "a/MatMul", "MatMul", 10, 400, nanos)
    node(cpu0, "b/MatMul", "MatMul", 20, 380, nanos)  # overlaps a/MatMul: a pool thread
    cpu1 = stats.dev_stats.add(device=CPU.format(1))
    node(cpu1, "c/Relu", "Relu", 420, 30, nanos)
    node(cpu1, "c/probs", "Softmax", 460, 40, nanos)
    return stats


def lane_bars(figure: Any) -> list[Any]:
    """The execution bars (the lanes' tints are Polygons/Rectangles spanning the whole axis)."""
    ax = figure.axes[0]
    return [c for container in ax.containers for c in container]


# -- executions -----------------------------------------------------------------------------------
def test_executions_are_relative_to_the_first_start() -> None:
    runs = executions(two_devices())
    assert runs[0] == Execution(CPU.format(0), "a/w", "Const", 0, 5_000)
    assert runs[-1] == Execution(CPU.format(1), "c/probs", "Softmax", 460_000, 500_000)


def test_micros_are_used_when_the_nanos_are_unset() -> None:
    assert executions(two_devices(nanos=False)) == executions(two_devices())


def test_a_run_metadata_is_read_through_its_step_stats() -> None:
    metadata = aiotf.RunMetadata()
    metadata.step_stats.CopyFrom(two_devices())
    assert executions(metadata) == executions(two_devices())


def test_op_type_comes_from_the_timeline_label() -> None:
    stats = step_stats_pb2.NodeExecStats(timeline_label="x/y = MatMul(a, b)")
    assert op_type(stats) == "MatMul"
    assert op_type(step_stats_pb2.NodeExecStats(timeline_label="c = Const()")) == "Const"
    assert op_type(step_stats_pb2.NodeExecStats()) == "?"


# -- the chart ------------------------------------------------------------------------------------
@needs_matplotlib
def test_one_lane_per_device_and_one_bar_per_execution() -> None:
    figure = timeline_chart(two_devices())
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["CPU:0\n3 nodes", "CPU:1\n2 nodes"]
    assert len(lane_bars(figure)) == 5
    assert ax.get_title() == "Step timeline: 5 node executions, 500 µs"
    assert ax.get_xlabel() == "time since the step's first node (µs)"


@needs_matplotlib
def test_bars_are_coloured_by_op_type_with_a_legend() -> None:
    figure = timeline_chart(two_devices())
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert legend == ["MatMul", "Softmax", "Relu", "Const"]  # longest total time first
    colors = {tuple(b.get_facecolor()) for b in lane_bars(figure)}
    assert len(colors) == 4


@needs_matplotlib
def test_overlapping_executions_stack_inside_their_lane() -> None:
    figure = timeline_chart(two_devices())
    a_matmul, b_matmul = lane_bars(figure)[1:3]
    assert a_matmul.get_height() == pytest.approx(b_matmul.get_height())
    assert a_matmul.get_height() < 0.4  # two rows share CPU:0's 0.8
    assert a_matmul.get_y() != b_matmul.get_y()
    relu = lane_bars(figure)[3]
    assert relu.get_height() == pytest.approx(0.8 * 0.9)  # CPU:1 has one row


@needs_matplotlib
def test_lanes_are_tinted_with_the_graph_pictures_device_colours() -> None:
    from matplotlib.colors import to_hex

    ax = timeline_chart(two_devices()).axes[0]
    tints = [to_hex(p.get_facecolor()) for p in ax.patches if p not in lane_bars(ax.figure)]
    assert tints == [PALETTE[0], PALETTE[1]]


@needs_matplotlib
def test_wide_bars_are_named() -> None:
    ax = timeline_chart(two_devices()).axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["MatMul", "MatMul", "Relu", "probs"]


@needs_matplotlib
def test_longer_steps_switch_to_milliseconds() -> None:
    stats = step_stats_pb2.StepStats()
    node(stats.dev_stats.add(device=CPU.format(0)), "slow", "Sleep", 0, 25_000)
    ax = timeline_chart(stats, title="slow").axes[0]
    assert ax.get_xlabel().endswith("(ms)")
    assert ax.get_title() == "slow"


@needs_matplotlib
def test_the_figure_renders_itself_as_png() -> None:
    png = timeline_chart(two_devices())._repr_png_()  # type: ignore[attr-defined]
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_empty_or_wrong_input_is_refused() -> None:
    with pytest.raises(ValueError, match=r"trace_level=RunOptions.FULL_TRACE"):
        timeline_chart(aiotf.RunMetadata())
    with pytest.raises(TypeError, match="Expected a StepStats or a RunMetadata, but got str"):
        timeline_chart("stats")


@needs_matplotlib
async def test_a_traced_run_has_a_lane_per_device() -> None:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None, 3], name="x")
        with aiotf.device("/device:CPU:0"):
            h = aiotf.nn.relu(x)
        with aiotf.device("/device:CPU:1"):
            y = aiotf.reduce_sum(h * 2.0)
    metadata = aiotf.RunMetadata()
    options = aiotf.RunOptions(trace_level=aiotf.RunOptions.FULL_TRACE)
    async with aiotf.Session(graph=g, config=aiotf.ConfigProto(device_count={"CPU": 2})) as sess:
        value = await sess.run(y, {x: np.ones((2, 3))}, options=options, run_metadata=metadata)
    assert value == 12.0
    labels = [t.get_text() for t in timeline_chart(metadata).axes[0].get_yticklabels()]
    assert [label.split("\n")[0] for label in labels] == ["CPU:0", "CPU:1"]


def test_without_matplotlib_the_chart_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    message = "timeline_chart draws with matplotlib, which is not installed (pip install "
    with pytest.raises(MatplotlibUnavailableError, match=re.escape(message + "'aiotf[notebook]'")):
        timeline_chart(two_devices())
    assert issubclass(MatplotlibUnavailableError, RuntimeError)  # as GraphvizUnavailableError


@needs_matplotlib
def test_one_execution_is_singular() -> None:
    stats = step_stats_pb2.StepStats()
    node(stats.dev_stats.add(device=CPU.format(0)), "only", "Const", 0, 5)
    ax = timeline_chart(stats).axes[0]
    assert ax.get_title() == "Step timeline: 1 node execution, 5 µs"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["CPU:0\n1 node"]


# -- pictures -------------------------------------------------------------------------------------
def test_show_partitions_wants_a_runs_partitions() -> None:
    with pytest.raises(TypeError, match="for one graph use show_graph"):
        aiotf.display.show_partitions(aiotf.Graph())
    assert isinstance(aiotf.display.show_graph(aiotf.Graph()), aiotf.display.GraphPicture)
