"""The TensorFlow-written GraphDefs of ``../shared/bench/graphs/`` and their JSON specs.

Each ``NAME.pb`` comes with ``NAME.json`` (feeds, seed, fetches, tolerances). The directory is
the one given (``--graphs``), else ``$AIOTF_BENCH_GRAPHS`` if set, else the first
``shared/bench/graphs`` found beside the current directory or the aiotf checkout. A directory
given either way must exist; when none is given and none is found, the suite builds every
workload with aiotf's API from seeded parameters and skips the imported variants.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import aiotf
from aiotf.bench.workloads import Built, Params

ENV_VAR = "AIOTF_BENCH_GRAPHS"


@dataclasses.dataclass(frozen=True)
class GraphSpec:
    """One TensorFlow-written GraphDef and what its JSON says about it."""

    path: Path
    data: bytes
    feed_names: tuple[str, ...]
    fetch_names: tuple[str, ...]
    seed: int | None
    rtol: float | None
    atol: float | None

    def graph_def(self) -> Any:
        graph_def = aiotf.GraphDef()
        graph_def.ParseFromString(self.data)
        return graph_def

    def params(self) -> Params:
        """Every Const of the GraphDef, by node name."""
        return {
            node.name: aiotf.make_ndarray(node.attr["value"].tensor)
            for node in self.graph_def().node
            if node.op == "Const"
        }

    def import_into_aiotf(self) -> Built:
        graph = aiotf.Graph()
        with graph.as_default():
            aiotf.import_graph_def(self.graph_def(), name="")
        feeds = [graph.get_tensor_by_name(n) for n in self.feed_names]
        return Built(graph, feeds, graph.get_tensor_by_name(self.fetch_names[0]))

    def import_into_tf(self, tf: Any) -> Built:
        graph_def = tf.compat.v1.GraphDef.FromString(self.data)
        graph = tf.Graph()
        with graph.as_default():
            tf.compat.v1.import_graph_def(graph_def, name="")
        feeds = [graph.get_tensor_by_name(n) for n in self.feed_names]
        return Built(graph, feeds, graph.get_tensor_by_name(self.fetch_names[0]))


def graphs_dir(given: str | None = None) -> Path | None:
    """The graphs directory: ``given``, else ``$AIOTF_BENCH_GRAPHS``, else the default one.

    Raises ``NotADirectoryError`` when a directory given or named by the variable is not one.
    """
    for text, where in ((given, "--graphs"), (os.environ.get(ENV_VAR), f"${ENV_VAR}")):
        if text:
            if not Path(text).is_dir():
                raise NotADirectoryError(f"{where} {text!r} is not a directory")
            return Path(text)
    return default_graphs_dir()


def default_graphs_dir() -> Path | None:
    """The first ``shared/bench/graphs`` beside the current directory or the checkout."""
    checkout = Path(aiotf.__file__).resolve().parent.parent
    for base in (Path.cwd(), Path.cwd().parent, checkout, checkout.parent):
        candidate = base / "shared" / "bench" / "graphs"
        if candidate.is_dir():
            return candidate
    return None


def load_spec(directory: Path | None, stem: str) -> GraphSpec | None:
    """``stem.pb`` and ``stem.json`` from ``directory``; None when either is missing."""
    if directory is None:
        return None
    pb, spec_file = directory / f"{stem}.pb", directory / f"{stem}.json"
    if not (pb.is_file() and spec_file.is_file()):
        return None
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    return GraphSpec(
        path=pb,
        data=pb.read_bytes(),
        feed_names=tuple(f["name"] for f in spec.get("feeds", [])),
        fetch_names=tuple(spec.get("fetches", ["out:0"])),
        seed=spec.get("seed"),
        rtol=spec.get("rtol"),
        atol=spec.get("atol"),
    )
