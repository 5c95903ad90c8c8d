"""``python -m aiotf demo``: a small model split across two CPU devices, shown end to end.

A two-layer network whose first layer is pinned to ``/device:CPU:0`` and second to
``/device:CPU:1`` runs in a session with ``device_count={"CPU": 2}``. The demo prints where every
node was placed, the partitions with their ``_Send``/``_Recv`` pairs, the result (checked against
numpy) and the median time of a run.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

import aiotf


def build_graph(seed: int = 0) -> tuple[aiotf.Graph, dict[str, Any]]:
    """The demo graph and the numpy values it was built from."""
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((4, 8)).astype(np.float32)
    b1 = rng.standard_normal(8).astype(np.float32)
    w2 = rng.standard_normal((8, 3)).astype(np.float32)
    graph = aiotf.Graph()
    with graph.as_default():
        x = aiotf.placeholder(aiotf.float32, shape=[None, 4], name="x")
        with aiotf.device("/device:CPU:0"), aiotf.name_scope("layer1"):
            hidden = aiotf.nn.relu(
                aiotf.nn.bias_add(aiotf.matmul(x, aiotf.constant(w1, name="w")), b1)
            )
        with aiotf.device("/device:CPU:1"), aiotf.name_scope("layer2"):
            logits = aiotf.matmul(hidden, aiotf.constant(w2, name="w"))
            aiotf.nn.softmax(logits, name="probs")
    return graph, {"w1": w1, "b1": b1, "w2": w2}


def numpy_reference(x: np.ndarray[Any, Any], params: dict[str, Any]) -> np.ndarray[Any, Any]:
    hidden = np.maximum(x @ params["w1"] + params["b1"], 0)
    logits = hidden @ params["w2"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


async def run_demo(runs: int = 200) -> None:
    """Print placement, partitions and result, then the median time of ``runs`` runs (>= 1)."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, not {runs}")
    graph, params = build_graph()
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    config = aiotf.ConfigProto(device_count={"CPU": 2})
    async with aiotf.Session(graph=graph, config=config) as sess:
        print("Devices:")
        for d in sess.list_devices():
            print(f"  {d.name}  ({d.device_type}, incarnation {d.incarnation:016x})")
        options = aiotf.RunOptions(output_partition_graphs=True)
        metadata = aiotf.RunMetadata()
        probs = await sess.run("layer2/probs:0", {"x:0": x}, options=options, run_metadata=metadata)
        _print_placement(metadata.partition_graphs)
        _print_partitions(metadata.partition_graphs)
        print("\nResult (softmax probabilities, one row per input):")
        print(np.array2string(probs, precision=4, suppress_small=True))
        expected = numpy_reference(x, params)
        print(f"Matches numpy: {bool(np.allclose(probs, expected, rtol=1e-5, atol=1e-6))}")
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            await sess.run("layer2/probs:0", {"x:0": x})
            times.append(time.perf_counter() - start)
        median = statistics.median(times) * 1e6
        over = f"{runs} run{'s' * (runs != 1)}"
        print(f"\nTime per run: {median:.0f} µs median over {over} (two devices, one event loop)")


def _print_placement(partition_graphs: Any) -> None:
    print("\nPlacement (every node that ran):")
    rows = [(node.name, node.op, node.device) for gd in partition_graphs for node in gd.node]
    width = max(len(r[0]) for r in rows)
    for name, op, device in sorted(rows, key=lambda r: (r[2], r[0])):
        print(f"  {name:<{width}}  {op:<10} {device}")


def _print_partitions(partition_graphs: Any) -> None:
    print("\nPartitions:")
    for gd in partition_graphs:
        device = gd.node[0].device if gd.node else "?"
        print(f"  {device}: {len(gd.node)} node{'s' * (len(gd.node) != 1)}")
        for node in gd.node:
            if node.op in ("_Send", "_Recv"):
                direction = "to" if node.op == "_Send" else "from"
                peer = node.attr["recv_device" if node.op == "_Send" else "send_device"].s.decode()
                tensor = node.attr["tensor_name"].s.decode()
                print(f"    {node.op:<6} {node.name:<24} {tensor!r} {direction} {peer}")
