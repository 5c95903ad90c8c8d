"""The GraphOptimizer seen from a Session: what runs, what the partition graphs show, and that
results and errors are TensorFlow's with or without it."""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import numpy as np
import pytest

import aiotf
from aiotf.framework import errors, tensor_util

BENCH = pathlib.Path(__file__).resolve().parents[3] / "shared" / "bench" / "graphs"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
CF_NAME = re.compile(r"^(?P<node>.+)/_\d+__cf__\d+$")
L0, L1 = aiotf.OptimizerOptions.L0, aiotf.OptimizerOptions.L1


def config(level: int = L1, **options: Any) -> Any:
    cfg = aiotf.ConfigProto(device_count={"CPU": 2})
    cfg.graph_options.optimizer_options.CopyFrom(aiotf.OptimizerOptions(opt_level=level, **options))
    return cfg


def load(name: str) -> tuple[Any, dict[str, Any]]:
    if not BENCH.is_dir():
        pytest.skip("the shared benchmark graphs are not beside this checkout")
    graph_def = aiotf.GraphDef()
    graph_def.ParseFromString((BENCH / f"{name}.pb").read_bytes())
    return graph_def, json.loads((BENCH / f"{name}.json").read_text())


def imported(graph_def: Any) -> aiotf.Graph:
    g = aiotf.Graph()
    with g.as_default():
        aiotf.import_graph_def(graph_def, name="")
    return g


def bench_feeds(spec: dict[str, Any]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    return {f["name"]: rng.standard_normal(f["shape"]).astype(f["dtype"]) for f in spec["feeds"]}


async def run_with_partitions(
    g: aiotf.Graph, cfg: Any, fetches: Any, feeds: Any = None
) -> tuple[Any, list[Any]]:
    options = aiotf.RunOptions(output_partition_graphs=True)
    metadata = aiotf.RunMetadata()
    async with aiotf.Session(graph=g, config=cfg) as sess:
        value = await sess.run(fetches, feeds, options=options, run_metadata=metadata)
    return value, list(metadata.partition_graphs)


def nodes(partitions: list[Any]) -> list[Any]:
    return [n for p in partitions for n in p.node]


# -- chain200 --------------------------------------------------------------------------------------


async def test_chain200_folds_to_a_handful_of_nodes_with_numpy_numbers() -> None:
    graph_def, spec = load("chain200")
    feeds = bench_feeds(spec)
    consts = {
        n.name: tensor_util.make_ndarray(n.attr["value"].tensor)
        for n in graph_def.node
        if n.op == "Const"
    }
    expected = feeds["x:0"]
    for i in range(200):
        expected = expected + consts[f"c{i}"]

    (out,), parts = await run_with_partitions(imported(graph_def), config(), spec["fetches"], feeds)
    ran = nodes(parts)
    assert len(ran) <= 5
    assert sorted(n.op for n in ran) == ["AddV2", "Const", "_Arg", "_Retval"]
    (cf,) = [n for n in ran if n.op == "Const"]
    assert CF_NAME.match(cf.name)["node"] == "add198"  # type: ignore[index]
    np.testing.assert_allclose(out, expected, rtol=spec["rtol"], atol=spec["atol"])


async def test_chain200_at_l0_runs_every_node_exactly() -> None:
    graph_def, spec = load("chain200")
    feeds = bench_feeds(spec)
    (out,), parts = await run_with_partitions(
        imported(graph_def), config(L0), spec["fetches"], feeds
    )
    assert len(nodes(parts)) == len(graph_def.node) + 1  # the placeholder became _Arg, + _Retval
    expected = feeds["x:0"]
    for n in graph_def.node:
        if n.op == "Const":
            expected = expected + tensor_util.make_ndarray(n.attr["value"].tensor)
    np.testing.assert_array_equal(out, expected)


# -- partition graphs and options ------------------------------------------------------------------


def small_graph() -> tuple[aiotf.Graph, aiotf.Tensor, aiotf.Tensor]:
    """x + -(c1 + c2), fetched through an Identity, plus a duplicate of x * 2."""
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [2], name="x")
        s = aiotf.add(aiotf.constant([1.0, 2.0], name="c1"), aiotf.constant([3.0, 4.0], name="c2"))
        out = aiotf.add(x, aiotf.negative(s, name="n"), name="out")
        twice = aiotf.multiply(x, 2.0, name="m1") + aiotf.multiply(x, 2.0, name="m2")
        fetched = aiotf.identity(out + twice, name="fetched")
    return g, x, fetched


async def test_partition_graphs_show_the_optimized_graph() -> None:
    g, x, fetched = small_graph()
    value, parts = await run_with_partitions(g, config(), fetched, {x: [1.0, 1.0]})
    np.testing.assert_allclose(value, [1 - 4 + 4, 1 - 6 + 4])
    by_name = {n.name: n for n in nodes(parts)}
    cf = [n for n in by_name if CF_NAME.match(n)]
    assert [CF_NAME.match(n)["node"] for n in cf] == ["n"]  # type: ignore[index]
    assert {"c1", "c2", "n", "m2"}.isdisjoint(by_name)  # folded away; m2 merged into m1
    assert "fetched" in by_name  # identities stay unless do_function_inlining
    assert by_name[cf[0]].device == by_name["out"].device


async def test_l0_runs_the_graph_as_built_and_flags_turn_passes_back_on() -> None:
    g, x, fetched = small_graph()
    value, parts = await run_with_partitions(g, config(L0), fetched, {x: [1.0, 1.0]})
    names = {n.name for n in nodes(parts)}
    assert {"c1", "c2", "n", "m1", "m2"} <= names and not any(CF_NAME.match(n) for n in names)
    again, parts = await run_with_partitions(
        g, config(L0, do_common_subexpression_elimination=True), fetched, {x: [1.0, 1.0]}
    )
    names = {n.name for n in nodes(parts)}
    assert "m2" not in names and "n" in names
    np.testing.assert_array_equal(value, again)


async def test_function_inlining_flag_removes_identities() -> None:
    g, x, fetched = small_graph()
    value, parts = await run_with_partitions(
        g, config(do_function_inlining=True), fetched, {x: [1.0, 1.0]}
    )
    assert "fetched" not in {n.name for n in nodes(parts)}
    np.testing.assert_allclose(value, [1.0, -1.0])


async def test_a_fed_constant_is_not_folded() -> None:
    g = aiotf.Graph()
    with g.as_default():
        c = aiotf.constant(3.0, name="c")
        y = aiotf.negative(c, name="y")
    async with aiotf.Session(graph=g) as sess:
        assert await sess.run(y) == -3.0
        assert await sess.run(y, {c: 5.0}) == -5.0


async def test_folding_across_devices_sends_the_folded_constant() -> None:
    g = aiotf.Graph()
    with g.as_default():
        x = aiotf.placeholder(aiotf.float32, [], name="x")
        with aiotf.device("/device:CPU:1"):
            n = aiotf.negative(aiotf.constant(2.0, name="c"), name="n")
        out = aiotf.add(x, n, name="out")
    value, parts = await run_with_partitions(g, config(), out, {x: 1.0})
    assert value == -1.0
    (on_cpu1,) = [p for p in parts if all(n.device == CPU1 for n in p.node)]
    assert sorted(n.op for n in on_cpu1.node) == ["Const", "_Send"]


def bad_reshape_graph() -> aiotf.Graph:
    """``bad = Reshape(c[3], Identity([2, 2]))``: fails only when it runs, as in TensorFlow."""
    parts = aiotf.Graph()
    with parts.as_default():
        aiotf.constant([1.0, 2.0, 3.0], name="c")
        aiotf.identity(aiotf.constant([2, 2], name="shape"), name="shape_id")
    graph_def = parts.as_graph_def()
    bad = graph_def.node.add(name="bad", op="Reshape", input=["c", "shape_id"])
    bad.attr["T"].type = aiotf.float32.as_datatype_enum
    bad.attr["Tshape"].type = aiotf.int32.as_datatype_enum
    out = graph_def.node.add(name="out", op="Neg", input=["bad"])
    out.attr["T"].type = aiotf.float32.as_datatype_enum
    return imported(graph_def)


async def test_a_kernel_error_is_left_for_the_run_and_names_its_node() -> None:
    g = bad_reshape_graph()
    messages = []
    for level in (L1, L0):
        async with aiotf.Session(graph=g, config=config(level)) as sess:
            with pytest.raises(errors.InvalidArgumentError) as info:
                await sess.run("out:0")
            assert info.value.node_def.name == "bad"
            messages.append(info.value.message)
            assert list(await sess.run("c:0")) == [1.0, 2.0, 3.0]  # the session still works
    assert messages[0] == messages[1]


# -- loops -----------------------------------------------------------------------------------------


def with_foldable_body(graph_def: Any) -> Any:
    """while1000 with the loop's increment computed as -(-y) inside the body: foldable."""
    out = aiotf.GraphDef()
    out.CopyFrom(graph_def)
    (add,) = [n for n in out.node if n.name == "loop/Add"]
    assert list(add.input) == ["loop/Identity", "loop/Add/y"]
    (y,) = [n for n in out.node if n.name == "loop/Add/y"]
    for name, src in (("loop/neg1", "loop/Add/y"), ("loop/neg2", "loop/neg1")):
        node = out.node.add(name=name, op="Neg", input=[src])
        node.attr["T"].type = y.attr["dtype"].type
    add.input[1] = "loop/neg2"
    return out


async def test_folding_inside_a_while_loop_keeps_the_constant_in_its_frame() -> None:
    graph_def, spec = load("while1000")
    body = with_foldable_body(graph_def)
    feeds = bench_feeds(spec)
    (expected,), _ = await run_with_partitions(imported(body), config(L0), spec["fetches"], feeds)
    (value,), parts = await run_with_partitions(imported(body), config(), spec["fetches"], feeds)
    assert value == expected
    (cf,) = [n for n in nodes(parts) if CF_NAME.match(n.name)]
    assert CF_NAME.match(cf.name)["node"] == "loop/neg2"  # type: ignore[index]
    assert list(cf.input) == ["^loop/Identity"]  # the pivot: one value per iteration
