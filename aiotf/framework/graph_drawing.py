"""Pictures of graphs: a GraphDef drawn by Graphviz with nodes coloured by device, or as text.

What it draws. The input is a :class:`~aiotf.framework.ops.Graph`, a ``GraphDef``, a run's
partition graphs (a sequence of GraphDefs, or the ``RunMetadata`` holding them). Every node is
a box labelled with its (shortened) name and its op type and filled with its device's colour; a
legend maps colours to devices. Data edges are solid (labelled ``:k`` when they leave output
``k`` > 0), control edges dotted. Partition graphs are drawn as one cluster per partition, and
each ``_Send`` is joined to the ``_Recv`` that takes its tensor by a dashed red edge: the hop
through the rendezvous. Past ``max_nodes`` nodes the rest are left out and a note says how many.

Nothing here runs anything: the drawing reads NodeDefs only (names, ops, devices, inputs and the
``_Send``/``_Recv`` attrs), so it also draws graphs whose ops aiotf does not know.

Optional pieces. The ``graphviz`` Python package (the ``notebook`` extra) builds the DOT source;
Graphviz's ``dot`` program turns it into SVG. Either may be missing: :class:`GraphPicture` —
what ``Graph`` hands Jupyter through ``_repr_mimebundle_`` — then shows the text listing of
:func:`graph_to_text`, with a line saying what to install. The framework layer may use this
module because it needs only the graph model and protos, never a session.
"""

from __future__ import annotations

import dataclasses
import html
import itertools
import subprocess
from collections.abc import Iterable
from typing import Any

from aiotf.framework.device_spec import DeviceSpec

MAX_NODES = 150
"""Nodes drawn at most, by default: Graphviz stays quick and the picture readable."""

SVG = "image/svg+xml"
TEXT = "text/plain"

# ColorBrewer Set3: pale enough for black text, distinct enough for a dozen devices.
PALETTE = (
    "#8dd3c7",
    "#fdb462",
    "#bebada",
    "#80b1d3",
    "#fb8072",
    "#b3de69",
    "#fccde5",
    "#ffffb3",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
    "#d9d9d9",
)
UNPLACED = "(no device)"
UNPLACED_COLOR = "#ffffff"
RENDEZVOUS_COLOR = "#d62728"
NAME_WIDTH = 28  # characters of a node name shown in a box

INSTALL_GRAPHVIZ = "pip install 'aiotf[notebook]' for the graphviz package"
INSTALL_DOT = "install Graphviz's dot program (apt install graphviz, brew install graphviz)"

_SHAPES = {
    "Placeholder": "invhouse",
    "PlaceholderWithDefault": "invhouse",
    "_Arg": "invhouse",
    "_Retval": "house",
    "_Send": "cds",
    "_Recv": "cds",
    "Variable": "cylinder",
    "VariableV2": "cylinder",
    "VarHandleOp": "cylinder",
}
_TRANSFER_OPS = frozenset({"_Send", "_Recv", "_HostSend", "_HostRecv"})


class GraphvizUnavailableError(RuntimeError):
    """The picture cannot be rendered: the graphviz package or the dot program is missing."""


# -- the model both renderers draw ---------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Node:
    id: str  # the DOT id: node names may hold characters DOT treats specially
    name: str
    op: str
    device: str
    inputs: tuple[tuple[str, int], ...]  # (source node, output slot); slot -1: a control edge
    rendezvous: tuple[str, str, str] | None  # _Send/_Recv: (tensor_name, send_dev, recv_dev)


@dataclasses.dataclass(frozen=True)
class _Part:
    title: str | None  # a partition's label; None for a whole graph
    nodes: tuple[_Node, ...]
    total: int  # nodes in the GraphDef, drawn or not
    unplaced: int  # of those, nodes with no device


@dataclasses.dataclass(frozen=True)
class _Model:
    parts: tuple[_Part, ...]
    colors: dict[str, str]  # device (full name, "" when unplaced) -> fill colour

    @property
    def total(self) -> int:
        return sum(p.total for p in self.parts)

    def summary(self) -> str:
        """``9 nodes on 2 devices, 1 with no device``: the whole graph, drawn or not."""
        devices = sum(1 for d in self.colors if d)
        partitioned = self.parts[0].title is not None
        kind = f"{counted(len(self.parts), 'partition')}, " if partitioned else ""
        if not devices:
            return f"{kind}{counted(self.total, 'node')}, no device set"
        text = f"{kind}{counted(self.total, 'node')} on {counted(devices, 'device')}"
        unplaced = sum(p.unplaced for p in self.parts)
        return f"{text}, {unplaced} with no device" if unplaced else text


def graph_defs(graph: Any) -> tuple[list[Any], bool]:
    """The GraphDefs ``graph`` stands for, and whether they are a run's partitions."""
    if hasattr(graph, "as_graph_def"):
        return [graph.as_graph_def()], False
    if hasattr(graph, "partition_graphs"):
        if not graph.partition_graphs:
            raise ValueError(
                "The RunMetadata holds no partition graphs: "
                "run with RunOptions(output_partition_graphs=True)"
            )
        return list(graph.partition_graphs), True
    if hasattr(graph, "node"):
        return [graph], False
    if isinstance(graph, Iterable) and not isinstance(graph, str | bytes):
        defs = list(graph)
        if defs and all(hasattr(g, "node") for g in defs):
            return defs, True
    raise TypeError(
        "Expected an aiotf.Graph, a GraphDef, a sequence of partition GraphDefs or a "
        f"RunMetadata, but got {type(graph).__name__}"
    )


def _model(graph: Any, max_nodes: int) -> _Model:
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be at least 1, but got {max_nodes}")
    defs, partitioned = graph_defs(graph)
    total = sum(len(gd.node) for gd in defs) or 1
    parts = []
    for index, gd in enumerate(defs):
        budget = max(1, max_nodes * len(gd.node) // total) if len(defs) > 1 else max_nodes
        nodes = tuple(
            _node(f"n{index}_{i}", nd) for i, nd in enumerate(itertools.islice(gd.node, budget))
        )
        title = _partition_title(index, gd) if partitioned else None
        unplaced = sum(1 for nd in gd.node if not nd.device)
        parts.append(_Part(title, nodes, len(gd.node), unplaced))
    devices = sorted({nd.device for gd in defs for nd in gd.node}, key=device_sort_key)
    return _Model(tuple(parts), device_colors(devices))


def _node(node_id: str, nd: Any) -> _Node:
    inputs = []
    for text in nd.input:
        if text.startswith("^"):
            inputs.append((text[1:], -1))
        else:
            src, _, slot = text.partition(":")
            inputs.append((src, int(slot) if slot.isdigit() else 0))
    rendezvous = None
    if nd.op in _TRANSFER_OPS and "tensor_name" in nd.attr:
        rendezvous = (
            _str_attr(nd, "tensor_name"),
            _str_attr(nd, "send_device"),
            _str_attr(nd, "recv_device"),
        )
    return _Node(node_id, nd.name, nd.op, nd.device, tuple(inputs), rendezvous)


def _str_attr(nd: Any, key: str) -> str:
    return nd.attr[key].s.decode() if key in nd.attr else ""  # reading never adds the key


def _partition_title(index: int, gd: Any) -> str:
    devices = sorted({nd.device for nd in gd.node}, key=device_sort_key)
    where = ", ".join(short_device(d) for d in devices) or "empty"
    return f"partition {index}: {where}"


# -- names and colours ---------------------------------------------------------------------------
def device_sort_key(name: str) -> tuple[Any, ...]:
    """Devices in a natural order: by job, replica, task, type, then index (CPU:2 < CPU:10)."""
    try:
        spec = DeviceSpec.from_string(name)
    except ValueError:
        return (1, name)
    return (
        0,
        spec.job or "",
        spec.replica or 0,
        spec.task or 0,
        spec.device_type or "",
        -1 if spec.device_index is None else spec.device_index,
    )


def device_colors(devices: Iterable[str]) -> dict[str, str]:
    """A fill colour per device; white for unplaced nodes (``""``).

    A device's colour follows its index when the indices tell the devices apart, so ``CPU:1``
    has one colour in the graph, in its partitions and in the timeline; otherwise the order
    given decides.
    """
    given = list(dict.fromkeys(devices))
    placed = [d for d in given if d]
    found = [_device_index(d) for d in placed]
    indices = [i for i in found if i is not None]
    if len(set(indices)) != len(placed):
        indices = list(range(len(placed)))
    colors = {d: PALETTE[i % len(PALETTE)] for d, i in zip(placed, indices, strict=True)}
    if "" in given:
        colors[""] = UNPLACED_COLOR
    return colors


def _device_index(name: str) -> int | None:
    try:
        return DeviceSpec.from_string(name).device_index
    except ValueError:
        return None


def short_device(name: str) -> str:
    """``CPU:0`` for ``/job:localhost/replica:0/task:0/device:CPU:0``; the task kept if remote."""
    if not name:
        return UNPLACED
    try:
        spec = DeviceSpec.from_string(name)
    except ValueError:
        return name
    device = spec.device_type or ""
    if spec.device_type is not None and spec.device_index is not None:
        device = f"{spec.device_type}:{spec.device_index}"
    where = [("job", spec.job), ("replica", spec.replica), ("task", spec.task)]
    if all(value in (None, "localhost", 0) for _, value in where) and device:
        return device
    prefix = "".join(f"/{key}:{value}" for key, value in where if value is not None)
    return f"{prefix}/{device}" if device else prefix


def counted(n: int, noun: str) -> str:
    """``1 node``, ``2 nodes``: ``n`` and ``noun``, plural unless ``n`` is 1."""
    return f"{n} {noun}{'s' * (n != 1)}"


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """``name``'s last scopes that fit in ``width`` characters, ``…/`` marking the cut."""
    if len(name) <= width:
        return name
    parts = name.split("/")
    kept = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + len(kept) + 3 > width:
            break
        kept = f"{part}/{kept}"
    if len(kept) + 2 > width:
        half = (width - 1) // 2
        return f"{kept[:half]}…{kept[-(width - 1 - half) :]}"
    return f"…/{kept}"


# -- Graphviz ------------------------------------------------------------------------------------
def _graphviz() -> Any:
    try:
        import graphviz  # type: ignore[import-untyped]
    except ImportError:
        raise GraphvizUnavailableError(
            f"the graphviz package is not installed ({INSTALL_GRAPHVIZ})"
        ) from None
    return graphviz


def graph_to_dot(graph: Any, *, max_nodes: int = MAX_NODES) -> Any:
    """``graph`` as a ``graphviz.Digraph``: nodes coloured by device, a legend, Send→Recv hops.

    ``graph`` is an ``aiotf.Graph``, a ``GraphDef``, a sequence of partition GraphDefs or a
    ``RunMetadata`` (its partition graphs). Raises :class:`GraphvizUnavailableError` (a
    ``RuntimeError``) without the ``graphviz`` package.
    """
    return _dot(_model(graph, max_nodes))


def _dot(model: _Model) -> Any:
    dot = _graphviz().Digraph("aiotf")
    dot.attr(label=model.summary(), labelloc="t", fontname="Helvetica", fontsize="12")
    dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10")
    dot.attr("node", height="0.3", margin="0.12,0.04")
    dot.attr("edge", color="#666666", arrowsize="0.6", fontname="Helvetica", fontsize="8")
    ids = {(i, n.name): n.id for i, p in enumerate(model.parts) for n in p.nodes}
    for index, part in enumerate(model.parts):
        if part.title is None:
            _draw_nodes(dot, part, model.colors)
        else:
            with dot.subgraph(name=f"cluster_{index}") as cluster:
                cluster.attr(label=part.title, style="rounded", color="#999999")
                _draw_nodes(cluster, part, model.colors)
    control = sum(_draw_edges(dot, part, index, ids) for index, part in enumerate(model.parts))
    hops = _draw_rendezvous(dot, model)
    _draw_legend(dot, model, control=control > 0, hops=hops > 0)
    return dot


def _draw_nodes(dot: Any, part: _Part, colors: dict[str, str]) -> None:
    nohtml = _graphviz().nohtml
    for node in part.nodes:
        shape = _SHAPES.get(node.op, "box")
        label = (
            f'<{html.escape(short_name(node.name))}<br/><font point-size="8" color="#444444">'
            f"{html.escape(node.op)}</font>>"
        )
        tooltip = f"{node.name} ({node.op}) on {node.device or UNPLACED}"
        dot.node(
            node.id,
            label=label,
            fillcolor=colors[node.device],
            shape=shape,
            margin="0.25,0.04" if shape == "cds" else None,
            style="rounded,filled" if shape == "box" else "filled",
            tooltip=nohtml(tooltip),
        )
    if len(part.nodes) < part.total:
        hidden = part.total - len(part.nodes)
        dot.node(
            f"{part.nodes[0].id}_more" if part.nodes else "more",
            label=nohtml(f"… {counted(hidden, 'more node')} not drawn"),
            shape="note",
            style="filled",
            fillcolor="#f4f4f4",
        )


def _draw_edges(dot: Any, part: _Part, index: int, ids: dict[tuple[int, str], str]) -> int:
    """Data and control edges among the drawn nodes of one part; returns the control count."""
    control = 0
    for node in part.nodes:
        for src, slot in node.inputs:
            tail = ids.get((index, src))
            if tail is None:
                continue
            if slot < 0:
                control += 1
                dot.edge(tail, node.id, style="dotted", arrowhead="odot")
            elif slot:
                dot.edge(tail, node.id, label=f":{slot}")
            else:
                dot.edge(tail, node.id)
    return control


def _draw_rendezvous(dot: Any, model: _Model) -> int:
    """Join each drawn ``_Send`` to the drawn ``_Recv`` of its tensor; returns the count."""
    sends = {
        n.rendezvous: n.id
        for p in model.parts
        for n in p.nodes
        if n.rendezvous and n.op in ("_Send", "_HostSend")
    }
    hops = 0
    for part in model.parts:
        for node in part.nodes:
            if node.rendezvous and node.op in ("_Recv", "_HostRecv"):
                tail = sends.get(node.rendezvous)
                if tail is not None:
                    hops += 1
                    dot.edge(
                        tail,
                        node.id,
                        style="dashed",
                        color=RENDEZVOUS_COLOR,
                        penwidth="1.5",
                        tooltip=_graphviz().nohtml(f"rendezvous: {node.rendezvous[0]}"),
                    )
    return hops


def _draw_legend(dot: Any, model: _Model, *, control: bool, hops: bool) -> None:
    counts: dict[str, int] = {}
    for part in model.parts:
        for node in part.nodes:
            counts[node.device] = counts.get(node.device, 0) + 1
    rows = [
        f'<tr><td bgcolor="{color}" align="left">{html.escape(short_device(device))}'
        f" ({counts.get(device, 0)})</td></tr>"
        for device, color in model.colors.items()
    ]
    if control:
        rows.append('<tr><td align="left">┈ control edge</td></tr>')
    if hops:
        rows.append(
            f'<tr><td align="left"><font color="{RENDEZVOUS_COLOR}">'
            "╌ _Send → _Recv</font></td></tr>"
        )
    if not rows:
        return
    table = "".join(rows)
    dot.node(
        "legend",
        label=f'<<table border="0" cellborder="1" cellspacing="0" cellpadding="3">{table}</table>>',
        shape="plaintext",
        style="",
    )


def graph_to_svg(graph: Any, *, max_nodes: int = MAX_NODES) -> str:
    """``graph`` rendered to SVG; :class:`GraphvizUnavailableError` when Graphviz is missing."""
    return _svg(_dot(_model(graph, max_nodes)))


def _svg(dot: Any) -> str:
    graphviz = _graphviz()
    try:
        return str(dot.pipe(format="svg", encoding="utf-8"))
    except graphviz.ExecutableNotFound:
        raise GraphvizUnavailableError(f"dot was not found on PATH ({INSTALL_DOT})") from None
    except subprocess.CalledProcessError as e:
        raise GraphvizUnavailableError(f"dot failed: {e.stderr or e}") from None


# -- text ----------------------------------------------------------------------------------------
def graph_to_text(graph: Any, *, max_nodes: int = MAX_NODES) -> str:
    """``graph`` as a listing, node by node, grouped by device (the fallback for a picture)."""
    return _text(_model(graph, max_nodes))


def _text(model: _Model) -> str:
    lines = [model.summary()]
    for part in model.parts:
        if part.title is not None:
            lines.append(f"{part.title} ({counted(part.total, 'node')})")
        devices = sorted({n.device for n in part.nodes}, key=device_sort_key)
        for device in devices:
            nodes = [n for n in part.nodes if n.device == device]
            lines.append(f"  [{short_device(device)}] {counted(len(nodes), 'node')}")
            lines.extend(_text_line(n) for n in nodes)
        if len(part.nodes) < part.total:
            lines.append(f"    … {part.total - len(part.nodes)} more not shown")
    return "\n".join(lines)


def _text_line(node: _Node) -> str:
    inputs = [
        f"^{src}" if slot < 0 else f"{src}:{slot}" if slot else src for src, slot in node.inputs
    ]
    shown = ", ".join(inputs[:4]) + (f", … ({len(inputs)} inputs)" if len(inputs) > 4 else "")
    line = f"    {short_name(node.name, 40):<40} {node.op:<14}"
    if shown:
        line += f" <- {shown}"
    if node.rendezvous is not None:
        tensor, send, recv = node.rendezvous
        other = recv if node.op.endswith("Send") else send
        arrow = "->" if node.op.endswith("Send") else "<-"
        line += f"  {arrow} {short_device(other)} ({tensor})"
    return line.rstrip()


# -- Jupyter -------------------------------------------------------------------------------------
class GraphPicture:
    """A graph for Jupyter to show: SVG when Graphviz can draw it, otherwise the text listing.

    ``str(picture)`` is the listing; :meth:`to_dot` the ``graphviz.Digraph``; :meth:`to_svg`
    the rendered picture.
    """

    __slots__ = ("_model",)

    def __init__(self, graph: Any, *, max_nodes: int = MAX_NODES) -> None:
        self._model = _model(graph, max_nodes)

    def to_dot(self) -> Any:
        return _dot(self._model)

    def to_svg(self) -> str:
        return _svg(_dot(self._model))

    def to_text(self) -> str:
        return _text(self._model)

    def _repr_mimebundle_(
        self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None
    ) -> dict[str, str]:
        wanted = (include is None or SVG in include) and SVG not in (exclude or ())
        if not wanted:
            return {TEXT: self.to_text()}
        try:
            return {SVG: self.to_svg(), TEXT: self.to_text()}
        except GraphvizUnavailableError as e:
            return {TEXT: f"{self.to_text()}\n(a text view: {e})"}

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<GraphPicture: {self._model.summary()}>"


def mimebundle(
    graph: Any, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None
) -> dict[str, str]:
    """What ``Graph._repr_mimebundle_`` returns: see :class:`GraphPicture`."""
    return GraphPicture(graph)._repr_mimebundle_(include, exclude)
