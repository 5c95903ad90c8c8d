"""Graph pictures: DOT coloured by device, the text view, and the Jupyter bundle with and
without Graphviz (its absence is simulated: no package in ``sys.modules``, no ``dot`` on PATH)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import graph_drawing
from aiotf.framework.graph_drawing import (
    INSTALL_DOT,
    PALETTE,
    RENDEZVOUS_COLOR,
    SVG,
    TEXT,
    UNPLACED_COLOR,
    GraphPicture,
    GraphvizUnavailableError,
    device_colors,
    graph_to_dot,
    graph_to_text,
    short_device,
    short_name,
)

needs_graphviz = pytest.mark.skipif(
    importlib.util.find_spec("graphviz") is None, reason="the graphviz package is missing"
)

LOCAL = "/job:localhost/replica:0/task:0/device:CPU:{}"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


def two_device_graph() -> aiotf.Graph:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [None, 2], name="x")
        with aiotf.device("/device:CPU:0"):
            h = aiotf.nn.relu(
                aiotf.matmul(x, aiotf.constant(np.eye(2, dtype=np.float32), name="w"))
            )
            parts = aiotf.unstack(h, num=2, axis=1, name="split")
        with aiotf.device("/device:CPU:1"), aiotf.control_dependencies([h.op]):
            aiotf.add(parts[0], parts[1], name="sum")
    return g


def partitions() -> list[Any]:
    """Two partitions as the partitioner writes them: CPU:0 sends ``a`` to CPU:1."""
    cpu0, cpu1 = aiotf.GraphDef(), aiotf.GraphDef()
    cpu0.node.add(name="a", op="Const", device=LOCAL.format(0))
    send = cpu0.node.add(name="a/_0", op="_Send", device=LOCAL.format(0), input=["a"])
    cpu1.node.add(name="b", op="Const", device=LOCAL.format(1))
    recv = cpu1.node.add(name="a/_1", op="_Recv", device=LOCAL.format(1))
    cpu1.node.add(name="c", op="AddV2", device=LOCAL.format(1), input=["a/_1", "b"])
    for node in (send, recv):
        node.attr["tensor_name"].s = b"edge_1_a"
        node.attr["send_device"].s = LOCAL.format(0).encode()
        node.attr["recv_device"].s = LOCAL.format(1).encode()
    return [cpu0, cpu1]


def node_lines(source: str) -> dict[str, str]:
    """DOT node statements by the node's name (taken from its tooltip)."""
    found = re.findall(r'^\s*(n\d+_\d+) \[(.*tooltip="([^ ]+) .*)\]$', source, re.M)
    return {name: attrs for _, attrs, name in found}


def node_id(source: str, name: str) -> str:
    found = re.search(rf'^\s*(n\d+_\d+) \[.*tooltip="{re.escape(name)} ', source, re.M)
    assert found is not None, name
    return found.group(1)


# -- DOT ------------------------------------------------------------------------------------------
@needs_graphviz
def test_each_device_has_its_colour_and_a_legend_row() -> None:
    source = graph_to_dot(two_device_graph()).source
    nodes = node_lines(source)
    assert set(nodes) == {"x", "w", "MatMul", "Relu", "split", "sum"}
    assert f'fillcolor="{PALETTE[0]}"' in nodes["MatMul"]
    assert f'fillcolor="{PALETTE[1]}"' in nodes["sum"]
    assert f'fillcolor="{UNPLACED_COLOR}"' in nodes["x"]
    legend = source[source.index("legend [") :]
    for color, label in [(PALETTE[0], "CPU:0 (4)"), (PALETTE[1], "CPU:1 (1)")]:
        assert f'<td bgcolor="{color}" align="left">{label}</td>' in legend
    assert "(no device) (1)" in legend
    assert 'label="6 nodes on 2 devices, 1 with no device"' in source


@needs_graphviz
def test_edges_control_dotted_and_later_outputs_labelled() -> None:
    dot = graph_to_dot(two_device_graph())
    relu, split, total = (node_id(dot.source, name) for name in ("Relu", "split", "sum"))
    assert f'{split} -> {total} [label=":1"]' in dot.source
    assert f"{split} -> {total}\n" in dot.source  # output 0, unlabelled
    assert f"{relu} -> {total} [arrowhead=odot style=dotted]" in dot.source
    assert "control edge" in dot.source


@needs_graphviz
def test_node_labels_name_and_op_and_shapes_mark_inputs() -> None:
    nodes = node_lines(graph_to_dot(two_device_graph()).source)
    assert (
        'label=<MatMul<br/><font point-size="8" color="#444444">MatMul</font>>' in nodes["MatMul"]
    )
    assert "shape=invhouse" in nodes["x"]


@needs_graphviz
def test_partitions_are_clusters_joined_send_to_recv() -> None:
    source = graph_to_dot(partitions()).source
    assert 'subgraph cluster_0 {\n\t\tcolor="#999999" label="partition 0: CPU:0"' in source
    assert 'label="partition 1: CPU:1"' in source
    hop = re.search(rf"n0_1 -> n1_1 \[color=\"{RENDEZVOUS_COLOR}\".*style=dashed", source)
    assert hop is not None
    assert "rendezvous: edge_1_a" in source
    assert "_Send → _Recv" in source
    assert 'label="2 partitions, 5 nodes on 2 devices"' in source


@needs_graphviz
def test_run_metadata_draws_its_partitions() -> None:
    metadata = aiotf.RunMetadata()
    metadata.partition_graphs.extend(partitions())
    assert graph_to_dot(metadata).source == graph_to_dot(partitions()).source


@needs_graphviz
async def test_partitions_of_a_real_run_show_every_hop() -> None:
    g = two_device_graph()
    metadata = aiotf.RunMetadata()
    options = aiotf.RunOptions(output_partition_graphs=True)
    config = aiotf.ConfigProto(device_count={"CPU": 2})
    async with aiotf.Session(graph=g, config=config) as sess:
        await sess.run("sum:0", {"x:0": [[1.0, 2.0]]}, options=options, run_metadata=metadata)
    sends = sum(n.op == "_Send" for gd in metadata.partition_graphs for n in gd.node)
    source = graph_to_dot(metadata).source
    assert sends > 0
    assert source.count(f'color="{RENDEZVOUS_COLOR}" penwidth') == sends


@needs_graphviz
def test_a_large_graph_is_capped_with_a_note() -> None:
    g = aiotf.Graph()
    with g.as_default():
        t = aiotf.constant(1.0)
        for _ in range(19):
            t = t + 1.0
    assert len(g.get_operations()) == 39
    source = graph_to_dot(g, max_nodes=10).source
    assert len(re.findall(r"^\s*n0_\d+ \[", source, re.M)) == 10
    assert "… 29 more nodes not drawn" in source
    assert 'label="39 nodes, no device set"' in source
    assert "… 29 more not shown" in graph_to_text(g, max_nodes=10)
    first = graph_to_text(two_device_graph(), max_nodes=1).splitlines()[0]
    assert first == "6 nodes on 2 devices, 1 with no device"  # the whole graph, drawn or not
    with pytest.raises(ValueError, match="max_nodes must be at least 1"):
        graph_to_dot(g, max_nodes=0)


def test_a_graph_def_written_elsewhere_draws_without_import() -> None:
    gd = aiotf.GraphDef()
    gd.node.add(name="in", op="SomeOpAiotfLacks")
    gd.node.add(name="out", op="AnotherOne", input=["in", "^in"])
    text = graph_to_text(gd)
    assert "out" in text and "AnotherOne" in text and "<- in, ^in" in text


@needs_graphviz
def test_bad_input_names_what_was_passed() -> None:
    with pytest.raises(TypeError, match="got int"):
        graph_to_dot(3)
    with pytest.raises(ValueError, match="output_partition_graphs=True"):
        graph_to_dot(aiotf.RunMetadata())


# -- names and colours ----------------------------------------------------------------------------
def test_short_device_names() -> None:
    assert short_device(LOCAL.format(1)) == "CPU:1"
    assert short_device("/device:CPU:0") == "CPU:0"
    assert short_device("/cpu:2") == "CPU:2"
    assert short_device("") == "(no device)"
    assert short_device("/job:worker/replica:0/task:1/device:CPU:0") == (
        "/job:worker/replica:0/task:1/CPU:0"
    )
    assert short_device("not a device!") == "not a device!"


def test_short_names_keep_the_last_scopes() -> None:
    assert short_name("a/b") == "a/b"
    assert short_name("model/encoder/layer_3/attention/MatMul", 28) == "…/layer_3/attention/MatMul"
    long_leaf = "x" * 40
    assert short_name(long_leaf, 10) == "xxxx…xxxxx"
    assert len(short_name(long_leaf, 10)) == 10


def test_colours_follow_the_device_index_across_pictures() -> None:
    only_cpu1 = device_colors(["/device:CPU:1"])
    both = device_colors([LOCAL.format(0), LOCAL.format(1)])
    assert only_cpu1["/device:CPU:1"] == both[LOCAL.format(1)] == PALETTE[1]
    clash = device_colors(["/device:CPU:0", "/device:GPU:0", ""])
    assert clash == {"/device:CPU:0": PALETTE[0], "/device:GPU:0": PALETTE[1], "": "#ffffff"}


# -- text ----------------------------------------------------------------------------------------
def test_text_groups_nodes_by_device_with_their_inputs() -> None:
    text = graph_to_text(two_device_graph())
    lines = text.splitlines()
    assert lines[0] == "6 nodes on 2 devices, 1 with no device"
    assert lines.index("  [CPU:0] 4 nodes") < lines.index("  [CPU:1] 1 node")
    assert re.search(r"^\s+sum\s+AddV2\s+<- split, split:1, \^Relu$", text, re.M)


def test_text_of_partitions_names_the_other_end_of_each_hop() -> None:
    text = graph_to_text(partitions())
    assert "partition 0: CPU:0 (2 nodes)" in text
    assert re.search(r"a/_0\s+_Send\s+<- a  -> CPU:1 \(edge_1_a\)", text)
    assert re.search(r"a/_1\s+_Recv\s+<- CPU:0 \(edge_1_a\)", text)


def test_counts_of_one_are_singular() -> None:
    one = aiotf.GraphDef()
    one.node.add(name="a", op="Const", device=LOCAL.format(0))
    assert graph_to_text([one]).splitlines()[:2] == [
        "1 partition, 1 node on 1 device",
        "partition 0: CPU:0 (1 node)",
    ]
    assert graph_to_text(one).splitlines()[0] == "1 node on 1 device"


# -- Jupyter ---------------------------------------------------------------------------------------
@needs_graphviz
@needs_dot
def test_bundle_is_svg_plus_text_when_graphviz_is_there() -> None:
    bundle = two_device_graph()._repr_mimebundle_()
    assert set(bundle) == {SVG, TEXT}
    assert bundle[SVG].lstrip().startswith("<?xml") and "<svg" in bundle[SVG]
    assert PALETTE[1] in bundle[SVG]
    assert bundle[TEXT] == graph_to_text(two_device_graph())


@needs_graphviz
def test_without_dot_on_path_the_bundle_is_text(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no dot
    bundle = two_device_graph()._repr_mimebundle_()
    assert set(bundle) == {TEXT}
    assert bundle[TEXT].startswith("6 nodes on 2 devices")
    assert bundle[TEXT].endswith(f"(a text view: dot was not found on PATH ({INSTALL_DOT}))")
    with pytest.raises(GraphvizUnavailableError, match="dot was not found"):
        GraphPicture(two_device_graph()).to_svg()


def test_without_the_graphviz_package_the_bundle_is_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz raises ImportError
    bundle = graph_drawing.mimebundle(two_device_graph())
    assert set(bundle) == {TEXT}
    assert "CPU:1" in bundle[TEXT]
    assert "the graphviz package is not installed (pip install 'aiotf[notebook]'" in bundle[TEXT]
    with pytest.raises(GraphvizUnavailableError):
        graph_to_dot(two_device_graph())


def test_bundle_respects_include_and_exclude(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph_drawing, "_svg", _no_render)
    g = two_device_graph()
    assert set(g._repr_mimebundle_(include=[TEXT])) == {TEXT}
    assert set(g._repr_mimebundle_(exclude=[SVG])) == {TEXT}


def _no_render(dot: Any) -> str:
    raise AssertionError("rendered although SVG was not asked for")


def test_ipython_shows_a_graph_through_its_bundle(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    formatters = pytest.importorskip("IPython.core.formatters")
    monkeypatch.setenv("PATH", str(tmp_path))
    data, _ = formatters.DisplayFormatter().format(two_device_graph())
    assert data[TEXT].startswith("6 nodes on 2 devices")


def test_picture_str_and_repr() -> None:
    picture = GraphPicture(partitions())
    assert str(picture) == graph_to_text(partitions())
    assert repr(picture) == "<GraphPicture: 2 partitions, 5 nodes on 2 devices>"
